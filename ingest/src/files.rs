//! The input files: each source given, and every file under a source folder, in a fixed order
//! (sorted by name, depth first); what is not read is listed with why.

use std::path::{Path, PathBuf};

use crate::encoding;

/// Largest document read whole (Markdown, HTML, text), in bytes; a larger one is skipped (and
/// listed). A document is parsed whole (its outline, its headings' fragments), so its bound is
/// what the builder holds at once.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Largest table (CSV, JSON Lines), in bytes; a larger one is skipped (and listed). Tables are
/// read a row at a time, never whole, so their bound is the corpus's own: a table over it would
/// make a corpus that `serve --corpus` refuses.
pub const MAX_TABLE_BYTES: u64 = turnstile_corpus::MAX_CORPUS_BYTES;

/// Largest row of a table (a JSON Lines line, a CSV record), in bytes: as large as a document
/// read whole. A longer one is a bad row.
pub const MAX_ROW_BYTES: usize = 16 * 1024 * 1024;

/// A format the builder reads, known by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Format {
    Markdown,
    Html,
    Text,
    Csv,
    Jsonl,
}

impl Format {
    /// By extension (case-insensitive): `.md`/`.markdown`, `.html`/`.htm`, `.txt`, `.csv`,
    /// `.jsonl`.
    pub fn of(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            "md" | "markdown" => Self::Markdown,
            "html" | "htm" => Self::Html,
            "txt" => Self::Text,
            "csv" => Self::Csv,
            "jsonl" => Self::Jsonl,
            _ => return None,
        })
    }

    /// Whether it is read a row at a time (CSV, JSON Lines) rather than whole.
    pub fn is_table(self) -> bool {
        matches!(self, Self::Csv | Self::Jsonl)
    }

    /// The largest file of this format read ([`MAX_TABLE_BYTES`], [`MAX_FILE_BYTES`]).
    pub fn max_bytes(self) -> u64 {
        if self.is_table() {
            MAX_TABLE_BYTES
        } else {
            MAX_FILE_BYTES
        }
    }

    /// The `kind` of the passages it gives.
    pub fn kind(self) -> &'static str {
        match self {
            Self::Markdown => "markdown",
            Self::Html => "html",
            Self::Text => "text",
            Self::Csv => "csv",
            Self::Jsonl => "jsonl",
        }
    }
}

/// A file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Input {
    /// Where it is.
    pub path: PathBuf,
    /// Its path in ids: relative to the sources' common root, `/`-separated ([`prefixes`]).
    pub id_path: String,
    pub format: Format,
    /// Its size when found, in bytes.
    pub len: u64,
}

/// A file or folder not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file or folder.
    pub path: PathBuf,
    /// Why, in words.
    pub why: String,
}

/// Each source's folder under the sources' common root, `/`-separated (empty for the root
/// itself): what its files' id paths start with. A file's folder is its source folder's, or,
/// for a file given itself, the one it is in; the root is the deepest folder holding them all
/// (their real paths, links resolved). So one folder keeps ids relative to it, one file its
/// name, and `a/README.md` beside `b/README.md` stay apart.
pub(crate) fn prefixes(sources: &[PathBuf]) -> Result<Vec<String>, (PathBuf, std::io::Error)> {
    let mut folders = Vec::with_capacity(sources.len());
    for source in sources {
        let error = |e| (source.clone(), e);
        let folder = if std::fs::metadata(source).map_err(error)?.is_file() {
            match source.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            }
        } else {
            source.as_path()
        };
        folders.push(std::fs::canonicalize(folder).map_err(error)?);
    }
    let Some(first) = folders.first() else {
        return Ok(Vec::new());
    };
    let mut root: Vec<_> = first.components().collect();
    for folder in &folders[1..] {
        let shared = root
            .iter()
            .zip(folder.components())
            .take_while(|(a, b)| **a == *b)
            .count();
        root.truncate(shared);
    }
    let root: PathBuf = root.iter().collect();
    Ok(folders
        .iter()
        .map(|folder| id_path(folder.strip_prefix(&root).unwrap_or(folder)))
        .collect())
}

