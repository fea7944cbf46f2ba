//! `POST /v1/chat/completions`: OpenAI's chat completions, answered by the plugin under the
//! gate's admission — validate → admit (the same queue, flows, limits and global gate as
//! `/retrieve`) → the plugin's call on a blocking worker that holds the lease → a
//! `chat.completion`, or with `stream` the answer's chunks as the plugin makes them
//! ([`super::stream`]). The lease covers the whole call: a cap of 20 is 20 answers being made.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use turnstile_host::ClientLink;
use turnstile_host::capabilities::answer::answer_stream;

use super::answer::{Completion, ROUTE, content_of, count_tokens, usage_of};
use super::error::ChatError;
use super::models::model_id;
use super::request::{CHAT_SOURCES, ChatRequest, MAX_CHAT_BODY_BYTES};
use super::stream::{StreamStart, respond_streaming};
use crate::http::access_log::Served;
use crate::http::api::{
    AssistantMessageBody, AssistantRole, ChatChunkBody, ChatCompletionBody, ChatCompletionObject,
    ChatRequestBody, ChoiceBody, OpenAiErrorBody,
};
use crate::http::body::{read_body, require_json};
use crate::http::call::{self, CallOrder, millis};
use crate::http::error::ApiError;
use crate::http::flow::flow_of;
use crate::http::request_id::RequestId;
use crate::http::state::AppState;

/// `POST /v1/chat/completions`: an answer to the conversation's last message, with the sources
/// it was built on.
#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    tag = "openai",
    request_body(content = ChatRequestBody, content_type = "application/json"),
    responses(
        (status = 200, description = "A `chat.completion`; with `stream: true`, `text/event-stream` of `data: {chat.completion.chunk}` events (`ChatChunkBody`), then `data: [DONE]` — or, for an error after the stream began, a `data: {\"error\": …}` event (`OpenAiErrorBody`) and the end of the stream",
         content((ChatCompletionBody = "application/json"), (ChatChunkBody = "text/event-stream"))),
        (status = 400, description = "A body OpenAI's API would refuse (the field is in `param`)", body = OpenAiErrorBody),
        (status = 404, description = "`model` is not the one `GET /v1/models` lists", body = OpenAiErrorBody),
        (status = 429, description = "The wait queue is full (`queue_full`)", body = OpenAiErrorBody,
         headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 500, description = "The plugin failed", body = OpenAiErrorBody),
        (status = 502, description = "The model's backend failed the answer (`upstream_auth_failed`, `upstream_unreachable`, …; the sources found are kept)", body = OpenAiErrorBody),
        (status = 503, description = "No slot within the wait deadline (`wait_timeout`), or the model's backend is past its capacity (`upstream_rate_limited`, …)", body = OpenAiErrorBody,
         headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    )
)]
pub async fn completions(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let arrived = Instant::now();
    match answer(&state, id.number, peer, &headers, body, arrived).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn answer(
    state: &AppState,
    request_id: u64,
    peer: SocketAddr,
    headers: &HeaderMap,
    body: Body,
    arrived: Instant,
) -> Result<Response, ChatError> {
    // Validate: a request refused here never reaches a gate.
    require_json(headers)?;
    let flow = flow_of(state.admission.flow_source(), peer.ip(), headers)?;
    let body = read_body(body, MAX_CHAT_BODY_BYTES, state.edge.body_timeout).await?;
    let request = ChatRequest::parse(&body)?;
    let served = model_id(&state.plugins.current().plugin);
    if request.model != served {
        return Err(ChatError::unknown_model(&request.model, &served));
    }
    // Admit, as `/retrieve` is admitted (cancel-safe the same way).
    let admitted = state
        .admission
        .admit_in(flow.as_deref())
        .await
        .map_err(ApiError::from)?;
    let queue_ms = millis(admitted.waited());
    let generation = state.plugins.current();
    // From here a client that leaves marks its lease as a gone client's and cancels the call's
    // outbound work (the lease stays held until the plugin returns).
    let lease_watch = admitted.lease().client_watch();
    let client = ClientLink::new();
    let client_guard = client.guard();
    let (sink, events) = match request.stream {
        true => {
            let (sink, events) = answer_stream();
            (Some(sink), Some(events))
        }
        false => (None, None),
    };
    let order = CallOrder {
        question: request.question,
        limit: CHAT_SOURCES,
        conversation: Some(Arc::new(request.conversation)),
        stream: sink,
        client,
        route: ROUTE,
    };
    let worker = call::start(&state.metrics, admitted, &generation, order, request_id);
    let completion = Completion::new(request.model, request_id);
    if let Some(events) = events {
        return respond_streaming(StreamStart {
            state: state.clone(),
            generation,
            worker,
            events,
            client_guard,
            lease_watch,
            completion,
            include_usage: request.include_usage,
            arrived,
            queue_ms,
        })
        .await;
    }
    let joined = worker.await;
    lease_watch.disarm();
    client_guard.disarm();
    let ran = call::settle(joined, &generation.plugin, request_id)?;
    count_tokens(&state.metrics, &ran.answer, &ran.backend);
    let served = Served {
        generation: generation.number,
        corpus_generation: generation.corpus.number,
        queue_ms,
        execution_ms: ran.execution_ms,
        outbound_requests: ran.backend.requests,
        outbound_ms: millis(ran.backend.elapsed),
    };
    let (content, finish_reason) = content_of(&ran.answer, &ran.sources);
    let body = ChatCompletionBody {
        id: completion.id,
        object: ChatCompletionObject::ChatCompletion,
        created: completion.created,
        model: completion.model,
        choices: vec![ChoiceBody {
            index: 0,
            message: AssistantMessageBody {
                role: AssistantRole::Assistant,
                content,
            },
            finish_reason,
            logprobs: None,
        }],
        usage: usage_of(&ran.answer),
        sources: ran.sources,
        request_id,
    };
    Ok((Extension(served), Json(body)).into_response())
}
