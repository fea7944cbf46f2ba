//! turnstile's default retrieval plugin (contract 0.1.2): hybrid lexical + semantic retrieval.
//!
//! Two candidate pools, each of a fixed size whatever `limit` is: the bm25 pool of the question's
//! terms (`session.rank`, re-ranked by how well each id names the terms, as the lexical plugin
//! does), and the pool of documents whose vectors are nearest the question's embedding
//! (`embeddings.embed`, `session.nearest`). They are fused by score: a weighted sum of the
//! pool-normalised lexical score and the cosine similarity (`docs/RETRIEVAL.md`). A question the
//! model knows nothing of, or with no searchable term, is answered by the other pool alone.
//!
//! Operator settings (`--plugin-config`): `lexical_weight`, the lexical score's weight in the
//! fusion, 0..=1 (default `retrieval_query::fusion::LEXICAL_WEIGHT`); 0 is semantic only, 1
//! lexical only.

// wit-bindgen generates the ABI glue (`unsafe`, exported by symbol name) and undocumented
// binding items; a guest cdylib has no Rust API to document.
#![allow(unsafe_code, missing_docs)]

/// The component: bindings generated from `wit/`, and the plugin's `retrieve`.
#[cfg(target_arch = "wasm32")]
mod guest {
    use retrieval_query::fusion::{
        Candidate, ID_WEIGHT, LEXICAL_WEIGHT, POOL, fuse, lexical_weight, text_snippet,
    };
    use retrieval_query::{fts_expression, id_match, terms};

    wit_bindgen::generate!({
        world: "retrieval-plugin",
        path: "../../wit/v0.1.2",
    });

    use turnstile::retrieval::corpus::{CorpusError, Session};
    use turnstile::retrieval::{config, embeddings};

    struct Hybrid;

    impl Guest for Hybrid {
        fn retrieve(question: String, limit: u32) -> Result<Vec<Source>, RetrieveError> {
            let weight = match config::get("lexical_weight") {
                None => LEXICAL_WEIGHT,
                Some(value) => lexical_weight(&value).map_err(RetrieveError::Config)?,
            };
            let terms = terms(&question);
            let expression = fts_expression(&terms);
            let session = Session::open().map_err(corpus_error)?;

            let mut lexical = Vec::new();
            if let Some(expression) = &expression {
                for hit in session.rank(expression, POOL).map_err(corpus_error)? {
                    let score = -hit.rank * (1.0 + ID_WEIGHT * id_match(&hit.id, &terms));
                    let mut candidate = Candidate::new(hit.id, hit.title, hit.doc, score);
                    candidate.lexical = true;
                    lexical.push(candidate);
                }
            }
            let mut semantic = Vec::new();
            let vectors = embeddings::embed(std::slice::from_ref(&question))
                .map_err(|e| RetrieveError::Internal(format!("{e:?}")))?;
            if let Some(vector) = vectors.first() {
                for near in session.nearest(vector, POOL).map_err(corpus_error)? {
                    semantic.push(Candidate::new(
                        near.id,
                        near.title,
                        near.doc,
                        near.similarity,
                    ));
                }
            }

            let mut chosen = fuse(lexical, semantic, weight);
            chosen.truncate(limit as usize);
            chosen
                .into_iter()
                .map(|(score, c)| {
                    // Only a document of the lexical pool matches the expression: asking a
                    // snippet of another would cost a full-text match for nothing.
                    let matched = match &expression {
                        Some(expression) if c.lexical => {
                            session.snippet(expression, c.doc).map_err(corpus_error)?
                        }
                        _ => None,
                    };
                    let snippet = match matched {
                        Some(snippet) => snippet,
                        None => session
                            .get(&c.id)
                            .map_err(corpus_error)?
                            .map(|d| text_snippet(&d.text))
                            .unwrap_or_default(),
                    };
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

    export!(Hybrid);
}
