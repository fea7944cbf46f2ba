//! Document vectors for semantic search: computed once per index build with the embedding model
//! (`turnstile-embed`) and the corpus's own token weights, stored in the index (`token_weights`,
//! `vectors`), loaded into memory when a pool
//! opens, and searched by brute force (a dot product per document: 6,090 × 256 multiply-adds,
//! `corpus/benches/semantic.rs` measures it).

use rusqlite::{Connection, Transaction, params};
use turnstile_embed::{Embedder, TokenWeights};

use super::{CorpusError, Document};

/// The text a document is embedded from: its id, title and text, so that a question naming the
/// object (`shutil.rmtree`) and one describing it both find it.
pub(super) fn document_text(doc: &Document) -> String {
    format!("{} {} {}", doc.id, doc.title, doc.text)
}

/// The embedding model every index is built with and every question is embedded by.
pub(super) fn model() -> Result<&'static Embedder, CorpusError> {
    Embedder::shipped().map_err(|e| CorpusError::Embedding(e.to_string()))
}

/// Weighs the model's tokens by their frequency in these documents ([`TokenWeights::sif`]),
/// embeds every document, and stores the weights and each vector (little-endian f32, under its
/// rowid).
pub(super) fn build(
    tx: &Transaction<'_>,
    model: &Embedder,
    docs: &[(i64, &Document)],
) -> rusqlite::Result<()> {
    let tokens: Vec<Vec<u32>> = docs
        .iter()
        .map(|(_, d)| model.tokens(&document_text(d)))
        .collect();
    let mut counts = vec![0u64; model.vocabulary()];
    for &token in tokens.iter().flatten() {
        if let Some(count) = counts.get_mut(token as usize) {
            *count += 1;
        }
    }
    let weights = TokenWeights::sif(&counts);
    tx.execute_batch(
        "CREATE TABLE token_weights (w BLOB NOT NULL);
         CREATE TABLE vectors (doc INTEGER PRIMARY KEY, v BLOB NOT NULL);",
    )?;
    tx.execute(
        "INSERT INTO token_weights (w) VALUES (?1)",
        [weights.to_bytes()],
    )?;
    let mut insert = tx.prepare("INSERT INTO vectors (doc, v) VALUES (?1, ?2)")?;
    for ((rowid, _), tokens) in docs.iter().zip(&tokens) {
        let v = model.embed_tokens(tokens, &weights);
        let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        insert.execute(params![rowid, blob])?;
    }
    Ok(())
}

/// The token weights stored with the index.
pub(super) fn load_weights(conn: &Connection, model: &Embedder) -> rusqlite::Result<TokenWeights> {
    let blob: Vec<u8> = conn.query_row("SELECT w FROM token_weights", [], |r| r.get(0))?;
    TokenWeights::from_bytes(&blob, model.vocabulary()).ok_or_else(|| {
        rusqlite::Error::InvalidColumnType(
            0,
            "token weights of another vocabulary".into(),
            rusqlite::types::Type::Blob,
        )
    })
}

/// Every document's vector, id and title, in memory, in rowid order (vectors row-major): a
/// search needs no SQL at all.
pub(crate) struct DocVectors {
    dims: usize,
    docs: Vec<u64>,
    values: Vec<f32>,
    labels: Vec<(String, String)>,
}

/// One document [`DocVectors::nearest`] found.
pub(crate) struct Near<'a> {
    pub(crate) doc: u64,
    pub(crate) id: &'a str,
    pub(crate) title: &'a str,
    pub(crate) similarity: f32,
}

