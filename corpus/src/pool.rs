use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::OptionalExtension;

use super::disjunction::Tokenizer;
use super::error::CorpusError;
use super::index::CorpusIndex;
use super::limits::SessionLimits;
use super::metadata::Link;
use super::reader::Reader;
use super::session::CorpusSession;
use super::shared::{LoadedCorpus, Paths, PoolInner, QuestionModel};
use super::term_index::TermIndex;
use super::vectors::{self, DocVectors};
use turnstile_embed::EmbeddingModel;

/// A document's url and fields, by id: only documents that have either have a row.
/// A document's link by its rowid (the id is looked up in memory first: one B-tree seek, not
/// two).
const LINK_SQL: &str = "SELECT url, fields FROM links WHERE doc = ?1";

/// See [`CorpusPool::watch`].
#[derive(Debug, Clone)]
pub struct CorpusWatch(std::sync::Weak<LoadedCorpus>);

impl CorpusWatch {
    /// Whether some pool still holds the corpus in memory.
    pub fn in_memory(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// Read-only SQLite connections to one corpus index, handed out as [`CorpusSession`]s.
///
/// Opening a connection costs a few hundred microseconds (cold page cache, statement prepare), so
/// idle connections are kept (at most `max_idle`) and reused; a checked-out connection belongs to
/// exactly one session, and so to one worker, until that session is dropped.
#[derive(Clone)]
pub struct CorpusPool {
    inner: Arc<PoolInner>,
}

impl CorpusPool {
    /// A pool over `index`; opens one connection now so a broken index fails at startup.
    pub fn new(index: &CorpusIndex, max_idle: usize) -> Result<Self, CorpusError> {
        let index_error = |source| CorpusError::Index {
            path: index.path.clone(),
            source,
        };
        // In use before the first connection opens: from now on the cache's trimming leaves
        // the index alone.
        let in_use = super::index::hold_in_use(&index.path);
        let first = Reader::open(&index.path).map_err(index_error)?;
        let dims = match &index.model {
            EmbeddingModel::Shipped => vectors::model()?.dims(),
            EmbeddingModel::Remote(remote) => remote.dims(),
        };
        // The term index on a thread (and a connection) of its own while the vectors, ids and
        // titles load here: the two largest parts of a start, each about half of it at a
        // million passages, side by side on two cores.
        let (vectors, terms) = std::thread::scope(|scope| {
            let terms = scope.spawn(|| {
                let reader = Reader::open(&index.path)?;
                TermIndex::load(&reader.conn)
            });
            let vectors = DocVectors::load(&first.conn, dims, &index.path);
            let terms = terms
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (vectors, terms)
        });
        let (vectors, terms) = (vectors.map_err(index_error)?, terms.map_err(index_error)?);
        if let Some((lists, probed)) = vectors.lists() {
            tracing::info!(
                documents = vectors.len(),
                lists,
                probed,
                "semantic search is approximate: a question searches its nearest lists"
            );
        }
        let questions = match &index.model {
            EmbeddingModel::Shipped => {
                let model = vectors::model()?;
                let weights = vectors::load_weights(&first.conn, model).map_err(index_error)?;
                QuestionModel::Shipped { model, weights }
            }
            EmbeddingModel::Remote(remote) => QuestionModel::Remote(Arc::clone(remote)),
        };
        if terms.documents() != vectors.len() {
            return Err(index_error(rusqlite::Error::InvalidColumnType(
                0,
                format!(
                    "{} documents in the term index, {} vectors",
                    terms.documents(),
                    vectors.len()
                ),
                rusqlite::types::Type::Blob,
            )));
        }
        let tokenizer = Tokenizer::new().map_err(index_error)?;
        let has_links = first
            .conn
            .query_row("SELECT EXISTS (SELECT 1 FROM links)", [], |r| r.get(0))
            .map_err(index_error)?;
        let corpus = LoadedCorpus {
            has_links,
            documents: index.documents,
            questions,
            vectors,
            terms,
            tokenizer,
            _in_use: in_use,
        };
        Ok(Self::over(
            index.path.clone(),
            first,
            max_idle,
            Arc::new(corpus),
        ))
    }

    /// A pool whose first connection is `first`, serving `corpus`.
    fn over(path: PathBuf, first: Reader, max_idle: usize, corpus: Arc<LoadedCorpus>) -> Self {
        Self {
            inner: Arc::new(PoolInner {
                path,
                idle: Mutex::new(vec![first]),
                max_idle,
                live: AtomicUsize::new(0),
                opened_total: AtomicU64::new(0),
                corpus,
                searched: Paths::default(),
                ranked: Paths::default(),
                snippets: Paths::default(),
            }),
        }
    }

    /// Another pool over the same index, with its own connections (at most `max_idle` idle),
    /// session counts and path counters, sharing this one's loaded corpus — term index, document
    /// vectors (and their clusters), ids, token weights — instead of loading it again: a hot
    /// swap's candidate gets one in the time it takes to open a connection, and the corpus is
    /// held in memory once however many generations are alive.
    pub fn sibling(&self, max_idle: usize) -> Result<Self, CorpusError> {
        let inner = &self.inner;
        let first = Reader::open(&inner.path).map_err(|source| CorpusError::Index {
            path: inner.path.clone(),
            source,
        })?;
        Ok(Self::over(
            inner.path.clone(),
            first,
            max_idle,
            Arc::clone(&inner.corpus),
        ))
    }

    /// A handle that tells whether this pool's loaded corpus (term index, vectors, ids: most of
    /// a corpus's memory) is still in memory, without keeping it there: after a corpus swap,
    /// the old one goes when the last pool over it — the last request it admitted — is dropped.
    pub fn watch(&self) -> CorpusWatch {
        CorpusWatch(Arc::downgrade(&self.inner.corpus))
    }

    /// Whether `other` shares this pool's loaded corpus (it is a sibling, or this pool itself).
    pub fn shares_corpus_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner.corpus, &other.inner.corpus)
    }

