//! The term index in memory: every token's postings and what bm25 and snippets need of every
//! document, loaded from the index file.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Mutex;

use rusqlite::Connection;

use super::packed::{TABLE, unpack_ascending, unpack_deltas, unpack_small};
use super::snippet::DocText;
use super::tokens::{Phrase, starts};

/// Most work one query's phrases of several tokens may cost the index, in units of one
/// candidate document checked against one token's list or one token of a document scanned:
/// about a millisecond or two. A phrase's postings are made by scanning the documents that hold
/// its rarest token, so a phrase of common words would scan most of the corpus (any plugin may
/// ask for one); past this budget the query goes to FTS5, whose position lists answer it in time
/// proportional to its tokens' occurrences (within the call's own time budget).
pub(crate) const PHRASE_SCAN_BUDGET: usize = 1 << 21;

/// bm25's `k1` and `b`, as FTS5's `bm25()` fixes them.
pub(super) const K1: f64 = 1.2;
pub(super) const B: f64 = 0.75;

/// The weights of the `title` and `text` columns in the session's `bm25(docs, 0.0, 0.0, 4.0,
/// 1.0)` (`id` and `kind` are `UNINDEXED`: no token of theirs is in the index).
pub(super) const TITLE_WEIGHT: u64 = 4;
pub(super) const TEXT_WEIGHT: u64 = 1;

/// One phrase's postings as `rank` reads them: the documents it occurs in (positions,
/// ascending), bm25's term-frequency part in each ([`part`] of FTS5's weighted count `f = 4 ×
/// title + 1 × text` of its instances there), and the largest of those parts (an upper bound for
/// pruning). A single token's
/// are slices of the index's; a phrase of several tokens gets its own, made when a query asks
/// for it ([`TermIndex::phrase_postings`]).
pub(super) struct List<'a> {
    pub(super) docs: Cow<'a, [u32]>,
    pub(super) parts: Cow<'a, [f64]>,
    pub(super) max_part: f64,
    /// Per block of [`BLOCK`] postings (the list's first `BLOCK`, the next…): the largest part
    /// among them.
    pub(super) blocks: Cow<'a, [f64]>,
}

/// Postings per block of [`List::blocks`].
pub(super) const BLOCK: usize = 64;

/// The postings of every token and what bm25 and snippets need of every document, in memory.
///
/// Postings live in two arenas (documents and bm25's term-frequency parts, token `t`'s at
/// `starts[t]..starts[t + 1]`). Each part is computed once, when loading, from the stored
/// weighted count by the operations FTS5 uses per row ([`part`]), so it is the same `f64`; a
/// query reads it rather than dividing per posting (12 bytes a posting rather than 8, for
/// about half of MaxScore's time at a million passages).
pub(crate) struct TermIndex {
    pub(super) numbers: HashMap<Box<str>, u32>,
    pub(super) starts: Vec<usize>,
    pub(super) docs: Vec<u32>,
    pub(super) parts: Vec<f64>,
    /// Per token: the largest [`part`] among its postings.
    pub(super) max_part: Vec<f64>,
    /// Per token: the largest [`part`] in each block of [`BLOCK`] of its postings, token `t`'s at
    /// `block_starts[t]..block_starts[t + 1]` (computed when loading: one pass over the
    /// postings).
    pub(super) block_max: Vec<f64>,
    pub(super) block_starts: Vec<usize>,
    /// Per document (position in rowid order): `k1 × (1 - b + b × D / avgdl)`, bm25's length
    /// normalisation, computed once exactly as FTS5 computes it per row.
    pub(super) norm: Vec<f64>,
    pub(super) rowids: Vec<u64>,
    /// Every document's `title` then `text` tokens in order (for phrases and snippets), document
    /// `d`'s title at `token_starts[2d]..token_starts[2d + 1]`, its text from there to
    /// `token_starts[2d + 2]`.
    pub(super) tokens: Vec<u32>,
    pub(super) token_starts: Vec<usize>,
    /// Per document: 1 where the index makes its snippet (from its text, read when asked), 0
    /// where FTS5 does (see the module's doc).
    pub(super) snippets: Vec<u8>,
    /// Idle accumulators of `rank`'s term-at-a-time path (one score per document).
    pub(super) scratch: Mutex<Vec<Vec<f64>>>,
}

