//! What a pool and its sessions share: the corpus loaded into memory (shared again by a pool's
//! siblings), the idle connections, and the counts.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use turnstile_embed::{Embedder, RemoteModel, TokenWeights};

use super::disjunction::Tokenizer;
use super::reader::Reader;
use super::term_index::TermIndex;
use super::vectors::DocVectors;

/// A pool's shared state: its connections (at most `max_idle` idle) and the loaded corpus.
pub(crate) struct PoolInner {
    pub(crate) path: PathBuf,
    pub(crate) idle: Mutex<Vec<Reader>>,
    pub(crate) max_idle: usize,
    pub(crate) live: AtomicUsize,
    pub(crate) opened_total: AtomicU64,
    /// What was loaded from the index, shared by a pool's siblings ([`CorpusPool::sibling`]).
    pub(crate) corpus: Arc<LoadedCorpus>,
    /// Who answered the `search`, `rank` and `snippet` calls.
    pub(crate) searched: Paths,
    pub(crate) ranked: Paths,
    pub(crate) snippets: Paths,
}

/// What a pool loads from the index into memory, read-only.
pub(crate) struct LoadedCorpus {
    pub(crate) documents: u64,
    /// How questions are embedded: as the document vectors were.
    pub(crate) questions: QuestionModel,
    pub(crate) vectors: DocVectors,
    pub(crate) terms: TermIndex,
    pub(crate) tokenizer: Tokenizer,
    /// Whether any document has a url or fields (the index's `links` table is not empty).
    pub(crate) has_links: bool,
    /// A shared lock on the index's checksum file while the corpus is loaded: the index is in
    /// use, and the cache's trimming passes over it.
    pub(crate) _in_use: Option<std::fs::File>,
}

/// The model a corpus's questions are embedded by: the one its document vectors came from.
pub(crate) enum QuestionModel {
    /// The shipped model, with the token weights of this corpus.
    Shipped {
        model: &'static Embedder,
        weights: TokenWeights,
    },
    /// The remote model the index was built through.
    Remote(Arc<RemoteModel>),
}

/// How many calls of one kind the term index answered, and how many went to FTS5.
#[derive(Default)]
pub(crate) struct Paths {
    by_index: AtomicU64,
    by_fts5: AtomicU64,
}

impl Paths {
    pub(crate) fn count(&self, by_index: bool) {
        let counter = if by_index {
            &self.by_index
        } else {
            &self.by_fts5
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> (u64, u64) {
        (
            self.by_index.load(Ordering::Relaxed),
            self.by_fts5.load(Ordering::Relaxed),
        )
    }
}

impl PoolInner {
    /// Called when a session closes: its connection goes back to the idle list (or is closed).
    pub(crate) fn give_back(&self, conn: Reader) {
        self.live.fetch_sub(1, Ordering::SeqCst);
        self.keep_idle(conn);
    }

    pub(crate) fn keep_idle(&self, conn: Reader) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < self.max_idle
        {
            idle.push(conn);
        }
    }

    pub(crate) fn documents(&self) -> u64 {
        self.corpus.documents
    }
}
