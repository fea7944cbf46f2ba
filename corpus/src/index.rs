use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, params};
use sha2::{Digest, Sha256};

use turnstile_embed::EmbeddingModel;

use super::disjunction::TOKENIZER;
use super::document::{CorpusBytes, Document, load_documents};
use super::passage_vectors::{self, Embedded, PassageStore};
use super::vectors::VectorSource;
use super::{CorpusError, checksum, flat, source_stamp, term_index, vectors};

/// Bumped whenever the index schema or tokenizer changes, so old cache files are not reused.
/// 2: the `ids` table (lookups by id use an index) and the content checksum.
/// 3: the `vectors` table (document embeddings) and the embedding model's fingerprint.
/// 4: the `postings` and `doc_sizes` tables (the term index: bm25 without SQL).
/// 5: `doc_terms` holds each document's title tokens too (phrases in the term index).
/// 6: the `ivf` table (a large corpus's inverted file over its vectors, built with the index).
/// 7: the `term_index` table replaces `postings`, `doc_sizes` and `doc_terms` (arrays, loaded
///    fast); the file's checksum beside it is an xxh3-128, checked instead of FTS5's integrity.
/// 8: the `links` table (a source's url and fields).
/// 9: a large corpus's f32 vectors flat beside the index (`flat.rs`), in list order.
const SCHEMA_VERSION: &str = "9";

/// Where the index came from at startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum IndexOrigin {
    /// A cache file whose recorded checksum matched the corpus was reused.
    Reused,
    /// The index was built from the corpus now.
    Built,
}

/// Whether a reused index's bytes are the ones checked when it was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum IndexChecksum {
    /// Checked whole: built now, or reused after its checksum matched.
    Verified,
    /// Reused at start on its recorded corpus and schema; its checksum is being computed in the
    /// background ([`CorpusIndex::verify_in_background`]).
    Checking,
    /// Its checksum does not match: the server is not ready, and the next start rebuilds it.
    Damaged,
}

/// The shared, changing [`IndexChecksum`] of one index.
#[derive(Debug, Clone)]
pub struct ChecksumStatus(std::sync::Arc<std::sync::atomic::AtomicU8>);

impl ChecksumStatus {
    fn new(status: IndexChecksum) -> Self {
        Self(std::sync::Arc::new(std::sync::atomic::AtomicU8::new(
            status as u8,
        )))
    }

    fn set(&self, status: IndexChecksum) {
        self.0
            .store(status as u8, std::sync::atomic::Ordering::Release);
    }

    /// The status now.
    pub fn get(&self) -> IndexChecksum {
        match self.0.load(std::sync::atomic::Ordering::Acquire) {
            0 => IndexChecksum::Verified,
            1 => IndexChecksum::Checking,
            _ => IndexChecksum::Damaged,
        }
    }
}

/// A built, read-only FTS5 index of one corpus.
#[derive(Debug, Clone)]
pub struct CorpusIndex {
    /// The SQLite file.
    pub path: PathBuf,
    /// sha256 (hex) of the decompressed JSON Lines.
    pub sha256: String,
    /// Where the corpus came from (a path or the embedded name).
    pub source: String,
    /// Number of documents.
    pub documents: u64,
    /// Whether the index was reused from the cache or built now.
    pub origin: IndexOrigin,
    /// Whether its bytes were checked against its recorded checksum.
    pub checksum: ChecksumStatus,
    /// The model its vectors come from (and its questions' must).
    pub model: EmbeddingModel,
    /// For an index built now through a remote model: passages embedded now and reused from
    /// the model's passage cache. `None` for an index reused, or built with the shipped model.
    pub embedded: Option<Embedded>,
}

