//! The manifest beside a built corpus, `OUT.manifest` (JSON Lines), which lets the next build to
//! the same `--out` copy an unchanged file's passages instead of reading the file again.
//!
//! Its first line names the settings that shape passages (one hash: [`settings`]) and the
//! output it describes (its xxh3-128 and length); each further line is one input file read into
//! that output: its id path, its own xxh3-128 and length, and the byte range of its passages in
//! the output (with their count, and the table rows it left out). It is written after the
//! output, durably, under a temporary name renamed over the last one; a manifest whose output
//! is not the file at `--out` (a crash between the two renames, an output edited or replaced)
//! is not used, nor one of other settings, of another version, or unreadable: the build then
//! reads every file, and says why.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

use crate::durable;

/// The manifest's format: a manifest of another is not read.
const FORMAT: u32 = 1;

/// The version of what the readers and the splitter make of a file, beside the flags: raise it
/// when the same file and flags give other passages than before, so that no build reuses
/// passages made the old way.
pub(crate) const PASSAGES_VERSION: u32 = 2;

/// Largest manifest read, in bytes (about 150 bytes a file: millions of files).
const MAX_MANIFEST_BYTES: u64 = 1 << 30;

/// Where the manifest of `out` is: `OUT.manifest` beside it (an extension no build reads, so a
/// manifest inside a source folder is passed over).
pub fn path_of(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_owned();
    name.push(".manifest");
    out.with_file_name(name)
}

/// The settings that shape passages as one hash (hex): `shaping` (every flag of `corpus
/// build` that may change what a file gives, described by `BuildArgs::shaping`),
/// [`PASSAGES_VERSION`] and the fingerprint of the tokenizer that sizes passages (a build with
/// another model's tokenizer cuts passages elsewhere).
pub(crate) fn settings(shaping: &str, tokenizer: &str) -> String {
    let described = format!("{PASSAGES_VERSION} {tokenizer} {shaping}");
    format!("{:032x}", xxh3_128(described.as_bytes()))
}

/// The manifest's first line.
#[derive(Serialize, Deserialize)]
struct Header {
    manifest: u32,
    settings: String,
    output_xxh3: String,
    output_bytes: u64,
    files: usize,
}

/// One input file read into the output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// Its id path (relative to the sources' root).
    pub path: String,
    /// Its bytes' xxh3-128, hex.
    pub xxh3: String,
    /// Its length.
    pub bytes: u64,
    /// Its passages' bytes in the output: from, to.
    pub from: u64,
    pub to: u64,
    pub passages: usize,
    /// Rows of it left out (`--skip-bad-rows`) and rows without text.
    pub bad_rows: usize,
    pub empty_rows: usize,
}

/// The last build's output and what it holds, by id path.
pub(crate) struct Last {
    pub entries: HashMap<String, Entry>,
    /// The output, open (a build renames its new output over it; this stays the old one).
    pub output: File,
}

/// The last build to `out`, if it can be reused (not `full`, of the same `settings`); else
/// why not.
pub(crate) fn last(out: &Path, full: bool, settings: &str) -> Result<Last, String> {
    if full {
        return Err("--full".into());
    }
    let path = path_of(out);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("no manifest ({})", path.display()));
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let unusable = |why: &str| format!("{}: {why}", path.display());
    let mut lines = std::io::BufReader::new(file.take(MAX_MANIFEST_BYTES)).lines();
    let header: Header = lines
        .next()
        .and_then(|line| serde_json::from_str(&line.ok()?).ok())
        .ok_or_else(|| unusable("not a manifest"))?;
    if header.manifest != FORMAT {
        return Err(unusable("a manifest of another version"));
    }
    if header.settings != settings {
        return Err("the settings changed since the last build".into());
    }
    let output = File::open(out).map_err(|e| format!("{}: {e}", out.display()))?;
    if output_hash(&output).map_err(|e| format!("{}: {e}", out.display()))?
        != (header.output_xxh3.clone(), header.output_bytes)
    {
        return Err(format!(
            "{} is not the output its manifest describes",
            out.display()
        ));
    }
    let mut entries = HashMap::with_capacity(header.files);
    for line in lines {
        let entry: Entry = line
            .ok()
            .and_then(|line| serde_json::from_str(&line).ok())
            .ok_or_else(|| unusable("a line is not a file's entry"))?;
        if entry.from > entry.to || entry.to > header.output_bytes {
            return Err(unusable("a file's range is outside the output"));
        }
        entries.insert(entry.path.clone(), entry);
    }
    if entries.len() != header.files {
        return Err(unusable("cut short"));
    }
    Ok(Last { entries, output })
}

/// A file's xxh3-128 (hex) and length, read a piece at a time.
pub(crate) fn output_hash(file: &File) -> std::io::Result<(String, u64)> {
    let mut hasher = Xxh3::new();
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut bytes = 0;
    loop {
        let piece = reader.fill_buf()?;
        if piece.is_empty() {
            return Ok((format!("{:032x}", hasher.digest128()), bytes));
        }
        hasher.update(piece);
        let n = piece.len();
        bytes += n as u64;
        reader.consume(n);
    }
}

/// Writes the manifest of the output just written at `out` (its xxh3 `output_xxh3`, `bytes`
/// long), durably, over the last one: the header, then `files` entries, one a line, from
/// `entries`.
pub(crate) fn write(
    out: &Path,
    settings: String,
    output_xxh3: String,
    output_bytes: u64,
    files: usize,
    entries: Result<File, String>,
) -> Result<(), String> {
    let mut entries = entries?;
    let path = path_of(out);
    let failed = |path: &Path, e: std::io::Error| format!("{}: {e}", path.display());
    let partial = durable::temporary_beside(&path).map_err(|e| failed(&path, e))?;
    let mut writer = std::io::BufWriter::new(partial);
    let header = Header {
        manifest: FORMAT,
        settings,
        output_xxh3,
        output_bytes,
        files,
    };
    let mut line = serde_json::to_vec(&header).map_err(|e| e.to_string())?;
    line.push(b'\n');
    writer.write_all(&line).map_err(|e| failed(&path, e))?;
    std::io::copy(&mut entries, &mut writer).map_err(|e| failed(&path, e))?;
    let partial = writer
        .into_inner()
        .map_err(|e| failed(&path, e.into_error()))?;
    durable::persist(partial, &path).map_err(|(path, e)| failed(&path, e))
}

#[cfg(test)]
mod tests {
    /// The tokenizer that sizes passages is one of the settings: a build with another one does
    /// not reuse this one's passages.
    #[test]
    fn the_settings_name_the_tokenizer() {
        let shipped = turnstile_embed::ShippedTokenizer::get().unwrap();
        assert_eq!(shipped.fingerprint().len(), 64);
        let shaping = "BuildArgs { max_tokens: 256 }";
        assert_eq!(
            super::settings(shaping, shipped.fingerprint()),
            super::settings(shaping, shipped.fingerprint())
        );
        assert_ne!(
            super::settings(shaping, shipped.fingerprint()),
            super::settings(shaping, &"0".repeat(64))
        );
    }
}
