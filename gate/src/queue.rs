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

/// The wait queue: a FIFO lane per flow, and the lanes that have waiters in a ring served by
/// deficit round robin — each lane in turn takes as many freed slots as its weight, then passes
/// (a request costs one; a lane that empties gives up what it had left). With one flow it is a
/// plain FIFO.
///
/// Every lane is a doubly linked list threaded through one slab, and the ring a doubly linked
/// list of lanes, so joining at the back, promoting the next waiter and removing any waiter by
/// its key are all O(1), with no hashing and no search, whatever the queue length or the number
/// of flows. A promoted waiter is unlinked (it no longer counts as waiting) but keeps its node
/// until it picks its lease up or is dropped.
///
/// Memory: one node (~64 bytes) per waiter; the slab keeps its high-water capacity, bounded by
/// `max_waiting` plus the leases promoted and not yet picked up (at most `max_active`); one lane
/// (~48 bytes) per flow id, bounded by the live flows (`max_flows` + the overflow flow).
#[derive(Debug)]
pub(super) struct WaitQueue {
    nodes: Slab<Node>,
    /// Indexed by flow id.
    lanes: Vec<Lane>,
    /// The lane whose turn it is, and the last one in the ring.
    ring_head: usize,
    ring_tail: usize,
    len: usize,
}