impl CorpusIndex {
    /// Returns the index of `corpus` in `cache_dir`: reuses `corpus-<sha256>.sqlite` when its
    /// recorded checksum and schema match, else builds it (into a temporary file renamed into
    /// place, so a crash never leaves a half-built index under the final name).
    ///
    /// This runs once at startup, outside any request path.
    pub fn open_or_build(corpus: &CorpusBytes, cache_dir: &Path) -> Result<Self, CorpusError> {
        let sha256 = hex::encode(Sha256::digest(&corpus.jsonl));
        Self::open_or_build_hashed(corpus, sha256, cache_dir, &EmbeddingModel::Shipped)
    }

    /// [`CorpusIndex::open_or_build`] for a caller that has hashed the JSON Lines already
    /// (`sha256`: lowercase hex of their sha256), so a large corpus is not hashed twice: a corpus
    /// swap checks the hash against the pin before it builds anything. The document vectors come
    /// from `model`: the shipped one, or a remote one whose passages the model's cache does not
    /// hold yet are embedded first (`passage_vectors`).
    pub fn open_or_build_hashed(
        corpus: &CorpusBytes,
        sha256: String,
        cache_dir: &Path,
        model: &EmbeddingModel,
    ) -> Result<Self, CorpusError> {
        let shipped = vectors::model()?;
        let fingerprint = model
            .fingerprint()
            .map_err(|e| CorpusError::Embedding(e.to_string()))?;
        std::fs::create_dir_all(cache_dir).map_err(|source| CorpusError::IndexIo {
            path: cache_dir.to_owned(),
            source,
        })?;
        let path = Self::cache_path(cache_dir, &sha256, model);
        let reused = |path: PathBuf, sha256: String, documents: u64| Self {
            path,
            sha256,
            source: corpus.name.clone(),
            documents,
            origin: IndexOrigin::Reused,
            checksum: ChecksumStatus::new(IndexChecksum::Verified),
            model: model.clone(),
            embedded: None,
        };
        if let Some(documents) = Self::matching_cache(&path, &sha256, &fingerprint) {
            mark_used(&path);
            return Ok(reused(path, sha256, documents));
        }
        // Processes (or threads) starting together on one cache directory build the index once:
        // the others wait on this lock (released when the file closes), then reuse it.
        let lock_path = path.with_extension("lock");
        let io_error = |source| CorpusError::IndexIo {
            path: lock_path.clone(),
            source,
        };
        let lock = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_error)?;
        lock.lock().map_err(io_error)?;
        if let Some(documents) = Self::matching_cache(&path, &sha256, &fingerprint) {
            mark_used(&path);
            return Ok(reused(path, sha256, documents));
        }
        let docs = load_documents(&corpus.jsonl)?;
        let documents = docs.len() as u64;
        // A remote model's vectors first: a failure here (the server down past the retries)
        // leaves no index behind, and keeps every batch embedded for the next build.
        // The keys stay (32 bytes a passage) for the build's look-ups; the texts go.
        let (stored, embedded) = match model {
            EmbeddingModel::Shipped => (None, None),
            EmbeddingModel::Remote(remote) => {
                let mut store = PassageStore::open(cache_dir, remote.fingerprint(), remote.dims())?;
                let texts: Vec<String> = docs.iter().map(vectors::embedded_text).collect();
                let keys: Vec<passage_vectors::PassageKey> =
                    texts.iter().map(|t| passage_vectors::key_of(t)).collect();
                let embedded = passage_vectors::embed_missing(remote, &mut store, &keys, &texts)?;
                (Some((store, keys)), Some(embedded))
            }
        };
        let source = match &stored {
            None => VectorSource::Shipped(shipped),
            Some((store, keys)) => VectorSource::Stored { store, keys },
        };
        let dims = source.dims();
        // A uniquely named file in the same directory (so the rename is atomic), removed if the
        // build fails; concurrent builders (threads or processes) never share one. Its name
        // starts with the lock's (`corpus-…-vN.`): a temporary whose lock is free is left over
        // from a build cut short, and the cache removes it when it opens (`turnstile-host`).
        let tmp = tempfile::Builder::new()
            .prefix(&temporary_prefix(&lock_path))
            .suffix(".tmp")
            .tempfile_in(cache_dir)
            .map_err(|source| CorpusError::IndexIo {
                path: cache_dir.to_owned(),
                source,
            })?;
        build(tmp.path(), docs, &sha256, &source, &fingerprint).map_err(|source| {
            CorpusError::Index {
                path: tmp.path().to_owned(),
                source,
            }
        })?;
        // On disk before it gets its final name: a crash can leave no torn index behind it.
        tmp.as_file()
            .sync_all()
            .map_err(|source| CorpusError::IndexIo {
                path: tmp.path().to_owned(),
                source,
            })?;
        // A large corpus's vectors, flat, in its inverted file's list order (`flat.rs`).
        let flat_tmp = tempfile::Builder::new()
            .prefix(&temporary_prefix(&lock_path))
            .suffix(".tmp")
            .tempfile_in(cache_dir)
            .map_err(|source| CorpusError::IndexIo {
                path: cache_dir.to_owned(),
                source,
            })?;
        let has_flat =
            flat::write_for_index(tmp.path(), dims, flat_tmp.as_file()).map_err(|source| {
                CorpusError::Index {
                    path: flat_tmp.path().to_owned(),
                    source,
                }
            })?;
        let file_checksum =
            files_checksum(tmp.path(), has_flat.then(|| flat_tmp.path())).map_err(|source| {
                CorpusError::IndexIo {
                    path: tmp.path().to_owned(),
                    source,
                }
            })?;
        if has_flat {
            let beside = flat::path_beside(&path);
            flat_tmp
                .persist(&beside)
                .map_err(|e| CorpusError::IndexIo {
                    path: beside,
                    source: e.error,
                })?;
        }
        tmp.persist(&path).map_err(|e| CorpusError::IndexIo {
            path: path.clone(),
            source: e.error,
        })?;
        // The file's checksum beside it, written last (atomically too): a file without one, or
        // whose bytes no longer hash to it, is rebuilt.
        write_checksum(&checksum_path(&path), &file_checksum, &lock_path).map_err(|source| {
            CorpusError::IndexIo {
                path: checksum_path(&path),
                source,
            }
        })?;
        Ok(Self {
            path,
            sha256,
            source: corpus.name.clone(),
            documents,
            origin: IndexOrigin::Built,
            checksum: ChecksumStatus::new(IndexChecksum::Verified),
            model: model.clone(),
            embedded,
        })
    }

    /// At start, the index of the corpus file at `corpus` without reading the file, if its
    /// stamp in `cache_dir` (`source_stamp.rs`) says it is unchanged since its JSON Lines were
    /// hashed, and `cache_dir` holds an index of them
    /// whose recorded corpus, schema and embedding model are these, with its checksum beside
    /// it — without reading the whole file: its checksum is then computed in the background
    /// ([`Self::verify_in_background`]), so a start from a cold disk reads only what loading
    /// the index reads. `None`: open it the whole way ([`Self::open_or_build_hashed`]).
    pub fn reuse_at_start(corpus: &Path, cache_dir: &Path, model: &EmbeddingModel) -> Option<Self> {
        let sha256 = source_stamp::recorded_sha256(cache_dir, corpus)?;
        let fingerprint = model.fingerprint().ok()?;
        let path = Self::cache_path(cache_dir, &sha256, model);
        let recorded = std::fs::read_to_string(checksum_path(&path)).ok()?;
        let flat = flat::path_beside(&path);
        // A flat file recorded is one present, and the other way round.
        if recorded.contains(" vectors ") != flat.exists() {
            return None;
        }
        let documents = recorded_documents(&path, &sha256, &fingerprint)?;
        mark_used(&path);
        Some(Self {
            path,
            sha256,
            source: corpus.display().to_string(),
            documents,
            origin: IndexOrigin::Reused,
            checksum: ChecksumStatus::new(IndexChecksum::Checking),
            model: model.clone(),
            embedded: None,
        })
    }

    /// Computes the checksum of an index reused by [`Self::reuse_at_start`] on a thread of its
    /// own (one core, so serving keeps the others), and records the outcome in
    /// [`Self::checksum`]: `Verified`, or `Damaged` — logged as an error, and the checksum file
    /// beside the index removed, so that the next start rebuilds it. Nothing for an index
    /// checked already.
    pub fn verify_in_background(&self) {
        if self.checksum.get() != IndexChecksum::Checking {
            return;
        }
        let (path, status) = (self.path.clone(), self.checksum.clone());
        let spawned = std::thread::Builder::new()
            .name("index-checksum".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                let recorded = std::fs::read_to_string(checksum_path(&path)).ok();
                let flat = flat::path_beside(&path);
                let actual =
                    files_checksum_on(&path, flat.exists().then_some(flat.as_path()), 1).ok();
                match (recorded, actual) {
                    (Some(recorded), Some(actual)) if checksum::matches(&recorded, &actual) => {
                        status.set(IndexChecksum::Verified);
                        tracing::info!(path = %path.display(), seconds = started.elapsed().as_secs_f64(), "corpus index checksum verified");
                    }
                    _ => {
                        status.set(IndexChecksum::Damaged);
                        let removed = std::fs::remove_file(checksum_path(&path)).is_ok();
                        tracing::error!(path = %path.display(), checksum_removed = removed, "the corpus index does not match the checksum written when it was built: not ready; restart to rebuild it");
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the corpus index checksum; it stays unchecked");
        }
    }

    /// Where the index of the corpus whose JSON Lines hash to `sha256` (lowercase hex) is kept
    /// in `cache_dir` with the vectors of `model`: what a cache about to be trimmed keeps,
    /// before the index is built. A remote model's index is named by its fingerprint too, so
    /// that one cache holds a corpus's index for each model.
    pub fn cache_path(cache_dir: &Path, sha256: &str, model: &EmbeddingModel) -> PathBuf {
        let short = sha256.get(..16).unwrap_or(sha256);
        match model.remote() {
            None => cache_dir.join(format!("corpus-{short}-v{SCHEMA_VERSION}.sqlite")),
            Some(remote) => {
                let m = remote.fingerprint().get(..8).unwrap_or_default();
                cache_dir.join(format!("corpus-{short}-m{m}-v{SCHEMA_VERSION}.sqlite"))
            }
        }
    }

    /// The document count recorded in a cache file that is whole and of this corpus, if any:
    /// the checksum of the whole file (every table the server reads: documents, ids, vectors,
    /// the term index, token weights — any page changed, cut off or added) is the one written
    /// beside it when it was built, and its recorded corpus checksum, schema and embedding model
    /// are this corpus's, this build's and this model's. A torn or corrupted file is never
    /// reused: it is rebuilt.
    ///
    /// The deeper checks — FTS5's own integrity check, the documents against their recorded
    /// content checksum — ran once, when the file was built, before its checksum was taken
    /// ([`verify_built`]): a file whose bytes are still the ones checked then passes them still.
    fn matching_cache(path: &Path, sha256: &str, model: &str) -> Option<u64> {
        if !path.exists() {
            return None;
        }
        let recorded_file = std::fs::read_to_string(checksum_path(path)).ok();
        let flat = flat::path_beside(path);
        let actual_file = files_checksum(path, flat.exists().then_some(flat.as_path())).ok();
        let whole = match (&recorded_file, &actual_file) {
            (Some(recorded), Some(actual)) => checksum::matches(recorded, actual),
            _ => false,
        };
        if !whole {
            tracing::warn!(path = %path.display(), "corpus index does not match the checksum written when it was built; rebuilding");
            return None;
        }
        recorded_documents(path, sha256, model)
    }
}

/// The document count the index at `path` records, if it also records this corpus (`sha256`),
/// this build's schema and this embedding model.
fn recorded_documents(path: &Path, sha256: &str, model: &str) -> Option<u64> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?;
    let meta = |key: &str| -> Option<String> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .ok()
    };
    if meta("sha256")? != sha256
        || meta("schema")? != SCHEMA_VERSION
        || meta("embedding_model")? != model
    {
        return None;
    }
    meta("documents")?.parse().ok()
}

