use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::time::Sleep;

use super::lease::Lease;
use super::state::{Entry, GateInner, Pickup};

/// Why the gate refused a request. The request never ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The queue was full (HTTP 429 `queue_full`).
    #[error("queue_full: the wait queue is full")]
    QueueFull {
        /// Suggested wait before retrying.
        retry_after: Duration,
    },
    /// The wait deadline passed in the queue (HTTP 503 `wait_timeout`).
    #[error("wait_timeout: no slot within the wait deadline")]
    WaitTimeout {
        /// Suggested wait before retrying.
        retry_after: Duration,
    },
}

impl Refusal {
    /// Suggested wait before retrying.
    pub fn retry_after(&self) -> Duration {
        match self {
            Self::QueueFull { retry_after } | Self::WaitTimeout { retry_after } => *retry_after,
        }
    }
}

enum Stage {
    /// Not polled yet: nothing is registered with the gate.
    Start,
    /// In the queue under this ticket, with its deadline timer.
    Queued {
        ticket: u64,
        deadline: Pin<Box<Sleep>>,
    },
    /// Returned a lease or a refusal: nothing left to undo.
    Done,
}

/// The future returned by [`super::Gate::acquire`]. See its `# Cancel safety`.
#[must_use = "a lease is only requested when the future is awaited"]
pub struct Acquire {
    gate: Arc<GateInner>,
    stage: Stage,
    started: Instant,
}

impl Acquire {
    pub(super) fn new(gate: Arc<GateInner>) -> Self {
        Self {
            gate,
            stage: Stage::Start,
            started: Instant::now(),
        }
    }

    fn lease(&mut self, ticket: u64, granted_at: Instant) -> Lease {
        self.stage = Stage::Done;
        Lease::new(
            Arc::clone(&self.gate),
            ticket,
            granted_at.saturating_duration_since(self.started),
            granted_at,
        )
    }
}

impl Future for Acquire {
    type Output = Result<Lease, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.stage {
                Stage::Start => {
                    let (ticket, entry) = this.gate.enter(cx.waker());
                    match entry {
                        Entry::Admitted => {
                            return Poll::Ready(Ok(this.lease(ticket, Instant::now())));
                        }
                        Entry::QueueFull { retry_after } => {
                            this.stage = Stage::Done;
                            return Poll::Ready(Err(Refusal::QueueFull { retry_after }));
                        }
                        Entry::Queued => {
                            // An active timer, not a lazy check: it wakes this task at the
                            // deadline even if no release ever happens.
                            let deadline = tokio::time::sleep(this.gate.config.wait_deadline);
                            this.stage = Stage::Queued {
                                ticket,
                                deadline: Box::pin(deadline),
                            };
                        }
                    }
                }
                Stage::Queued { ticket, deadline } => {
                    let ticket = *ticket;
                    if let Pickup::Granted { granted_at } = this.gate.pick_up(ticket, cx.waker()) {
                        return Poll::Ready(Ok(this.lease(ticket, granted_at)));
                    }
                    if deadline.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    return Poll::Ready(match this.gate.expire(ticket) {
                        Ok(granted_at) => Ok(this.lease(ticket, granted_at)),
                        Err(retry_after) => {
                            this.stage = Stage::Done;
                            Err(Refusal::WaitTimeout { retry_after })
                        }
                    });
                }
                Stage::Done => panic!("Acquire polled after completion"),
            }
        }
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        // Undo a half-finished acquisition: this is what makes `acquire` cancel-safe. A queued
        // ticket leaves the queue; if a promotion handed it a lease before we took the lock, that
        // lease is released here (and the next waiter promoted), so no capacity leaks.
        if let Stage::Queued { ticket, .. } = self.stage {
            self.gate.cancel(ticket);
        }
    }
}
