//! Recognising an FTS5 expression the [`TermIndex`](super::term_index::TermIndex) can rank, and
//! turning its terms into FTS5's tokens.
//!
//! The index answers exactly one shape: quoted strings joined by `OR` (`"parse" OR "command" OR
//! "default_factory"`), each string a phrase of one or more tokens once tokenized — what
//! turnstile's plugins send. Anything else (bare words, `AND`, `NEAR`, prefixes, column filters,
//! a string of no token) goes to FTS5 as before, so the index never has to understand FTS5's
//! grammar, only recognise this.
//!
//! A term's tokens are FTS5's own: a private in-memory FTS5 table with the corpus's tokenizer
//! tokenizes it (a few microseconds; the corpus index is not touched), and a bounded map keeps the
//! answers.

use std::collections::HashMap;
use std::sync::Mutex;

use rusqlite::{Connection, params};

/// The tokenizer of the corpus's `docs` table (`index.rs` creates it with this).
pub(crate) const TOKENIZER: &str = "porter unicode61 remove_diacritics 2";

/// Terms whose tokens are remembered; when full, the map is emptied and fills again (a bound on
/// memory, not an eviction policy: real question mixes repeat far fewer distinct terms).
const MAX_REMEMBERED_TERMS: usize = 65_536;
/// Longer terms are tokenized every time rather than remembered.
const MAX_REMEMBERED_TERM_BYTES: usize = 64;
/// A phrase of more tokens goes to FTS5 (the index compares a phrase token by token in every
/// document that has its rarest token; this bounds that work per document).
const MAX_PHRASE_TOKENS: u32 = 16;

/// The terms of `expression` when it is quoted strings joined by `OR` and nothing else (`""`
/// inside a string is a quote), or `None`.
pub(crate) fn terms(expression: &str) -> Option<Vec<String>> {
    let mut terms = Vec::new();
    let mut rest = expression.trim_start();
    loop {
        let mut chars = rest.strip_prefix('"')?.char_indices();
        let mut term = String::new();
        let end = loop {
            let (i, c) = chars.next()?;
            if c == '"' {
                if chars.as_str().starts_with('"') {
                    chars.next();
                    term.push('"');
                } else {
                    break i + 2;
                }
            } else {
                term.push(c);
            }
        };
        terms.push(term);
        rest = rest[end..].trim_start();
        if rest.is_empty() {
            return Some(terms);
        }
        rest = rest.strip_prefix("OR")?;
        // `OR` must be a word of its own: `ORx` is not the operator.
        if !rest.starts_with(char::is_whitespace) && !rest.starts_with('"') {
            return None;
        }
        rest = rest.trim_start();
    }
}

/// FTS5's tokenizer, for query terms: the tokens of each term (a phrase when there are several).
pub(crate) struct Tokenizer {
    inner: Mutex<Inner>,
}

struct Inner {
    conn: Connection,
    remembered: HashMap<String, Option<Vec<Box<str>>>>,
}

impl Tokenizer {
    /// An in-memory FTS5 table with the corpus's tokenizer.
    pub(crate) fn new() -> rusqlite::Result<Self> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{TOKENIZER}');
             CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');"
        ))?;
        Ok(Self {
            inner: Mutex::new(Inner {
                conn,
                remembered: HashMap::new(),
            }),
        })
    }

    /// The tokens of each term, in order, or `None` if a term has no token or more than
    /// `MAX_PHRASE_TOKENS` (or the tokenizer failed): the caller then asks FTS5 itself.
    pub(crate) fn tokens(&self, terms: &[String]) -> Option<Vec<Vec<Box<str>>>> {
        let mut inner = self.inner.lock().ok()?;
        let mut tokens = Vec::with_capacity(terms.len());
        for term in terms {
            let token = match inner.remembered.get(term) {
                Some(token) => token.clone(),
                None => {
                    let token = inner.tokenize(term).ok()?;
                    if term.len() <= MAX_REMEMBERED_TERM_BYTES {
                        if inner.remembered.len() >= MAX_REMEMBERED_TERMS {
                            inner.remembered.clear();
                        }
                        inner.remembered.insert(term.clone(), token.clone());
                    }
                    token
                }
            };
            tokens.push(token?);
        }
        Some(tokens)
    }
}