/// The checksum an index is recorded and checked with: its file's ([`checksum::of_file`]),
/// then, for a large corpus, its flat vectors' (`… vectors <checksum>`).
fn files_checksum(index: &Path, flat: Option<&Path>) -> std::io::Result<String> {
    files_checksum_on(index, flat, checksum::MAX_THREADS)
}

/// [`files_checksum`] on at most `threads` threads.
fn files_checksum_on(index: &Path, flat: Option<&Path>, threads: usize) -> std::io::Result<String> {
    let mut checksum = checksum::of_file_on(index, threads)?;
    if let Some(flat) = flat {
        checksum.push_str(" vectors ");
        checksum.push_str(&checksum::of_file_on(flat, threads)?);
    }
    Ok(checksum)
}

/// Where an index file's own checksum ([`files_checksum`]) is kept: beside it,
/// `<name>.sha256`. The name is older than the algorithm (the file once held a sha256): the
/// cache (`turnstile-host`'s `cache_trim`) finds an entry's checksum — the file a user of the
/// entry locks, and whose time marks it used — by this name.
fn checksum_path(index: &Path) -> PathBuf {
    let mut name = index.file_name().unwrap_or_default().to_owned();
    name.push(".sha256");
    index.with_file_name(name)
}

/// `STEM.` for the lock `STEM.lock`: the start of the name of every temporary written while it
/// is held (`STEM.XXXXXX.tmp`).
fn temporary_prefix(lock: &Path) -> String {
    let stem = lock.file_stem().unwrap_or_default().to_string_lossy();
    format!("{stem}.")
}

