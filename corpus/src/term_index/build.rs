//! Building the term index into the index file, from FTS5 itself (`fts5vocab`), once.

use rusqlite::{Transaction, params};

/// Reads every token instance of the `docs` table through an `fts5vocab` table and stores, per
/// token (numbered in FTS5's order), its postings (document position in rowid order, count in
/// `title`, count in `text`: three little-endian u32 each); per document, its size in tokens
/// (little-endian u32) and its `title` and `text` columns' tokens in order (their numbers,
/// little-endian u32).
pub(crate) fn build(tx: &Transaction<'_>) -> rusqlite::Result<()> {
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
