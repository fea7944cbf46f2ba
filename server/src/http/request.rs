//! A `/retrieve` request, validated: every bound checked and every rejection given its code
//! before any lease or worker is involved.

use serde_json::Value;

use super::api::InvalidCode;
use super::error::{ApiError, MAX_QUOTED_BYTES};
use turnstile_host::sanitize;

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
                format!("field `{}` is given more than once", sanitize(&key, 64)),
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
                        format!(
                            "`limit` must be an integer from 1 to 20, got {}",
                            sanitize(&v.to_string(), MAX_QUOTED_BYTES)
                        ),
                    ));
                }
            },
        };
        if let Some(unknown) = fields.keys().next() {
            return Err(ApiError::invalid(
                InvalidCode::UnknownField,
                format!(
                    "unknown field `{}`; allowed: `question`, `limit`",
                    sanitize(unknown, MAX_QUOTED_BYTES)
                ),
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
