//! Micro-benchmarks of the admission gate (`turnstile_gate::Gate`) against
//! `tokio::sync::Semaphore`, all in one criterion group so they are measured side by side:
//!
//! - `uncontended/*`: admit + release with nobody waiting (`acquire().await`, drop the lease);
//! - `handoff/*`: one lease held, one waiter queued; the holder releases, the waiter is promoted
//!   and picks its lease up — the measured cycle, driven by hand with a no-op waker;
//! - `enqueue_cancel/*/N`: queue one more waiter and cancel it (drop its future) while N others
//!   are already queued (the cost should not depend on N);
//! - `cancel_oldest_enqueue/gate/N`: the same queue length, but the waiter cancelled is the oldest
//!   (the other end of the queue) and a new one joins at the back;
//! - `ref/*`: the parts a queued gate waiter is made of, to see where its time goes: a clock read
//!   (`std::time::Instant` and `quanta`, the gate's clock),
//!   a boxed tokio `Sleep` registered (first poll) and cancelled (drop) while N others are
//!   registered, and a `BTreeMap<u64, Option<Waker>>` insert + remove at the back with N entries.
//!
//! Waiters are queued without a task each: their futures are polled once by hand with
//! `Waker::noop()` and kept in a collection. The gate's deadline timers need a tokio runtime
//! context, so the hand-driven benchmarks enter a current-thread runtime with time enabled (it is
//! never driven, so no deadline fires).

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::hint::black_box;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;
use turnstile_gate::{Acquire, Gate, GateConfig, Lease};

/// The longest wait deadline the gate accepts: no queued waiter times out during a benchmark.
const LONG_WAIT: Duration = Duration::from_secs(300);
/// Queue lengths of the enqueue+cancel benchmark. The gate holds at most 100,000 waiters, so the
/// last point queues 99,999 others: with the measured waiter the queue is then exactly full.
const QUEUED: [usize; 4] = [0, 1_000, 10_000, 99_999];

fn gate(max_active: usize, max_waiting: usize) -> Gate {
    Gate::new(GateConfig::new(max_active, max_waiting, LONG_WAIT).expect("valid gate config"))
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime")
}

/// Polls once with a waker that does nothing: the benchmark drives the futures by hand.
fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    f.poll(&mut cx)
}

/// Polls a gate acquisition that must queue.
fn queue(a: &mut Acquire) {
    assert!(
        poll_once(Pin::new(a)).is_pending(),
        "the waiter was not queued"
    );
}

/// A lease taken at once (the gate must have a free slot and no waiter).
fn admit(gate: &Gate) -> Lease {
    match poll_once(pin!(gate.acquire())) {
        Poll::Ready(Ok(lease)) => lease,
        _ => panic!("expected an immediate lease"),
    }
}

fn uncontended(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let rt = runtime();
    let g = gate(1, 0);
    c.bench_function("uncontended/gate", |b| {
        b.to_async(&rt).iter(|| async {
            let lease = g.acquire().await.expect("uncontended gate admits");
            drop(black_box(lease));
        })
    });
    let sem = Semaphore::new(1);
    c.bench_function("uncontended/semaphore", |b| {
        b.to_async(&rt).iter(|| async {
            let permit = sem.acquire().await.expect("semaphore is open");
            drop(black_box(permit));
        })
    });
}

/// `iters` hand-off cycles through the gate: queue a waiter behind the held lease, release the
/// lease (promoting the waiter), and have the waiter pick up its lease, which becomes the held one.
fn handoff_gate(iters: u64) -> Duration {
    let g = gate(1, 1);
    let mut held = admit(&g);
    let start = Instant::now();
    for _ in 0..iters {
        let mut waiter = g.acquire();
        queue(&mut waiter);
        drop(held);
        held = match poll_once(Pin::new(&mut waiter)) {
            Poll::Ready(Ok(lease)) => lease,
            _ => panic!("the waiter was not promoted"),
        };
    }
    let elapsed = start.elapsed();
    drop(held);
    elapsed
}

/// The same cycle with a tokio semaphore of one permit.
fn handoff_semaphore(iters: u64) -> Duration {
    let sem = Semaphore::new(1);
    let mut held = sem.try_acquire().expect("a free permit");
    let start = Instant::now();
    for _ in 0..iters {
        let mut waiter = pin!(sem.acquire());
        assert!(poll_once(waiter.as_mut()).is_pending(), "not queued");
        drop(held);
        held = match poll_once(waiter.as_mut()) {
            Poll::Ready(Ok(permit)) => permit,
            _ => panic!("the waiter did not get the permit"),
        };
    }
    let elapsed = start.elapsed();
    drop(held);
    elapsed
}

