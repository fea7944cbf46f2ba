//! The bodies of every answer besides success: refused before any work (`invalid_request`),
//! refused by a gate (`queue_full`, `wait_timeout`, `global_unavailable`), refused for where it
//! comes from or without credentials (`forbidden`, `unauthorized`), a refused swap, a full live
//! view, and the plugin's failure (`internal_error`). Each code decides its status.

use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

/// Why a request was refused before any work; the code decides the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum InvalidCode {
    /// 400: the body is not JSON.
    MalformedJson,
    /// 400: the body could not be read.
    UnreadableBody,
    /// 408: the body did not arrive within `--body-timeout-ms`.
    BodyTimeout,
    /// 413: the body is over its bound.
    BodyTooLarge,
    /// 415: not `Content-Type: application/json`.
    UnsupportedMediaType,
    /// 422: JSON, but not an object.
    NotAnObject,
    /// 422: no `question`.
    MissingQuestion,
    /// 422: `question` is not a string.
    InvalidQuestion,
    /// 422: `question` is empty or blank.
    BlankQuestion,
    /// 422: `question` is over 500 characters.
    QuestionTooLong,
    /// 422: `limit` is not an integer from 1 to 20.
    InvalidLimit,
    /// 422: a field the request does not take.
    UnknownField,
    /// 422: a field given twice.
    DuplicateField,
    /// 422: a swap request of the wrong shape.
    InvalidSwapRequest,
    /// 422: a `sha256` that is not 64 hex digits.
    InvalidSha256,
    /// 422: swap settings out of their bounds, or naming a secret.
    InvalidPluginConfig,
    /// 422: a swap's `outbound_allow` is not a list of at most 64 origins `scheme://host[:port]`.
    InvalidOutboundAllow,
    /// 400: a `Last-Event-ID` that is not a decimal event id.
    InvalidLastEventId,
    /// 400: the `--flow-header` value is not a flow name (1-64 bytes of `A-Z a-z 0-9 . _ : -`).
    InvalidFlow,
    /// 404: no route has this path (`GET /openapi.json` lists them).
    NotFound,
    /// 405: the route does not take this method (`Allow` lists those it takes).
    MethodNotAllowed,
}

impl InvalidCode {
    /// The HTTP status of this refusal.
    pub fn status(self) -> StatusCode {
        match self {
            Self::MalformedJson
            | Self::UnreadableBody
            | Self::InvalidLastEventId
            | Self::InvalidFlow => StatusCode::BAD_REQUEST,
            Self::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }

    /// The code as sent.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Why an admin request was refused for where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ForbiddenCode {
    /// An `Origin` other than the server's own (a browser page elsewhere).
    CrossOrigin,
    /// Without a token, a `Host` that is not a loopback name (DNS rebinding).
    HostNotAllowed,
    /// Without a token, forwarding headers: the request came through a proxy.
    ProxiedWithoutToken,
}

impl ForbiddenCode {
    /// The code as sent.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

macro_rules! one_word {
    ($($(#[$doc:meta])* $name:ident = $variant:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            /// The only value.
            $variant,
        }
    )*};
}

one_word! {
    /// `invalid_request`.
    InvalidStatus = InvalidRequest;
    /// `forbidden`.
    ForbiddenStatus = Forbidden;
    /// `unauthorized`.
    UnauthorizedStatus = Unauthorized;
    /// `swap_failed`.
    SwapFailedStatus = SwapFailed;
    /// `internal_error`.
    InternalStatus = InternalError;
    /// `too_many_subscribers`.
    TooManySubscribersStatus = TooManySubscribers;
}

/// How a call whose backend failed it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamStatus {
    /// 503: the backend is past its capacity (429, 503, no answer in time): retry later.
    UpstreamUnavailable,
    /// 502: the backend failed the answer otherwise (refused the credential, could not be
    /// reached, refused the request, failed itself, or answered what the plugin could not read).
    UpstreamFailed,
}

/// A 503 of `/retrieve`: no slot came in time, or the plugin's backend is past its capacity.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum RetrieveUnavailable {
    /// The gate (local or global).
    Refused(RefusalBody),
    /// The backend the plugin calls.
    Upstream(UpstreamBody),
}

