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

/// What a build took from the last one to the same output (its manifest, `OUT.manifest`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Why every file was read again (no manifest, another's settings, `--full`…); `None` when
    /// the unchanged files' passages were copied from the last output.
    pub full: Option<String>,
    /// Files read that the last build did not read.
    pub added: usize,
    /// Files read again, changed since the last build.
    pub changed: usize,
    /// Files of the last build not in this one (gone, or passed over now).
    pub removed: usize,
    /// Unchanged files whose passages were copied, not read again.
    pub reused: usize,
    /// Passages copied from the last output.
    pub passages_reused: usize,
    /// The manifest could not be written (the output was): why. The next build reads all.
    pub manifest_not_written: Option<String>,
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
    /// Documents read from another encoding than UTF-8, by encoding.
    pub converted: BTreeMap<&'static str, usize>,
    /// What was reused from the last build.
    pub changes: Changes,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let read: Vec<String> = self.read.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let files: usize = self.read.values().sum();
        writeln!(f, "read {files} files ({})", read.join(", "))?;
        let c = &self.changes;
        match &c.full {
            Some(why) => writeln!(f, "every file read: {why}")?,
            None => writeln!(
                f,
                "reused {} unchanged files ({} passages) from the last build; {} changed, {} added, {} removed",
                c.reused, c.passages_reused, c.changed, c.added, c.removed
            )?,
        }
        if !self.converted.is_empty() {
            let from: Vec<String> = self
                .converted
                .iter()
                .map(|(e, n)| format!("{n} {e}"))
                .collect();
            let n: usize = self.converted.values().sum();
            writeln!(f, "converted to UTF-8: {n} files ({})", from.join(", "))?;
        }
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
            if c.reused > 0 {
                writeln!(
                    f,
                    "  (the rows of reused files are counted here, listed by the build that read them)"
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
        )?;
        if let Some(why) = &c.manifest_not_written {
            write!(
                f,
                "\nwarning: no manifest written ({why}): the next build reads every file"
            )?;
        }
        Ok(())
    }
}
