//! `POST /retrieve`: validate → admit → blocking worker (`super::call`) → answer.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};

use super::access_log::Served;
use super::api::{
    AnswerStatus, CompletedStatus, CorpusRefBody, InternalBody, InvalidRequestBody, PluginBody,
    RefusalBody, RetrieveRequestBody, RetrieveResponse, RetrieveUnavailable, Timing, UpstreamBody,
};
use super::body::{read_body, require_json};
use super::call::{self, CallOrder, millis};
use super::error::ApiError;
use super::flow::flow_of;
use super::request::{MAX_BODY_BYTES, RetrieveRequest};
use super::request_id::RequestId;
use super::state::AppState;
use turnstile_host::ClientLink;

/// `POST /retrieve`: the sources for a question, best first.
#[utoipa::path(
    post,
    path = "/retrieve",
    tag = "retrieval",
    request_body(content = RetrieveRequestBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Sources, best first", body = RetrieveResponse),
        (status = 422, description = "JSON of the wrong shape", body = InvalidRequestBody),
        (status = 429, description = "The wait queue is full", body = RefusalBody,
         headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 500, description = "The plugin failed", body = InternalBody),
        (status = 502, description = "The backend the plugin calls failed the answer: it refused the credential, could not be reached, refused the request or failed itself (the sources found are kept)", body = UpstreamBody),
        (status = 503, description = "No slot within the wait deadline (`RefusalBody`), or the backend the plugin calls is past its capacity: it answered 429 or 503, or did not answer in time (`UpstreamBody`, the sources found kept)", body = RetrieveUnavailable,
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
    // If the handler is dropped from here on (client disconnect, read timeout), the lease is
    // marked as belonging to a gone client and the call's outbound work is cancelled — but the
    // lease stays held by the worker until the plugin returns.
    let lease_watch = admitted.lease().client_watch();
    let client = ClientLink::new();
    let client_guard = client.guard();
    let order = CallOrder {
        question: request.question,
        limit: request.limit,
        conversation: None,
        stream: None,
        client,
        route: ROUTE,
    };
    let worker = call::start(&state.metrics, admitted, &generation, order, id.number);
    let joined = worker.await;
    lease_watch.disarm();
    client_guard.disarm();
    let ran = call::settle(joined, &generation.plugin, id.number)?;
    let backend = &ran.backend;
    let backend_ms = millis(backend.elapsed);
    let made_requests = backend.requests > 0;
    Ok((
        Extension(Served {
            generation: generation.number,
            corpus_generation: generation.corpus.number,
            queue_ms,
            execution_ms: ran.execution_ms,
            outbound_requests: backend.requests,
            outbound_ms: backend_ms,
        }),
        Json(RetrieveResponse {
            status: CompletedStatus::Completed,
            answer_status: AnswerStatus::of(&ran.answer, backend),
            sources: ran.sources,
            plugin: PluginBody::of(&generation),
            corpus: CorpusRefBody::of(&generation),
            request_id: id.number,
            answer: ran.answer.text,
            timing: Timing {
                queue_ms,
                execution_ms: ran.execution_ms,
                outbound_requests: made_requests.then_some(backend.requests),
                outbound_ms: made_requests.then_some(backend_ms),
            },
        }),
    ))
}

/// This route, as the metrics label it.
const ROUTE: &str = "/retrieve";
