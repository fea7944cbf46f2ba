//! Everything the API answers besides success: one error type that turns into a status, a
//! stable machine-readable code and a safe message (the bodies are in [`super::api`], so the
//! OpenAPI document describes exactly what is sent).

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::api::SourceBody;
use super::api::{
    ForbiddenBody, ForbiddenCode, InternalBody, InvalidCode, InvalidRequestBody, RefusalBody,
    RefusalStatus, RefusingGate, SwapFailedBody, TooManySubscribersBody, UnauthorizedBody,
    UpstreamBody, UpstreamCode, UpstreamStatus,
};
use crate::admission::Refused;
use turnstile_gate::Refusal;
use turnstile_global::GlobalRefusal;
use turnstile_host::capabilities::{Backend, FailureKind, SignalKind, UpstreamSignal};

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
    /// The plugin's call failed because of the backend it calls: 503 `upstream_unavailable`
    /// when it is past its capacity (429, 503, no answer in time; with the backend's
    /// `Retry-After` if it gave one), else 502 `upstream_failed` (401/403, unreachable, another
    /// 4xx or 5xx, an answer the plugin could not read). Keeps the sources the call found.
    #[error("upstream {}: request {request_id}", .code.as_str())]
    Upstream {
        /// What the backend did.
        code: UpstreamCode,
        /// Its `Retry-After` (503 only).
        retry_after: Option<u64>,
        /// Matches the server log line with the cause.
        request_id: u64,
        /// The sources the call found, when its plugin returned them.
        sources: Option<Vec<SourceBody>>,
    },
    /// The plugin failed (trap, guest error, panic): 500 `{"status":"internal_error"}`.
    #[error("internal error in request {request_id}")]
    Internal {
        /// Matches the server log line with the cause.
        request_id: u64,
    },
}

impl ApiError {
    /// The error of a call whose answer failed because of its backend, as what its backends
    /// said tells (whichever capability met them): a load signal (503), else a failure (502),
    /// else `answer_failed` (502).
    pub(crate) fn upstream(
        backend: Backend,
        request_id: u64,
        sources: Option<Vec<SourceBody>>,
    ) -> Self {
        let (code, retry_after) = match (backend.signal, backend.failure) {
            (Some(signal), _) => (
                signal_code(signal),
                Some(signal.retry_after.map_or(1, |d| d.as_secs().max(1))),
            ),
            (None, Some(failure)) => (failure_code(failure), None),
            (None, None) => (UpstreamCode::AnswerFailed, None),
        };
        Self::Upstream {
            code,
            retry_after,
            request_id,
            sources,
        }
    }

    /// The error of a call the operator's embedding server failed (`--embeddings`): 503
    /// `embeddings_unavailable` when trying again may succeed (with its `Retry-After`, else 1 s),
    /// else 502 `embeddings_failed`.
    pub(crate) fn embeddings(failure: &turnstile_corpus::RemoteError, request_id: u64) -> Self {
        let (code, retry_after) = match failure {
            turnstile_corpus::RemoteError::Unreachable { .. } => {
                (UpstreamCode::EmbeddingsUnavailable, Some(1))
            }
            transient if transient.is_transient() => (
                UpstreamCode::EmbeddingsUnavailable,
                Some(transient.retry_after().map_or(1, |d| d.as_secs().max(1))),
            ),
            _ => (UpstreamCode::EmbeddingsFailed, None),
        };
        Self::Upstream {
            code,
            retry_after,
            request_id,
            sources: None,
        }
    }

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
                let (status, body_status, detail, limit) = local_refusal(refusal);
                refused_at(
                    status,
                    body_status,
                    RefusingGate::Local,
                    detail,
                    local_retry_after(refusal),
                    limit,
                )
            }
            Self::GlobalRefused(refusal) => {
                let (status, body_status, detail) = global_refusal(refusal);
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
            Self::Upstream {
                code,
                retry_after,
                request_id,
                sources,
            } => {
                let (status, body_status) = match retry_after {
                    Some(_) => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        UpstreamStatus::UpstreamUnavailable,
                    ),
                    None => (StatusCode::BAD_GATEWAY, UpstreamStatus::UpstreamFailed),
                };
                let mut response = (
                    status,
                    Json(UpstreamBody {
                        status: body_status,
                        error: code,
                        detail: upstream_detail(code).to_owned(),
                        retry_after_seconds: retry_after,
                        sources,
                        request_id,
                        trace_id: crate::traces::current_trace_id(),
                    }),
                )
                    .into_response();
                if let Some(seconds) = retry_after {
                    response
                        .headers_mut()
                        .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
                }
                response
            }
            Self::Internal { request_id } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(InternalBody::new(request_id)),
            )
                .into_response(),
        }
    }
}

/// What a refusal of the local gate is: its status, code, message and the limit hit when it is
/// not the obvious one.
fn local_refusal(
    refusal: Refusal,
) -> (
    StatusCode,
    RefusalStatus,
    &'static str,
    Option<&'static str>,
) {
    match refusal {
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
    }
}

