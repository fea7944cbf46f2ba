//! What an acquire answers: a lease, admission on the local gate alone (Redis failed, mode
//! `open`), or a refusal.

use crate::lease::GlobalLease;

/// Why the global gate refused a request. The request never ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GlobalRefusal {
    /// The global queue is full (HTTP 429 `queue_full`).
    #[error("queue_full: the global wait queue is full")]
    QueueFull,
    /// The request's deadline passed while it waited for a global lease (HTTP 503
    /// `wait_timeout`).
    #[error("wait_timeout: no global lease within the wait deadline")]
    WaitTimeout,
    /// Redis failed and `--global-failure closed` (HTTP 503 `global_unavailable`).
    #[error("global_unavailable: the global limit cannot be reached")]
    Unavailable,
}

/// What the global gate grants a request it does not refuse: a lease, or — Redis failed and the
/// failure mode is `open` — leave to run on the local gate alone.
#[derive(Debug)]
#[must_use = "a granted lease is given back as soon as it is dropped"]
pub enum GlobalPass {
    /// A lease: the request runs under it.
    Lease(GlobalLease),
    /// Redis failed and the failure mode is `open`: the request runs on the local gate alone.
    FailedOpen,
}