/// What the backend behind the plugin did: the first three are 503 `upstream_unavailable`,
/// the others 502 `upstream_failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum UpstreamCode {
    /// 503: it answered 429: it is rate limiting.
    UpstreamRateLimited,
    /// 503: it answered 503.
    UpstreamUnavailable,
    /// 503: it did not answer within the outbound timeouts.
    UpstreamTimeout,
    /// 502: it answered 401 or 403: the credential is wrong or lacks a right.
    UpstreamAuthFailed,
    /// 502: no connection could be made to it.
    UpstreamUnreachable,
    /// 502: it refused the request as made (another 4xx: a model it does not serve).
    UpstreamRejected,
    /// 502: it failed itself (another 5xx).
    UpstreamError,
    /// 502: the plugin could not have an answer from what the backend sent (not the shape it
    /// reads, a stream that broke off).
    AnswerFailed,
    /// 503: the embedding server the operator named (`--embeddings`) is past its capacity
    /// (429, 503, no answer in time) or could not be reached: the question could not be embedded.
    EmbeddingsUnavailable,
    /// 502: the embedding server refused or failed the question (401/403, another 4xx or 5xx,
    /// an answer that is not embeddings).
    EmbeddingsFailed,
}

impl UpstreamCode {
    /// The code as sent.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// 503 or 502: the plugin's call failed because the backend it calls (a model API, a vector
/// database) refused, failed or did not answer. A 503 says when to retry (`retry_after_seconds`:
/// the backend's own `Retry-After` when it gave one). The call ran; its slot was held until it
/// returned. The sources it found before its answer failed are kept.
#[derive(Debug, Serialize, ToSchema)]
pub struct UpstreamBody {
    /// `upstream_unavailable` (503) or `upstream_failed` (502).
    pub status: UpstreamStatus,
    /// What the backend did.
    pub error: UpstreamCode,
    /// Human message.
    pub detail: String,
    /// Seconds to wait before trying again (also the `Retry-After` header); 503 only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    /// The sources the call found, when its plugin returned them beside the failed answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<super::retrieval::SourceBody>>,
    /// Matches the server log's lines about this request.
    pub request_id: u64,
    /// The request's trace (32 hex digits), with traces on (`--otlp-endpoint`): what to look
    /// for in the tracing backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// 503: `--max-subscribers` `/events` streams are open already.
#[derive(Debug, Serialize, ToSchema)]
pub struct TooManySubscribersBody {
    /// Always `too_many_subscribers`.
    pub status: TooManySubscribersStatus,
    /// Human message.
    pub detail: String,
    /// Suggested wait before retrying, in seconds (also in `Retry-After`).
    pub retry_after_seconds: u64,
}

impl TooManySubscribersBody {
    /// The body for a cap of `max` streams.
    pub fn new(max: usize, retry_after_seconds: u64) -> Self {
        Self {
            status: TooManySubscribersStatus::TooManySubscribers,
            detail: format!("{max} /events streams are open (--max-subscribers); try again later"),
            retry_after_seconds,
        }
    }
}

/// 400, 408, 413, 415, 422: refused before any work.
#[derive(Debug, Serialize, ToSchema)]
pub struct InvalidRequestBody {
    status: InvalidStatus,
    /// What is wrong.
    error: InvalidCode,
    /// For a person.
    detail: String,
    /// The request's trace (32 hex digits), with traces on (`--otlp-endpoint`): what to look
    /// for in the tracing backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl InvalidRequestBody {
    pub(crate) fn new(error: InvalidCode, detail: String) -> Self {
        Self {
            status: InvalidStatus::InvalidRequest,
            error,
            detail,
            trace_id: crate::traces::current_trace_id(),
        }
    }
}

/// 403: an admin request refused for where it comes from.
#[derive(Debug, Serialize, ToSchema)]
pub struct ForbiddenBody {
    status: ForbiddenStatus,
    /// Why.
    error: ForbiddenCode,
    /// For a person.
    detail: String,
}

impl ForbiddenBody {
    pub(crate) fn new(error: ForbiddenCode, detail: String) -> Self {
        Self {
            status: ForbiddenStatus::Forbidden,
            error,
            detail,
        }
    }
}

/// The gate's refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RefusalStatus {
    /// 429: the wait queue is full.
    QueueFull,
    /// 503: no slot within the wait deadline.
    WaitTimeout,
    /// 503: the global limit's Redis cannot be reached and `--global-failure closed`.
    GlobalUnavailable,
}

impl RefusalStatus {
    /// The code as sent.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Which gate refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusingGate {
    /// This process's gate (`--max-active`, `--max-waiting`).
    Local,
    /// The global limit shared by every replica (`--global-max-active`, on Redis).
    Global,
}

/// 429 or 503: the gate refused; the request never ran. `Retry-After` says when to try again.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefusalBody {
    /// Which refusal.
    pub status: RefusalStatus,
    /// Which gate refused.
    pub gate: RefusingGate,
    /// For a person.
    pub detail: String,
    /// The same as `Retry-After`: the time for the queue ahead to drain at the recent rate.
    pub retry_after_seconds: u64,
    /// With flows on, when the request's own flow hit its bound: `max_waiting_per_flow` (other
    /// flows may still queue). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<&'static str>,
    /// The request's trace (32 hex digits), with traces on (`--otlp-endpoint`): what to look
    /// for in the tracing backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// 401: admin access refused.
#[derive(Debug, Serialize, ToSchema)]
pub struct UnauthorizedBody {
    status: UnauthorizedStatus,
    /// For a person.
    detail: &'static str,
}

impl UnauthorizedBody {
    pub(crate) fn new() -> Self {
        Self {
            status: UnauthorizedStatus::Unauthorized,
            detail: "admin access needs a valid bearer token (or loopback when none is set)",
        }
    }
}

/// 422: a swap refused; the current plugin keeps serving.
#[derive(Debug, Serialize, ToSchema)]
pub struct SwapFailedBody {
    status: SwapFailedStatus,
    /// `plugin_unreadable`, `sha256_mismatch`, `sha256_required`, `incompatible_plugin`,
    /// `corpus_unavailable`, `timeout`, `smoke_failed`, `swap_conflict` (another swap installed
    /// a generation meanwhile) or `swap_busy` (two candidates are being checked already).
    error: &'static str,
    /// For a person.
    detail: String,
}

impl SwapFailedBody {
    pub(crate) fn new(error: &'static str, detail: String) -> Self {
        Self {
            status: SwapFailedStatus::SwapFailed,
            error,
            detail,
        }
    }
}

/// 422 from `/admin/plugin`: a request of the wrong shape, or a refused candidate.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum SwapRefusal {
    /// The request itself.
    Invalid(InvalidRequestBody),
    /// The candidate.
    Refused(SwapFailedBody),
}

/// 500: the plugin trapped, failed or broke the contract; the cause is in the server log under
/// this request id.
#[derive(Debug, Serialize, ToSchema)]
pub struct InternalBody {
    status: InternalStatus,
    /// Matches the server log's lines about this request.
    request_id: u64,
    /// The request's trace (32 hex digits), with traces on (`--otlp-endpoint`): what to look
    /// for in the tracing backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl InternalBody {
    pub(crate) fn new(request_id: u64) -> Self {
        Self {
            status: InternalStatus::InternalError,
            request_id,
            trace_id: crate::traces::current_trace_id(),
        }
    }
}
