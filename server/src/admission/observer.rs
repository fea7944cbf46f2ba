//! What admission reports: each decision, once, to an observer (in a server, its metrics), so
//! that whoever asks for admission does not count it.

use super::admitted::Admitted;
use super::refused::Refused;

/// Told of every admission decision: once per request that leaves admission (admitted or
/// refused), after the decision and outside every gate's lock. A request whose wait is cancelled
/// (its client left) leaves no decision.
pub trait AdmissionObserver: Send + Sync {
    /// A request left admission: admitted (`Ok`) or refused. `flow` is its flow's metric label
    /// (`Admission::flow_label`: a named flow, `default` or `other`) with flows on, `None` with
    /// flows off.
    fn decided(&self, flow: Option<&str>, outcome: Result<&Admitted, &Refused>);
}
