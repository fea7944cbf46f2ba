//! The corpus's own inverted index, for ranking a disjunction of terms without SQL.
//!
//! FTS5 ranks an `"a" OR "b" OR …` query by computing `bm25()` for every document that matches
//! any term, one row at a time through its auxiliary-function API (instances, column sizes): about
//! 1.5 µs per matching document, so a question whose terms match 1,000 documents costs 1.5 ms, and
//! the cost grows with the corpus. This index holds the same postings in memory — for every token,
//! the documents it occurs in with its count in the `title` and `text` columns — and each
//! document's size, all read from FTS5 itself when the index file is built (`fts5vocab`), so the
//! tokens are FTS5's by construction. [`TermIndex::rank`] computes the very `bm25()` FTS5 computes
//! (same formula, same operations in the same order, so the same `f64`s) for the matching
//! documents, term at a time into a reused accumulator, and keeps the best. A phrase of several
//! tokens (`"round_half_up"`: `round half up`) gets its postings when asked: the documents that
//! have its rarest token and all the others, where its tokens follow one another in one column
//! (counted in each document's `title` and `text` tokens, which the index keeps in order).
//!
//! It also makes FTS5's `snippet()` of the `text` column without FTS5 ([`TermIndex::snippet`]):
//! asked for one document, FTS5 re-parses the expression and seeks every term's doclist to it
//! (~90 µs), when the snippet itself needs only the document's tokens and which of them are the
//! query's. The index keeps each document's text and its tokens (their ids, from FTS5) and
//! follows FTS5's snippet algorithm step by step (`fts5SnippetFunction`, `fts5HighlightCb`).
//! Token byte offsets are found by scanning the text as unicode61 does: runs of letters and
//! digits (ASCII ones exactly; beyond ASCII `char::is_alphanumeric`, close to unicode61's
//! categories L*, N* and Co), which may go on with one of the combining diacritics unicode61
//! folds away. A document with a NUL, or whose count of runs differs from FTS5's count of tokens,
//! is left to FTS5.
//!
//! Memory: 12 bytes per posting, 4 per token of title and text, the texts, about 64 per document
//! and the terms' text (`TermIndex::heap_bytes`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Mutex;

use rusqlite::{Connection, Transaction, params};

/// bm25's `k1` and `b`, as FTS5's `bm25()` fixes them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The weights of the `title` and `text` columns in the session's `bm25(docs, 0.0, 0.0, 4.0,
/// 1.0)` (`id` and `kind` are `UNINDEXED`: no token of theirs is in the index).
const TITLE_WEIGHT: f64 = 4.0;
const TEXT_WEIGHT: f64 = 1.0;

/// The session's `snippet(docs, 3, '[', ']', '…', 24)`: marks around matches, the ellipsis, and
/// the most tokens shown.
const SNIPPET_OPEN: &str = "[";
const SNIPPET_CLOSE: &str = "]";
const SNIPPET_ELLIPSIS: &str = "…";
const SNIPPET_TOKENS: usize = 24;

/// Idle accumulators kept for reuse (one is in use per concurrent `rank`; more are made on demand
/// and dropped when returned beyond this many).
const MAX_IDLE_SCRATCH: usize = 8;

