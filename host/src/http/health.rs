//! Operations endpoints: liveness, readiness, the gate's state, metrics, and the API document.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

use super::AppState;
use super::api::{
    ConnectionsBody, CorpusBody, ForbiddenBody, HealthBody, HealthStatus, ReadyBody, ReadyStatus,
    StateBody, StuckCall, UnauthorizedBody,
};
use super::retrieve::PluginBody;

/// Leases held longer than `after`, as `/readyz` and `/healthz` name them.
fn stuck(state: &AppState, after: Duration) -> Vec<StuckCall> {
    let after_ms = after.as_millis() as u64;
    state
        .gate
        .snapshot()
        .leases
        .into_iter()
        .filter(|l| l.held_ms > after_ms)
        .map(|l| StuckCall {
            ticket: l.ticket,
            held_ms: l.held_ms,
            client_gone: l.client_gone,
        })
        .collect()
}

/// `GET /healthz`: the process is alive and answering — 503 `unhealthy` when
/// `--stuck-unhealthy-after-ms` is set and a plugin call has run longer, so an orchestrator's
/// liveness probe restarts the process (nothing else can end such a call).
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses(
        (status = 200, description = "Alive", body = HealthBody),
        (status = 503, description = "A plugin call has run past --stuck-unhealthy-after-ms", body = HealthBody),
    )
)]
pub async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<HealthBody>) {
    if let Some(after) = state.health.unhealthy_after {
        let stuck = stuck(&state, after);
        if !stuck.is_empty() {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(HealthBody {
                    status: HealthStatus::Unhealthy,
                    stuck_after_ms: Some(after.as_millis() as u64),
                    stuck: Some(stuck),
                }),
            );
        }
    }
    (
        StatusCode::OK,
        Json(HealthBody {
            status: HealthStatus::Ok,
            stuck_after_ms: None,
            stuck: None,
        }),
    )
}

/// `GET /readyz`: the corpus is indexed and the plugin compiled (the server only starts
/// listening once both are done), and no plugin call has run longer than `--stuck-after-ms`;
/// else 503 `degraded` naming the stuck calls, so a load balancer stops sending traffic here.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "Ready: what is served", body = ReadyBody),
        (status = 503, description = "Degraded: a plugin call has run past --stuck-after-ms", body = ReadyBody),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<ReadyBody>) {
    let stuck = stuck(&state, state.health.stuck_after);
    let (status, word) = if stuck.is_empty() {
        (StatusCode::OK, ReadyStatus::Ready)
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, ReadyStatus::Degraded)
    };
    let body = ReadyBody {
        status: word,
        stuck_after_ms: state.health.stuck_after.as_millis() as u64,
        stuck,
        plugin: PluginBody::of(&state.plugins.current()),
        corpus: CorpusBody {
            source: state.corpus.source.clone(),
            sha256: state.corpus.sha256.clone(),
            documents: state.corpus.documents,
            index: state.corpus.origin,
        },
        allocator: state.allocator,
    };
    (status, Json(body))
}

/// `GET /state`: the gate's snapshot (taken atomically under its lock) plus what helps an
/// operator: which plugin serves, open corpus sessions and connections.
#[utoipa::path(
    get,
    path = "/state",
    tag = "operations",
    responses(
        (status = 200, description = "The gate's state", body = StateBody),
        (status = 401, description = "Beyond loopback: a token is needed", body = UnauthorizedBody),
        (status = 403, description = "Beyond loopback: refused for where it comes from", body = ForbiddenBody),
    )
)]
pub async fn state(State(state): State<AppState>) -> Json<StateBody> {
    let global = match &state.global {
        Some(global) => Some(global.status().await),
        None => None,
    };
    Json(StateBody {
        global,
        gate: state.gate.snapshot(),
        plugin: PluginBody::of(&state.plugins.current()),
        corpus_sessions_open: state.plugin().corpus().live_sessions(),
        connections: ConnectionsBody {
            open: state.connections.load(std::sync::atomic::Ordering::SeqCst),
            max: state.edge.max_connections,
        },
        live: state.live.body(),
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
        (status = 401, description = "Beyond loopback: a token is needed", body = UnauthorizedBody),
        (status = 403, description = "Beyond loopback: refused for where it comes from", body = ForbiddenBody),
    )
)]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state
            .metrics
            .render(&state.gate, &state.plugins, state.global.as_ref(), {
                let live = state.live.body();
                crate::metrics::LiveCounts {
                    subscribers: live.subscribers,
                    dropped: live.dropped,
                }
            }),
    )
}

/// `GET /openapi.json`: this API's OpenAPI 3.1 document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object, content_type = "application/json"))
)]
pub async fn openapi() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        super::api::openapi_json(),
    )
}
