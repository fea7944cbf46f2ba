//! Keeping the cache directory small enough to restart on: temporaries left over from a build
//! cut short are removed when the cache opens, and the entries are trimmed to a bound, least
//! recently used first.
//!
//! What the cache holds, and who writes it:
//! - `index/corpus-H-vN.sqlite`, its checksum `….sqlite.sha256`, a large corpus's flat vectors
//!   `….sqlite.vectors` and its build lock
//!   `corpus-H-vN.lock` (`turnstile-corpus`); a pool reading the index holds a shared lock on the
//!   checksum for as long as it lives;
//! - `plugins/S-E.cwasm`, its digest `….cwasm.sha256` and its compile lock `….cwasm.lock`
//!   (precompiled plugins); a loaded artifact is mapped, and survives its
//!   file's removal;
//! - temporaries `STEM.XXXXXX.tmp`, written while the lock `STEM.lock` beside them is held, then
//!   renamed into place.
//!
//! Several processes may share a cache directory (replicas, a test run's servers): nothing here
//! waits for a lock, and nothing is removed that another process may be using — an entry whose
//! lock or checksum cannot be locked at once is in use and is passed over.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How old a temporary without a lock to tell (a name this host does not write) must be before
/// it is taken for left over: every temporary this host writes is renamed into place within
/// the build that writes it, and a build that holds no lock takes seconds, not an hour.
pub const STALE_TEMPORARY_AGE: Duration = Duration::from_secs(3600);

/// What a trim did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trimmed {
    /// The entries removed (their main file: the index or the artifact), oldest first.
    pub removed: Vec<PathBuf>,
    /// Bytes of the entries before.
    pub bytes_before: u64,
    /// Bytes of the entries after.
    pub bytes_after: u64,
}

/// Removes the temporaries in `dir` left over from a build cut short (a crash, a shutdown in
/// the middle of an index build): `STEM.XXXXXX.tmp` whose lock `STEM.lock` is free now (its
/// builder would hold it), and any other `*.tmp` last modified over [`STALE_TEMPORARY_AGE`]
/// before `now`. Returns what it removed; a file it cannot inspect or remove is left.
pub fn remove_stale_temporaries(dir: &Path, now: SystemTime) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for (path, metadata) in files_in(dir) {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let Some(unsuffixed) = name.strip_suffix(".tmp") else {
            continue;
        };
        let lock = unsuffixed
            .rsplit_once('.')
            .map(|(stem, _)| dir.join(format!("{stem}.lock")))
            .filter(|lock| lock.is_file());
        let stale = match &lock {
            // Held while this file is written: taken now, the writer is gone.
            Some(lock) => try_lock(lock).is_some(),
            None => metadata
                .modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age > STALE_TEMPORARY_AGE),
        };
        if stale && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// Removes entries of `dirs` (indexes and precompiled plugins), least recently used first,
/// until they take at most `max_bytes` together — never one of `keep` (the index about to be
/// used, or just built) nor one in use (its lock or checksum locked by another pool, build or
/// compile, in this process or another). The bound can be passed when what is kept or in use
/// alone passes it.
pub fn trim(dirs: &[PathBuf], max_bytes: u64, keep: &[&Path]) -> Trimmed {
    let mut entries: Vec<Entry> = dirs.iter().flat_map(|d| entries_in(d)).collect();
    let bytes_before: u64 = entries.iter().map(|e| e.bytes).sum();
    let mut trimmed = Trimmed {
        removed: Vec::new(),
        bytes_before,
        bytes_after: bytes_before,
    };
    entries.sort_by(|a, b| a.used.cmp(&b.used).then_with(|| a.main.cmp(&b.main)));
    for entry in entries {
        if trimmed.bytes_after <= max_bytes {
            break;
        }
        if keep.iter().any(|k| *k == entry.main) {
            continue;
        }
        // Every lock at once, without waiting, held while the files go.
        let Some(_locks) = entry
            .guards()
            .map(|guard| try_lock(&guard))
            .collect::<Option<Vec<File>>>()
        else {
            continue;
        };
        if std::fs::remove_file(&entry.main).is_err() {
            continue;
        }
        for other in entry.others() {
            let _ = std::fs::remove_file(other);
        }
        trimmed.bytes_after -= entry.bytes;
        trimmed.removed.push(entry.main);
    }
    trimmed
}

/// One cached thing and the files that go with it.
#[derive(Debug)]
struct Entry {
    /// The index or the artifact.
    main: PathBuf,
    /// `MAIN.sha256`, if present.
    checksum: Option<PathBuf>,
    /// `MAIN.vectors` (a large corpus's flat vectors), if present.
    vectors: Option<PathBuf>,
    /// `MAIN.lock` or `STEM.lock`, if present.
    lock: Option<PathBuf>,
    /// All its files' bytes.
    bytes: u64,
    /// When it was last built or used: the latest modification time of the file and its
    /// checksum (marked when the entry is reused).
    used: SystemTime,
}

