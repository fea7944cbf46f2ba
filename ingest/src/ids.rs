//! Every passage's id once, checked in bounded memory: each id is kept as a record of its
//! sha256's first 16 bytes, its passage's number and its input's, [`RUN`] records at a time in
//! memory; a full run is sorted and spilled to a temporary file beside the output, and the
//! runs are merged at the end, where equal hashes come together. The memory is the run's
//! (24 MiB) and a small buffer per spilled run, whatever the corpus's size; the disk, 24 bytes a
//! passage. A build reports the same duplicate as checking every id as it is written would: the
//! one whose second passage comes first.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Records kept in memory before a run is spilled (24 MiB of them).
pub(crate) const RUN: usize = 1 << 20;

/// Bytes of a spilled run read at a time, per run, while merging.
const MERGE_BUFFER: usize = 64 << 10;

/// One id: its hash, its passage's number in the output, its input's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Record {
    hash: [u8; 16],
    passage: u32,
    input: u32,
}

const RECORD_BYTES: usize = 24;

impl Record {
    fn to_bytes(self) -> [u8; RECORD_BYTES] {
        let mut bytes = [0; RECORD_BYTES];
        bytes[..16].copy_from_slice(&self.hash);
        bytes[16..20].copy_from_slice(&self.passage.to_le_bytes());
        bytes[20..].copy_from_slice(&self.input.to_le_bytes());
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Self {
        let mut hash = [0; 16];
        hash.copy_from_slice(&bytes[..16]);
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        Self {
            hash,
            passage: word(16),
            input: word(20),
        }
    }
}

/// Two passages with one id: their numbers in the output (0-based) and their inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Duplicate {
    pub first: (u32, u32),
    pub second: (u32, u32),
}

/// The ids written so far.
pub(crate) struct Ids {
    run: Vec<Record>,
    /// Where spilled runs go (created at the first spill, beside the output).
    dir: std::path::PathBuf,
    spill: Option<File>,
    /// Each spilled run's records: from, to (in records).
    runs: Vec<(u64, u64)>,
    spilled: u64,
}

impl Ids {
    /// No ids yet; runs are spilled into `dir` (the output's folder) when needed.
    pub fn new(dir: &Path) -> Self {
        Self {
            run: Vec::new(),
            dir: dir.to_owned(),
            spill: None,
            runs: Vec::new(),
            spilled: 0,
        }
    }

    /// Notes `id`, the `passage`th written, from input `input`.
    pub fn add(&mut self, id: &str, passage: u32, input: u32) -> std::io::Result<()> {
        let digest = Sha256::digest(id.as_bytes());
        let mut hash = [0; 16];
        hash.copy_from_slice(&digest[..16]);
        if self.run.capacity() == 0 {
            // Whole, once: growing by doubling would copy the run and hold it twice. (Pages
            // are resident only once written: a small build costs what it uses.)
            self.run.reserve_exact(RUN);
        }
        self.run.push(Record {
            hash,
            passage,
            input,
        });
        if self.run.len() >= RUN {
            self.spill_run()?;
        }
        Ok(())
    }

    fn spill_run(&mut self) -> std::io::Result<()> {
        self.run.sort_unstable();
        let file = match &mut self.spill {
            Some(file) => file,
            none => none.insert(tempfile::tempfile_in(&self.dir)?),
        };
        let mut out = std::io::BufWriter::with_capacity(1 << 20, &*file);
        for record in &self.run {
            out.write_all(&record.to_bytes())?;
        }
        out.flush()?;
        let from = self.spilled;
        self.spilled += self.run.len() as u64;
        self.runs.push((from, self.spilled));
        self.run.clear();
        Ok(())
    }

