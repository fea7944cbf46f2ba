//! The admission gate end to end: real HTTP, the real `delay` fixture holding a worker thread,
//! ordering established from the server's `/state`, never from sleeps (and, in process, that an
//! invalid request never reaches it).

use std::time::Duration;

use crate::support::{TestApp, TestServer, delay_server, impatient_client, statuses};
use serde_json::{Value, json};

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
    // The reference lab's sequence (A runs, B waits, C is refused, B's deadline passes, A ends),
    // with room for a loaded machine: C has B's whole 2 s deadline to arrive and be refused, and
    // A's 4 s call outlasts that deadline by as much again. (The lab's own 150 ms / 350 ms
    // timings are reproduced by `turnstile drive`.) `queue_full_does_not_depend_on_a_deadline`
    // checks the refusal with no deadline in play.
    let server = delay_server(4000, 2000, &[]).await;
    let a = post(&server);
    server
        .state_when("A running, nobody waiting", |s| {
            s["active"] == 1 && s["waiting"] == 0
        })
        .await;
    let b = post(&server);
    let queued = server.state_when("B waiting", |s| s["waiting"] == 1).await;
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
    assert!(a_body["timing"]["execution_ms"].as_f64().unwrap() >= 4000.0);
    let idle = server
        .state_when("every lease released", |s| s["active"] == 0)
        .await;
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
    assert_eq!(idle["wait_seconds"], 2.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_promoted_when_the_lease_is_released() {
    let server = delay_server(200, 30000, &[]).await;
    let a = post(&server);
    server.state_when("A running", |s| s["active"] == 1).await;
    let b = post(&server);
    server.state_when("B waiting", |s| s["waiting"] == 1).await;
    let (a_status, _, _) = a.await.unwrap();
    let (b_status, _, b_body) = b.await.unwrap();
    assert_eq!((a_status, b_status), (200, 200));
    assert!(b_body["timing"]["queue_ms"].as_f64().unwrap() > 0.0);
    let idle = server
        .state_when("every lease released", |s| s["active"] == 0)
        .await;
    assert_eq!(
        statuses(&idle),
        ["admitted", "queued", "released", "promoted", "released"]
    );
    server.stop().await;
}

/// A full queue refuses at once, whatever any deadline: here the waiter's deadline (60 s) and the
/// running call (5 s) are far longer than anything the test does before it has its refusals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_full_does_not_depend_on_a_deadline() {
    let server = delay_server(5000, 60000, &[]).await;
    let _a = post(&server);
    server.state_when("A running", |s| s["active"] == 1).await;
    let _b = post(&server);
    server.state_when("B waiting", |s| s["waiting"] == 1).await;
    for _ in 0..3 {
        let (status, retry, body) = post(&server).await.unwrap();
        assert_eq!(status, 429, "{body}");
        assert_eq!(body["status"], "queue_full");
        assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
    }
    let state = server.state_when("any state", |_| true).await;
    assert_eq!(
        (state["active"].as_u64(), state["waiting"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        statuses(&state),
        [
            "admitted",
            "queued",
            "queue_full",
            "queue_full",
            "queue_full"
        ]
    );
    // A lease is unfinished work: A's call runs to its end (then B's), and the drain waits.
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_timeout_does_not_release_the_running_workers_lease() {
    let server = delay_server(1500, 1000, &[]).await;
    let impatient = impatient_client(Duration::from_millis(300));
    let error = impatient
        .post(server.url("/retrieve"))
        .json(&json!({"question": "json"}))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    // Right after the client gave up, the worker still runs and still holds its slot.
    let after_timeout = server
        .state_when("the lease marked client_gone", |s| s["client_gone"] == 1)
        .await;
    assert_eq!(after_timeout["active"], 1);
    assert_eq!(after_timeout["leases"][0]["client_gone"], true);
    assert_eq!(statuses(&after_timeout), ["admitted"]);
    // It is released when the plugin call really returns.
    let after_completion = server
        .state_when("the lease released", |s| s["active"] == 0)
        .await;
    assert_eq!(after_completion["client_gone"], 0);
    assert_eq!(statuses(&after_completion), ["admitted", "released"]);
    assert_eq!(after_completion["corpus_sessions_open"], 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_never_take_a_lease() {
    let app = TestApp::load(&["--max-active", "1", "--max-waiting", "0"]).await;
    let (status, _) = app.retrieve(json!({"question": ""})).await;
    assert_eq!(status, 422);
    let state = app.state_when("any state", |_| true).await;
    assert_eq!(state["events"].as_array().unwrap().len(), 0);
    app.stop().await;
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
        let error = crate::support::args(&flags)
            .gate_config()
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(expected), "{error}");
    }
}