impl Inner {
    fn tokenize(&self, term: &str) -> rusqlite::Result<Option<Vec<Box<str>>>> {
        self.conn
            .prepare_cached("INSERT INTO t (rowid, x) VALUES (1, ?1)")?
            .execute(params![term])?;
        let tokens: rusqlite::Result<Vec<Box<str>>> = self
            .conn
            .prepare_cached("SELECT term FROM v ORDER BY offset LIMIT ?1")?
            .query_map([MAX_PHRASE_TOKENS + 1], |r| {
                r.get::<_, String>(0).map(String::into_boxed_str)
            })?
            .collect();
        self.conn
            .prepare_cached("DELETE FROM t WHERE rowid = 1")?
            .execute([])?;
        let tokens = tokens?;
        Ok((1..=MAX_PHRASE_TOKENS as usize)
            .contains(&tokens.len())
            .then_some(tokens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_quoted_terms_joined_by_or() {
        let t = |e: &str| terms(e);
        assert_eq!(t(r#""parse""#), Some(vec!["parse".into()]));
        assert_eq!(
            t(r#" "parse" OR "command"  OR"line" "#),
            Some(vec!["parse".into(), "command".into(), "line".into()])
        );
        assert_eq!(t(r#""say ""hi""""#), Some(vec![r#"say "hi""#.into()]));
        for other in [
            "",
            "parse",
            r#""a" AND "b""#,
            r#""a" "b""#,
            r#""a" OR b"#,
            r#""a" OR"#,
            r#""a" ORb"#,
            r#""a" OR ("b")"#,
            r#""a"*"#,
            r#"title:"a""#,
            r#""unterminated"#,
            r#""a" or "b""#,
        ] {
            assert_eq!(t(other), None, "{other}");
        }
    }

    #[test]
    fn tokens_are_fts5s() {
        let tokenizer = Tokenizer::new().unwrap();
        let terms = |ts: &[&str]| ts.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        let strs = |got: Vec<Vec<Box<str>>>| -> Vec<Vec<String>> {
            got.iter()
                .map(|p| p.iter().map(|t| t.to_string()).collect())
                .collect()
        };
        let got = tokenizer
            .tokens(&terms(&["Parsing", "arguments", "café", "asyncio"]))
            .unwrap();
        assert_eq!(
            strs(got),
            [["pars"], ["argument"], ["cafe"], ["asyncio"]].map(|p| p.map(String::from).to_vec())
        );
        // Remembered: the same answer again.
        assert_eq!(
            strs(tokenizer.tokens(&terms(&["Parsing"])).unwrap()),
            [["pars"]]
        );
        // A phrase: its tokens in order (not FTS5's vocabulary order), a repeated one twice.
        assert_eq!(
            strs(
                tokenizer
                    .tokens(&terms(&["round_half_up", "b a b"]))
                    .unwrap()
            ),
            [vec!["round", "half", "up"], vec!["b", "a", "b"]]
        );
        // No token at all, or too many: not for the index.
        assert!(tokenizer.tokens(&terms(&["…"])).is_none());
        assert!(tokenizer.tokens(&terms(&["ok", "-"])).is_none());
        let long = vec!["w"; MAX_PHRASE_TOKENS as usize + 1].join(" ");
        assert!(tokenizer.tokens(&terms(&[long.as_str()])).is_none());
        let longest = vec!["w"; MAX_PHRASE_TOKENS as usize].join(" ");
        assert!(tokenizer.tokens(&terms(&[longest.as_str()])).is_some());
    }
}
