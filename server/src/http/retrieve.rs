//! `POST /retrieve`: validate → admit → blocking worker → answer.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};

use super::access_log::Served;
use super::api::{
    CompletedStatus, CorpusRefBody, InternalBody, InvalidRequestBody, PluginBody, RefusalBody,
    RetrieveRequestBody, RetrieveResponse, RetrieveUnavailable, SourceBody, Timing,
};
use super::body::{read_body, require_json};
use super::error::ApiError;
use super::flow::flow_of;
use super::request::{MAX_BODY_BYTES, RetrieveRequest};
use super::request_id::RequestId;
use super::state::AppState;
use crate::admission::Admitted;
use crate::metrics::CallOutcome;
use turnstile_corpus::metadata::Link;
use turnstile_host::capabilities::outbound::OutboundReport;
use turnstile_host::{Generation, PluginError, Source};

/// `POST /retrieve`: the sources for a question, best first.
#[utoipa::path(
    post,
    path = "/retrieve",
    tag = "retrieval",
    request_body(content = RetrieveRequestBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Sources, best first", body = RetrieveResponse),
        (status = 400, description = "Not JSON, or unreadable", body = InvalidRequestBody),
        (status = 408, description = "The body did not arrive in time", body = InvalidRequestBody),
        (status = 413, description = "Body over 8 KiB", body = InvalidRequestBody),
        (status = 415, description = "Not application/json", body = InvalidRequestBody),
        (status = 422, description = "JSON of the wrong shape", body = InvalidRequestBody),
        (status = 429, description = "The wait queue is full", body = RefusalBody,
         headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 500, description = "The plugin failed", body = InternalBody),
        (status = 503, description = "No slot within the wait deadline (`RefusalBody`), or the backend the plugin calls refused or did not answer (`UpstreamBody`)", body = RetrieveUnavailable,
         headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    )
)]
pub async fn retrieve(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<(Extension<Served>, Json<RetrieveResponse>), ApiError> {
    // Validate: a request refused here never reaches a gate.
    require_json(&headers)?;
    let flow = flow_of(state.admission.flow_source(), peer.ip(), &headers)?;
    let body = read_body(body, MAX_BODY_BYTES, state.edge.body_timeout).await?;
    let request = RetrieveRequest::parse(&body)?;
    // Admit. Cancel-safe: if the client goes away while this waits, the waiter leaves the
    // queues (or gives back what was granted in the meantime) and never runs.
    let admitted = state.admission.admit_in(flow.as_deref()).await?;
    let queue_ms = millis(admitted.waited());
    // The generation is fixed at admission: a swap from here on does not affect this request.
    let generation = state.plugins.current();
    // Run, then answer.
    let ran = run(&state, admitted, &generation, request, id.number).await?;
    let outbound = ran.outbound;
    let outbound_ms = millis(outbound.elapsed);
    let made_requests = outbound.requests > 0;
    Ok((
        Extension(Served {
            generation: generation.number,
            corpus_generation: generation.corpus.number,
            queue_ms,
            execution_ms: ran.execution_ms,
            outbound_requests: outbound.requests,
            outbound_ms,
        }),
        Json(RetrieveResponse {
            status: CompletedStatus::Completed,
            sources: ran
                .sources
                .into_iter()
                .zip(ran.links)
                .map(|(source, link)| SourceBody::of(source, link))
                .collect(),
            plugin: PluginBody::of(&generation),
            corpus: CorpusRefBody::of(&generation),
            request_id: id.number,
            answer: ran.answer,
            timing: Timing {
                queue_ms,
                execution_ms: ran.execution_ms,
                outbound_requests: made_requests.then_some(outbound.requests),
                outbound_ms: made_requests.then_some(outbound_ms),
            },
        }),
    ))
}

/// A duration in milliseconds, to the microsecond (`1.4`, not `1.4003780000000001`): what the
/// answer's `timing` and the log show. A clock's nanoseconds say nothing more about a call.
fn millis(duration: std::time::Duration) -> f64 {
    (duration.as_nanos() as f64 / 1e3).round() / 1e3
}

/// What an answered call gave.
struct Ran {
    sources: Vec<Source>,
    /// Each source's link from the corpus (see [`source_links`]), one per source.
    links: Vec<Option<Link>>,
    answer: Option<String>,
    execution_ms: f64,
    outbound: OutboundReport,
}

/// Runs an admitted request's plugin call on a blocking worker, which owns the leases: what the
/// call gave, or a 500 whose cause is logged — a 503 `upstream_unavailable` when the call failed
/// as the backend it calls refused or did not answer.
async fn run(
    state: &AppState,
    admitted: Admitted,
    generation: &Generation,
    request: RetrieveRequest,
    request_id: u64,
) -> Result<Ran, ApiError> {
    // If the handler is dropped from here on (client disconnect, read timeout), the lease is
    // marked as belonging to a gone client — but it stays held by the worker below.
    let client = admitted.lease().client_watch();
    let plugin = Arc::clone(&generation.plugin);
    let metrics = Arc::clone(&state.metrics);
    // The worker logs inside this request's span, like the handler; from here on every line of
    // the request names the plugin generation that serves it.
    let span = tracing::Span::current();
    span.record("generation", generation.number);
    span.record("corpus_generation", generation.corpus.number);
    let worker = tokio::task::spawn_blocking(move || {
        let _in_request = span.enter();
        // The leases live in the worker: they are released when this closure ends — the plugin
        // call has returned, failed, trapped or panicked — and not a moment earlier.
        let mut admitted = admitted;
        let started = std::time::Instant::now();
        let (result, stats) = plugin.retrieve_metered(&request.question, request.limit, request_id);
        let took = started.elapsed();
        let execution_ms = millis(took);
        admitted.worked(took);
        let outbound = &stats.used.outbound;
        if outbound.requests > 0 {
            // The span carries the call's outbound work, for every line logged in it from here.
            let span = tracing::Span::current();
            span.record("outbound_requests", outbound.requests);
            span.record("outbound_ms", millis(outbound.elapsed));
        }
        if stats.used.outbound.signal.is_some() {
            // The backend turned work away: the adaptive limit backs off instead of learning a
            // fast failure as a latency.
            admitted.mark_dropped();
        } else if result.is_err() {
            // Failed on its own: no latency sample (a fast failure must not raise the limit).
            admitted.mark_failed();
        }
        let (waited, held) = (admitted.lease().waited(), admitted.lease().held());
        drop(admitted);
        metrics.admitted(waited, held);
        metrics.call(call_outcome(&result), stats.instantiate);
        // The sources' links are read once the slot is given back: they are the corpus's, not
        // the plugin's work (and a plugin cannot make one up).
        let links = match &result {
            Ok(sources) => source_links(&plugin, sources),
            Err(_) => Vec::new(),
        };
        (result.map(|sources| (sources, links)), stats, execution_ms)
    });
    let outcome = worker.await;
    client.disarm();
    match outcome {
        Ok((Ok((sources, links)), stats, execution_ms)) => Ok(Ran {
            sources,
            links,
            answer: stats.used.answer.text,
            execution_ms,
            outbound: stats.used.outbound,
        }),
        Ok((Err(error), stats, _)) => {
            let signal = stats.used.outbound.signal;
            tracing::error!(
                plugin = generation.plugin.name(),
                %error,
                upstream = signal.map(|s| s.kind.as_str()),
                "plugin call failed"
            );
            Err(match signal {
                // A plugin that failed after its backend refused: the backend's signal, with its
                // retry hint, is what the client can act on.
                Some(signal) if matches!(error, PluginError::Guest(_)) => {
                    ApiError::Upstream { signal, request_id }
                }
                _ => ApiError::Internal { request_id },
            })
        }
        Err(join) => {
            tracing::error!(plugin = generation.plugin.name(), error = %join, "plugin worker panicked");
            state.metrics.call(CallOutcome::Trap, Default::default());
            Err(ApiError::Internal { request_id })
        }
    }
}

/// The url and fields the corpus holds for each of `sources`' documents, in order. They add to
/// an answer and never decide it: if they cannot be read (the corpus's session budget, a read
/// error), the sources go without them and the cause is logged.
fn source_links(plugin: &turnstile_host::Plugin, sources: &[Source]) -> Vec<Option<Link>> {
    let ids: Vec<&str> = sources.iter().map(|s| s.id.as_str()).collect();
    match plugin.corpus().links(&ids) {
        Ok(links) => links,
        Err(error) => {
            tracing::warn!(%error, "the sources' links could not be read: answered without them");
            vec![None; sources.len()]
        }
    }
}

/// How a plugin call ended, as the metrics count it.
fn call_outcome(result: &Result<Vec<Source>, PluginError>) -> CallOutcome {
    match result {
        Ok(_) => CallOutcome::Ok,
        Err(PluginError::Guest(_)) => CallOutcome::PluginError,
        Err(PluginError::Contract(_)) => CallOutcome::Contract,
        Err(_) => CallOutcome::Trap,
    }
}
