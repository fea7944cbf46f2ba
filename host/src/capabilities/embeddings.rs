//! The `embeddings` capability: the host's embedding model, the one the corpus's document
//! vectors were computed with, bounded in texts per call and bytes per text. With a remote model
//! (`--embeddings URL`) a call's texts go to the operator's embedding server, under the call's
//! lease; a failure there ends the call with [`EmbeddingsFailed`] (a trap the server answers as
//! the embedding server's failure, 503 or 502, never a 500): the contract's `embed-error` only
//! speaks of arguments, and a plugin has nothing to do about a server that is down.

use std::time::Instant;

use turnstile_corpus::{CorpusError, CorpusPool};
use wasmtime::component::Linker;

use super::capability::{Call, Capability, HasRoom, InRoom, Room};
use super::host_calls::HostCalls;
use crate::bindings::turnstile::retrieval::embeddings;
use crate::error::{EmbeddingsFailed, PluginError};
use crate::observe::{HostCallKind, HostCallOutcome};
use crate::provision::Provision;

/// Most texts one `embeddings.embed` call takes.
pub const MAX_EMBED_TEXTS: usize = 16;
/// Longest text `embeddings.embed` takes, in bytes.
pub const MAX_EMBED_TEXT_BYTES: usize = 4096;

/// The corpus's embedding model.
pub struct Embeddings;

impl Capability for Embeddings {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[(
        "turnstile:retrieval/embeddings",
        "the host's embedding model",
    )];

    type Options = ();
    /// The model lives with the corpus it indexed.
    type Grant = CorpusPool;
    type State = EmbeddingsState;
    type Report = HostCalls;

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        embeddings::add_to_linker::<T, InRoom<Self>>(linker, T::room)
    }

    fn grant(_: &(), given: &Provision) -> Result<CorpusPool, PluginError> {
        Ok(given.corpus.clone())
    }

    fn state(_: &(), corpus: &CorpusPool, _: &Call) -> EmbeddingsState {
        EmbeddingsState {
            pool: corpus.clone(),
            calls: HostCalls::default(),
        }
    }

    fn finish(state: &mut EmbeddingsState, _: &Call) -> HostCalls {
        state.calls
    }
}

/// One call's use of the model: the corpus it indexed, and the call's embed calls so far.
pub struct EmbeddingsState {
    pool: CorpusPool,
    calls: HostCalls,
}

impl embeddings::Host for Room<'_, Embeddings> {
    fn dimensions(&mut self) -> wasmtime::Result<u32> {
        Ok(u32::try_from(self.state.pool.dims()).unwrap_or(u32::MAX))
    }

    fn embed(
        &mut self,
        texts: Vec<String>,
    ) -> wasmtime::Result<Result<Vec<Vec<f32>>, embeddings::EmbedError>> {
        let started = Instant::now();
        let refused = if texts.len() > MAX_EMBED_TEXTS {
            Some(format!(
                "{} texts; at most {MAX_EMBED_TEXTS} per call",
                texts.len()
            ))
        } else {
            texts
                .iter()
                .position(|t| t.len() > MAX_EMBED_TEXT_BYTES)
                .map(|i| {
                    format!(
                        "text {i} has {} bytes; at most {MAX_EMBED_TEXT_BYTES}",
                        texts[i].len()
                    )
                })
        };
        let (result, outcome) = match refused {
            Some(reason) => (
                Ok(Err(embeddings::EmbedError::InvalidArgument(reason))),
                HostCallOutcome::Error,
            ),
            None => match self.state.pool.embed_all(&texts) {
                Ok(vectors) => (Ok(Ok(vectors)), HostCallOutcome::Ok),
                Err(CorpusError::EmbeddingServer(error)) => (
                    Err(wasmtime::Error::new(EmbeddingsFailed(error))),
                    HostCallOutcome::Error,
                ),
                Err(other) => (Err(wasmtime::Error::new(other)), HostCallOutcome::Error),
            },
        };
        let elapsed = started.elapsed();
        self.state.calls.note(outcome, elapsed);
        if let Some(observer) = &self.call.observer {
            observer.host_call(HostCallKind::Embed, outcome, elapsed);
        }
        result
    }
}
