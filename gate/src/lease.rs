use std::time::Duration;

use quanta::Instant;

use super::adaptive::WorkOutcome;
use super::state::{GateInner, LeaseKey};
use super::sync::Arc;

/// A slot of the gate, held by a request's work. Dropping it releases the slot (and promotes the
/// oldest waiter); nothing else does. Move it into the worker that does the work, so it is
/// dropped exactly when the work has really ended — returned, failed, trapped or panicked.
#[must_use = "dropping a lease releases its slot at once"]
pub struct Lease {
    gate: Arc<GateInner>,
    key: LeaseKey,
    waited: Duration,
    granted_at: Instant,
    outcome: WorkOutcome,
    /// How long the work itself took, when the holder said (else the hold time counts).
    work: Option<Duration>,
}

impl Lease {
    pub(super) fn new(
        gate: Arc<GateInner>,
        key: LeaseKey,
        waited: Duration,
        granted_at: Instant,
    ) -> Self {
        Self {
            gate,
            key,
            waited,
            granted_at,
            outcome: WorkOutcome::Completed,
            work: None,
        }
    }

    /// How long the work this lease held took itself — a plugin call, without what the holder
    /// did before it (a wait for a global lease while holding this slot): with an adaptive limit,
    /// the latency sample its release gives.
    pub fn worked(&mut self, took: Duration) {
        self.work = Some(took);
    }

    /// The work failed on its own (an error, a trap), with no word from the backend: with an
    /// adaptive limit, its release is no sample at all — a fast failure must not raise the limit.
    pub fn mark_failed(&mut self) {
        self.outcome = WorkOutcome::Failed;
    }

    /// The work this lease held was turned away by the backend (a 429, a 503, a timeout): with
    /// an adaptive limit, its release is a drop, not a latency sample.
    pub fn mark_dropped(&mut self) {
        self.outcome = WorkOutcome::Dropped;
    }

    /// The request's ticket (its place in arrival order).
    pub fn ticket(&self) -> u64 {
        self.key.ticket
    }

    /// How long the request waited in the queue before it got this lease.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// How long the lease has been held.
    pub fn held(&self) -> Duration {
        self.granted_at.elapsed()
    }

    /// A guard for the side that waits on the work (the HTTP handler): if it is dropped before
    /// [`ClientWatch::disarm`], the lease is marked as belonging to a client that is gone — the
    /// lease itself stays held by the worker.
    pub fn client_watch(&self) -> ClientWatch {
        ClientWatch {
            gate: Arc::clone(&self.gate),
            key: self.key,
            armed: true,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.gate.release(self.key, self.outcome, self.work);
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("ticket", &self.key.ticket)
            .field("waited", &self.waited)
            .finish_non_exhaustive()
    }
}

/// Marks a lease's client as gone when dropped while armed. See [`Lease::client_watch`].
pub struct ClientWatch {
    gate: Arc<GateInner>,
    key: LeaseKey,
    armed: bool,
}

impl ClientWatch {
    /// The client got its answer: nothing to mark.
    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for ClientWatch {
    fn drop(&mut self) {
        if self.armed {
            self.gate.mark_client_gone(self.key);
        }
    }
}
