use std::task::Waker;
use std::time::Duration;

use quanta::Instant;

use serde::Serialize;
use slab::Slab;

use super::GateConfig;
use super::adaptive::{AdaptiveConfig, AdaptiveSnapshot, Gradient, Sample, WorkOutcome};
use super::events::{Event, EventLog, EventStatus, EventsAfter, MAX_EVENTS};
use super::flows::{FlowConfig, FlowSnapshot, FlowTable, Outcome};
use super::queue::{Left, Promoted, WaitQueue, WaiterKey};
use super::sync::{Mutex, MutexGuard};

pub(super) struct GateInner {
    pub(super) config: GateConfig,
    /// Whether requests name their flows (else every one is in the default flow).
    flows_on: bool,
    state: Mutex<GateState>,
}

/// Everything behind the gate's one lock. Every change happens in one short critical section
/// that never spans an `.await`.
pub(super) struct GateState {
    /// Every lease out, in a slot of its own (at most `max_active`, allocated up front): the
    /// leases held by workers and the ones promoted to a waiter that has not picked theirs up
    /// yet. Its length is the gate's `active` count.
    leases: Slab<LeaseRecord>,
    /// Waiters, a FIFO lane per flow, and the ones promoted that have not picked their lease up.
    waiters: WaitQueue,
    /// The live flows and their counts.
    flows: FlowTable,
    /// Leases that may be out now: `max_active`, or the adaptive controller's limit (at most
    /// `max_active`, which it then is the ceiling of).
    limit: usize,
    /// With `--max-active auto`: what moves `limit`.
    controller: Option<Gradient>,
    next_ticket: u64,
    events: EventLog,
    /// Recent execution time (exponentially weighted), for `Retry-After`.
    service_ewma: Option<f64>,
    totals: Totals,
}

/// Counts over the gate's whole life: how every request that reached it ended (exactly one of
/// `admitted`, `queue_full`, `wait_timeout`, `cancelled`), and more. For metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Totals {
    /// Requests that got a lease (at once, or after waiting).
    pub admitted: u64,
    /// Of those, the ones that waited in the queue first.
    pub promoted: u64,
    /// Refused because the queue was full.
    pub queue_full: u64,
    /// Refused because their wait deadline passed.
    pub wait_timeout: u64,
    /// Left the queue because their caller went away (never ran).
    pub cancelled: u64,
    /// Leases released (work really ended).
    pub released: u64,
    /// Leases whose client went away while their work ran on.
    pub client_gone: u64,
}

struct LeaseRecord {
    ticket: u64,
    granted_at: Instant,
    client_gone: bool,
    flow: usize,
    /// Leases out when it was granted, itself included: the concurrency its work ran at.
    granted_in_use: usize,
}

/// Where a lease lives in the gate: its slot, and the ticket of the request it belongs to (a
/// slot is reused once its lease is released; the ticket never is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LeaseKey {
    pub(super) slot: usize,
    pub(super) ticket: u64,
}

/// A lease handed over: where it lives and since when it is held.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grant {
    pub(super) key: LeaseKey,
    pub(super) granted_at: Instant,
}

/// What a first poll of [`Acquire`] decided.
pub(super) enum Entry {
    Admitted(Grant),
    Queued(WaiterKey),
    /// Refused: the whole queue was full, or (`flow_limit`) the flow's lane.
    QueueFull {
        retry_after: Duration,
        flow_limit: bool,
    },
}

/// Whether a queued ticket got its lease.
pub(super) enum Pickup {
    Granted(Grant),
    StillWaiting,
}

/// One lease as `/state` shows it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Snapshot {
    /// Leases out.
    pub active: usize,
    /// Requests waiting.
    pub waiting: usize,
    /// The most recent events, oldest first.
    pub events: Vec<Event>,
    /// The bound on leases now: the configured one, or the adaptive limit.
    pub max_active: usize,
    /// Configured bound on waiters.
    pub max_waiting: usize,
    /// Configured wait deadline, in seconds.
    pub wait_seconds: f64,
    /// Every live lease, oldest first.
    pub leases: Vec<LeaseSnapshot>,
    /// Leases whose client is gone while their work still runs.
    pub client_gone: usize,
    /// Counts over the gate's life.
    pub totals: Totals,
    /// With flows on: every live flow, busiest first (absent with flows off).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowSnapshot>,
    /// With an adaptive limit: the controller's floor, ceiling and latencies (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveSnapshot>,
}

