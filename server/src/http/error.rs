//! Everything the API answers besides success: one error type that turns into a status, a
//! stable machine-readable code and a safe message (the bodies are in [`super::api`], so the
//! OpenAPI document describes exactly what is sent).

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::api::{
    ForbiddenBody, ForbiddenCode, InternalBody, InvalidCode, InvalidRequestBody, RefusalBody,
    RefusalStatus, RefusingGate, SwapFailedBody, TooManySubscribersBody, UnauthorizedBody,
    UpstreamBody, UpstreamCode, UpstreamStatus,
};
use crate::admission::Refused;
use turnstile_gate::Refusal;
use turnstile_global::GlobalRefusal;
use turnstile_host::capabilities::outbound::{SignalKind, UpstreamSignal};

/// How much of a refused value an error message quotes, in bytes (cut and escaped: it comes
/// from the request).
pub(crate) const MAX_QUOTED_BYTES: usize = 256;

/// What the API can answer besides success. Causes of internal errors stay in the server log.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is refused before any work: `{"status":"invalid_request","error","detail"}`.
    #[error("{}: {detail}", .code.as_str())]
    Invalid {
        /// Machine-readable code, e.g. `question_too_long`; it decides the status.
        code: InvalidCode,
        /// Human message.
        detail: String,
        /// Answer with `Connection: close` (the body was not read whole).
        close: bool,
    },
    /// An admin request refused for where it comes from: 403.
    #[error("{}: {detail}", .code.as_str())]
    Forbidden {
        /// Machine-readable code.
        code: ForbiddenCode,
        /// Human message.
        detail: String,
    },
    /// The gate refused the request; it never ran: 429 `queue_full` or 503 `wait_timeout`,
    /// with `Retry-After`.
    #[error("{0}")]
    Refused(Refusal),
    /// The global gate refused; the request never ran: 429 `queue_full`, 503 `wait_timeout` or
    /// 503 `global_unavailable`, with `Retry-After`.
    #[error("{0}")]
    GlobalRefused(GlobalRefusal),
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
    /// `--max-subscribers` `/events` streams are open: 503 `too_many_subscribers`.
    #[error("too_many_subscribers: {max} streams are open")]
    TooManySubscribers {
        /// The cap.
        max: usize,
    },
    /// The plugin's call failed because the backend it calls refused (429, 503) or did not
    /// answer in time: 503 `upstream_unavailable`, with the backend's `Retry-After` if it gave
    /// one.
    #[error("upstream {}: request {request_id}", .signal.kind.as_str())]
    Upstream {
        /// What the backend said.
        signal: UpstreamSignal,
        /// Matches the server log line with the cause.
        request_id: u64,
    },
    /// The plugin failed (trap, guest error, panic): 500 `{"status":"internal_error"}`.
    #[error("internal error in request {request_id}")]
    Internal {
        /// Matches the server log line with the cause.
        request_id: u64,
    },
}

impl ApiError {
    pub(crate) fn invalid(code: InvalidCode, detail: impl Into<String>) -> Self {
        Self::Invalid {
            code,
            detail: detail.into(),
            close: false,
        }
    }

    /// The same error, answered with `Connection: close`.
    pub(crate) fn closing(self) -> Self {
        match self {
            Self::Invalid { code, detail, .. } => Self::Invalid {
                code,
                detail,
                close: true,
            },
            other => other,
        }
    }
}

