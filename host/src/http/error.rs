use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

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
            Self::Internal { request_id } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"status": "internal_error", "request_id": request_id})),
            )
                .into_response(),
        }
    }
}
