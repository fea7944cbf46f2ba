//! `POST /admin/plugin`'s and `POST /admin/corpus`'s requests and answers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /admin/plugin`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SwapRequestBody {
    /// The candidate component: a regular file under the swap roots (`--swap-root`), of at most
    /// 64 MiB.
    pub path: String,
    /// The candidate's sha256 (required when the server is pinned; it becomes the pin).
    #[schema(pattern = "^[0-9a-fA-F]{64}$")]
    pub sha256: Option<String>,
    /// The candidate's settings (default: the server's); at most 64; none may name a secret.
    pub config: Option<BTreeMap<String, String>>,
    /// The origins the candidate's outbound HTTP may reach, `scheme://host[:port]` (`*.` for the
    /// names below a domain), at most 64 (default: the server's `--outbound-allow`). Given, they
    /// are all it gets: a swapped-in plugin never inherits its predecessor's grants.
    pub outbound_allow: Option<Vec<String>>,
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
    /// `swapped`, or `unchanged`: the candidate is what serves (the same sha256, settings and
    /// grants), and no generation was made.
    pub status: SwapStatus,
    /// Now serving new requests.
    pub generation: u64,
    /// Its name.
    pub name: String,
    /// Its sha256.
    pub sha256: String,
    /// What served before (still finishing what it admitted); absent when unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<GenerationBody>,
    /// From the request to the install (or to finding it unchanged).
    pub swap_ms: f64,
    /// Smoke checks passed (0 when unchanged: nothing was loaded).
    pub smoke_checks_passed: usize,
}

/// `POST /admin/corpus`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CorpusSwapRequestBody {
    /// The candidate corpus: a JSON Lines file, plain or gzip (`docs/CORPUS.md`), a regular file
    /// under the swap roots (`--swap-root`), of at most 4 GiB of JSON Lines.
    #[schema(min_length = 1)]
    pub path: String,
    /// The sha256 of its JSON Lines, decompressed (required when the corpus is pinned; it
    /// becomes the pin).
    #[schema(pattern = "^[0-9a-fA-F]{64}$")]
    pub sha256: Option<String>,
}

/// What a swap (of a plugin or a corpus) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SwapStatus {
    /// A new generation serves new requests.
    Swapped,
    /// The candidate is what serves: nothing was installed.
    Unchanged,
}

/// A corpus generation, as a swap reports it.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorpusGenerationBody {
    /// 1 at start, +1 per corpus swap.
    pub generation: u64,
    /// A path, or the embedded corpus's name.
    pub source: String,
    /// sha256 of its JSON Lines (decompressed).
    pub sha256: String,
    /// Documents.
    pub documents: u64,
}

/// 200: a corpus swap installed, or found nothing to change.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorpusSwappedBody {
    /// `swapped` or `unchanged`.
    pub status: SwapStatus,
    /// Now serving new requests.
    pub corpus: CorpusGenerationBody,
    /// What served before (still finishing what it admitted); absent when unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<CorpusGenerationBody>,
    /// Its index: reused from the cache, or built now; absent when unchanged (nothing was
    /// indexed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<turnstile_corpus::IndexOrigin>,
    /// From the request to the install.
    pub swap_ms: f64,
    /// Smoke checks the serving plugin passed over it (0 when unchanged).
    pub smoke_checks_passed: usize,
}
