use std::collections::VecDeque;

use serde::Serialize;

/// Events a snapshot (`/state`) shows: the most recent ones.
pub const MAX_EVENTS: usize = 128;

/// Events the gate retains, so a watcher that reads them every few hundred milliseconds (the
/// live page's stream) misses none at thousands of events per second; older ones are dropped.
/// About 40 bytes each.
pub const RETAINED_EVENTS: usize = 1024;

/// A gate transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    /// A free slot and nobody waiting: the request got a lease at once.
    Admitted,
    /// The request joined the queue.
    Queued,
    /// The queue was full: refused at once (429).
    QueueFull,
    /// A queued request's deadline passed: it left the queue (503).
    WaitTimeout,
    /// A queued request was cancelled (client gone): it left the queue.
    WaitCancelled,
    /// A lease was released: its work really ended.
    Released,
    /// The oldest waiter received a released slot.
    Promoted,
    /// The adaptive limit changed (`--max-active auto`): `limit` is the new one.
    LimitChanged,
}

/// One entry of the event log: the counts are those after the transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Event {
    /// Strictly increasing from 1 for the gate's life.
    pub order: u64,
    /// What happened.
    pub status: EventStatus,
    /// Leases out after the transition.
    pub active: usize,
    /// Requests waiting after the transition.
    pub waiting: usize,
    /// For `promoted`: how long the request waited in the queue; for `released`: how long the
    /// lease was held (the work's execution time). In microseconds; absent for other events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub took_us: Option<u64>,
    /// For `limit_changed`: the new limit on leases. Absent for other events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// What [`super::Gate::events_after`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventsAfter {
    /// The retained events after the order asked for, oldest first.
    pub events: Vec<Event>,
    /// Events after the order asked for that are no longer retained (they came before
    /// `events`).
    pub missed: u64,
}

/// The last [`RETAINED_EVENTS`] events.
#[derive(Debug, Default)]
pub(super) struct EventLog {
    events: VecDeque<Event>,
    next_order: u64,
}

impl EventLog {
    pub(super) fn push(
        &mut self,
        status: EventStatus,
        active: usize,
        waiting: usize,
        took_us: Option<u64>,
    ) {
        self.push_with(status, active, waiting, took_us, None);
    }

    /// [`EventLog::push`], with the new limit of a `limit_changed` event.
    pub(super) fn push_with(
        &mut self,
        status: EventStatus,
        active: usize,
        waiting: usize,
        took_us: Option<u64>,
        limit: Option<usize>,
    ) {
        self.next_order += 1;
        if self.events.len() == RETAINED_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(Event {
            order: self.next_order,
            status,
            active,
            waiting,
            took_us,
            limit,
        });
    }

    /// The newest `n` events, oldest first.
    pub(super) fn last(&self, n: usize) -> Vec<Event> {
        let skip = self.events.len().saturating_sub(n);
        self.events.iter().skip(skip).copied().collect()
    }

    /// The order of the newest event, 0 before the first.
    pub(super) fn last_order(&self) -> u64 {
        self.next_order
    }

    pub(super) fn after(&self, order: u64) -> EventsAfter {
        // Orders are consecutive, so the first retained one locates every other.
        let Some(first) = self.events.front().map(|e| e.order) else {
            return EventsAfter::default();
        };
        let skip = usize::try_from(order.saturating_sub(first - 1)).unwrap_or(usize::MAX);
        EventsAfter {
            events: self.events.iter().skip(skip).copied().collect(),
            missed: first.saturating_sub(order + 1).min(self.next_order),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_last_128_and_retains_1024_with_increasing_order() {
        let mut log = EventLog::default();
        for i in 0..3000 {
            log.push(EventStatus::Admitted, i, 0, None);
        }
        let events = log.last(MAX_EVENTS);
        assert_eq!(events.len(), MAX_EVENTS);
        assert_eq!(events[0].order, 3000 - MAX_EVENTS as u64 + 1);
        assert_eq!(events.last().unwrap().order, 3000);
        assert!(events.windows(2).all(|w| w[1].order == w[0].order + 1));
        assert_eq!(log.last(usize::MAX).len(), RETAINED_EVENTS);
    }

    #[test]
    fn after_an_order_gives_what_is_retained_and_counts_the_rest() {
        let mut log = EventLog::default();
        assert_eq!(log.after(0), EventsAfter::default());
        for i in 0..3000 {
            log.push(EventStatus::Released, 0, 0, Some(i as u64));
        }
        let first = 3000 - RETAINED_EVENTS as u64 + 1;
        let newer = log.after(2990);
        assert_eq!(newer.missed, 0);
        assert_eq!(
            newer.events.iter().map(|e| e.order).collect::<Vec<_>>(),
            (2991..=3000).collect::<Vec<_>>()
        );
        assert!(log.after(3000).events.is_empty());
        assert!(log.after(5000).events.is_empty());
        let edge = log.after(first - 1);
        assert_eq!((edge.missed, edge.events.len()), (0, RETAINED_EVENTS));
        let old = log.after(10);
        assert_eq!(old.missed, first - 11);
        assert_eq!(old.events.len(), RETAINED_EVENTS);
        assert_eq!(old.events[0].order, first);
        assert_eq!(log.after(0).missed, first - 1);
    }
}
