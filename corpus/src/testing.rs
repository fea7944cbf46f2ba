//! For tests (this crate's and other crates'; always compiled, so that a test build and the
//! binary's build compile this crate, and all that depends on it, once): a pool over a small
//! corpus built in its own temporary directory (tests run in parallel threads of one process:
//! none may share or delete another's directory).

use crate::{CorpusBytes, CorpusIndex, CorpusPool};

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