#[derive(Debug)]
struct Node {
    ticket: u64,
    /// When the waiter joined (its promotion event reports how long it waited).
    since: Instant,
    flow: usize,
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

/// One flow's FIFO lane, and its place in the ring while it has waiters.
#[derive(Debug, Clone, Copy)]
struct Lane {
    head: usize,
    tail: usize,
    len: usize,
    /// Slots it may still take in its current turn.
    deficit: u32,
    /// Slots per turn.
    weight: u32,
    ring_prev: usize,
    ring_next: usize,
}

impl Default for Lane {
    fn default() -> Self {
        Self {
            head: NIL,
            tail: NIL,
            len: 0,
            deficit: 0,
            weight: 1,
            ring_prev: NIL,
            ring_next: NIL,
        }
    }
}

/// A waiter handed a lease by [`WaitQueue::promote_next`].
#[derive(Debug)]
pub(super) struct Promoted {
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the gate needs only the flow and waker")
    )]
    pub(super) ticket: u64,
    pub(super) since: Instant,
    pub(super) flow: usize,
    pub(super) waker: Option<Waker>,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self {
            nodes: Slab::new(),
            lanes: Vec::new(),
            ring_head: NIL,
            ring_tail: NIL,
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

    /// Joins at the back of `flow`'s lane; a lane that was empty joins the ring at the back,
    /// with `weight` slots per turn.
    pub(super) fn push_back(
        &mut self,
        flow: usize,
        weight: u32,
        ticket: u64,
        since: Instant,
        waker: Waker,
    ) -> WaiterKey {
        if self.lanes.len() <= flow {
            self.lanes.resize(flow + 1, Lane::default());
        }
        let tail = self.lanes[flow].tail;
        let index = self.nodes.insert(Node {
            ticket,
            since,
            flow,
            place: Place::Linked {
                prev: tail,
                next: NIL,
                waker: Some(waker),
            },
        });
        match tail {
            NIL => self.lanes[flow].head = index,
            tail => self.set_next(tail, index),
        }
        let lane = &mut self.lanes[flow];
        lane.tail = index;
        lane.len += 1;
        if lane.len == 1 {
            lane.weight = weight.max(1);
            lane.deficit = 0;
            self.ring_push_back(flow);
        }
        self.len += 1;
        WaiterKey { index, ticket }
    }

    /// Unlinks the next waiter — the oldest of the lane whose turn it is — and records that it
    /// was handed the lease in slot `lease(ticket, flow)`.
    pub(super) fn promote_next(
        &mut self,
        lease: impl FnOnce(u64, usize) -> usize,
    ) -> Option<Promoted> {
        let flow = self.ring_head;
        if flow == NIL {
            return None;
        }
        let lane = &mut self.lanes[flow];
        if lane.deficit == 0 {
            lane.deficit = lane.weight;
        }
        lane.deficit -= 1;
        let index = lane.head;
        let node = &mut self.nodes[index];
        let (ticket, since) = (node.ticket, node.since);
        let place = std::mem::replace(
            &mut node.place,
            Place::Promoted {
                lease: lease(ticket, flow),
            },
        );
        let Place::Linked { prev, next, waker } = place else {
            unreachable!("the head of a lane is linked");
        };
        self.unlink(flow, prev, next);
        // Its turn ends when its lane empties (unlink took it off the ring) or its deficit is
        // spent: then the next lane's turn.
        if self.lanes[flow].len > 0 && self.lanes[flow].deficit == 0 {
            self.ring_unlink(flow);
            self.ring_push_back(flow);
        }
        Some(Promoted {
            ticket,
            since,
            flow,
            waker,
        })
    }

    /// The waiter leaves for good (its deadline passed or its future was dropped): unlinked if
    /// it was waiting, its node freed either way. Returns how it left and its flow; `None` if the
    /// key is stale.
    pub(super) fn remove(&mut self, key: WaiterKey) -> Option<(Left, usize)> {
        if self.nodes.get(key.index)?.ticket != key.ticket {
            return None;
        }
        let node = self.nodes.remove(key.index);
        match node.place {
            Place::Linked { prev, next, .. } => {
                self.unlink(node.flow, prev, next);
                Some((Left::Waiting, node.flow))
            }
            Place::Promoted { lease } => Some((Left::Promoted { lease }, node.flow)),
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

    /// Joins `prev` and `next` around a node taken out of `flow`'s lane; a lane left empty
    /// leaves the ring, and what was left of its turn.
    fn unlink(&mut self, flow: usize, prev: usize, next: usize) {
        match prev {
            NIL => self.lanes[flow].head = next,
            prev => self.set_next(prev, next),
        }
        match next {
            NIL => self.lanes[flow].tail = prev,
            next => self.set_prev(next, prev),
        }
        self.lanes[flow].len -= 1;
        self.len -= 1;
        if self.lanes[flow].len == 0 {
            self.lanes[flow].deficit = 0;
            self.ring_unlink(flow);
        }
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

    fn ring_push_back(&mut self, flow: usize) {
        let tail = self.ring_tail;
        self.lanes[flow].ring_prev = tail;
        self.lanes[flow].ring_next = NIL;
        match tail {
            NIL => self.ring_head = flow,
            tail => self.lanes[tail].ring_next = flow,
        }
        self.ring_tail = flow;
    }

    fn ring_unlink(&mut self, flow: usize) {
        let Lane {
            ring_prev,
            ring_next,
            ..
        } = self.lanes[flow];
        match ring_prev {
            NIL => self.ring_head = ring_next,
            prev => self.lanes[prev].ring_next = ring_next,
        }
        match ring_next {
            NIL => self.ring_tail = ring_prev,
            next => self.lanes[next].ring_prev = ring_prev,
        }
        self.lanes[flow].ring_prev = NIL;
        self.lanes[flow].ring_next = NIL;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every waiter still linked, lane by lane in ring order.
    fn tickets_in_order(q: &WaitQueue) -> Vec<u64> {
        let mut out = Vec::new();
        let mut flow = q.ring_head;
        while flow != NIL {
            let mut at = q.lanes[flow].head;
            while at != NIL {
                out.push(q.nodes[at].ticket);
                match q.nodes[at].place {
                    Place::Linked { next, .. } => at = next,
                    Place::Promoted { .. } => panic!("a promoted node is still linked"),
                }
            }
            flow = q.lanes[flow].ring_next;
        }
        assert_eq!(out.len(), q.len());
        out
    }

    fn push(q: &mut WaitQueue, flow: usize, weight: u32, ticket: u64) -> WaiterKey {
        q.push_back(flow, weight, ticket, Instant::now(), Waker::noop().clone())
    }

    /// The tickets `promote_next` hands out until the queue is empty.
    fn drain(q: &mut WaitQueue) -> Vec<u64> {
        std::iter::from_fn(|| q.promote_next(|_, _| 0).map(|p| p.ticket)).collect()
    }

    #[test]
    fn fifo_with_removal_anywhere_and_stale_keys() {
        let mut q = WaitQueue::default();
        let keys: Vec<WaiterKey> = (1..=5).map(|t| push(&mut q, 0, 1, t)).collect();
        assert_eq!(tickets_in_order(&q), [1, 2, 3, 4, 5]);
        assert_eq!(q.remove(keys[2]), Some((Left::Waiting, 0)));
        assert_eq!(q.remove(keys[4]), Some((Left::Waiting, 0)));
        assert_eq!(q.remove(keys[2]), None, "a key works once");
        assert_eq!(tickets_in_order(&q), [1, 2, 4]);
        // The freed node is reused by a newcomer; the old key must not reach it.
        let six = push(&mut q, 0, 1, 6);
        assert_eq!(q.remove(keys[4]), None);
        assert_eq!(tickets_in_order(&q), [1, 2, 4, 6]);

        let promoted = q.promote_next(|t, _| t as usize * 10).unwrap();
        assert_eq!((promoted.ticket, promoted.waker.is_some()), (1, true));
        assert_eq!(tickets_in_order(&q), [2, 4, 6]);
        assert!(
            q.waker_mut(keys[0]).is_none(),
            "promoted: no longer waiting"
        );
        assert_eq!(q.take_promoted(keys[1]), None, "2 still waits");
        assert_eq!(q.take_promoted(keys[0]), Some(10));
        assert_eq!(q.take_promoted(keys[0]), None);

        q.promote_next(|_, _| 7).unwrap();
        assert_eq!(q.remove(keys[1]), Some((Left::Promoted { lease: 7 }, 0)));
        assert_eq!(q.remove(six), Some((Left::Waiting, 0)));
        assert_eq!(q.remove(keys[3]), Some((Left::Waiting, 0)));
        assert!(q.is_empty());
        assert_eq!((q.lanes[0].head, q.lanes[0].tail), (NIL, NIL));
        assert_eq!((q.ring_head, q.ring_tail), (NIL, NIL));
        assert!(q.promote_next(|_, _| 0).is_none());
        assert!(q.nodes.is_empty(), "every node was freed");
    }

    #[test]
    fn flows_take_turns_fifo_within_each() {
        let mut q = WaitQueue::default();
        // A flood in flow 0 first, then two of flow 1: they do not wait behind the flood.
        for t in 1..=6 {
            push(&mut q, 0, 1, t);
        }
        push(&mut q, 1, 1, 101);
        push(&mut q, 1, 1, 102);
        assert_eq!(drain(&mut q), [1, 101, 2, 102, 3, 4, 5, 6]);
    }

    #[test]
    fn weights_are_slots_per_turn() {
        let mut q = WaitQueue::default();
        for t in 1..=6 {
            push(&mut q, 0, 1, t);
            push(&mut q, 1, 3, 100 + t);
        }
        assert_eq!(
            drain(&mut q),
            [1, 101, 102, 103, 2, 104, 105, 106, 3, 4, 5, 6]
        );
    }

    #[test]
    fn a_lane_that_empties_leaves_the_ring_and_its_turn() {
        let mut q = WaitQueue::default();
        let a = push(&mut q, 0, 2, 1);
        push(&mut q, 0, 2, 2);
        let c = push(&mut q, 1, 1, 11);
        push(&mut q, 2, 1, 21);
        // Flow 0 takes one of its two slots, then its other waiter leaves: its turn ends.
        assert_eq!(q.promote_next(|_, _| 0).unwrap().ticket, 1);
        let _ = a;
        let second = WaiterKey {
            index: 1,
            ticket: 2,
        };
        assert_eq!(q.remove(second), Some((Left::Waiting, 0)));
        // Flow 1's only waiter leaves before its turn: the ring skips it.
        assert_eq!(q.remove(c), Some((Left::Waiting, 1)));
        assert_eq!(tickets_in_order(&q), [21]);
        // Flow 0 comes back at the back of the ring, with a fresh turn.
        push(&mut q, 0, 2, 3);
        push(&mut q, 0, 2, 4);
        assert_eq!(drain(&mut q), [21, 3, 4]);
        assert!(
            q.nodes
                .iter()
                .all(|(_, n)| matches!(n.place, Place::Promoted { .. }))
        );
    }
}
