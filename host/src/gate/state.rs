use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::GateConfig;
use super::acquire::Acquire;
use super::events::{Event, EventLog, EventStatus};

/// The admission gate. Cloning shares the same gate.
#[derive(Clone)]
pub struct Gate {
    pub(super) inner: Arc<GateInner>,
}

pub(super) struct GateInner {
    pub(super) config: GateConfig,
    state: Mutex<GateState>,
}

/// Everything behind the gate's one lock. Every change happens in one short critical section
/// that never spans an `.await`.
#[derive(Default)]
pub(super) struct GateState {
    /// Leases out, including ones promoted to a waiter that has not picked theirs up yet.
    active: usize,
    /// Waiting tickets in arrival order: the smallest ticket is the oldest waiter. A `BTreeMap`
    /// makes removing a cancelled or expired waiter O(log n), wherever it stands in the queue.
    waiters: BTreeMap<u64, Option<Waker>>,
    /// Tickets handed a lease by promotion that their waiter has not picked up yet.
    promoted: HashSet<u64>,
    /// Live leases by ticket.
    leases: HashMap<u64, LeaseRecord>,
    next_ticket: u64,
    events: EventLog,
    /// Recent execution time (exponentially weighted), for `Retry-After`.
    service_ewma: Option<f64>,
}

struct LeaseRecord {
    granted_at: Instant,
    client_gone: bool,
}

/// What a first poll of [`Acquire`] decided.
pub(super) enum Entry {
    Admitted,
    Queued,
    QueueFull { retry_after: Duration },
}

/// Whether a queued ticket got its lease.
pub(super) enum Pickup {
    Granted { granted_at: Instant },
    StillWaiting,
}

/// One lease as `/state` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LeaseSnapshot {
    /// The request's ticket (its place in arrival order).
    pub ticket: u64,
    /// How long the lease has been held, in milliseconds.
    pub held_ms: u64,
    /// The client that asked for this work is gone (disconnected or timed out); the worker runs on.
    pub client_gone: bool,
}

/// The gate's state at one instant, taken under its lock.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// Leases out.
    pub active: usize,
    /// Requests waiting.
    pub waiting: usize,
    /// The most recent events, oldest first.
    pub events: Vec<Event>,
    /// Configured bound on leases.
    pub max_active: usize,
    /// Configured bound on waiters.
    pub max_waiting: usize,
    /// Configured wait deadline, in seconds.
    pub wait_seconds: f64,
    /// Every live lease, oldest first.
    pub leases: Vec<LeaseSnapshot>,
    /// Leases whose client is gone while their work still runs.
    pub client_gone: usize,
}

impl Gate {
    /// A gate with these limits.
    pub fn new(config: GateConfig) -> Self {
        Self {
            inner: Arc::new(GateInner {
                config,
                state: Mutex::new(GateState::default()),
            }),
        }
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
        Acquire::new(Arc::clone(&self.inner))
    }

    /// The current state, taken atomically.
    pub fn snapshot(&self) -> Snapshot {
        let state = self.inner.lock();
        let now = Instant::now();
        let mut leases: Vec<LeaseSnapshot> = state
            .leases
            .iter()
            .map(|(ticket, record)| LeaseSnapshot {
                ticket: *ticket,
                held_ms: now.duration_since(record.granted_at).as_millis() as u64,
                client_gone: record.client_gone,
            })
            .collect();
        leases.sort_by_key(|l| l.ticket);
        Snapshot {
            active: state.active,
            waiting: state.waiters.len(),
            events: state.events.to_vec(),
            max_active: self.inner.config.max_active,
            max_waiting: self.inner.config.max_waiting,
            wait_seconds: self.inner.config.wait_deadline.as_secs_f64(),
            client_gone: leases.iter().filter(|l| l.client_gone).count(),
            leases,
        }
    }
}

impl GateInner {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        // No code panics while holding the lock; if one ever did, the counts are still whole
        // (each critical section updates them before anything that could fail).
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// First poll: admit, queue, or refuse.
    pub(super) fn enter(&self, waker: &Waker) -> (u64, Entry) {
        let mut state = self.lock();
        state.next_ticket += 1;
        let ticket = state.next_ticket;
        if state.active < self.config.max_active && state.waiters.is_empty() {
            state.active += 1;
            state.leases.insert(ticket, LeaseRecord::new());
            state.log(EventStatus::Admitted);
            (ticket, Entry::Admitted)
        } else if state.waiters.len() < self.config.max_waiting {
            state.waiters.insert(ticket, Some(waker.clone()));
            state.log(EventStatus::Queued);
            (ticket, Entry::Queued)
        } else {
            state.log(EventStatus::QueueFull);
            let retry_after = state.retry_after(self.config.max_active);
            (ticket, Entry::QueueFull { retry_after })
        }
    }

