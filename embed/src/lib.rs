//! Text embeddings for semantic retrieval. By default a *static* embedding model — one vector per
//! WordPiece token, a text's embedding is the weighted mean of its tokens' vectors, L2-normalised
//! — distilled from sentence-transformers/all-mpnet-base-v2 by the Model2Vec method, then trained
//! on the corpus's documents against MPNet's embeddings of them (`embed/model/README.md` says how,
//! and how to rebuild it). Or a model the operator runs behind an OpenAI-compatible embeddings
//! server (`remote.rs`), chosen per process ([`EmbeddingModel`]).
//!
//! Why static by default: embedding one question with even the smaller all-MiniLM-L6-v2 costs
//! 8–16 ms of CPU here (candle, f32 or int8), and MPNet about 7 times MiniLM in the same numpy
//! forward pass, past the 5 ms a request may spend on its semantic part; a static model costs a
//! few microseconds per question and needs no tensor runtime (`docs/RETRIEVAL.md` has the
//! measured trade-off). A team with an embedding server already running pays its time instead.

mod choice;
mod model;
mod question_cache;
mod remote;
#[cfg(feature = "cli")]
mod remote_args;

pub use choice::EmbeddingModel;
pub use model::{EmbedError, Embedder, MAX_TEXT_BYTES, ShippedTokenizer, TokenWeights};
pub use remote::{
    MAX_BATCH, MAX_DIMENSIONS, MAX_REMOTE_TEXT_BYTES, MAX_RETRY_AFTER, RemoteError, RemoteModel,
    RemoteOptions, backoff, sent_text,
};
#[cfg(feature = "cli")]
pub use remote_args::EmbeddingsArgs;
