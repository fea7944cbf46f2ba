//! Admission: whether a request may run now, and under which leases. One value owns the
//! process-local FIFO gate and, when replicas share a limit, the global gate on Redis; a request
//! is admitted with both leases, or refused once, with the refusal of the gate that refused it.
//!
//! The order is the product's promise: the local lease first (at most `max_active` calls of this
//! process are ever admitted, whatever Redis does), then the global lease under the same
//! deadline, holding the local one while it waits.

use std::time::Duration;

use tokio::time::Instant;
use turnstile_gate::{Gate, Lease, Refusal};
use turnstile_global::{GlobalGate, GlobalLease, GlobalRefusal};

/// The gates every request to run a plugin passes. Cheap to clone (handles).
#[derive(Clone)]
pub struct Admission {
    gate: Gate,
    global: Option<GlobalGate>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("gate", &self.gate.config())
            .field("global", &self.global)
            .finish()
    }
}

/// An admitted request: the leases it runs under. Dropping it releases both (the global one
/// first, as its fields are declared in that order).
#[derive(Debug)]
pub struct Admitted {
    /// The global lease, when replicas share a limit and Redis granted one (`None` alone, or
    /// when Redis failed and the failure mode is `open`).
    pub global: Option<GlobalLease>,
    /// The local lease: the slot this request's plugin call holds until it returns.
    pub lease: Lease,
    /// From asking to being admitted (both gates).
    pub waited: Duration,
    /// The part of `waited` spent waiting for the global lease, when one was granted.
    pub global_waited: Option<Duration>,
}

/// Why a request was refused; it never ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The local gate: its queue was full, or no slot came within the wait deadline.
    #[error("{0}")]
    Local(#[from] Refusal),
    /// The global gate: its queue was full, no lease came within the deadline, or Redis failed
    /// and the failure mode is `closed`.
    #[error("{0}")]
    Global(#[from] GlobalRefusal),
}

impl Admission {
    /// Admission by `gate` alone, or by `gate` and then `global`.
    pub fn new(gate: Gate, global: Option<GlobalGate>) -> Self {
        Self { gate, global }
    }

    /// The local gate (its snapshot, events and limits).
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The global gate, if replicas share a limit.
    pub fn global(&self) -> Option<&GlobalGate> {
        self.global.as_ref()
    }

    /// Admits a request: a local lease (FIFO, within the gate's wait deadline from now), then a
    /// global lease (FIFO across replicas, before the same deadline), or the first refusal.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future while it waits undoes what it did: a local waiter leaves the queue
    /// (or gives back a slot promoted to it meanwhile), a global waiter leaves the Redis queue,
    /// and a local lease already granted is released with the future. The request never ran.
    pub async fn admit(&self) -> Result<Admitted, Refused> {
        let asked = Instant::now();
        let deadline = asked + self.gate.config().wait_deadline;
        let lease = self.gate.acquire().await?;
        let mut global_waited = None;
        let global = match &self.global {
            None => None,
            Some(global) => {
                let started = Instant::now();
                match global.acquire(deadline).await? {
                    turnstile_global::Admission::Granted(lease) => {
                        global_waited = Some(started.elapsed());
                        Some(lease)
                    }
                    turnstile_global::Admission::FailedOpen => None,
                }
            }
        };
        Ok(Admitted {
            global,
            lease,
            waited: asked.elapsed(),
            global_waited,
        })
    }
}
