//! The one shape of an admin swap route (`/admin/plugin`, `/admin/corpus`): the body read (JSON,
//! at most 64 KiB, in time) and parsed into the route's order, the host's swap run on a blocking
//! thread, and its [`Swapped`] answered in the route's body — or its refusal told (422, the
//! server's code for it, logged) while what served keeps serving.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::http::HeaderMap;
use turnstile_host::sanitize;
use turnstile_host::swap::{HotSwap, SwapOutcome, Swapped};

use super::api::SwapStatus;
use super::body::{read_body, require_json};
use super::error::ApiError;
use super::state::AppState;

/// Largest admin request body, in bytes (a path, a digest and at most 64 settings).
pub const MAX_ADMIN_BODY_BYTES: usize = 64 * 1024;

/// Longest refusal message sent, in bytes (cut and escaped).
pub const MAX_DETAIL_BYTES: usize = 1024;

/// What one swap route is: how its body becomes an order, how the host carries it out, how its
/// refusals are coded, and what it answers.
pub(crate) struct SwapRoute<O, E, B> {
    /// What is swapped, for the log (`plugin`, `corpus`).
    pub what: &'static str,
    /// The body, parsed and checked into an order.
    pub parse: fn(&AppState, &[u8]) -> Result<O, ApiError>,
    /// The host's swap (blocking).
    pub swap: fn(&HotSwap, O) -> Result<Swapped, E>,
    /// The server's code of a refusal.
    pub code: fn(&E) -> &'static str,
    /// The answer to a swap done (or found unchanged).
    pub answer: fn(&Swapped) -> B,
}

impl<O, E, B> SwapRoute<O, E, B>
where
    O: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    /// Runs the route for one request.
    pub(crate) async fn serve(
        &self,
        state: &AppState,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<Json<B>, ApiError> {
        require_json(headers)?;
        let body = read_body(body, MAX_ADMIN_BODY_BYTES, state.edge.body_timeout).await?;
        let order = (self.parse)(state, &body)?;
        let swap = Arc::clone(&state.swap);
        let run = self.swap;
        let outcome = tokio::task::spawn_blocking(move || run(&swap, order))
            .await
            .map_err(|_| ApiError::Internal { request_id: 0 })?;
        match outcome {
            Ok(swapped) => Ok(Json((self.answer)(&swapped))),
            Err(error) => {
                let code = (self.code)(&error);
                tracing::warn!(code, %error, what = self.what, "swap refused; what served keeps serving");
                Err(ApiError::SwapFailed {
                    code,
                    detail: sanitize(&error.to_string(), MAX_DETAIL_BYTES),
                })
            }
        }
    }
}

impl SwapStatus {
    /// A swap's outcome, as its answer says it.
    pub(crate) fn of(outcome: SwapOutcome) -> Self {
        match outcome {
            SwapOutcome::Swapped => Self::Swapped,
            SwapOutcome::Unchanged => Self::Unchanged,
        }
    }
}