/// Reads every token instance of the `docs` table through an `fts5vocab` table and stores, per
/// token (numbered in FTS5's order), its postings (document position in rowid order, count in
/// `title`, count in `text`: three little-endian u32 each); per document, its size in tokens
/// (little-endian u32) and its `title` and `text` columns' tokens in order (their numbers,
/// little-endian u32).
pub(super) fn build(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'docs', 'instance');
         CREATE TABLE postings (id INTEGER PRIMARY KEY, term TEXT NOT NULL, p BLOB NOT NULL);
         CREATE TABLE doc_sizes (s BLOB NOT NULL);
         CREATE TABLE doc_terms (doc INTEGER PRIMARY KEY, ti BLOB NOT NULL, t BLOB NOT NULL);",
    )?;
    let rowids: Vec<i64> = tx
        .prepare("SELECT rowid FROM docs ORDER BY rowid")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let position = |rowid: i64| -> rusqlite::Result<u32> {
        rowids
            .binary_search(&rowid)
            .ok()
            .and_then(|p| u32::try_from(p).ok())
            .ok_or(rusqlite::Error::QueryReturnedNoRows)
    };
    let mut sizes = vec![0u32; rowids.len()];
    // (offset, token number) of every token of each document's title and text.
    let mut title_tokens: Vec<Vec<(u32, u32)>> = vec![Vec::new(); rowids.len()];
    let mut text_tokens: Vec<Vec<(u32, u32)>> = vec![Vec::new(); rowids.len()];
    let mut insert = tx.prepare("INSERT INTO postings (id, term, p) VALUES (?1, ?2, ?3)")?;
    // The instance table is ordered by term, then document, column and offset.
    let mut select = tx.prepare("SELECT term, doc, col, offset FROM temp.vocab")?;
    let mut rows = select.query([])?;
    let mut term: Option<String> = None;
    let mut number: u32 = 0;
    let mut blob: Vec<u8> = Vec::new();
    // The posting being counted: (position, title count, text count).
    let mut current: Option<(u32, u32, u32)> = None;
    let flush_posting = |blob: &mut Vec<u8>, posting: Option<(u32, u32, u32)>| {
        if let Some((doc, title, text)) = posting {
            for v in [doc, title, text] {
                blob.extend_from_slice(&v.to_le_bytes());
            }
        }
    };
    while let Some(row) = rows.next()? {
        let t = row.get_ref(0)?.as_str()?;
        let doc = position(row.get(1)?)?;
        let in_title = row.get_ref(2)?.as_str()? == "title";
        let offset: u32 = row.get(3)?;
        if term.as_deref() != Some(t) {
            flush_posting(&mut blob, current.take());
            if let Some(done) = term.take() {
                insert.execute(params![number, done, blob])?;
                number += 1;
            }
            blob.clear();
            term = Some(t.to_owned());
        }
        match &mut current {
            Some((d, title, text)) if *d == doc => {
                *if in_title { title } else { text } += 1;
            }
            _ => {
                flush_posting(&mut blob, current.take());
                current = Some((doc, u32::from(in_title), u32::from(!in_title)));
            }
        }
        let column = if in_title {
            &mut title_tokens
        } else {
            &mut text_tokens
        };
        column[doc as usize].push((offset, number));
        sizes[doc as usize] += 1;
    }
    flush_posting(&mut blob, current.take());
    if let Some(done) = term.take() {
        insert.execute(params![number, done, blob])?;
    }
    let sizes: Vec<u8> = sizes.iter().flat_map(|s| s.to_le_bytes()).collect();
    tx.execute("INSERT INTO doc_sizes (s) VALUES (?1)", [sizes])?;
    let mut insert = tx.prepare("INSERT INTO doc_terms (doc, ti, t) VALUES (?1, ?2, ?3)")?;
    let in_order = |mut tokens: Vec<(u32, u32)>| -> Vec<u8> {
        tokens.sort_unstable();
        tokens.iter().flat_map(|(_, t)| t.to_le_bytes()).collect()
    };
    for (doc, (title, text)) in title_tokens.into_iter().zip(text_tokens).enumerate() {
        insert.execute(params![doc as i64, in_order(title), in_order(text)])?;
    }
    tx.execute_batch("DROP TABLE temp.vocab;")?;
    Ok(())
}

/// One token's postings: the documents it occurs in (positions, ascending) and, for each, bm25's
/// term-frequency part `f × (k1 + 1) / (f + k1 × (1 - b + b × D / avgdl))`, where `f` is FTS5's
/// weighted count `4 × title + 1 × text` — computed once, as FTS5 computes it per row, so a query
/// only multiplies it by the token's idf and adds. A phrase of several tokens gets its postings
/// the same way, made when a query asks for it ([`TermIndex::phrase_postings`]).
#[derive(Clone)]
struct Postings {
    docs: Vec<u32>,
    part: Vec<f64>,
}

/// A document's `text` column as the snippet needs it: the text, and its tokens' numbers in order.
struct DocText<'a> {
    text: &'a str,
    tokens: &'a [u32],
}

