//! The HTTP edge: request validation, then the worker, then the response. Every rejection is
//! decided here, before any lease or worker is involved.

mod admin;
mod error;
mod health;
mod retrieve;
mod state;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

pub use error::ApiError;
pub use retrieve::{MAX_BODY_BYTES, RetrieveRequest};
pub use state::{AdminPolicy, AppState};

/// The service's routes over `state`. Tests drive it with `oneshot` or a real socket.
pub fn app(state: AppState) -> Router {
    // Operator endpoints: a bearer token, or loopback when none is set (see `AdminPolicy`).
    let operator = Router::new()
        .route("/admin/plugin", post(admin::swap_plugin))
        .route("/state", get(health::state))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            admin::require_admin,
        ));
    Router::new()
        .route("/retrieve", post(retrieve::retrieve))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .merge(operator)
        // Bodies are buffered whole: the cap bounds what one request can make the server hold.
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}
