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
        /// 400, 408, 413, 415 or 422.
        status: StatusCode,
        /// Machine-readable code, e.g. `question_too_long`.
        code: &'static str,
        /// Human message.
        detail: String,
        /// Answer with `Connection: close` (the body was not read whole).
        close: bool,
    },
    /// An admin request refused for where it comes from: 403 (`cross_origin`,
    /// `host_not_allowed`).
    #[error("{code}: {detail}")]
    Forbidden {
        /// Machine-readable code.
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
            close: false,
        }
    }

    /// The same error, answered with `Connection: close`.
    pub(crate) fn closing(self) -> Self {
        match self {
            Self::Invalid {
                status,
                code,
                detail,
                ..
            } => Self::Invalid {
                status,
                code,
                detail,
                close: true,
            },
            other => other,
        }
    }

    pub(crate) fn unprocessable(code: &'static str, detail: impl Into<String>) -> Self {
        Self::invalid(StatusCode::UNPROCESSABLE_ENTITY, code, detail)
    }
}

/// A response extension naming the code of an edge rejection, for the metrics.
#[derive(Debug, Clone, Copy)]
pub struct Rejected(pub &'static str);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let rejected = match &self {
            Self::Invalid { code, .. } => Some(Rejected(code)),
            _ => None,
        };
        let mut response = self.respond();
        if let Some(rejected) = rejected {
            response.extensions_mut().insert(rejected);
        }
        response
    }
}

impl ApiError {
    fn respond(self) -> Response {
        match self {
            Self::Invalid {
                status,
                code,
                detail,
                close,
            } => {
                let mut response = (
                    status,
                    Json(json!({"status": "invalid_request", "error": code, "detail": detail})),
                )
                    .into_response();
                if close {
                    response
                        .headers_mut()
                        .insert(header::CONNECTION, header::HeaderValue::from_static("close"));
                }
                response
            }
            Self::Forbidden { code, detail } => (
                StatusCode::FORBIDDEN,
                Json(json!({"status": "forbidden", "error": code, "detail": detail})),
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