impl Entry {
    /// The files a user of the entry locks: its lock and its checksum.
    fn guards(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.lock.iter().chain(&self.checksum).cloned()
    }

    /// Its files beside the main one.
    fn others(&self) -> impl Iterator<Item = &PathBuf> {
        self.checksum.iter().chain(&self.vectors).chain(&self.lock)
    }
}

/// The main files this host writes into the cache, by extension.
const MAIN_EXTENSIONS: [&str; 2] = ["sqlite", "cwasm"];

/// The entries in `dir`: each `*.sqlite` and `*.cwasm` file, with its checksum and lock.
fn entries_in(dir: &Path) -> Vec<Entry> {
    let mut entries = Vec::new();
    for (main, metadata) in files_in(dir) {
        if !main
            .extension()
            .is_some_and(|e| MAIN_EXTENSIONS.iter().any(|m| e == *m))
        {
            continue;
        }
        let name = main.file_name().unwrap_or_default().to_string_lossy();
        let beside =
            |suffix: &str| Some(dir.join(format!("{name}{suffix}"))).filter(|p| p.is_file());
        let checksum = beside(".sha256");
        let vectors = beside(".vectors");
        let stem = main.file_stem().unwrap_or_default().to_string_lossy();
        let lock = beside(".lock")
            .or_else(|| Some(dir.join(format!("{stem}.lock"))).filter(|p| p.is_file()));
        let mut bytes = metadata.len();
        let mut used = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        for other in checksum.iter().chain(&vectors).chain(&lock) {
            if let Ok(m) = std::fs::metadata(other) {
                bytes += m.len();
                if Some(other) == checksum.as_ref() {
                    used = used.max(m.modified().unwrap_or(used));
                }
            }
        }
        entries.push(Entry {
            main,
            checksum,
            vectors,
            lock,
            bytes,
            used,
        });
    }
    entries
}

/// The regular files directly in `dir` (none if it cannot be read).
fn files_in(dir: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    read.filter_map(Result::ok)
        .filter_map(|e| {
            let metadata = e.metadata().ok()?;
            metadata.is_file().then(|| (e.path(), metadata))
        })
        .collect()
}