impl DocVectors {
    /// Reads the `vectors` table; every row must have `dims` values.
    pub(super) fn load(conn: &Connection, dims: usize) -> rusqlite::Result<Self> {
        let mut stmt = conn.prepare(
            "SELECT v.doc, v.v, d.id, d.title FROM vectors AS v \
             JOIN docs AS d ON d.rowid = v.doc ORDER BY v.doc",
        )?;
        let mut rows = stmt.query([])?;
        let (mut docs, mut values, mut labels) = (Vec::new(), Vec::new(), Vec::new());
        while let Some(row) = rows.next()? {
            let blob = row.get_ref(1)?.as_blob()?;
            if blob.len() != dims * 4 {
                return Err(rusqlite::Error::InvalidColumnType(
                    1,
                    format!("vector of {} bytes, not {}", blob.len(), dims * 4),
                    rusqlite::types::Type::Blob,
                ));
            }
            docs.push(row.get::<_, i64>(0)?.unsigned_abs());
            labels.push((row.get(2)?, row.get(3)?));
            values.extend(
                blob.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        Ok(Self {
            dims,
            docs,
            values,
            labels,
        })
    }

    /// Documents held (one vector each).
    pub(crate) fn len(&self) -> usize {
        self.docs.len()
    }

    /// The rowid, id and title of the document at `position` (rowid order), if any.
    pub(crate) fn document(&self, position: usize) -> Option<(u64, &str, &str)> {
        let (id, title) = self.labels.get(position)?;
        Some((self.docs[position], id, title))
    }

    /// Dimensions of every vector.
    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// The `k` documents most similar to `query` (cosine: both sides are unit vectors or zero),
    /// best first, ties by rowid. A zero query is near nothing: no documents.
    pub(crate) fn nearest(&self, query: &[f32], k: usize) -> Vec<Near<'_>> {
        if query.len() != self.dims || query.iter().all(|x| *x == 0.0) || k == 0 {
            return Vec::new();
        }
        // (similarity, position); positions follow rowids, so ties go to the lower rowid.
        let mut scored: Vec<(f32, usize)> = self
            .values
            .chunks_exact(self.dims)
            .map(|v| dot(v, query))
            .enumerate()
            .map(|(i, s)| (s, i))
            .collect();
        let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if scored.len() > k {
            scored.select_nth_unstable_by(k - 1, order);
            scored.truncate(k);
        }
        scored.sort_unstable_by(order);
        scored
            .into_iter()
            .map(|(similarity, i)| Near {
                doc: self.docs[i],
                id: &self.labels[i].0,
                title: &self.labels[i].1,
                similarity,
            })
            .collect()
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent sums, so the compiler can keep them in one vector register.
    let mut sums = [0f32; 8];
    let (chunks_a, rest_a) = a.as_chunks::<8>();
    let (chunks_b, rest_b) = b.as_chunks::<8>();
    for (x, y) in chunks_a.iter().zip(chunks_b) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    let tail: f32 = rest_a.iter().zip(rest_b).map(|(x, y)| x * y).sum();
    sums.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(rows: &[[f32; 2]]) -> DocVectors {
        DocVectors {
            dims: 2,
            docs: (1..=rows.len() as u64).collect(),
            values: rows.iter().flatten().copied().collect(),
            labels: (1..=rows.len())
                .map(|i| (format!("id{i}"), format!("title {i}")))
                .collect(),
        }
    }

    fn found<'a>(near: &[Near<'a>]) -> Vec<(u64, &'a str, f32)> {
        near.iter().map(|n| (n.doc, n.id, n.similarity)).collect()
    }

    #[test]
    fn nearest_is_best_first_with_ties_by_document() {
        let v = vectors(&[[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [0.0, 1.0]]);
        assert_eq!(
            found(&v.nearest(&[0.0, 1.0], 3)),
            vec![(2, "id2", 1.0), (4, "id4", 1.0), (3, "id3", 0.8)]
        );
        assert_eq!(v.nearest(&[0.0, 1.0], 1)[0].title, "title 2");
        assert_eq!(v.nearest(&[1.0, 0.0], 10).len(), 4);
    }

    #[test]
    fn a_zero_or_misshapen_query_is_near_nothing() {
        let v = vectors(&[[1.0, 0.0]]);
        assert!(v.nearest(&[0.0, 0.0], 5).is_empty());
        assert!(v.nearest(&[1.0], 5).is_empty());
        assert!(v.nearest(&[1.0, 0.0], 0).is_empty());
    }

    #[test]
    fn dot_handles_every_length() {
        for n in [0, 1, 7, 8, 9, 256, 257] {
            let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let expected: f32 = a.iter().map(|x| x * x).sum();
            assert_eq!(dot(&a, &a), expected, "length {n}");
        }
    }
}