    /// Opens a session: the caller holds a read-only connection exclusively until it drops it.
    pub fn session(&self) -> Result<CorpusSession, CorpusError> {
        let conn = self.connection()?;
        self.inner.live.fetch_add(1, Ordering::SeqCst);
        self.inner.opened_total.fetch_add(1, Ordering::Relaxed);
        Ok(CorpusSession::new(conn, Arc::clone(&self.inner)))
    }

    /// An idle connection, or a new one when none is idle.
    fn connection(&self) -> Result<Reader, CorpusError> {
        let idle = self
            .inner
            .idle
            .lock()
            .map(|mut idle| idle.pop())
            .unwrap_or(None);
        match idle {
            Some(conn) => Ok(conn),
            None => Ok(Reader::open(&self.inner.path)?),
        }
    }

    /// The first of `ids` that is not a document of the corpus, if any: a lookup each in the
    /// corpus's ids, held in memory (the host checking a plugin's answer: no SQL, no session).
    pub fn first_unknown<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> Result<Option<&'a str>, CorpusError> {
        Ok(ids
            .into_iter()
            .find(|id| !self.inner.corpus.vectors.has_id(id)))
    }

    /// The url and fields of each document in `ids` (in order; at most
    /// [`SessionLimits::MAX_CANDIDATES`]): `None` for an id the corpus does not hold or whose
    /// document has neither. The server's, not a plugin's: read on an idle connection (or a new
    /// one), not counted as a session, and without SQL at all when no document has a link.
    pub fn links(&self, ids: &[&str]) -> Result<Vec<Option<Link>>, CorpusError> {
        if ids.len() > SessionLimits::MAX_CANDIDATES as usize {
            return Err(CorpusError::InvalidArgument(format!(
                "at most {} ids",
                SessionLimits::MAX_CANDIDATES
            )));
        }
        if !self.inner.corpus.has_links || ids.is_empty() {
            return Ok(vec![None; ids.len()]);
        }
        let reader = self.connection()?;
        let links = reader.budgeted(|conn| {
            let mut stmt = conn.prepare_cached(LINK_SQL)?;
            ids.iter()
                .map(|id| {
                    let doc = self.inner.corpus.vectors.rowid_of(id);
                    match doc.and_then(|doc| i64::try_from(doc).ok()) {
                        Some(doc) => stmt
                            .query_row([doc], |r| Ok(Link::stored(r.get(0)?, r.get(1)?)))
                            .optional(),
                        None => Ok(None),
                    }
                })
                .collect()
        });
        self.inner.keep_idle(reader);
        links
    }

    /// Sessions open right now (0 whenever no plugin call is running).
    pub fn live_sessions(&self) -> usize {
        self.inner.live.load(Ordering::SeqCst)
    }

    /// Sessions opened since the pool was made.
    pub fn sessions_opened(&self) -> u64 {
        self.inner.opened_total.load(Ordering::Relaxed)
    }

    /// Documents in the corpus.
    pub fn documents(&self) -> u64 {
        self.inner.corpus.documents
    }

    /// The embedding of `text` by the model the corpus's document vectors were computed with:
    /// the shipped one with the corpus's token weights (see
    /// [`turnstile_embed::Embedder::embed`]), or the remote one the index was built through.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, CorpusError> {
        match &self.inner.corpus.questions {
            QuestionModel::Shipped { model, weights } => Ok(model.embed(text, weights)),
            QuestionModel::Remote(_) => {
                let mut vectors = self.embed_all(&[text.to_owned()])?;
                Ok(vectors.pop().unwrap_or_default())
            }
        }
    }

    /// [`Self::embed`] of each text, in order: a remote model is asked once for the texts its
    /// question cache does not hold (no retry: a call waits for it under its lease).
    pub fn embed_all(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, CorpusError> {
        match &self.inner.corpus.questions {
            QuestionModel::Shipped { model, weights } => {
                Ok(texts.iter().map(|t| model.embed(t, weights)).collect())
            }
            QuestionModel::Remote(remote) => remote
                .embed_questions(texts)
                .map_err(CorpusError::EmbeddingServer),
        }
    }

    /// The remote model the corpus's vectors come from, if any.
    pub fn remote_model(&self) -> Option<&Arc<turnstile_embed::RemoteModel>> {
        match &self.inner.corpus.questions {
            QuestionModel::Shipped { .. } => None,
            QuestionModel::Remote(remote) => Some(remote),
        }
    }

    /// Dimensions of the corpus's vectors (and of [`Self::embed`]'s).
    pub fn dims(&self) -> usize {
        self.inner.corpus.vectors.dims()
    }

    /// How many `rank` calls the term index answered, and how many went to FTS5 (an expression
    /// of another shape than quoted terms joined by `OR`).
    pub fn rank_paths(&self) -> (u64, u64) {
        self.inner.ranked.get()
    }

    /// How many `snippet` calls the term index answered, and how many went to FTS5.
    pub fn snippet_paths(&self) -> (u64, u64) {
        self.inner.snippets.get()
    }

    /// How many `search` calls the term index answered (its snippets too, but for a document
    /// whose tokens it cannot place as unicode61 does), and how many went to FTS5.
    pub fn search_paths(&self) -> (u64, u64) {
        self.inner.searched.get()
    }

    /// Bytes the term index holds in memory.
    pub fn term_index_bytes(&self) -> usize {
        self.inner.corpus.terms.heap_bytes()
    }

    /// Bytes the vector search holds in memory (the vectors and their codes, or for a large
    /// corpus its inverted file).
    pub fn vector_search_bytes(&self) -> usize {
        self.inner.corpus.vectors.heap_bytes()
    }

    /// For a large corpus, the inverted file's lists and how many a question searches; `None`
    /// for a corpus searched whole.
    pub fn vector_lists(&self) -> Option<(usize, usize)> {
        self.inner.corpus.vectors.lists()
    }

    /// The embedding model's name.
    pub fn model_name(&self) -> &str {
        match &self.inner.corpus.questions {
            QuestionModel::Shipped { model, .. } => model.name(),
            QuestionModel::Remote(remote) => remote.name(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool over a one-document corpus in its own temporary directory: tests run in
    /// parallel threads of one process, so they must never share (or delete) a directory.
    fn pool() -> (CorpusPool, tempfile::TempDir) {
        crate::testing::pool_of(
            br#"{"id":"argparse","kind":"module","title":"argparse - parsing","text":"Command-line parsing library"}"#,
            2,
        )
    }

    #[test]
    fn a_sibling_shares_the_loaded_corpus_and_counts_its_own_sessions() {
        let (pool, dir) = pool();
        let sibling = pool.sibling(1).unwrap();
        assert!(pool.shares_corpus_with(&sibling) && sibling.shares_corpus_with(&pool));
        let (other, other_dir) = self::pool();
        assert!(
            !pool.shares_corpus_with(&other),
            "another pool loaded its own"
        );
        let session = sibling.session().unwrap();
        assert_eq!((sibling.live_sessions(), sibling.sessions_opened()), (1, 1));
        assert_eq!((pool.live_sessions(), pool.sessions_opened()), (0, 0));
        // The same corpus answers through both.
        let ranked = session.rank("\"parsing\"", 5).unwrap();
        assert_eq!(ranked.len(), 1);
        assert_eq!(
            sibling.first_unknown(["argparse", "nope"]).unwrap(),
            Some("nope")
        );
        assert_eq!(sibling.documents(), pool.documents());
        assert_eq!(
            sibling.embed("parse").unwrap(),
            pool.embed("parse").unwrap()
        );
        drop(session);
        assert_eq!(sibling.live_sessions(), 0);
        drop((pool, sibling, other));
        dir.close().unwrap();
        other_dir.close().unwrap();
    }

    #[test]
    fn connections_refuse_every_write_and_escape() {
        let (pool, dir) = pool();
        let conn = crate::reader::open_read_only(&pool.inner.path).unwrap();
        for sql in [
            "INSERT INTO docs (id, kind, title, text) VALUES ('x','module','x','x')",
            "DELETE FROM docs",
            "CREATE TABLE evil (x)",
            "ATTACH DATABASE ':memory:' AS other",
            "PRAGMA query_only = OFF",
            "BEGIN IMMEDIATE",
            "SELECT load_extension('x')",
            "SELECT sqlite_version()",
        ] {
            assert!(conn.execute_batch(sql).is_err(), "{sql} was allowed");
        }
        let n: i64 = conn
            .query_row("SELECT count(*) FROM docs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        drop(conn);
        drop(pool);
        dir.close().unwrap();
    }

    #[test]
    fn sessions_are_counted_and_connections_reused() {
        let (pool, dir) = pool();
        let a = pool.session().unwrap();
        let b = pool.session().unwrap();
        assert_eq!(pool.live_sessions(), 2);
        drop(a);
        assert_eq!(pool.live_sessions(), 1);
        drop(b);
        assert_eq!(pool.live_sessions(), 0);
        assert_eq!(pool.inner.idle.lock().unwrap().len(), 2);
        assert_eq!(pool.sessions_opened(), 2);
        drop(pool);
        dir.close().unwrap();
    }
}
