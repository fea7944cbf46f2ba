//! Unit tests of the gate: admission, refusal, deadlines, cancellation, FIFO, and a property
//! test over random sequences. Time is paused (tokio test-util) so deadlines are exact.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::*;

fn gate(max_active: usize, max_waiting: usize, wait_ms: u64) -> Gate {
    Gate::new(GateConfig::new(max_active, max_waiting, Duration::from_millis(wait_ms)).unwrap())
}

/// Polls once with a waker that does nothing: the test drives the futures by hand.
fn poll_once(f: &mut Acquire) -> Poll<Result<Lease, Refusal>> {
    let mut cx = Context::from_waker(Waker::noop());
    Pin::new(f).poll(&mut cx)
}

fn statuses(gate: &Gate) -> Vec<EventStatus> {
    gate.snapshot().events.iter().map(|e| e.status).collect()
}

use EventStatus::*;

#[tokio::test]
async fn admits_at_once_and_releases_on_drop() {
    let gate = gate(2, 0, 100);
    let a = gate.acquire().await.unwrap();
    let b = gate.acquire().await.unwrap();
    assert_eq!(gate.snapshot().active, 2);
    assert_eq!(gate.snapshot().leases.len(), 2);
    drop(a);
    drop(b);
    let s = gate.snapshot();
    assert_eq!((s.active, s.waiting), (0, 0));
    assert_eq!(statuses(&gate), [Admitted, Admitted, Released, Released]);
    let counts: Vec<(usize, usize)> = s.events.iter().map(|e| (e.active, e.waiting)).collect();
    assert_eq!(counts, [(1, 0), (2, 0), (1, 0), (0, 0)]);
}

