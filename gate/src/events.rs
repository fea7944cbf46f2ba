use std::collections::VecDeque;

use serde::Serialize;

/// Events kept in the log; older ones are dropped.
pub const MAX_EVENTS: usize = 128;

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
}

/// The last [`MAX_EVENTS`] events.
#[derive(Debug, Default)]
pub(super) struct EventLog {
    events: VecDeque<Event>,
    next_order: u64,
}

impl EventLog {
    pub(super) fn push(&mut self, status: EventStatus, active: usize, waiting: usize) {
        self.next_order += 1;
        if self.events.len() == MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(Event {
            order: self.next_order,
            status,
            active,
            waiting,
        });
    }

    pub(super) fn to_vec(&self) -> Vec<Event> {
        self.events.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_last_128_with_increasing_order() {
        let mut log = EventLog::default();
        for i in 0..300 {
            log.push(EventStatus::Admitted, i, 0);
        }
        let events = log.to_vec();
        assert_eq!(events.len(), MAX_EVENTS);
        assert_eq!(events[0].order, 300 - MAX_EVENTS as u64 + 1);
        assert_eq!(events.last().unwrap().order, 300);
        assert!(events.windows(2).all(|w| w[1].order == w[0].order + 1));
    }
}