/// `relative`'s components joined with `/`.
fn id_path(relative: &Path) -> String {
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// `prefix/name` (`name` when there is no prefix).
fn under(prefix: &str, name: String) -> String {
    if prefix.is_empty() {
        name
    } else {
        format!("{prefix}/{name}")
    }
}

/// A file as the file system knows it, whatever its name: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId(u64, u64);

impl FileId {
    pub fn of(metadata: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self(metadata.dev(), metadata.ino())
    }
}

/// The files under `source`, in order, and what was passed over; their id paths start with
/// `prefix` (its folder's place under the sources' root: [`prefixes`]). `output` is the file the
/// build writes, if it exists: found under a source (by any name, a hard link too), it is passed
/// over, never read back as input.
pub(crate) fn find(
    source: &Path,
    prefix: &str,
    output: Option<FileId>,
) -> std::io::Result<(Vec<Input>, Vec<Skipped>)> {
    let (mut inputs, mut skipped) = (Vec::new(), Vec::new());
    let is_output = |metadata: &std::fs::Metadata| output == Some(FileId::of(metadata));
    let metadata = std::fs::metadata(source)?;
    if metadata.is_file() {
        if is_output(&metadata) {
            skipped.push(skip(source, OWN_OUTPUT));
            return Ok((inputs, skipped));
        }
        let name = source
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id_path = under(prefix, name);
        consider(source, id_path, metadata.len(), &mut inputs, &mut skipped);
        return Ok((inputs, skipped));
    }
    let mut walk = walkdir::WalkDir::new(source)
        .min_depth(1)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = walk.next() {
        let entry = entry.map_err(std::io::Error::other)?;
        let path = entry.path();
        let kind = entry.file_type();
        if entry.file_name().to_string_lossy().starts_with('.') {
            skipped.push(skip(path, "hidden"));
            if kind.is_dir() {
                walk.skip_current_dir();
            }
            continue;
        }
        if kind.is_dir() {
            continue;
        }
        if kind.is_symlink() {
            skipped.push(skip(path, "a symbolic link (not followed)"));
            continue;
        }
        if !kind.is_file() {
            skipped.push(skip(path, "not a regular file"));
            continue;
        }
        let metadata = entry.metadata().map_err(std::io::Error::other)?;
        if is_output(&metadata) {
            skipped.push(skip(path, OWN_OUTPUT));
            continue;
        }
        let id_path = under(prefix, id_path(path.strip_prefix(source).unwrap_or(path)));
        consider(path, id_path, metadata.len(), &mut inputs, &mut skipped);
    }
    Ok((inputs, skipped))
}

/// Why the build's own output, found under a source, is not read.
const OWN_OUTPUT: &str = "the build's own output (--out), not read back";

fn consider(
    path: &Path,
    id_path: String,
    len: u64,
    inputs: &mut Vec<Input>,
    skipped: &mut Vec<Skipped>,
) {
    match Format::of(path) {
        None => skipped.push(skip(
            path,
            "not a format read here (.md, .markdown, .html, .htm, .txt, .csv, .jsonl)",
        )),
        Some(format) if len > format.max_bytes() => {
            let most = format.max_bytes();
            let bound = if most >= 1 << 30 {
                format!("{} GiB", most >> 30)
            } else {
                format!("{} MiB", most >> 20)
            };
            skipped.push(skip(path, format!("over {bound}")));
        }
        Some(format) => inputs.push(Input {
            path: path.to_owned(),
            id_path,
            format,
            len,
        }),
    }
}

pub(crate) fn skip(path: &Path, why: impl Into<String>) -> Skipped {
    Skipped {
        path: path.to_owned(),
        why: why.into(),
    }
}

/// A document's bytes (at most [`MAX_FILE_BYTES`], checked when it was found).
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| e.to_string())
}

/// A document's text, from its bytes in whatever encoding ([`encoding::decode`]), line ends as
/// `\n`, and the encoding it was converted from, if any.
pub(crate) fn text(bytes: &[u8], format: Format) -> Result<(String, Option<&'static str>), String> {
    let decoded = encoding::decode(bytes, format == Format::Html)?;
    let text = if decoded.text.contains('\r') {
        decoded.text.replace("\r\n", "\n")
    } else {
        decoded.text
    };
    Ok((text, decoded.converted_from))
}