impl GateInner {
    /// The engine of a gate with these limits, its queue shared by `flows` (`None`: flows off,
    /// one flow).
    pub(super) fn new(
        config: GateConfig,
        flows: Option<FlowConfig>,
        adaptive: Option<AdaptiveConfig>,
    ) -> Self {
        let flows_on = flows.is_some();
        // The probes' jitter differs from process to process, so replicas do not probe in step.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id());
        let controller = adaptive.map(|config| Gradient::new(config, seed));
        let limit = controller
            .as_ref()
            .map_or(config.max_active, |c| c.limit().min(config.max_active));
        Self {
            flows_on,
            state: Mutex::new(GateState {
                leases: Slab::with_capacity(config.max_active),
                waiters: WaitQueue::default(),
                flows: FlowTable::new(flows.unwrap_or_else(FlowConfig::single)),
                limit,
                controller,
                next_ticket: 0,
                events: EventLog::default(),
                service_ewma: None,
                totals: Totals::default(),
            }),
            config,
        }
    }

    /// See [`super::Gate::events_after`].
    pub(super) fn events_after(&self, order: u64) -> EventsAfter {
        self.lock().events.after(order)
    }

    /// See [`super::Gate::last_event_order`].
    pub(super) fn last_event_order(&self) -> u64 {
        self.lock().events.last_order()
    }

    /// See [`super::Gate::snapshot`].
    pub(super) fn snapshot(&self) -> Snapshot {
        let state = self.lock();
        let now = Instant::now();
        let mut leases: Vec<LeaseSnapshot> = state
            .leases
            .iter()
            .map(|(_, record)| LeaseSnapshot {
                ticket: record.ticket,
                held_ms: now.duration_since(record.granted_at).as_millis() as u64,
                client_gone: record.client_gone,
            })
            .collect();
        leases.sort_by_key(|l| l.ticket);
        Snapshot {
            active: state.leases.len(),
            waiting: state.waiters.len(),
            events: state.events.last(MAX_EVENTS),
            max_active: state.limit,
            max_waiting: self.config.max_waiting,
            wait_seconds: self.config.wait_deadline.as_secs_f64(),
            client_gone: leases.iter().filter(|l| l.client_gone).count(),
            leases,
            totals: state.totals,
            flows: if self.flows_on {
                state.flows.snapshot()
            } else {
                Vec::new()
            },
            adaptive: state.controller.as_ref().map(Gradient::snapshot),
        }
    }

    /// The flows' settings (with flows off: one flow, no per-flow bound).
    pub(super) fn flow_config(&self) -> FlowConfig {
        self.lock().flows.config().clone()
    }
    fn lock(&self) -> MutexGuard<'_, GateState> {
        // No code panics while holding the lock; if one ever did, the counts are still whole
        // (each critical section updates them before anything that could fail).
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// First poll: admit, queue (in `flow`'s lane), or refuse. `now` is read before the lock is
    /// taken.
    pub(super) fn enter(&self, waker: &Waker, now: Instant, flow: &str) -> Entry {
        let mut state = self.lock();
        state.next_ticket += 1;
        let ticket = state.next_ticket;
        let flow = if self.flows_on {
            state.flows.enter(flow)
        } else {
            state.flows.enter(super::flows::DEFAULT_FLOW)
        };
        if state.leases.len() < state.limit && state.waiters.is_empty() {
            let grant = state.grant(ticket, now, flow);
            state.flows.add_active(flow, 1);
            state.flows.count(flow, Outcome::Admitted);
            state.log(EventStatus::Admitted);
            state.totals.admitted += 1;
            Entry::Admitted(grant)
        } else if state.waiters.len() < self.config.max_waiting
            && state.flows.waiting(flow) < state.flows.config().max_waiting_per_flow
        {
            let weight = state.flows.weight(flow);
            let key = state
                .waiters
                .push_back(flow, weight, ticket, now, waker.clone());
            state.flows.add_waiting(flow, 1);
            state.log(EventStatus::Queued);
            Entry::Queued(key)
        } else {
            let flow_limit = state.waiters.len() < self.config.max_waiting;
            state.flows.count(flow, Outcome::QueueFull);
            state.flows.settle(flow);
            state.log(EventStatus::QueueFull);
            state.totals.queue_full += 1;
            let retry_after = state.retry_after();
            Entry::QueueFull {
                retry_after,
                flow_limit,
            }
        }
    }

