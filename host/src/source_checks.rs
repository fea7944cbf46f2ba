//! What a plugin's answer must be before anyone sees it, checked by the host whatever the plugin
//! did.

use turnstile_corpus::{CorpusPool, SessionLimits};

use crate::bindings::Source;
use crate::error::ContractViolation;
use crate::output::{MAX_LOGGED_TEXT, sanitize};

/// Longest title and snippet a plugin may return, in bytes (the contract's bounds).
const MAX_SOURCE_TITLE: usize = 512;
const MAX_SOURCE_SNIPPET: usize = 1024;

/// The host checks what the contract promises clients, whatever the plugin did — the same rules
/// when serving as in `turnstile check`, so a plugin cannot serve what `check` would refuse:
/// at most `limit` sources, ids of the corpus, finite best-first scores, titles and snippets
/// within their bounds. Ids in the errors are cut and escaped: they go into log lines.
pub(crate) fn check_sources(
    sources: &[Source],
    limit: u32,
    corpus: &CorpusPool,
) -> Result<(), ContractViolation> {
    let logged = |id: &str| sanitize(id, MAX_LOGGED_TEXT);
    if sources.len() > limit as usize {
        return Err(ContractViolation::TooManySources {
            returned: sources.len(),
            limit,
        });
    }
    for s in sources {
        if s.id.is_empty() || s.id.len() > SessionLimits::MAX_ID_BYTES {
            return Err(ContractViolation::BadId {
                bytes: s.id.len(),
                max: SessionLimits::MAX_ID_BYTES,
            });
        }
        if !s.score.is_finite() {
            return Err(ContractViolation::NonFiniteScore {
                id: logged(&s.id),
                score: s.score,
            });
        }
        for (field, text, max) in [
            ("title", &s.title, MAX_SOURCE_TITLE),
            ("snippet", &s.snippet, MAX_SOURCE_SNIPPET),
        ] {
            if text.len() > max {
                return Err(ContractViolation::FieldTooLong {
                    id: logged(&s.id),
                    field,
                    bytes: text.len(),
                    max,
                });
            }
        }
    }
    if let Some(w) = sources.windows(2).find(|w| w[1].score > w[0].score) {
        return Err(ContractViolation::NotBestFirst {
            before: w[0].score,
            after: w[1].score,
        });
    }
    if sources.is_empty() {
        return Ok(());
    }
    match corpus.first_unknown(sources.iter().map(|s| s.id.as_str())) {
        Ok(Some(id)) => Err(ContractViolation::UnknownId { id: logged(id) }),
        Ok(None) => Ok(()),
        Err(e) => Err(ContractViolation::Corpus(e.to_string())),
    }
}
