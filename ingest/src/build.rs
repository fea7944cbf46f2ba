//! `turnstile corpus build SRC… --out FILE`: every input's passages, written in order to a
//! corpus file, checked by the corpus's own loader before it replaces `FILE`.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::builder::TypedValueParser;
use serde::Serialize;
use sha2::{Digest, Sha256};

use tempfile::NamedTempFile;

use turnstile_corpus::MAX_CORPUS_BYTES;

use crate::durable;
use crate::emit::{Passage, passages_from};
use crate::files::{self, Input, Skipped};
use crate::passage::{self, Cut};
use crate::table::Columns;

/// Longest id, in bytes (the corpus's bound); a passage whose id would be longer is skipped.
const MAX_ID_BYTES: usize = 512;

/// `turnstile corpus build`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct BuildArgs {
    /// Files and folders to read: Markdown (.md, .markdown), HTML (.html, .htm), plain text
    /// (.txt), CSV with a header (.csv) and JSON Lines (.jsonl). Folders are read whole, in
    /// name order; hidden entries and symbolic links are skipped.
    #[arg(required = true, value_name = "SRC")]
    pub sources: Vec<PathBuf>,
    /// The corpus file to write (JSON Lines, what `serve --corpus` reads); replaced only when
    /// the build succeeds.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Most characters in a passage (the corpus allows 2,000).
    #[arg(long, default_value_t = passage::DEFAULT_MAX_CHARS,
          value_parser = clap::value_parser!(u16).range(100..=2000).map(usize::from))]
    pub max_chars: usize,
    /// Characters of a passage's end that the next passage of the same section repeats (in
    /// whole words), at most half of --max-chars.
    #[arg(long, default_value_t = passage::DEFAULT_OVERLAP,
          value_parser = clap::value_parser!(u16).range(0..=1000).map(usize::from))]
    pub overlap: usize,
    /// CSV and JSON Lines: the column holding a row's id (a row without one gets
    /// `PATH#row-N`).
    #[arg(long, default_value = "id")]
    pub id_column: String,
    /// CSV and JSON Lines: the column holding a row's title (a row without one: its id).
    #[arg(long, default_value = "title")]
    pub title_column: String,
    /// CSV and JSON Lines: the column holding a row's text (required).
    #[arg(long, default_value = "text")]
    pub text_column: String,
}

impl BuildArgs {
    /// What is wrong with `--overlap` beside `--max-chars`, if anything (each flag's own bounds
    /// are its parser's): the check across settings, said without the flag's name.
    pub fn overlap_problem(&self) -> Option<String> {
        (self.overlap > self.max_chars / 2).then(|| {
            format!(
                "{} is over half of --max-chars ({})",
                self.overlap, self.max_chars
            )
        })
    }
}

/// Why a build stopped (the output file is left as it was).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A source cannot be read.
    #[error("{}: {source}", .path.display())]
    Source {
        /// The source.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Settings that do not go together.
    #[error("{0}")]
    Settings(String),
    /// Two passages would have the same id.
    #[error("id {id:?} comes from both {} and {}", .first.display(), .second.display())]
    DuplicateId {
        /// The id.
        id: String,
        /// The file that gave it first.
        first: PathBuf,
        /// The file that gave it again.
        second: PathBuf,
    },
    /// Nothing to write.
    #[error("no passages: {0}")]
    Empty(String),
    /// The output cannot be written.
    #[error("{}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The corpus would pass what `serve --corpus` loads.
    #[error(
        "the corpus would pass {} GiB of JSON Lines, the most `serve --corpus` loads",
        MAX_CORPUS_BYTES >> 30
    )]
    TooLarge,
    /// The corpus's loader refused what was built (a bug of the builder).
    #[error("the built corpus does not load: {0}")]
    Invalid(#[from] turnstile_corpus::CorpusError),
}

