//! The component: bindings generated from `wit/` (contract 0.1.3), the sources (bm25 over the
//! question's terms, re-ranked by how well each id names them — as the lexical plugin ranks),
//! and the answer asked of the upstream.

use retrieval_query::{fts_expression, id_match, terms};

use crate::completion;
use crate::prompt::{self, Cited};
use crate::settings::{self, Upstream};
use crate::upstream::{self, Failure};

wit_bindgen::generate!({
    world: "retrieval-plugin",
    path: "../../wit",
});

use turnstile::retrieval::corpus::{CorpusError, Ranked, Session};
use turnstile::retrieval::log::{self, Level};
use turnstile::retrieval::{answer, config};

/// Candidates ranked before the best `limit` are kept (as the lexical plugin: the answer to
/// `limit: k` is the first k of the answer to `limit: 20`).
const POOL: u32 = 50;
/// How much naming the object (segments of its id) moves a candidate, relative to bm25.
const ID_WEIGHT: f64 = 0.2;

/// What the operator set: where to ask (none: sources only), and how.
struct Settings {
    upstream: Upstream,
    model: String,
    key: Option<String>,
    max_tokens: u32,
}

/// The settings, or `None` when no `upstream` is set. Read before any work, so a wrong setting
/// fails every call the same way.
fn settings() -> Result<Option<Settings>, RetrieveError> {
    let Some(upstream) = config::get("upstream") else {
        return Ok(None);
    };
    let upstream = settings::upstream(&upstream).map_err(RetrieveError::Config)?;
    let model = config::get("model")
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| RetrieveError::Config("model: required with upstream".to_owned()))?;
    let max_tokens = settings::max_tokens(config::get("max_tokens").as_deref())
        .map_err(RetrieveError::Config)?;
    Ok(Some(Settings {
        upstream,
        model,
        key: config::get("api_key").filter(|k| !k.is_empty()),
        max_tokens,
    }))
}

struct Rag;

impl Guest for Rag {
    fn retrieve(question: String, limit: u32) -> Result<Vec<Source>, RetrieveError> {
        let settings = settings()?;
        let sources = sources(&question, limit)?;
        let Some(settings) = settings else {
            return Ok(sources);
        };
        if sources.is_empty() {
            log::write(Level::Debug, "no sources: nothing to answer from");
            return Ok(sources);
        }
        let cited: Vec<Cited<'_>> = sources
            .iter()
            .map(|s| Cited {
                id: &s.id,
                title: &s.title,
                snippet: &s.snippet,
            })
            .collect();
        let body = prompt::request_body(&settings.model, settings.max_tokens, &question, &cited);
        match upstream::post_json(&settings.upstream, settings.key.as_deref(), &body) {
            Ok(reply) => {
                let text = completion::answer(&reply)
                    .map_err(|e| RetrieveError::Internal(e.message().to_owned()))?;
                answer::set(&text)
                    .map_err(|e| RetrieveError::Internal(format!("answer refused: {e:?}")))?;
            }
            // Not granted, or conformance work (`turnstile check`, a swap's smoke checks): the
            // host's log says which.
            Err(Failure::Denied) => log::write(
                Level::Warn,
                "upstream request denied by the host: answering with sources only",
            ),
            // A key that cannot be a header value is a setting that does not parse.
            Err(failure @ Failure::BadKey) => return Err(RetrieveError::Config(failure.message())),
            Err(failure) => return Err(RetrieveError::Internal(failure.message())),
        }
        Ok(sources)
    }
}

/// The best `limit` sources for `question`, best first; none when it has no searchable term.
fn sources(question: &str, limit: u32) -> Result<Vec<Source>, RetrieveError> {
    let terms = terms(question);
    let Some(expression) = fts_expression(&terms) else {
        log::write(Level::Debug, "question has no searchable terms");
        return Ok(Vec::new());
    };
    let session = Session::open().map_err(corpus_error)?;
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

fn corpus_error(error: CorpusError) -> RetrieveError {
    RetrieveError::Corpus(format!("{error:?}"))
}

export!(Rag);
