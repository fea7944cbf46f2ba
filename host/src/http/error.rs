use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::gate::Refusal;

/// Everything `/retrieve` can answer besides success. The client sees a status, a stable
/// machine-readable code and a safe message; causes of internal errors stay in the server log.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is refused before any work: `{"status":"invalid_request","error","detail"}`.
    #[error("{code}: {detail}")]
    Invalid {
        /// 400, 413, 415 or 422.
        status: StatusCode,
        /// Machine-readable code, e.g. `question_too_long`.
        code: &'static str,
        /// Human message.
        detail: String,
    },
    /// The gate refused the request; it never ran: 429 `queue_full` or 503 `wait_timeout`,
    /// with `Retry-After`.
    #[error("{0}")]
    Refused(Refusal),
    /// Admin access refused: 401.
    #[error("unauthorized")]
    Unauthorized,
    /// A plugin swap was refused; the current plugin keeps serving: 422.
    #[error("{code}: {detail}")]
    SwapFailed {
        /// e.g. `sha256_mismatch`.
        code: &'static str,
        /// Human message.
        detail: String,
    },
    /// The plugin failed (trap, guest error, panic): 500 `{"status":"internal_error"}`.
    #[error("internal error in request {request_id}")]
    Internal {
        /// Matches the server log line with the cause.
        request_id: u64,
    },
}

impl ApiError {
    pub(crate) fn invalid(
        status: StatusCode,
        code: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        Self::Invalid {
            status,
            code,
            detail: detail.into(),
        }
    }

    pub(crate) fn unprocessable(code: &'static str, detail: impl Into<String>) -> Self {
        Self::invalid(StatusCode::UNPROCESSABLE_ENTITY, code, detail)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            Self::Invalid {
                status,
                code,
                detail,
            } => (
                status,
                Json(json!({"status": "invalid_request", "error": code, "detail": detail})),
            )
                .into_response(),
            Self::Refused(refusal) => {
                let (status, code, detail) = match refusal {
                    Refusal::QueueFull { .. } => (
                        StatusCode::TOO_MANY_REQUESTS,
                        "queue_full",
                        "the server is at capacity and its wait queue is full",
                    ),
                    Refusal::WaitTimeout { .. } => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "wait_timeout",
                        "no slot became free within the wait deadline",
                    ),
                };
                let retry_after = refusal.retry_after().as_secs().max(1);
                (
                    status,
                    [(header::RETRY_AFTER, retry_after.to_string())],
                    Json(json!({"status": code, "detail": detail, "retry_after_seconds": retry_after})),
                )
                    .into_response()
            }
            Self::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                Json(json!({"status": "unauthorized",
                            "detail": "admin access needs a valid bearer token (or loopback when none is set)"})),
            )
                .into_response(),
            Self::SwapFailed { code, detail } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(json!({"status": "swap_failed", "error": code, "detail": detail})),
            )
                .into_response(),
            Self::Internal { request_id } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"status": "internal_error", "request_id": request_id})),
            )
                .into_response(),
        }
    }
}
