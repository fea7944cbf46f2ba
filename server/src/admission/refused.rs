//! Why admission refused a request: the refusal of the gate that refused it. The request never
//! ran.

use turnstile_gate::Refusal;
use turnstile_global::GlobalRefusal;

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

impl Refused {
    /// What refused it, in a word: `queue_full`, `wait_timeout` (the local gate), or
    /// `global_queue_full`, `global_wait_timeout`, `global_unavailable` (the global one).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Local(Refusal::QueueFull { .. } | Refusal::FlowQueueFull { .. }) => "queue_full",
            Self::Local(Refusal::WaitTimeout { .. }) => "wait_timeout",
            Self::Global(GlobalRefusal::QueueFull) => "global_queue_full",
            Self::Global(GlobalRefusal::WaitTimeout) => "global_wait_timeout",
            Self::Global(GlobalRefusal::Unavailable) => "global_unavailable",
        }
    }
}
