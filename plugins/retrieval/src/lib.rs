//! turnstile's default retrieval plugin.
//!
//! It turns an untrusted question into a safe FTS5 expression — every term is a quoted string, so
//! FTS5 syntax typed by a user (`AND`, `NEAR`, `*`, `"`, `:`…) is inert — searches the corpus through
//! the host's `session`, and returns the best `limit` sources, scored by negated bm25.

// wit-bindgen generates the ABI glue (`unsafe`, exported by symbol name) and undocumented
// binding items; a guest cdylib has no Rust API to document.
#![allow(unsafe_code, missing_docs)]
// Natively only the query logic below is built, for its unit tests.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

/// Candidates fetched for re-ranking, whatever `limit` is (the host's most): a `limit: k` answer
/// is then the first k of a `limit: 20` answer, since the pool does not depend on `limit`. The
/// pool size hardly changes the cost: SQLite computes bm25 for every matching document anyway,
/// and only the sources kept get a snippet.
const POOL: u32 = 50;
/// How much naming the object (segments of its id) moves a candidate, relative to bm25.
const ID_WEIGHT: f64 = 0.2;

/// Questions longer than this many terms are cut: a longer OR-expression only adds noise and cost.
const MAX_TERMS: usize = 32;
/// Terms longer than this many characters are cut (a run of 500 letters with no separator, as
/// in Japanese text, is one "word"). With `MAX_TERMS` this bounds the expression the plugin
/// builds to 32 × (48 × 4 + 2) + 31 × 4 = 6,332 bytes, within the host's 8 KiB and 64 terms.
const MAX_TERM_CHARS: usize = 48;

// English function words that carry no retrieval signal in a question. In a file of its own so
// that `corpus/benches/fts5_ceiling.rs` builds exactly the plugin's expressions (`include!`).
include!("stop_words.rs");

/// The component: bindings generated from `wit/`, and the plugin's `retrieve`.
#[cfg(target_arch = "wasm32")]
mod guest {
    use super::{ID_WEIGHT, POOL, fts_expression, id_match, terms};

    wit_bindgen::generate!({
        world: "retrieval-plugin",
        path: "../../wit",
    });

    use turnstile::retrieval::corpus::{CorpusError, Ranked, Session};
    use turnstile::retrieval::log::{self, Level};

    struct Retrieval;

    impl Guest for Retrieval {
        fn retrieve(question: String, limit: u32) -> Result<Vec<Source>, RetrieveError> {
            let terms = terms(&question);
            let Some(expression) = fts_expression(&terms) else {
                log::write(Level::Debug, "question has no searchable terms");
                return Ok(Vec::new());
            };
            let session = Session::open().map_err(corpus_error)?;
            // Take a wider pool than asked for, then re-rank it with what bm25 cannot see: whether
            // the question names the documented object itself.
            // The pool is ranked without snippets (a snippet costs about as much as ranking hundreds
            // of matches); only the sources kept get one.
            let candidates = session.rank(&expression, POOL).map_err(corpus_error)?;
            let mut chosen: Vec<(f64, Ranked)> = candidates
                .into_iter()
                .filter(|c| c.rank.is_finite())
                .map(|c| (-c.rank * (1.0 + ID_WEIGHT * id_match(&c.id, &terms)), c))
                .collect();
            chosen.sort_by(|(a, x), (b, y)| b.total_cmp(a).then_with(|| x.id.cmp(&y.id)));
            chosen.truncate(limit as usize);
            chosen
                .into_iter()
                .map(|(score, c)| {
                    let snippet = session
                        .snippet(&expression, c.doc)
                        .map_err(corpus_error)?
                        .unwrap_or_default();
                    Ok(Source {
                        id: c.id,
                        title: c.title,
                        snippet,
                        score,
                    })
                })
                .collect()
        }
    }

    fn corpus_error(error: CorpusError) -> RetrieveError {
        RetrieveError::Corpus(format!("{error:?}"))
    }

    export!(Retrieval);
}

/// Lowercased alphanumeric terms of `question`, stop words dropped (unless nothing else is left),
/// deduplicated in order of appearance.
fn terms(question: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for word in question
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
    {
        let word: String = word.to_lowercase().chars().take(MAX_TERM_CHARS).collect();
        if !all.contains(&word) {
            all.push(word);
        }
    }
    let content: Vec<String> = all
        .iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    let mut chosen = if content.is_empty() { all } else { content };
    chosen.truncate(MAX_TERMS);
    chosen
}

/// How well a document id matches the question's terms: +1 for each id segment (split on `.`
/// and `_`, lowercased) that is a term, -0.5 for each that is not. `asyncio.Semaphore` matches
/// "asyncio semaphore" better than `asyncio.Semaphore.locked` or `asyncio.BoundedSemaphore`.
fn id_match(id: &str, terms: &[String]) -> f64 {
    let id = id.strip_prefix("topic:").unwrap_or(id);
    id.split(['.', '_'])
        .filter(|s| !s.is_empty())
        .map(|segment| {
            if terms.iter().any(|t| t.eq_ignore_ascii_case(segment)) {
                1.0
            } else {
                -0.5
            }
        })
        .sum()
}

/// An FTS5 expression that ORs every term as a quoted string, or `None` when there is no term.
fn fts_expression(terms: &[String]) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    Some(
        terms
            .iter()
            // Terms hold only alphanumerics and `_`, but double any quote anyway: that is FTS5's
            // escape inside a string, so the expression stays inert whatever the tokenizer does.
            .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" OR "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_stop_words_and_quotes_terms() {
        assert_eq!(
            fts_expression(&terms("How do I parse command line arguments?")).as_deref(),
            Some("\"parse\" OR \"command\" OR \"line\" OR \"arguments\"")
        );
    }

    #[test]
    fn fts_syntax_in_the_question_is_inert() {
        let expr = fts_expression(&terms("NEAR(a b) OR \"x\" * col:^y")).unwrap_or_default();
        assert_eq!(expr, "\"near\" OR \"b\" OR \"x\" OR \"col\" OR \"y\"");
    }

    #[test]
    fn stop_words_only_still_searches() {
        assert_eq!(
            fts_expression(&terms("how is it")).as_deref(),
            Some("\"how\" OR \"is\" OR \"it\"")
        );
    }

    #[test]
    fn naming_the_object_ranks_it_higher() {
        let t = terms("limit concurrency with an asyncio semaphore");
        assert!(id_match("asyncio.Semaphore", &t) > id_match("asyncio.Semaphore.locked", &t));
        assert!(id_match("asyncio.Semaphore", &t) > id_match("asyncio.BoundedSemaphore", &t));
    }

    /// Every question of up to 500 characters gives an expression the host accepts: at most 64
    /// terms and 8 KiB, however the characters fall.
    #[test]
    fn the_expression_fits_the_hosts_bounds() {
        for question in [
            "文字列を分割する方法".repeat(50),
            "é".repeat(500),
            "a ".repeat(250),
            "𝔘".repeat(500),
            (0..500)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect::<String>(),
        ] {
            let terms = terms(&question);
            assert!(terms.len() <= MAX_TERMS);
            let expression = fts_expression(&terms).unwrap();
            assert!(expression.len() <= 8192, "{} bytes", expression.len());
        }
    }

    #[test]
    fn no_terms_at_all() {
        assert_eq!(fts_expression(&terms("?! 🙂 …")), None);
    }
}
