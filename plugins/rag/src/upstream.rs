//! The HTTP call: one `POST` of a JSON body through `wasi:http/outgoing-handler` (WASI 0.2, the
//! `wasip2` crate's bindings), and the response's status and body, read to its end (at most
//! [`MAX_BODY_BYTES`]). The host decides whether it is sent at all (a request to an origin it
//! did not grant is refused with `HTTP-request-denied`) and bounds it: timeouts, body caps. A
//! redirect is a status like any other: never followed.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme,
    http_error_code,
};
use wasip2::io::streams::StreamError;

use crate::settings::Upstream;

/// The most the plugin reads of an answer (the host's own cap may be lower).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// How much `blocking-write-and-flush` takes at once.
const WRITE_CHUNK: usize = 4096;

/// Why the call gave no body to read. Each message names what happened, never a header or a
/// byte of the response.
#[derive(Debug)]
pub enum Failure {
    /// The host refused to send it (no grant covers the origin, or conformance work).
    Denied,
    /// The upstream answered, with a status other than 2xx.
    Status(u16),
    /// The request failed on its way (a connection, a timeout, a cap, the host's bound).
    Http(ErrorCode),
    /// The answer's body broke off: the host's words for why (the host names no error code for
    /// a body's failure, only its description — a fixed phrase such as "connection read
    /// timeout", never a byte of the response).
    BrokeOff(String),
    /// The answer was longer than [`MAX_BODY_BYTES`].
    TooLarge,
    /// The key is no valid header value.
    BadKey,
}

impl Failure {
    /// The plugin's error message.
    pub fn message(&self) -> String {
        match self {
            Self::Denied => "upstream request denied by the host".to_owned(),
            Self::Status(status) => format!("upstream answered {status}"),
            Self::Http(code) => describe(code),
            Self::BrokeOff(why) => format!("upstream answer broke off ({})", short(why)),
            Self::TooLarge => format!("upstream answer over {MAX_BODY_BYTES} bytes"),
            Self::BadKey => "api_key: not a valid header value".to_owned(),
        }
    }
}

/// A short name for what went wrong.
fn describe(code: &ErrorCode) -> String {
    let what = match code {
        ErrorCode::DnsTimeout
        | ErrorCode::ConnectionTimeout
        | ErrorCode::ConnectionReadTimeout
        | ErrorCode::ConnectionWriteTimeout
        | ErrorCode::HttpResponseTimeout => "upstream timed out",
        ErrorCode::ConnectionRefused => "upstream refused the connection",
        ErrorCode::ConnectionTerminated | ErrorCode::HttpResponseIncomplete => {
            "upstream closed the connection mid-answer"
        }
        ErrorCode::ConnectionLimitReached => "too many requests in flight to the upstream",
        ErrorCode::HttpResponseBodySize(_) => "upstream answer over the host's size cap",
        ErrorCode::DestinationIpProhibited => "upstream address refused by the host",
        _ => "upstream request failed",
    };
    // The variant's name, without any payload (a host's free text).
    let name = format!("{code:?}");
    let name = name.split('(').next().unwrap_or_default();
    let name = name.trim_start_matches("ErrorCode::");
    format!("{what} ({name})")
}

/// At most 120 characters of `text`, on one line.
fn short(text: &str) -> String {
    text.chars()
        .take(120)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// POSTs `body` (JSON) to the upstream's completions path, with `Authorization: Bearer KEY`
/// when a key is given, and returns the 2xx answer's body.
pub fn post_json(upstream: &Upstream, key: Option<&str>, body: &[u8]) -> Result<Vec<u8>, Failure> {
    let mut headers: Vec<(String, Vec<u8>)> = vec![
        ("content-type".into(), b"application/json".to_vec()),
        ("accept".into(), b"application/json".to_vec()),
        ("content-length".into(), body.len().to_string().into_bytes()),
    ];
    if let Some(key) = key {
        headers.push(("authorization".into(), format!("Bearer {key}").into_bytes()));
    }
    let headers = Fields::from_list(&headers).map_err(|_| Failure::BadKey)?;
    let request = OutgoingRequest::new(headers);
    let internal = |what: &str| Failure::Http(ErrorCode::InternalError(Some(what.to_owned())));
    request
        .set_method(&Method::Post)
        .map_err(|()| internal("method"))?;
    let scheme = if upstream.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| internal("scheme"))?;
    request
        .set_authority(Some(&upstream.authority))
        .map_err(|()| internal("authority"))?;
    request
        .set_path_with_query(Some(&upstream.path))
        .map_err(|()| internal("path"))?;
    let outgoing = request.body().map_err(|()| internal("body"))?;
    let pending = outgoing_handler::handle(request, None).map_err(Failure::Http)?;

    // The body goes while the host sends the request. A refused request's body has nowhere to
    // go: its write fails, and the response says why.
    let written = write_body(&outgoing, body);
    let finished = OutgoingBody::finish(outgoing, None);
    let response = loop {
        match pending.get() {
            Some(Ok(Ok(response))) => break response,
            Some(Ok(Err(ErrorCode::HttpRequestDenied))) => return Err(Failure::Denied),
            Some(Ok(Err(code))) => return Err(Failure::Http(code)),
            Some(Err(())) => return Err(internal("response taken twice")),
            None => pending.subscribe().block(),
        }
    };
    written?;
    finished.map_err(Failure::Http)?;
    read(response)
}

fn write_body(outgoing: &OutgoingBody, body: &[u8]) -> Result<(), Failure> {
    let stream = outgoing
        .write()
        .map_err(|()| Failure::Http(ErrorCode::InternalError(None)))?;
    for chunk in body.chunks(WRITE_CHUNK) {
        stream
            .blocking_write_and_flush(chunk)
            .map_err(stream_error)?;
    }
    Ok(())
}

/// The body of a 2xx response; any other status is a [`Failure::Status`], its body unread.
fn read(response: IncomingResponse) -> Result<Vec<u8>, Failure> {
    let status = response.status();
    if !(200..300).contains(&status) {
        return Err(Failure::Status(status));
    }
    let incoming = response
        .consume()
        .map_err(|()| Failure::Http(ErrorCode::InternalError(None)))?;
    let stream = incoming
        .stream()
        .map_err(|()| Failure::Http(ErrorCode::InternalError(None)))?;
    let mut body = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_BODY_BYTES {
                    return Err(Failure::TooLarge);
                }
            }
            Err(StreamError::Closed) => return Ok(body),
            Err(error) => return Err(stream_error(error)),
        }
    }
}

fn stream_error(error: StreamError) -> Failure {
    match error {
        StreamError::LastOperationFailed(e) => match http_error_code(&e) {
            Some(code) => Failure::Http(code),
            // wasmtime-wasi-http 48 keeps a body's failure as its own error type, which
            // `http-error-code` does not recognise: only the description tells.
            None => Failure::BrokeOff(e.to_debug_string()),
        },
        StreamError::Closed => Failure::Http(ErrorCode::ConnectionTerminated),
    }
}
