//! The component: bindings generated from `wit/` (contract 0.1.4), the sources (hybrid, as the
//! default plugin finds them: bm25 and embedding similarity, fused), told to the client before
//! the model is asked, and the answer streamed from the upstream into `answer.append` token by
//! token.

use retrieval_query::fusion::{Candidate, ID_WEIGHT, LEXICAL_WEIGHT, POOL, fuse, text_snippet};
use retrieval_query::{fts_expression, id_match, terms};

use crate::chunk::Finish;
use crate::prompt::{self, Asked, Passage, Speaker};
use crate::settings::{self, Upstream};
use crate::upstream::{self, Failure, Flow};

wit_bindgen::generate!({
    world: "retrieval-plugin",
    path: "../../wit",
});

use turnstile::retrieval::answer::{self, FinishReason, StreamError, Usage};
use turnstile::retrieval::conversation::{self, Role};
use turnstile::retrieval::corpus::{CorpusError, Session};
use turnstile::retrieval::log::{self, Level};
use turnstile::retrieval::{config, embeddings};

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
        // The weaker choice: a key the plugin holds. With `--outbound-bearer` the host adds it.
        key: config::get("api_key").filter(|k| !k.is_empty()),
        max_tokens,
    }))
}

/// A source with the text of its document (what the model reads).
struct Found {
    source: Source,
    text: String,
}

struct Rag;

impl Guest for Rag {
    fn retrieve(question: String, limit: u32) -> Result<Vec<Source>, RetrieveError> {
        let settings = settings()?;
        let found = sources(&question, limit)?;
        let sources: Vec<Source> = found.iter().map(|f| f.source.clone()).collect();
        let Some(settings) = settings else {
            return Ok(sources);
        };
        if found.is_empty() {
            log::write(Level::Debug, "no sources: nothing to answer from");
            return Ok(sources);
        }
        // The sources before the model's first token: a chat client shows them while it writes.
        let cited: Vec<answer::Cited> = sources
            .iter()
            .map(|s| answer::Cited {
                id: s.id.clone(),
                title: s.title.clone(),
                snippet: s.snippet.clone(),
                score: s.score,
            })
            .collect();
        match answer::cite(&cited) {
            Ok(()) => {}
            Err(StreamError::ClientGone) => return Ok(sources),
            Err(error) => log::write(Level::Warn, &format!("cite refused: {error:?}")),
        }
        ask(&settings, &question, &found)?;
        Ok(sources)
    }
}

/// Asks the upstream, appending each piece of its answer as it arrives; the answer's end (or
/// its failure) is told with `answer.finish`.
fn ask(settings: &Settings, question: &str, found: &[Found]) -> Result<(), RetrieveError> {
    let history = conversation::history();
    let parameters = conversation::parameters();
    let turns: Vec<prompt::Turn<'_>> = history
        .iter()
        .map(|t| prompt::Turn {
            speaker: match t.role {
                Role::System => Speaker::System,
                Role::User => Speaker::User,
                Role::Assistant => Speaker::Assistant,
            },
            content: &t.content,
        })
        .collect();
    let asked = Asked {
        max_tokens: settings::answer_tokens(parameters.max_tokens, settings.max_tokens),
        temperature: parameters.temperature,
        stop: parameters.stop,
        user: parameters.user,
    };
    let passages: Vec<Passage<'_>> = found
        .iter()
        .map(|f| Passage {
            id: &f.source.id,
            title: &f.source.title,
            text: &f.text,
        })
        .collect();
    let body = prompt::request_body(&settings.model, &asked, question, &passages, &turns);
    let mut full = false;
    let mut append = |text: &str| match answer::append(text) {
        Ok(()) => Flow::Go,
        Err(StreamError::TooLong(_)) => {
            full = true;
            Flow::Stop
        }
        Err(_) => Flow::Stop,
    };
    match upstream::ask(
        &settings.upstream,
        settings.key.as_deref(),
        &body,
        &mut append,
    ) {
        Ok(ended) => answer::finish(reason(ended.finish), usage(ended.usage)),
        Err(Failure::ClientGone) if full => answer::finish(FinishReason::Length, None),
        // Nobody reads the answer any more: return at once, so the slot goes back.
        Err(Failure::ClientGone) => {}
        // Not granted, or conformance work (`turnstile check`, a swap's smoke checks): the
        // host's log says which.
        Err(Failure::Denied) => log::write(
            Level::Warn,
            "upstream request denied by the host: answering with sources only",
        ),
        // A key that cannot be a header value is a setting that does not parse.
        Err(failure @ Failure::BadKey) => return Err(RetrieveError::Config(failure.message())),
        // The sources stay; the host answers with the error the backend's signal names.
        Err(failure) => {
            log::write(Level::Warn, &failure.message());
            answer::finish(FinishReason::Failed, None);
        }
    }
    Ok(())
}

fn reason(finish: Option<Finish>) -> FinishReason {
    match finish {
        Some(Finish::Length) => FinishReason::Length,
        Some(Finish::ContentFilter) => FinishReason::ContentFilter,
        _ => FinishReason::Stop,
    }
}

fn usage(counts: Option<(u32, u32)>) -> Option<Usage> {
    counts.map(|(prompt_tokens, completion_tokens)| Usage {
        prompt_tokens,
        completion_tokens,
    })
}

/// The best `limit` sources for `question`, best first, each with its document's text: the
/// default plugin's hybrid ranking (bm25 pool and nearest-vector pool, fused).
fn sources(question: &str, limit: u32) -> Result<Vec<Found>, RetrieveError> {
    let terms = terms(question);
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
    let vectors = embeddings::embed(std::slice::from_ref(&question.to_owned()))
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
    let mut chosen = fuse(lexical, semantic, LEXICAL_WEIGHT);
    chosen.truncate(limit as usize);
    chosen
        .into_iter()
        .map(|(score, c)| {
            let text = session
                .get(&c.id)
                .map_err(corpus_error)?
                .map(|d| d.text)
                .unwrap_or_default();
            // The client's snippet shows where the question's terms are; the model reads the
            // whole passage.
            let matched = match &expression {
                Some(expression) if c.lexical => {
                    session.snippet(expression, c.doc).map_err(corpus_error)?
                }
                _ => None,
            };
            let snippet = matched.unwrap_or_else(|| text_snippet(&text));
            Ok(Found {
                source: Source {
                    id: c.id,
                    title: c.title,
                    snippet,
                    score,
                },
                text,
            })
        })
        .collect()
}

fn corpus_error(error: CorpusError) -> RetrieveError {
    RetrieveError::Corpus(format!("{error:?}"))
}

export!(Rag);