#[tokio::test]
async fn a_refused_acquire_never_runs_the_guarded_body() {
    let gate = gate(1, 0, 100);
    let ran = AtomicUsize::new(0);
    let _held = gate.acquire().await.unwrap();
    match gate.acquire().await {
        Ok(_lease) => {
            ran.fetch_add(1, Ordering::SeqCst);
        }
        Err(refusal) => {
            assert!(matches!(refusal, Refusal::QueueFull { .. }));
            assert!(refusal.retry_after() >= Duration::from_secs(1));
        }
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(statuses(&gate), [Admitted, QueueFull]);
    assert_eq!(gate.snapshot().active, 1);
}

#[tokio::test(start_paused = true)]
async fn an_expired_waiter_is_removed_and_refused() {
    let gate = gate(1, 1, 150);
    let held = gate.acquire().await.unwrap();
    let waiter = tokio::spawn({
        let gate = gate.clone();
        async move { gate.acquire().await.map(|_| ()) }
    });
    // Time is paused: the waiter's deadline fires only when the runtime has nothing else to do,
    // after the waiter has queued; auto-advance then jumps straight to it.
    let refusal = waiter.await.unwrap().unwrap_err();
    assert!(matches!(refusal, Refusal::WaitTimeout { .. }));
    let s = gate.snapshot();
    assert_eq!((s.active, s.waiting), (1, 0));
    assert_eq!(statuses(&gate), [Admitted, Queued, WaitTimeout]);
    drop(held);
    assert_eq!(statuses(&gate), [Admitted, Queued, WaitTimeout, Released]);
    assert_eq!(gate.snapshot().active, 0);
}

#[tokio::test]
async fn a_cancelled_waiter_is_removed() {
    let gate = gate(1, 4, 60_000);
    let held = gate.acquire().await.unwrap();
    let mut waiter = gate.acquire();
    assert!(poll_once(&mut waiter).is_pending());
    assert_eq!(gate.snapshot().waiting, 1);
    drop(waiter);
    let s = gate.snapshot();
    assert_eq!((s.active, s.waiting), (1, 0));
    drop(held);
    // Nobody was promoted: the cancelled waiter is really gone.
    assert_eq!(statuses(&gate), [Admitted, Queued, WaitCancelled, Released]);
    assert_eq!(gate.snapshot().active, 0);
}

#[tokio::test]
async fn a_lease_promoted_to_a_cancelled_waiter_is_released_at_once() {
    let gate = gate(1, 4, 60_000);
    let held = gate.acquire().await.unwrap();
    let mut b = gate.acquire();
    let mut c = gate.acquire();
    assert!(poll_once(&mut b).is_pending());
    assert!(poll_once(&mut c).is_pending());
    // The release promotes B, but B's task is cancelled before it picks the lease up.
    drop(held);
    assert_eq!(gate.snapshot().active, 1);
    drop(b);
    // B's lease went straight on to C: capacity did not leak, FIFO held.
    let s = gate.snapshot();
    assert_eq!((s.active, s.waiting), (1, 0));
    let lease = match poll_once(&mut c) {
        Poll::Ready(Ok(lease)) => lease,
        other => panic!(
            "C should hold the lease, got {:?}",
            other.map(|r| r.map(|_| ()))
        ),
    };
    drop(lease);
    assert_eq!(
        statuses(&gate),
        [
            Admitted, Queued, Queued, Released, Promoted, Released, Promoted, Released
        ]
    );
    assert_eq!(gate.snapshot().active, 0);
}

#[tokio::test]
async fn waiters_are_served_in_fifo_order() {
    let gate = gate(1, 100, 60_000);
    let mut current = gate.acquire().await.unwrap();
    let mut waiters: Vec<Acquire> = (0..50).map(|_| gate.acquire()).collect();
    for w in &mut waiters {
        assert!(poll_once(w).is_pending());
    }
    let mut served = Vec::new();
    for _ in 0..50 {
        drop(current);
        let mut granted = None;
        for (i, w) in waiters.iter_mut().enumerate() {
            if served.contains(&i) {
                continue;
            }
            if let Poll::Ready(result) = poll_once(w) {
                assert!(granted.is_none(), "two waiters granted at once");
                granted = Some((i, result.unwrap()));
            }
        }
        let (i, lease) = granted.expect("a waiter is granted per release");
        served.push(i);
        current = lease;
    }
    assert_eq!(served, (0..50).collect::<Vec<_>>());
    drop(current);
    assert_eq!(gate.snapshot().active, 0);
}

#[tokio::test]
async fn newcomers_do_not_barge_while_anyone_waits() {
    let gate = gate(1, 4, 60_000);
    let held = gate.acquire().await.unwrap();
    let mut b = gate.acquire();
    assert!(poll_once(&mut b).is_pending());
    drop(held);
    // The slot went to B: a newcomer queues behind, even though B has not picked it up yet.
    let mut newcomer = gate.acquire();
    assert!(poll_once(&mut newcomer).is_pending());
    assert!(matches!(poll_once(&mut b), Poll::Ready(Ok(_))));
}

/// A client watch that outlives its lease must not mark the next lease that reuses the slot.
#[tokio::test]
async fn a_stale_client_watch_does_not_mark_the_next_lease() {
    let gate = gate(1, 0, 100);
    let first = gate.acquire().await.unwrap();
    let watch = first.client_watch();
    drop(first);
    let second = gate.acquire().await.unwrap();
    drop(watch);
    let s = gate.snapshot();
    assert_eq!(s.active, 1);
    assert_eq!(
        s.client_gone, 0,
        "the second request's client is still there"
    );
    assert_eq!(s.leases[0].ticket, second.ticket());
}

/// The worker really blocks (on a channel, not a sleep); the task awaiting it is cancelled; the
/// slot stays held until the worker returns, and is released exactly then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_waiting_task_does_not_release_a_running_workers_lease() {
    let gate = gate(1, 4, 60_000);
    let (unblock, blocked) = std::sync::mpsc::channel::<()>();
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let (finished_tx, finished) = tokio::sync::oneshot::channel::<()>();
    let handler = tokio::spawn({
        let gate = gate.clone();
        async move {
            let lease = gate.acquire().await.unwrap();
            let watch = lease.client_watch();
            let worker = tokio::task::spawn_blocking(move || {
                let _ = started_tx.send(());
                blocked.recv().unwrap();
                drop(lease);
                let _ = finished_tx.send(());
            });
            worker.await.unwrap();
            watch.disarm();
        }
    });
    started.await.unwrap();
    handler.abort();
    assert!(handler.await.unwrap_err().is_cancelled());
    let s = gate.snapshot();
    assert_eq!(
        s.active, 1,
        "the lease was released with the task, not the worker"
    );
    assert_eq!(s.client_gone, 1);
    assert_eq!(statuses(&gate), [Admitted]);
    unblock.send(()).unwrap();
    finished.await.unwrap();
    let s = gate.snapshot();
    assert_eq!((s.active, s.client_gone), (0, 0));
    assert_eq!(statuses(&gate), [Admitted, Released]);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Acquire,
        PollAll,
        Cancel(usize),
        Release(usize),
        Advance(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => Just(Op::Acquire),
            3 => Just(Op::PollAll),
            1 => any::<usize>().prop_map(Op::Cancel),
            2 => any::<usize>().prop_map(Op::Release),
            1 => (1u64..300).prop_map(Op::Advance),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn random_sequences_keep_the_invariants(
            max_active in 1usize..4,
            max_waiting in 0usize..4,
            ops in proptest::collection::vec(op(), 1..30),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap();
            rt.block_on(async move {
                let gate = gate(max_active, max_waiting, 200);
                // Each pending acquisition remembers whether it ever queued.
                let mut pending: Vec<(Acquire, bool)> = Vec::new();
                let mut leases: Vec<Lease> = Vec::new();
                let mut granted_from_queue: Vec<u64> = Vec::new();
                let mut acquires = 0u64;
                for op in ops {
                    match op {
                        Op::Acquire => {
                            acquires += 1;
                            pending.push((gate.acquire(), false));
                        }
                        Op::PollAll => {}
                        Op::Cancel(i) if !pending.is_empty() => {
                            let i = i % pending.len();
                            drop(pending.remove(i));
                        }
                        Op::Release(i) if !leases.is_empty() => {
                            let i = i % leases.len();
                            drop(leases.remove(i));
                        }
                        Op::Advance(ms) => tokio::time::advance(Duration::from_millis(ms)).await,
                        _ => {}
                    }
                    // Poll every pending acquisition in creation order.
                    let mut still = Vec::new();
                    for (mut f, queued) in pending.drain(..) {
                        match poll_once(&mut f) {
                            Poll::Pending => still.push((f, true)),
                            Poll::Ready(Ok(lease)) => {
                                if queued {
                                    granted_from_queue.push(lease.ticket());
                                }
                                leases.push(lease);
                            }
                            Poll::Ready(Err(_)) => {}
                        }
                    }
                    pending = still;
                    let s = gate.snapshot();
                    prop_assert!(s.active <= max_active);
                    prop_assert!(s.waiting <= max_waiting);
                    prop_assert_eq!(s.active, s.leases.len());
                    prop_assert!(leases.len() <= s.active);
                }
                // FIFO: waiters got their leases in arrival (ticket) order.
                prop_assert!(
                    granted_from_queue.windows(2).all(|w| w[0] < w[1]),
                    "not FIFO: {:?}", granted_from_queue
                );
                drop(pending);
                drop(leases);
                let s = gate.snapshot();
                prop_assert_eq!((s.active, s.waiting), (0, 0));
                // Every lease handed out was released exactly once (the log holds them all).
                prop_assert!(s.events.len() < MAX_EVENTS);
                let released = s.events.iter().filter(|e| e.status == Released).count();
                let handed_out = s.events.iter().filter(|e| matches!(e.status, Admitted | Promoted)).count();
                prop_assert_eq!(released, handed_out);
                // Every request ended in exactly one outcome, and every lease was released.
                let t = s.totals;
                prop_assert_eq!(t.admitted + t.queue_full + t.wait_timeout + t.cancelled, acquires);
                prop_assert_eq!(t.released as usize, released);
                prop_assert!(t.admitted <= t.released && t.promoted <= t.admitted);
                Ok(())
            })?;
        }

        /// With flows: the same, plus FIFO within each flow, every flow's lane within its
        /// bound, the flows' counts adding up to the gate's, and no flow left once idle.
        #[test]
        fn random_sequences_with_flows_keep_the_invariants(
            max_active in 1usize..4,
            max_waiting in 0usize..6,
            per_flow in 0usize..3,
            ops in proptest::collection::vec((op(), 0usize..3), 1..40),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap();
            rt.block_on(async move {
                let config = GateConfig::new(max_active, max_waiting, Duration::from_millis(200)).unwrap();
                let weights = [("f1".to_owned(), 2)].into_iter().collect();
                let gate = Gate::with_flows(config, FlowConfig::new(3, per_flow, weights, 1).unwrap());
                let names = ["f0", "f1", "f2"];
                let mut pending: Vec<(Acquire, bool, usize)> = Vec::new();
                let mut leases: Vec<Lease> = Vec::new();
                let mut granted_from_queue: Vec<Vec<u64>> = vec![Vec::new(); 3];
                let mut acquires = 0u64;
                for (op, flow) in ops {
                    match op {
                        Op::Acquire => {
                            acquires += 1;
                            pending.push((gate.acquire_in(names[flow]), false, flow));
                        }
                        Op::PollAll => {}
                        Op::Cancel(i) if !pending.is_empty() => {
                            let i = i % pending.len();
                            drop(pending.remove(i));
                        }
                        Op::Release(i) if !leases.is_empty() => {
                            let i = i % leases.len();
                            drop(leases.remove(i));
                        }
                        Op::Advance(ms) => tokio::time::advance(Duration::from_millis(ms)).await,
                        _ => {}
                    }
                    let mut still = Vec::new();
                    for (mut f, queued, flow) in pending.drain(..) {
                        match poll_once(&mut f) {
                            Poll::Pending => still.push((f, true, flow)),
                            Poll::Ready(Ok(lease)) => {
                                if queued {
                                    granted_from_queue[flow].push(lease.ticket());
                                }
                                leases.push(lease);
                            }
                            Poll::Ready(Err(_)) => {}
                        }
                    }
                    pending = still;
                    let s = gate.snapshot();
                    prop_assert!(s.active <= max_active);
                    prop_assert!(s.waiting <= max_waiting);
                    prop_assert_eq!(s.active, s.flows.iter().map(|f| f.active).sum::<usize>());
                    prop_assert_eq!(s.waiting, s.flows.iter().map(|f| f.waiting).sum::<usize>());
                    prop_assert!(s.flows.iter().all(|f| f.waiting <= per_flow && f.active + f.waiting > 0));
                    prop_assert!(s.flows.len() <= 3);
                }
                for (flow, granted) in granted_from_queue.iter().enumerate() {
                    prop_assert!(granted.windows(2).all(|w| w[0] < w[1]), "flow {} not FIFO: {:?}", flow, granted);
                }
                drop(pending);
                drop(leases);
                let s = gate.snapshot();
                prop_assert_eq!((s.active, s.waiting), (0, 0));
                prop_assert!(s.flows.is_empty(), "{:?}", s.flows);
                let t = s.totals;
                prop_assert_eq!(t.admitted + t.queue_full + t.wait_timeout + t.cancelled, acquires);
                prop_assert!(t.admitted <= t.released && t.promoted <= t.admitted);
                Ok(())
            })?;
        }
    }
}

