//! The HTTP edge: request validation, then the worker, then the response. Every rejection is
//! decided here, before any lease or worker is involved.

mod error;
mod health;
mod retrieve;
mod state;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

pub use error::ApiError;
pub use retrieve::{MAX_BODY_BYTES, RetrieveRequest};
pub use state::AppState;

/// The service's routes over `state`. Tests drive it with `oneshot` or a real socket.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/retrieve", post(retrieve::retrieve))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/state", get(health::state))
        // Bodies are buffered whole: the cap bounds what one request can make the server hold.
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}
