//! The HTTP edge: request validation, then the worker, then the response. Every rejection is
//! decided here, before any lease or worker is involved.

mod admin;
pub mod api;
mod body;
mod error;
mod health;
pub mod live;
mod request_id;
mod retrieve;
mod state;

use axum::Router;
use axum::routing::{get, post};

pub use admin::MAX_ADMIN_BODY_BYTES;
pub use body::DRAIN_BYTES;
pub use error::ApiError;
pub use request_id::{MAX_REQUEST_ID_BYTES, REQUEST_ID_HEADER, RequestId};
pub use retrieve::{MAX_BODY_BYTES, RetrieveRequest};
pub use state::{AdminPolicy, AppState, HealthPolicy, Policies};

/// Every route of the service (the `route` label of the response metrics).
pub const ROUTES: &[&str] = &[
    "/retrieve",
    "/healthz",
    "/readyz",
    "/state",
    "/metrics",
    "/admin/plugin",
    "/openapi.json",
    "/dashboard",
    "/events",
];

/// The service's routes over `state`. Tests drive it with `oneshot` or a real socket.
pub fn app(state: AppState) -> Router {
    // Operator endpoints: a bearer token, or loopback when none is set (see `AdminPolicy`).
    let operator = Router::new()
        .route("/admin/plugin", post(admin::swap_plugin))
        .route("/state", get(health::state))
        .route("/metrics", get(health::metrics))
        .route("/dashboard", get(live::dashboard))
        .route("/events", get(live::events))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            admin::require_admin,
        ));
    Router::new()
        .route("/retrieve", post(retrieve::retrieve))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/openapi.json", get(health::openapi))
        .merge(operator)
        // Handlers read bodies themselves, bounded in size and time (`body::read_body`).
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            request_id::request_scope,
        ))
        .with_state(state)
}