    /// Later polls of a queued ticket: take a promoted lease, or refresh the waker.
    pub(super) fn pick_up(&self, ticket: u64, waker: &Waker) -> Pickup {
        let mut state = self.lock();
        if state.promoted.remove(&ticket) {
            return Pickup::Granted {
                granted_at: state.granted_at(ticket),
            };
        }
        if let Some(slot) = state.waiters.get_mut(&ticket) {
            match slot {
                Some(w) if w.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
        }
        Pickup::StillWaiting
    }

    /// The deadline of a queued ticket passed. Returns `Err(retry_after)` if it left the queue;
    /// `Ok` if a promotion got there first (the lease is then the waiter's to use).
    pub(super) fn expire(&self, ticket: u64) -> Result<Instant, Duration> {
        let mut state = self.lock();
        if state.waiters.remove(&ticket).is_some() {
            state.log(EventStatus::WaitTimeout);
            return Err(state.retry_after(self.config.max_active));
        }
        state.promoted.remove(&ticket);
        Ok(state.granted_at(ticket))
    }

    /// A queued ticket's future was dropped: leave the queue, or give back a lease that a
    /// promotion handed over in the meantime.
    pub(super) fn cancel(&self, ticket: u64) {
        let mut state = self.lock();
        if state.waiters.remove(&ticket).is_some() {
            state.log(EventStatus::WaitCancelled);
            return;
        }
        if state.promoted.remove(&ticket) {
            let waker = state.release(ticket, &self.config);
            drop(state);
            if let Some(w) = waker {
                w.wake();
            }
        }
    }

    /// A lease was dropped: its work has really ended.
    pub(super) fn release(&self, ticket: u64) {
        let mut state = self.lock();
        let waker = state.release(ticket, &self.config);
        drop(state);
        // Wake outside the lock: the woken task's first act is to take it.
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Marks a live lease as belonging to a client that is gone.
    pub(super) fn mark_client_gone(&self, ticket: u64) {
        if let Some(record) = self.lock().leases.get_mut(&ticket) {
            record.client_gone = true;
        }
    }
}

impl LeaseRecord {
    fn new() -> Self {
        Self {
            granted_at: Instant::now(),
            client_gone: false,
        }
    }
}

impl GateState {
    fn log(&mut self, status: EventStatus) {
        let (active, waiting) = (self.active, self.waiters.len());
        self.events.push(status, active, waiting);
    }

    fn granted_at(&self, ticket: u64) -> Instant {
        self.leases
            .get(&ticket)
            .map_or_else(Instant::now, |r| r.granted_at)
    }

    /// Frees the slot of `ticket` and hands it to the oldest waiter, if any (strict FIFO: a
    /// newcomer can never take it first, because `enter` admits only when nobody waits).
    /// Returns the promoted waiter's waker, to be woken after the lock is dropped.
    fn release(&mut self, ticket: u64, config: &GateConfig) -> Option<Waker> {
        let record = self.leases.remove(&ticket)?;
        let held = record.granted_at.elapsed().as_secs_f64();
        self.service_ewma = Some(match self.service_ewma {
            None => held,
            Some(avg) => 0.8 * avg + 0.2 * held,
        });
        self.active -= 1;
        self.log(EventStatus::Released);
        let (next, waker) = self.waiters.pop_first()?;
        debug_assert!(self.active < config.max_active);
        self.active += 1;
        self.promoted.insert(next);
        self.leases.insert(next, LeaseRecord::new());
        self.log(EventStatus::Promoted);
        waker
    }

    /// When a refused client should try again: the time for the queue ahead of it to drain at
    /// the recent service rate. Derived from state, not a constant, so refused clients do not
    /// come back in one synchronized herd.
    fn retry_after(&self, max_active: usize) -> Duration {
        let service = self.service_ewma.unwrap_or(1.0);
        let ahead = (self.waiters.len() + 1) as f64 / max_active as f64;
        Duration::from_secs((ahead * service).ceil().clamp(1.0, 3600.0) as u64)
    }
}
