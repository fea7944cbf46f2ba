use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::AppState;

/// `GET /healthz`: the process is alive and answering.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: the corpus is indexed and the plugin compiled. The server only starts
/// listening once both are done, so an answer means ready; it says what is being served.
pub async fn readyz(State(state): State<AppState>) -> Json<Value> {
    Json(json!({
        "status": "ready",
        "plugin": plugin_body(&state),
        "corpus": {
            "source": state.corpus.source,
            "sha256": state.corpus.sha256,
            "documents": state.corpus.documents,
            "index": state.corpus.origin,
        },
        "allocator": state.allocator,
    }))
}

/// `GET /state`: the gate's snapshot (taken atomically under its lock) plus what helps an
/// operator: which plugin serves, and how many corpus sessions are open right now.
pub async fn state(State(state): State<AppState>) -> Json<Value> {
    let mut body = serde_json::to_value(state.gate.snapshot()).unwrap_or_else(|_| json!({}));
    body["plugin"] = plugin_body(&state);
    body["corpus_sessions_open"] = json!(state.plugin().corpus().live_sessions());
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