/// A query's phrase as the index numbers its tokens: `None` when one of its tokens is in no
/// document (the phrase then matches nothing, as in FTS5).
pub(crate) type Phrase = Option<Box<[u32]>>;

/// The postings of every token and what bm25 and snippets need of every document, in memory.
pub(crate) struct TermIndex {
    numbers: HashMap<Box<str>, u32>,
    postings: Vec<Postings>,
    /// Per document (position in rowid order): `k1 × (1 - b + b × D / avgdl)`, bm25's length
    /// normalisation, computed once exactly as FTS5 computes it per row.
    norm: Vec<f64>,
    rowids: Vec<u64>,
    /// Per document: its `title` and `text` columns' tokens in order (for phrases and snippets).
    title_tokens: Vec<Box<[u32]>>,
    text_tokens: Vec<Box<[u32]>>,
    /// Per document: its text, or `None` where FTS5 makes the snippet (see the module's doc).
    texts: Vec<Option<Box<str>>>,
    scratch: Mutex<Vec<Scratch>>,
}

/// A reusable accumulator: one score per document, and room for the documents a query touches.
struct Scratch {
    score: Vec<f64>,
    touched: Vec<u32>,
}

fn corrupt(what: &str) -> rusqlite::Error {
    rusqlite::Error::InvalidColumnType(0, what.into(), rusqlite::types::Type::Blob)
}

fn words(blob: &[u8]) -> rusqlite::Result<impl Iterator<Item = u32> + '_> {
    if !blob.len().is_multiple_of(4) {
        return Err(corrupt("a blob of u32s"));
    }
    Ok(blob
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
}

