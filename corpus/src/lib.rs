//! The document corpus: loading the shipped JSON Lines into a SQLite FTS5 index, and read-only
//! per-worker sessions over it. Nothing in this module can write to the index once it is built.

mod checksum;
mod disjunction;
mod document;
mod error;
mod flat;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod index;
mod inverted_file;
mod ivf;
#[doc(hidden)]
pub mod kernel;
mod labels;
mod limits;
pub mod metadata;
#[doc(hidden)]
pub mod open_cost;
mod parallel;
mod passage_vectors;
mod pool;
mod reader;
mod regular_file;
mod session;
mod shared;
mod source_stamp;
mod term_index;
mod vectors;

#[doc(hidden)]
pub mod testing;

pub use document::{
    CorpusBytes, DEFAULT_KIND, Document, EMBEDDED_CORPUS_NAME, MAX_CORPUS_BYTES, load_documents,
    read_corpus, read_corpus_from, read_corpus_within,
};
pub use error::CorpusError;
pub use index::{ChecksumStatus, CorpusIndex, IndexChecksum, IndexOrigin};
pub use limits::SessionLimits;
pub use metadata::MAX_KIND_BYTES;
pub use passage_vectors::Embedded;
pub use pool::{CorpusPool, CorpusWatch};
pub use regular_file::RegularFile;
pub use session::{Candidate, CorpusSession, Neighbour, Ranked, sql};
pub use source_stamp::Observation;
pub use turnstile_embed::{EmbeddingModel, RemoteError, RemoteModel, RemoteOptions};
