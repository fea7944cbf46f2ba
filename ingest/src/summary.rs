//! What a build did, as `corpus build` prints it: files read and passed over, bad rows kept
//! out (under `--skip-bad-rows`), passages and bytes written.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::files::Skipped;

/// Skips and bad rows listed one by one in the summary; the rest are counted (so a table of a
/// million bad rows costs no memory for them).
pub(crate) const MAX_LISTED: usize = 20;

/// A row of a table left out under `--skip-bad-rows`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRow {
    /// The table.
    pub path: PathBuf,
    /// The line (1-based) the row starts on.
    pub line: usize,
    /// What is wrong with it, in words.
    pub why: String,
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
    /// Bad rows left out (`--skip-bad-rows`): how many.
    pub bad_rows: usize,
    /// The first of them (at most 20), in input order.
    pub bad_rows_listed: Vec<BadRow>,
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
            for s in self.skipped.iter().take(MAX_LISTED) {
                writeln!(f, "  {}: {}", s.path.display(), s.why)?;
            }
            if self.skipped.len() > MAX_LISTED {
                writeln!(f, "  … and {} more", self.skipped.len() - MAX_LISTED)?;
            }
        }
        if self.bad_rows > 0 {
            writeln!(f, "bad rows left out: {}", self.bad_rows)?;
            for b in &self.bad_rows_listed {
                writeln!(f, "  {}: line {}: {}", b.path.display(), b.line, b.why)?;
            }
            if self.bad_rows > self.bad_rows_listed.len() {
                writeln!(
                    f,
                    "  … and {} more",
                    self.bad_rows - self.bad_rows_listed.len()
                )?;
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