/// bm25's term-frequency part for weighted count `f` in a document of normalisation `norm`:
/// FTS5's `(aFreq[i] * (k1 + 1.0)) / (aFreq[i] + k1 * (1 - b + b * D / avgdl))`.
pub(super) fn part(f: u32, norm: f64) -> f64 {
    let f = f64::from(f);
    (f * (K1 + 1.0)) / (f + norm)
}

/// FTS5's `f(qi, D)`: the sum over a phrase's instances of its column's weight, an integer (so
/// the order of the sum does not matter); `None` past `u32::MAX`.
pub(super) fn weighted(title: u64, text: u64) -> Option<u32> {
    let f = TITLE_WEIGHT
        .checked_mul(title)?
        .checked_add(TEXT_WEIGHT.checked_mul(text)?)?;
    u32::try_from(f).ok()
}

/// The largest of each block of [`BLOCK`] parts of a list.
fn blocks(parts: &[f64]) -> impl Iterator<Item = f64> + '_ {
    parts
        .chunks(BLOCK)
        .map(|parts| parts.iter().copied().fold(0.0, f64::max))
}

/// FTS5's idf of a phrase found in `hits` of `documents`: `log((nRow - nHit + 0.5) / (nHit +
/// 0.5))`, at least 1e-6.
pub(super) fn idf(documents: usize, hits: usize) -> f64 {
    let idf = (((documents - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

pub(super) fn corrupt(what: &str) -> rusqlite::Error {
    rusqlite::Error::InvalidColumnType(0, what.into(), rusqlite::types::Type::Blob)
}

/// The array `name` of the term index's table: its parts' bytes, in order, as `N`-byte
/// little-endian values.
fn array<T, const N: usize>(
    conn: &Connection,
    name: &str,
    from: fn([u8; N]) -> T,
) -> rusqlite::Result<Vec<T>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT part, data FROM {TABLE} WHERE name = ?1 ORDER BY part"
    ))?;
    let mut rows = stmt.query([name])?;
    let (mut values, mut parts) = (Vec::new(), 0i64);
    while let Some(row) = rows.next()? {
        let data = row.get_ref(1)?.as_blob()?;
        if row.get::<_, i64>(0)? != parts || !data.len().is_multiple_of(N) {
            return Err(corrupt(name));
        }
        parts += 1;
        values.reserve_exact(data.len() / N);
        values.extend(data.chunks_exact(N).map(|c| {
            let mut bytes = [0; N];
            bytes.copy_from_slice(c);
            from(bytes)
        }));
    }
    if parts == 0 {
        return Err(corrupt(name));
    }
    Ok(values)
}

/// A stored array of varints, each at most `u32::MAX`.
fn small(conn: &Connection, name: &str) -> rusqlite::Result<Vec<u32>> {
    unpack_small(&array(conn, name, u8::from_le_bytes)?).ok_or_else(|| corrupt(name))
}

/// A stored array of ascending values (varints of their differences).
fn ascending(conn: &Connection, name: &str) -> rusqlite::Result<Vec<u64>> {
    unpack_ascending(&array(conn, name, u8::from_le_bytes)?).ok_or_else(|| corrupt(name))
}

/// Stored offsets (u64) as `usize`s, checked ascending from 0.
fn offsets(stored: Vec<u64>) -> rusqlite::Result<Vec<usize>> {
    let offsets: Vec<usize> = stored
        .into_iter()
        .map(|o| usize::try_from(o).map_err(|_| corrupt("offsets")))
        .collect::<rusqlite::Result<_>>()?;
    if offsets.first() != Some(&0) || !offsets.windows(2).all(|w| w[0] <= w[1]) {
        return Err(corrupt("offsets"));
    }
    Ok(offsets)
}

impl TermIndex {
    /// Reads the term index's arrays (see [`TABLE`]), checking that they fit together (a
    /// damaged file is an error here, never a panic later).
    pub(crate) fn load(conn: &Connection) -> rusqlite::Result<Self> {
        let sizes: Vec<u32> = small(conn, "sizes")?;
        let documents = sizes.len();
        let total: u64 = sizes.iter().map(|&s| u64::from(s)).sum();
        // FTS5: avgdl = (double)nToken / (double)nRow.
        let avgdl = total as f64 / documents as f64;
        let norm: Vec<f64> = sizes
            .iter()
            .map(|&d| K1 * (1.0 - B + B * f64::from(d) / avgdl))
            .collect();
        drop(sizes);
        let names: Vec<u8> = array(conn, "terms", u8::from_le_bytes)?;
        let mut numbers = HashMap::new();
        let (mut rest, mut count) = (names.as_slice(), 0u32);
        while let Some((length, after)) = rest.split_first_chunk::<4>() {
            let length = u32::from_le_bytes(*length) as usize;
            let Some(name) = after.get(..length) else {
                return Err(corrupt("terms"));
            };
            let name = std::str::from_utf8(name).map_err(|_| corrupt("terms"))?;
            numbers.insert(Box::from(name), count);
            count = count.checked_add(1).ok_or_else(|| corrupt("terms"))?;
            rest = &after[length..];
        }
        // Every name once.
        if !rest.is_empty() || numbers.len() != count as usize {
            return Err(corrupt("terms"));
        }
        drop(names);
        let starts = offsets(ascending(conn, "starts")?)?;
        let docs = unpack_deltas(&array(conn, "docs", u8::from_le_bytes)?)
            .ok_or_else(|| corrupt("docs"))?;
        let freqs: Vec<u32> = small(conn, "freqs")?;
        let max_part: Vec<f64> = array(conn, "max_part", f64::from_le_bytes)?;
        let fits = starts.len() == numbers.len() + 1
            && starts.last() == Some(&docs.len())
            && freqs.len() == docs.len()
            && max_part.len() == numbers.len()
            && freqs.iter().all(|&f| f > 0)
            && starts.windows(2).all(|w| {
                let list = &docs[w[0]..w[1]];
                list.windows(2).all(|d| d[0] < d[1])
                    && list.last().is_none_or(|&d| (d as usize) < documents)
            });
        if !fits {
            return Err(corrupt("postings"));
        }
        let parts: Vec<f64> = docs
            .iter()
            .zip(&freqs)
            .map(|(&d, &f)| part(f, norm[d as usize]))
            .collect();
        drop(freqs);
        let (mut block_max, mut block_starts) = (Vec::new(), vec![0]);
        for w in starts.windows(2) {
            block_max.extend(blocks(&parts[w[0]..w[1]]));
            block_starts.push(block_max.len());
        }
        let rowids = ascending(conn, "rowids")?;
        let tokens: Vec<u32> = small(conn, "tokens")?;
        let token_starts = offsets(ascending(conn, "token_starts")?)?;
        let snippets: Vec<u8> = array(conn, "snippets", u8::from_le_bytes)?;
        if rowids.len() != documents
            || !rowids.windows(2).all(|w| w[0] < w[1])
            || token_starts.len() != 2 * documents + 1
            || token_starts.last() != Some(&tokens.len())
            || snippets.len() != documents
        {
            return Err(corrupt("documents"));
        }
        Ok(Self {
            numbers,
            starts,
            docs,
            parts,
            max_part,
            block_max,
            block_starts,
            norm,
            rowids,
            tokens,
            token_starts,
            snippets,
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// Document `d`'s `title` tokens, in order.
    pub(super) fn title_tokens(&self, d: usize) -> &[u32] {
        &self.tokens[self.token_starts[2 * d]..self.token_starts[2 * d + 1]]
    }

    /// Document `d`'s `text` tokens, in order.
    pub(super) fn text_tokens(&self, d: usize) -> &[u32] {
        &self.tokens[self.token_starts[2 * d + 1]..self.token_starts[2 * d + 2]]
    }

    /// Token `n`'s documents (positions, ascending).
    pub(super) fn token_docs(&self, n: u32) -> &[u32] {
        let n = n as usize;
        &self.docs[self.starts[n]..self.starts[n + 1]]
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
    /// another in one column, with its weighted count of instances there (FTS5 counts every
    /// position a phrase starts at, overlapping ones too); `None` past `budget` (see
    /// [`PHRASE_SCAN_BUDGET`]), which is spent by what was examined.
    fn phrase_postings(&self, tokens: &[u32], budget: &mut usize) -> Option<List<'static>> {
        let lists: Vec<&[u32]> = tokens.iter().map(|&n| self.token_docs(n)).collect();
        let (mut docs, mut parts, mut max_part) = (Vec::new(), Vec::new(), 0.0f64);
        // Every document of the rarest token that has all the others too.
        if let Some(rarest) = lists.iter().min_by_key(|l| l.len()) {
            for &doc in *rarest {
                *budget = budget.checked_sub(lists.len())?;
                if !lists.iter().all(|l| l.binary_search(&doc).is_ok()) {
                    continue;
                }
                let d = doc as usize;
                let (title_tokens, text_tokens) = (self.title_tokens(d), self.text_tokens(d));
                *budget = budget.checked_sub(title_tokens.len() + text_tokens.len())?;
                let title = starts(title_tokens, tokens).count();
                let text = starts(text_tokens, tokens).count();
                if title + text == 0 {
                    continue;
                }
                let f = weighted(title as u64, text as u64).unwrap_or(u32::MAX);
                let part = part(f, self.norm[d]);
                docs.push(doc);
                parts.push(part);
                max_part = max_part.max(part);
            }
        }
        Some(List {
            blocks: Cow::Owned(blocks(&parts).collect()),
            docs: Cow::Owned(docs),
            parts: Cow::Owned(parts),
            max_part,
        })
    }

    /// The postings of each phrase that matches something, in query order: a single token's as
    /// they are, a longer phrase's made now — `None` when the phrases' documents would cost more
    /// than [`PHRASE_SCAN_BUDGET`] to examine (FTS5 answers those from its position lists).
    pub(super) fn lists<'a>(&'a self, phrases: &'a [Phrase]) -> Option<Vec<List<'a>>> {
        let mut budget = PHRASE_SCAN_BUDGET;
        phrases
            .iter()
            .flatten()
            .map(|tokens| match **tokens {
                [n] => {
                    let n = n as usize;
                    let range = self.starts[n]..self.starts[n + 1];
                    let blocks = self.block_starts[n]..self.block_starts[n + 1];
                    Some(List {
                        blocks: Cow::Borrowed(&self.block_max[blocks]),
                        docs: Cow::Borrowed(&self.docs[range.clone()]),
                        parts: Cow::Borrowed(&self.parts[range]),
                        max_part: self.max_part[n],
                    })
                }
                _ => self.phrase_postings(tokens, &mut budget),
            })
            .collect()
    }

    /// FTS5's `snippet(docs, 3, '[', ']', '…', 24)` of document `rowid` for the disjunction of
    /// `phrases`, from its text as `text` reads it (the index does not hold the texts):
    /// `Some(None)` when the document does not match (or does not exist), `None` when this
    /// document's snippet must come from FTS5 (or its text could not be read).
    pub(crate) fn snippet(
        &self,
        phrases: &[Phrase],
        rowid: u64,
        text: impl FnOnce(u64) -> Option<String>,
    ) -> Option<Option<String>> {
        let Ok(position) = self.rowids.binary_search(&rowid) else {
            return Some(None);
        };
        let matches = phrases.iter().flatten().any(|tokens| match **tokens {
            [n] => self.token_docs(n).binary_search(&(position as u32)).is_ok(),
            _ => {
                starts(self.title_tokens(position), tokens).next().is_some()
                    || starts(self.text_tokens(position), tokens).next().is_some()
            }
        });
        if !matches {
            return Some(None);
        }
        if self.snippets[position] == 0 {
            return None;
        }
        let text = text(rowid)?;
        let tokens = self.text_tokens(position);
        // The text the index was built from (the file's checksum says so): checked all the same,
        // since the snippet indexes its tokens' spans.
        if !DocText::snippets_here(&text, tokens) {
            return None;
        }
        let doc = DocText {
            text: &text,
            tokens,
        };
        Some(Some(doc.snippet(phrases)))
    }

    /// Bytes this index holds (postings, per-document figures and tokens, token text, idle
    /// accumulators), for reports.
    pub(crate) fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let postings = self.docs.capacity() * size_of::<u32>()
            + self.parts.capacity() * size_of::<f64>()
            + self.starts.capacity() * size_of::<usize>()
            + self.max_part.capacity() * size_of::<f64>()
            + self.block_max.capacity() * size_of::<f64>()
            + self.block_starts.capacity() * size_of::<usize>();
        // A token's text and its entry (a boxed str and a u32, in a table at most 7/8 full).
        let numbers: usize = self.numbers.keys().map(|t| t.len() + 32).sum();
        let tokens = self.tokens.capacity() * size_of::<u32>()
            + self.token_starts.capacity() * size_of::<usize>();
        // The idle accumulators of `rank`'s term-at-a-time path.
        let scratch: usize = self.scratch.lock().map_or(0, |idle| {
            idle.iter().map(|s| s.capacity() * size_of::<f64>()).sum()
        });
        postings
            + scratch
            + numbers
            + self.snippets.capacity()
            + tokens
            + self.norm.capacity() * size_of::<f64>()
            + self.rowids.capacity() * size_of::<u64>()
    }
}
