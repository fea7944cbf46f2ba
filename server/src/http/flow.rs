//! The flow a `/retrieve` request belongs to, with `--flow-header`: the header's value, checked
//! before anything else happens to the request. Without the header a request is in the default
//! flow; with flows off, every request is.

use axum::http::{HeaderMap, HeaderName};
use turnstile_gate::{MAX_FLOW_NAME_BYTES, valid_flow_name};

use super::api::InvalidCode;
use super::error::ApiError;

/// The request's flow name: `None` for the default flow (flows off, or no header). A value that
/// is not a flow name — or the header given twice — is 400 `invalid_flow`, whose message does
/// not repeat the value.
pub(crate) fn flow_of(
    header: Option<&HeaderName>,
    headers: &HeaderMap,
) -> Result<Option<String>, ApiError> {
    let Some(header) = header else {
        return Ok(None);
    };
    let mut values = headers.get_all(header).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(name) if values.next().is_none() && valid_flow_name(name) => Ok(Some(name.to_owned())),
        _ => Err(ApiError::invalid(
            InvalidCode::InvalidFlow,
            format!(
                "the `{header}` header names the request's flow: once, 1..={MAX_FLOW_NAME_BYTES} bytes of A-Z a-z 0-9 . _ : -"
            ),
        )),
    }
}