/// A response extension naming the code of an edge rejection, for the metrics and the access
/// log.
#[derive(Debug, Clone, Copy)]
pub struct Rejected(pub &'static str);

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Local(refusal) => Self::Refused(refusal),
            Refused::Global(refusal) => Self::GlobalRefused(refusal),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let rejected = match &self {
            Self::Invalid { code, .. } => Some(Rejected(code.as_str())),
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
                code,
                detail,
                close,
            } => {
                let mut response =
                    (code.status(), Json(InvalidRequestBody::new(code, detail))).into_response();
                if close {
                    response.headers_mut().insert(
                        header::CONNECTION,
                        header::HeaderValue::from_static("close"),
                    );
                }
                response
            }
            Self::Forbidden { code, detail } => (
                StatusCode::FORBIDDEN,
                Json(ForbiddenBody::new(code, detail)),
            )
                .into_response(),
            Self::Refused(refusal) => {
                let (status, body_status, detail, limit) = match refusal {
                    Refusal::QueueFull { .. } => (
                        StatusCode::TOO_MANY_REQUESTS,
                        RefusalStatus::QueueFull,
                        "the server is at capacity and its wait queue is full",
                        None,
                    ),
                    Refusal::FlowQueueFull { .. } => (
                        StatusCode::TOO_MANY_REQUESTS,
                        RefusalStatus::QueueFull,
                        "the server is at capacity and this flow's lane of the wait queue is full (--max-waiting-per-flow); other flows still queue",
                        Some("max_waiting_per_flow"),
                    ),
                    Refusal::WaitTimeout { .. } => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        RefusalStatus::WaitTimeout,
                        "no slot became free within the wait deadline",
                        None,
                    ),
                };
                let retry_after = refusal.retry_after().as_secs().max(1);
                refused_at(
                    status,
                    body_status,
                    RefusingGate::Local,
                    detail,
                    retry_after,
                    limit,
                )
            }
            Self::GlobalRefused(refusal) => {
                let (status, body_status, detail) = match refusal {
                    GlobalRefusal::QueueFull => (
                        StatusCode::TOO_MANY_REQUESTS,
                        RefusalStatus::QueueFull,
                        "the global limit shared by every replica is reached and its queue is full",
                    ),
                    GlobalRefusal::WaitTimeout => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        RefusalStatus::WaitTimeout,
                        "no global lease became free within the wait deadline",
                    ),
                    GlobalRefusal::Unavailable => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        RefusalStatus::GlobalUnavailable,
                        "the global limit cannot be reached (Redis) and this server refuses without it",
                    ),
                };
                refused(status, body_status, RefusingGate::Global, detail, 1)
            }
            Self::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                // Basic too, so that a browser opening /dashboard asks for the token.
                [(
                    header::WWW_AUTHENTICATE,
                    r#"Bearer realm="turnstile", Basic realm="turnstile", charset="UTF-8""#,
                )],
                Json(UnauthorizedBody::new()),
            )
                .into_response(),
            Self::SwapFailed { code, detail } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(SwapFailedBody::new(code, detail)),
            )
                .into_response(),
            Self::TooManySubscribers { max } => {
                let retry_after = 5;
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, retry_after.to_string())],
                    Json(TooManySubscribersBody::new(max, retry_after)),
                )
                    .into_response()
            }
            Self::Upstream { signal, request_id } => {
                let (error, detail) = match signal.kind {
                    SignalKind::RateLimited => (
                        UpstreamCode::UpstreamRateLimited,
                        "the backend the plugin calls is rate limiting (it answered 429)",
                    ),
                    SignalKind::Unavailable => (
                        UpstreamCode::UpstreamUnavailable,
                        "the backend the plugin calls is unavailable (it answered 503)",
                    ),
                    SignalKind::Timeout => (
                        UpstreamCode::UpstreamTimeout,
                        "the backend the plugin calls did not answer in time",
                    ),
                };
                let retry_after = signal.retry_after.map_or(1, |d| d.as_secs().max(1));
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, retry_after.to_string())],
                    Json(UpstreamBody {
                        status: UpstreamStatus::UpstreamUnavailable,
                        error,
                        detail: detail.to_owned(),
                        retry_after_seconds: retry_after,
                        request_id,
                    }),
                )
                    .into_response()
            }
            Self::Internal { request_id } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(InternalBody::new(request_id)),
            )
                .into_response(),
        }
    }
}

/// A refusal: the request never ran.
fn refused(
    status: StatusCode,
    body_status: RefusalStatus,
    gate: RefusingGate,
    detail: &str,
    retry_after: u64,
) -> Response {
    refused_at(status, body_status, gate, detail, retry_after, None)
}

/// [`refused`], naming the limit that was hit when it is not the obvious one.
fn refused_at(
    status: StatusCode,
    body_status: RefusalStatus,
    gate: RefusingGate,
    detail: &str,
    retry_after: u64,
    limit: Option<&'static str>,
) -> Response {
    (
        status,
        [(header::RETRY_AFTER, retry_after.to_string())],
        Json(RefusalBody {
            status: body_status,
            gate,
            detail: detail.to_owned(),
            retry_after_seconds: retry_after,
            limit,
        }),
    )
        .into_response()
}
