//! The `/v1` routes' errors in OpenAI's shape: `{"error": {"message", "type", "param",
//! "code"}}` with the status OpenAI would answer — what the OpenAI SDKs read (they raise a typed
//! error per status, and retry 429 and 5xx honouring `Retry-After`). The code is turnstile's
//! own (`queue_full`, `wait_timeout`, `upstream_auth_failed`, …), the same as the native
//! routes'; a refused body is 400 (OpenAI's status for it) where `/retrieve` answers 422.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::http::api::{OpenAiErrorBody, OpenAiErrorDetail, OpenAiErrorType, SourceBody};
use crate::http::error::{ApiError, Rejected};

/// An error of a `/v1` route.
#[derive(Debug)]
pub struct ChatError {
    /// The HTTP status.
    pub status: StatusCode,
    /// Machine-readable code.
    pub code: &'static str,
    /// For a person.
    pub message: String,
    /// The request field at fault.
    pub param: Option<String>,
    /// Seconds before retrying (also `Retry-After`), when the client should.
    pub retry_after: Option<u64>,
    /// The sources a call found before its answer failed.
    pub sources: Option<Vec<SourceBody>>,
    /// The request's id, for the errors of a call that ran.
    pub request_id: Option<u64>,
    /// A refusal at the edge (counted and logged by its code).
    rejected: bool,
    /// Answer with `Connection: close` (the body was not read whole).
    close: bool,
}

impl ChatError {
    /// A request refused before any work: 400 with `code`, naming `param`.
    pub fn invalid(code: &'static str, message: impl Into<String>, param: Option<&str>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code,
            message: message.into(),
            param: param.map(str::to_owned),
            retry_after: None,
            sources: None,
            request_id: None,
            rejected: true,
            close: false,
        }
    }

    /// A model this server does not serve: 404 `model_not_found`, as OpenAI answers.
    pub fn unknown_model(asked: &str, served: &str) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            ..Self::invalid(
                "model_not_found",
                format!(
                    "the model {:?} is not served here; GET /v1/models lists {served:?}",
                    turnstile_host::sanitize(asked, 128)
                ),
                Some("model"),
            )
        }
    }

    /// OpenAI's word for the kind of error.
    fn kind(&self) -> OpenAiErrorType {
        match self.status.as_u16() {
            403 => OpenAiErrorType::PermissionError,
            429 => OpenAiErrorType::RateLimitError,
            502 => OpenAiErrorType::UpstreamError,
            500..=599 => OpenAiErrorType::ServerError,
            _ => OpenAiErrorType::InvalidRequestError,
        }
    }

    /// The body (also a stream's `error` event, when the stream had begun).
    pub fn body(&mut self) -> OpenAiErrorBody {
        OpenAiErrorBody {
            error: OpenAiErrorDetail {
                message: self.message.clone(),
                kind: self.kind(),
                param: self.param.clone(),
                code: self.code.to_owned(),
            },
            sources: self.sources.take(),
            request_id: self.request_id,
        }
    }
}

impl From<ApiError> for ChatError {
    fn from(error: ApiError) -> Self {
        let rejected = matches!(error, ApiError::Invalid { .. });
        let told = error.told();
        Self {
            // OpenAI answers a body it cannot take with 400.
            status: if told.status == StatusCode::UNPROCESSABLE_ENTITY {
                StatusCode::BAD_REQUEST
            } else {
                told.status
            },
            code: told.code,
            message: told.message,
            param: None,
            retry_after: told.retry_after,
            sources: told.sources,
            request_id: told.request_id,
            rejected,
            close: told.close,
        }
    }
}

impl IntoResponse for ChatError {
    fn into_response(mut self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        let headers = response.headers_mut();
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.close {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if self.rejected {
            response.extensions_mut().insert(Rejected(self.code));
        }
        response
    }
}
