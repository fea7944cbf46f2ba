//! What a start remembers of the corpus file it indexed, so that the next start on the same,
//! unchanged file finds its index without reading the file: a million passages are 471 MB to
//! read from a cold disk and hash before anything else can happen.
//!
//! A stamp records the file's identity and times as the kernel reports them — device, inode,
//! size, modification time and status-change time (`ctime`, which every write, rename into
//! place or `utimes` sets to the clock and nobody can set back) — a sampled hash (xxh3-128 over
//! 17 blocks of 64 KiB spread evenly through the file, the last included), and the sha256 of
//! the corpus's JSON Lines that indexing computed. A start whose file has all of them unchanged
//! takes the recorded sha256; any difference (a rewrite, a copy, `touch`, a file replaced by
//! another of the same size) and the file is read and hashed whole, as before, and the stamp
//! written again. A start pinned to a corpus (`--corpus-sha256`) never takes a stamp: the pin
//! is checked against the bytes.
//!
//! Stamps live in the index directory of the cache, one per corpus path
//! (`source-<hash of the path>.stamp`, JSON, under 1 KiB), written through a temporary renamed
//! into place; an unreadable or malformed stamp is no stamp.

use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use xxhash_rust::xxh3::Xxh3;

/// How long a file must have been left alone before its stamp is recorded.
const SETTLING: std::time::Duration = std::time::Duration::from_secs(2);

/// Blocks the sampled hash reads, and their size.
const SAMPLES: u64 = 17;
const SAMPLE_BYTES: u64 = 64 << 10;

/// A corpus file as a stamp records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Observed {
    device: u64,
    inode: u64,
    length: u64,
    modified_ns: i128,
    changed_ns: i128,
    sampled: String,
}

/// A stamp: the file as it was observed, and the sha256 of its JSON Lines.
#[derive(Debug, Serialize, Deserialize)]
struct Stamp {
    observed: Observed,
    sha256: String,
}

/// The file at `path` as it is now: its metadata and sampled hash, read through one open
/// descriptor (`None` if it cannot be opened or read, or is not a regular file).
fn observe(path: &Path) -> Option<Observed> {
    let file = std::fs::File::open(path).ok()?;
    let before = file.metadata().ok()?;
    if !before.is_file() {
        return None;
    }
    let length = before.len();
    let mut hasher = Xxh3::new();
    hasher.update(&length.to_le_bytes());
    let mut block = vec![0u8; usize::try_from(SAMPLE_BYTES.min(length)).ok()?];
    let last = length.saturating_sub(SAMPLE_BYTES);
    for i in 0..SAMPLES {
        let at = last / (SAMPLES - 1) * i;
        let at = if i == SAMPLES - 1 { last } else { at };
        file.read_exact_at(&mut block, at).ok()?;
        hasher.update(&block);
    }
    let after = file.metadata().ok()?;
    let observed = Observed {
        device: before.dev(),
        inode: before.ino(),
        length,
        modified_ns: i128::from(before.mtime()) * 1_000_000_000 + i128::from(before.mtime_nsec()),
        changed_ns: i128::from(before.ctime()) * 1_000_000_000 + i128::from(before.ctime_nsec()),
        sampled: format!("{:032x}", hasher.digest128()),
    };
    // Changed while it was sampled: no observation to trust.
    (after.len() == length
        && after.ctime() == before.ctime()
        && after.ctime_nsec() == before.ctime_nsec())
    .then_some(observed)
}

/// Where the stamp of the corpus at `path` is kept in `index_dir`.
fn stamp_path(index_dir: &Path, path: &Path) -> PathBuf {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let digest = Sha256::digest(absolute.as_os_str().as_encoded_bytes());
    index_dir.join(format!("source-{}.stamp", &hex::encode(digest)[..16]))
}

/// The sha256 of the JSON Lines of the corpus at `path`, if a stamp in `index_dir` recorded it
/// for the file as it is now (same device, inode, size, times and sampled hash).
pub(crate) fn recorded_sha256(index_dir: &Path, path: &Path) -> Option<String> {
    let text = std::fs::read(stamp_path(index_dir, path)).ok()?;
    let stamp: Stamp = serde_json::from_slice(&text).ok()?;
    let valid = stamp.sha256.len() == 64 && stamp.sha256.bytes().all(|b| b.is_ascii_hexdigit());
    (valid && observe(path)? == stamp.observed).then_some(stamp.sha256)
}

/// What a start observed of the corpus at `path` before reading it, to be recorded once its
/// sha256 is known ([`Observation::record`]).
#[derive(Debug)]
pub struct Observation {
    path: PathBuf,
    observed: Option<Observed>,
}

