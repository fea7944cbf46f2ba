//! Building the term index into the index file, from FTS5 itself (`fts5vocab`), once, stored as
//! the arrays [`TermIndex`](super::TermIndex) holds, so opening it is copying them.

use rusqlite::{Transaction, params};

use super::index::{B, K1, TEXT_WEIGHT, TITLE_WEIGHT, part};
use super::packed::{PART_BYTES, TABLE, pack, pack_ascending, pack_deltas};
use super::snippet::DocText;

/// Reads every token instance of the `docs` table through an `fts5vocab` table and stores the
/// term index's arrays (see [`TABLE`]).
pub(crate) fn build(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(&format!(
        "CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'docs', 'instance');
         CREATE TABLE {TABLE} (name TEXT NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL,
                               PRIMARY KEY (name, part)) WITHOUT ROWID;"
    ))?;
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
    let (mut terms, mut starts, mut docs) = (Vec::<u8>::new(), vec![0u64], Vec::<u32>::new());
    // Per posting: FTS5's weighted count, `4 × title + 1 × text`.
    let mut freqs: Vec<u32> = Vec::new();
    // The instance table is ordered by term, then document, column and offset.
    let mut select = tx.prepare("SELECT term, doc, col, offset FROM temp.vocab")?;
    let mut rows = select.query([])?;
    let mut term: Option<String> = None;
    let mut number: u32 = 0;
    while let Some(row) = rows.next()? {
        let t = row.get_ref(0)?.as_str()?;
        let doc = position(row.get(1)?)?;
        let in_title = row.get_ref(2)?.as_str()? == "title";
        let offset: u32 = row.get(3)?;
        if term.as_deref() != Some(t) {
            if term.is_some() {
                starts.push(docs.len() as u64);
                number += 1;
            }
            let length = u32::try_from(t.len()).map_err(|_| too_large())?;
            terms.extend_from_slice(&length.to_le_bytes());
            terms.extend_from_slice(t.as_bytes());
            term = Some(t.to_owned());
        }
        if docs.last() != Some(&doc) || starts.last() == Some(&(docs.len() as u64)) {
            docs.push(doc);
            freqs.push(0);
        }
        if let Some(f) = freqs.last_mut() {
            let weight = if in_title { TITLE_WEIGHT } else { TEXT_WEIGHT };
            *f = u32::try_from(weight)
                .ok()
                .and_then(|w| f.checked_add(w))
                .ok_or_else(too_large)?;
        }
        let column = if in_title {
            &mut title_tokens
        } else {
            &mut text_tokens
        };
        column[doc as usize].push((offset, number));
        sizes[doc as usize] += 1;
    }
    if term.is_some() {
        starts.push(docs.len() as u64);
    }
    drop(rows);
    drop(select);
    let total: u64 = sizes.iter().map(|&s| u64::from(s)).sum();
    // FTS5: avgdl = (double)nToken / (double)nRow; the load computes the same norms.
    let avgdl = total as f64 / sizes.len() as f64;
    let norm: Vec<f64> = sizes
        .iter()
        .map(|&d| K1 * (1.0 - B + B * f64::from(d) / avgdl))
        .collect();
    let max_part: Vec<f64> = starts
        .windows(2)
        .map(|w| {
            let range = w[0] as usize..w[1] as usize;
            docs[range.clone()]
                .iter()
                .zip(&freqs[range])
                .map(|(&d, &f)| part(f, norm[d as usize]))
                .fold(0.0, f64::max)
        })
        .collect();
    let (mut tokens, mut token_starts) = (Vec::<u32>::new(), vec![0u64]);
    for column in title_tokens.iter_mut().zip(&mut text_tokens) {
        for tokens_of in [column.0, column.1] {
            tokens_of.sort_unstable();
            tokens.extend(tokens_of.iter().map(|&(_, t)| t));
            token_starts.push(tokens.len() as u64);
            *tokens_of = Vec::new();
        }
    }
    drop((title_tokens, text_tokens));
    let mut snippets = Vec::with_capacity(rowids.len());
    {
        let mut texts = tx.prepare("SELECT text FROM docs ORDER BY rowid")?;
        let mut rows = texts.query([])?;
        let mut d = 0;
        while let Some(row) = rows.next()? {
            let text = row.get_ref(0)?.as_str().unwrap_or_default();
            let (from, to) = (token_starts[2 * d + 1], token_starts[2 * d + 2]);
            let here = DocText::snippets_here(text, &tokens[from as usize..to as usize]);
            snippets.push(u8::from(here));
            d += 1;
        }
    }
    let mut insert = tx.prepare(&format!(
        "INSERT INTO {TABLE} (name, part, data) VALUES (?1, ?2, ?3)"
    ))?;
    let mut store = |name: &str, bytes: &[u8]| -> rusqlite::Result<()> {
        // An empty array is one empty part, so every array is there.
        let mut parts: Vec<&[u8]> = bytes.chunks(PART_BYTES).collect();
        if parts.is_empty() {
            parts.push(&[]);
        }
        for (i, part) in parts.into_iter().enumerate() {
            insert.execute(params![name, i as i64, part])?;
        }
        Ok(())
    };
    store("terms", &terms)?;
    store("starts", &pack_ascending(starts))?;
    store("docs", &pack_deltas(docs))?;
    store("freqs", &pack(freqs.iter().map(|&f| u64::from(f))))?;
    store("max_part", &le_bytes(&max_part, f64::to_le_bytes))?;
    store("sizes", &pack(sizes.iter().map(|&s| u64::from(s))))?;
    store(
        "rowids",
        &pack_ascending(rowids.iter().map(|&r| r.unsigned_abs())),
    )?;
    store("tokens", &pack(tokens.iter().map(|&t| u64::from(t))))?;
    store("token_starts", &pack_ascending(token_starts))?;
    store("snippets", &snippets)?;
    drop(insert);
    tx.execute_batch("DROP TABLE temp.vocab;")?;
    Ok(())
}

fn too_large() -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure("a count past u32".into())
}

/// `values` as consecutive little-endian bytes.
fn le_bytes<T: Copy, const N: usize>(values: &[T], to: fn(T) -> [u8; N]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(values.len() * N);
    for &v in values {
        bytes.extend_from_slice(&to(v));
    }
    bytes
}