/// What a build did.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The file written.
    pub out: PathBuf,
    /// Files read, by kind.
    pub read: BTreeMap<&'static str, usize>,
    /// Files and passages passed over, with why.
    pub skipped: Vec<Skipped>,
    /// Rows without text (CSV, JSON Lines).
    pub empty_rows: usize,
    /// Passages written.
    pub passages: usize,
    /// Bytes written.
    pub bytes: u64,
    /// The file's sha256 (for `--corpus`'s pin).
    pub sha256: String,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let read: Vec<String> = self.read.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let files: usize = self.read.values().sum();
        writeln!(f, "read {files} files ({})", read.join(", "))?;
        if !self.skipped.is_empty() {
            writeln!(f, "skipped {}:", self.skipped.len())?;
            for s in self.skipped.iter().take(MAX_LISTED_SKIPS) {
                writeln!(f, "  {}: {}", s.path.display(), s.why)?;
            }
            if self.skipped.len() > MAX_LISTED_SKIPS {
                writeln!(f, "  … and {} more", self.skipped.len() - MAX_LISTED_SKIPS)?;
            }
        }
        if self.empty_rows > 0 {
            writeln!(f, "rows without text: {}", self.empty_rows)?;
        }
        write!(
            f,
            "wrote {} passages to {} ({} bytes, sha256 {})",
            self.passages,
            self.out.display(),
            self.bytes,
            self.sha256
        )
    }
}

/// Skips listed one by one in the summary; the rest are counted.
const MAX_LISTED_SKIPS: usize = 20;

/// One line of the corpus file, its keys in the loader's order.
#[derive(Serialize)]
struct Line<'a> {
    id: &'a str,
    kind: &'a str,
    title: &'a str,
    text: &'a str,
}

