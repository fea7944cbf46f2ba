//! The document corpus: loading the shipped JSON Lines into a SQLite FTS5 index, and read-only
//! per-worker sessions over it. Nothing in this module can write to the index once it is built.

mod clusters;
mod disjunction;
mod document;
mod error;
mod index;
mod pool;
mod session;
mod term_index;
mod vectors;

pub use document::{CorpusBytes, Document, EMBEDDED_CORPUS_NAME, load_documents, read_corpus};
pub use error::CorpusError;
pub use index::{CorpusIndex, IndexOrigin};
pub use pool::CorpusPool;
pub use session::{Candidate, CorpusSession, Neighbour, Ranked, SessionLimits, sql};

/// For tests (this crate's, and with the `testing` feature, other crates'): a pool over a small
/// corpus built in its own temporary directory (tests run in parallel threads of one process:
/// none may share or delete another's directory).
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use super::{CorpusBytes, CorpusIndex, CorpusPool};

    /// A pool of at most `max_idle` idle connections over the JSON Lines `jsonl`; keep the
    /// directory as long as the pool.
    ///
    /// # Panics
    /// If the corpus does not build: a test's own data is wrong.
    #[allow(clippy::unwrap_used)]
    pub fn pool_of(jsonl: &[u8], max_idle: usize) -> (CorpusPool, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let corpus = CorpusBytes {
            name: "test".into(),
            jsonl: jsonl.to_vec(),
        };
        let index = CorpusIndex::open_or_build(&corpus, dir.path()).unwrap();
        (CorpusPool::new(&index, max_idle).unwrap(), dir)
    }
}
