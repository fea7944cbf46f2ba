use std::task::Waker;

use quanta::Instant;
use slab::Slab;

/// No neighbour (the end of the list).
const NIL: usize = usize::MAX;

/// Where a waiter is in the queue: its node, and its ticket (a node is reused once its waiter
/// has left; the ticket never is, so a stale key finds nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WaiterKey {
    index: usize,
    pub(super) ticket: u64,
}

/// How a waiter left the queue.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Left {
    /// It was still waiting.
    Waiting,
    /// A release had already handed it the lease in this slot, not yet picked up.
    Promoted { lease: usize },
}

/// The FIFO queue of waiters: a doubly linked list threaded through a slab, so that joining at
/// the back, promoting the front and removing any waiter by its key are all O(1), with no
/// hashing and no search, whatever the queue length. A promoted waiter is unlinked (it no longer
/// counts as waiting) but keeps its node until it picks its lease up or is dropped.
///
/// Memory: one node (~56 bytes) per waiter; the slab keeps its high-water capacity, bounded by
/// `max_waiting` plus the leases promoted and not yet picked up (at most `max_active`).
#[derive(Debug)]
pub(super) struct WaitQueue {
    nodes: Slab<Node>,
    head: usize,
    tail: usize,
    len: usize,
}

#[derive(Debug)]
struct Node {
    ticket: u64,
    /// When the waiter joined (its promotion event reports how long it waited).
    since: Instant,
    place: Place,
}

#[derive(Debug)]
enum Place {
    Linked {
        prev: usize,
        next: usize,
        waker: Option<Waker>,
    },
    Promoted {
        lease: usize,
    },
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self {
            nodes: Slab::new(),
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

impl WaitQueue {
    /// Waiters in the queue (promoted ones excluded).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Joins at the back.
    pub(super) fn push_back(&mut self, ticket: u64, since: Instant, waker: Waker) -> WaiterKey {
        let index = self.nodes.insert(Node {
            ticket,
            since,
            place: Place::Linked {
                prev: self.tail,
                next: NIL,
                waker: Some(waker),
            },
        });
        match self.tail {
            NIL => self.head = index,
            tail => self.set_next(tail, index),
        }
        self.tail = index;
        self.len += 1;
        WaiterKey { index, ticket }
    }

    /// Unlinks the oldest waiter and records that it was handed the lease in slot `lease`.
    /// Returns its ticket, when it joined, and the waker of its task.
    pub(super) fn promote_front(
        &mut self,
        lease: impl FnOnce(u64) -> usize,
    ) -> Option<(u64, Instant, Option<Waker>)> {
        let index = self.head;
        if index == NIL {
            return None;
        }
        let node = &mut self.nodes[index];
        let (ticket, since) = (node.ticket, node.since);
        let place = std::mem::replace(
            &mut node.place,
            Place::Promoted {
                lease: lease(ticket),
            },
        );
        let Place::Linked { prev, next, waker } = place else {
            unreachable!("the head of the queue is linked");
        };
        self.unlink(prev, next);
        Some((ticket, since, waker))
    }

    /// The waiter leaves for good (its deadline passed or its future was dropped): unlinked if
    /// it was waiting, its node freed either way. `None` if the key is stale.
    pub(super) fn remove(&mut self, key: WaiterKey) -> Option<Left> {
        if self.nodes.get(key.index)?.ticket != key.ticket {
            return None;
        }
        match self.nodes.remove(key.index).place {
            Place::Linked { prev, next, .. } => {
                self.unlink(prev, next);
                Some(Left::Waiting)
            }
            Place::Promoted { lease } => Some(Left::Promoted { lease }),
        }
    }

    /// The lease slot a promotion handed this waiter, freeing its node; `None` while it still
    /// waits.
    pub(super) fn take_promoted(&mut self, key: WaiterKey) -> Option<usize> {
        match self.nodes.get(key.index) {
            Some(node) if node.ticket == key.ticket => match node.place {
                Place::Promoted { lease } => {
                    self.nodes.remove(key.index);
                    Some(lease)
                }
                Place::Linked { .. } => None,
            },
            _ => None,
        }
    }

    /// The stored waker of a waiting waiter, to refresh it.
    pub(super) fn waker_mut(&mut self, key: WaiterKey) -> Option<&mut Option<Waker>> {
        match self.nodes.get_mut(key.index) {
            Some(Node {
                ticket,
                place: Place::Linked { waker, .. },
                ..
            }) if *ticket == key.ticket => Some(waker),
            _ => None,
        }
    }

    /// Joins `prev` and `next` around a node taken out of the list.
    fn unlink(&mut self, prev: usize, next: usize) {
        match prev {
            NIL => self.head = next,
            prev => self.set_next(prev, next),
        }
        match next {
            NIL => self.tail = prev,
            next => self.set_prev(next, prev),
        }
        self.len -= 1;
    }

    fn set_next(&mut self, index: usize, to: usize) {
        if let Place::Linked { next, .. } = &mut self.nodes[index].place {
            *next = to;
        }
    }

    fn set_prev(&mut self, index: usize, to: usize) {
        if let Place::Linked { prev, .. } = &mut self.nodes[index].place {
            *prev = to;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tickets_in_order(q: &WaitQueue) -> Vec<u64> {
        let mut out = Vec::new();
        let mut at = q.head;
        while at != NIL {
            out.push(q.nodes[at].ticket);
            match q.nodes[at].place {
                Place::Linked { next, .. } => at = next,
                Place::Promoted { .. } => panic!("a promoted node is still linked"),
            }
        }
        assert_eq!(out.len(), q.len());
        out
    }

    #[test]
    fn fifo_with_removal_anywhere_and_stale_keys() {
        let mut q = WaitQueue::default();
        let keys: Vec<WaiterKey> = (1..=5)
            .map(|t| q.push_back(t, Instant::now(), Waker::noop().clone()))
            .collect();
        assert_eq!(tickets_in_order(&q), [1, 2, 3, 4, 5]);
        assert_eq!(q.remove(keys[2]), Some(Left::Waiting));
        assert_eq!(q.remove(keys[4]), Some(Left::Waiting));
        assert_eq!(q.remove(keys[2]), None, "a key works once");
        assert_eq!(tickets_in_order(&q), [1, 2, 4]);
        // The freed node is reused by a newcomer; the old key must not reach it.
        let six = q.push_back(6, Instant::now(), Waker::noop().clone());
        assert_eq!(q.remove(keys[4]), None);
        assert_eq!(tickets_in_order(&q), [1, 2, 4, 6]);

        let (ticket, _, waker) = q.promote_front(|t| t as usize * 10).unwrap();
        assert_eq!((ticket, waker.is_some()), (1, true));
        assert_eq!(tickets_in_order(&q), [2, 4, 6]);
        assert!(
            q.waker_mut(keys[0]).is_none(),
            "promoted: no longer waiting"
        );
        assert_eq!(q.take_promoted(keys[1]), None, "2 still waits");
        assert_eq!(q.take_promoted(keys[0]), Some(10));
        assert_eq!(q.take_promoted(keys[0]), None);

        q.promote_front(|_| 7).unwrap();
        assert_eq!(q.remove(keys[1]), Some(Left::Promoted { lease: 7 }));
        assert_eq!(q.remove(six), Some(Left::Waiting));
        assert_eq!(q.remove(keys[3]), Some(Left::Waiting));
        assert!(q.is_empty());
        assert_eq!((q.head, q.tail), (NIL, NIL));
        assert!(q.promote_front(|_| 0).is_none());
        assert!(q.nodes.is_empty(), "every node was freed");
    }
}
