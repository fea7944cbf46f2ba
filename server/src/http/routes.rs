//! Every route of the service, named once. The table below gives each route its handler and its
//! access rule; the handler's `#[utoipa::path]` gives its path, method and OpenAPI entry (and the
//! schemas of the bodies it names), which `utoipa-axum` registers with the router and the
//! document together. Access is router layering: every route of a rule stricter than
//! [`Access::Public`] sits under [`guard`], and its entry gets the 401 and 403 `guard` answers
//! from the same rule ([`Access::document`]); its body rule adds the 400, 408, 413 and 415 that
//! reading a body answers ([`BodyRule::document`]).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use axum::{Extension, Router};
use utoipa::OpenApi;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use super::access::{Access, guard};
use super::api::InvalidCode;
use super::body::BodyRule;
use super::chat::request::MAX_CHAT_BODY_BYTES;
use super::error::ApiError;
use super::openapi::{ApiDocument, ApiFrame};
use super::request::MAX_BODY_BYTES;
use super::request_scope::{RequestScope, request_scope};
use super::state::AppState;
use super::swap_route::MAX_ADMIN_BODY_BYTES;
use super::{admin, chat, corpus_swap, health, live, openapi, operator, retrieve};

/// The route table: each handler with who may call it and what it reads of a body.
fn table() -> [(Access, BodyRule, UtoipaMethodRouter<AppState>); 13] {
    use BodyRule::{Json, OpenAiJson, Unread};
    [
        (
            Access::Public,
            Json(MAX_BODY_BYTES),
            routes!(retrieve::retrieve),
        ),
        (
            Access::Public,
            OpenAiJson(MAX_CHAT_BODY_BYTES),
            routes!(chat::completions::completions),
        ),
        (Access::Public, Unread, routes!(chat::models::models)),
        (Access::Public, Unread, routes!(health::healthz)),
        (Access::Public, Unread, routes!(health::readyz)),
        (Access::Public, Unread, routes!(openapi::openapi)),
        (Access::Public, Unread, routes!(live::page::root)),
        (Access::Operator, Unread, routes!(operator::state)),
        (Access::Operator, Unread, routes!(operator::metrics)),
        (Access::Operator, Unread, routes!(live::page::dashboard)),
        (Access::Operator, Unread, routes!(live::stream::events)),
        (
            Access::Admin,
            Json(MAX_ADMIN_BODY_BYTES),
            routes!(admin::swap_plugin),
        ),
        (
            Access::Admin,
            Json(MAX_ADMIN_BODY_BYTES),
            routes!(corpus_swap::swap_corpus),
        ),
    ]
}

/// The routes grouped by access rule, each group passed through `layer`, and the document.
fn build(
    layer: impl Fn(Access, OpenApiRouter<AppState>) -> OpenApiRouter<AppState>,
) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let mut groups: BTreeMap<Access, OpenApiRouter<AppState>> = BTreeMap::new();
    for (access, body, mut route) in table() {
        access.document(&mut route);
        body.document(&mut route);
        let group = groups.remove(&access).unwrap_or_default();
        groups.insert(access, group.routes(route));
    }
    groups
        .into_iter()
        .fold(
            OpenApiRouter::with_openapi(ApiFrame::openapi()),
            |all, (access, group)| all.merge(layer(access, group)),
        )
        .split_for_parts()
}

/// The HTTP API's OpenAPI 3.1 document, pretty JSON (what `GET /openapi.json` serves).
pub fn openapi_json() -> String {
    document_json(&build(|_, group| group).1)
}

fn document_json(document: &utoipa::openapi::OpenApi) -> String {
    document
        .to_pretty_json()
        .unwrap_or_else(|e| unreachable!("the document serializes: {e}"))
}

/// Every route's path (the `route` label of the response metrics), from the route table.
pub fn routes() -> &'static [&'static str] {
    static ROUTES: OnceLock<Vec<&'static str>> = OnceLock::new();
    ROUTES.get_or_init(|| {
        let document = build(|_, group| group).1;
        // Made once per process: a few short strings, leaked, live as long as it.
        document
            .paths
            .paths
            .into_keys()
            .map(|path| &*Box::leak(path.into_boxed_str()))
            .collect()
    })
}

/// The service's routes over `state`. Tests drive it with `oneshot` or a real socket.
pub fn app(state: AppState) -> Router {
    let (router, document) = build(|access, group| {
        group.route_layer(axum::middleware::from_fn_with_state(
            (state.clone(), access),
            guard,
        ))
    });
    let scope = RequestScope {
        state: state.clone(),
        routes: routes(),
    };
    router
        // A path or method no route takes is refused like every other request: the JSON body
        // `{"status":"invalid_request","error","detail"}`, not an empty one (the 405 keeps the
        // `Allow` header axum sets).
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .layer(Extension(ApiDocument(Arc::from(document_json(&document)))))
        // Handlers read bodies themselves, bounded in size and time (`body::read_body`).
        .layer(axum::middleware::from_fn_with_state(scope, request_scope))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::invalid(
        InvalidCode::NotFound,
        "no route has this path; GET /openapi.json lists the routes",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::invalid(
        InvalidCode::MethodNotAllowed,
        "this route does not take this method; the Allow header lists those it takes",
    )
}