    /// The first duplicate (by its second passage), if any, once every id is added.
    pub fn duplicate(mut self) -> std::io::Result<Option<Duplicate>> {
        self.run.sort_unstable();
        let mut cursors = Vec::with_capacity(self.runs.len());
        if let Some(file) = &self.spill {
            for &(from, to) in &self.runs {
                cursors.push(Cursor::new(file, from, to));
            }
        }
        // The heap holds each run's smallest record not yet taken; the in-memory run is the
        // last "cursor", read from `self.run`.
        let in_memory = cursors.len();
        let mut heap = BinaryHeap::new();
        for (i, cursor) in cursors.iter_mut().enumerate() {
            if let Some(r) = cursor.next()? {
                heap.push(Reverse((r, i)));
            }
        }
        let mut memory = self.run.iter();
        if let Some(&r) = memory.next() {
            heap.push(Reverse((r, in_memory)));
        }
        // A hash's records come in passage order: the first is the id's first passage, the
        // second its first repeat (the rest are later repeats).
        let mut group: Option<(Record, bool)> = None;
        let mut found: Option<Duplicate> = None;
        while let Some(Reverse((record, from))) = heap.pop() {
            let next = if from == in_memory {
                memory.next().copied()
            } else {
                cursors[from].next()?
            };
            if let Some(r) = next {
                heap.push(Reverse((r, from)));
            }
            match &mut group {
                Some((first, paired)) if first.hash == record.hash => {
                    if !*paired && found.is_none_or(|d| record.passage < d.second.0) {
                        found = Some(Duplicate {
                            first: (first.passage, first.input),
                            second: (record.passage, record.input),
                        });
                    }
                    *paired = true;
                }
                _ => group = Some((record, false)),
            }
        }
        Ok(found)
    }
}

/// A spilled run, read a buffer at a time.
struct Cursor<'a> {
    file: &'a File,
    at: u64,
    to: u64,
    buffer: Vec<u8>,
    taken: usize,
}

impl<'a> Cursor<'a> {
    fn new(file: &'a File, from: u64, to: u64) -> Self {
        Self {
            file,
            at: from,
            to,
            buffer: Vec::new(),
            taken: 0,
        }
    }

    fn next(&mut self) -> std::io::Result<Option<Record>> {
        if self.taken == self.buffer.len() {
            let left = self.to - self.at;
            if left == 0 {
                return Ok(None);
            }
            let records = left.min((MERGE_BUFFER / RECORD_BYTES) as u64);
            self.buffer.resize(records as usize * RECORD_BYTES, 0);
            self.file
                .read_exact_at(&mut self.buffer, self.at * RECORD_BYTES as u64)?;
            self.at += records;
            self.taken = 0;
        }
        let record = Record::from_bytes(&self.buffer[self.taken..self.taken + RECORD_BYTES]);
        self.taken += RECORD_BYTES;
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_duplicate(ids: &[&str], dir: &Path) -> Option<Duplicate> {
        let mut set = Ids::new(dir);
        for (n, id) in ids.iter().enumerate() {
            set.add(id, n as u32, (n / 2) as u32).unwrap();
        }
        set.duplicate().unwrap()
    }

    #[test]
    fn the_first_repeat_is_found() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(first_duplicate(&["a", "b", "c"], tmp.path()), None);
        assert_eq!(
            first_duplicate(&["z", "a", "b", "a", "z", "a"], tmp.path()),
            Some(Duplicate {
                first: (1, 0),
                second: (3, 1)
            })
        );
    }

    /// Over several spilled runs, the repeat found is the one a check at every write finds.
    #[test]
    fn runs_spilled_to_disk_are_merged() {
        let tmp = tempfile::tempdir().unwrap();
        let mut set = Ids::new(tmp.path());
        let n = 2 * RUN as u32 + 1000;
        for i in 0..n {
            set.add(&format!("id-{i}"), i, 0).unwrap();
        }
        // `id-5` again, then `id-7` again, in a later run.
        set.add("id-5", n, 1).unwrap();
        set.add("id-7", n + 1, 2).unwrap();
        set.add("id-5", n + 2, 3).unwrap();
        assert_eq!(set.runs.len(), 2);
        assert_eq!(
            set.duplicate().unwrap(),
            Some(Duplicate {
                first: (5, 0),
                second: (n, 1)
            })
        );
        let mut set = Ids::new(tmp.path());
        for i in 0..RUN as u32 + 10 {
            set.add(&format!("id-{i}"), i, 0).unwrap();
        }
        assert_eq!(set.duplicate().unwrap(), None);
    }
}
