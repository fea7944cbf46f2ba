//! Memory per queued waiter (not a criterion measurement): process RSS (`/proc/self/statm`)
//! before and after queueing 100,000 waiters, divided by 100,000.
//!
//! Each measurement runs in a fresh child process (this same binary, re-executed with
//! `TURNSTILE_WAITER_MEMORY_MODE` set), so memory freed by an earlier measurement cannot be reused
//! by a later one and hide its cost. Waiters are queued without a task each: their futures are
//! polled once by hand with `Waker::noop()` and kept in a `Vec` allocated (and so counted) during
//! the measurement; the `Vec`'s share per waiter is the future's own size.

use std::future::Future;
use std::pin::Pin;
use std::process::Command;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::sync::Semaphore;
use turnstile_gate::{Acquire, Gate, GateConfig};

const WAITERS: usize = 100_000;
const MODE_VAR: &str = "TURNSTILE_WAITER_MEMORY_MODE";

fn page_size() -> u64 {
    // The kernel reports it per mapping; every mapping of a normal process uses the base size.
    std::fs::read_to_string("/proc/self/smaps")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("KernelPageSize:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(4096, |kib| kib * 1024)
}

/// Resident set size in bytes: the second field of `/proc/self/statm`, in pages.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("statm has a resident field");
    pages * page_size()
}

fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    f.poll(&mut cx)
}

fn report(what: &str, before: u64, after: u64) {
    let delta = after.saturating_sub(before);
    println!(
        "{what}: RSS {:.1} MiB -> {:.1} MiB, +{delta} bytes for {WAITERS} waiters = {:.1} bytes per waiter",
        before as f64 / (1 << 20) as f64,
        after as f64 / (1 << 20) as f64,
        delta as f64 / WAITERS as f64
    );
}

fn measure_gate() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime");
    let _context = rt.enter();
    let gate = Gate::new(
        GateConfig::new(1, WAITERS, Duration::from_secs(300)).expect("valid gate config"),
    );
    let held = match poll_once(Pin::new(&mut gate.acquire())) {
        Poll::Ready(Ok(lease)) => lease,
        _ => panic!("expected an immediate lease"),
    };
    // Warm up whatever is allocated once (timer wheel levels, the event log, the first nodes).
    {
        let mut warm: Vec<Acquire> = (0..1000).map(|_| gate.acquire()).collect();
        for w in &mut warm {
            assert!(poll_once(Pin::new(w)).is_pending());
        }
    }
    let before = rss_bytes();
    let mut waiters: Vec<Acquire> = Vec::with_capacity(WAITERS);
    for _ in 0..WAITERS {
        let mut w = gate.acquire();
        assert!(poll_once(Pin::new(&mut w)).is_pending(), "not queued");
        waiters.push(w);
    }
    let after = rss_bytes();
    assert_eq!(gate.snapshot().waiting, WAITERS);
    report("gate", before, after);
    drop(waiters);
    drop(held);
}

fn measure_semaphore() {
    let sem = Semaphore::new(1);
    let _held = sem.try_acquire().expect("a free permit");
    {
        let mut warm: Vec<Pin<Box<_>>> = (0..1000).map(|_| Box::pin(sem.acquire())).collect();
        for w in &mut warm {
            assert!(poll_once(w.as_mut()).is_pending());
        }
    }
    let before = rss_bytes();
    // The semaphore's waiter is intrusive and `!Unpin`: each future is boxed to stay in place.
    let mut waiters = Vec::with_capacity(WAITERS);
    for _ in 0..WAITERS {
        let mut w = Box::pin(sem.acquire());
        assert!(poll_once(w.as_mut()).is_pending(), "not queued");
        waiters.push(w);
    }
    let after = rss_bytes();
    report("tokio::sync::Semaphore (boxed futures)", before, after);
    drop(waiters);
}

fn main() {
    match std::env::var(MODE_VAR).as_deref() {
        Ok("gate") => return measure_gate(),
        Ok("semaphore") => return measure_semaphore(),
        _ => {}
    }
    println!(
        "size_of::<turnstile_gate::Acquire>() = {} bytes; size_of::<tokio::time::Sleep>() = {} bytes (boxed per queued waiter); size of a Semaphore::acquire() future = {} bytes; page size {} bytes",
        std::mem::size_of::<Acquire>(),
        std::mem::size_of::<tokio::time::Sleep>(),
        std::mem::size_of_val(&Semaphore::new(1).acquire()),
        page_size()
    );
    let exe = std::env::current_exe().expect("own executable");
    for mode in ["gate", "semaphore"] {
        let status = Command::new(&exe)
            .env(MODE_VAR, mode)
            .status()
            .expect("run the measurement");
        assert!(status.success(), "{mode} measurement failed");
    }
}
