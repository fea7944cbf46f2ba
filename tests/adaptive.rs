//! `--max-active auto` over real HTTP: the limit rises while calls do not slow down (the delay
//! fixture) and falls when they slow each other down (the cpu fixture, whose calls share the
//! machine's cores), observed in `/state` — its limit and its `limit_changed` events — while
//! every request is answered (a lower limit never cancels a running call).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use turnstile_fixtures as components;

use crate::support::{TestServer, eventually, eventually_within};

/// `clients` closed loops of `/retrieve` until `stop`; each asserts every answer is a 200.
fn clients(
    server: &Arc<TestServer>,
    clients: usize,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<usize>> {
    (0..clients)
        .map(|_| {
            let (server, stop) = (Arc::clone(server), Arc::clone(stop));
            tokio::spawn(async move {
                let mut answered = 0;
                while !stop.load(Ordering::SeqCst) {
                    let (status, body) = server.retrieve(json!({"question": "json dumps"})).await;
                    assert_eq!(status, 200, "{body}");
                    answered += 1;
                }
                answered
            })
        })
        .collect()
}

/// The limit changes `/state`'s events show, in order.
fn limit_changes(state: &Value) -> Vec<u64> {
    state["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "limit_changed")
        .map(|e| e["limit"].as_u64().unwrap())
        .collect()
}

async fn stop_clients(stop: &AtomicBool, clients: Vec<tokio::task::JoinHandle<usize>>) {
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        assert!(c.await.unwrap() > 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_rises_while_calls_keep_their_latency() {
    let server = Arc::new(
        TestServer::start(&[
            "--plugin",
            components::DELAY,
            "--plugin-config",
            "delay_ms=20",
            "--max-active",
            "auto",
            "--max-active-max",
            "16",
            "--max-waiting",
            "64",
            "--wait-ms",
            "60000",
        ])
        .await,
    );
    let state = server.get_json("/state").await;
    assert_eq!(
        state["max_active"], 1,
        "the first window measures at the floor: {state}"
    );
    assert_eq!(state["adaptive"]["max"], 16, "{state}");
    let stop = Arc::new(AtomicBool::new(false));
    let running = clients(&server, 24, &stop);
    let state = eventually("the limit to reach 8", || async {
        let state = server.get_json("/state").await;
        if state["max_active"].as_u64().unwrap() >= 8 {
            Ok(state)
        } else {
            Err(format!("{state}"))
        }
    })
    .await;
    stop_clients(&stop, running).await;
    assert!(
        state["adaptive"]["baseline_ms"].as_f64().unwrap() >= 20.0,
        "{state}"
    );
    let changes = limit_changes(&state);
    assert!(!changes.is_empty(), "{state}");
    assert!(
        changes.windows(2).all(|w| w[0] <= w[1]),
        "only up: {changes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_falls_when_calls_slow_each_other_down_and_no_call_is_cut() {
    let server = Arc::new(
        TestServer::start(&[
            "--plugin",
            components::CPU,
            "--plugin-config",
            "iterations=3000000",
            "--max-active",
            "auto",
            "--max-active-max",
            "32",
            "--max-active-initial",
            "32",
            "--max-waiting",
            "64",
            "--wait-ms",
            "60000",
        ])
        .await,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let running = clients(&server, 24, &stop);
    // After the window at the floor (which measures the baseline), the limit goes to its
    // initial 32 — a change — where 24 calls share two cores and each takes many times its
    // baseline: it comes down, in more changes. Alone this takes seconds; beside the rest of the
    // suite (language components compiling on both cores) the baseline measured at the floor can
    // be inflated by the others' load, and the limit comes down only at a later re-measurement
    // of it (every 40±10 windows): hence a deadline of its own.
    let state = eventually_within(
        Duration::from_secs(90),
        "the limit to come down from 32 to 8 or less",
        || async {
            let state = server.get_json("/state").await;
            let changes = state["adaptive"]["changes"].as_u64().unwrap();
            if changes >= 2 && state["max_active"].as_u64().unwrap() <= 8 {
                Ok(state)
            } else {
                Err(format!("{state}"))
            }
        },
    )
    .await;
    stop_clients(&stop, running).await;
    let recent = state["adaptive"]["recent_ms"].as_f64().unwrap();
    let baseline = state["adaptive"]["baseline_ms"].as_f64().unwrap();
    assert!(baseline > 0.0 && recent > 0.0, "{state}");
    let end = server.get_json("/state").await;
    assert_eq!(end["active"], 0, "{end}");
    assert_eq!(end["totals"]["queue_full"], 0, "{end}");
    assert_eq!(end["totals"]["wait_timeout"], 0, "{end}");
}
