//! Reading a request body within its bounds: at most a given size, within the body timeout. A
//! body over the size is drained (up to [`DRAIN_BYTES`]) before the 413 is sent with
//! `Connection: close`, so a client that is still sending reads the 413 instead of a reset.
//!
//! The route table gives each route its [`BodyRule`], which adds the answers reading a body gives
//! — 400, 408, 413 and 415 — to the route's OpenAPI entry ([`BodyRule::document`]), as the access
//! rule adds 401 and 403: no handler writes them.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use http_body_util::BodyExt;
use utoipa_axum::router::UtoipaMethodRouter;

use super::ApiError;
use super::api::{InvalidCode, InvalidRequestBody, OpenAiErrorBody};
use super::openapi::{answer, operations, with_schemas};

/// Most bytes of an over-size body read and thrown away before answering 413: past it the
/// connection is closed with the body unread (the client may then see a reset).
pub const DRAIN_BYTES: usize = 2 << 20;

/// What a route reads of its request's body (the route table gives each route one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyRule {
    /// Nothing: no body is read.
    Unread,
    /// A JSON body of at most this many bytes ([`read_body`], after [`require_json`]), refused
    /// with an [`InvalidRequestBody`].
    Json(usize),
    /// The same, refused in OpenAI's error shape ([`OpenAiErrorBody`]): the OpenAI-compatible
    /// routes.
    OpenAiJson(usize),
}

impl BodyRule {
    /// Adds what reading the body answers under this rule to every operation of `route`'s
    /// OpenAPI entry, with the error body's schema. A status the route documents itself (a 400
    /// that also covers its own checks) is kept as the route wrote it.
    pub fn document<S>(self, (schemas, paths, _): &mut UtoipaMethodRouter<S>) {
        let (max, openai) = match self {
            Self::Unread => return,
            Self::Json(max) => (max, false),
            Self::OpenAiJson(max) => (max, true),
        };
        let too_large = format!("Body over {}", binary_size(max));
        let answers = [
            ("400", "Not JSON, or unreadable"),
            ("408", "The body did not arrive in time"),
            ("413", too_large.as_str()),
            ("415", "Not application/json"),
        ];
        for operation in paths.paths.values_mut().flat_map(operations) {
            let responses = &mut operation.responses.responses;
            for (status, description) in answers {
                responses.entry(status.into()).or_insert_with(|| {
                    if openai {
                        answer::<OpenAiErrorBody>(description)
                    } else {
                        answer::<InvalidRequestBody>(description)
                    }
                });
            }
        }
        if openai {
            with_schemas::<OpenAiErrorBody>(schemas);
        } else {
            with_schemas::<InvalidRequestBody>(schemas);
        }
    }
}

/// `bytes` as a person reads a bound: `8 KiB`, `1 MiB` (whole units only, else bytes).
fn binary_size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// Refuses a body that is not declared JSON (`application/json` or `application/*+json`): 415.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    match essence {
        Some(e)
            if e == "application/json"
                || (e.starts_with("application/") && e.ends_with("+json")) =>
        {
            Ok(())
        }
        _ => Err(ApiError::invalid(
            InvalidCode::UnsupportedMediaType,
            "send the body as JSON with `Content-Type: application/json`",
        )),
    }
}

/// Reads `body` whole: at most `max` bytes, all of it within `timeout`.
pub async fn read_body(body: Body, max: usize, timeout: Duration) -> Result<Bytes, ApiError> {
    let read = async {
        let mut body = body;
        let mut buffer = Vec::new();
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                ApiError::invalid(InvalidCode::UnreadableBody, e.to_string()).closing()
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            seen = seen.saturating_add(data.len());
            if seen <= max {
                buffer.extend_from_slice(&data);
            } else if seen > max.saturating_add(DRAIN_BYTES) {
                break;
            }
        }
        if seen > max {
            return Err(ApiError::invalid(
                InvalidCode::BodyTooLarge,
                format!("body is larger than {max} bytes"),
            )
            .closing());
        }
        Ok(Bytes::from(buffer))
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(result) => result,
        Err(_) => Err(ApiError::invalid(
            InvalidCode::BodyTimeout,
            format!("the body did not arrive within {} ms", timeout.as_millis()),
        )
        .closing()),
    }
}

#[cfg(test)]
mod tests {
    use super::binary_size;

    #[test]
    fn a_bound_reads_in_whole_binary_units() {
        assert_eq!(binary_size(8 * 1024), "8 KiB");
        assert_eq!(binary_size(64 * 1024), "64 KiB");
        assert_eq!(binary_size(1 << 20), "1 MiB");
        assert_eq!(binary_size(1500), "1500 bytes");
        assert_eq!(binary_size(3 << 19), "1536 KiB");
    }
}
