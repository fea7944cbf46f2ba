//! What the swaps report as they work, for whoever counts them (the server's metrics): each
//! attempt's typed outcome and duration. The runtime knows no metrics library and no codes.

use std::time::Duration;

use super::error::{CorpusSwapError, SwapError, SwapOutcome};

/// Told of every swap attempt. Every method has a default that ignores it.
pub trait SwapObserver: Send + Sync {
    /// One plugin swap attempt: installed or unchanged (`Ok`), or refused, and how long it
    /// took.
    fn plugin_swap(&self, outcome: Result<SwapOutcome, &SwapError>, elapsed: Duration) {
        let _ = (outcome, elapsed);
    }

    /// One corpus swap attempt: swapped or unchanged (`Ok`), or refused.
    fn corpus_swap(&self, outcome: Result<SwapOutcome, &CorpusSwapError>, elapsed: Duration) {
        let _ = (outcome, elapsed);
    }
}