    /// Later polls of a queued ticket: take a promoted lease, or refresh the waker.
    pub(super) fn pick_up(&self, key: WaiterKey, waker: &Waker) -> Pickup {
        let mut state = self.lock();
        if let Some(lease) = state.waiters.take_promoted(key) {
            state.totals.admitted += 1;
            state.totals.promoted += 1;
            let flow = state.leases[lease].flow;
            state.flows.count(flow, Outcome::Admitted);
            return Pickup::Granted(state.grant_of(lease, key.ticket));
        }
        if let Some(slot) = state.waiters.waker_mut(key) {
            match slot {
                Some(w) if w.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
        }
        Pickup::StillWaiting
    }

    /// The deadline of a queued ticket passed. Returns `Err(retry_after)` if it left the queue;
    /// `Ok` if a promotion got there first (the lease is then the waiter's to use).
    pub(super) fn expire(&self, key: WaiterKey) -> Result<Grant, Duration> {
        let mut state = self.lock();
        match state.waiters.remove(key) {
            Some((Left::Promoted { lease }, flow)) => {
                state.totals.admitted += 1;
                state.totals.promoted += 1;
                state.flows.count(flow, Outcome::Admitted);
                Ok(state.grant_of(lease, key.ticket))
            }
            left @ (Some((Left::Waiting, _)) | None) => {
                if let Some((_, flow)) = left {
                    state.flows.count(flow, Outcome::WaitTimeout);
                    state.flows.add_waiting(flow, -1);
                }
                state.log(EventStatus::WaitTimeout);
                state.totals.wait_timeout += 1;
                Err(state.retry_after())
            }
        }
    }

    /// A queued ticket's future was dropped: leave the queue, or give back a lease that a
    /// promotion handed over in the meantime.
    pub(super) fn cancel(&self, key: WaiterKey) {
        let mut state = self.lock();
        match state.waiters.remove(key) {
            Some((Left::Waiting, flow)) => {
                state.flows.add_waiting(flow, -1);
                state.log(EventStatus::WaitCancelled);
                state.totals.cancelled += 1;
            }
            Some((Left::Promoted { lease }, _)) => {
                // Handed a lease it never picked up: it never ran.
                state.totals.cancelled += 1;
                let lease = LeaseKey {
                    slot: lease,
                    ticket: key.ticket,
                };
                let wakers = state.release(
                    lease,
                    Instant::now(),
                    (WorkOutcome::NeverRan, None),
                    &self.config,
                );
                drop(state);
                wakers.wake();
            }
            None => {}
        }
    }

    /// A lease was dropped: its work has really ended.
    pub(super) fn release(&self, key: LeaseKey, outcome: WorkOutcome, work: Option<Duration>) {
        let now = Instant::now();
        let mut state = self.lock();
        let wakers = state.release(key, now, (outcome, work), &self.config);
        drop(state);
        // Wake outside the lock: the woken task's first act is to take it.
        wakers.wake();
    }

    /// Marks a live lease as belonging to a client that is gone.
    pub(super) fn mark_client_gone(&self, key: LeaseKey) {
        // The ticket check matters: the watch may outlive its lease, and the slot may since
        // hold another request's lease.
        let mut state = self.lock();
        if let Some(record) = state.leases.get_mut(key.slot)
            && record.ticket == key.ticket
            && !record.client_gone
        {
            record.client_gone = true;
            state.totals.client_gone += 1;
        }
    }
}

impl GateState {
    fn log(&mut self, status: EventStatus) {
        self.log_took(status, None);
    }

    /// Logs an event that ends a wait or a lease, with how long it lasted.
    fn log_took(&mut self, status: EventStatus, took: Option<Duration>) {
        let (active, waiting) = (self.leases.len(), self.waiters.len());
        let took_us = took.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        self.events.push(status, active, waiting, took_us);
    }

    /// Takes a slot for `ticket`'s lease (of `flow`). The caller has checked that one is free.
    fn grant(&mut self, ticket: u64, now: Instant, flow: usize) -> Grant {
        let granted_in_use = self.leases.len() + 1;
        let slot = self.leases.insert(LeaseRecord {
            ticket,
            granted_at: now,
            client_gone: false,
            flow,
            granted_in_use,
        });
        Grant {
            key: LeaseKey { slot, ticket },
            granted_at: now,
        }
    }

    /// The grant a promotion made to `ticket`, in `slot`.
    fn grant_of(&self, slot: usize, ticket: u64) -> Grant {
        let record = &self.leases[slot];
        debug_assert_eq!(record.ticket, ticket);
        Grant {
            key: LeaseKey { slot, ticket },
            granted_at: record.granted_at,
        }
    }

