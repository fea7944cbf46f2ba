//! The OpenAPI 3.1 document of the HTTP API: its frame (title, license, tags) here; its paths
//! come from the route table (`super::routes`), each from its handler's `#[utoipa::path]`, and
//! its schemas with them — each body a path names, and every schema that body refers to, so no
//! list of schemas is kept by hand. Served at `GET /openapi.json` and committed as
//! `docs/openapi.json` (a test checks they are the same).

use std::sync::Arc;

use axum::Extension;
use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::{Ref, RefOr, Response as DocumentedResponse, Schema};
use utoipa::{OpenApi, ToSchema};

/// The document's frame: everything but the paths and their schemas.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "turnstile",
        description = "An HTTP service for RAG backends: a FIFO admission gate in front of WebAssembly retrieval plugins reading a read-only corpus. Every response carries `x-request-id`.",
        license(name = "Apache-2.0"),
    ),
    tags((name = "retrieval"), (name = "openai", description = "OpenAI-compatible: the routes every OpenAI SDK and chat client already speaks"), (name = "operations"), (name = "admin")),
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

/// Every operation of a path.
pub(super) fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.options,
        &mut item.head,
        &mut item.patch,
        &mut item.trace,
    ]
    .into_iter()
    .flatten()
}

/// A JSON answer of body `T`, described as `description`.
pub(super) fn answer<T: ToSchema>(description: &str) -> RefOr<DocumentedResponse> {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(T::name())))
        .build();
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content("application/json", content)
            .build(),
    )
}

/// `T`'s schema and those it refers to, added to `schemas`.
pub(super) fn with_schemas<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}
