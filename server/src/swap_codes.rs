//! The codes a typed swap refusal of the runtime gets: what a client reads in a 422
//! `swap_failed` body's `error`, and the `result` label of the swap metrics. The runtime returns
//! typed errors; the codes are the server's, named once here.

use turnstile_host::swap::{CorpusSwapError, SwapError, SwapOutcome};

/// The code of a refused plugin candidate.
pub fn plugin_swap_code(error: &SwapError) -> &'static str {
    match error {
        SwapError::NotAllowed(_) => "path_not_allowed",
        SwapError::Unreadable(_) => "plugin_unreadable",
        SwapError::Sha256Mismatch { .. } => "sha256_mismatch",
        SwapError::PinRequired { .. } => "sha256_required",
        SwapError::Incompatible(_) => "incompatible_plugin",
        SwapError::Corpus(_) => "corpus_unavailable",
        SwapError::Timeout { .. } => "timeout",
        SwapError::SmokeFailed { .. } => "smoke_failed",
        SwapError::Conflict { .. } => "swap_conflict",
        SwapError::Busy => "swap_busy",
        SwapError::GrantWidened(widened) => widened.code,
    }
}

/// The code of a refused corpus candidate.
pub fn corpus_swap_code(error: &CorpusSwapError) -> &'static str {
    match error {
        CorpusSwapError::NotAllowed(_) => "path_not_allowed",
        CorpusSwapError::Unreadable(_) => "corpus_unreadable",
        CorpusSwapError::TooLarge(_) => "corpus_too_large",
        CorpusSwapError::MemoryHeld { .. } => "corpus_memory",
        CorpusSwapError::Invalid(_) => "invalid_corpus",
        CorpusSwapError::Sha256Mismatch { .. } => "sha256_mismatch",
        CorpusSwapError::PinRequired { .. } => "sha256_required",
        CorpusSwapError::Index(_) => "corpus_unavailable",
        CorpusSwapError::Plugin(_) | CorpusSwapError::SmokeFailed { .. } => "smoke_failed",
        CorpusSwapError::Timeout { .. } => "timeout",
        CorpusSwapError::Conflict { .. } => "swap_conflict",
        CorpusSwapError::Busy => "swap_busy",
    }
}

/// The `result` label of a plugin swap attempt: `swapped`, `unchanged`, or the refusal's code.
pub fn plugin_swap_result(outcome: Result<SwapOutcome, &SwapError>) -> &'static str {
    match outcome {
        Ok(outcome) => outcome_label(outcome),
        Err(error) => plugin_swap_code(error),
    }
}

/// The `result` label of a corpus swap attempt: `swapped`, `unchanged`, or the refusal's code.
pub fn corpus_swap_result(outcome: Result<SwapOutcome, &CorpusSwapError>) -> &'static str {
    match outcome {
        Ok(outcome) => outcome_label(outcome),
        Err(error) => corpus_swap_code(error),
    }
}

fn outcome_label(outcome: SwapOutcome) -> &'static str {
    match outcome {
        SwapOutcome::Swapped => "swapped",
        SwapOutcome::Unchanged => "unchanged",
    }
}
