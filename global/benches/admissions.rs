//! What one Redis sustains and what an admission adds: acquire + release of a global lease
//! against a `redis-server` on loopback (started here, no persistence), from 1 to 256
//! concurrent tasks in one process, 3 s each, the limit set high so that nobody waits. Prints
//! admissions per second and the acquire's p50 / p99 for each concurrency.
//!
//! `cargo bench -p turnstile-global --bench admissions` (needs `redis-server`: tests/setup.sh)
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use turnstile_global::{FailureMode, GlobalConfig, GlobalGate, GlobalPass};

fn main() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut redis = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server (tests/setup.sh installs it)");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let gate = GlobalGate::new(GlobalConfig {
            url: format!("redis://127.0.0.1:{port}"),
            max_active: 1_000_000,
            max_waiting: 1_000_000,
            key: "bench".into(),
            lease_ttl: Duration::from_secs(10),
            failure: FailureMode::Closed,
        })
        .unwrap();
        gate.start().unwrap();
        // Until Redis answers.
        loop {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
            if let Ok(GlobalPass::Lease(_)) = gate.acquire(deadline).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!("| concurrent tasks | admissions/s | acquire p50 | acquire p99 |");
        println!("| --- | --- | --- | --- |");
        for tasks in [1usize, 4, 16, 64, 256] {
            let stop = Arc::new(AtomicBool::new(false));
            let started = Instant::now();
            let workers: Vec<_> = (0..tasks)
                .map(|_| {
                    let (gate, stop) = (gate.clone(), Arc::clone(&stop));
                    tokio::spawn(async move {
                        let mut latencies = Vec::new();
                        while !stop.load(Ordering::Relaxed) {
                            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
                            let asked = Instant::now();
                            match gate.acquire(deadline).await {
                                Ok(GlobalPass::Lease(lease)) => {
                                    latencies.push(asked.elapsed());
                                    drop(lease);
                                }
                                other => panic!("{other:?}"),
                            }
                        }
                        latencies
                    })
                })
                .collect();
            tokio::time::sleep(Duration::from_secs(3)).await;
            stop.store(true, Ordering::Relaxed);
            let mut all = Vec::new();
            for w in workers {
                all.extend(w.await.unwrap());
            }
            let elapsed = started.elapsed().as_secs_f64();
            all.sort();
            let at = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)];
            println!(
                "| {tasks} | {:.0} | {:.3} ms | {:.3} ms |",
                all.len() as f64 / elapsed,
                at(0.5).as_secs_f64() * 1e3,
                at(0.99).as_secs_f64() * 1e3
            );
            // Let the releases of the last leases land.
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        gate.stop();
    });
    let _ = redis.kill();
    let _ = redis.wait();
}
