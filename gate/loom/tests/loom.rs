//! A loom model of the gate's races: acquire, cancel, promote and release, run under every
//! interleaving loom explores up to a preemption bound. Run with
//!
//! ```text
//! CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="--cfg loom" \
//!     cargo test --workspace --target x86_64-unknown-linux-gnu --test loom
//! ```
//!
//! (`.ci/run` does; the explicit `--target` keeps `--cfg loom` off build scripts and
//! proc-macros, which `RUSTFLAGS` would also reach, and `--workspace` resolves features as the
//! main build does, so those are reused from it and only the gate and loom are compiled). Each model explores every interleaving
//! with at most [`PREEMPTIONS`] preemptions (tokio's bound for its own models: most concurrency
//! bugs need very few; `LOOM_MAX_PREEMPTIONS` overrides it). Under `--cfg loom` the gate's lock and
//! shared pointers are loom's (`src/sync.rs`), so the model sees every order in which its
//! critical sections can run; a lost wake-up leaves a thread parked in `block_on`, which loom
//! reports as a deadlock. Deadlines never fire in the model: the unit tests cover them on tokio's
//! paused clock.
#![cfg(loom)]
#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use loom::future::block_on;
use loom::thread;
use turnstile_gate::{Acquire, EventStatus, Gate, GateConfig};

/// The preemption bound of every model.
const PREEMPTIONS: usize = 2;

/// Runs `f` under loom with the preemption bound (or `LOOM_MAX_PREEMPTIONS`).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(PREEMPTIONS);
    }
    builder.check(f);
}

fn gate(max_active: usize, max_waiting: usize) -> Gate {
    Gate::new(GateConfig::new(max_active, max_waiting, Duration::from_secs(60)).unwrap())
}

fn poll_once(acquire: &mut Acquire) -> Poll<bool> {
    let mut cx = Context::from_waker(Waker::noop());
    Pin::new(acquire).poll(&mut cx).map(|r| r.is_ok())
}

fn statuses(gate: &Gate) -> Vec<EventStatus> {
    gate.snapshot().events.iter().map(|e| e.status).collect()
}

/// Nothing leaked: no lease out, nobody waiting, and the next request is admitted at once.
fn assert_idle(gate: &Gate) {
    let snapshot = gate.snapshot();
    assert_eq!((snapshot.active, snapshot.waiting), (0, 0), "{snapshot:?}");
    let mut next = gate.acquire();
    assert_eq!(poll_once(&mut next), Poll::Ready(true));
}

/// A waiter is cancelled (its future dropped) while the lease it waits for is released on
/// another thread: either it left the queue before the release, or the release promoted it and
/// the cancellation gave the promoted lease straight back. Never a leaked slot.
#[test]
fn cancel_races_release() {
    model(|| {
        let gate = gate(1, 1);
        let held = block_on(gate.acquire()).unwrap();
        let mut waiter = gate.acquire();
        assert_eq!(poll_once(&mut waiter), Poll::Pending);
        let releaser = thread::spawn(move || drop(held));
        drop(waiter);
        releaser.join().unwrap();
        use EventStatus::*;
        let events = statuses(&gate);
        assert!(
            events == [Admitted, Queued, WaitCancelled, Released]
                || events == [Admitted, Queued, Released, Promoted, Released],
            "{events:?}"
        );
        assert_idle(&gate);
    });
}

/// A waiter parked on another thread is woken by the release that promotes it: no lost wake-up.
#[test]
fn release_promotes_and_wakes_the_waiter() {
    model(|| {
        let gate = gate(1, 1);
        let held = block_on(gate.acquire()).unwrap();
        let waiter_gate = gate.clone();
        let waiter = thread::spawn(move || {
            let lease = block_on(waiter_gate.acquire()).unwrap();
            drop(lease);
        });
        drop(held);
        waiter.join().unwrap();
        assert_idle(&gate);
    });
}

/// Two waiters on two threads and one slot: each gets the slot in turn, at most one lease is out
/// at any time, and all the slots come back.
#[test]
fn two_waiters_share_one_slot() {
    model(|| {
        let gate = gate(1, 2);
        let held = block_on(gate.acquire()).unwrap();
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let gate = gate.clone();
                thread::spawn(move || {
                    let lease = block_on(gate.acquire()).unwrap();
                    assert_eq!(gate.snapshot().active, 1);
                    drop(lease);
                })
            })
            .collect();
        drop(held);
        for w in workers {
            w.join().unwrap();
        }
        assert_idle(&gate);
    });
}

/// Flows: two waiters of two flows on two threads, one slot, and a cancellation of a third
/// waiter in a lane racing the releases. Each waiter gets the slot in turn, the cancelled one
/// leaves its lane (or gives back a promoted lease), and every lane and flow is gone at the end.
#[test]
fn waiters_of_two_flows_share_one_slot_while_one_leaves() {
    model(|| {
        let flows = turnstile_gate::FlowConfig::new(4, 4, Default::default(), 1).unwrap();
        let gate = Gate::with_flows(
            GateConfig::new(1, 4, Duration::from_secs(60)).unwrap(),
            flows,
        );
        let held = block_on(gate.acquire_in("a")).unwrap();
        let mut leaving = gate.acquire_in("a");
        assert_eq!(poll_once(&mut leaving), Poll::Pending);
        let workers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|flow| {
                let gate = gate.clone();
                thread::spawn(move || {
                    let lease = block_on(gate.acquire_in(flow)).unwrap();
                    assert_eq!(gate.snapshot().active, 1);
                    drop(lease);
                })
            })
            .collect();
        drop(held);
        drop(leaving);
        for w in workers {
            w.join().unwrap();
        }
        assert!(
            gate.snapshot().flows.is_empty(),
            "{:?}",
            gate.snapshot().flows
        );
        assert_idle(&gate);
    });
}