/// When a client refused by the local gate should try again, in seconds.
fn local_retry_after(refusal: Refusal) -> u64 {
    refusal.retry_after().as_secs().max(1)
}

/// What a refusal of the global gate is: its status, code and message.
fn global_refusal(refusal: GlobalRefusal) -> (StatusCode, RefusalStatus, &'static str) {
    match refusal {
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
    }
}

/// An error as any API shape tells it: its status, machine-readable code, message, and when to
/// retry (seconds) if the client should.
#[derive(Debug)]
pub(crate) struct Told {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub retry_after: Option<u64>,
    /// The sources a failed answer's call found.
    pub sources: Option<Vec<SourceBody>>,
    /// The request id a client can quote (for the errors of a call that ran).
    pub request_id: Option<u64>,
    /// Answer with `Connection: close`.
    pub close: bool,
}

impl ApiError {
    /// The error as any API shape tells it (the OpenAI-compatible routes' errors are made from
    /// it: the same status, code and message as the native body's).
    pub(crate) fn told(self) -> Told {
        let plain = |status, code, message: String| Told {
            status,
            code,
            message,
            retry_after: None,
            sources: None,
            request_id: None,
            close: false,
        };
        match self {
            Self::Invalid {
                code,
                detail,
                close,
            } => Told {
                close,
                ..plain(code.status(), code.as_str(), detail)
            },
            Self::Forbidden { code, detail } => plain(StatusCode::FORBIDDEN, code.as_str(), detail),
            Self::Refused(refusal) => {
                let (status, code, detail, _) = local_refusal(refusal);
                Told {
                    retry_after: Some(local_retry_after(refusal)),
                    ..plain(status, code.as_str(), detail.to_owned())
                }
            }
            Self::GlobalRefused(refusal) => {
                let (status, code, detail) = global_refusal(refusal);
                Told {
                    retry_after: Some(1),
                    ..plain(status, code.as_str(), detail.to_owned())
                }
            }
            Self::Unauthorized => plain(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this route needs the admin token".to_owned(),
            ),
            Self::SwapFailed { code, detail } => {
                plain(StatusCode::UNPROCESSABLE_ENTITY, code, detail)
            }
            Self::TooManySubscribers { max } => Told {
                retry_after: Some(5),
                ..plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too_many_subscribers",
                    format!("{max} streams are open"),
                )
            },
            Self::Upstream {
                code,
                retry_after,
                request_id,
                sources,
            } => Told {
                retry_after,
                sources,
                request_id: Some(request_id),
                ..plain(
                    if retry_after.is_some() {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        StatusCode::BAD_GATEWAY
                    },
                    code.as_str(),
                    upstream_detail(code).to_owned(),
                )
            },
            Self::Internal { request_id } => Told {
                request_id: Some(request_id),
                ..plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    format!("the plugin failed; the server log says why (request {request_id})"),
                )
            },
        }
    }
}

/// The code of a backend's load signal.
fn signal_code(signal: UpstreamSignal) -> UpstreamCode {
    match signal.kind {
        SignalKind::RateLimited => UpstreamCode::UpstreamRateLimited,
        SignalKind::Unavailable => UpstreamCode::UpstreamUnavailable,
        SignalKind::Timeout => UpstreamCode::UpstreamTimeout,
    }
}

/// The code of a backend's failure.
fn failure_code(failure: FailureKind) -> UpstreamCode {
    match failure {
        FailureKind::AuthFailed => UpstreamCode::UpstreamAuthFailed,
        FailureKind::Unreachable => UpstreamCode::UpstreamUnreachable,
        FailureKind::Rejected => UpstreamCode::UpstreamRejected,
        FailureKind::ServerError => UpstreamCode::UpstreamError,
    }
}

/// What an upstream error says to a person.
pub(crate) fn upstream_detail(code: UpstreamCode) -> &'static str {
    match code {
        UpstreamCode::UpstreamRateLimited => {
            "the backend the plugin calls is rate limiting (it answered 429)"
        }
        UpstreamCode::UpstreamUnavailable => {
            "the backend the plugin calls is unavailable (it answered 503)"
        }
        UpstreamCode::UpstreamTimeout => "the backend the plugin calls did not answer in time",
        UpstreamCode::UpstreamAuthFailed => {
            "the backend the plugin calls refused its credential (it answered 401 or 403): check the key the operator bound to it"
        }
        UpstreamCode::UpstreamUnreachable => "the backend the plugin calls could not be reached",
        UpstreamCode::UpstreamRejected => {
            "the backend the plugin calls refused the request (it answered 4xx)"
        }
        UpstreamCode::UpstreamError => "the backend the plugin calls failed (it answered 5xx)",
        UpstreamCode::AnswerFailed => {
            "the plugin could not have an answer from what its backend sent"
        }
        UpstreamCode::EmbeddingsUnavailable => {
            "the embedding server could not embed the question now (busy, down or slow)"
        }
        UpstreamCode::EmbeddingsFailed => {
            "the embedding server refused or failed to embed the question"
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
            trace_id: crate::traces::current_trace_id(),
        }),
    )
        .into_response()
}
