//! The flow a `/retrieve` request belongs to, with `--flow-header`: the header's value, checked
//! before anything else happens to the request, when the request comes from a trusted proxy
//! (`--trusted-proxy`). Without the header, from another peer, or with flows off, a request is in
//! the default flow.

use std::net::IpAddr;

use axum::http::HeaderMap;
use turnstile_gate::{MAX_FLOW_NAME_BYTES, valid_flow_name};

use crate::admission::FlowSource;

use super::api::InvalidCode;
use super::error::ApiError;

/// The request's flow name: `None` for the default flow (flows off, no header, or a peer not
/// trusted to name one). A value that is not a flow name — or the header given twice — is 400
/// `invalid_flow`, whose message does not repeat the value.
pub(crate) fn flow_of(
    source: Option<&FlowSource>,
    peer: IpAddr,
    headers: &HeaderMap,
) -> Result<Option<String>, ApiError> {
    let Some(source) = source.filter(|s| s.trusts(peer)) else {
        return Ok(None);
    };
    let header = source.header();
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
