//! An unchanged file's passages copied from the last build's output instead of being read
//! again ([`manifest`](crate::manifest) says which bytes), and each file written recorded for
//! the next build's manifest.

use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{BufRead, Read, Seek};
use std::path::Path;
use std::rc::Rc;

use xxhash_rust::xxh3::Xxh3;

use super::{BuildError, Run};
use crate::manifest::Entry;

/// Where the output stood before a file's passages were written.
#[derive(Clone, Copy)]
pub(super) struct Mark {
    bytes: u64,
    passages: usize,
    bad_rows: usize,
    empty_rows: usize,
}

impl Run<'_> {
    pub(super) fn mark(&self) -> Mark {
        Mark {
            bytes: self.writer.bytes,
            passages: self.writer.passages,
            bad_rows: self.bad_rows,
            empty_rows: self.empty_rows,
        }
    }

    /// Records `inputs[at]`, read whole since `mark`, whose bytes hash to `hash`, for the
    /// manifest.
    pub(super) fn record(&mut self, at: usize, hash: u128, mark: Mark) {
        let input = &self.inputs[at];
        self.entries.push(Entry {
            path: input.id_path.clone(),
            xxh3: format!("{hash:032x}"),
            bytes: input.len,
            from: mark.bytes,
            to: self.writer.bytes,
            passages: self.writer.passages - mark.passages,
            bad_rows: self.bad_rows - mark.bad_rows,
            empty_rows: self.empty_rows - mark.empty_rows,
        });
    }

    /// Whether `inputs[at]` is the file the last build read (the same length, and `hash` —
    /// asked only then — the same): if so, its passages are copied from the last output,
    /// counted and recorded, and it is not to be read. Else it counts as added or changed.
    pub(super) fn reused(
        &mut self,
        at: usize,
        hash: impl FnOnce() -> std::io::Result<u128>,
    ) -> Result<bool, BuildError> {
        let input = &self.inputs[at];
        let Some(last) = &mut self.last else {
            return Ok(false);
        };
        let Some(entry) = last.entries.remove(&input.id_path) else {
            self.changes.added += 1;
            return Ok(false);
        };
        // A file that cannot be hashed is read as a changed one (and passed over if it cannot
        // be read at all).
        let same = entry.bytes == input.len
            && hash().is_ok_and(|hash| format!("{hash:032x}") == entry.xxh3);
        if !same {
            self.changes.changed += 1;
            return Ok(false);
        }
        let mark = self.mark();
        self.copy(at, &entry)?;
        self.bad_rows += entry.bad_rows;
        self.empty_rows += entry.empty_rows;
        *self.read.entry(input.format.kind()).or_insert(0) += 1;
        self.changes.reused += 1;
        self.changes.passages_reused += entry.passages;
        self.entries.push(Entry {
            from: mark.bytes,
            to: self.writer.bytes,
            ..entry
        });
        Ok(true)
    }

    /// Copies `entry`'s lines of the last output into the new one, each id counted as a
    /// written passage's is (so the check for repeated ids covers them).
    fn copy(&mut self, at: usize, entry: &Entry) -> Result<(), BuildError> {
        #[derive(serde::Deserialize)]
        struct Id<'a> {
            #[serde(borrow)]
            id: Cow<'a, str>,
        }
        let out = &self.args.out;
        let failed = |source| BuildError::Write {
            path: out.clone(),
            source,
        };
        let Some(last) = &self.last else {
            return Ok(());
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
            let id: Id = serde_json::from_slice(&line).map_err(|e| failed(std::io::Error::other(e)))?;
            self.writer.write_line(&line, &id.id, at, self.inputs)?;
            copied += 1;
        }
        if copied != entry.passages || !line.ends_with(b"\n") && copied > 0 {
            return Err(failed(std::io::Error::other(
                "the last output does not hold what its manifest says",
            )));
        }
        Ok(())
    }
}

/// A file's xxh3-128, read a piece at a time.
pub(super) fn file_hash(path: &Path) -> std::io::Result<u128> {
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
pub(super) struct Hashed(Rc<RefCell<Xxh3>>);

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
