//! Reading a request body within its bounds: at most a given size, within the body timeout. A
//! body over the size is drained (up to [`DRAIN_BYTES`]) before the 413 is sent with
//! `Connection: close`, so a client that is still sending reads the 413 instead of a reset.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use http_body_util::BodyExt;

use super::ApiError;
use super::api::InvalidCode;

/// Most bytes of an over-size body read and thrown away before answering 413: past it the
/// connection is closed with the body unread (the client may then see a reset).
pub const DRAIN_BYTES: usize = 2 << 20;

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
