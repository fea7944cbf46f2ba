use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, params};

use super::disjunction;
use super::ivf;
use super::limits::SessionLimits;
use super::metadata::Link;
use super::reader::Reader;
use super::shared::PoolInner;
use super::term_index::Phrase;
use super::vectors::{self, Near};
use super::{CorpusError, Document};

/// One search hit.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Document id.
    pub id: String,
    /// Document title (at most [`SessionLimits::MAX_TITLE_BYTES`]).
    pub title: String,
    /// Extract around the match (at most [`SessionLimits::MAX_SNIPPET_BYTES`]).
    pub snippet: String,
    /// bm25 rank: lower is better.
    pub rank: f64,
}

/// One ranked hit without its snippet.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// The document's handle (its rowid in the index), for [`CorpusSession::snippet`].
    pub doc: u64,
    /// Document id.
    pub id: String,
    /// Document title (at most [`SessionLimits::MAX_TITLE_BYTES`]).
    pub title: String,
    /// bm25 rank: lower is better.
    pub rank: f64,
}

/// One document near a vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbour {
    /// The document's handle (its rowid in the index), for [`CorpusSession::snippet`].
    pub doc: u64,
    /// Document id.
    pub id: String,
    /// Document title (at most [`SessionLimits::MAX_TITLE_BYTES`]).
    pub title: String,
    /// Cosine similarity of the document's vector and the query vector, in -1..=1: higher is
    /// nearer.
    pub similarity: f64,
}

/// A worker's own read-only handle to the corpus. Dropping it closes it (the connection goes
/// back to the pool); it can never outlive the plugin call that opened it, because the call's
/// store owns it.
pub struct CorpusSession {
    conn: Option<Reader>,
    pool: Arc<PoolInner>,
}

/// Looking a document up by id goes through the `ids` table (an index), never a scan of `docs`.
const GET_SQL: &str = "SELECT d.id, d.kind, d.title, d.text, l.url, l.fields \
     FROM ids JOIN docs AS d ON d.rowid = ids.doc LEFT JOIN links AS l ON l.doc = ids.doc \
     WHERE ids.id = ?1";

/// The statements a session runs, for benchmarks that compare a session with a plain connection.
pub mod sql {
    pub use super::{RANK_SQL, SNIPPET_SQL};
}

const SEARCH_SQL: &str = "SELECT id, title, snippet(docs, 3, '[', ']', '…', 24), \
     bm25(docs, 0.0, 0.0, 4.0, 1.0) AS rank \
     FROM docs WHERE docs MATCH ?1 ORDER BY rank LIMIT ?2";

/// `SEARCH_SQL` without the snippet: a snippet re-reads and re-tokenizes its document (~90 µs
/// for this corpus), so a wide candidate pool is much cheaper without them.
pub const RANK_SQL: &str = "SELECT rowid, id, title, bm25(docs, 0.0, 0.0, 4.0, 1.0) AS rank \
     FROM docs WHERE docs MATCH ?1 ORDER BY rank LIMIT ?2";

/// The snippet of one document for an expression (FTS5 seeks to the rowid within the match).
pub const SNIPPET_SQL: &str = "SELECT snippet(docs, 3, '[', ']', '…', 24) \
     FROM docs WHERE docs MATCH ?1 AND rowid = ?2";

impl CorpusSession {
    pub(super) fn new(conn: Reader, pool: Arc<PoolInner>) -> Self {
        Self {
            conn: Some(conn),
            pool,
        }
    }

    fn reader(&self) -> &Reader {
        // Only `Drop` takes the connection out, so it is always here while `self` is usable.
        self.conn
            .as_ref()
            .unwrap_or_else(|| unreachable!("session used after close"))
    }

    /// Document `doc`'s `text` column, for the term index's snippets (`None` if it cannot be
    /// read: FTS5 then makes the snippet, or says why it cannot).
    fn text(&self, doc: u64) -> Option<String> {
        let rowid = i64::try_from(doc).ok()?;
        self.budgeted(|c| {
            c.prepare_cached("SELECT text FROM docs WHERE rowid = ?1")?
                .query_row([rowid], |r| r.get(0))
        })
        .ok()
    }

