//! An untrusted question, made safe for the corpus: its terms (stop words dropped, bounded), an
//! FTS5 expression in which every term is a quoted string, and how well a document id names
//! the terms.

/// Questions longer than this many terms are cut: a longer OR-expression only adds noise and cost.
pub const MAX_TERMS: usize = 32;
/// Terms longer than this many characters are cut (a run of 500 letters with no separator, as
/// in Japanese text, is one "word"). With `MAX_TERMS` this bounds the expression the plugin
/// builds to 32 × (48 × 4 + 2) + 31 × 4 = 6,332 bytes, within the host's 8 KiB and 64 terms.
pub const MAX_TERM_CHARS: usize = 48;

// English function words that carry no retrieval signal in a question. In a file of its own so
// that `corpus/benches/fts5_ceiling.rs` builds exactly the plugin's expressions (`include!`).
include!("stop_words.rs");

/// Lowercased alphanumeric terms of `question`, stop words dropped (unless nothing else is left),
/// deduplicated in order of appearance.
pub fn terms(question: &str) -> Vec<String> {
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
pub fn id_match(id: &str, terms: &[String]) -> f64 {
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
pub fn fts_expression(terms: &[String]) -> Option<String> {
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