fn handoff(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let rt = runtime();
    let _context = rt.enter();
    c.bench_function("handoff/gate", |b| b.iter_custom(handoff_gate));
    c.bench_function("handoff/semaphore", |b| b.iter_custom(handoff_semaphore));
}

fn enqueue_cancel(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let rt = runtime();
    let _context = rt.enter();
    for n in QUEUED {
        let g = gate(1, 100_000);
        let _held = admit(&g);
        let mut others: VecDeque<Acquire> = (0..n).map(|_| g.acquire()).collect();
        others.iter_mut().for_each(queue);
        assert_eq!(g.snapshot().waiting, n);
        c.bench_with_input(BenchmarkId::new("enqueue_cancel/gate", n), &n, |b, _| {
            b.iter(|| {
                let mut waiter = g.acquire();
                queue(&mut waiter);
                drop(black_box(waiter));
            })
        });
        if n > 0 {
            // Cancel at the front of the queue instead, and join at the back: the queue length
            // stays `n`, every cancellation removes the oldest ticket.
            c.bench_with_input(
                BenchmarkId::new("cancel_oldest_enqueue/gate", n),
                &n,
                |b, _| {
                    b.iter(|| {
                        drop(black_box(others.pop_front()));
                        let mut waiter = g.acquire();
                        queue(&mut waiter);
                        others.push_back(waiter);
                    })
                },
            );
        }
        assert_eq!(g.snapshot().waiting, n);
        drop(others);
    }
    for n in QUEUED {
        let sem = Semaphore::new(1);
        let _held = sem.try_acquire().expect("a free permit");
        let mut others: Vec<Pin<Box<_>>> = (0..n).map(|_| Box::pin(sem.acquire())).collect();
        for w in &mut others {
            assert!(poll_once(w.as_mut()).is_pending(), "not queued");
        }
        c.bench_with_input(
            BenchmarkId::new("enqueue_cancel/semaphore", n),
            &n,
            |b, _| {
                b.iter(|| {
                    // Dropped (cancelled) at the end of the closure.
                    let mut waiter = pin!(sem.acquire());
                    assert!(poll_once(waiter.as_mut()).is_pending(), "not queued");
                })
            },
        );
        drop(others);
    }
}

/// The parts of a queued waiter, measured alone.
fn parts(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    c.bench_function("ref/instant_now", |b| b.iter(Instant::now));
    // The clock the gate stamps leases with.
    c.bench_function("ref/quanta_now", |b| b.iter(quanta::Instant::now));
    let rt = runtime();
    let _context = rt.enter();
    for n in QUEUED {
        let mut others: Vec<Pin<Box<tokio::time::Sleep>>> = (0..n)
            .map(|_| Box::pin(tokio::time::sleep(LONG_WAIT)))
            .collect();
        for s in &mut others {
            assert!(poll_once(s.as_mut()).is_pending());
        }
        c.bench_with_input(
            BenchmarkId::new("ref/sleep_register_cancel", n),
            &n,
            |b, _| {
                b.iter(|| {
                    let mut sleep = Box::pin(tokio::time::sleep(LONG_WAIT));
                    assert!(poll_once(sleep.as_mut()).is_pending());
                    drop(black_box(sleep));
                })
            },
        );
        drop(others);
    }
    for n in QUEUED {
        let mut map: BTreeMap<u64, Option<Waker>> = (0..n as u64)
            .map(|k| (k, Some(Waker::noop().clone())))
            .collect();
        let mut next = n as u64;
        c.bench_with_input(
            BenchmarkId::new("ref/btreemap_insert_remove", n),
            &n,
            |b, _| {
                b.iter(|| {
                    next += 1;
                    map.insert(black_box(next), Some(Waker::noop().clone()));
                    black_box(map.remove(&next));
                })
            },
        );
    }
}

fn bench_gate(c: &mut Criterion) {
    let mut group = c.benchmark_group("gate");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    uncontended(&mut group);
    handoff(&mut group);
    enqueue_cancel(&mut group);
    parts(&mut group);
    group.finish();
}

criterion_group!(benches, bench_gate);
criterion_main!(benches);
