//! The gate's public handle: ask for a lease, read the state and the events. The engine behind
//! it — the one lock, the leases, the queue — is `super::state`.

use quanta::Instant;

use super::acquire::Acquire;
use super::adaptive::AdaptiveConfig;
use super::config::GateConfig;
use super::events::EventsAfter;
use super::flows::FlowConfig;
use super::state::{GateInner, Snapshot};
use super::sync::Arc;

/// What a gate can do besides its limits.
#[derive(Debug, Clone, Default)]
pub struct GateOptions {
    /// Flows share the wait queue fairly ([`Gate::acquire_in`]); `None`: one FIFO.
    pub flows: Option<FlowConfig>,
    /// The limit on leases adapts to the calls' latency; `None`: `max_active`, fixed.
    pub adaptive: Option<AdaptiveConfig>,
}

/// The admission gate. Cloning shares the same gate.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<GateInner>,
}

impl Gate {
    /// A gate with these limits.
    ///
    /// The gate stamps leases with `quanta`'s TSC-based clock (a few nanoseconds a read, where
    /// `std::time::Instant` costs ~30 ns on a VM), falling back to the monotonic clock where the
    /// TSC is not reliable. Its one-off calibration runs here, not in the first request.
    pub fn new(config: GateConfig) -> Self {
        Self::with_options(config, GateOptions::default())
    }

    /// A gate with these limits whose wait queue is shared fairly by flows
    /// ([`Gate::acquire_in`]): a FIFO lane per flow, served in turn by weight.
    pub fn with_flows(config: GateConfig, flows: FlowConfig) -> Self {
        Self::with_options(
            config,
            GateOptions {
                flows: Some(flows),
                adaptive: None,
            },
        )
    }

    /// A gate with these limits and options: flows sharing the queue, and an adaptive limit on
    /// leases (whose ceiling then replaces `config.max_active`).
    pub fn with_options(mut config: GateConfig, options: GateOptions) -> Self {
        let _ = Instant::now();
        if let Some(adaptive) = &options.adaptive {
            config.max_active = adaptive.max;
        }
        Self {
            inner: Arc::new(GateInner::new(config, options.flows, options.adaptive)),
        }
    }

    /// How the queue is shared by flows (with flows off: one flow, no per-flow bound).
    pub fn flow_config(&self) -> FlowConfig {
        self.inner.flow_config()
    }

    /// The gate's limits.
    pub fn config(&self) -> GateConfig {
        self.inner.config
    }

    /// Asks for a lease: at once if a slot is free and nobody waits, else after waiting in FIFO
    /// order, or a refusal (queue full, deadline passed).
    ///
    /// # Cancel safety
    ///
    /// Dropping the returned future before it completes undoes what it did: a queued request
    /// leaves the queue (`wait_cancelled`), and a lease that was handed to it by a promotion
    /// racing with the drop is released at once (and may promote the next waiter). Capacity never
    /// leaks and the request never ran. Once it has returned a [`super::Lease`], cancellation of
    /// the caller no longer matters: only dropping the lease releases the slot.
    pub fn acquire(&self) -> Acquire {
        Acquire::new(Arc::clone(&self.inner), None)
    }

    /// [`Gate::acquire`] for a request of `flow` (a name [`super::valid_flow_name`] accepts;
    /// ignored with flows off). It waits in its flow's FIFO lane; a freed slot goes to the
    /// lanes in turn, each taking as many as its weight, so one flow's flood does not hold up
    /// the others. Refused as [`super::Refusal::FlowQueueFull`] when its lane holds
    /// `max_waiting_per_flow` waiters. The same cancel safety.
    pub fn acquire_in(&self, flow: &str) -> Acquire {
        Acquire::new(Arc::clone(&self.inner), Some(flow.into()))
    }

    /// The events after `order` that the gate still retains (its last
    /// [`super::RETAINED_EVENTS`]), oldest first, and how many after `order` it no longer has. A
    /// watcher passes the order of the last event it saw to follow the log without gaps.
    pub fn events_after(&self, order: u64) -> EventsAfter {
        self.inner.events_after(order)
    }

    /// The order of the newest event (0 before the first).
    pub fn last_event_order(&self) -> u64 {
        self.inner.last_event_order()
    }

    /// The current state, taken atomically.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot()
    }
}
