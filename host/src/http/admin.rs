//! Operator endpoints: `POST /admin/plugin` swaps the served plugin; access is checked by
//! [`require_admin`] for these and for `/state` when the server listens beyond loopback.
//!
//! Nothing is trusted by accident: a browser page cannot drive them (an `Origin` that is not the
//! server's own is refused, and a swap needs `Content-Type: application/json`, which a page can
//! only send after a CORS preflight this server never grants); without a token they answer
//! loopback peers only, and only under a loopback `Host` (a DNS-rebinding page names its own
//! host), and never through a proxy (forwarding headers: behind a reverse proxy every client looks
//! local — set a token there).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::api::{
    ForbiddenBody, ForbiddenCode, GenerationBody, InternalBody, InvalidCode, InvalidRequestBody,
    SwapRefusal, SwapRequestBody, SwappedBody, SwappedStatus, UnauthorizedBody,
};
use super::body::{read_body, require_json};
use super::{ApiError, AppState};
use crate::plugin::{MAX_PLUGIN_CONFIG_ENTRIES, PluginSource, Sha256Hex, plugin_config};
use crate::swap::Trigger;

/// Largest `POST /admin/plugin` body, in bytes (a path, a digest and at most 64 settings).
pub const MAX_ADMIN_BODY_BYTES: usize = 64 * 1024;

/// Lets a request through only if the admin policy allows its peer, origin, host and
/// credentials.
pub async fn require_admin(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let is_state = matches!(
        request.uri().path(),
        "/state" | "/metrics" | "/dashboard" | "/events"
    );
    if is_state && !state.admin.protect_state {
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
    if state.admin.token.is_none() && !loopback_host(headers) {
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

/// Whether the `Host` header names a loopback host: `localhost`, `127.0.0.0/8` or `[::1]`,
/// with or without a port.
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `POST /admin/plugin` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwapRequest {
    /// The candidate component file.
    path: String,
    /// If given, the file must hash to this.
    sha256: Option<String>,
    /// The candidate's settings (default: the server's `--plugin-config`), validated like
    /// `--plugin-config`.
    config: Option<ConfigEntries>,
}

/// A JSON object of string settings, in order and with any repeated key kept, so that the one
/// validation of plugin settings can refuse it (a plain map would silently keep the last).
#[derive(Debug)]
struct ConfigEntries(Vec<(String, String)>);

impl<'de> Deserialize<'de> for ConfigEntries {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = ConfigEntries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of string settings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ConfigEntries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, String>()? {
                    if entries.len() > MAX_PLUGIN_CONFIG_ENTRIES {
                        return Err(serde::de::Error::custom(format!(
                            "more than {MAX_PLUGIN_CONFIG_ENTRIES} settings"
                        )));
                    }
                    entries.push(entry);
                }
                Ok(ConfigEntries(entries))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

/// `POST /admin/plugin`: replace the served plugin without a restart.
#[utoipa::path(
    post,
    path = "/admin/plugin",
    tag = "admin",
    request_body(content = SwapRequestBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Installed: the new generation serves new requests", body = SwappedBody),
        (status = 400, description = "Not readable", body = InvalidRequestBody),
        (status = 401, description = "A token is needed", body = UnauthorizedBody),
        (status = 403, description = "Refused for where it comes from", body = ForbiddenBody),
        (status = 408, description = "The body did not arrive in time", body = InvalidRequestBody),
        (status = 413, description = "Body over 64 KiB", body = InvalidRequestBody),
        (status = 415, description = "Not application/json", body = InvalidRequestBody),
        (status = 422, description = "A bad request, or a refused candidate (the old plugin keeps serving)", body = SwapRefusal),
        (status = 500, description = "The swap's worker failed", body = InternalBody),
    )
)]
pub async fn swap_plugin(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<SwappedBody>, ApiError> {
    require_json(&headers)?;
    let body = read_body(body, MAX_ADMIN_BODY_BYTES, state.edge.body_timeout).await?;
    let request: SwapRequest = serde_json::from_slice(&body).map_err(|e| {
        ApiError::invalid(
            InvalidCode::InvalidSwapRequest,
            format!("expected {{\"path\", \"sha256\"?, \"config\"?}}: {e}"),
        )
    })?;
    let expected = match request.sha256.as_deref().map(str::parse::<Sha256Hex>) {
        None => None,
        Some(Ok(hex)) => Some(hex),
        Some(Err(e)) => {
            return Err(ApiError::invalid(InvalidCode::InvalidSha256, e.to_string()));
        }
    };
    let config = match request.config {
        None => None,
        Some(ConfigEntries(entries)) => Some(plugin_config(entries).map_err(|e| {
            ApiError::invalid(InvalidCode::InvalidPluginConfig, format!("`config`: {e}"))
        })?),
    };
    let source = PluginSource::File(request.path.into());
    let swap = Arc::clone(&state.swap);
    let trigger = Trigger::Admin { sha256: expected };
    let outcome = tokio::task::spawn_blocking(move || swap.swap(source, trigger, config))
        .await
        .map_err(|_| ApiError::Internal { request_id: 0 })?;
    match outcome {
        Ok(swapped) => Ok(Json(SwappedBody {
            status: SwappedStatus::Swapped,
            generation: swapped.generation.number,
            name: swapped.generation.plugin.name().to_owned(),
            sha256: swapped.generation.plugin.sha256().to_owned(),
            previous: GenerationBody {
                generation: swapped.previous.number,
                name: swapped.previous.plugin.name().to_owned(),
                sha256: swapped.previous.plugin.sha256().to_owned(),
            },
            swap_ms: swapped.elapsed.as_secs_f64() * 1e3,
            smoke_checks_passed: swapped.smoke.len(),
        })),
        Err(error) => {
            tracing::warn!(%error, "plugin swap refused; the current plugin keeps serving");
            Err(ApiError::SwapFailed {
                code: error.code(),
                detail: error.to_string(),
            })
        }
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
        for host in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "127.9.9.9",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(loopback_host(&headers(&[(header::HOST, host)])), "{host}");
        }
        for host in [
            "example.com",
            "evil.example:8080",
            "10.0.0.1:80",
            "localhost.evil.example",
            "",
        ] {
            assert!(!loopback_host(&headers(&[(header::HOST, host)])), "{host}");
        }
        assert!(!loopback_host(&HeaderMap::new()));
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
