//! The HTTP call: one `POST` of a JSON body through `wasi:http/outgoing-handler` (WASI 0.2, the
//! `wasip2` crate's bindings), and the answer read as it streams: each server-sent event passed
//! on as it arrives (a whole answer, when the upstream does not stream, at most
//! [`MAX_BODY_BYTES`]). The host decides whether it is sent at all (a request to an origin it
//! did not grant is refused with `HTTP-request-denied`) and bounds it: timeouts, body caps. A
//! redirect is a status like any other: never followed.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme,
    http_error_code,
};
use wasip2::io::streams::{InputStream, StreamError};

use crate::chunk::{self, Finish};
use crate::completion;
use crate::settings::Upstream;
use crate::sse::Events;

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
    /// The client went away: the host cancelled the request (or the answer's reader stopped).
    ClientGone,
    /// A 2xx body the plugin cannot read (the payload says how).
    Unreadable(&'static str),
    /// The upstream reported an error in its stream.
    StreamError,
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
            Self::ClientGone => "the client went away".to_owned(),
            Self::Unreadable(what) => (*what).to_owned(),
            Self::StreamError => "upstream reported an error in its stream".to_owned(),
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

/// How the answer ended.
#[derive(Debug, Default)]
pub struct Ended {
    /// Why, if the upstream said.
    pub finish: Option<Finish>,
    /// Prompt and completion tokens, if the upstream said.
    pub usage: Option<(u32, u32)>,
}

/// What the reader of the answer wants next.
pub enum Flow {
    /// More.
    Go,
    /// Nothing more: the client went (or the answer is full); the request is dropped.
    Stop,
}

/// POSTs `body` (JSON) to the upstream's completions path, with `Authorization: Bearer KEY` when
/// a key is given (a host-bound credential needs none here), and hands each piece of the answer
/// to `content` as it arrives: each event of a streamed answer (`text/event-stream`), or the
/// whole content of one that came whole.
pub fn ask(
    upstream: &Upstream,
    key: Option<&str>,
    body: &[u8],
    content: &mut dyn FnMut(&str) -> Flow,
) -> Result<Ended, Failure> {
    let response = send(upstream, key, body)?;
    let status = response.status();
    if !(200..300).contains(&status) {
        return Err(Failure::Status(status));
    }
    let streamed = response
        .headers()
        .get("content-type")
        .iter()
        .any(|v| String::from_utf8_lossy(v).contains("text/event-stream"));
    let incoming = response
        .consume()
        .map_err(|()| Failure::Http(ErrorCode::InternalError(None)))?;
    let stream = incoming
        .stream()
        .map_err(|()| Failure::Http(ErrorCode::InternalError(None)))?;
    if !streamed {
        let whole =
            completion::whole(&read_all(&stream)?).map_err(|e| Failure::Unreadable(e.message()))?;
        let _ = content(&whole.content);
        return Ok(Ended {
            finish: whole.finish,
            usage: whole.usage,
        });
    }
    let mut events = Events::default();
    let mut ended = Ended::default();
    loop {
        let bytes = match stream.blocking_read(64 * 1024) {
            Ok(bytes) => bytes,
            // A stream that closed without `[DONE]`: what came is the answer.
            Err(StreamError::Closed) => return Ok(ended),
            Err(error) => return Err(stream_error(error)),
        };
        for data in events.push(&bytes).map_err(|_| Failure::TooLarge)? {
            if data.trim() == chunk::DONE {
                return Ok(ended);
            }
            let part = chunk::part(&data).map_err(|e| match e {
                chunk::Unreadable::NotJson => Failure::Unreadable("upstream streamed invalid JSON"),
                chunk::Unreadable::Error => Failure::StreamError,
            })?;
            if let Some(text) = &part.content
                && let Flow::Stop = content(text)
            {
                return Err(Failure::ClientGone);
            }
            ended.finish = part.finish.or(ended.finish);
            ended.usage = part.usage.or(ended.usage);
        }
    }
}

/// Sends the request; the response once its head has come.
fn send(upstream: &Upstream, key: Option<&str>, body: &[u8]) -> Result<IncomingResponse, Failure> {
    let mut headers: Vec<(String, Vec<u8>)> = vec![
        ("content-type".into(), b"application/json".to_vec()),
        (
            "accept".into(),
            b"text/event-stream, application/json".to_vec(),
        ),
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
    let pending = outgoing_handler::handle(request, None).map_err(failure_of)?;

    // The body goes while the host sends the request. A refused request's body has nowhere to
    // go: its write fails, and the response says why.
    let written = write_body(&outgoing, body);
    let finished = OutgoingBody::finish(outgoing, None);
    let response = loop {
        match pending.get() {
            Some(Ok(Ok(response))) => break response,
            Some(Ok(Err(code))) => return Err(failure_of(code)),
            Some(Err(())) => return Err(internal("response taken twice")),
            None => pending.subscribe().block(),
        }
    };
    written?;
    finished.map_err(failure_of)?;
    Ok(response)
}

/// What the host's error code means for the plugin.
fn failure_of(code: ErrorCode) -> Failure {
    match code {
        ErrorCode::HttpRequestDenied => Failure::Denied,
        ErrorCode::InternalError(Some(message)) if message.starts_with("cancelled") => {
            Failure::ClientGone
        }
        code => Failure::Http(code),
    }
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

/// A whole body, at most [`MAX_BODY_BYTES`].
fn read_all(stream: &InputStream) -> Result<Vec<u8>, Failure> {
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
            Some(code) => failure_of(code),
            // wasmtime-wasi-http 48 keeps a body's failure as its own error type, which
            // `http-error-code` does not recognise: only the description tells.
            None => {
                let why = e.to_debug_string();
                if why.contains("cancelled") {
                    Failure::ClientGone
                } else {
                    Failure::BrokeOff(why)
                }
            }
        },
        StreamError::Closed => Failure::Http(ErrorCode::ConnectionTerminated),
    }
}
