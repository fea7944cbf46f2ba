//! `POST /retrieve`: validate, run the plugin on a blocking worker thread, answer.

use std::sync::Arc;
use turnstile_global::Admission;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::api::{InternalBody, InvalidCode, InvalidRequestBody, RefusalBody, RetrieveRequestBody};
use super::body::{read_body, require_json};
use super::request_id::Served;
use super::{ApiError, AppState, RequestId};
use crate::metrics::CallOutcome;
use crate::plugin::{PluginError, Source};

/// Largest request body accepted (413 beyond): a question is at most 500 characters.
pub const MAX_BODY_BYTES: usize = 8 * 1024;
/// Longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 500;
/// Allowed `limit` values and the default.
pub const LIMIT_RANGE: std::ops::RangeInclusive<u64> = 1..=20;
/// `limit` when the request gives none.
pub const DEFAULT_LIMIT: u32 = 5;

/// A validated retrieval request.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrieveRequest {
    /// 1..=500 characters, not blank.
    pub question: String,
    /// 1..=20.
    pub limit: u32,
}

impl RetrieveRequest {
    /// Validates a JSON body: 400 when it is not JSON, 422 when it is JSON of the wrong shape.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            ApiError::invalid(
                InvalidCode::MalformedJson,
                format!("body is not valid JSON: {e}"),
            )
        })?;
        let Value::Object(mut fields) = value else {
            return Err(ApiError::invalid(
                InvalidCode::NotAnObject,
                "body must be a JSON object like {\"question\": \"...\", \"limit\": 5}",
            ));
        };
        // A JSON object keeps the last of repeated keys; a request that repeats one is refused
        // rather than silently read one way here and another way by a proxy in front.
        if let Ok(FirstDuplicate(Some(key))) = serde_json::from_slice::<FirstDuplicate>(body) {
            return Err(ApiError::invalid(
                InvalidCode::DuplicateField,
                format!(
                    "field `{}` is given more than once",
                    crate::plugin::sanitize(&key, 64)
                ),
            ));
        }
        let question = match fields.remove("question") {
            None => {
                return Err(ApiError::invalid(
                    InvalidCode::MissingQuestion,
                    "field `question` is required",
                ));
            }
            Some(Value::String(q)) => q,
            Some(_) => {
                return Err(ApiError::invalid(
                    InvalidCode::InvalidQuestion,
                    "`question` must be a string",
                ));
            }
        };
        let limit = match fields.remove("limit") {
            None => DEFAULT_LIMIT,
            // JSON has one number type: `18.0` is the integer 18 (as JSON Schema says), `2.5`
            // and `"5"` are no integer.
            Some(v) => match whole_number(&v).filter(|n| LIMIT_RANGE.contains(n)) {
                Some(n) => n as u32,
                None => {
                    return Err(ApiError::invalid(
                        InvalidCode::InvalidLimit,
                        format!("`limit` must be an integer from 1 to 20, got {v}"),
                    ));
                }
            },
        };
        if let Some(unknown) = fields.keys().next() {
            return Err(ApiError::invalid(
                InvalidCode::UnknownField,
                format!("unknown field `{unknown}`; allowed: `question`, `limit`"),
            ));
        }
        if question.trim().is_empty() {
            return Err(ApiError::invalid(
                InvalidCode::BlankQuestion,
                "`question` must not be empty or blank",
            ));
        }
        let chars = question.chars().count();
        if chars > MAX_QUESTION_CHARS {
            return Err(ApiError::invalid(
                InvalidCode::QuestionTooLong,
                format!(
                    "`question` has {chars} characters; at most {MAX_QUESTION_CHARS} are allowed"
                ),
            ));
        }
        Ok(Self { question, limit })
    }
}

/// A JSON number that is a whole, non-negative integer (`5` or `5.0`), if it is one.
fn whole_number(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(f))
            .map(|f| f as u64)
    })
}

/// The first key a JSON object repeats at its top level, if any.
struct FirstDuplicate(Option<String>);

impl<'de> serde::Deserialize<'de> for FirstDuplicate {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = FirstDuplicate;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<FirstDuplicate, A::Error> {
                let mut seen: Vec<String> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    if seen.contains(&key) {
                        return Ok(FirstDuplicate(Some(key)));
                    }
                    seen.push(key);
                }
                Ok(FirstDuplicate(None))
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

/// `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompletedStatus {
    /// The only value.
    Completed,
}

