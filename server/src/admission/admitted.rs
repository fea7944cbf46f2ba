//! An admitted request: the leases it runs under, given back together when it is dropped — the
//! global lease first, then the local slot.

use std::time::Duration;

use turnstile_gate::Lease;
use turnstile_global::GlobalLease;

/// An admitted request: the leases it runs under. Move it into the worker that runs the request
/// and drop it there, when the call has really returned: dropping it gives both leases back.
#[derive(Debug)]
#[must_use = "dropping an admission gives its leases back at once: the request would run unadmitted"]
pub struct Admitted {
    /// The local lease: the slot this request's plugin call holds until it returns.
    lease: Lease,
    /// The global lease, when replicas share a limit and Redis granted one (`None` alone, or
    /// when Redis failed and the failure mode is `open`).
    global: Option<GlobalLease>,
    /// From asking to being admitted (both gates).
    waited: Duration,
    /// The part of `waited` spent waiting for the global lease, when one was granted.
    global_waited: Option<Duration>,
}

impl Admitted {
    pub(super) fn new(
        lease: Lease,
        global: Option<GlobalLease>,
        waited: Duration,
        global_waited: Option<Duration>,
    ) -> Self {
        Self {
            lease,
            global,
            waited,
            global_waited,
        }
    }

    /// From asking to being admitted, both gates.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// The part of [`Admitted::waited`] spent waiting for the global lease, when one was granted
    /// (`None`: no global gate, or admitted on the local gate alone because Redis failed).
    pub fn global_waited(&self) -> Option<Duration> {
        self.global_waited
    }

    /// The backend the request's work called turned it away (a 429, a 503, a timeout): with an
    /// adaptive limit, its release counts as a drop, which backs the limit off.
    pub fn mark_dropped(&mut self) {
        self.lease.mark_dropped();
    }

    /// How long the request's work (its plugin call) took itself: with an adaptive limit, the
    /// latency sample its release gives (not the hold time, which includes a global wait).
    pub fn worked(&mut self, took: Duration) {
        self.lease.worked(took);
    }

    /// The request's work failed on its own (an error, a trap), with no word from a backend:
    /// with an adaptive limit, no sample at all.
    pub fn mark_failed(&mut self) {
        self.lease.mark_failed();
    }

    /// The local lease: its ticket, its wait in the local queue, how long it has been held, and
    /// the watch that marks its client gone. It is given back with this value, never alone.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }
}

impl Drop for Admitted {
    /// Gives the leases back in the reverse order of taking them: the global lease, then the
    /// local slot.
    ///
    /// A request waits for its global lease while holding its local slot, so that this process
    /// never has more than `max_active` requests past its local gate; every global lease it holds
    /// belongs to a request holding a local slot. Freeing the local slot first would break that
    /// for a moment: the slot promotes the next local waiter at once, which then asks Redis for
    /// a global lease while the finished call's lease is still held here and counted there — the
    /// waiter could find the global limit full of a call that has ended and queue behind it
    /// (until the release's wake-up), or, with room to spare, be granted and leave this process
    /// holding more global leases than it runs calls (`/state`'s `this_replica` above `active`).
    /// Given back first, the finished call's lease is out of this process's count and on its way
    /// back to Redis (`release.lua`, in the background) before the slot changes hands.
    fn drop(&mut self) {
        drop(self.global.take());
        // The local lease is released when the fields are dropped, right after this body.
    }
}