    /// Runs one query within [`SessionLimits::CALL_TIME_BUDGET`].
    fn budgeted<T>(
        &self,
        query: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, CorpusError> {
        self.reader().budgeted(query)
    }

    /// bm25-ranked full-text search, best first. `limit` is clamped to 1..=50.
    ///
    /// Like [`Self::rank`], an expression of quoted terms joined by `OR` is answered by the
    /// term index (FTS5's ranks and snippets, computed in memory); any other goes to FTS5.
    pub fn search(&self, expression: &str, limit: u32) -> Result<Vec<Candidate>, CorpusError> {
        check_expression(expression)?;
        let limit = limit.clamp(1, SessionLimits::MAX_CANDIDATES);
        let found = self
            .phrases(expression)
            .and_then(|phrases| self.search_by_index(expression, &phrases, limit as usize));
        self.pool.searched.count(found.is_some());
        match found {
            Some(found) => found,
            None => self.search_by_fts5(expression, limit),
        }
    }

    /// [`Self::search`] through the term index: its ranking, and its snippets but for a document
    /// whose text only FTS5 can snippet.
    fn search_by_index(
        &self,
        expression: &str,
        phrases: &[Phrase],
        limit: usize,
    ) -> Option<Result<Vec<Candidate>, CorpusError>> {
        let ranked = self.rank_by_index(phrases, limit)?;
        let mut found = Vec::with_capacity(ranked.len());
        for Ranked {
            doc,
            id,
            title,
            rank,
        } in ranked
        {
            // Every ranked document matches, so it has a snippet.
            let snippet = match self
                .pool
                .corpus
                .terms
                .snippet(phrases, doc, |d| self.text(d))
            {
                Some(snippet) => snippet,
                None => match self.snippet_by_fts5(expression, doc) {
                    Ok(snippet) => snippet,
                    Err(e) => return Some(Err(e)),
                },
            };
            found.push(Candidate {
                id,
                title,
                snippet: truncate(
                    snippet.unwrap_or_default(),
                    SessionLimits::MAX_SNIPPET_BYTES,
                ),
                rank,
            });
        }
        Some(Ok(found))
    }

    /// [`Self::search`] through FTS5 (`SEARCH_SQL`).
    pub fn search_by_fts5(
        &self,
        expression: &str,
        limit: u32,
    ) -> Result<Vec<Candidate>, CorpusError> {
        check_expression(expression)?;
        let limit = limit.clamp(1, SessionLimits::MAX_CANDIDATES);
        self.budgeted(|conn| {
            let mut stmt = conn.prepare_cached(SEARCH_SQL)?;
            let rows = stmt.query_map(params![expression, limit], |r| {
                Ok(Candidate {
                    id: r.get(0)?,
                    title: truncate(r.get(1)?, SessionLimits::MAX_TITLE_BYTES),
                    snippet: truncate(r.get(2)?, SessionLimits::MAX_SNIPPET_BYTES),
                    rank: r.get(3)?,
                })
            })?;
            rows.collect()
        })
    }

    /// The `limit` documents (clamped to 1..=50) whose vectors are most similar to `vector`,
    /// best first (ties by handle). `vector` must have the corpus's dimensions and finite values;
    /// the zero vector is near nothing.
    pub fn nearest(&self, vector: &[f32], limit: u32) -> Result<Vec<Neighbour>, CorpusError> {
        let dims = self.pool.corpus.vectors.dims();
        if vector.len() != dims {
            return Err(CorpusError::InvalidArgument(format!(
                "the vector has {} dimensions; this corpus's have {dims}",
                vector.len()
            )));
        }
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(CorpusError::InvalidArgument(
                "the vector has a value that is not finite".into(),
            ));
        }
        let limit = limit.clamp(1, SessionLimits::MAX_CANDIDATES) as usize;
        Ok(self
            .near(vector, limit, ivf::PROBES, vectors::rescored(limit))?
            .into_iter()
            .map(|n| Neighbour {
                doc: n.doc,
                id: n.id.to_owned(),
                title: truncate(n.title.to_owned(), SessionLimits::MAX_TITLE_BYTES),
                similarity: f64::from(n.similarity),
            })
            .collect())
    }

