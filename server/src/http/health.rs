//! Health for orchestrators and load balancers: `GET /healthz` (alive) and `GET /readyz` (ready
//! to serve: the corpus indexed, the plugin compiled, no call stuck).

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use turnstile_corpus::IndexChecksum;

use super::api::{
    CorpusBody, HealthBody, HealthStatus, PluginBody, ReadyBody, ReadyStatus, StuckCall,
};
use super::state::AppState;

/// Leases held longer than `after`, as `/readyz` and `/healthz` name them.
fn stuck(state: &AppState, after: Duration) -> Vec<StuckCall> {
    let after_ms = after.as_millis() as u64;
    state
        .admission
        .gate()
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
/// listening once both are done), no plugin call has run longer than `--stuck-after-ms`, and
/// the corpus index is not found damaged (`corpus.checksum`); else 503 `degraded` naming the
/// stuck calls or the damaged index, so a load balancer stops sending traffic here.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "Ready: what is served", body = ReadyBody),
        (status = 503, description = "Degraded: a plugin call has run past --stuck-after-ms, or the corpus index's checksum does not match (`corpus.checksum` is `damaged`; restart to rebuild it)", body = ReadyBody),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<ReadyBody>) {
    let stuck = stuck(&state, state.health.stuck_after);
    let generation = state.plugins.current();
    let damaged = generation.corpus.index.checksum.get() == IndexChecksum::Damaged;
    let (status, word) = if stuck.is_empty() && !damaged {
        (StatusCode::OK, ReadyStatus::Ready)
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, ReadyStatus::Degraded)
    };
    let body = ReadyBody {
        status: word,
        stuck_after_ms: state.health.stuck_after.as_millis() as u64,
        stuck,
        plugin: PluginBody::of(&generation),
        corpus: CorpusBody::of(&generation, state.swap.retired_corpora_in_memory()),
        allocator: state.allocator.into(),
    };
    (status, Json(body))
}