impl TermIndex {
    /// Reads the `postings`, `doc_sizes` and `doc_terms` tables and every document's text.
    pub(super) fn load(conn: &Connection) -> rusqlite::Result<Self> {
        let sizes: Vec<u8> = conn.query_row("SELECT s FROM doc_sizes", [], |r| r.get(0))?;
        let sizes: Vec<u32> = words(&sizes)?.collect();
        let documents = sizes.len();
        let total: u64 = sizes.iter().map(|&s| u64::from(s)).sum();
        // FTS5: avgdl = (double)nToken / (double)nRow.
        let avgdl = total as f64 / documents as f64;
        let norm: Vec<f64> = sizes
            .iter()
            .map(|&d| K1 * (1.0 - B + B * f64::from(d) / avgdl))
            .collect();
        let (mut numbers, mut postings) = (HashMap::new(), Vec::new());
        let mut stmt = conn.prepare("SELECT id, term, p FROM postings ORDER BY id")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            if row.get::<_, i64>(0)? != postings.len() as i64 {
                return Err(corrupt("token numbers"));
            }
            let term: String = row.get(1)?;
            let all: Vec<u32> = words(row.get_ref(2)?.as_blob()?)?.collect();
            let (mut docs, mut part) = (Vec::new(), Vec::new());
            for p in all.chunks(3) {
                let &[doc, title, text] = p else {
                    return Err(corrupt("postings"));
                };
                let Some(&norm) = norm.get(doc as usize) else {
                    return Err(corrupt("a posting of an unknown document"));
                };
                let f = weighted(title, text);
                // FTS5: (aFreq[i] * (k1 + 1.0)) / (aFreq[i] + k1 * (1 - b + b * D / avgdl)).
                let p = (f * (K1 + 1.0)) / (f + norm);
                docs.push(doc);
                part.push(p);
            }
            numbers.insert(
                term.into_boxed_str(),
                u32::try_from(postings.len()).unwrap_or(u32::MAX),
            );
            postings.push(Postings { docs, part });
        }
        let mut rowids = Vec::with_capacity(documents);
        let mut texts = Vec::with_capacity(documents);
        let mut title_tokens = Vec::with_capacity(documents);
        let mut text_tokens = Vec::with_capacity(documents);
        let mut stmt = conn.prepare("SELECT rowid, text FROM docs ORDER BY rowid")?;
        let mut terms = conn.prepare("SELECT ti, t FROM doc_terms ORDER BY doc")?;
        let mut terms = terms.query([])?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let Some(t) = terms.next()? else {
                return Err(corrupt("document tokens"));
            };
            let title: Box<[u32]> = words(t.get_ref(0)?.as_blob()?)?.collect();
            let tokens: Box<[u32]> = words(t.get_ref(1)?.as_blob()?)?.collect();
            rowids.push(row.get::<_, i64>(0)?.unsigned_abs());
            let text = row.get_ref(1)?.as_str().unwrap_or_default();
            texts.push(DocText::snippets_here(text, &tokens).then(|| text.into()));
            title_tokens.push(title);
            text_tokens.push(tokens);
        }
        if rowids.len() != documents {
            return Err(corrupt("document count"));
        }
        Ok(Self {
            numbers,
            postings,
            norm,
            rowids,
            title_tokens,
            text_tokens,
            texts,
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// Documents indexed.
    pub(crate) fn documents(&self) -> usize {
        self.norm.len()
    }

    /// Each phrase (its tokens, in order) as the index numbers its tokens.
    pub(crate) fn phrases(&self, phrases: &[Vec<Box<str>>]) -> Vec<Phrase> {
        phrases
            .iter()
            .map(|tokens| {
                tokens
                    .iter()
                    .map(|t| self.numbers.get(t).copied())
                    .collect()
            })
            .collect()
    }

    /// The postings of a phrase of several tokens: the documents where its tokens follow one
    /// another in one column, with bm25's term-frequency part of its weighted count of instances
    /// there (FTS5 counts every position a phrase starts at, overlapping ones too).
    fn phrase_postings(&self, tokens: &[u32]) -> Postings {
        let lists: Vec<&[u32]> = tokens
            .iter()
            .map(|&n| self.postings[n as usize].docs.as_slice())
            .collect();
        let (mut docs, mut part) = (Vec::new(), Vec::new());
        // Every document of the rarest token that has all the others too.
        let Some(rarest) = lists.iter().min_by_key(|l| l.len()) else {
            return Postings { docs, part };
        };
        for &doc in *rarest {
            if !lists.iter().all(|l| l.binary_search(&doc).is_ok()) {
                continue;
            }
            let d = doc as usize;
            let title = starts(&self.title_tokens[d], tokens).count();
            let text = starts(&self.text_tokens[d], tokens).count();
            if title + text == 0 {
                continue;
            }
            let f = weighted(
                u32::try_from(title).unwrap_or(u32::MAX),
                u32::try_from(text).unwrap_or(u32::MAX),
            );
            docs.push(doc);
            part.push((f * (K1 + 1.0)) / (f + self.norm[d]));
        }
        Postings { docs, part }
    }

    /// The postings of each phrase that matches something: a single token's as they are, a
    /// longer phrase's made now.
    fn lists<'a>(&'a self, phrases: &'a [Phrase]) -> Vec<Cow<'a, Postings>> {
        phrases
            .iter()
            .flatten()
            .map(|tokens| match **tokens {
                [n] => Cow::Borrowed(&self.postings[n as usize]),
                _ => Cow::Owned(self.phrase_postings(tokens)),
            })
            .collect()
    }

    /// The `limit` best documents for the disjunction of `phrases` (in query order; a phrase may
    /// repeat, as in FTS5), as (position, bm25 rank) with FTS5's sign (lower is better), best
    /// first, ties by position: what `ORDER BY bm25(docs, 0.0, 0.0, 4.0, 1.0) LIMIT limit`
    /// returns for `"t1" OR "t2 t3" OR …`.
    pub(crate) fn rank(&self, phrases: &[Phrase], limit: usize) -> Vec<(u32, f64)> {
        let documents = self.norm.len();
        if limit == 0 || documents == 0 {
            return Vec::new();
        }
        let mut scratch = self
            .scratch
            .lock()
            .ok()
            .and_then(|mut idle| idle.pop())
            .unwrap_or_else(|| Scratch {
                score: vec![0.0; documents],
                touched: Vec::new(),
            });
        let lists = self.lists(phrases);
        // Room for every posting, so a document is recorded without a branch: written at the
        // end, kept (the end moves on) only if its sum was still 0.0.
        let most = lists.iter().map(|p| p.docs.len()).sum::<usize>();
        let Scratch { score, touched } = &mut scratch;
        if touched.len() < most {
            touched.resize(most, 0);
        }
        let mut found = 0;
        for postings in &lists {
            // FTS5: idf = log((nRow - nHit + 0.5) / (nHit + 0.5)), at least 1e-6.
            let hits = postings.docs.len();
            let idf = (((documents - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
            let idf = if idf <= 0.0 { 1e-6 } else { idf };
            for (&doc, &part) in postings.docs.iter().zip(&postings.part) {
                let d = doc as usize;
                // FTS5 adds every phrase's term, in phrase order, to a sum starting at 0.0; a
                // phrase absent from the document adds exactly 0.0. Every posting's part is
                // above 0, so a touched document's sum is never 0.0.
                touched[found] = doc;
                found += usize::from(score[d] == 0.0);
                score[d] += idf * part;
            }
        }
        // The best `limit` by a bounded heap whose top is the worst kept: most documents are
        // turned away by one comparison.
        let mut best: BinaryHeap<Kept> = BinaryHeap::with_capacity(limit + 1);
        for &doc in &touched[..found] {
            let kept = Kept {
                rank: -std::mem::take(&mut score[doc as usize]),
                doc,
            };
            if best.len() < limit {
                best.push(kept);
            } else if best.peek().is_some_and(|worst| kept < *worst) {
                best.pop();
                best.push(kept);
            }
        }
        let found: Vec<(u32, f64)> = best
            .into_sorted_vec()
            .into_iter()
            .map(|k| (k.doc, k.rank))
            .collect();
        if let Ok(mut idle) = self.scratch.lock()
            && idle.len() < MAX_IDLE_SCRATCH
        {
            idle.push(scratch);
        }
        found
    }

    /// FTS5's `snippet(docs, 3, '[', ']', '…', 24)` of document `rowid` for the disjunction of
    /// `phrases`: `Some(None)` when the document does not match (or does not exist), `None` when
    /// this document's snippet must come from FTS5.
    pub(crate) fn snippet(&self, phrases: &[Phrase], rowid: u64) -> Option<Option<String>> {
        let Ok(position) = self.rowids.binary_search(&rowid) else {
            return Some(None);
        };
        let matches = phrases.iter().flatten().any(|tokens| match **tokens {
            [n] => self.postings[n as usize]
                .docs
                .binary_search(&(position as u32))
                .is_ok(),
            _ => {
                starts(&self.title_tokens[position], tokens)
                    .next()
                    .is_some()
                    || starts(&self.text_tokens[position], tokens).next().is_some()
            }
        });
        if !matches {
            return Some(None);
        }
        let doc = DocText {
            text: self.texts[position].as_deref()?,
            tokens: &self.text_tokens[position],
        };
        Some(Some(doc.snippet(phrases)))
    }

    /// Bytes this index holds (postings, per-document figures, texts and tokens, token text), for
    /// reports.
    pub(crate) fn heap_bytes(&self) -> usize {
        let postings: usize = self
            .postings
            .iter()
            .map(|p| p.docs.capacity() * 4 + p.part.capacity() * 8 + 56)
            .sum();
        let numbers: usize = self.numbers.keys().map(|t| t.len() + 24).sum();
        let texts: usize = self.texts.iter().flatten().map(|t| t.len()).sum();
        let tokens: usize = self
            .title_tokens
            .iter()
            .chain(&self.text_tokens)
            .map(|t| t.len() * 4)
            .sum();
        postings + numbers + texts + tokens + self.norm.len() * (8 + 8 + 16 + 16 + 16)
    }
}

/// A document kept by [`TermIndex::rank`], ordered best first: by rank (lower is better), then
/// position.
#[derive(Clone, Copy)]
struct Kept {
    rank: f64,
    doc: u32,
}

impl Ord for Kept {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank
            .total_cmp(&other.rank)
            .then(self.doc.cmp(&other.doc))
    }
}

impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Kept {}

/// FTS5's `f(qi, D)`: the sum, over the token's instances, of its column's weight (integers, so
/// the order of the sum does not matter).
fn weighted(title: u32, text: u32) -> f64 {
    TITLE_WEIGHT * f64::from(title) + TEXT_WEIGHT * f64::from(text)
}

/// Byte ranges of the runs of ASCII letters and digits in `text`: unicode61's tokens of an ASCII
/// text.
fn ascii_tokens(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_alphanumeric() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            tokens.push((start, i));
        } else {
            i += 1;
        }
    }
    tokens
}

/// Byte ranges of unicode61's tokens in `text`: [`ascii_tokens`] for ASCII text; otherwise runs
/// that start with a letter or digit and go on with letters, digits and unicode61's diacritics.
fn token_spans(text: &str) -> Vec<(usize, usize)> {
    if text.is_ascii() {
        return ascii_tokens(text);
    }
    let mut tokens = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match start {
            Some(_) if c.is_alphanumeric() || is_unicode61_diacritic(c) => {}
            Some(from) => {
                tokens.push((from, at));
                start = None;
            }
            None if c.is_alphanumeric() => start = Some(at),
            None => {}
        }
    }
    if let Some(from) = start {
        tokens.push((from, text.len()));
    }
    tokens
}