    /// [`Self::nearest`] as (rowid, similarity), searching `probes` lists of a large corpus's
    /// inverted file and scoring `wanted` candidates exactly: for measuring recall
    /// (`corpus/benches/ann_recall.rs`), not for plugins.
    #[doc(hidden)]
    pub fn nearest_probing(
        &self,
        vector: &[f32],
        k: usize,
        probes: usize,
        wanted: usize,
    ) -> Result<Vec<(u64, f32)>, CorpusError> {
        Ok(self
            .near(vector, k, probes, wanted)?
            .into_iter()
            .map(|n| (n.doc, n.similarity))
            .collect())
    }

    /// The loaded vectors' `nearest_probing` (a large corpus's candidates read from its flat
    /// vectors, not through SQL).
    fn near(
        &self,
        vector: &[f32],
        k: usize,
        probes: usize,
        wanted: usize,
    ) -> Result<Vec<Near<'_>>, CorpusError> {
        self.pool
            .corpus
            .vectors
            .nearest_probing(vector, k, probes, wanted)
            .map_err(|source| CorpusError::IndexIo {
                path: crate::flat::path_beside(&self.pool.path),
                source,
            })
    }

    /// Like [`Self::search`] without snippets. `limit` is clamped to 1..=50.
    ///
    /// An expression of quoted terms joined by `OR` (what turnstile's plugins send; a term of
    /// several tokens is a phrase) is ranked by the corpus's term index, in memory, with FTS5's
    /// own bm25 (same documents, same order, same ranks); any other goes to FTS5.
    pub fn rank(&self, expression: &str, limit: u32) -> Result<Vec<Ranked>, CorpusError> {
        check_expression(expression)?;
        let limit = limit.clamp(1, SessionLimits::MAX_CANDIDATES);
        let ranked = self
            .phrases(expression)
            .and_then(|phrases| self.rank_by_index(&phrases, limit as usize));
        self.pool.ranked.count(ranked.is_some());
        match ranked {
            Some(ranked) => Ok(ranked),
            None => self.rank_by_fts5(expression, limit),
        }
    }

    /// The expression's terms as the term index numbers its tokens, or `None` when the expression
    /// is not for the index (see [`disjunction`]).
    fn phrases(&self, expression: &str) -> Option<Vec<Phrase>> {
        let terms = disjunction::terms(expression)?;
        let tokens = self.pool.corpus.tokenizer.tokens(&terms)?;
        Some(self.pool.corpus.terms.phrases(&tokens))
    }

    /// [`Self::rank`] through the term index.
    fn rank_by_index(&self, phrases: &[Phrase], limit: usize) -> Option<Vec<Ranked>> {
        self.pool
            .corpus
            .terms
            .rank(phrases, limit)?
            .into_iter()
            .map(|(position, rank)| {
                let (doc, id, title) = self.pool.corpus.vectors.document(position as usize)?;
                Some(Ranked {
                    doc,
                    id: id.to_owned(),
                    title: truncate(title.to_owned(), SessionLimits::MAX_TITLE_BYTES),
                    rank,
                })
            })
            .collect()
    }

    /// [`Self::rank`] through FTS5 (`RANK_SQL`).
    pub fn rank_by_fts5(&self, expression: &str, limit: u32) -> Result<Vec<Ranked>, CorpusError> {
        check_expression(expression)?;
        let limit = limit.clamp(1, SessionLimits::MAX_CANDIDATES);
        self.budgeted(|conn| {
            let mut stmt = conn.prepare_cached(RANK_SQL)?;
            let rows = stmt.query_map(params![expression, limit], |r| {
                Ok(Ranked {
                    // Rowids of this index are positive.
                    doc: r.get::<_, i64>(0)?.unsigned_abs(),
                    id: r.get(1)?,
                    title: truncate(r.get(2)?, SessionLimits::MAX_TITLE_BYTES),
                    rank: r.get(3)?,
                })
            })?;
            rows.collect()
        })
    }

    /// The snippet [`Self::search`] would give document `doc` for `expression`, or `None` when
    /// that document does not match it (or does not exist).
    ///
    /// Like [`Self::rank`], an expression of quoted terms joined by `OR` gets its
    /// snippet from the term index (FTS5's algorithm on the document's tokens: the same bytes)
    /// for every document whose text it holds; any other goes to FTS5.
    pub fn snippet(&self, expression: &str, doc: u64) -> Result<Option<String>, CorpusError> {
        check_expression(expression)?;
        let snippet = self.phrases(expression).and_then(|phrases| {
            self.pool
                .corpus
                .terms
                .snippet(&phrases, doc, |d| self.text(d))
        });
        self.pool.snippets.count(snippet.is_some());
        match snippet {
            Some(snippet) => Ok(snippet.map(|s| truncate(s, SessionLimits::MAX_SNIPPET_BYTES))),
            None => self.snippet_by_fts5(expression, doc),
        }
    }

    /// [`Self::snippet`] through FTS5 (`SNIPPET_SQL`).
    pub fn snippet_by_fts5(
        &self,
        expression: &str,
        doc: u64,
    ) -> Result<Option<String>, CorpusError> {
        check_expression(expression)?;
        // Rowids are positive i64; anything larger names no document.
        let Ok(rowid) = i64::try_from(doc) else {
            return Ok(None);
        };
        self.budgeted(|conn| {
            conn.prepare_cached(SNIPPET_SQL)?
                .query_row(params![expression, rowid], |r| r.get::<_, String>(0))
                .optional()
                .map(|s| s.map(|s| truncate(s, SessionLimits::MAX_SNIPPET_BYTES)))
        })
    }

    /// The document with this id, if any.
    pub fn get(&self, id: &str) -> Result<Option<Document>, CorpusError> {
        if id.len() > SessionLimits::MAX_ID_BYTES {
            return Err(CorpusError::InvalidArgument(format!(
                "id must be at most {} bytes",
                SessionLimits::MAX_ID_BYTES
            )));
        }
        self.budgeted(|conn| {
            conn.prepare_cached(GET_SQL)?
                .query_row([id], |r| {
                    let link = Link::stored(r.get(4)?, r.get(5)?);
                    Ok(Document {
                        id: r.get(0)?,
                        kind: r.get(1)?,
                        title: r.get(2)?,
                        text: r.get(3)?,
                        url: link.url,
                        fields: link.fields,
                    })
                })
                .optional()
        })
    }

    /// Documents in the corpus (recorded when the index was built).
    pub fn count(&self) -> u64 {
        self.pool.documents()
    }
}