    /// Frees the slot of `ticket` and hands it to the next waiter, if any: the oldest of the
    /// flow whose turn it is (with one flow, strict FIFO; a newcomer can never take it first,
    /// because `enter` admits only when nobody waits). With an adaptive limit the release is a
    /// sample of the calls' latency, and a new limit may promote more waiters, or none. Returns
    /// the promoted waiters' wakers, to be woken after the lock is dropped.
    fn release(
        &mut self,
        key: LeaseKey,
        now: Instant,
        (outcome, work): (WorkOutcome, Option<Duration>),
        config: &GateConfig,
    ) -> Wakers {
        let Some(record) = self.leases.try_remove(key.slot) else {
            return Wakers::default();
        };
        debug_assert_eq!(
            record.ticket, key.ticket,
            "a lease is released exactly once"
        );
        let held = now.saturating_duration_since(record.granted_at);
        let held_s = held.as_secs_f64();
        self.service_ewma = Some(match self.service_ewma {
            None => held_s,
            Some(avg) => 0.8 * avg + 0.2 * held_s,
        });
        self.flows.add_active(record.flow, -1);
        self.log_took(EventStatus::Released, Some(held));
        self.totals.released += 1;
        debug_assert!(self.leases.len() < config.max_active);
        let in_use = self.leases.len() + 1;
        // Only work that ran is a sample: a lease given back before its work ran (its global
        // lease refused, its client gone first) says nothing of the backend's latency — its
        // hold time would be the wait for Redis, or nothing at all.
        let sample = work.map(|work| Sample {
            work,
            granted_in_use: record.granted_in_use,
            in_use,
            outcome,
        });
        if let Some(limit) =
            sample.and_then(|sample| self.controller.as_mut().and_then(|c| c.sample(sample)))
        {
            // A lower limit takes nothing from a running call: fewer are promoted until fewer
            // than it are out. A higher one promotes as many waiters as it frees.
            self.limit = limit.min(config.max_active);
            let (active, waiting) = (self.leases.len(), self.waiters.len());
            self.events.push_with(
                EventStatus::LimitChanged,
                active,
                waiting,
                None,
                Some(self.limit),
            );
        }
        let mut wakers = Wakers::default();
        while self.leases.len() < self.limit {
            let Some(waker) = self.promote_next(now) else {
                break;
            };
            wakers.push(waker);
        }
        wakers
    }

    /// Hands a free slot to the next waiter, if any: the oldest of the flow whose turn it is.
    /// Returns whether one was promoted, with its waker.
    fn promote_next(&mut self, now: Instant) -> Option<Option<Waker>> {
        let leases = &mut self.leases;
        let Promoted {
            since, flow, waker, ..
        } = self.waiters.promote_next(|ticket, flow| {
            let granted_in_use = leases.len() + 1;
            leases.insert(LeaseRecord {
                ticket,
                granted_at: now,
                client_gone: false,
                flow,
                granted_in_use,
            })
        })?;
        self.flows.add_active(flow, 1);
        self.flows.add_waiting(flow, -1);
        self.log_took(
            EventStatus::Promoted,
            Some(now.saturating_duration_since(since)),
        );
        Some(waker)
    }

    /// When a refused client should try again: the time for the queue ahead of it to drain at
    /// the recent service rate. Derived from state, not a constant, so refused clients do not
    /// come back in one synchronized herd.
    fn retry_after(&self) -> Duration {
        let service = self.service_ewma.unwrap_or(1.0);
        let ahead = (self.waiters.len() + 1) as f64 / self.limit.max(1) as f64;
        Duration::from_secs((ahead * service).ceil().clamp(1.0, 3600.0) as u64)
    }
}

/// The wakers of the waiters a release promoted (one, or more when the limit rose), to be woken
/// after the lock is dropped. No allocation for the usual one.
#[derive(Default)]
pub(super) struct Wakers {
    first: Option<Waker>,
    more: Vec<Waker>,
}

impl Wakers {
    fn push(&mut self, waker: Option<Waker>) {
        let Some(waker) = waker else { return };
        if self.first.is_none() {
            self.first = Some(waker);
        } else {
            self.more.push(waker);
        }
    }

    /// Wakes them all.
    pub(super) fn wake(self) {
        if let Some(w) = self.first {
            w.wake();
        }
        for w in self.more {
            w.wake();
        }
    }
}
