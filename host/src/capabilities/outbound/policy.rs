//! Where every outbound request of a call passes: `wasi:http`'s `send_request` hook. A request
//! no grant covers is refused with `HTTP-request-denied` before anything is sent (logged with
//! the plugin, the origin and the reason, and counted), as is one past the call's request
//! bound. A covered request is sent through the plugin's pooled client under the host's
//! bounds — a guest may ask for shorter timeouts, never longer ones — and its response is
//! metered as the guest reads it. Redirects are answered to the guest as they are, never
//! followed; the origin is the request's URI (the `Host` header is forbidden to guests).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::uri::Scheme as UriScheme;
use tracing::Instrument;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::body::{CANCELLED, CappedRequest, MeteredResponse, drain};
use super::grant::OutboundGrant;
use super::observe::OutboundOutcome;
use super::options::OutboundOptions;
use super::origins::{RequestHost, Scheme};
use super::report::{Reporter, retry_after};
use super::trace;
use crate::capabilities::backend::{FailureKind, SignalKind, UpstreamSignal};
use crate::client_link::ClientLink;

/// The label of a request no grant covers.
pub const DENIED: &str = "(denied)";

/// Why a request is refused when no grant covers it.
pub const NO_GRANT: &str = "no grant covers this origin";

/// What `send_request` answers.
type Sent = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

/// One call's outbound policy and tally.
pub struct OutboundHooks {
    pub(super) grant: Arc<OutboundGrant>,
    pub(super) options: OutboundOptions,
    pub(super) reporter: Reporter,
    /// Requests asked for in this call, sent or not.
    pub(super) asked: u32,
    /// When the call's outbound budget runs out (`OutboundOptions::call_timeout` from the
    /// call's start): no request of the call runs past it.
    pub(super) call_deadline: tokio::time::Instant,
    /// The call's client: once it has gone, the call's requests are cancelled (a request not
    /// yet answered is dropped, a body being read breaks off, and its connection is closed).
    pub(super) client: ClientLink,
}

/// A request the policy lets through: where it goes and under which grant.
pub(super) struct Cleared {
    /// What is dialled, `scheme://host:port` (host lowercase, without a trailing dot): the
    /// per-origin bound's key and the logs' name for it.
    pub(super) origin: String,
    /// The grant, as written: the request's label.
    pub(super) label: String,
    /// Whether that grant names the host outright (then any address of it may be reached).
    pub(super) literal: bool,
}

impl OutboundHooks {
    /// The policy: a covering grant, and room in the call's bound.
    pub(super) fn admit(
        &mut self,
        uri: &http::Uri,
    ) -> Result<Cleared, (String, OutboundOutcome, &'static str)> {
        let shown = crate::output::sanitize(&origin_of(uri), 256);
        self.asked += 1;
        if self.options.deny_all {
            return Err((
                shown,
                OutboundOutcome::Denied,
                "conformance work sends nothing",
            ));
        }
        if self.asked > self.options.max_requests_per_call {
            return Err((
                shown,
                OutboundOutcome::Denied,
                "over the per-call request bound",
            ));
        }
        if tokio::time::Instant::now() >= self.call_deadline {
            return Err((
                shown,
                OutboundOutcome::Denied,
                "over the call's outbound budget",
            ));
        }
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            // A user in the URI is a credential the plugin chose to send: credentials are the
            // operator's to bind (and the authority would no longer name one origin).
            return Err((
                shown,
                OutboundOutcome::Denied,
                "a user (userinfo) in the URI is refused",
            ));
        }
        let scheme = uri.scheme_str().and_then(Scheme::of);
        let host = uri.host().and_then(RequestHost::parse);
        let (Some(scheme), Some(host)) = (scheme, host) else {
            return Err((
                shown,
                OutboundOutcome::Denied,
                "not an http or https URI with a host",
            ));
        };
        let port = uri.port_u16().unwrap_or(match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        });
        match self.grant.origins.covering(scheme, &host, port) {
            Some(grant) => Ok(Cleared {
                origin: dialled(scheme, &host, port),
                label: grant.as_str().to_owned(),
                literal: grant.is_literal(),
            }),
            None => Err((shown, OutboundOutcome::Denied, NO_GRANT)),
        }
    }
}

/// `scheme://host[:port]` of a URI as the guest wrote it, for logs — never its userinfo.
fn origin_of(uri: &http::Uri) -> String {
    format!(
        "{}://{}{}",
        uri.scheme_str().unwrap_or(""),
        uri.host().unwrap_or(""),
        uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default()
    )
}