/// Records that the index at `path` was used now (the modification time of the checksum
/// beside it): the cache, when it must shrink, removes the entries least recently used first.
/// Best effort: an index whose time cannot be set is only older than it should be.
fn mark_used(path: &Path) {
    let marked = std::fs::File::open(checksum_path(path))
        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
    if let Err(e) = marked {
        tracing::debug!(path = %path.display(), error = %e, "cannot mark the corpus index used");
    }
}

/// A shared lock on the checksum beside the index at `path`, held while a pool reads the index
/// (a pool may open connections to it at any time): whoever trims the cache takes an exclusive
/// lock on an index's checksum, without waiting, before it removes the index, and passes over
/// an index it cannot lock. `None` for an index without a checksum file (not in a cache).
pub(crate) fn hold_in_use(path: &Path) -> Option<std::fs::File> {
    let file = std::fs::File::open(checksum_path(path)).ok()?;
    match file.lock_shared() {
        Ok(()) => Some(file),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot mark the corpus index in use; trimming the cache may remove it");
            None
        }
    }
}

/// Writes `checksum` to `path` through a temporary file renamed into place, named as the one
/// `lock` guards.
fn write_checksum(path: &Path, checksum: &str, lock: &Path) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(&temporary_prefix(lock))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, checksum.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The number of documents and the sha256 (hex) of their stored content, in rowid order.
fn content_checksum(conn: &Connection) -> rusqlite::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut count = 0u64;
    let mut stmt = conn.prepare("SELECT id, kind, title, text FROM docs ORDER BY rowid")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        for i in 0..4 {
            hasher.update(row.get_ref(i)?.as_str().unwrap_or_default().as_bytes());
            hasher.update([0u8]);
        }
        count += 1;
    }
    // The links, which only some documents have: each with its document's rowid.
    let mut stmt = conn.prepare("SELECT doc, url, fields FROM links ORDER BY doc")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        hasher.update(row.get::<_, i64>(0)?.to_le_bytes());
        for i in 1..3 {
            match row.get_ref(i)?.as_str_or_null()? {
                Some(text) => {
                    hasher.update([1u8]);
                    hasher.update(text.as_bytes());
                }
                None => hasher.update([0u8]),
            }
            hasher.update([0u8]);
        }
    }
    Ok((count, hex::encode(hasher.finalize())))
}

