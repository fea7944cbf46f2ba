//! Each trusted fixture behaves as documented, chosen only by the operator.

use crate::support::{TestApp, ids};
use serde_json::json;
use turnstile_fixtures as components;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_holds_the_worker_for_delay_ms_then_really_retrieves() {
    let app = TestApp::load(&[
        "--plugin",
        components::DELAY,
        "--plugin-config",
        "delay_ms=300",
    ])
    .await;
    let (status, body) = app
        .retrieve(json!({"question": "json dumps", "limit": 3}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["timing"]["execution_ms"].as_f64().unwrap() >= 300.0,
        "{body}"
    );
    let ids = ids(&body);
    assert!(!ids.is_empty() && ids.len() <= 3);
    assert_eq!(app.state.plugin().corpus().sessions_opened(), 1);
    assert_eq!(app.state.plugin().corpus().live_sessions(), 0);
    app.stop().await;
}

/// A setting the plugin refuses stops `serve` at start, as `turnstile check` would report it:
/// nothing is served with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_with_a_bad_setting_does_not_start() {
    let refused = crate::support::try_load(&[
        "--plugin",
        components::DELAY,
        "--plugin-config",
        "delay_ms=forever",
    ])
    .await
    .err()
    .expect("serve refuses to start");
    assert!(
        refused.contains("the plugin delay refuses its settings"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_fails_constructing_its_tools_and_the_lease_is_released() {
    let app = TestApp::load(&["--plugin", components::FAULT, "--max-active", "1"]).await;
    for _ in 0..3 {
        let (status, body) = app.retrieve(json!({"question": "json"})).await;
        assert_eq!(status, 500, "{body}");
        assert_eq!(body["status"], "internal_error");
    }
    let snapshot = app.state.admission.gate().snapshot();
    assert_eq!(snapshot.active, 0);
    let released = snapshot
        .events
        .iter()
        .filter(|e| e.status == turnstile_gate::EventStatus::Released)
        .count();
    assert_eq!(released, 3);
    assert_eq!(app.state.plugin().corpus().live_sessions(), 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_cannot_choose_a_delay_or_a_plugin() {
    let app = TestApp::load(&[
        "--plugin",
        components::DELAY,
        "--plugin-config",
        "delay_ms=0",
    ])
    .await;
    for body in [
        json!({"question": "json", "delay_ms": 5000}),
        json!({"question": "json", "plugin": "fault"}),
        json!({"question": "json", "config": {"delay_ms": "5000"}}),
    ] {
        let (status, answer) = app.retrieve(body).await;
        assert_eq!(status, 422);
        assert_eq!(answer["error"], "unknown_field");
    }
    assert_eq!(app.state.admission.gate().snapshot().events.len(), 0);
    app.stop().await;
}