/// A 200 answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetrieveResponse {
    /// Always `completed`.
    pub status: CompletedStatus,
    /// Best first.
    pub sources: Vec<SourceBody>,
    /// Which plugin answered.
    pub plugin: PluginBody,
    /// Process-unique request id.
    pub request_id: u64,
    /// Where the time went.
    pub timing: Timing,
}

/// Queue wait and plugin execution, measured separately.
#[derive(Debug, Serialize, ToSchema)]
pub struct Timing {
    /// From arrival at the gate to getting a lease.
    pub queue_ms: f64,
    /// The plugin call on the worker thread.
    pub execution_ms: f64,
}

/// One source in a response, best first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceBody {
    /// A document id of the corpus.
    id: String,
    /// At most 512 bytes.
    title: String,
    /// Higher is better; finite.
    score: f64,
    /// At most 1 KiB.
    snippet: String,
}

/// A plugin generation: the one that served a response, or the one serving now.
#[derive(Debug, Serialize, ToSchema)]
pub struct PluginBody {
    /// Its name (the file stem, or `retrieval` for the embedded one).
    pub name: String,
    /// sha256 of its component.
    pub sha256: String,
    /// 1 at start, +1 per swap.
    pub generation: u64,
}

impl PluginBody {
    /// The body of a generation.
    pub fn of(generation: &crate::plugin::Generation) -> Self {
        Self {
            name: generation.plugin.name().to_owned(),
            sha256: generation.plugin.sha256().to_owned(),
            generation: generation.number,
        }
    }
}

impl From<Source> for SourceBody {
    fn from(s: Source) -> Self {
        Self {
            id: s.id,
            title: s.title,
            score: s.score,
            snippet: s.snippet,
        }
    }
}

/// `POST /retrieve`: the sources for a question, best first.
#[utoipa::path(
    post,
    path = "/retrieve",
    tag = "retrieval",
    request_body(content = RetrieveRequestBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Sources, best first", body = RetrieveResponse),
        (status = 400, description = "Not JSON, or unreadable", body = InvalidRequestBody),
        (status = 408, description = "The body did not arrive in time", body = InvalidRequestBody),
        (status = 413, description = "Body over 8 KiB", body = InvalidRequestBody),
        (status = 415, description = "Not application/json", body = InvalidRequestBody),
        (status = 422, description = "JSON of the wrong shape", body = InvalidRequestBody),
        (status = 429, description = "The wait queue is full", body = RefusalBody,
         headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 500, description = "The plugin failed", body = InternalBody),
        (status = 503, description = "No slot within the wait deadline", body = RefusalBody,
         headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    )
)]
pub async fn retrieve(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    headers: HeaderMap,
    body: Body,
) -> Result<(Extension<Served>, Json<RetrieveResponse>), ApiError> {
    require_json(&headers)?;
    let body = read_body(body, MAX_BODY_BYTES, state.edge.body_timeout).await?;
    let request = RetrieveRequest::parse(&body)?;

    let request_id = id.number;
    // Admission. Cancel-safe: if the client goes away while this waits, the waiter leaves the
    // queue (or gives back a slot promoted to it in the meantime) and never runs.
    let arrived = tokio::time::Instant::now();
    let lease = state.gate.acquire().await.map_err(ApiError::Refused)?;
    // Then the global lease (when replicas share a limit), under the same deadline. Holding the
    // local lease while waiting keeps this process's promise: at most `max_active` admitted.
    let global = match &state.global {
        None => None,
        Some(global) => {
            let deadline = arrived + state.gate.config().wait_deadline;
            let asked = tokio::time::Instant::now();
            match global.acquire(deadline).await {
                Ok(Admission::Granted(lease)) => {
                    state.metrics.global_waited(asked.elapsed());
                    Some(lease)
                }
                Ok(Admission::FailedOpen) => None,
                Err(refusal) => return Err(ApiError::GlobalRefused(refusal)),
            }
        }
    };
    let queue_ms = arrived.elapsed().as_secs_f64() * 1e3;
    // If this handler is dropped from here on (client disconnect, read timeout), the lease is
    // marked as belonging to a gone client — but it stays held by the worker below.
    let client = lease.client_watch();
    // The generation is fixed at admission: a swap from here on does not affect this request.
    let generation = state.plugins.current();
    let plugin = Arc::clone(&generation.plugin);
    let metrics = Arc::clone(&state.metrics);
    // The worker logs inside this request's span, like the handler.
    let span = tracing::Span::current();
    let worker = tokio::task::spawn_blocking(move || {
        let _in_request = span.enter();
        // The lease lives in the worker: it is released when this closure ends — the plugin
        // call has returned, failed, trapped or panicked — and not a moment earlier.
        let lease = lease;
        let global = global;
        let started = std::time::Instant::now();
        let (result, stats) = plugin.retrieve_metered(&request.question, request.limit, request_id);
        let execution_ms = started.elapsed().as_secs_f64() * 1e3;
        let (waited, held) = (lease.waited(), lease.held());
        drop(global);
        drop(lease);
        metrics.admitted(waited, held);
        metrics.call(call_outcome(&result), stats.instantiate);
        (result, execution_ms)
    });
    let outcome = worker.await;
    client.disarm();
    match outcome {
        Ok((Ok(sources), execution_ms)) => Ok((
            Extension(Served {
                generation: generation.number,
                queue_ms,
                execution_ms,
            }),
            Json(RetrieveResponse {
                status: CompletedStatus::Completed,
                sources: sources.into_iter().map(SourceBody::from).collect(),
                plugin: PluginBody::of(&generation),
                request_id,
                timing: Timing {
                    queue_ms,
                    execution_ms,
                },
            }),
        )),
        Ok((Err(error), _)) => {
            tracing::error!(plugin = generation.plugin.name(), %error, "plugin call failed");
            Err(ApiError::Internal { request_id })
        }
        Err(join) => {
            tracing::error!(plugin = generation.plugin.name(), error = %join, "plugin worker panicked");
            state.metrics.call(CallOutcome::Trap, Default::default());
            Err(ApiError::Internal { request_id })
        }
    }
}