impl Drop for CorpusSession {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.give_back(conn);
        }
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary.
fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// An expression must be 1..=`MAX_EXPRESSION_BYTES` bytes, not blank, and have at most
/// `MAX_EXPRESSION_TERMS` terms.
fn check_expression(expression: &str) -> Result<(), CorpusError> {
    if expression.trim().is_empty() || expression.len() > SessionLimits::MAX_EXPRESSION_BYTES {
        return Err(CorpusError::InvalidArgument(format!(
            "expression must be 1..={} bytes and not blank",
            SessionLimits::MAX_EXPRESSION_BYTES
        )));
    }
    let terms = count_terms(expression);
    if terms > SessionLimits::MAX_EXPRESSION_TERMS {
        return Err(CorpusError::InvalidArgument(format!(
            "expression has {terms} terms; at most {} are allowed",
            SessionLimits::MAX_EXPRESSION_TERMS
        )));
    }
    Ok(())
}

/// Terms of an FTS5 expression as its grammar sees them: each quoted string (`""` escapes a
/// quote) and each bare word counts once; the operators `AND`, `OR`, `NOT`, `NEAR` and the
/// punctuation `( ) : ^ * , +` do not. A malformed expression is counted all the same (FTS5
/// refuses it afterwards).
fn count_terms(expression: &str) -> usize {
    let mut terms = 0;
    let mut chars = expression.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            terms += 1;
            while let Some(c) = chars.next() {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                    } else {
                        break;
                    }
                }
            }
        } else if c.is_whitespace() || "():^*,+{}-".contains(c) {
            continue;
        } else {
            let mut word = String::from(c);
            while let Some(&next) = chars.peek() {
                if next.is_whitespace() || "\"():^*,+{}-".contains(next) {
                    break;
                }
                word.push(next);
                chars.next();
            }
            if !matches!(word.as_str(), "AND" | "OR" | "NOT" | "NEAR") {
                terms += 1;
            }
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CorpusBytes, CorpusIndex, CorpusPool};

    /// A pool over a two-document corpus in its own temporary directory (tests run in
    /// parallel; none may share or delete another's directory).
    fn pool() -> (CorpusPool, tempfile::TempDir) {
        crate::testing::pool_of(
            br#"{"id":"argparse","kind":"module","title":"argparse - Command-line parsing library","text":"Command-line parsing library: handles optional and positional arguments."}
{"id":"json.dumps","kind":"function","title":"json.dumps - Serialize obj to a JSON formatted str.","text":"Serialize obj to a JSON formatted str."}"#,
            2,
        )
    }

    #[test]
    fn search_ranks_and_snippets() {
        let (pool, dir) = pool();
        let s = pool.session().unwrap();
        let hits = s.search("\"parsing\" OR \"arguments\"", 5).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, "argparse");
        assert!(hits[0].rank < 0.0);
        assert!(hits[0].snippet.contains("[parsing]"), "{}", hits[0].snippet);
        assert_eq!(s.count(), 2);
        assert_eq!(s.get("json.dumps").unwrap().unwrap().kind, "function");
        assert_eq!(s.get("nope").unwrap(), None);
        drop(s);
        dir.close().unwrap();
    }

    /// `rank` + `snippet` give what `search` gives, in two steps.
    #[test]
    fn nearest_finds_documents_by_meaning_and_refuses_bad_vectors() {
        let (pool, _dir) = pool();
        let session = pool.session().unwrap();
        let question = pool.embed("turn a dict into a string").unwrap();
        assert_eq!(question.len(), pool.dims());
        let near = session.nearest(&question, 10).unwrap();
        assert_eq!(near.len(), 2);
        assert_eq!(near[0].id, "json.dumps");
        assert!(near[0].similarity > near[1].similarity);
        assert!(near[0].similarity <= 1.0 + 1e-6);
        // Its handle is the one `rank` gives, so `snippet` works on it.
        let ranked = session.rank("\"json\"", 5).unwrap();
        assert_eq!(ranked[0].doc, near[0].doc);
        assert_eq!(session.nearest(&question, 1).unwrap().len(), 1);
        // The zero vector is near nothing.
        assert!(
            session
                .nearest(&vec![0.0; pool.dims()], 5)
                .unwrap()
                .is_empty()
        );
        for bad in [
            vec![0.5; pool.dims() - 1],
            vec![f32::NAN; pool.dims()],
            Vec::new(),
        ] {
            assert!(matches!(
                session.nearest(&bad, 5),
                Err(CorpusError::InvalidArgument(_))
            ));
        }
    }

    #[test]
    fn rank_then_snippet_matches_search() {
        let (pool, dir) = pool();
        let s = pool.session().unwrap();
        let expression = "\"serialize\" OR \"parsing\"";
        let hits = s.search(expression, 5).unwrap();
        let ranked = s.rank(expression, 5).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(ranked.len(), hits.len());
        for (hit, r) in hits.iter().zip(&ranked) {
            assert_eq!((&r.id, &r.title, r.rank), (&hit.id, &hit.title, hit.rank));
            assert_eq!(
                s.snippet(expression, r.doc).unwrap(),
                Some(hit.snippet.clone())
            );
        }
        // A document that does not match, and one that does not exist: no snippet.
        let argparse = ranked.iter().find(|r| r.id == "argparse").unwrap();
        assert_eq!(s.snippet("\"serialize\"", argparse.doc).unwrap(), None);
        assert_eq!(s.snippet(expression, 999_999).unwrap(), None);
        assert_eq!(s.snippet(expression, u64::MAX).unwrap(), None);
        assert!(matches!(
            s.snippet("AND AND", argparse.doc),
            Err(CorpusError::BadExpression(_))
        ));
        assert!(matches!(
            s.rank(" ", 5),
            Err(CorpusError::InvalidArgument(_))
        ));
        drop(s);
        dir.close().unwrap();
    }

    #[test]
    fn bad_expressions_are_typed_errors() {
        let (pool, dir) = pool();
        let s = pool.session().unwrap();
        for expr in ["(", "\"unterminated", "nosuchcol: x", "AND", "NEAR(", "^"] {
            match s.search(expr, 5) {
                Err(CorpusError::BadExpression(_)) => {}
                other => panic!("{expr:?} gave {other:?}"),
            }
        }
        assert!(matches!(
            s.search(" ", 5),
            Err(CorpusError::InvalidArgument(_))
        ));
        assert!(matches!(
            s.search(&"a".repeat(SessionLimits::MAX_EXPRESSION_BYTES + 1), 5),
            Err(CorpusError::InvalidArgument(_))
        ));
        // Bounded by terms, not only bytes: 65 short terms are refused, 64 are not.
        let terms = |n: usize| vec!["\"a\""; n].join(" OR ");
        assert!(matches!(
            s.search(&terms(65), 5),
            Err(CorpusError::InvalidArgument(m)) if m.contains("65 terms")
        ));
        assert!(s.search(&terms(64), 5).is_ok());
        // The session still works after errors.
        assert_eq!(s.search("json", 5).unwrap().len(), 1);
        drop(s);
        dir.close().unwrap();
    }

    #[test]
    fn terms_are_counted_as_fts5_sees_them() {
        assert_eq!(count_terms("\"parse\" OR \"command\""), 2);
        assert_eq!(count_terms("a* AND b NOT c"), 3);
        assert_eq!(count_terms("NEAR(a b c, 5)"), 4);
        assert_eq!(count_terms("title:json ^x"), 3);
        assert_eq!(count_terms("\"he said \"\"hi\"\"\" x"), 2);
        assert_eq!(count_terms("\"unterminated"), 1);
    }

    /// A costly expression (many prefix terms, each matching most documents) is stopped by the
    /// time budget with a typed error, and the connection serves the next query as before.
    #[test]
    fn a_query_past_its_time_budget_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        // 2,000 documents of 60 distinct words, every one starting with "a": each `a*` term
        // expands to 120,000 terms.
        let jsonl: String = (0..2000)
            .map(|d| {
                let text: Vec<String> = (0..60).map(|w| format!("a{d}x{w}")).collect();
                format!(
                    r#"{{"id":"d{d}","kind":"module","title":"d{d}","text":"{}"}}"#,
                    text.join(" ")
                ) + "\n"
            })
            .collect();
        let corpus = CorpusBytes {
            name: "t".into(),
            jsonl: jsonl.into_bytes(),
        };
        let index = CorpusIndex::open_or_build(&corpus, dir.path()).unwrap();
        let pool = CorpusPool::new(&index, 1).unwrap();
        let s = pool.session().unwrap();
        let costly = vec!["a*"; 64].join(" ");
        match s.search(&costly, 50) {
            Err(CorpusError::TimedOut { budget }) => {
                assert_eq!(budget, SessionLimits::CALL_TIME_BUDGET)
            }
            other => panic!("a costly expression gave {other:?}"),
        }
        assert_eq!(s.search("\"d1\"", 5).unwrap().len(), 1);
        drop(s);
        dir.close().unwrap();
    }

    /// The shipped corpus's pool (its index built in a temporary directory) and the dev set's
    /// questions.
    fn shipped_pool_and_questions() -> (CorpusPool, tempfile::TempDir, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let index =
            CorpusIndex::open_or_build(&crate::read_corpus(None).unwrap(), dir.path()).unwrap();
        let pool = CorpusPool::new(&index, 1).unwrap();
        (pool, dir, dev_questions())
    }

    /// The dev set's questions.
    fn dev_questions() -> Vec<String> {
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/eval/dev_questions.jsonl"
        ))
        .unwrap()
        .lines()
        .map(|line| {
            let q: serde_json::Value = serde_json::from_str(line).unwrap();
            q["q"].as_str().unwrap().to_owned()
        })
        .collect()
    }

    /// The snippet of every document whose text is not ASCII (curly quotes, ellipses, dashes,
    /// box drawing, `ß`, `ö`: 114 of 6,090) is the term index's and FTS5's, byte for byte, for
    /// an expression of its own words (the first ones and every one that is not ASCII).
    #[test]
    fn texts_beyond_ascii_are_snippeted_as_fts5_does() {
        let (pool, dir, _) = shipped_pool_and_questions();
        let session = pool.session().unwrap();
        let docs = crate::load_documents(&crate::read_corpus(None).unwrap().jsonl).unwrap();
        let mut checked = 0;
        for (at, doc) in docs.iter().enumerate() {
            if doc.text.is_ascii() {
                continue;
            }
            let words: Vec<&str> = doc
                .text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            let chosen: Vec<&str> = words
                .iter()
                .take(3)
                .chain(words.iter().filter(|w| !w.is_ascii()))
                .chain(words.iter().rev().take(2))
                .copied()
                .collect();
            let expression = chosen
                .iter()
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(" OR ");
            let rowid = at as u64 + 1;
            let by_fts5 = session.snippet_by_fts5(&expression, rowid).unwrap();
            assert!(by_fts5.is_some(), "{} does not match {expression}", doc.id);
            assert_eq!(
                session.snippet(&expression, rowid).unwrap(),
                by_fts5,
                "{}: {expression}",
                doc.id
            );
            checked += 1;
        }
        assert_eq!(checked, 114);
        assert_eq!(pool.snippet_paths().1, 0, "every snippet by the index");
        drop(session);
        drop(pool);
        dir.close().unwrap();
    }

    /// `nearest` (the integer scan and its bounds) gives what scoring every document exactly
    /// gives — same documents, order and bit-equal similarities — for every dev question.
    #[test]
    fn nearest_answers_as_the_exhaustive_search_on_the_shipped_corpus() {
        let (pool, dir, questions) = shipped_pool_and_questions();
        let session = pool.session().unwrap();
        let vectors = &session.pool.corpus.vectors;
        let mut checked = 0;
        for q in &questions {
            let vector = pool.embed(q).unwrap();
            for k in [5, 50] {
                let fast: Vec<(u64, u32)> = vectors
                    .nearest(&vector, k)
                    .unwrap()
                    .iter()
                    .map(|n| (n.doc, n.similarity.to_bits()))
                    .collect();
                let slow: Vec<(u64, u32)> = vectors
                    .nearest_exhaustive(&vector, k)
                    .into_iter()
                    .map(|(doc, s)| (doc, s.to_bits()))
                    .collect();
                assert_eq!(fast, slow, "{q}, k {k}");
                checked += 1;
            }
        }
        assert_eq!(checked, 300);
        drop(session);
        drop(pool);
        dir.close().unwrap();
    }

    /// The term index ranks exactly as FTS5 does — the same documents in the same order with
    /// the same `f64` ranks — for every dev-set question's terms (stop words kept: they match most
    /// of the corpus, with ties and floored idfs) at limits 50 and 5, for the same questions cut
    /// at white space only (phrases: `round_half_up`, `os.path.join`, `don't`), and for stems
    /// that repeat, words absent from the corpus, repeated tokens in a phrase and phrases that
    /// would cross from a title into its text; its snippets and searches are FTS5's, byte for
    /// byte. Both of the index's paths are held to FTS5: the one this corpus takes (every posting
    /// added) and MaxScore, which corpora past 131,072 passages take, forced here.
    #[test]
    fn the_term_index_ranks_as_fts5_does() {
        let (pool, dir, questions) = shipped_pool_and_questions();
        let session = pool.session().unwrap();
        let expression = |words: &mut dyn Iterator<Item = &str>| -> String {
            words
                .filter(|w| w.chars().any(char::is_alphanumeric))
                .take(SessionLimits::MAX_EXPRESSION_TERMS)
                .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
                .collect::<Vec<_>>()
                .join(" OR ")
        };
        let mut expressions: Vec<String> = Vec::new();
        for q in &questions {
            expressions.push(expression(&mut q.split(|c: char| !c.is_alphanumeric())));
            let phrases = expression(&mut q.split_whitespace());
            if phrases != *expressions.last().unwrap() {
                expressions.push(phrases);
            }
        }
        expressions.extend(
            [
                r#""parse" OR "parsing" OR "parsed""#,
                r#""zzqx" OR "json""#,
                r#""zzqx""#,
                r#""the" OR "a" OR "of""#,
                r#""path_join" OR "os""#,
                r#""round_half_up" OR "zzqx_round""#,
                r#""the the" OR "a a a" OR "the""#,
                r#""default_factory" OR "default" OR "default_factory""#,
            ]
            .map(String::from),
        );
        // A title's last word and its text's first: a phrase no column has, unless by chance.
        for doc in session.rank(r#""parse" OR "json""#, 20).unwrap() {
            let d = session.get(&doc.id).unwrap().unwrap();
            let last = d
                .title
                .split(|c: char| !c.is_alphanumeric())
                .rfind(|w| !w.is_empty());
            let first = d
                .text
                .split(|c: char| !c.is_alphanumeric())
                .find(|w| !w.is_empty());
            if let (Some(last), Some(first)) = (last, first) {
                expressions.push(format!(r#""{last} {first}""#));
            }
        }
        let (mut by_index, mut by_fts5) = (0, 0);
        for expression in &expressions {
            for limit in [50, 5] {
                let fts5 = session.rank_by_fts5(expression, limit).unwrap();
                let (index_before, fts5_before) = pool.rank_paths();
                let ours = session.rank(expression, limit).unwrap();
                let (index_after, fts5_after) = pool.rank_paths();
                by_index += index_after - index_before;
                by_fts5 += fts5_after - fts5_before;
                assert_eq!(ours, fts5, "{expression} (limit {limit})");
                // The path of corpora past 131,072 passages (MaxScore), forced on this one.
                crate::term_index::FORCE_MAX_SCORE.set(true);
                let max_score = session.rank(expression, limit);
                crate::term_index::FORCE_MAX_SCORE.set(false);
                let (index_forced, fts5_forced) = pool.rank_paths();
                by_index += index_forced - index_after;
                by_fts5 += fts5_forced - fts5_after;
                assert_eq!(
                    max_score.unwrap(),
                    fts5,
                    "MaxScore: {expression} (limit {limit})"
                );
            }
            // Snippets: of every document ranked, of documents that do not match, of none.
            let ranked = session.rank(expression, 50).unwrap();
            let docs = ranked
                .iter()
                .map(|r| r.doc)
                .chain([1, 2, 3, 4_000, 99_999, u64::MAX]);
            for doc in docs {
                assert_eq!(
                    session.snippet(expression, doc).unwrap(),
                    session.snippet_by_fts5(expression, doc).unwrap(),
                    "{expression}, document {doc}"
                );
            }
            assert_eq!(
                session.search(expression, 10).unwrap(),
                session.search_by_fts5(expression, 10).unwrap(),
                "{expression}"
            );
        }
        let (snippets_by_index, snippets_by_fts5) = pool.snippet_paths();
        // Every document's snippet is the index's, texts that are not ASCII included.
        assert_eq!(snippets_by_fts5, 0, "{snippets_by_index} by the index");
        // Every expression was the index's, phrases included.
        assert_eq!(by_fts5, 0);
        assert_eq!(by_index, 4 * expressions.len() as u64);
        let (searched_by_index, searched_by_fts5) = pool.search_paths();
        assert_eq!(
            (searched_by_index, searched_by_fts5),
            (expressions.len() as u64, 0)
        );
        drop(session);
        drop(pool);
        dir.close().unwrap();
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate("aé".into(), 2), "a");
        assert_eq!(truncate("abc".into(), 5), "abc");
    }
}
