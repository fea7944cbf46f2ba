//! The gate's synchronization primitives and its deadline timer: std's and tokio's, or loom's
//! when the gate is model-checked (`--cfg loom`, see `loom/tests/loom.rs`). Every lock
//! and shared pointer of the gate comes from here, so the model sees every interleaving.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

/// A queued waiter's deadline: an active timer that wakes its task when the wait runs out.
#[cfg(not(loom))]
pub(crate) type Deadline = tokio::time::Sleep;

/// Starts a deadline timer.
#[cfg(not(loom))]
pub(crate) fn deadline(after: std::time::Duration) -> Deadline {
    tokio::time::sleep(after)
}

/// Under loom a deadline never fires: the model checks the races of acquire, cancel, promote and
/// release; deadlines are covered by the unit tests on tokio's paused clock.
#[cfg(loom)]
pub(crate) type Deadline = std::future::Pending<()>;

/// Starts a deadline timer that never fires (loom model only).
#[cfg(loom)]
pub(crate) fn deadline(_after: std::time::Duration) -> Deadline {
    std::future::pending()
}