/// SQLite's `sqlite3Fts5UnicodeIsdiacritic`: the combining marks in U+0300..=U+0331 that
/// unicode61 keeps inside a token (and folds away).
fn is_unicode61_diacritic(c: char) -> bool {
    const FIRST: u32 = 0x0300;
    const MASK_LOW: u32 = 0x0802_9FDF;
    const MASK_HIGH: u32 = 0x0003_61F8;
    match u32::from(c) {
        c @ FIRST..=0x031F => MASK_LOW & (1 << (c - FIRST)) != 0,
        c @ 0x0320..=0x0331 => MASK_HIGH & (1 << (c - 0x0320)) != 0,
        _ => false,
    }
}

/// Where `phrase` starts in `tokens`: every position, overlapping occurrences too.
fn starts<'a>(tokens: &'a [u32], phrase: &'a [u32]) -> impl Iterator<Item = usize> + 'a {
    tokens
        .windows(phrase.len())
        .enumerate()
        .filter(move |(_, w)| *w == phrase)
        .map(|(at, _)| at)
}

impl DocText<'_> {
    /// Whether a text's snippet can be made here: without NUL, with as many tokens by
    /// [`token_spans`] as FTS5 has.
    fn snippets_here(text: &str, tokens: &[u32]) -> bool {
        !text.contains('\0') && token_spans(text).len() == tokens.len()
    }

    /// `fts5SnippetFunction` for column `text`.
    fn snippet(&self, phrases: &[Phrase]) -> String {
        let n_token = SNIPPET_TOKENS as i64;
        let spans = token_spans(self.text);
        let size = self.tokens.len() as i64;
        // xInst for this column: (phrase, offset, phrase size), by offset, then phrase.
        let mut instances: Vec<(usize, i64, i64)> = Vec::new();
        for (phrase, tokens) in phrases.iter().enumerate() {
            for at in tokens.iter().flat_map(|t| starts(self.tokens, t)) {
                let size = tokens.as_ref().map_or(1, |t| t.len()) as i64;
                instances.push((phrase, at as i64, size));
            }
        }
        instances.sort_unstable_by_key(|&(phrase, offset, _)| (offset, phrase));
        // fts5SentenceFinderCb: the first token of each sentence.
        let bytes = self.text.as_bytes();
        let mut first: Vec<i64> = Vec::new();
        for (pos, &(start, _)) in spans.iter().enumerate() {
            if pos == 0 {
                first.push(0);
                continue;
            }
            let mut i = start as i64 - 1;
            let mut c = 0u8;
            while i >= 0 {
                c = bytes[i as usize];
                if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                i -= 1;
            }
            if i != start as i64 - 1 && (c == b'.' || c == b':') {
                first.push(pos as i64);
            }
        }
        // fts5SnippetScore: 1000 for each phrase's first instance in the window, 1 for others.
        let score = |at: i64| -> (i64, i64) {
            let mut seen = vec![false; phrases.len()];
            let (mut total, mut first_at, mut last) = (0i64, -1i64, 0i64);
            for &(phrase, offset, phrase_size) in &instances {
                if offset >= at && offset < at + n_token {
                    total += if seen[phrase] { 1 } else { 1000 };
                    seen[phrase] = true;
                    if first_at < 0 {
                        first_at = offset;
                    }
                    last = offset + phrase_size;
                }
            }
            let mut adjusted = first_at - (n_token - (last - first_at)) / 2;
            if adjusted + n_token > size {
                adjusted = size - n_token;
            }
            (total, adjusted.max(0))
        };
        let (mut best_score, mut best_start) = (0i64, 0i64);
        for &(_, offset, _) in &instances {
            let (s, adjusted) = score(offset);
            if s > best_score {
                best_score = s;
                best_start = adjusted;
            }
            if !first.is_empty() && size > n_token {
                let mut jj = 0;
                while jj + 1 < first.len() && first[jj + 1] <= offset {
                    jj += 1;
                }
                if first[jj] < offset {
                    let s = score(first[jj]).0 + if first[jj] == 0 { 120 } else { 100 };
                    if s > best_score {
                        best_score = s;
                        best_start = first[jj];
                    }
                }
            }
        }
        self.highlight(
            &spans,
            &instances,
            best_start,
            best_start + n_token - 1,
            size,
        )
    }

    /// `fts5HighlightCb` over tokens `range_start..=range_end`, then the snippet's ends.
    fn highlight(
        &self,
        spans: &[(usize, usize)],
        instances: &[(usize, i64, i64)],
        range_start: i64,
        range_end: i64,
        size: i64,
    ) -> String {
        let text = self.text;
        let mut out = String::new();
        // fts5HighlightAppend of `n` bytes from `from` (a negative `n`: to the end).
        let append = |out: &mut String, from: i64, n: i64| {
            let from = from as usize;
            if n < 0 {
                out.push_str(&text[from..]);
            } else {
                out.push_str(&text[from..from + n as usize]);
            }
        };
        // fts5CInstIterNext: the next run of overlapping instances, (first token, last token).
        let mut next_instance = 0;
        let mut next_run = || -> (i64, i64) {
            let (mut start, mut end) = (-1i64, -1i64);
            while let Some(&(_, offset, phrase_size)) = instances.get(next_instance) {
                // FTS5: iEnd = io - 1 + xPhraseSize.
                let last = offset - 1 + phrase_size;
                if start < 0 {
                    (start, end) = (offset, last);
                } else if offset <= end {
                    end = end.max(last);
                } else {
                    break;
                }
                next_instance += 1;
            }
            (start, end)
        };
        let mut run = next_run();
        if range_start > 0 {
            out.push_str(SNIPPET_ELLIPSIS);
        }
        while run.0 >= 0 && run.0 < range_start {
            run = next_run();
        }
        let (mut copied, mut open) = (0i64, false);
        for (pos, &(start, end)) in spans.iter().enumerate() {
            let (pos, start, end) = (pos as i64, start as i64, end as i64);
            if pos < range_start || pos > range_end {
                continue;
            }
            if range_start != 0 && pos == range_start {
                copied = start;
            }
            if open && (pos <= run.0 || run.0 < 0) && start > copied {
                out.push_str(SNIPPET_CLOSE);
                open = false;
            }
            if pos == run.0 && !open {
                append(&mut out, copied, start - copied);
                out.push_str(SNIPPET_OPEN);
                copied = start;
                open = true;
            }
            if pos == run.1 {
                if !open {
                    out.push_str(SNIPPET_OPEN);
                    open = true;
                }
                append(&mut out, copied, end - copied);
                copied = end;
                run = next_run();
            }
            if pos == range_end {
                if open {
                    if run.0 >= 0 && pos >= run.0 {
                        append(&mut out, copied, end - copied);
                        copied = end;
                    }
                    out.push_str(SNIPPET_CLOSE);
                    open = false;
                }
                append(&mut out, copied, end - copied);
                copied = end;
            }
        }
        if open {
            out.push_str(SNIPPET_CLOSE);
        }
        if range_end >= size - 1 {
            append(&mut out, copied, text.len() as i64 - copied);
        } else {
            out.push_str(SNIPPET_ELLIPSIS);
        }
        out
    }
}
