//! The term index in memory: every token's postings and what bm25 and snippets need of every
//! document, loaded from the index file.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Mutex;

use rusqlite::Connection;

use super::snippet::DocText;
use super::tokens::{Phrase, starts};

/// bm25's `k1` and `b`, as FTS5's `bm25()` fixes them.
pub(super) const K1: f64 = 1.2;
pub(super) const B: f64 = 0.75;

/// The weights of the `title` and `text` columns in the session's `bm25(docs, 0.0, 0.0, 4.0,
/// 1.0)` (`id` and `kind` are `UNINDEXED`: no token of theirs is in the index).
pub(super) const TITLE_WEIGHT: f64 = 4.0;
pub(super) const TEXT_WEIGHT: f64 = 1.0;

/// Idle accumulators kept for reuse (one is in use per concurrent `rank`; more are made on demand
/// and dropped when returned beyond this many).
pub(super) const MAX_IDLE_SCRATCH: usize = 8;

/// One token's postings: the documents it occurs in (positions, ascending) and, for each, bm25's
/// term-frequency part `f × (k1 + 1) / (f + k1 × (1 - b + b × D / avgdl))`, where `f` is FTS5's
/// weighted count `4 × title + 1 × text` — computed once, as FTS5 computes it per row, so a query
/// only multiplies it by the token's idf and adds. A phrase of several tokens gets its postings
/// the same way, made when a query asks for it ([`TermIndex::phrase_postings`]).
#[derive(Clone)]
pub(super) struct Postings {
    pub(super) docs: Vec<u32>,
    pub(super) part: Vec<f64>,
}

/// The postings of every token and what bm25 and snippets need of every document, in memory.
pub(crate) struct TermIndex {
    pub(super) numbers: HashMap<Box<str>, u32>,
    pub(super) postings: Vec<Postings>,
    /// Per document (position in rowid order): `k1 × (1 - b + b × D / avgdl)`, bm25's length
    /// normalisation, computed once exactly as FTS5 computes it per row.
    pub(super) norm: Vec<f64>,
    pub(super) rowids: Vec<u64>,
    /// Per document: its `title` and `text` columns' tokens in order (for phrases and snippets).
    pub(super) title_tokens: Vec<Box<[u32]>>,
    pub(super) text_tokens: Vec<Box<[u32]>>,
    /// Per document: its text, or `None` where FTS5 makes the snippet (see the module's doc).
    pub(super) texts: Vec<Option<Box<str>>>,
    pub(super) scratch: Mutex<Vec<Scratch>>,
}

/// A reusable accumulator: one score per document, and room for the documents a query touches.
pub(super) struct Scratch {
    pub(super) score: Vec<f64>,
    pub(super) touched: Vec<u32>,
}

pub(super) fn corrupt(what: &str) -> rusqlite::Error {
    rusqlite::Error::InvalidColumnType(0, what.into(), rusqlite::types::Type::Blob)
}

pub(super) fn words(blob: &[u8]) -> rusqlite::Result<impl Iterator<Item = u32> + '_> {
    if !blob.len().is_multiple_of(4) {
        return Err(corrupt("a blob of u32s"));
    }
    Ok(blob
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
}

impl TermIndex {
    /// Reads the `postings`, `doc_sizes` and `doc_terms` tables and every document's text.
    pub(crate) fn load(conn: &Connection) -> rusqlite::Result<Self> {
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
    pub(super) fn lists<'a>(&'a self, phrases: &'a [Phrase]) -> Vec<Cow<'a, Postings>> {
        phrases
            .iter()
            .flatten()
            .map(|tokens| match **tokens {
                [n] => Cow::Borrowed(&self.postings[n as usize]),
                _ => Cow::Owned(self.phrase_postings(tokens)),
            })
            .collect()
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

/// FTS5's `f(qi, D)`: the sum, over the token's instances, of its column's weight (integers, so
/// the order of the sum does not matter).
pub(super) fn weighted(title: u32, text: u32) -> f64 {
    TITLE_WEIGHT * f64::from(title) + TEXT_WEIGHT * f64::from(text)
}
