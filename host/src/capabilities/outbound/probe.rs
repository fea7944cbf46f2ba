//! `check`'s proof that the policy refuses what no grant covers: a request to an origin outside
//! the grants goes through the very hook serving uses, and must come back `HTTP-request-denied`
//! (the refusal comes before anything is sent, so nothing reaches the network).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use wasmtime_wasi_http::{Error, WasiHttpHooks};

use super::grant::OutboundGrant;
use super::options::OutboundOptions;
use super::origins::{RequestHost, Scheme};
use super::policy::{NO_GRANT, OutboundHooks};
use super::report::{OutboundReport, Reporter};
use crate::capabilities::capability::Probe;

/// Origins a plugin is asked for, the first one its grants do not cover.
const OUTSIDE: &[(&str, &str, u16)] = &[
    (
        "http://169.254.169.254/latest/meta-data/",
        "169.254.169.254",
        80,
    ),
    (
        "https://turnstile-check.invalid/",
        "turnstile-check.invalid",
        443,
    ),
    (
        "http://turnstile-check.invalid:8080/",
        "turnstile-check.invalid",
        8080,
    ),
];

/// The `outbound.denied` probe.
pub fn denied(options: &OutboundOptions, grant: &Arc<OutboundGrant>) -> Probe {
    let expected = "a request to an origin no grant covers gets HTTP-request-denied".to_owned();
    let outside = OUTSIDE.iter().find(|(uri, host, port)| {
        let scheme = if uri.starts_with("https") {
            Scheme::Https
        } else {
            Scheme::Http
        };
        RequestHost::parse(host).is_none_or(|h| grant.origins.covering(scheme, &h, *port).is_none())
    });
    let Some((uri, _, _)) = outside else {
        return Probe {
            name: "outbound.denied".into(),
            expected,
            outcome: Ok("every origin the probe knows is granted: nothing to refuse".into()),
        };
    };
    let mut hooks = OutboundHooks {
        grant: Arc::clone(grant),
        // The serving policy: conformance work denies everything anyway, which proves nothing.
        options: OutboundOptions {
            deny_all: false,
            ..options.clone()
        },
        reporter: Reporter {
            plugin: "check".into(),
            request_id: 0,
            observer: None,
            tally: Arc::new(Mutex::new(OutboundReport::default())),
        },
        asked: 0,
        call_deadline: tokio::time::Instant::now() + options.call_timeout,
        client: crate::client_link::ClientLink::new(),
    };
    // The policy's own decision first (a check that could pass with every request refused
    // anyway, where nothing may be sent, would prove nothing): refused for want of a grant, while
    // a granted origin passes it.
    let decision = match uri.parse::<http::Uri>() {
        Err(e) => Err(format!("{uri}: {e}")),
        Ok(parsed) => match hooks.admit(&parsed) {
            Err((_, _, reason)) if reason == NO_GRANT => Ok(()),
            Err((_, _, reason)) => Err(format!("{uri}: refused for another reason: {reason}")),
            Ok(_) => Err(format!("{uri}: let through by the policy")),
        },
    };
    let granted = grant
        .origins
        .iter()
        .find(|g| g.is_literal())
        .map(|g| g.as_str().to_owned());
    let decision = decision.and_then(|()| match &granted {
        None => Ok(()),
        Some(origin) => match origin.parse::<http::Uri>().map(|u| hooks.admit(&u)) {
            Ok(Ok(_)) => Ok(()),
            _ => Err(format!("{origin}: granted, yet refused by the policy")),
        },
    });
    let body = Empty::<Bytes>::new()
        .map_err(|never| match never {})
        .boxed_unsync();
    let outcome = match (decision, http::Request::get(*uri).body(body)) {
        (Err(e), _) => Err(e),
        (_, Err(e)) => Err(format!("{uri}: {e}")),
        (Ok(()), Ok(request)) => {
            let sent = hooks.send_request(request, None, Box::new(async { Ok(()) }));
            match wasmtime_wasi::runtime::in_tokio(Box::into_pin(sent)) {
                Err(Error::HttpRequestDenied) => Ok(format!(
                    "{uri}: HTTP-request-denied, nothing sent{}",
                    granted.map_or(String::new(), |g| format!("; {g} let through"))
                )),
                Err(other) => Err(format!("{uri}: {other}, not a denial")),
                Ok(_) => Err(format!("{uri}: answered")),
            }
        }
    };
    Probe {
        name: "outbound.denied".into(),
        expected,
        outcome,
    }
}