#[tokio::test]
async fn promotions_carry_the_wait_and_releases_the_hold() {
    let gate = gate(1, 1, 60_000);
    let first = gate.acquire().await.unwrap();
    let mut second = gate.acquire();
    assert!(poll_once(&mut second).is_pending());
    // Real time must pass: the gate's clock is not tokio's.
    std::thread::sleep(Duration::from_millis(5));
    drop(first);
    let second = match poll_once(&mut second) {
        Poll::Ready(lease) => lease.unwrap(),
        Poll::Pending => panic!("promoted on release"),
    };
    drop(second);
    let events = gate.snapshot().events;
    let took: Vec<(EventStatus, bool)> = events
        .iter()
        .map(|e| (e.status, e.took_us.is_some()))
        .collect();
    assert_eq!(
        took,
        [
            (Admitted, false),
            (Queued, false),
            (Released, true),
            (Promoted, true),
            (Released, true)
        ]
    );
    assert!(events[2].took_us.unwrap() >= 5_000, "{events:?}");
    assert!(events[3].took_us.unwrap() >= 5_000, "{events:?}");
    let after = gate.events_after(3);
    assert_eq!((after.missed, after.events.len()), (0, 2));
    assert_eq!(gate.last_event_order(), 5);
}

fn flow_gate(max_active: usize, max_waiting: usize, flows: FlowConfig) -> Gate {
    Gate::with_flows(
        GateConfig::new(max_active, max_waiting, Duration::from_secs(60)).unwrap(),
        flows,
    )
}

