use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::corpus::CorpusIndex;
use crate::gate::Gate;
use crate::plugin::{Allocator, Plugin};

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// The plugin serving `/retrieve`.
    pub plugin: Arc<Plugin>,
    /// The corpus index the plugin's sessions read.
    pub corpus: Arc<CorpusIndex>,
    /// The runtime's instance allocator (reported by `/readyz`).
    pub allocator: Allocator,
    /// The admission gate every `/retrieve` passes.
    pub gate: Gate,
    request_ids: Arc<AtomicU64>,
}

impl AppState {
    /// State over a loaded plugin and its corpus.
    pub fn new(
        plugin: Arc<Plugin>,
        corpus: Arc<CorpusIndex>,
        allocator: Allocator,
        gate: Gate,
    ) -> Self {
        Self {
            plugin,
            corpus,
            allocator,
            gate,
            request_ids: Arc::new(AtomicU64::new(1)),
        }
    }

    /// A process-unique id for a request, used to match a client's error with the server log.
    pub fn next_request_id(&self) -> u64 {
        self.request_ids.fetch_add(1, Ordering::Relaxed)
    }
}