/// Builds the corpus `args.out` from `args.sources`; `progress` shows a bar on a terminal for
/// large inputs.
pub fn build(args: &BuildArgs, progress: bool) -> Result<Summary, BuildError> {
    if let Some(problem) = args.overlap_problem() {
        return Err(BuildError::Settings(format!("--overlap: {problem}")));
    }
    let cut = Cut {
        max_chars: args.max_chars,
        overlap: args.overlap,
    };
    let columns = Columns {
        id: args.id_column.clone(),
        title: args.title_column.clone(),
        text: args.text_column.clone(),
    };
    let mut inputs = Vec::new();
    let mut skipped = Vec::new();
    for source in &args.sources {
        let (found, passed) =
            files::find(std::slice::from_ref(source)).map_err(|e| BuildError::Source {
                path: source.clone(),
                source: e,
            })?;
        inputs.extend(found);
        skipped.extend(passed);
    }
    let bar = (progress && inputs.len() >= 50).then(|| {
        let bar = indicatif::ProgressBar::new(inputs.len() as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} files, {msg} passages ({elapsed})",
        ) {
            bar.set_style(style);
        }
        bar
    });

    // A failed build leaves no temporary behind (`NamedTempFile` removes itself when dropped,
    // on an early return or a panic alike) and the output as it was.
    let partial = durable::temporary_beside(&args.out).map_err(|source| BuildError::Write {
        path: args.out.clone(),
        source,
    })?;
    let partial_path = partial.path().to_owned();
    let mut writer = Writer {
        out: std::io::BufWriter::new(partial),
        hash: Sha256::new(),
        bytes: 0,
        ids: HashMap::new(),
        passages: 0,
    };
    let mut read = BTreeMap::new();
    let mut empty_rows = 0;
    let result = (|| {
        for (at, input) in inputs.iter().enumerate() {
            // Each passage written as it is cut; the first write that fails stops the build.
            let mut failed = None;
            let outcome = passages_of(input, cut, &columns, &mut |p| {
                if failed.is_some() {
                    return;
                }
                if p.id.len() > MAX_ID_BYTES {
                    skipped.push(files::skip(
                        &input.path,
                        format!("a passage's id is over {MAX_ID_BYTES} bytes"),
                    ));
                } else if let Err(e) = writer.write(&p, at, &inputs) {
                    failed = Some(e);
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
            match outcome {
                Err(why) => skipped.push(files::skip(&input.path, why)),
                Ok(empty) => {
                    *read.entry(input.format.kind()).or_insert(0) += 1;
                    empty_rows += empty;
                }
            }
            if let Some(bar) = &bar {
                bar.inc(1);
                bar.set_message(writer.passages.to_string());
            }
        }
        writer.out.flush().map_err(|source| BuildError::Write {
            path: partial_path.clone(),
            source,
        })
    })();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let finished = result.and_then(|()| {
        if writer.passages == 0 {
            return Err(BuildError::Empty(format!(
                "{} files read, {} skipped",
                read.values().sum::<usize>(),
                skipped.len()
            )));
        }
        let partial = writer.out.into_inner().map_err(|e| BuildError::Write {
            path: partial_path.clone(),
            source: e.into_error(),
        })?;
        loads(&partial_path)?;
        durable::persist(partial, &args.out)
            .map_err(|(path, source)| BuildError::Write { path, source })
    });
    finished?;
    Ok(Summary {
        out: args.out.clone(),
        read,
        skipped,
        empty_rows,
        passages: writer.passages,
        bytes: writer.bytes,
        sha256: hex::encode(writer.hash.finalize()),
    })
}

struct Writer {
    out: std::io::BufWriter<NamedTempFile>,
    hash: Sha256,
    bytes: u64,
    /// Every id written (by the first 16 bytes of its sha256: a passage costs 20 bytes here,
    /// whatever its id), and the input it came from.
    ids: HashMap<[u8; 16], u32>,
    passages: usize,
}

impl Writer {
    /// Writes `p`, a passage of `inputs[at]`.
    fn write(&mut self, p: &Passage, at: usize, inputs: &[Input]) -> Result<(), BuildError> {
        let input = &inputs[at];
        let digest = Sha256::digest(p.id.as_bytes());
        let mut key = [0; 16];
        key.copy_from_slice(&digest[..16]);
        let index = u32::try_from(at).unwrap_or(u32::MAX);
        if let Some(first) = self.ids.insert(key, index) {
            return Err(BuildError::DuplicateId {
                id: p.id.clone(),
                first: inputs
                    .get(first as usize)
                    .map_or_else(|| input.path.clone(), |i| i.path.clone()),
                second: input.path.clone(),
            });
        }
        let mut line = serde_json::to_vec(&Line {
            id: &p.id,
            kind: p.kind,
            title: &p.title,
            text: &p.text,
        })
        .map_err(|e| BuildError::Settings(e.to_string()))?;
        line.push(b'\n');
        if self.bytes + line.len() as u64 > MAX_CORPUS_BYTES {
            return Err(BuildError::TooLarge);
        }
        self.out
            .write_all(&line)
            .map_err(|source| BuildError::Write {
                path: input.path.clone(),
                source,
            })?;
        self.hash.update(&line);
        self.bytes += line.len() as u64;
        self.passages += 1;
        Ok(())
    }
}

/// Lines of the written corpus checked at a time, at least (whole lines).
const CHECKED_BYTES: usize = 64 << 20;

/// The server's own loader, on the bytes written: what `serve --corpus` will accept. Read in
/// pieces of whole lines, so the check holds a piece, not the corpus (the writer has made sure
/// that no id comes twice across pieces); a refusal names the line of the whole file.
fn loads(path: &Path) -> Result<(), BuildError> {
    use std::io::BufRead;
    let error = |source| BuildError::Write {
        path: path.to_owned(),
        source,
    };
    let mut file = std::io::BufReader::new(std::fs::File::open(path).map_err(error)?);
    let mut piece = Vec::new();
    let mut lines_before = 0;
    loop {
        piece.clear();
        let mut lines = 0;
        while piece.len() < CHECKED_BYTES {
            if file.read_until(b'\n', &mut piece).map_err(error)? == 0 {
                break;
            }
            lines += 1;
        }
        if piece.is_empty() {
            return Ok(());
        }
        turnstile_corpus::load_documents(&piece).map_err(|e| match e {
            turnstile_corpus::CorpusError::BadDocument { line, reason } => {
                turnstile_corpus::CorpusError::BadDocument {
                    line: line + lines_before,
                    reason,
                }
            }
            other => other,
        })?;
        lines_before += lines;
    }
}

/// A file's passages, each handed to `emit`, and how many of its rows had no text; `Err` says
/// why it is skipped (before any passage is handed on).
fn passages_of(
    input: &Input,
    cut: Cut,
    columns: &Columns,
    emit: &mut dyn FnMut(Passage),
) -> Result<usize, String> {
    let source = files::read(&input.path)?;
    passages_from(&source, input.format, &input.id_path, cut, columns, emit)
}
