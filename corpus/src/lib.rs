//! The document corpus: loading the shipped JSON Lines into a SQLite FTS5 index, and read-only
//! per-worker sessions over it. Nothing in this module can write to the index once it is built.

mod document;
mod error;
mod index;
mod pool;
mod session;

pub use document::{CorpusBytes, Document, EMBEDDED_CORPUS_NAME, load_documents, read_corpus};
pub use error::CorpusError;
pub use index::{CorpusIndex, IndexOrigin};
pub use pool::CorpusPool;
pub use session::{Candidate, CorpusSession, Ranked, SessionLimits};
