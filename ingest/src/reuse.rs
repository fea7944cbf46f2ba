//! An unchanged file's passages copied from the last build's output instead of being read
//! again ([`manifest`] says which bytes), and each file written recorded for the next build's
//! manifest.

use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{BufRead, Read, Seek, Write};
use std::path::Path;
use std::rc::Rc;

use xxhash_rust::xxh3::Xxh3;

use crate::error::BuildError;
use crate::files::Input;
use crate::manifest::{self, Entry, Last};
use crate::summary::Changes;

/// Where the output stood before a file's passages were written (or after).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    pub bytes: u64,
    pub passages: usize,
    pub bad_rows: usize,
    pub empty_rows: usize,
}

/// What the last build left to reuse, and what this one has written so far.
pub(crate) struct Reuse {
    /// The last build to the same output, when its passages can be reused.
    last: Option<Last>,
    /// The manifest's entries of the files written so far, one JSON line each, spilled to an
    /// unnamed temporary file beside the output (so that memory does not grow with the files).
    pub entries: Entries,
    pub changes: Changes,
}

impl Reuse {
    /// The last build to `out`, unless `full` or it cannot be reused (`changes.full` says why);
    /// `settings` are this build's ([`manifest::settings`]).
    pub fn new(out: &Path, full: bool, settings: &str) -> Self {
        let (last, full) = match manifest::last(out, full, settings) {
            Ok(last) => (Some(last), None),
            Err(why) => (None, Some(why)),
        };
        Self {
            last,
            entries: Entries::beside(out),
            changes: Changes {
                full,
                ..Changes::default()
            },
        }
    }

    /// Records `input`, whose bytes hash to `hash`, written between `from` and `to`.
    pub fn record(&mut self, input: &Input, hash: u128, from: Mark, to: Mark) {
        self.entries.add(&Entry {
            path: input.id_path.clone(),
            xxh3: format!("{hash:032x}"),
            bytes: input.len,
            from: from.bytes,
            to: to.bytes,
            passages: to.passages - from.passages,
            bad_rows: to.bad_rows - from.bad_rows,
            empty_rows: to.empty_rows - from.empty_rows,
        });
    }

    /// The last build's entry of `input` if the file is the one it read (the same length,
    /// and `hash` — asked only then — the same): its passages are to be copied ([`copy`]).
    /// Else `None`, and the file counts as added or changed.
    ///
    /// [`copy`]: Self::copy
    pub fn unchanged(
        &mut self,
        input: &Input,
        hash: impl FnOnce() -> std::io::Result<u128>,
    ) -> Option<Entry> {
        let last = self.last.as_mut()?;
        let Some(entry) = last.entries.remove(&input.id_path) else {
            self.changes.added += 1;
            return None;
        };
        // A file that cannot be hashed is read as a changed one (and passed over if it cannot
        // be read at all).
        let same = entry.bytes == input.len
            && hash().is_ok_and(|hash| format!("{hash:032x}") == entry.xxh3);
        if !same {
            self.changes.changed += 1;
            return None;
        }
        self.changes.reused += 1;
        self.changes.passages_reused += entry.passages;
        Some(entry)
    }

    /// Gives `entry`'s lines of the last output (each with its `\n`) and their ids to `write`,
    /// in order. `out` names the output in errors.
    pub fn copy(
        &self,
        entry: &Entry,
        out: &Path,
        mut write: impl FnMut(&[u8], &str) -> Result<(), BuildError>,
    ) -> Result<(), BuildError> {
        #[derive(serde::Deserialize)]
        struct Id<'a> {
            #[serde(borrow)]
            id: Cow<'a, str>,
        }
        let failed = |source| BuildError::Write {
            path: out.to_owned(),
            source,
        };
        let garbled = || {
            failed(std::io::Error::other(
                "the last output does not hold what its manifest says",
            ))
        };
        let Some(last) = &self.last else {
            return Err(garbled());
        };
        let mut file = &last.output;
        file.seek(std::io::SeekFrom::Start(entry.from))
            .map_err(failed)?;
        let mut lines = std::io::BufReader::new(file.take(entry.to - entry.from));
        let mut line = Vec::new();
        let mut copied = 0;
        loop {
            line.clear();
            if lines.read_until(b'\n', &mut line).map_err(failed)? == 0 {
                break;
            }
            if !line.ends_with(b"\n") {
                return Err(garbled());
            }
            let id: Id = serde_json::from_slice(&line).map_err(|_| garbled())?;
            write(&line, &id.id)?;
            copied += 1;
        }
        if copied != entry.passages {
            return Err(garbled());
        }
        Ok(())
    }

    /// Records `entry`, copied, at its new place in the output.
    pub fn copied(&mut self, entry: Entry, from: u64, to: u64) {
        self.entries.add(&Entry { from, to, ..entry });
    }

    /// Files of the last build that this one did not read (once every input is done).
    pub fn removed(&self) -> usize {
        self.last.as_ref().map_or(0, |last| last.entries.len())
    }
}

/// The manifest's entries written so far, or why they cannot be (the first write that failed).
pub(crate) struct Entries {
    spill: Result<std::io::BufWriter<std::fs::File>, String>,
    pub count: usize,
}

impl Entries {
    fn beside(out: &Path) -> Self {
        let dir = match out.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        Self {
            spill: tempfile::tempfile_in(dir)
                .map(std::io::BufWriter::new)
                .map_err(|e| format!("{}: {e}", dir.display())),
            count: 0,
        }
    }

    fn add(&mut self, entry: &Entry) {
        if let Ok(spill) = &mut self.spill {
            let mut line = serde_json::to_vec(entry).unwrap_or_default();
            line.push(b'\n');
            if let Err(e) = spill.write_all(&line) {
                self.spill = Err(e.to_string());
            }
        }
        self.count += 1;
    }

    /// The entries' lines, from the first; or why they were not kept.
    pub fn lines(self) -> Result<std::fs::File, String> {
        let mut file = self
            .spill?
            .into_inner()
            .map_err(|e| e.error().to_string())?;
        file.seek(std::io::SeekFrom::Start(0))
            .map_err(|e| e.to_string())?;
        Ok(file)
    }
}

/// A file's xxh3-128, read a piece at a time.
pub(crate) fn file_hash(path: &Path) -> std::io::Result<u128> {
    let hashed = Hashed::default();
    std::io::copy(
        &mut hashed.reader(std::fs::File::open(path)?),
        &mut std::io::sink(),
    )?;
    Ok(hashed.digest())
}

/// The hash of what a reader made by [`Hashed::reader`] read (a table, hashed as it is
/// parsed).
#[derive(Default, Clone)]
pub(crate) struct Hashed(Rc<RefCell<Xxh3>>);

impl Hashed {
    /// `inner`, hashed into this as it is read.
    pub fn reader<R: Read>(&self, inner: R) -> impl Read + use<R> {
        Hashing {
            inner,
            hasher: self.clone(),
        }
    }

    pub fn digest(&self) -> u128 {
        self.0.borrow().digest128()
    }
}

struct Hashing<R> {
    inner: R,
    hasher: Hashed,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.0.borrow_mut().update(&buf[..n]);
        Ok(n)
    }
}