/// What is dialled: `scheme://host:port`, the host normalised (lowercase, no trailing dot; an
/// IPv6 literal in brackets), the port explicit.
fn dialled(scheme: Scheme, host: &RequestHost, port: u16) -> String {
    let scheme = match scheme {
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    match host {
        RequestHost::Name(name) => format!("{scheme}://{name}:{port}"),
        RequestHost::Ip(std::net::IpAddr::V4(ip)) => format!("{scheme}://{ip}:{port}"),
        RequestHost::Ip(std::net::IpAddr::V6(ip)) => format!("{scheme}://[{ip}]:{port}"),
    }
}

/// The answer to a refused request: `HTTP-request-denied`, once what the guest writes of its
/// body has been drained (`super::body::drain`); nothing is sent either way.
fn refuse(request: http::Request<WasiBody>, options: &OutboundOptions) -> Sent {
    let (cap, within) = (options.max_request_bytes, options.connect_timeout);
    Box::new(async move {
        drain(request.into_body(), cap, within).await;
        Err(Error::HttpRequestDenied)
    })
}

/// The shorter of the guest's and the host's bound.
fn at_most(guest: Option<Duration>, host: Duration) -> Duration {
    guest.map_or(host, |g| g.min(host))
}

impl WasiHttpHooks for OutboundHooks {
    fn is_supported_scheme(&mut self, scheme: &UriScheme) -> bool {
        *scheme == UriScheme::HTTP || *scheme == UriScheme::HTTPS
    }

    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        guest: Option<RequestOptions>,
        _response_error: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Sent {
        let cleared = match self.admit(request.uri()) {
            Ok(cleared) => cleared,
            Err((origin, outcome, reason)) => {
                self.reporter.refused(&origin, DENIED, outcome, reason);
                return refuse(request, &self.options);
            }
        };
        let options = self.options.clone();
        let connect = at_most(
            guest.and_then(|o| o.connect_timeout),
            options.connect_timeout,
        );
        let first_byte = at_most(
            guest.and_then(|o| o.first_byte_timeout),
            options.first_byte_timeout,
        );
        let between_bytes = at_most(
            guest.and_then(|o| o.between_bytes_timeout),
            options.between_bytes_timeout,
        );
        let guest_bounded = connect < options.connect_timeout
            || first_byte < options.first_byte_timeout
            || between_bytes < options.between_bytes_timeout;
        let Some(client) = self.grant.client.clone() else {
            // No client: every request is denied (conformance work), whatever the grants say.
            self.reporter.refused(
                &cleared.origin,
                &cleared.label,
                OutboundOutcome::Denied,
                "every request is denied here",
            );
            return refuse(request, &self.options);
        };
        // The host's credentials for this exact origin, over whatever the guest set.
        let uri = request.uri().clone();
        for (name, value) in self.grant.credentials.for_uri(&uri) {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some("https") => 443,
            _ => 80,
        });
        let span = trace::request_span(
            request.method(),
            uri.host().unwrap_or_default(),
            port,
            &cleared.label,
        );
        trace::carry(&span, request.headers_mut());
        let in_span = span.clone();
        let reporter = self.reporter.clone();
        let client_link = self.client.clone();
        let call_deadline = self.call_deadline;
        Box::new(
            async move {
            if client_link.is_gone() {
                reporter.refused(
                    &cleared.origin,
                    &cleared.label,
                    OutboundOutcome::Cancelled,
                    "the client went away",
                );
                return Err(Error::InternalError(Some(CANCELLED.to_owned())));
            }
            if let Some(length) = request
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                && length > options.max_request_bytes
            {
                reporter.refused(
                    &cleared.origin,
                    &cleared.label,
                    OutboundOutcome::TooLarge,
                    "request body over its cap",
                );
                return Err(Error::HttpRequestBodySize(Some(options.max_request_bytes)));
            }
            let slots = options
                .slots
                .of(&cleared.origin, options.max_connections_per_origin);
            let permit = match tokio::time::timeout(connect, slots.acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                _ => {
                    reporter.refused(
                        &cleared.origin,
                        &cleared.label,
                        OutboundOutcome::Denied,
                        "the origin's connection bound is reached",
                    );
                    return Err(Error::ConnectionLimitReached);
                }
            };
            let finish = reporter.start(&cleared.label);
            finish.traced(span);
            if guest_bounded {
                finish.guest_bounded();
            }
            let request = request.map(|body| {
                CappedRequest::new(body, options.max_request_bytes, finish.clone(), connect)
            });
            // The whole request, body included, ends by this (a trickle just under the
            // between-bytes timeout is stopped here).
            let deadline = (tokio::time::Instant::now() + options.total_timeout).min(call_deadline);
            let headers_by = (connect + first_byte)
                .min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            let sent = tokio::select! {
                sent = tokio::time::timeout(headers_by, client.for_grant(cleared.literal).request(request)) => sent,
                _ = client_link.left() => {
                    // Dropping the request closes its connection: the upstream sees it go.
                    finish.set_outcome(OutboundOutcome::Cancelled);
                    finish.end();
                    return Err(Error::InternalError(Some(CANCELLED.to_owned())));
                }
            };
            let response = match sent {
                Err(_) => {
                    finish.set_outcome(OutboundOutcome::Timeout);
                    finish.end();
                    return Err(Error::ConnectionReadTimeout);
                }
                Ok(Err(e)) => {
                    let (outcome, error) = classify(&e);
                    finish.set_outcome(outcome);
                    finish.end();
                    if matches!(
                        outcome,
                        OutboundOutcome::Error | OutboundOutcome::AddressRefused
                    ) && e.is_connect()
                    {
                        finish.fail(FailureKind::Unreachable);
                    }
                    if outcome == OutboundOutcome::AddressRefused {
                        tracing::warn!(
                            plugin = &*reporter.plugin,
                            request_id = reporter.request_id,
                            origin = cleared.origin,
                            reason = "resolves only to addresses the grant does not cover",
                            "outbound request refused"
                        );
                    }
                    if matches!(error, Error::TlsCertificateError) {
                        // What an operator needs to see: the plugin only gets the code.
                        tracing::warn!(
                            plugin = &*reporter.plugin,
                            request_id = reporter.request_id,
                            origin = cleared.origin,
                            reason = "TLS: the server's certificate was not accepted (expired, \
                                      for another name, or its CA is not trusted: an internal \
                                      CA is named with --outbound-ca-file)",
                            "outbound request failed"
                        );
                    }
                    return Err(error);
                }
                Ok(Ok(response)) => response,
            };
            let status = response.status().as_u16();
            finish.set_outcome(OutboundOutcome::of_status(status));
            finish.record_status(status);
            let kind = match status {
                429 => Some(SignalKind::RateLimited),
                503 => Some(SignalKind::Unavailable),
                _ => None,
            };
            if let Some(kind) = kind {
                finish.signal(UpstreamSignal {
                    kind,
                    retry_after: retry_after(response.headers().get(http::header::RETRY_AFTER)),
                });
            } else if let Some(kind) = FailureKind::of_status(status) {
                finish.fail(kind);
            }
            let response = response.map(|body| {
                http_body_util::BodyExt::boxed_unsync(MeteredResponse::new(
                    body,
                    between_bytes,
                    deadline,
                    options.max_response_bytes,
                    Some(permit),
                    finish,
                    client_link.left(),
                ))
            });
            let io: Box<dyn Future<Output = Result<(), Error>> + Send> = Box::new(async { Ok(()) });
            Ok((response, io))
        }
            .instrument(in_span),
        )
    }
}

