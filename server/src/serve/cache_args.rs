//! `turnstile serve`'s bound on its cache (`--cache-max-mib`), and when it is kept: at start,
//! before the corpus index is built (room for it) and once it is ready, and after every swap
//! (a swap may build an index or compile a plugin into the cache).

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use turnstile_host::cache::Cache;
use turnstile_host::swap::{CorpusSwapError, SwapError, SwapObserver, SwapOutcome};

/// Flags of the cache's bound (flattened into `ServeArgs`).
#[derive(Debug, Clone, Args)]
pub struct CacheArgs {
    /// Most MiB the cache's corpus indexes and precompiled plugins may take together
    /// (0..=1048576), 0 for no bound. Past it, the least recently used go first, at start and
    /// after each swap; never the index being served (nor one another server sharing the cache
    /// reads), so what is in use may pass it.
    #[arg(long = "cache-max-mib", default_value_t = 4096,
          value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub cache_max_mib: u64,
}

impl CacheArgs {
    /// The bound in bytes; `None` for no bound.
    pub fn max_bytes(&self) -> Option<u64> {
        (self.cache_max_mib > 0).then_some(self.cache_max_mib << 20)
    }
}

/// A swap observer that passes every attempt on, then trims the cache: an index or a compiled
/// plugin the swap wrote may take it past its bound. What the swap installed is in use (its
/// pool holds the index), so it stays.
pub(super) struct TrimAfterSwaps {
    pub(super) inner: Arc<dyn SwapObserver>,
    pub(super) cache: Arc<Cache>,
}

impl SwapObserver for TrimAfterSwaps {
    fn plugin_swap(&self, outcome: Result<SwapOutcome, &SwapError>, elapsed: Duration) {
        self.inner.plugin_swap(outcome, elapsed);
        self.cache.trim(&[]);
    }

    fn corpus_swap(&self, outcome: Result<SwapOutcome, &CorpusSwapError>, elapsed: Duration) {
        self.inner.corpus_swap(outcome, elapsed);
        self.cache.trim(&[]);
    }
}
