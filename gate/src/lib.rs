//! The process-local FIFO admission gate: at most `max_active` leases are out at once; other
//! requests wait in a bounded first-in-first-out queue until a lease is handed to them or their
//! wait deadline passes.
//!
//! The invariant that matters: a lease is unfinished work. It is released only by dropping the
//! [`Lease`], which the worker does when the plugin call has really returned — never because the
//! client went away or the task awaiting the worker was cancelled.
//!
//! The gate knows nothing of HTTP or wasm.

mod acquire;
mod adaptive;
mod config;
mod events;
mod flows;
mod gate;
mod lease;
mod queue;
mod state;
mod sync;

pub use acquire::{Acquire, Refusal};
pub use adaptive::{
    AdaptiveConfig, AdaptiveConfigError, AdaptiveSnapshot, DROP_BACKOFF, FIRST_PROBE_AFTER,
    LIMIT_RANGE, PROBE_EVERY, PROBE_JITTER, PROBE_SAMPLES, WINDOW, WorkOutcome,
};
pub use config::{GateConfig, GateConfigError};
pub use events::{Event, EventStatus, EventsAfter, MAX_EVENTS, RETAINED_EVENTS};
pub use flows::{
    DEFAULT_FLOW, FlowConfig, FlowConfigError, FlowSnapshot, MAX_FLOW_NAME_BYTES, MAX_FLOWS_RANGE,
    OVERFLOW_FLOW, WEIGHT_RANGE, valid_flow_name,
};
pub use gate::{Gate, GateOptions};
pub use lease::{ClientWatch, Lease};
pub use state::{LeaseSnapshot, Snapshot, Totals};

#[cfg(test)]
mod tests;
