//! `/retrieve` with real wasm components: once end to end over real HTTP, and what the handler
//! does — validation, the plugin's answers and failures, health — in process, without a socket.

use axum::body::Body;
use axum::http::Request;
use serde_json::json;

use crate::support::{TestApp, TestServer, hybrid_plugin, ids};
use turnstile_fixtures as components;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_with_relevant_sources() {
    let server = TestServer::start(&[]).await;
    for (question, expected) in [
        ("How do I parse command line arguments?", "argparse"),
        (
            "serialize an object to a JSON formatted string",
            "json.dumps",
        ),
        (
            "limit concurrency with an asyncio semaphore",
            "asyncio.Semaphore",
        ),
        ("split a URL into its components", "urllib.parse.urlparse"),
    ] {
        let (status, body) = server.retrieve(json!({"question": question})).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["status"], "completed");
        assert_eq!(body["plugin"]["name"], "retrieval-hybrid");
        let ids = ids(&body);
        assert!(ids.len() <= 5);
        assert!(
            ids.iter().any(|id| id == expected),
            "{question:?}: {expected} not in {ids:?}"
        );
        let scores: Vec<f64> = body["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["score"].as_f64().unwrap())
            .collect();
        assert!(
            scores.windows(2).all(|w| w[0] >= w[1]),
            "scores not best-first: {scores:?}"
        );
        for s in body["sources"].as_array().unwrap() {
            assert!(!s["title"].as_str().unwrap().is_empty());
            assert!(s["snippet"].is_string());
        }
    }
    let (status, body) = server
        .retrieve(json!({"question": "json", "limit": 2}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(ids(&body).len(), 2);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fts_syntax_in_questions_is_inert() {
    let app = TestApp::load(&[]).await;
    for question in [
        "NEAR(json dumps) AND OR NOT * \" ( ) : ^",
        "\"unbalanced",
        "title:json",
        "🙂 émoji ünïcode 日本語",
        "the and of to",
        "?!",
    ] {
        let (status, body) = app.retrieve(json!({"question": question})).await;
        assert_eq!(status, 200, "{question:?} → {body}");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_gets_its_status_and_code_and_changes_nothing() {
    // Validation is the handler's: driven in process, without a socket.
    let app = TestApp::load(&[]).await;
    let opened_before = app.state.plugin().corpus().sessions_opened();
    let post = |content_type: Option<&'static str>, body: Vec<u8>| {
        let headers: Vec<(&str, &str)> = content_type
            .map(|ct| vec![("content-type", ct)])
            .unwrap_or_default();
        let app = &app;
        async move { app.post("/retrieve", &headers, body).await }
    };
    let json_ct = Some("application/json");
    let cases: Vec<(Option<&'static str>, Vec<u8>, u16, &str)> = vec![
        (
            None,
            br#"{"question":"json"}"#.to_vec(),
            415,
            "unsupported_media_type",
        ),
        (
            Some("text/plain"),
            br#"{"question":"json"}"#.to_vec(),
            415,
            "unsupported_media_type",
        ),
        (json_ct, vec![b' '; 9 * 1024], 413, "body_too_large"),
        (json_ct, b"{\"question\":".to_vec(), 400, "malformed_json"),
        (json_ct, b"not json".to_vec(), 400, "malformed_json"),
        (json_ct, b"[]".to_vec(), 422, "not_an_object"),
        (json_ct, b"{}".to_vec(), 422, "missing_question"),
        (
            json_ct,
            br#"{"question":null}"#.to_vec(),
            422,
            "invalid_question",
        ),
        (
            json_ct,
            br#"{"question":"   "}"#.to_vec(),
            422,
            "blank_question",
        ),
        (
            json_ct,
            json!({"question": "x".repeat(501)})
                .to_string()
                .into_bytes(),
            422,
            "question_too_long",
        ),
        (
            json_ct,
            br#"{"question":"json","limit":0}"#.to_vec(),
            422,
            "invalid_limit",
        ),
        (
            json_ct,
            br#"{"question":"json","limit":21}"#.to_vec(),
            422,
            "invalid_limit",
        ),
        (
            json_ct,
            br#"{"question":"json","limit":"5"}"#.to_vec(),
            422,
            "invalid_limit",
        ),
        (
            json_ct,
            br#"{"question":"json","plugin":"fault"}"#.to_vec(),
            422,
            "unknown_field",
        ),
        (
            json_ct,
            br#"{"question":"json","delay_ms":1000}"#.to_vec(),
            422,
            "unknown_field",
        ),
    ];
    for (content_type, body, status, code) in cases {
        let (got, body) = post(content_type, body).await;
        assert_eq!(got, status, "{content_type:?} {code}");
        assert_eq!(body["status"], "invalid_request", "{body}");
        assert_eq!(body["error"], code, "{body}");
        assert!(!body["detail"].as_str().unwrap().is_empty());
    }
    assert_eq!(
        app.state.plugin().corpus().sessions_opened(),
        opened_before,
        "an invalid request reached the plugin"
    );
    assert_eq!(app.state.admission.gate().snapshot().events.len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_opened_per_call_and_closed_after_it() {
    let app = TestApp::load(&[]).await;
    let corpus = app.state.plugin().corpus().clone();
    let before = corpus.sessions_opened();
    for _ in 0..3 {
        let (status, _) = app.retrieve(json!({"question": "json"})).await;
        assert_eq!(status, 200);
        assert_eq!(corpus.live_sessions(), 0);
    }
    assert_eq!(corpus.sessions_opened(), before + 3);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trapping_plugin_gets_500_and_its_session_is_still_closed() {
    let app = TestApp::load(&["--plugin", components::FAULT]).await;
    let corpus = app.state.plugin().corpus().clone();
    for _ in 0..2 {
        let (status, body) = app.retrieve(json!({"question": "json"})).await;
        assert_eq!(status, 500, "{body}");
        assert_eq!(body["status"], "internal_error");
        assert!(body["request_id"].is_u64());
        assert_eq!(
            corpus.live_sessions(),
            0,
            "the trapped call left a session open"
        );
    }
    assert_eq!(corpus.sessions_opened(), 2);
    let health = app.get("/healthz").await;
    assert_eq!(health.status().as_u16(), 200);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_errors_and_contract_violations_are_500() {
    for mode in ["mode=error", "mode=oversized"] {
        let app = TestApp::load(&["--plugin", components::FAULT, "--plugin-config", mode]).await;
        let (status, body) = app.retrieve(json!({"question": "json", "limit": 3})).await;
        assert_eq!(status, 500, "{mode}: {body}");
        assert_eq!(body["status"], "internal_error");
        app.stop().await;
    }
    // A setting the plugin itself refuses (its config error) never serves: `serve` stops.
    let refused = crate::support::try_load(&[
        "--plugin",
        components::FAULT,
        "--plugin-config",
        "mode=nonsense",
    ])
    .await
    .err()
    .expect("serve refuses to start");
    assert!(refused.contains(r#"unknown mode "nonsense""#), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_holds() {
    let dir = tempfile::tempdir().unwrap();
    let retrieval = hybrid_plugin(dir.path());
    for attempt in [
        "env",
        "args",
        "memory",
        "sessions",
        "huge-result",
        "huge-string",
        "embed-many",
        "embed-long",
        "nearest-bad",
    ] {
        let config = format!("attempt={attempt}");
        // The configured plugin's directory (the fixtures') is a swap root; the swap below is
        // to the default plugin's copy in `dir`.
        let dir_arg = dir.path().display().to_string();
        let app = TestApp::load(&[
            "--plugin",
            components::HOSTILE,
            "--plugin-config",
            &config,
            "--swap-root",
            &dir_arg,
        ])
        .await;
        let (status, body) = app.retrieve(json!({"question": "json"})).await;
        assert_eq!(status, 500, "{attempt} was not refused: {body}");
        assert_eq!(body["status"], "internal_error");
        assert_eq!(app.state.plugin().corpus().live_sessions(), 0, "{attempt}");
        // The same process stays healthy: swap in the default plugin and serve a normal request.
        let swapped = app.swap_plugin(json!({"path": retrieval})).await;
        assert_eq!(swapped.status().as_u16(), 200, "{attempt}");
        let (status, body) = app.retrieve(json!({"question": "json"})).await;
        assert_eq!(status, 200, "{attempt}: {body}");
        assert_eq!(body["plugin"]["name"], "retrieval-hybrid");
        app.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_component_is_served_without_rebuilding_the_host() {
    let app = TestApp::load(&[
        "--plugin",
        components::DELAY,
        "--plugin-config",
        "delay_ms=1",
    ])
    .await;
    let (status, body) = app.retrieve(json!({"question": "json dumps"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["plugin"]["name"], "delay");
    let sha = body["plugin"]["sha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    assert_ne!(sha, server_default_sha().await);
    assert!(!ids(&body).is_empty());
    app.stop().await;
}

async fn server_default_sha() -> String {
    let app = TestApp::load(&[]).await;
    let sha = app.state.plugin().sha256().to_owned();
    app.stop().await;
    sha
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_asking_for_what_no_plugin_gets_is_refused_at_startup() {
    let args = crate::support::args(&["--plugin", components::OUTSIDE]);
    let Err(error) = turnstile_server::serve::load(&args) else {
        panic!("the outside component was loaded");
    };
    let message = format!("{error:#}");
    assert!(message.contains("outside the plugin contract"), "{message}");
    assert!(message.contains("example:secrets/vault@1.0.0"), "{message}");
    assert!(!message.contains("wasi:http"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness() {
    let app = TestApp::load(&[]).await;
    let health: serde_json::Value = app.get_json("/healthz").await;
    assert_eq!(health["status"], "ok");
    let ready: serde_json::Value = app.get_json("/readyz").await;
    assert_eq!(ready["status"], "ready");
    assert!(ready["corpus"]["documents"].as_u64().unwrap() > 1000);
    assert_eq!(ready["plugin"]["name"], "retrieval-hybrid");
    app.stop().await;
}

/// Every response names its request id; a client's well-formed id is kept, any other replaced;
/// a 500's `request_id` is the same request's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_carries_its_request_id() {
    let app = TestApp::load(&["--plugin", components::FAULT, "--max-active", "1"]).await;
    let health = app.get("/healthz").await;
    let generated = health.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(generated.parse::<u64>().is_ok(), "{generated}");
    let with_id = |path: &str, id: &str| {
        Request::get(path)
            .header("x-request-id", id)
            .body(Body::empty())
            .unwrap()
    };
    let kept = app.request(with_id("/healthz", "trace-7f:abc")).await;
    assert_eq!(kept.headers()["x-request-id"], "trace-7f:abc");
    let replaced = app
        .request(with_id("/readyz", "has spaces and; more"))
        .await;
    assert_ne!(replaced.headers()["x-request-id"], "has spaces and; more");
    let failed = app
        .post_json("/retrieve", &json!({"question": "json"}))
        .await;
    assert_eq!(failed.status().as_u16(), 500);
    let header = failed.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = failed.json().await.unwrap();
    assert_eq!(body["request_id"].as_u64().unwrap().to_string(), header);
    for status in [413, 422] {
        let body = if status == 413 {
            vec![b' '; 9000]
        } else {
            b"{}".to_vec()
        };
        let response = app
            .request(
                Request::post("/retrieve")
                    .header("content-type", "application/json")
                    .body(Body::from(body))
                    .unwrap(),
            )
            .await;
        assert_eq!(response.status().as_u16(), status);
        assert!(response.headers().contains_key("x-request-id"));
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_key_is_refused() {
    let app = TestApp::load(&[]).await;
    let (status, body) = app
        .post(
            "/retrieve",
            &[("content-type", "application/json")],
            r#"{"question": "json", "limit": 2, "limit": 20}"#,
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["error"], "duplicate_field");
    assert_eq!(app.state.admission.gate().snapshot().events.len(), 0);
    app.stop().await;
}
