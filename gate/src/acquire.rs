use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use quanta::Instant;

use super::lease::Lease;
use super::queue::WaiterKey;
use super::state::{Entry, GateInner, Grant, Pickup};
use super::sync::{Arc, Deadline, deadline};

/// Why the gate refused a request. The request never ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The queue was full (HTTP 429 `queue_full`).
    #[error("queue_full: the wait queue is full")]
    QueueFull {
        /// Suggested wait before retrying.
        retry_after: Duration,
    },
    /// The request's flow had its `max_waiting_per_flow` waiters (HTTP 429 `queue_full`); other
    /// flows may still queue.
    #[error("queue_full: this flow's lane of the wait queue is full")]
    FlowQueueFull {
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
            Self::QueueFull { retry_after }
            | Self::FlowQueueFull { retry_after }
            | Self::WaitTimeout { retry_after } => *retry_after,
        }
    }
}

enum Stage {
    /// Not polled yet: nothing is registered with the gate. `flow`: the flow it waits in
    /// (`None`: the default flow).
    Start {
        gate: Arc<GateInner>,
        flow: Option<Box<str>>,
    },
    /// In the queue under this key since `since`, with its deadline timer.
    Queued {
        gate: Arc<GateInner>,
        key: WaiterKey,
        since: Instant,
        deadline: Pin<Box<Deadline>>,
    },
    /// Returned a lease or a refusal: nothing left to undo.
    Done,
}

/// The future returned by [`super::Gate::acquire`]. See its `# Cancel safety`.
#[must_use = "a lease is only requested when the future is awaited"]
pub struct Acquire {
    stage: Stage,
}

impl Acquire {
    pub(super) fn new(gate: Arc<GateInner>, flow: Option<Box<str>>) -> Self {
        Self {
            stage: Stage::Start { gate, flow },
        }
    }

    /// Turns a grant into the caller's lease (which takes over the gate handle); `since` is when
    /// the request joined the queue.
    fn lease(&mut self, grant: Grant, since: Instant) -> Lease {
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Start { gate, .. } | Stage::Queued { gate, .. } => Lease::new(
                gate,
                grant.key,
                grant.granted_at.saturating_duration_since(since),
                grant.granted_at,
            ),
            Stage::Done => unreachable!("a grant comes only to a live acquisition"),
        }
    }
}

impl Future for Acquire {
    type Output = Result<Lease, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.stage {
                Stage::Start { gate, flow } => {
                    // The one clock read of an admission: it stamps the lease's start.
                    let now = Instant::now();
                    let flow = flow.as_deref().unwrap_or(super::flows::DEFAULT_FLOW);
                    match gate.enter(cx.waker(), now, flow) {
                        Entry::Admitted(grant) => {
                            return Poll::Ready(Ok(this.lease(grant, now)));
                        }
                        Entry::QueueFull {
                            retry_after,
                            flow_limit,
                        } => {
                            this.stage = Stage::Done;
                            return Poll::Ready(Err(if flow_limit {
                                Refusal::FlowQueueFull { retry_after }
                            } else {
                                Refusal::QueueFull { retry_after }
                            }));
                        }
                        Entry::Queued(key) => {
                            // An active timer, not a lazy check: it wakes this task at the
                            // deadline even if no release ever happens.
                            let deadline = deadline(gate.config.wait_deadline);
                            this.stage = Stage::Queued {
                                gate: Arc::clone(gate),
                                key,
                                since: now,
                                deadline: Box::pin(deadline),
                            };
                        }
                    }
                }
                Stage::Queued {
                    gate,
                    key,
                    since,
                    deadline,
                } => {
                    let (key, since) = (*key, *since);
                    if let Pickup::Granted(grant) = gate.pick_up(key, cx.waker()) {
                        return Poll::Ready(Ok(this.lease(grant, since)));
                    }
                    if deadline.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    return Poll::Ready(match gate.expire(key) {
                        Ok(grant) => Ok(this.lease(grant, since)),
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
        if let Stage::Queued { gate, key, .. } = &self.stage {
            gate.cancel(*key);
        }
    }
}
