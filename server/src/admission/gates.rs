//! The gates every request to run a plugin passes: the local FIFO gate, then — when replicas
//! share a limit — the global gate, under one deadline; each decision told to the observer.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;
use turnstile_gate::Gate;
use turnstile_global::{GlobalGate, GlobalPass};
use turnstile_host::TRACE_TARGET;

use super::admitted::Admitted;
use super::flow_label::flow_label;
use super::flow_source::FlowSource;
use super::observer::AdmissionObserver;
use super::refused::Refused;

/// The gates every request to run a plugin passes. Cheap to clone (handles).
#[derive(Clone)]
pub struct Admission {
    gate: Gate,
    global: Option<GlobalGate>,
    /// Told of every decision.
    observer: Arc<dyn AdmissionObserver>,
    /// Where a request's flow comes from, with flows on.
    flow_source: Option<FlowSource>,
    /// The flows named in the settings (weighted): the only flow names a metric label shows.
    named_flows: Arc<BTreeSet<String>>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("gate", &self.gate.config())
            .field("global", &self.global)
            .finish_non_exhaustive()
    }
}

impl Admission {
    /// Admission by `gate` alone, or by `gate` and then `global`, each decision told to
    /// `observer`.
    pub fn new(
        gate: Gate,
        global: Option<GlobalGate>,
        observer: Arc<dyn AdmissionObserver>,
    ) -> Self {
        Self {
            gate,
            global,
            observer,
            flow_source: None,
            named_flows: Default::default(),
        }
    }

    /// Requests name their flow as `source` says (the local gate must share its queue by flows:
    /// [`Gate::with_flows`]).
    pub fn with_flow_source(mut self, source: FlowSource) -> Self {
        self.flow_source = Some(source);
        self.named_flows = Arc::new(self.gate.flow_config().weights.into_keys().collect());
        self
    }

    /// With flows on, the flows the settings name (their own metric labels).
    pub fn named_flows(&self) -> Option<&BTreeSet<String>> {
        self.flow_source.as_ref().map(|_| &*self.named_flows)
    }

    /// The metric label of `flow` (`None`: the default flow): its name if the settings name it
    /// (a weight), `default`, or `other` — so labels stay bounded whatever clients send.
    pub fn flow_label<'a>(&self, flow: Option<&'a str>) -> &'a str {
        flow_label(&self.named_flows, flow)
    }

    /// Where a request's flow comes from, with flows on.
    pub fn flow_source(&self) -> Option<&FlowSource> {
        self.flow_source.as_ref()
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
    /// and a local lease already granted is released with the future. The request never ran,
    /// and no decision is reported.
    pub async fn admit(&self) -> Result<Admitted, Refused> {
        self.admit_in(None).await
    }

    /// [`Admission::admit`] for a request of `flow` (its lane of the local gate's queue; `None`:
    /// the default flow). The global gate is flow-blind.
    ///
    /// With traces on, the wait is the request's `gate.wait` span: its flow (the metric
    /// label), its outcome and the time waited.
    pub async fn admit_in(&self, flow: Option<&str>) -> Result<Admitted, Refused> {
        let label = self.flow_source.as_ref().map(|_| self.flow_label(flow));
        let span = tracing::info_span!(
            target: TRACE_TARGET,
            "gate.wait",
            turnstile.flow = label,
            turnstile.outcome = tracing::field::Empty,
            turnstile.queue_ms = tracing::field::Empty,
        );
        let outcome = self.decide(flow).instrument(span.clone()).await;
        match &outcome {
            Ok(admitted) => {
                span.record("turnstile.outcome", "admitted");
                span.record("turnstile.queue_ms", admitted.waited().as_secs_f64() * 1e3);
            }
            Err(refused) => {
                span.record("turnstile.outcome", refused.code());
            }
        }
        self.observer.decided(label, outcome.as_ref());
        outcome
    }

    /// The local lease, then the global one, before one deadline.
    async fn decide(&self, flow: Option<&str>) -> Result<Admitted, Refused> {
        let asked = Instant::now();
        let deadline = asked + self.gate.config().wait_deadline;
        let lease = match flow {
            Some(flow) => self.gate.acquire_in(flow).await?,
            None => self.gate.acquire().await?,
        };
        let (global, global_waited) = match &self.global {
            None => (None, None),
            Some(global) => {
                let started = Instant::now();
                match global.acquire(deadline).await? {
                    GlobalPass::Lease(lease) => (Some(lease), Some(started.elapsed())),
                    GlobalPass::FailedOpen => (None, None),
                }
            }
        };
        Ok(Admitted::new(lease, global, asked.elapsed(), global_waited))
    }
}