fn flows(max_flows: usize, per_flow: usize, weights: &[(&str, u32)]) -> FlowConfig {
    let weights = weights.iter().map(|(n, w)| ((*n).to_owned(), *w)).collect();
    FlowConfig::new(max_flows, per_flow, weights, 1).unwrap()
}

/// Releases the held lease again and again, each time polling every waiter still waiting;
/// returns the names of the waiters in the order they were granted.
fn serve_all(mut held: Lease, mut waiters: Vec<(&'static str, Acquire)>) -> Vec<&'static str> {
    let mut order = Vec::new();
    while !waiters.is_empty() {
        drop(held);
        let mut granted = None;
        for (i, (_, w)) in waiters.iter_mut().enumerate() {
            if let Poll::Ready(result) = poll_once(w) {
                assert!(granted.is_none(), "two waiters granted at once");
                granted = Some((i, result.unwrap()));
            }
        }
        let (i, lease) = granted.expect("a waiter is granted per release");
        order.push(waiters.remove(i).0);
        held = lease;
    }
    order
}

#[tokio::test]
async fn a_flood_in_one_flow_does_not_hold_up_another_and_each_flow_stays_fifo() {
    let gate = flow_gate(1, 100, flows(8, 100, &[]));
    let held = gate.acquire_in("noisy").await.unwrap();
    let mut waiters = Vec::new();
    for name in ["n1", "n2", "n3", "n4", "n5"] {
        waiters.push((name, gate.acquire_in("noisy")));
    }
    waiters.push(("q1", gate.acquire_in("quiet")));
    waiters.push(("q2", gate.acquire_in("quiet")));
    for (_, w) in &mut waiters {
        assert!(poll_once(w).is_pending());
    }
    let s = gate.snapshot();
    let lanes: Vec<(&str, usize, usize)> = s
        .flows
        .iter()
        .map(|f| (f.name.as_str(), f.active, f.waiting))
        .collect();
    assert_eq!(lanes, [("noisy", 1, 5), ("quiet", 0, 2)]);
    assert_eq!(
        serve_all(held, waiters),
        ["n1", "q1", "n2", "q2", "n3", "n4", "n5"]
    );
}

#[tokio::test]
async fn weights_give_a_flow_that_many_slots_per_turn() {
    let gate = flow_gate(1, 100, flows(8, 100, &[("interactive", 3)]));
    let held = gate.acquire_in("batch").await.unwrap();
    let mut waiters = Vec::new();
    for (b, i) in [("b1", "i1"), ("b2", "i2"), ("b3", "i3"), ("b4", "i4")] {
        waiters.push((b, gate.acquire_in("batch")));
        waiters.push((i, gate.acquire_in("interactive")));
    }
    for (_, w) in &mut waiters {
        assert!(poll_once(w).is_pending());
    }
    assert_eq!(
        serve_all(held, waiters),
        ["b1", "i1", "i2", "i3", "b2", "i4", "b3", "b4"]
    );
    let s = gate.snapshot();
    assert!(
        s.flows.is_empty(),
        "idle flows are forgotten: {:?}",
        s.flows
    );
}

#[tokio::test]
async fn a_full_lane_refuses_its_flow_only_and_says_so() {
    let gate = flow_gate(1, 10, flows(8, 2, &[]));
    let _held = gate.acquire_in("a").await.unwrap();
    let mut a1 = gate.acquire_in("a");
    let mut a2 = gate.acquire_in("a");
    assert!(poll_once(&mut a1).is_pending() && poll_once(&mut a2).is_pending());
    match poll_once(&mut gate.acquire_in("a")) {
        Poll::Ready(Err(Refusal::FlowQueueFull { .. })) => {}
        other => panic!("expected the flow's lane full, got {other:?}"),
    }
    let mut b1 = gate.acquire_in("b");
    assert!(poll_once(&mut b1).is_pending(), "another flow still queues");
    let s = gate.snapshot();
    assert_eq!(s.totals.queue_full, 1);
    let a = s.flows.iter().find(|f| f.name == "a").unwrap();
    assert_eq!((a.waiting, a.queue_full), (2, 1));
}

#[tokio::test]
async fn past_max_flows_new_names_share_the_overflow_flow() {
    let gate = flow_gate(1, 100, flows(2, 100, &[]));
    let held = gate.acquire_in("a").await.unwrap();
    let mut waiters = Vec::new();
    for (name, flow) in [
        ("a1", "a"),
        ("b1", "b"),
        ("c1", "c"),
        ("d1", "d"),
        ("b2", "b"),
    ] {
        waiters.push((name, gate.acquire_in(flow)));
    }
    for (_, w) in &mut waiters {
        assert!(poll_once(w).is_pending());
    }
    let names: Vec<(String, usize)> = gate
        .snapshot()
        .flows
        .into_iter()
        .map(|f| (f.name, f.waiting))
        .collect();
    assert_eq!(
        names,
        [
            ("(overflow)".to_owned(), 2),
            ("a".to_owned(), 1),
            ("b".to_owned(), 2)
        ]
    );
    // Three lanes in turn: a, b, the overflow (c and d, in their order), and b again.
    assert_eq!(serve_all(held, waiters), ["a1", "b1", "c1", "b2", "d1"]);
}

#[tokio::test]
async fn a_waiter_leaving_mid_lane_leaves_nothing_behind() {
    let gate = flow_gate(1, 100, flows(8, 100, &[]));
    let held = gate.acquire_in("busy").await.unwrap();
    let mut waiters = Vec::new();
    for name in ["x1", "x2", "x3"] {
        waiters.push((name, gate.acquire_in("busy")));
    }
    waiters.push(("y1", gate.acquire_in("other")));
    for (_, w) in &mut waiters {
        assert!(poll_once(w).is_pending());
    }
    drop(waiters.remove(1)); // x2 leaves mid-lane
    assert_eq!(gate.snapshot().totals.cancelled, 1);
    assert_eq!(serve_all(held, waiters), ["x1", "y1", "x3"]);
    let s = gate.snapshot();
    assert_eq!((s.active, s.waiting), (0, 0));
    assert!(s.flows.is_empty(), "{:?}", s.flows);
    assert!(matches!(
        poll_once(&mut gate.acquire_in("busy")),
        Poll::Ready(Ok(_))
    ));
}

#[tokio::test]
async fn with_flows_off_a_flow_name_changes_nothing() {
    let gate = gate(1, 100, 60_000);
    let held = gate.acquire_in("noisy").await.unwrap();
    let mut waiters = Vec::new();
    for (name, flow) in [
        ("n1", "noisy"),
        ("n2", "noisy"),
        ("q1", "quiet"),
        ("n3", "noisy"),
    ] {
        waiters.push((name, gate.acquire_in(flow)));
    }
    for (_, w) in &mut waiters {
        assert!(poll_once(w).is_pending());
    }
    assert!(gate.snapshot().flows.is_empty(), "no flows shown when off");
    assert_eq!(serve_all(held, waiters), ["n1", "n2", "q1", "n3"]);
}

/// The adaptive limit learns from the work's own time (a plugin call's execution), not from how
/// long the lease was held (which includes what the holder did first, such as waiting for a
/// global lease); a lease given back without its work having run is no sample at all.
#[tokio::test]
async fn the_adaptive_limit_samples_the_work_time_and_never_a_lease_that_did_not_run() {
    let adaptive = AdaptiveConfig::new(1, 64, WINDOW, 1.2).unwrap();
    for reported in [Some(Duration::from_millis(1)), None] {
        let gate = Gate::with_options(
            GateConfig::new(64, 0, Duration::from_millis(100)).unwrap(),
            GateOptions {
                flows: None,
                adaptive: Some(adaptive),
            },
        );
        let mut leases = Vec::new();
        for _ in 0..WINDOW {
            leases.push(gate.acquire().await.unwrap());
        }
        // Held 30 ms (real time: the gate's clock is not tokio's).
        std::thread::sleep(Duration::from_millis(30));
        for mut lease in leases {
            if let Some(took) = reported {
                lease.worked(took);
            }
        }
        let recent = gate.snapshot().adaptive.unwrap().recent_ms;
        match reported {
            Some(_) => assert!((recent.unwrap() - 1.0).abs() < 1e-9, "{recent:?}"),
            None => assert_eq!(recent, None, "a lease that never ran is no sample"),
        }
    }
}
