//! The OpenAPI 3.1 document of the HTTP API: its frame (title, tags, the schemas of every body in
//! [`super::api`]) here; its paths come from the route table (`super::routes`), each from its
//! handler's `#[utoipa::path]`. Served at `GET /openapi.json` and committed as
//! `docs/openapi.json` (a test checks they are the same).

use std::sync::Arc;

use axum::Extension;
use axum::http::header;
use axum::response::IntoResponse;
use utoipa::OpenApi;

use super::api::{
    AllocatorBody, ConnectionsBody, CorpusBody, CorpusGenerationBody, CorpusRefBody,
    CorpusSwapRequestBody, CorpusSwapStatus, CorpusSwappedBody, ForbiddenBody, ForbiddenCode,
    GenerationBody, HealthBody, InternalBody, InvalidCode, InvalidRequestBody, LiveBody,
    PluginBody, ReadyBody, RefusalBody, RefusalStatus, RefusingGate, RetrieveRequestBody,
    RetrieveResponse, SourceBody, StateBody, StuckCall, SwapFailedBody, SwapRefusal,
    SwapRequestBody, SwappedBody, Timing, TooManySubscribersBody, TooManySubscribersStatus,
    UnauthorizedBody,
};
use turnstile_corpus::IndexOrigin;
use turnstile_gate::{
    AdaptiveSnapshot, Event, EventStatus, FlowSnapshot, LeaseSnapshot, Snapshot, Totals,
};
use turnstile_global::{FailureMode, GlobalStatus, GlobalTotals};

/// The document's frame: everything but the paths.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "turnstile",
        description = "An HTTP service for RAG backends: a FIFO admission gate in front of WebAssembly retrieval plugins reading a read-only corpus. Every response carries `x-request-id`.",
        license(name = "Apache-2.0"),
    ),
    components(schemas(
        RetrieveRequestBody, RetrieveResponse, SourceBody, PluginBody, Timing, InvalidRequestBody,
        InvalidCode, RefusalBody, RefusalStatus, RefusingGate, GlobalStatus, GlobalTotals, FailureMode, InternalBody, HealthBody, ReadyBody, StateBody,
        StuckCall, CorpusBody, ConnectionsBody, SwapRequestBody, SwappedBody, GenerationBody,
        SwapFailedBody, SwapRefusal, UnauthorizedBody, ForbiddenBody, ForbiddenCode, Snapshot, LeaseSnapshot,
        Event, EventStatus, Totals, AllocatorBody, IndexOrigin, LiveBody, TooManySubscribersBody,
        TooManySubscribersStatus, CorpusRefBody, CorpusSwapRequestBody, CorpusSwapStatus,
        CorpusSwappedBody, CorpusGenerationBody, FlowSnapshot, AdaptiveSnapshot,
    )),
    tags((name = "retrieval"), (name = "operations"), (name = "admin")),
)]
pub struct ApiFrame;

/// The whole document as pretty JSON, made once per router (a request extension of
/// `/openapi.json`).
#[derive(Debug, Clone)]
pub struct ApiDocument(pub Arc<str>);

/// `GET /openapi.json`: this API's OpenAPI 3.1 document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object, content_type = "application/json"))
)]
pub async fn openapi(Extension(document): Extension<ApiDocument>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document.0.to_string(),
    )
}
