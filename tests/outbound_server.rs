//! Outbound HTTP through the whole server: the `rag` plugin behind the gate, in front of a real
//! upstream process (`tests/upstream/upstream.py`) — the answer in the response, the backend's
//! refusals as 503 with its retry hint, the grants and in-flight requests in `/state`, the
//! metrics, a swap's own grants, the gate's cap as the upstream counts it, a secret that
//! shows nowhere, and which of a call's outbound troubles the adaptive limit takes for the
//! backend's (the `fetch` fixture against the upstream's plain routes).

use std::time::Duration;

use serde_json::{Value, json};
use turnstile_fixtures as components;

use crate::support::upstream::Upstream;
use crate::support::{TestServer, child_metrics, logged, serve_child, stop_child};

const QUESTION: &str = "how do I parse a json string";

/// Flags serving `rag` against `origin`, granted it, its model choosing behaviour by question,
/// with a first-byte timeout of `timeout_ms`.
fn rag_flags(origin: &str, timeout_ms: &str) -> Vec<String> {
    [
        "--plugin",
        components::RAG,
        "--outbound-allow",
        origin,
        "--plugin-config",
        &format!("upstream={origin}"),
        "--plugin-config",
        "model=by-question",
        "--outbound-timeout-ms",
        timeout_ms,
        "--outbound-between-bytes-ms",
        "500",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// POSTs a question: the status, the `Retry-After`, the body (its text kept in `seen`).
async fn post(
    client: &reqwest::Client,
    url: &str,
    question: &str,
    seen: &mut String,
) -> (u16, Option<String>, Value) {
    let response = client
        .post(url)
        .json(&json!({ "question": question }))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    seen.push_str(&text);
    (status, retry_after, serde_json::from_str(&text).unwrap())
}

/// Everything the server answered and logged: a canary secret is in none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_refusals_state_metrics_and_a_secret_that_shows_nowhere() {
    const CANARY: &str = "sk-canary-4f1c9a27d0e3";
    let upstream = Upstream::start(Duration::ZERO);
    let origin = upstream.origin().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("api-key");
    std::fs::write(&key, format!("{CANARY}\n")).unwrap();
    let mut flags = rag_flags(&origin, "500");
    flags.extend([
        "--plugin-secret".to_owned(),
        format!("api_key=file:{}", key.display()),
    ]);
    let child = serve_child("outbound", flags).await;
    let client = reqwest::Client::new();
    let mut seen = String::new();
    // An answer, from the model, beside the sources; the key went as a bearer token.
    let (status, _, body) = post(&client, &child.url("/retrieve"), QUESTION, &mut seen).await;
    assert_eq!(status, 200, "{body}");
    let answer = body["answer"].as_str().unwrap();
    let first = body["sources"][0]["id"].as_str().unwrap();
    assert!(answer.contains(first), "{answer} / {first}");
    assert_eq!(body["timing"]["outbound_requests"], 1, "{body}");
    assert!(body["timing"]["outbound_ms"].as_f64().unwrap() > 0.0);
    let stats = upstream.stats();
    assert_eq!(stats["requests"], 1, "{stats}");
    assert_eq!(stats["authorization_seen"], true, "{stats}");

    // The backend rate limits: 503 upstream_unavailable, with its own Retry-After.
    let (status, retry_after, body) = post(
        &client,
        &child.url("/retrieve"),
        &format!("{QUESTION} upstream-mode:rate-limit"),
        &mut seen,
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "upstream_unavailable", "{body}");
    assert_eq!(body["error"], "upstream_rate_limited", "{body}");
    assert_eq!(body["retry_after_seconds"], 7, "{body}");
    assert_eq!(retry_after.as_deref(), Some("7"));
    let (status, retry_after, body) = post(
        &client,
        &child.url("/retrieve"),
        &format!("{QUESTION} upstream-mode:unavailable"),
        &mut seen,
    )
    .await;
    assert_eq!(
        (status, &body["error"]),
        (503, &json!("upstream_unavailable")),
        "{body}"
    );
    assert_eq!(retry_after.as_deref(), Some("3"));
    // It hangs: the host's timeout ends the call; no hint from the backend, so 1 s.
    let (status, retry_after, body) = post(
        &client,
        &child.url("/retrieve"),
        &format!("{QUESTION} upstream-mode:hang"),
        &mut seen,
    )
    .await;
    assert_eq!(
        (status, &body["error"]),
        (503, &json!("upstream_timeout")),
        "{body}"
    );
    assert_eq!(retry_after.as_deref(), Some("1"));
    // Not JSON: the answer failed with no word from the backend: 502 `answer_failed`, the
    // sources kept.
    let (status, retry_after, body) = post(
        &client,
        &child.url("/retrieve"),
        &format!("{QUESTION} upstream-mode:garbage"),
        &mut seen,
    )
    .await;
    assert_eq!(
        (status, &body["status"], &body["error"]),
        (502, &json!("upstream_failed"), &json!("answer_failed")),
        "{body}"
    );
    assert_eq!(retry_after, None, "a 502 says no retry");
    assert!(!body["sources"].as_array().unwrap().is_empty(), "{body}");
    // A refused credential: 502 `upstream_auth_failed`, the sources kept.
    let (status, _, body) = post(
        &client,
        &child.url("/retrieve"),
        &format!("{QUESTION} upstream-mode:auth-failed"),
        &mut seen,
    )
    .await;
    assert_eq!(
        (status, &body["error"]),
        (502, &json!("upstream_auth_failed")),
        "{body}"
    );
    assert!(!body["sources"].as_array().unwrap().is_empty(), "{body}");

    // What the operator reads: the grant, the secret's name, nothing left in flight.
    let state: Value = client
        .get(child.url("/state"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    seen.push_str(&state.to_string());
    assert_eq!(state["outbound"]["granted"], json!([origin]), "{state}");
    assert_eq!(state["outbound"]["secrets"], json!(["api_key"]), "{state}");
    assert_eq!(state["outbound"]["in_flight"], json!({}), "{state}");
    let metrics = child_metrics(&client, &child).await.unwrap();
    seen.push_str(&metrics);
    for (outcome, n) in [
        ("ok", 2),
        ("rate_limited", 1),
        ("unavailable", 1),
        ("timeout", 1),
    ] {
        let series = format!(
            "turnstile_outbound_requests_total{{origin=\"{origin}\",outcome=\"{outcome}\"}} {n}"
        );
        assert!(metrics.contains(&series), "{series} in\n{metrics}");
    }
    let ready = client.get(child.url("/readyz")).send().await.unwrap();
    seen.push_str(&ready.text().await.unwrap());

    // A swap that names its own grants gets exactly those: here none, so the model is never
    // asked again and the answer is sources only.
    let swap = client
        .post(child.url("/admin/plugin"))
        .json(&json!({
            "path": components::RAG,
            "config": {"upstream": origin, "model": "by-question"},
            "outbound_allow": []
        }))
        .send()
        .await
        .unwrap();
    let status = swap.status().as_u16();
    let text = swap.text().await.unwrap();
    seen.push_str(&text);
    assert_eq!(status, 200, "{text}");
    upstream.reset();
    let (status, _, body) = post(&client, &child.url("/retrieve"), QUESTION, &mut seen).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("answer").is_none(), "{body}");
    assert_eq!(upstream.stats()["requests"], 0);
    logged(&child, "outbound request refused").await;
    // A bad grant in a swap changes nothing.
    let swap = client
        .post(child.url("/admin/plugin"))
        .json(&json!({"path": components::RAG, "outbound_allow": ["ftp://x"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(swap.status().as_u16(), 422);
    let refused: Value = swap.json().await.unwrap();
    assert_eq!(refused["error"], "invalid_outbound_allow", "{refused}");

    let log = child.log_tail(usize::MAX);
    stop_child(child).await;
    for (what, text) in [("the responses", &seen), ("the log", &log)] {
        assert!(!text.contains(CANARY), "the secret is in {what}");
    }
    assert!(log.contains("outbound HTTP granted"), "{log}");
}

/// The gate in front of the backend: with `--max-active 3`, twelve requests at once — the
/// upstream, counting its own requests, never sees more than three at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_never_sees_more_than_max_active() {
    let upstream = Upstream::start(Duration::from_millis(300));
    let origin = upstream.origin().to_owned();
    let mut flags = rag_flags(&origin, "5000");
    flags.extend(["--max-active", "3"].map(str::to_owned));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start(&flags).await;
    let mut calls = Vec::new();
    for _ in 0..12 {
        let client = reqwest::Client::new();
        let url = server.url("/retrieve");
        calls.push(tokio::spawn(async move {
            let response = client
                .post(url)
                .json(&json!({ "question": QUESTION }))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap();
            (status, body)
        }));
    }
    for call in calls {
        let (status, body) = call.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body["answer"].is_string(), "{body}");
    }
    let stats = upstream.stats();
    assert_eq!(stats["requests"], 12, "{stats}");
    let most = stats["max_in_flight"].as_u64().unwrap();
    assert!((2..=3).contains(&most), "at most {most} at once: {stats}");
    server.stop().await;
}

/// With `--max-active auto`, a backend that refuses fast (429 in a millisecond) brings the limit
/// down: its refusals are drops, not fast calls that would raise it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_refusals_bring_an_adaptive_limit_down() {
    let upstream = Upstream::start(Duration::ZERO);
    let origin = upstream.origin().to_owned();
    let mut flags = rag_flags(&origin, "500");
    flags.extend(
        [
            "--max-active",
            "auto",
            "--max-active-min",
            "1",
            "--max-active-max",
            "32",
            "--max-active-initial",
            "16",
        ]
        .map(str::to_owned),
    );
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start(&flags).await;
    // The baseline: a window of calls the backend answers, at the floor; then the limit is back
    // where it started.
    for _ in 0..16 {
        let (status, body) = server.retrieve(json!({ "question": QUESTION })).await;
        assert_eq!(status, 200, "{body}");
    }
    let state = server.get_json("/state").await;
    assert_eq!(state["max_active"], 16, "{}", state["adaptive"]);
    // Fast refusals: as latencies they would keep it (they are as fast as the answers); as
    // drops, each window of 16 takes a tenth off.
    let question = format!("{QUESTION} upstream-mode:rate-limit");
    for _ in 0..(16 * 4) {
        let (status, body) = server.retrieve(json!({ "question": question })).await;
        assert_eq!(status, 503, "{body}");
    }
    let state = server.get_json("/state").await;
    let limit = state["max_active"].as_u64().unwrap();
    assert!(limit <= 12, "the limit is {limit}: {}", state["adaptive"]);
    server.stop().await;
}

/// Flags serving the `fetch` fixture (each call GETs `url` once, reads it to its end whatever
/// its status) under `--max-active auto` starting at 16, with `extra` plugin settings.
fn fetch_adaptive(origin: &str, url: &str, extra: &[&str]) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--plugin",
        components::FETCH,
        "--outbound-allow",
        origin,
        "--plugin-config",
        &format!("url={url}"),
        "--plugin-config",
        "count=1",
        "--outbound-timeout-ms",
        "5000",
        "--max-active",
        "auto",
        "--max-active-min",
        "1",
        "--max-active-max",
        "32",
        "--max-active-initial",
        "16",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for setting in extra {
        flags.extend(["--plugin-config".to_owned(), (*setting).to_owned()]);
    }
    flags
}

/// A call that met a 429 and still answered (a plugin that falls back: `fetch` reads any status
/// to its end) is an ordinary sample, not a drop: four windows of them leave the adaptive limit
/// where fast answers leave it, where four windows of drops would take it down by a third.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_met_a_refusal_and_still_answered_is_no_drop() {
    let upstream = Upstream::start(Duration::ZERO);
    let origin = upstream.origin().to_owned();
    let url = format!("{origin}/status/429");
    let flags = fetch_adaptive(&origin, &url, &[]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start(&flags).await;
    for _ in 0..(16 * 4) {
        let (status, body) = server.retrieve(json!({ "question": QUESTION })).await;
        assert_eq!(status, 200, "{body}");
    }
    let state = server.get_json("/state").await;
    assert_eq!(state["max_active"], 16, "{}", state["adaptive"]);
    server.stop().await;
}

/// A timeout the guest chose (a first-byte timeout shorter than the host's) is the plugin's own
/// doing, no word from the backend: the call fails as the plugin's (not 503 `upstream_timeout`)
/// and is no drop for the adaptive limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_the_guest_chose_is_not_the_backends() {
    let upstream = Upstream::start(Duration::ZERO);
    let origin = upstream.origin().to_owned();
    let url = format!("{origin}/slow/1000");
    let mut flags = fetch_adaptive(&origin, &url, &["first_byte_ms=20"]);
    // The time to a response's headers is the connect timeout and the first byte's together.
    flags.extend(["--outbound-connect-timeout-ms".to_owned(), "200".to_owned()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start(&flags).await;
    for _ in 0..(16 * 4) {
        let (status, body) = server.retrieve(json!({ "question": QUESTION })).await;
        assert_ne!(body["error"], "upstream_timeout", "{body}");
        assert!(status >= 500 && status != 503, "{status} {body}");
    }
    let state = server.get_json("/state").await;
    assert_eq!(state["max_active"], 16, "{}", state["adaptive"]);
    server.stop().await;
}
