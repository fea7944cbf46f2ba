use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::AppState;

/// Leases held longer than `after`, as `/readyz` and `/healthz` name them.
fn stuck(state: &AppState, after: Duration) -> Vec<Value> {
    let after_ms = after.as_millis() as u64;
    state
        .gate
        .snapshot()
        .leases
        .into_iter()
        .filter(|l| l.held_ms > after_ms)
        .map(|l| json!({"ticket": l.ticket, "held_ms": l.held_ms, "client_gone": l.client_gone}))
        .collect()
}

/// `GET /healthz`: the process is alive and answering — 503 `unhealthy` when
/// `--stuck-unhealthy-after-ms` is set and a plugin call has run longer, so an orchestrator's
/// liveness probe restarts the process (nothing else can end such a call).
pub async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    if let Some(after) = state.health.unhealthy_after {
        let stuck = stuck(&state, after);
        if !stuck.is_empty() {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(
                    json!({"status": "unhealthy", "stuck_after_ms": after.as_millis() as u64, "stuck": stuck}),
                ),
            );
        }
    }
    (StatusCode::OK, Json(json!({"status": "ok"})))
}

/// `GET /readyz`: the corpus is indexed and the plugin compiled (the server only starts
/// listening once both are done), and no plugin call has run longer than `--stuck-after-ms`;
/// else 503 `degraded` naming the stuck calls, so a load balancer stops sending traffic here.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let stuck = stuck(&state, state.health.stuck_after);
    let (status, word) = if stuck.is_empty() {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "degraded")
    };
    (
        status,
        Json(json!({
            "status": word,
            "stuck_after_ms": state.health.stuck_after.as_millis() as u64,
            "stuck": stuck,
            "plugin": plugin_body(&state),
            "corpus": {
                "source": state.corpus.source,
                "sha256": state.corpus.sha256,
                "documents": state.corpus.documents,
                "index": state.corpus.origin,
            },
            "allocator": state.allocator,
        })),
    )
}

/// `GET /state`: the gate's snapshot (taken atomically under its lock) plus what helps an
/// operator: which plugin serves, and how many corpus sessions are open right now.
pub async fn state(State(state): State<AppState>) -> Json<Value> {
    let mut body = serde_json::to_value(state.gate.snapshot()).unwrap_or_else(|_| json!({}));
    body["plugin"] = plugin_body(&state);
    body["corpus_sessions_open"] = json!(state.plugin().corpus().live_sessions());
    body["connections"] = json!({
        "open": state.connections.load(std::sync::atomic::Ordering::SeqCst),
        "max": state.edge.max_connections,
    });
    Json(body)
}

/// Which plugin generation serves new requests.
pub fn plugin_body(state: &AppState) -> Value {
    let generation = state.plugins.current();
    json!({
        "name": generation.plugin.name(),
        "sha256": generation.plugin.sha256(),
        "generation": generation.number,
    })
}

/// `GET /metrics`: every metric in the Prometheus text exposition format (`docs/METRICS.md`), under the
/// same access rule as `/state`.
pub async fn metrics(State(state): State<AppState>) -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(&state.gate, &state.plugins),
    )
}