impl Observation {
    /// The corpus at `path` as it is now, before it is read.
    pub fn before_reading(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            observed: observe(path),
        }
    }

    /// Records in `index_dir` that the corpus file, as observed before it was read, has JSON
    /// Lines hashing to `sha256` — if it is still as observed now (a file changed while it was
    /// read gets no stamp). Best effort: a stamp that cannot be written only costs the next
    /// start a read of the file.
    pub fn record(self, index_dir: &Path, sha256: &str) {
        self.record_at(index_dir, sha256, std::time::SystemTime::now());
    }

    /// [`Self::record`] at the time `now`: a file whose times are within [`SETTLING`] of it is
    /// not stamped (as git treats an entry as racy), because a write in the same tick of the
    /// kernel's coarse clock as the last one leaves its times as they were.
    fn record_at(self, index_dir: &Path, sha256: &str, now: std::time::SystemTime) {
        let Some(observed) = self.observed else {
            return;
        };
        let now_ns = now
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
        let settled = |ns: i128| now_ns.saturating_sub(ns) >= SETTLING.as_nanos() as i128;
        if !settled(observed.changed_ns) || !settled(observed.modified_ns) {
            tracing::debug!(path = %self.path.display(), "the corpus changed moments ago: no stamp until the next start");
            return;
        }
        if observe(&self.path).as_ref() != Some(&observed) {
            return;
        }
        let stamp = Stamp {
            observed,
            sha256: sha256.to_owned(),
        };
        let target = stamp_path(index_dir, &self.path);
        let written = (|| -> std::io::Result<()> {
            let mut tmp = tempfile::Builder::new()
                .prefix("source-")
                .suffix(".tmp")
                .tempfile_in(index_dir)?;
            serde_json::to_writer(&mut tmp, &stamp)?;
            tmp.flush()?;
            tmp.persist(&target).map_err(|e| e.error)?;
            Ok(())
        })();
        if let Err(e) = written {
            tracing::debug!(path = %target.display(), error = %e, "cannot record the corpus's stamp");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stamp is taken only for the file as it was observed; any change to its bytes, its
    /// times or its identity makes the start read it again.
    #[test]
    fn a_stamp_holds_only_for_the_unchanged_file() {
        let dir = tempfile::tempdir().unwrap();
        let index_dir = dir.path().join("index");
        std::fs::create_dir(&index_dir).unwrap();
        let corpus = dir.path().join("corpus.jsonl");
        let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&corpus, &bytes).unwrap();
        let sha = "a".repeat(64);
        // The files here were written moments ago: recorded as if an hour had passed.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        let record =
            |path: &Path| Observation::before_reading(path).record_at(&index_dir, &sha, later);
        assert_eq!(recorded_sha256(&index_dir, &corpus), None, "no stamp yet");
        Observation::before_reading(&corpus).record(&index_dir, &sha);
        assert_eq!(
            recorded_sha256(&index_dir, &corpus),
            None,
            "changed moments ago"
        );
        record(&corpus);
        assert_eq!(recorded_sha256(&index_dir, &corpus), Some(sha.clone()));

        // One byte changed in place where no sample reads (1,234,567), its modification time
        // put back as it was: the status-change time moved (once the coarse clock ticks).
        let recorded = std::fs::metadata(&corpus).unwrap();
        let mut changed = bytes.clone();
        changed[1_234_567] ^= 1;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            std::fs::write(&corpus, &changed).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&corpus)
                .unwrap()
                .set_modified(recorded.modified().unwrap())
                .unwrap();
            let now = std::fs::metadata(&corpus).unwrap();
            if (now.ctime(), now.ctime_nsec()) != (recorded.ctime(), recorded.ctime_nsec()) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the clock never ticked"
            );
        }
        assert_eq!(
            std::fs::metadata(&corpus).unwrap().modified().unwrap(),
            recorded.modified().unwrap()
        );
        assert_eq!(
            recorded_sha256(&index_dir, &corpus),
            None,
            "changed in place"
        );

        // Recorded again, then replaced by a copy of the same bytes (another inode).
        record(&corpus);
        assert_eq!(recorded_sha256(&index_dir, &corpus), Some(sha.clone()));
        let copy = dir.path().join("copy");
        std::fs::write(&copy, &changed).unwrap();
        std::fs::rename(&copy, &corpus).unwrap();
        assert_eq!(recorded_sha256(&index_dir, &corpus), None, "replaced");

        // A file that changed between the observation and the record gets no stamp.
        let observation = Observation::before_reading(&corpus);
        std::fs::write(&corpus, b"{}\n").unwrap();
        observation.record_at(&index_dir, &sha, later);
        assert_eq!(
            recorded_sha256(&index_dir, &corpus),
            None,
            "changed while read"
        );

        // A damaged stamp, or one with a malformed sha256, is no stamp.
        record(&corpus);
        assert_eq!(
            recorded_sha256(&index_dir, &corpus),
            Some(sha.clone()),
            "a small file too"
        );
        let stamp = stamp_path(&index_dir, &corpus);
        let text = std::fs::read_to_string(&stamp).unwrap();
        std::fs::write(&stamp, text.replace(&sha, "not a sha")).unwrap();
        assert_eq!(recorded_sha256(&index_dir, &corpus), None, "malformed");
        std::fs::write(&stamp, b"{").unwrap();
        assert_eq!(recorded_sha256(&index_dir, &corpus), None, "damaged");
    }
}