/// Builds the index of `docs` at `path`, then checks it once ([`verify_built`]).
///
/// The documents go as soon as their vectors are made: the term index, built next, reads them
/// back from the file, so the build never holds both the parsed documents and the term index's
/// tokens of every document.
fn build(
    path: &Path,
    docs: Vec<Document>,
    sha256: &str,
    source: &VectorSource<'_>,
    fingerprint: &str,
) -> rusqlite::Result<()> {
    let documents = docs.len();
    let mut conn = Connection::open(path)?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = OFF;
         PRAGMA synchronous = OFF;
         CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         CREATE VIRTUAL TABLE docs USING fts5(
             id UNINDEXED, kind UNINDEXED, title, text,
             tokenize = '{TOKENIZER}'
         );
         CREATE TABLE ids (id TEXT PRIMARY KEY, doc INTEGER NOT NULL) WITHOUT ROWID;
         CREATE TABLE links (doc INTEGER PRIMARY KEY, url TEXT, fields TEXT);"
    ))?;
    let tx = conn.transaction()?;
    {
        let mut insert =
            tx.prepare("INSERT INTO docs (id, kind, title, text) VALUES (?1, ?2, ?3, ?4)")?;
        let mut insert_id = tx.prepare("INSERT INTO ids (id, doc) VALUES (?1, ?2)")?;
        let mut insert_link =
            tx.prepare("INSERT INTO links (doc, url, fields) VALUES (?1, ?2, ?3)")?;
        let mut rowids = Vec::with_capacity(documents);
        for d in &docs {
            insert.execute(params![d.id, d.kind, d.title, d.text])?;
            let rowid = tx.last_insert_rowid();
            insert_id.execute(params![d.id, rowid])?;
            if d.url.is_some() || d.fields.is_some() {
                let fields = d
                    .fields
                    .as_ref()
                    .map(serde_json::to_string)
                    .transpose()
                    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
                insert_link.execute(params![rowid, d.url, fields])?;
            }
            rowids.push((rowid, d));
        }
        vectors::build(&tx, source, &rowids)?;
    }
    drop(docs);
    term_index::build(&tx)?;
    {
        let (_, content) = content_checksum(&tx)?;
        let mut meta = tx.prepare("INSERT INTO meta (key, value) VALUES (?1, ?2)")?;
        meta.execute(params!["sha256", sha256])?;
        meta.execute(params!["schema", SCHEMA_VERSION])?;
        meta.execute(params!["documents", documents.to_string()])?;
        meta.execute(params!["content_sha256", content])?;
        meta.execute(params!["embedding_model", fingerprint])?;
    }
    tx.commit()?;
    conn.execute_batch("INSERT INTO docs(docs) VALUES ('optimize'); VACUUM;")?;
    conn.close().map_err(|(_, e)| e)?;
    verify_built(path)
}

