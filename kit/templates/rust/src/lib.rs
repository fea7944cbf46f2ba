//! {{name}}: a lexical retrieval plugin for turnstile (world `retrieval-plugin` of
//! `turnstile:retrieval@0.1.4`, in `wit/`).
//!
//! For each question it builds a safe FTS5 expression from the question's words, lets the host
//! rank a pool of candidates by bm25 (`session.rank`), keeps the best `limit`, and asks a snippet
//! for each hit it keeps (`session.snippet`). Make it yours in `score` (re-rank the pool) and
//! `terms` (what is searched for).

// The bindings (Rust types for every WIT type, the `Guest` trait to implement, the `export!`
// macro) are generated at compile time from the WIT the host gave you in `wit/`.
wit_bindgen::generate!({
    world: "retrieval-plugin",
    path: "wit",
});

use turnstile::retrieval::corpus::{CorpusError, Ranked, Session};
use turnstile::retrieval::log::{self, Level};

/// Candidates ranked per question, whatever `limit` is (the host asks for 1..=20). Ranking costs
/// about the same for 50 as for 5 (SQLite scores every matching document anyway), and a wider pool
/// leaves room for `score` to promote a hit bm25 placed lower.
const POOL: u32 = 50;
/// At most this many terms: a longer OR-expression only adds noise and cost.
const MAX_TERMS: usize = 32;
/// Terms are cut to this many characters (a run of 500 letters with no separator, as in Japanese
/// text, is one "word"). With `MAX_TERMS` this keeps the expression well within the host's bound.
const MAX_TERM_CHARS: usize = 48;
/// English function words that carry no retrieval signal in a question.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "me", "my", "of", "on", "or", "the", "this", "to", "use", "what",
    "when", "which", "with", "you",
];

struct Plugin;

impl Guest for Plugin {
    /// Rust has no exceptions: every failure below is a `RetrieveError` the host logs. Don't
    /// `unwrap` or index past an end here: a panic aborts the instance, and the host sees only a
    /// trap, without your message.
    fn retrieve(question: String, limit: u32) -> Result<Vec<Source>, RetrieveError> {
        let terms = terms(&question);
        let Some(expression) = fts_expression(&terms) else {
            log::write(Level::Debug, "the question has no searchable terms");
            return Ok(Vec::new());
        };
        // The session is the plugin's read-only handle on the corpus; dropping it (at the end of
        // this function) releases the host's connection.
        let session = Session::open().map_err(corpus_error)?;
        let mut pool: Vec<(f64, Ranked)> = session
            .rank(&expression, POOL)
            .map_err(corpus_error)?
            .into_iter()
            .map(|hit| (score(&hit, &terms), hit))
            // The host refuses a source whose score is not finite.
            .filter(|(score, _)| score.is_finite())
            .collect();
        // Best first; ties by id, so the same question always gets the same answer.
        pool.sort_by(|(a, x), (b, y)| b.total_cmp(a).then_with(|| x.id.cmp(&y.id)));
        pool.truncate(limit as usize);
        // A snippet re-reads its document, so only the hits kept get one.
        pool.into_iter()
            .map(|(score, hit)| {
                let snippet = session
                    .snippet(&expression, hit.doc)
                    .map_err(corpus_error)?
                    .unwrap_or_default();
                Ok(Source {
                    id: hit.id,
                    title: hit.title,
                    snippet,
                    score,
                })
            })
            .collect()
    }
}

export!(Plugin);

/// How relevant `hit` is: higher is better. bm25's rank is lower-is-better, so negate it. This is
/// the place to re-rank the pool (e.g. favour a hit whose id names a term).
fn score(hit: &Ranked, _terms: &[String]) -> f64 {
    -hit.rank
}

/// A corpus failure as the plugin's error. Each is an ordinary, typed error (e.g. `bad-expression`
/// carries SQLite's message), never a trap; the host logs the message.
fn corpus_error(error: CorpusError) -> RetrieveError {
    RetrieveError::Corpus(format!("{error:?}"))
}

/// The question's words (runs of letters and digits), lowercased, deduplicated in order, stop
/// words dropped (unless nothing else is left), bounded.
fn terms(question: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for word in question
        .split(|c: char| !c.is_alphanumeric())
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
    let mut terms = if content.is_empty() { all } else { content };
    terms.truncate(MAX_TERMS);
    terms
}

/// The terms as an FTS5 expression: each a quoted string, joined by ` OR `, or `None` without a
/// term. Quoting makes anything the user typed inert (`AND`, `NEAR`, `*`, `:`, `"`): the question
/// is untrusted text, and the host would answer FTS5 syntax errors with `bad-expression`.
fn fts_expression(terms: &[String]) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    let quoted: Vec<String> = terms
        .iter()
        // `""` is FTS5's escape for a quote inside a string (terms hold none, but stay safe).
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    Some(quoted.join(" OR "))
}

// `cargo test` runs these natively: no wasm, no host.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_terms_and_drops_stop_words() {
        assert_eq!(
            fts_expression(&terms("How do I parse command-line arguments?")).as_deref(),
            Some(r#""parse" OR "command" OR "line" OR "arguments""#)
        );
    }

    #[test]
    fn fts5_syntax_in_the_question_is_inert() {
        assert_eq!(
            fts_expression(&terms(r#"NEAR(json dumps) AND "x" * col:y"#)).as_deref(),
            Some(r#""near" OR "json" OR "dumps" OR "x" OR "col" OR "y""#)
        );
    }

    #[test]
    fn stop_words_only_still_searches() {
        assert_eq!(
            fts_expression(&terms("how is it")).as_deref(),
            Some(r#""how" OR "is" OR "it""#)
        );
    }

    #[test]
    fn no_words_no_expression() {
        assert_eq!(fts_expression(&terms("?! 🙂 …")), None);
    }

    #[test]
    fn bounded() {
        let words: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let terms = terms(&format!("{} {}", "x".repeat(500), words.join(" ")));
        assert_eq!(terms.len(), MAX_TERMS);
        assert_eq!(terms[0].chars().count(), MAX_TERM_CHARS);
    }
}
