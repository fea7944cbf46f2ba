//! turnstile's lexical retrieval plugin (contract 0.1.1).
//!
//! It turns an untrusted question into a safe FTS5 expression (`retrieval-query`), searches the
//! corpus through the host's `session`, and returns the best `limit` sources, scored by negated
//! bm25 re-ranked by how well each id names the question's terms.

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

/// The component: bindings generated from `wit/`, and the plugin's `retrieve`.
#[cfg(target_arch = "wasm32")]
mod guest {
    use super::{ID_WEIGHT, POOL};
    use retrieval_query::{fts_expression, id_match, terms};

    wit_bindgen::generate!({
        world: "retrieval-plugin",
        path: "../../wit/v0.1.1",
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
