//! Who may call what. Operator endpoints (`/admin/*`, and `/state`, `/metrics` and the live page
//! when the server listens beyond loopback) pass [`guard`], layered over them by the route table;
//! the same rule adds the answers `guard` gives — 401 and 403 — to their OpenAPI entries
//! ([`Access::document`]), so no handler writes them.
//!
//! Nothing is trusted by accident: a browser page cannot drive them (an `Origin` that is not the
//! server's own is refused, and a swap needs `Content-Type: application/json`, which a page can
//! only send after a CORS preflight this server never grants); without a token they answer
//! loopback peers only, and only under a loopback `Host` (a DNS-rebinding page names its own
//! host), and never through a proxy (forwarding headers: behind a reverse proxy every client looks
//! local — set a token there).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use utoipa_axum::router::UtoipaMethodRouter;

use super::api::{ForbiddenBody, ForbiddenCode, UnauthorizedBody};
use super::error::ApiError;
use super::hosts::is_loopback_host;
use super::openapi::{answer, operations, with_schemas};
use super::state::AppState;

/// Who may call a route. The route table gives each route one; the router layers [`guard`]
/// over every route that is not [`Access::Public`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Anyone: `/retrieve`, health, the API document.
    Public,
    /// What an operator reads (`/state`, `/metrics`, the live page): anyone while the server
    /// listens on loopback only, else as [`Access::Admin`].
    Operator,
    /// What changes the server (`/admin/*`): the admin policy, always.
    Admin,
}

impl Access {
    /// Adds what [`guard`] answers under this rule to every operation of `route`'s OpenAPI entry
    /// — 403 [`ForbiddenBody`] (a `Host` not allowed, on every route), and 401
    /// [`UnauthorizedBody`] for a rule stricter than [`Access::Public`] — with those bodies'
    /// schemas.
    pub fn document<S>(self, (schemas, paths, _): &mut UtoipaMethodRouter<S>) {
        let (unauthorized, forbidden) = match self {
            Self::Public => (None, "Addressed to a Host this server does not answer to"),
            Self::Operator => (
                Some("Beyond loopback: a token is needed"),
                "Refused for the Host it names, or beyond loopback for where it comes from",
            ),
            Self::Admin => (
                Some("A token is needed"),
                "Refused for the Host it names or where it comes from",
            ),
        };
        for operation in paths.paths.values_mut().flat_map(operations) {
            let responses = &mut operation.responses.responses;
            if let Some(unauthorized) = unauthorized {
                responses.insert("401".into(), answer::<UnauthorizedBody>(unauthorized));
            }
            responses.insert("403".into(), answer::<ForbiddenBody>(forbidden));
        }
        if unauthorized.is_some() {
            with_schemas::<UnauthorizedBody>(schemas);
        }
        with_schemas::<ForbiddenBody>(schemas);
    }
}

/// Lets a request through only if it is addressed to an allowed `Host` (every route), and, on a
/// guarded route, the admin policy allows its peer, origin, host and credentials (an
/// [`Access::Operator`] route: only when the policy protects them).
pub async fn guard(
    State((state, access)): State<(AppState, Access)>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    if !state.hosts.allows(request_host(&request)) {
        // The name is the client's: logged escaped and cut, never echoed.
        let host = request_host(&request).map(|h| turnstile_host::sanitize(h, 64));
        tracing::warn!(%peer, ?host, path = request.uri().path(), "request to a Host not allowed refused");
        return ApiError::Forbidden {
            code: ForbiddenCode::HostNotAllowed,
            detail: "this server answers only requests addressed to its own names (--allowed-host)"
                .into(),
        }
        .into_response();
    }
    if access == Access::Public || (access == Access::Operator && !state.admin.protect_state) {
        return next.run(request).await;
    }
    let headers = request.headers();
    if let Some(origin) = headers.get(header::ORIGIN)
        && !same_origin(origin.as_bytes(), headers)
    {
        tracing::warn!(%peer, path = request.uri().path(), "admin request from another origin refused");
        return ApiError::Forbidden {
            code: ForbiddenCode::CrossOrigin,
            detail: "admin endpoints refuse requests from other origins (a browser page)".into(),
        }
        .into_response();
    }
    if state.admin.token.is_none() && proxied(headers) {
        tracing::warn!(%peer, path = request.uri().path(), "admin request through a proxy, without a token, refused");
        return ApiError::Forbidden {
            code: ForbiddenCode::ProxiedWithoutToken,
            detail: "this request came through a proxy (it carries forwarding headers); behind a proxy every client looks local, so admin endpoints need --admin-token".into(),
        }
        .into_response();
    }
    if state.admin.token.is_none() && !request_host(&request).is_some_and(is_loopback_host) {
        tracing::warn!(%peer, path = request.uri().path(), "admin request with a non-loopback Host refused");
        return ApiError::Forbidden {
            code: ForbiddenCode::HostNotAllowed,
            detail: "without --admin-token, admin endpoints answer only requests addressed to a loopback host".into(),
        }
        .into_response();
    }
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if state.admin.allows(peer.ip(), authorization) {
        next.run(request).await
    } else {
        // Never log the header: it may hold a (wrong or right) token.
        tracing::warn!(%peer, path = request.uri().path(), "admin access refused");
        ApiError::Unauthorized.into_response()
    }
}

/// Whether a reverse proxy forwarded the request (it names the original client).
fn proxied(headers: &HeaderMap) -> bool {
    [
        "forwarded",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-real-ip",
    ]
    .iter()
    .any(|name| headers.contains_key(*name))
}

/// Whether `Origin` names the origin the request was sent to (`http://` + its `Host`).
fn same_origin(origin: &[u8], headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST) else {
        return false;
    };
    origin
        .strip_prefix(b"http://")
        .is_some_and(|rest| rest.eq_ignore_ascii_case(host.as_bytes()))
}

/// The host a request is addressed to: its `Host` header, or its URI's authority (HTTP/2).
fn request_host(request: &Request) -> Option<&str> {
    match request.headers().get(header::HOST) {
        Some(host) => host.to_str().ok(),
        None => request.uri().authority().map(|a| a.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), value.parse().unwrap());
        }
        map
    }

    #[test]
    fn hosts_and_origins() {
        let local = headers(&[(header::HOST, "127.0.0.1:8080")]);
        assert!(same_origin(b"http://127.0.0.1:8080", &local));
        assert!(!same_origin(b"http://evil.example", &local));
        assert!(!same_origin(b"null", &local));
        assert!(!same_origin(b"https://127.0.0.1:8080", &local));
        assert!(proxied(&headers(&[(header::FORWARDED, "for=192.0.2.1")])));
        assert!(proxied(&headers(&[(
            header::HeaderName::from_static("x-forwarded-for"),
            "192.0.2.1"
        )])));
        assert!(!proxied(&local));
    }
}