/// `path` opened and locked exclusively, if that can be done without waiting.
fn try_lock(path: &Path) -> Option<File> {
    let file = File::open(path).ok()?;
    file.try_lock().ok()?;
    Some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn write(path: &Path, bytes: usize, modified: SystemTime) {
        std::fs::write(path, vec![b'x'; bytes]).unwrap();
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A temporary whose builder is gone goes at once; one whose builder still holds its lock
    /// stays, however old; one with no lock to tell goes only past an hour.
    #[test]
    fn stale_temporaries_are_told_by_their_lock_or_their_age() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let now = SystemTime::now();
        for name in ["corpus-aaaa-v5.lock", "corpus-bbbb-v5.lock"] {
            write(&dir.join(name), 0, now);
        }
        write(&dir.join("corpus-aaaa-v5.Ab12Cd.tmp"), 10, now);
        write(&dir.join("corpus-bbbb-v5.Ef34Gh.tmp"), 10, now - 3 * HOUR);
        write(&dir.join(".tmpIj56Kl.tmp"), 10, now - 2 * HOUR);
        write(&dir.join(".tmpMn78Op.tmp"), 10, now - HOUR / 2);
        write(&dir.join("corpus-aaaa-v5.sqlite"), 10, now - 5 * HOUR);
        // A build of `bbbb` is running (in this process or another): its lock is held.
        let building = File::open(dir.join("corpus-bbbb-v5.lock")).unwrap();
        building.lock().unwrap();
        let removed = remove_stale_temporaries(dir, now);
        let removed: Vec<_> = removed.iter().map(|p| p.file_name().unwrap()).collect();
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert_eq!(
            names_in(dir),
            [
                ".tmpMn78Op.tmp",
                "corpus-aaaa-v5.lock",
                "corpus-aaaa-v5.sqlite",
                "corpus-bbbb-v5.Ef34Gh.tmp",
                "corpus-bbbb-v5.lock",
            ]
        );
        // Once the build is over (its lock free), its temporary is left over too.
        drop(building);
        remove_stale_temporaries(dir, now);
        assert!(!dir.join("corpus-bbbb-v5.Ef34Gh.tmp").exists());
    }

    /// The cache is trimmed to its bound least recently used first, across both folders, with
    /// each entry's checksum and lock; the entry kept and the one in use stay.
    #[test]
    fn the_cache_is_trimmed_to_its_bound_oldest_first() {
        let tmp = tempfile::tempdir().unwrap();
        let (index, plugins) = (tmp.path().join("index"), tmp.path().join("plugins"));
        std::fs::create_dir(&index).unwrap();
        std::fs::create_dir(&plugins).unwrap();
        let now = SystemTime::now();
        // Each entry: 1,000 bytes and a 64-byte checksum; ages in hours.
        let entry = |dir: &Path, name: &str, hours: u32, lock: &str| {
            write(&dir.join(name), 1000, now - hours * HOUR);
            write(&dir.join(format!("{name}.sha256")), 64, now - hours * HOUR);
            write(&dir.join(lock), 0, now - 100 * HOUR);
        };
        entry(&index, "corpus-a-v5.sqlite", 50, "corpus-a-v5.lock");
        entry(&plugins, "p1-e.cwasm", 40, "p1-e.cwasm.lock");
        entry(&index, "corpus-b-v5.sqlite", 30, "corpus-b-v5.lock");
        // `b` is a large corpus's: its flat vectors (500 bytes) are part of it.
        write(
            &index.join("corpus-b-v5.sqlite.vectors"),
            500,
            now - 30 * HOUR,
        );
        entry(&index, "corpus-c-v5.sqlite", 20, "corpus-c-v5.lock");
        entry(&plugins, "p2-e.cwasm", 10, "p2-e.cwasm.lock");
        // `b` was reused an hour ago (its checksum marked), so it is not among the oldest.
        File::options()
            .write(true)
            .open(index.join("corpus-b-v5.sqlite.sha256"))
            .unwrap()
            .set_modified(now - HOUR)
            .unwrap();
        // `a`, the oldest, is being read by a pool: its checksum is locked shared.
        let reading = File::open(index.join("corpus-a-v5.sqlite.sha256")).unwrap();
        reading.lock_shared().unwrap();
        let dirs = [index.clone(), plugins.clone()];
        let kept = index.join("corpus-c-v5.sqlite");
        // Within 3,700 bytes: two of the five entries (1,064 bytes each, `b` 1,564) must go.
        // `a` (50 h) is in use and `c` (20 h) kept, so `p1` (40 h) and `p2` (10 h) go, not `b`
        // (marked 1 h ago).
        let trimmed = trim(&dirs, 3700, &[&kept]);
        assert_eq!(trimmed.bytes_before, 5 * 1064 + 500);
        assert_eq!(trimmed.bytes_after, 3 * 1064 + 500);
        assert_eq!(
            trimmed.removed,
            [plugins.join("p1-e.cwasm"), plugins.join("p2-e.cwasm")]
        );
        assert!(names_in(&plugins).is_empty(), "{:?}", names_in(&plugins));
        assert_eq!(names_in(&index).len(), 10);
        // Bound 0: everything that is neither kept nor in use goes, and no more.
        let trimmed = trim(&dirs, 0, &[&kept]);
        assert_eq!(trimmed.removed, [index.join("corpus-b-v5.sqlite")]);
        assert_eq!(trimmed.bytes_after, 2 * 1064);
        // Once the pool is gone, `a` can go too.
        drop(reading);
        let trimmed = trim(&dirs, 0, &[&kept]);
        assert_eq!(trimmed.removed, [index.join("corpus-a-v5.sqlite")]);
        assert_eq!(
            names_in(&index),
            [
                "corpus-c-v5.lock",
                "corpus-c-v5.sqlite",
                "corpus-c-v5.sqlite.sha256"
            ]
        );
        // Within its bound already: nothing goes.
        assert!(trim(&dirs, 1 << 20, &[]).removed.is_empty());
    }

    /// An index a pool reads is in use for as long as the pool lives: trimming the cache to
    /// nothing leaves it, and removes it once the pool is gone. An index being built (its
    /// lock held) stays too.
    #[test]
    fn an_index_a_pool_reads_is_never_trimmed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        let corpus = turnstile_corpus::CorpusBytes {
            name: "tiny".into(),
            jsonl: br#"{"id":"json","title":"json","text":"JSON encoder and decoder"}"#.to_vec(),
        };
        let index = turnstile_corpus::CorpusIndex::open_or_build(&corpus, &dir).unwrap();
        let pool = turnstile_corpus::CorpusPool::new(&index, 1).unwrap();
        let session = pool.session().unwrap();
        assert!(trim(std::slice::from_ref(&dir), 0, &[]).removed.is_empty());
        assert!(index.path.exists());
        drop(session);
        drop(pool);
        // A builder of the same index holds its lock: the entry stays while it does.
        let lock = dir.join(format!(
            "{}.lock",
            index.path.file_stem().unwrap().to_string_lossy()
        ));
        let building = File::open(&lock).unwrap();
        building.lock().unwrap();
        assert!(trim(std::slice::from_ref(&dir), 0, &[]).removed.is_empty());
        drop(building);
        let trimmed = trim(std::slice::from_ref(&dir), 0, &[]);
        assert_eq!(trimmed.removed, std::slice::from_ref(&index.path));
        assert_eq!(trimmed.bytes_after, 0);
        assert!(names_in(&dir).is_empty(), "{:?}", names_in(&dir));
    }
}
