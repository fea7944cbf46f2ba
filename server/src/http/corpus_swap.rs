//! `POST /admin/corpus`: swap the served corpus without a restart (access: `super::access`).
//! The work — reading, indexing, loading, smoke-checking — is the host's
//! ([`turnstile_host::swap::HotSwap::swap_corpus`]), on a blocking thread.

use std::path::PathBuf;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;
use turnstile_host::swap::{CorpusSwapError, SwapOutcome, Swapped, Trigger};
use turnstile_host::{Generation, Sha256Hex, sanitize};

use super::api::{
    CorpusGenerationBody, CorpusSwapRequestBody, CorpusSwappedBody, InternalBody, InvalidCode,
    SwapRefusal, SwapStatus,
};
use super::error::{ApiError, MAX_QUOTED_BYTES};
use super::state::AppState;
use super::swap_route::SwapRoute;

/// `POST /admin/corpus` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusSwapRequest {
    path: String,
    sha256: Option<String>,
}

/// A `POST /admin/corpus` body, validated.
#[derive(Debug)]
pub(crate) struct CorpusSwapOrder {
    /// The candidate corpus file.
    pub path: PathBuf,
    /// The admin trigger, with the pinned digest if one was given.
    pub trigger: Trigger,
}

impl CorpusSwapOrder {
    /// Validates a body: 422 `invalid_swap_request` or `invalid_sha256`.
    pub(crate) fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let request: CorpusSwapRequest = serde_json::from_slice(body).map_err(|e| {
            ApiError::invalid(
                InvalidCode::InvalidSwapRequest,
                format!(
                    "expected {{\"path\", \"sha256\"?}}: {}",
                    sanitize(&e.to_string(), MAX_QUOTED_BYTES)
                ),
            )
        })?;
        if request.path.is_empty() {
            return Err(ApiError::invalid(
                InvalidCode::InvalidSwapRequest,
                "`path` is empty".to_owned(),
            ));
        }
        let sha256 = match request.sha256.as_deref().map(str::parse::<Sha256Hex>) {
            None => None,
            Some(Ok(hex)) => Some(hex),
            Some(Err(e)) => {
                return Err(ApiError::invalid(
                    InvalidCode::InvalidSha256,
                    sanitize(&e.to_string(), MAX_QUOTED_BYTES),
                ));
            }
        };
        Ok(Self {
            path: request.path.into(),
            trigger: Trigger::Admin { sha256 },
        })
    }
}

/// `POST /admin/corpus`: replace the served corpus without a restart. The candidate's index is
/// built (or reused from the cache) and the serving plugin smoke-checked over it before one
/// atomic install; requests admitted before finish on the corpus they started with.
#[utoipa::path(
    post,
    path = "/admin/corpus",
    tag = "admin",
    request_body(content = CorpusSwapRequestBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Installed (or unchanged): the corpus serving new requests", body = CorpusSwappedBody),
        (status = 422, description = "A bad request, or a refused candidate (the old corpus keeps serving): path_not_allowed, corpus_unreadable, corpus_too_large, corpus_memory, invalid_corpus, sha256_mismatch, sha256_required, corpus_unavailable, smoke_failed, timeout, swap_conflict, swap_busy", body = SwapRefusal),
        (status = 500, description = "The swap's worker failed", body = InternalBody),
    )
)]
pub async fn swap_corpus(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<CorpusSwappedBody>, ApiError> {
    CORPUS_SWAP.serve(&state, &headers, body).await
}

/// `/admin/corpus`, as a swap route.
const CORPUS_SWAP: SwapRoute<CorpusSwapOrder, CorpusSwapError, CorpusSwappedBody> = SwapRoute {
    what: "corpus",
    parse: |_, body| CorpusSwapOrder::parse(body),
    swap: |swap, order| swap.swap_corpus(Some(order.path), order.trigger),
    code: crate::swap_codes::corpus_swap_code,
    answer: swapped_body,
};

/// What a corpus swap answers.
fn swapped_body(swapped: &Swapped) -> CorpusSwappedBody {
    let changed = swapped.outcome == SwapOutcome::Swapped;
    CorpusSwappedBody {
        status: SwapStatus::of(swapped.outcome),
        corpus: generation_body(&swapped.generation),
        previous: changed.then(|| generation_body(&swapped.previous)),
        index: changed.then_some(swapped.generation.corpus.index.origin),
        swap_ms: swapped.elapsed.as_secs_f64() * 1e3,
        smoke_checks_passed: swapped.smoke.len(),
    }
}

fn generation_body(generation: &Generation) -> CorpusGenerationBody {
    let index = &generation.corpus.index;
    CorpusGenerationBody {
        generation: generation.corpus.number,
        source: index.source.clone(),
        sha256: index.sha256.clone(),
        documents: index.documents,
    }
}
