//! `POST /admin/plugin`: swap the served plugin without a restart (access: `super::access`).

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;

use super::api::{
    GenerationBody, InternalBody, InvalidCode, SwapRefusal, SwapRequestBody, SwapStatus,
    SwappedBody,
};
use super::error::{ApiError, MAX_QUOTED_BYTES};
use super::state::AppState;
use super::swap_route::SwapRoute;
use turnstile_host::capabilities::CapabilityNarrowing;
use turnstile_host::capabilities::outbound::Origins;
use turnstile_host::swap::{SwapError, SwapOutcome, SwapSettings, Swapped, Trigger};
use turnstile_host::{
    Generation, MAX_PLUGIN_CONFIG_ENTRIES, PluginSource, Sha256Hex, plugin_config, sanitize,
};

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
    /// The candidate's outbound grants (default: the server's `--outbound-allow`).
    outbound_allow: Option<Vec<String>>,
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

/// A `POST /admin/plugin` body, validated: what to swap to, with what pin and settings.
#[derive(Debug)]
pub(crate) struct SwapOrder {
    /// The candidate.
    pub source: PluginSource,
    /// The admin trigger, with the pinned digest if one was given.
    pub trigger: Trigger,
    /// The candidate's own settings and grants, where given.
    pub settings: SwapSettings,
}

impl SwapOrder {
    /// Validates a body: 422 `invalid_swap_request`, `invalid_sha256` or
    /// `invalid_plugin_config`, with a message that is cut and escaped (it can quote the body).
    pub(crate) fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let request: SwapRequest = serde_json::from_slice(body).map_err(|e| {
            ApiError::invalid(
                InvalidCode::InvalidSwapRequest,
                format!(
                    "expected {{\"path\", \"sha256\"?, \"config\"?, \"outbound_allow\"?}}: {}",
                    sanitize(&e.to_string(), MAX_QUOTED_BYTES)
                ),
            )
        })?;
        let expected = match request.sha256.as_deref().map(str::parse::<Sha256Hex>) {
            None => None,
            Some(Ok(hex)) => Some(hex),
            Some(Err(e)) => {
                return Err(ApiError::invalid(
                    InvalidCode::InvalidSha256,
                    sanitize(&e.to_string(), MAX_QUOTED_BYTES),
                ));
            }
        };
        let config = match request.config {
            None => None,
            Some(ConfigEntries(entries)) => Some(plugin_config(entries).map_err(|e| {
                ApiError::invalid(
                    InvalidCode::InvalidPluginConfig,
                    format!("`config`: {}", sanitize(&e.to_string(), MAX_QUOTED_BYTES)),
                )
            })?),
        };
        let outbound = match request.outbound_allow {
            None => None,
            Some(origins) => Some(Origins::parse(&origins).map_err(|e| {
                ApiError::invalid(
                    InvalidCode::InvalidOutboundAllow,
                    format!(
                        "`outbound_allow`: {}",
                        sanitize(&e.to_string(), MAX_QUOTED_BYTES)
                    ),
                )
            })?),
        };
        Ok(Self {
            source: PluginSource::File(request.path.into()),
            trigger: Trigger::Admin { sha256: expected },
            settings: SwapSettings {
                config,
                capabilities: CapabilityNarrowing { outbound },
            },
        })
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
        (status = 422, description = "A bad request, or a refused candidate (the old plugin keeps serving)", body = SwapRefusal),
        (status = 500, description = "The swap's worker failed", body = InternalBody),
    )
)]
pub async fn swap_plugin(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<SwappedBody>, ApiError> {
    PLUGIN_SWAP.serve(&state, &headers, body).await
}

/// `/admin/plugin`, as a swap route.
const PLUGIN_SWAP: SwapRoute<SwapOrder, SwapError, SwappedBody> = SwapRoute {
    what: "plugin",
    parse: checked_order,
    swap: |swap, order| swap.swap(order.source, order.trigger, order.settings),
    code: crate::swap_codes::plugin_swap_code,
    answer: swapped_body,
};

/// The order of a body, its settings checked against the secrets' names.
fn checked_order(state: &AppState, body: &[u8]) -> Result<SwapOrder, ApiError> {
    let order = SwapOrder::parse(body)?;
    if let Some(config) = &order.settings.config
        && let Some(name) = state.swap.secret_names().find(|n| config.contains_key(*n))
    {
        return Err(ApiError::invalid(
            InvalidCode::InvalidPluginConfig,
            format!(
                "`config`: {:?} is the name of a secret",
                sanitize(name, MAX_QUOTED_BYTES)
            ),
        ));
    }
    Ok(order)
}

/// What a plugin swap answers.
fn swapped_body(swapped: &Swapped) -> SwappedBody {
    let unchanged = swapped.outcome == SwapOutcome::Unchanged;
    let body = |generation: &Generation| GenerationBody {
        generation: generation.number,
        name: generation.plugin.name().to_owned(),
        sha256: generation.plugin.sha256().to_owned(),
    };
    let now = body(&swapped.generation);
    SwappedBody {
        status: SwapStatus::of(swapped.outcome),
        generation: now.generation,
        name: now.name,
        sha256: now.sha256,
        previous: (!unchanged).then(|| body(&swapped.previous)),
        swap_ms: swapped.elapsed.as_secs_f64() * 1e3,
        smoke_checks_passed: swapped.smoke.len(),
    }
}
