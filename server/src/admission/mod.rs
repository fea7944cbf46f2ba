//! Admission: whether a request may run now, and under which leases. One value ([`Admission`])
//! owns the process-local FIFO gate and, when replicas share a limit, the global gate on Redis; a
//! request is admitted with both leases ([`Admitted`]), or refused once, with the refusal of the
//! gate that refused it ([`Refused`]). Each decision is reported to an [`AdmissionObserver`] (the
//! server's metrics), so the handler that asks does not count it.
//!
//! The invariant is the product's promise: at most `max_active` calls of this process are ever
//! admitted, whatever Redis does. The local lease is taken first, then the global one under the
//! same deadline (holding the local one while it waits), and they are given back in the reverse
//! order: every global lease this process holds belongs to a request holding a local slot.

mod admitted;
mod flow_label;
mod flow_source;
mod gates;
mod observer;
mod refused;

pub use admitted::Admitted;
pub(crate) use flow_label::flow_label;
pub use flow_source::{FlowSource, loopback_networks};
pub use gates::Admission;
pub use observer::AdmissionObserver;
pub use refused::Refused;