/// How a plugin call ended, as the metrics count it.
fn call_outcome(result: &Result<Vec<Source>, PluginError>) -> CallOutcome {
    match result {
        Ok(_) => CallOutcome::Ok,
        Err(PluginError::Guest(_)) => CallOutcome::PluginError,
        Err(PluginError::Contract(_)) => CallOutcome::Contract,
        Err(_) => CallOutcome::Trap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn code(body: &str) -> (StatusCode, &'static str) {
        match RetrieveRequest::parse(body.as_bytes()) {
            Err(ApiError::Invalid { code, .. }) => (code.status(), code.as_str()),
            other => panic!("{body} gave {other:?}"),
        }
    }

    #[test]
    fn valid_requests() {
        let r = RetrieveRequest::parse(br#"{"question":"json"}"#).unwrap();
        assert_eq!(
            r,
            RetrieveRequest {
                question: "json".into(),
                limit: 5
            }
        );
        let r = RetrieveRequest::parse(br#"{"question":"json","limit":20}"#).unwrap();
        assert_eq!(r.limit, 20);
        let r = RetrieveRequest::parse(br#"{"question":"json","limit":18.0}"#).unwrap();
        assert_eq!(r.limit, 18);
        let q = "é".repeat(500);
        assert!(
            RetrieveRequest::parse(serde_json::json!({"question": q}).to_string().as_bytes())
                .is_ok()
        );
    }

    #[test]
    fn invalid_requests_get_their_code() {
        let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
        assert_eq!(code("{"), (StatusCode::BAD_REQUEST, "malformed_json"));
        assert_eq!(
            code(r#"{"question":"a"} x"#),
            (StatusCode::BAD_REQUEST, "malformed_json")
        );
        assert_eq!(code("[1]"), (unprocessable, "not_an_object"));
        assert_eq!(code("{}"), (unprocessable, "missing_question"));
        assert_eq!(
            code(r#"{"question":7}"#),
            (unprocessable, "invalid_question")
        );
        assert_eq!(
            code(r#"{"question":"  \n"}"#),
            (unprocessable, "blank_question")
        );
        assert_eq!(
            code(r#"{"question":""}"#),
            (unprocessable, "blank_question")
        );
        assert_eq!(
            code(&format!(r#"{{"question":"{}"}}"#, "a".repeat(501))),
            (unprocessable, "question_too_long")
        );
        for limit in ["0", "21", "-1", "2.5", "\"5\"", "null", "21.0", "1e100"] {
            assert_eq!(
                code(&format!(r#"{{"question":"a","limit":{limit}}}"#)),
                (unprocessable, "invalid_limit")
            );
        }
        assert_eq!(
            code(r#"{"question":"a","delay_ms":5}"#),
            (unprocessable, "unknown_field")
        );
        assert_eq!(
            code(r#"{"question":"a","question":"b"}"#),
            (unprocessable, "duplicate_field")
        );
        assert_eq!(
            code(r#"{"question":"a","limit":1,"limit":20}"#),
            (unprocessable, "duplicate_field")
        );
    }
}