/// The checks of a built index that an open no longer repeats, run once on the file as it lies
/// on disk (after `VACUUM` rewrote it) before its checksum is taken: FTS5's own integrity check
/// of the full-text index against the documents; the documents' content against the checksum
/// recorded while they were inserted; as many vectors as documents. A file that fails them is
/// not kept (the build fails: it is a fault of this machine or this build, not of the corpus).
fn verify_built(path: &Path) -> rusqlite::Result<()> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    // Read-only despite the INSERT form.
    conn.execute("INSERT INTO docs(docs) VALUES ('integrity-check')", [])?;
    let meta = |key: &str| -> rusqlite::Result<String> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
    };
    let recorded = meta("documents")?;
    let (counted, content) = content_checksum(&conn)?;
    let vectors: i64 = conn.query_row("SELECT count(*) FROM vectors", [], |r| r.get(0))?;
    if recorded != counted.to_string()
        || vectors.unsigned_abs() != counted
        || meta("content_sha256")? != content
    {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some(format!(
                "the index just built does not read back as written ({counted} documents of \
                 {recorded} recorded, {vectors} vectors, or their content changed)"
            )),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large corpus's checksum covers its flat vectors: any byte of either file changed
    /// changes it (and so the index is rebuilt), and a flat file that appeared beside an index
    /// recorded without one does not match either.
    #[test]
    fn the_checksum_covers_the_flat_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let (index, vectors) = (
            dir.path().join("i.sqlite"),
            dir.path().join("i.sqlite.vectors"),
        );
        std::fs::write(&index, b"index bytes").unwrap();
        std::fs::write(&vectors, vec![7u8; 4096]).unwrap();
        let alone = files_checksum(&index, None).unwrap();
        let both = files_checksum(&index, Some(&vectors)).unwrap();
        assert_eq!(alone, checksum::of_file(&index).unwrap());
        assert!(
            both.starts_with(&format!("{alone} vectors xxh3-128/64MiB:")),
            "{both}"
        );
        let mut changed = vec![7u8; 4096];
        changed[4000] = 8;
        std::fs::write(&vectors, &changed).unwrap();
        let after = files_checksum(&index, Some(&vectors)).unwrap();
        assert_ne!(after, both);
        assert!(!checksum::matches(&both, &after));
        assert!(!checksum::matches(&alone, &after));
    }

    /// A cache file that is torn or whose content was altered is rebuilt, not reused.
    #[test]
    fn a_corrupted_or_truncated_index_is_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let built = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
        // Alter one document's stored text behind the index's back.
        {
            let conn = Connection::open(&built.path).unwrap();
            conn.execute("UPDATE docs SET text = 'tampered' WHERE rowid = 1", [])
                .unwrap();
        }
        let again = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
        assert_eq!(again.origin, IndexOrigin::Built);
        assert_eq!(again.documents, 2);
        // Cut the file in half.
        let bytes = std::fs::read(&again.path).unwrap();
        std::fs::write(&again.path, &bytes[..bytes.len() / 2]).unwrap();
        let third = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
        assert_eq!(third.origin, IndexOrigin::Built);
        let pool = crate::CorpusPool::new(&third, 1).unwrap();
        let session = pool.session().unwrap();
        assert_eq!(session.get("json.dumps").unwrap().unwrap().kind, "function");
        drop(session);
        let fourth = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
        assert_eq!(fourth.origin, IndexOrigin::Reused);
    }

    /// Damage to any table the server reads — a row changed or gone — is found on reuse, and
    /// the index rebuilt (and then right), never served nor a stop of the start.
    #[test]
    fn damage_to_any_table_rebuilds_the_index() {
        let tmp = tempfile::tempdir().unwrap();
        let built = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
        let answer = |index: &CorpusIndex| {
            let pool = crate::CorpusPool::new(index, 1).unwrap();
            let session = pool.session().unwrap();
            let hits = session.search("json", 5).unwrap();
            hits.into_iter().map(|h| h.id).collect::<Vec<_>>()
        };
        let expected = answer(&built);
        assert!(!expected.is_empty());
        for (table, damage) in [
            ("docs", "UPDATE docs SET title = 'tampered' WHERE rowid = 1"),
            ("ids", "UPDATE ids SET doc = doc + 1"),
            ("vectors", "UPDATE vectors SET v = zeroblob(length(v))"),
            (
                "term_index",
                "UPDATE term_index SET data = zeroblob(length(data)) WHERE name = 'docs'",
            ),
            ("term_index", "DELETE FROM term_index WHERE name = 'tokens'"),
            // A small corpus has no inverted file: a list appearing is damage too.
            (
                "ivf",
                "INSERT INTO ivf (list, centroid, members, codes, scales) \
                 VALUES (0, x'00', x'', x'', x'')",
            ),
            (
                "token_weights",
                "UPDATE token_weights SET w = zeroblob(length(w))",
            ),
            (
                "meta",
                "UPDATE meta SET value = value || ' ' WHERE key = 'content_sha256'",
            ),
        ] {
            {
                let conn = Connection::open(&built.path).unwrap();
                let changed = conn.execute(damage, []).unwrap();
                assert!(changed > 0, "{table}: the damage changed nothing");
            }
            let again = CorpusIndex::open_or_build(&tiny(), tmp.path())
                .unwrap_or_else(|e| panic!("{table}: {e}"));
            assert_eq!(again.origin, IndexOrigin::Built, "{table}");
            assert_eq!(answer(&again), expected, "{table}");
            let reused = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
            assert_eq!(reused.origin, IndexOrigin::Reused, "{table}");
        }
        // A file without its checksum beside it (an older build, a crash before it was written)
        // is rebuilt too.
        std::fs::remove_file(checksum_path(&built.path)).unwrap();
        let again = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
        assert_eq!(again.origin, IndexOrigin::Built);
    }

    /// The checksum beside a built index is xxh3-128's of the whole file; one an older build
    /// wrote (a bare sha256 of the file, once right) no longer matches, and the index is rebuilt.
    #[test]
    fn the_checksum_beside_the_index_is_of_the_whole_file() {
        let tmp = tempfile::tempdir().unwrap();
        let built = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
        let written = std::fs::read_to_string(checksum_path(&built.path)).unwrap();
        let bytes = std::fs::read(&built.path).unwrap();
        assert_eq!(written, checksum::of_bytes(&bytes));
        let reused = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
        assert_eq!(reused.origin, IndexOrigin::Reused);
        std::fs::write(
            checksum_path(&built.path),
            hex::encode(Sha256::digest(&bytes)),
        )
        .unwrap();
        let again = CorpusIndex::open_or_build(&tiny(), tmp.path()).unwrap();
        assert_eq!(again.origin, IndexOrigin::Built);
        assert_eq!(again.documents, 2);
    }

    fn tiny() -> CorpusBytes {
        CorpusBytes {
            name: "tiny".into(),
            jsonl: br#"{"id":"argparse","kind":"module","title":"argparse - Command-line parsing library","text":"Command-line parsing library"}
{"id":"json.dumps","kind":"function","title":"json.dumps - Serialize obj to a JSON formatted str.","text":"Serialize obj to a JSON formatted str."}
"#
            .to_vec(),
        }
    }

    /// Starting together on one cache directory, eight builders build the index once: the
    /// others wait for it and reuse it.
    #[test]
    fn concurrent_starts_build_the_index_once() {
        let tmp = tempfile::tempdir().unwrap();
        let origins: Vec<IndexOrigin> = std::thread::scope(|scope| {
            let starts: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| CorpusIndex::open_or_build(&tiny(), tmp.path())))
                .collect();
            starts
                .into_iter()
                .map(|s| s.join().unwrap().unwrap().origin)
                .collect()
        });
        let built = origins.iter().filter(|o| **o == IndexOrigin::Built).count();
        assert_eq!(built, 1, "{origins:?}");
    }

    #[test]
    fn builds_then_reuses_the_cache_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let first = CorpusIndex::open_or_build(&tiny(), dir).unwrap();
        assert_eq!(first.origin, IndexOrigin::Built);
        assert_eq!(first.documents, 2);
        let second = CorpusIndex::open_or_build(&tiny(), dir).unwrap();
        assert_eq!(second.origin, IndexOrigin::Reused);
        assert_eq!(second.path, first.path);
        let mut other = tiny();
        other
            .jsonl
            .extend_from_slice(br#"{"id":"x","kind":"module","title":"x","text":"x"}"#);
        let third = CorpusIndex::open_or_build(&other, dir).unwrap();
        assert_eq!(third.origin, IndexOrigin::Built);
        assert_eq!(third.documents, 3);
        assert_ne!(third.path, first.path);
        tmp.close().unwrap();
    }
}
