//! What one call's host calls of one capability came to — how many, how many failed, their time —
//! reported with the call (the corpus's and the embedding model's), for the call's trace: one
//! figure per capability, however many calls a plugin makes (an event per host call would cost
//! more than the call).

use std::time::Duration;

use crate::observe::HostCallOutcome;

/// One capability's host calls in one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCalls {
    /// Host calls made.
    pub calls: u32,
    /// Those that ended in an error or a timeout.
    pub failed: u32,
    /// Their time, added up.
    pub elapsed: Duration,
}

impl HostCalls {
    /// One more host call, that ended in `outcome` after `elapsed`.
    pub(crate) fn note(&mut self, outcome: HostCallOutcome, elapsed: Duration) {
        self.calls = self.calls.saturating_add(1);
        if outcome != HostCallOutcome::Ok {
            self.failed = self.failed.saturating_add(1);
        }
        self.elapsed += elapsed;
    }
}