/// What a failed request was, and the error the guest gets.
fn classify(error: &hyper_util::client::legacy::Error) -> (OutboundOutcome, Error) {
    use std::error::Error as _;
    let mut cause = error.source();
    while let Some(e) = cause {
        if let Some(body) = e.downcast_ref::<Error>()
            && matches!(body, Error::HttpRequestBodySize(_))
        {
            return (OutboundOutcome::TooLarge, Error::HttpRequestBodySize(None));
        }
        if let Some(tls) = tls_error(e) {
            return (OutboundOutcome::Error, tls_code(tls));
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            // An io::Error's `source` skips the error it wraps: look at it here.
            if io
                .get_ref()
                .is_some_and(|inner| inner.is::<super::address::AddressRefused>())
            {
                return (
                    OutboundOutcome::AddressRefused,
                    Error::DestinationIpProhibited,
                );
            }
            if io.kind() == std::io::ErrorKind::TimedOut {
                return (OutboundOutcome::Timeout, Error::ConnectionTimeout);
            }
        }
        cause = e.source();
    }
    if error.is_connect() {
        (OutboundOutcome::Error, Error::ConnectionRefused)
    } else {
        (OutboundOutcome::Error, Error::HttpProtocolError)
    }
}

/// The TLS error under `error`, if it is one: an `io::Error`'s `source` skips the error it
/// wraps, and the TLS connector wraps rustls's error in two of them.
fn tls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner: &(dyn std::error::Error + 'static) =
        error.downcast_ref::<std::io::Error>()?.get_ref()?;
    tls_error(inner)
}

/// wasi:http's code for a TLS failure: a certificate the client does not trust (an internal
/// CA's, without `--outbound-ca-file`) is `TLS-certificate-error`, an alert the server sent is
/// `TLS-alert-received`, anything else `TLS-protocol-error`.
fn tls_code(error: &rustls::Error) -> Error {
    match error {
        rustls::Error::InvalidCertificate(_)
        | rustls::Error::NoCertificatesPresented
        | rustls::Error::UnsupportedNameType => Error::TlsCertificateError,
        rustls::Error::AlertReceived(alert) => Error::TlsAlertReceived {
            alert_id: Some(u8::from(*alert)),
            alert_message: Some(format!("{alert:?}")),
        },
        _ => Error::TlsProtocolError,
    }
}
