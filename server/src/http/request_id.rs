//! A request's ids: a process-unique number (the `request_id` of response bodies and log lines)
//! and the `x-request-id` header of its response — the client's own, when it sent a well-formed
//! one, else the number. A client's id is never kept unless it is plain enough for a log line
//! and a header.

use axum::http::{HeaderMap, HeaderValue};

/// The header that carries a request's id, in and out.
pub const REQUEST_ID_HEADER: &str = "x-request-id";
/// Longest `x-request-id` kept from a client, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 128;

/// A request's ids (a request extension).
#[derive(Debug, Clone)]
pub struct RequestId {
    /// Process-unique, increasing.
    pub number: u64,
    /// The `x-request-id` of the response.
    pub header: HeaderValue,
}

impl RequestId {
    /// The ids of a request numbered `number` that came with `headers`.
    pub fn assign(number: u64, headers: &HeaderMap) -> Self {
        let header = headers
            .get(REQUEST_ID_HEADER)
            .filter(|v| well_formed(v))
            .cloned()
            .unwrap_or_else(|| HeaderValue::from(number));
        Self { number, header }
    }
}

/// A client's id is kept when it is 1..=128 characters of `A-Z a-z 0-9 - _ . : /`: nothing that
/// could break a log line or a header.
fn well_formed(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_REQUEST_ID_BYTES
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/".contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_ids_are_kept() {
        for ok in ["abc-123", "9f86d081:trace/7", &"a".repeat(128)] {
            assert!(well_formed(&HeaderValue::from_str(ok).unwrap()), "{ok}");
        }
        for bad in ["", "has space", "semi;colon", "quote\"", &"a".repeat(129)] {
            assert!(!well_formed(&HeaderValue::from_str(bad).unwrap()), "{bad}");
        }
    }

    #[test]
    fn a_clients_plain_id_is_kept_else_the_number_is_used() {
        let mut headers = HeaderMap::new();
        assert_eq!(RequestId::assign(7, &headers).header, "7");
        headers.insert(REQUEST_ID_HEADER, HeaderValue::from_static("trace-1"));
        let id = RequestId::assign(8, &headers);
        assert_eq!((id.number, id.header.to_str().unwrap()), (8, "trace-1"));
        headers.insert(REQUEST_ID_HEADER, HeaderValue::from_static("two words"));
        assert_eq!(RequestId::assign(9, &headers).header, "9");
    }
}
