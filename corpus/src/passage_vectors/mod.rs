//! Vectors from a remote model, kept per passage: a corpus rebuilt, swapped or restarted embeds
//! only the passages it has not seen. One SQLite file per model in the index directory's
//! `embeddings/` folder (`<fingerprint>.sqlite`), keyed by the sha256 of the text the passage
//! is embedded from (`vectors::document_text`): the model's identity (its name and dimensions)
//! is the file, the text the row.
//!
//! Written batch by batch as the server answers, each batch committed (`run.rs`): a build cut
//! short (a kill, an outage past its retries) keeps what was embedded, and the next one resumes
//! from it, redoing at most the batches that were in flight.
//!
//! Bound: one row per distinct passage text this model embedded through this cache, 4 bytes a
//! dimension and about 60 more (a million passages of a 768-dimension model: about 3 GiB). It is
//! not counted in `--cache-max-mib` and never trimmed — its rows cost the embedding server's time
//! to make again — and removing the folder is safe (the next build embeds everything anew).

mod progress;
mod run;
mod store;

pub use run::Embedded;
pub(crate) use run::embed_missing;
pub(crate) use store::{PassageKey, PassageStore, key_of};
