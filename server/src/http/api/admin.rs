//! `POST /admin/plugin`'s request and answer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::errors::SwappedStatus;

/// `POST /admin/plugin`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SwapRequestBody {
    /// The candidate component: a regular file of at most 64 MiB.
    pub path: String,
    /// The candidate's sha256 (required when the server is pinned; it becomes the pin).
    #[schema(pattern = "^[0-9a-fA-F]{64}$")]
    pub sha256: Option<String>,
    /// The candidate's settings (default: the server's); at most 64.
    pub config: Option<BTreeMap<String, String>>,
}

/// A plugin generation, as a swap reports it.
#[derive(Debug, Serialize, ToSchema)]
pub struct GenerationBody {
    /// 1 at start, +1 per swap.
    pub generation: u64,
    /// The plugin's name.
    pub name: String,
    /// sha256 of its component.
    pub sha256: String,
}

/// 200: a swap installed.
#[derive(Debug, Serialize, ToSchema)]
pub struct SwappedBody {
    /// `swapped`.
    pub status: SwappedStatus,
    /// Now serving new requests.
    pub generation: u64,
    /// Its name.
    pub name: String,
    /// Its sha256.
    pub sha256: String,
    /// What served before (still finishing what it admitted).
    pub previous: GenerationBody,
    /// From the request to the install.
    pub swap_ms: f64,
    /// Smoke checks passed.
    pub smoke_checks_passed: usize,
}
