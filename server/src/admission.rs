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
    /// The header naming a request's flow, with flows on.
    flow_header: Option<axum::http::HeaderName>,
    /// The flows named in the settings (weighted): the only flow names a metric label shows.
    named_flows: std::sync::Arc<std::collections::BTreeSet<String>>,
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
        Self {
            gate,
            global,
            flow_header: None,
            named_flows: Default::default(),
        }
    }

    /// Requests name their flow in `header` (the local gate must share its queue by flows:
    /// [`Gate::with_flows`]).
    pub fn with_flow_header(mut self, header: axum::http::HeaderName) -> Self {
        self.flow_header = Some(header);
        self.named_flows =
            std::sync::Arc::new(self.gate.flow_config().weights.into_keys().collect());
        self
    }

    /// With flows on, the flows the settings name (their own metric labels).
    pub fn named_flows(&self) -> Option<&std::collections::BTreeSet<String>> {
        self.flow_header.as_ref().map(|_| &*self.named_flows)
    }

    /// The metric label of `flow` (`None`: the default flow): its name if the settings name it
    /// (a weight), `default`, or `other` — so labels stay bounded whatever clients send.
    pub fn flow_label<'a>(&self, flow: Option<&'a str>) -> &'a str {
        flow_label(&self.named_flows, flow)
    }

    /// The header naming a request's flow, with flows on.
    pub fn flow_header(&self) -> Option<&axum::http::HeaderName> {
        self.flow_header.as_ref()
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
        self.admit_in(None).await
    }

    /// [`Admission::admit`] for a request of `flow` (its lane of the local gate's queue; `None`:
    /// the default flow). The global gate is flow-blind.
    pub async fn admit_in(&self, flow: Option<&str>) -> Result<Admitted, Refused> {
        let asked = Instant::now();
        let deadline = asked + self.gate.config().wait_deadline;
        let lease = match flow {
            Some(flow) => self.gate.acquire_in(flow).await?,
            None => self.gate.acquire().await?,
        };
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

/// See [`Admission::flow_label`].
pub(crate) fn flow_label<'a>(
    named: &std::collections::BTreeSet<String>,
    flow: Option<&'a str>,
) -> &'a str {
    match flow {
        None | Some(turnstile_gate::DEFAULT_FLOW) => turnstile_gate::DEFAULT_FLOW,
        Some(name) if named.contains(name) => name,
        Some(_) => "other",
    }
}
