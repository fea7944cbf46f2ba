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
        "plugin": {"name": state.plugin.name(), "sha256": state.plugin.sha256()},
        "corpus": {
            "source": state.corpus.source,
            "sha256": state.corpus.sha256,
            "documents": state.corpus.documents,
            "index": state.corpus.origin,
        },
        "allocator": state.allocator,
    }))
}
