//! Flows (`--flow-header`): over real HTTP, a flood in one flow waits in its own lane and does not
//! hold up another; weights are slots per turn; a full lane refuses its own flow only and says
//! so; `/state` and `/metrics` show each flow. In process: a bad flow name is refused before
//! anything runs, without being echoed, and without flows on the header is ignored.

use std::sync::Arc;

use serde_json::{Value, json};
use turnstile_fixtures as components;

use crate::support::{TestApp, TestServer, eventually};

const HEADER: &str = "x-tenant";

async fn retrieve_as(server: &TestServer, flow: Option<&str>) -> (u16, Value) {
    let mut request = server
        .client
        .post(server.url("/retrieve"))
        .json(&json!({"question": "json dumps"}));
    if let Some(flow) = flow {
        request = request.header(HEADER, flow);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// [`retrieve_as`], in process.
async fn retrieve_in(app: &TestApp, flow: Option<&str>) -> (u16, Value) {
    let mut headers = vec![("content-type", "application/json")];
    headers.extend(flow.map(|flow| (HEADER, flow)));
    app.post(
        "/retrieve",
        &headers,
        json!({"question": "json dumps"}).to_string(),
    )
    .await
}

/// Waits until `/state` shows each of `flows` with (active, waiting).
async fn flows_are(server: &TestServer, flows: &[(&str, u64, u64)]) {
    eventually(&format!("flows {flows:?}"), || async {
        let state = server.get_json("/state").await;
        let shown: Vec<(String, u64, u64)> = state["flows"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_owned(),
                    f["active"].as_u64().unwrap(),
                    f["waiting"].as_u64().unwrap(),
                )
            })
            .collect();
        let wanted: Vec<(String, u64, u64)> = flows
            .iter()
            .map(|(n, a, w)| ((*n).to_owned(), *a, *w))
            .collect();
        if shown == wanted {
            Ok(())
        } else {
            Err(format!("{shown:?}"))
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_waits_in_its_own_lane_and_weights_are_slots_per_turn() {
    let server = Arc::new(
        TestServer::start(&[
            "--plugin",
            components::DELAY,
            "--plugin-config",
            "delay_ms=500",
            "--max-active",
            "1",
            "--max-waiting",
            "20",
            "--wait-ms",
            "60000",
            "--flow-header",
            HEADER,
            "--max-waiting-per-flow",
            "4",
            "--flow-weights",
            "interactive=2",
        ])
        .await,
    );
    // Completion order: with one slot, calls run one at a time, 500 ms each (long enough
    // that the queue is still full while the test, on a loaded machine, adds to it).
    let (done, mut finished) = tokio::sync::mpsc::unbounded_channel::<(&'static str, u16)>();
    let send = |name: &'static str, flow: &'static str| {
        let (server, done) = (Arc::clone(&server), done.clone());
        tokio::spawn(async move {
            let (status, body) = retrieve_as(&server, Some(flow)).await;
            assert_eq!(status, 200, "{name}: {body}");
            done.send((name, status)).unwrap();
        })
    };
    let mut tasks = vec![send("b0", "batch")];
    flows_are(&server, &[("batch", 1, 0)]).await;
    for (i, name) in ["b1", "b2", "b3", "b4"].into_iter().enumerate() {
        tasks.push(send(name, "batch"));
        flows_are(&server, &[("batch", 1, i as u64 + 1)]).await;
    }
    // The batch lane is full: a fifth waiter of batch is refused, naming the limit.
    let (status, refused) = retrieve_as(&server, Some("batch")).await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["status"], "queue_full");
    assert_eq!(refused["limit"], "max_waiting_per_flow", "{refused}");
    // Another flow still queues, in its own lane.
    tasks.push(send("i1", "interactive"));
    flows_are(&server, &[("batch", 1, 4), ("interactive", 0, 1)]).await;
    tasks.push(send("i2", "interactive"));
    flows_are(&server, &[("batch", 1, 4), ("interactive", 0, 2)]).await;
    for task in tasks {
        task.await.unwrap();
    }
    drop(done);
    let mut order = Vec::new();
    while let Some((name, _)) = finished.recv().await {
        order.push(name);
    }
    // The lanes in turn, batch first (it queued first): one of batch, two of interactive
    // (weight 2), then the rest of batch. Plain FIFO would have run i1, i2 last.
    assert_eq!(order, ["b0", "b1", "i1", "i2", "b2", "b3", "b4"]);

    let state = server.get_json("/state").await;
    assert!(
        state.get("flows").is_none(),
        "idle flows are forgotten: {state}"
    );
    let metrics = server.get("/metrics").await.text().await.unwrap();
    for line in [
        r#"turnstile_flow_requests_total{flow="interactive",outcome="admitted"} 2"#,
        r#"turnstile_flow_requests_total{flow="other",outcome="admitted"} 5"#,
        r#"turnstile_flow_requests_total{flow="other",outcome="queue_full"} 1"#,
        r#"turnstile_flow_waiting{flow="interactive"} 0"#,
        r#"turnstile_flow_active{flow="default"} 0"#,
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_flow_name_is_refused_before_anything_runs_and_not_echoed() {
    let app = TestApp::load(&["--flow-header", HEADER]).await;
    for bad in ["two words", "(overflow)", &"x".repeat(65), "<script>"] {
        let (status, body) = retrieve_in(&app, Some(bad)).await;
        assert_eq!(status, 400, "{bad:?}: {body}");
        assert_eq!(body["error"], "invalid_flow", "{body}");
        assert!(
            !body["detail"].as_str().unwrap().contains(bad),
            "the value is echoed: {body}"
        );
    }
    // The header given twice is refused too.
    let (status, _) = app
        .post(
            "/retrieve",
            &[
                ("content-type", "application/json"),
                (HEADER, "a"),
                (HEADER, "b"),
            ],
            json!({"question": "json dumps"}).to_string(),
        )
        .await;
    assert_eq!(status, 400);
    // Nothing reached the gate; a good name and no header both answer.
    let state = app.get_json("/state").await;
    assert_eq!(state["totals"]["admitted"], 0, "{state}");
    assert_eq!(retrieve_in(&app, Some("tenant-1")).await.0, 200);
    assert_eq!(retrieve_in(&app, None).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_flow_header_the_header_is_ignored_and_the_body_unchanged() {
    let app = TestApp::load(&[]).await;
    let (status, body) = retrieve_in(&app, Some("two words")).await;
    assert_eq!(status, 200, "{body}");
    let state = app.get_json("/state").await;
    assert!(state.get("flows").is_none(), "{state}");
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(!metrics.contains("turnstile_flow_"), "{metrics}");
}

/// A peer that is not a trusted proxy cannot name a flow — a weighted one included — however
/// it sends the header: its request is in the default flow, and even a bad value is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_trusted_proxy_names_a_flow() {
    // The in-process peer is 127.0.0.1: trusted by default, not under another --trusted-proxy.
    let elsewhere = TestApp::load(&[
        "--flow-header",
        HEADER,
        "--flow-weights",
        "interactive=8",
        "--trusted-proxy",
        "10.0.0.0/8",
    ])
    .await;
    for flow in ["interactive", "two words"] {
        let (status, body) = retrieve_in(&elsewhere, Some(flow)).await;
        assert_eq!(status, 200, "{flow}: {body}");
    }
    let metrics = elsewhere.get("/metrics").await.text().await.unwrap();
    let line = r#"turnstile_flow_requests_total{flow="default",outcome="admitted"} 2"#;
    assert!(metrics.contains(line), "{line} not in\n{metrics}");
    assert!(
        !metrics.contains(r#"flow="interactive",outcome="admitted"}"#),
        "{metrics}"
    );
    let local = TestApp::load(&["--flow-header", HEADER, "--flow-weights", "interactive=8"]).await;
    assert_eq!(retrieve_in(&local, Some("interactive")).await.0, 200);
    assert_eq!(retrieve_in(&local, Some("two words")).await.0, 400);
    let metrics = local.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics
            .contains(r#"turnstile_flow_requests_total{flow="interactive",outcome="admitted"} 1"#),
        "{metrics}"
    );
}

/// Without --max-waiting-per-flow, one flow may hold half the queue (rounded up), never all of
/// it: another flow still finds places.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_one_flow_never_fills_the_queue() {
    let server = Arc::new(
        TestServer::start(&[
            "--plugin",
            components::DELAY,
            "--plugin-config",
            "delay_ms=5000",
            "--max-active",
            "1",
            "--max-waiting",
            "5",
            "--wait-ms",
            "60000",
            "--flow-header",
            HEADER,
        ])
        .await,
    );
    let send = |flow: &'static str| {
        let server = Arc::clone(&server);
        tokio::spawn(async move { retrieve_as(&server, Some(flow)).await })
    };
    let mut held = vec![send("flood")];
    flows_are(&server, &[("flood", 1, 0)]).await;
    for waiting in 1..=3 {
        held.push(send("flood"));
        flows_are(&server, &[("flood", 1, waiting)]).await;
    }
    let (status, refused) = retrieve_as(&server, Some("flood")).await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["limit"], "max_waiting_per_flow", "{refused}");
    held.push(send("other"));
    flows_are(&server, &[("flood", 1, 3), ("other", 0, 1)]).await;
    for task in held {
        task.abort();
    }
}
