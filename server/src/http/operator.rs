//! What an operator reads: `GET /state` (the gate's snapshot and what helps to read it) and
//! `GET /metrics` (Prometheus).

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::api::{
    ConnectionsBody, CorpusRefBody, EmbeddingsBody, OutboundBody, PluginBody, StateBody,
};
use super::state::AppState;

/// `GET /state`: the gate's snapshot (taken atomically under its lock) plus what helps an
/// operator: which plugin serves, open corpus sessions and connections.
#[utoipa::path(
    get,
    path = "/state",
    tag = "operations",
    responses(
        (status = 200, description = "The gate's state", body = StateBody),
    )
)]
pub async fn state(State(state): State<AppState>) -> Json<StateBody> {
    let global = match state.admission.global() {
        Some(global) => Some(global.status().await),
        None => None,
    };
    let generation = state.plugins.current();
    Json(StateBody {
        global,
        gate: state.admission.gate().snapshot(),
        plugin: PluginBody::of(&generation),
        corpus: CorpusRefBody::of(&generation),
        embeddings: EmbeddingsBody::of(&generation),
        corpus_sessions_open: generation.plugin.corpus().live_sessions(),
        connections: ConnectionsBody {
            open: state.connections.load(std::sync::atomic::Ordering::SeqCst),
            max: state.edge.max_connections,
        },
        live: state.live.body(),
        outbound: OutboundBody {
            granted: generation
                .plugin
                .provision()
                .capabilities
                .outbound
                .origins
                .iter()
                .map(|o| o.as_str().to_owned())
                .collect(),
            secrets: generation
                .plugin
                .provision()
                .secrets
                .names()
                .map(str::to_owned)
                .collect(),
            credentials: generation
                .plugin
                .provision()
                .capabilities
                .outbound
                .credentials
                .described()
                .collect(),
            ca_files: state.outbound_ca_files.to_vec(),
            in_flight: state.metrics.outbound_in_flight(),
        },
        streams_open: state.metrics.streams_open(),
    })
}

/// `GET /metrics`: every metric in the Prometheus text exposition format
/// (`docs/METRICS.md`), under the same access rule as `/state`.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "Prometheus text format 0.0.4", body = String, content_type = "text/plain"),
    )
)]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(
            state.admission.gate(),
            state.admission.named_flows(),
            &state.plugins,
            state.admission.global(),
            {
                let live = state.live.body();
                crate::metrics::LiveCounts {
                    subscribers: live.subscribers,
                    dropped: live.dropped,
                }
            },
        ),
    )
}
