//! The admission gate end to end: real HTTP, the real `delay` fixture holding a worker thread,
//! ordering established from the server's `/state`, never from sleeps.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns fail loudly on purpose

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::TestServer;
use turnstile::components;

/// Polls `/state` until `done` holds (bounded: fails the test after 10 s).
async fn wait_for_state(server: &TestServer, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let state: Value = server.get_json("/state").await;
        if done(&state) {
            return state;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "state never reached: {state}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn statuses(state: &Value) -> Vec<String> {
    state["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap().to_owned())
        .collect()
}

fn post(server: &TestServer) -> tokio::task::JoinHandle<(u16, Option<String>, Value)> {
    let request = server
        .client
        .post(server.url("/retrieve"))
        .json(&json!({"question": "json dumps"}));
    tokio::spawn(async move {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        (status, retry_after, response.json().await.unwrap())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overflow_and_deadline_while_one_request_runs() {
    // The delay is far longer than the deadline, so B's deadline passes while A still runs.
    let server = TestServer::start(&[
        "--plugin",
        components::DELAY,
        "--plugin-config",
        "delay_ms=1500",
        "--max-active",
        "1",
        "--max-waiting",
        "1",
        "--wait-ms",
        "150",
    ])
    .await;
    let a = post(&server);
    wait_for_state(&server, |s| s["active"] == 1 && s["waiting"] == 0).await;
    let b = post(&server);
    let queued = wait_for_state(&server, |s| s["waiting"] == 1).await;
    assert_eq!(queued["active"], 1);
    let (c_status, c_retry, c_body) = post(&server).await.unwrap();
    assert_eq!(c_status, 429);
    assert_eq!(c_body["status"], "queue_full");
    assert!(c_retry.unwrap().parse::<u64>().unwrap() >= 1);
    let (b_status, b_retry, b_body) = b.await.unwrap();
    assert_eq!(b_status, 503);
    assert_eq!(b_body["status"], "wait_timeout");
    assert!(b_retry.unwrap().parse::<u64>().unwrap() >= 1);
    let (a_status, _, a_body) = a.await.unwrap();
    assert_eq!(a_status, 200, "{a_body}");
    assert_eq!(a_body["status"], "completed");
    assert!(a_body["timing"]["execution_ms"].as_f64().unwrap() >= 1500.0);
    let idle = wait_for_state(&server, |s| s["active"] == 0).await;
    assert_eq!(idle["waiting"], 0);
    assert_eq!(
        statuses(&idle),
        [
            "admitted",
            "queued",
            "queue_full",
            "wait_timeout",
            "released"
        ]
    );
    let counts: Vec<(u64, u64)> = idle["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["active"].as_u64().unwrap(),
                e["waiting"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, [(1, 0), (1, 1), (1, 1), (1, 0), (0, 0)]);
    let orders: Vec<u64> = idle["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["order"].as_u64().unwrap())
        .collect();
    assert_eq!(orders, [1, 2, 3, 4, 5]);
    assert_eq!(idle["max_active"], 1);
    assert_eq!(idle["max_waiting"], 1);
    assert_eq!(idle["wait_seconds"], 0.15);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_promoted_when_the_lease_is_released() {
    let server = TestServer::start(&[
        "--plugin",
        components::DELAY,
        "--plugin-config",
        "delay_ms=200",
        "--max-active",
        "1",
        "--max-waiting",
        "1",
        "--wait-ms",
        "30000",
    ])
    .await;
    let a = post(&server);
    wait_for_state(&server, |s| s["active"] == 1).await;
    let b = post(&server);
    wait_for_state(&server, |s| s["waiting"] == 1).await;
    let (a_status, _, _) = a.await.unwrap();
    let (b_status, _, b_body) = b.await.unwrap();
    assert_eq!((a_status, b_status), (200, 200));
    assert!(b_body["timing"]["queue_ms"].as_f64().unwrap() > 0.0);
    let idle = wait_for_state(&server, |s| s["active"] == 0).await;
    assert_eq!(
        statuses(&idle),
        ["admitted", "queued", "released", "promoted", "released"]
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_timeout_does_not_release_the_running_workers_lease() {
    let server = TestServer::start(&[
        "--plugin",
        components::DELAY,
        "--plugin-config",
        "delay_ms=1500",
        "--max-active",
        "1",
        "--max-waiting",
        "1",
        "--wait-ms",
        "1000",
    ])
    .await;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let error = impatient
        .post(server.url("/retrieve"))
        .json(&json!({"question": "json"}))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    // Right after the client gave up, the worker still runs and still holds its slot.
    let after_timeout = wait_for_state(&server, |s| s["client_gone"] == 1).await;
    assert_eq!(after_timeout["active"], 1);
    assert_eq!(after_timeout["leases"][0]["client_gone"], true);
    assert_eq!(statuses(&after_timeout), ["admitted"]);
    // It is released when the plugin call really returns.
    let after_completion = wait_for_state(&server, |s| s["active"] == 0).await;
    assert_eq!(after_completion["client_gone"], 0);
    assert_eq!(statuses(&after_completion), ["admitted", "released"]);
    assert_eq!(after_completion["corpus_sessions_open"], 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_never_take_a_lease() {
    let server = TestServer::start(&["--max-active", "1", "--max-waiting", "0"]).await;
    let (status, _) = server.retrieve(json!({"question": ""})).await;
    assert_eq!(status, 422);
    let state = wait_for_state(&server, |_| true).await;
    assert_eq!(state["events"].as_array().unwrap().len(), 0);
    server.stop().await;
}

#[test]
fn invalid_gate_settings_are_refused_naming_the_flag() {
    for (flags, expected) in [
        (
            ["--max-active", "0"],
            "--max-active: invalid_capacity: max_active must be 1..=1024, got 0",
        ),
        (
            ["--max-waiting", "100001"],
            "--max-waiting: invalid_capacity: max_waiting must be 0..=100000, got 100001",
        ),
        (["--wait-ms", "0"], "--wait-ms: invalid_wait_deadline"),
    ] {
        let error = support::args(&flags).gate_config().unwrap_err();
        assert!(error.starts_with(expected), "{error}");
    }
}
