//! The `embeddings` capability: the host's embedding model, the one the corpus's document
//! vectors were computed with, bounded in texts per call and bytes per text.

use std::time::Instant;

use super::state::HostState;
use crate::bindings::turnstile::retrieval::embeddings;
use crate::observe::{HostCallKind, HostCallOutcome};

/// Most texts one `embeddings.embed` call takes.
pub const MAX_EMBED_TEXTS: usize = 16;
/// Longest text `embeddings.embed` takes, in bytes.
pub const MAX_EMBED_TEXT_BYTES: usize = 4096;

impl embeddings::Host for HostState {
    fn dimensions(&mut self) -> wasmtime::Result<u32> {
        Ok(u32::try_from(self.corpus.dims()).unwrap_or(u32::MAX))
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
                Err(embeddings::EmbedError::InvalidArgument(reason)),
                HostCallOutcome::Error,
            ),
            None => (
                Ok(texts.iter().map(|t| self.corpus.embed(t)).collect()),
                HostCallOutcome::Ok,
            ),
        };
        if let Some(observer) = &self.observer {
            observer.host_call(HostCallKind::Embed, outcome, started.elapsed());
        }
        Ok(result)
    }
}
