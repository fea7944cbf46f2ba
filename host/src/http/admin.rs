//! Operator endpoints: `POST /admin/plugin` swaps the served plugin; access is checked by
//! [`require_admin`] for these and for `/state` when the server listens beyond loopback.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, AppState};
use crate::plugin::{MAX_PLUGIN_CONFIG_ENTRIES, PluginSource, Sha256Hex, plugin_config};

/// Lets a request through only if the admin policy allows its peer and credentials.
pub async fn require_admin(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let is_state = request.uri().path() == "/state";
    if is_state && !state.admin.protect_state {
        return next.run(request).await;
    }
    let authorization = request
        .headers()
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
pub async fn swap_plugin(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let request: SwapRequest = serde_json::from_slice(&body).map_err(|e| {
        ApiError::unprocessable(
            "invalid_swap_request",
            format!("expected {{\"path\", \"sha256\"?, \"config\"?}}: {e}"),
        )
    })?;
    let expected = match request.sha256.as_deref().map(str::parse::<Sha256Hex>) {
        None => None,
        Some(Ok(hex)) => Some(hex),
        Some(Err(e)) => return Err(ApiError::unprocessable("invalid_sha256", e.to_string())),
    };
    let config = match request.config {
        None => None,
        Some(ConfigEntries(entries)) => Some(plugin_config(entries).map_err(|e| {
            ApiError::unprocessable("invalid_plugin_config", format!("`config`: {e}"))
        })?),
    };
    let source = PluginSource::File(request.path.into());
    let swap = Arc::clone(&state.swap);
    let outcome = tokio::task::spawn_blocking(move || swap.swap(source, expected.as_ref(), config))
        .await
        .map_err(|_| ApiError::Internal { request_id: 0 })?;
    match outcome {
        Ok(swapped) => Ok(Json(json!({
            "status": "swapped",
            "generation": swapped.generation.number,
            "name": swapped.generation.plugin.name(),
            "sha256": swapped.generation.plugin.sha256(),
            "previous": {
                "generation": swapped.previous.number,
                "name": swapped.previous.plugin.name(),
                "sha256": swapped.previous.plugin.sha256(),
            },
            "swap_ms": swapped.elapsed.as_secs_f64() * 1e3,
            "smoke_checks_passed": swapped.smoke.len(),
        }))),
        Err(error) => {
            tracing::warn!(%error, "plugin swap refused; the current plugin keeps serving");
            Err(ApiError::SwapFailed {
                code: error.code(),
                detail: error.to_string(),
            })
        }
    }
}
