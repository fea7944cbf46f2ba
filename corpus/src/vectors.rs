//! Document vectors for semantic search: computed once per index build with the embedding model
//! (`turnstile-embed`) and the corpus's own token weights, stored in the index (`token_weights`,
//! `vectors`), loaded into memory when a pool
//! opens, and searched by brute force: a scan of 12-bit integer copies of the vectors (half the
//! memory to stream, integer arithmetic) with an error bound per document, then the exact f32 dot
//! product for the few documents the bounds cannot rule out, so the answer is the exhaustive f32
//! search's, to the bit (`corpus/benches/semantic.rs` measures it).

use rusqlite::{Connection, Transaction, params};
use turnstile_embed::{Embedder, TokenWeights};

use super::clusters::{Clusters, dot};
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
    codes: Codes,
    /// For a large corpus, the documents grouped so that a question searches a few groups
    /// (`clusters.rs`; approximate); `None`: every document is searched (exact).
    clusters: Option<Clusters>,
}

/// The vectors quantised to 12-bit integers, one scale per document (`value ≈ scale × code`, off
/// by at most `scale / 2`): what [`DocVectors::nearest`] scans first. Row `r` is the document at
/// position `r`, or for a clustered corpus the `r`-th of the clusters' order.
struct Codes {
    codes: Vec<i16>,
    /// Per document: its scale ([`quantize`]).
    scales: Vec<f64>,
    /// Per document: the sum of its codes' magnitudes (for the query's share of the error).
    magnitudes: Vec<f64>,
}

impl Codes {
    /// The rows of `values` coded in position order, or in `order` (the clusters' order: each
    /// cluster's codes are then one contiguous run, scanned in one sweep).
    fn new(values: &[f32], dims: usize, order: Option<&[u32]>) -> Self {
        let rows = if dims <= MAX_CODED_DIMS && dims.is_multiple_of(CODE_LANES) {
            values.len().checked_div(dims).unwrap_or(0)
        } else {
            0
        };
        let mut codes = Vec::with_capacity(rows * dims);
        let (mut scales, mut magnitudes) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
        let position = |row: usize| order.map_or(row, |o| o[row] as usize);
        for v in (0..rows).map(|row| &values[position(row) * dims..(position(row) + 1) * dims]) {
            let from = codes.len();
            scales.push(quantize(v, &mut codes));
            magnitudes.push(codes[from..].iter().map(|c| f64::from(c.abs())).sum());
        }
        Self {
            codes,
            scales,
            magnitudes,
        }
    }
}

/// The largest code (12 bits with the sign), for a document's values and a query's alike.
const CODE_MAX: f64 = 2047.0;
/// Vectors of more dimensions (the sum in [`dot_codes`] could overflow), or of a number not a
/// multiple of [`CODE_LANES`], are not coded: every document is then scored exactly.
const MAX_CODED_DIMS: usize = 512;
const CODE_LANES: usize = 16;

/// Appends `values` coded as integers of at most [`CODE_MAX`] to `codes` and returns their
/// scale, `max |value| / CODE_MAX` (0 for a zero vector): `value ≈ scale × code`, off by at most
/// `scale / 2`.
fn quantize(values: &[f32], codes: &mut Vec<i16>) -> f64 {
    let scale = values.iter().fold(0f64, |m, x| m.max(f64::from(x.abs()))) / CODE_MAX;
    codes.extend(values.iter().map(|x| {
        let code = if scale > 0.0 {
            (f64::from(*x) / scale).round().clamp(-CODE_MAX, CODE_MAX)
        } else {
            0.0
        };
        #[allow(clippy::cast_possible_truncation)]
        let code = code as i16;
        code
    }));
    scale
}

/// A query coded as the documents are ([`quantize`]).
struct QueryCodes {
    codes: Vec<i16>,
    step: f64,
    /// The sum of the query's magnitudes, `‖q‖₁`.
    l1: f64,
}

impl QueryCodes {
    fn new(query: &[f32]) -> Self {
        let mut codes = Vec::with_capacity(query.len());
        let step = quantize(query, &mut codes);
        let l1 = query.iter().map(|x| f64::from(x.abs())).sum();
        Self { codes, step, l1 }
    }
}

/// Room for f32 rounding in the exact dot product (at most 512 terms: under ~3.1e-5 of `Σ|vᵢqᵢ|`),
/// as a share of that sum's upper bound, so a bound never rules out a document it should not.
const ROUNDING_SLACK: f64 = 1e-4;

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
        Ok(Self::new(dims, docs, values, labels))
    }

    fn new(dims: usize, docs: Vec<u64>, values: Vec<f32>, labels: Vec<(String, String)>) -> Self {
        let clusters = Clusters::build(&values, dims);
        let codes = Codes::new(&values, dims, clusters.as_ref().map(Clusters::order));
        Self {
            dims,
            docs,
            values,
            labels,
            codes,
            clusters,
        }
    }

    /// For a large corpus, its clusters and how many a search covers; `None`: every document is
    /// searched.
    pub(crate) fn clusters(&self) -> Option<(usize, usize)> {
        self.clusters.as_ref().map(|c| (c.count(), c.probes()))
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
    ///
    /// Among the documents searched — all of them, or for a large corpus the members of the
    /// question's nearest clusters (`clusters.rs`) — exactly what scoring each with [`dot`] would
    /// give: the integer scan bounds each document's similarity from below and above; the `k`-th
    /// best lower bound is a floor the true `k`-th similarity cannot be under, so only documents
    /// whose upper bound reaches it are scored exactly, and those include every one of the true
    /// best `k`, ties too.
    pub(crate) fn nearest(&self, query: &[f32], k: usize) -> Vec<Near<'_>> {
        if query.len() != self.dims || query.iter().all(|x| *x == 0.0) || k == 0 {
            return Vec::new();
        }
        match &self.clusters {
            Some(clusters) => {
                let runs = clusters.probe(query);
                let rows = runs.iter().map(|run| run.len()).sum();
                self.nearest_among(query, k, rows, runs.into_iter().flatten())
            }
            None => self.nearest_among(query, k, self.len(), 0..self.len()),
        }
    }

    /// [`Self::nearest`] over the `searched` documents whose code rows `rows` gives (a row is a
    /// position, or for a clustered corpus a place in the clusters' order).
    fn nearest_among(
        &self,
        query: &[f32],
        k: usize,
        searched: usize,
        rows: impl Iterator<Item = usize>,
    ) -> Vec<Near<'_>> {
        let order = self.clusters.as_ref().map(Clusters::order);
        let position = |row: usize| order.map_or(row, |o| o[row] as usize);
        let q = QueryCodes::new(query);
        // Each document's position, lower and upper bound; the k-th best lower bound is the floor.
        let coded = !self.codes.scales.is_empty();
        let capacity = if coded { searched } else { 0 };
        let (mut positions, mut highs, mut lows) = (
            Vec::with_capacity(capacity),
            Vec::with_capacity(capacity),
            Vec::<f64>::with_capacity(capacity),
        );
        for row in rows {
            if !coded {
                positions.push(position(row));
                continue;
            }
            let codes = &self.codes.codes[row * self.dims..(row + 1) * self.dims];
            let (scale, magnitude) = (self.codes.scales[row], self.codes.magnitudes[row]);
            #[allow(clippy::cast_precision_loss)]
            let estimate = scale * q.step * dot_codes(codes, &q.codes) as f64;
            // |Σ δᵢqᵢ| ≤ scale/2 · ‖q‖₁ (the document's rounding), plus scale · Σ|cᵢ| · step/2
            // (the query's), plus f32 rounding of the exact product (Σ|vᵢqᵢ| ≤ max|v| ‖q‖₁,
            // max|v| = CODE_MAX · scale).
            let error = scale * 0.5 * q.l1
                + scale * magnitude * q.step * 0.5
                + ROUNDING_SLACK * scale * CODE_MAX * q.l1;
            positions.push(position(row));
            highs.push(estimate + error);
            lows.push(estimate - error);
        }
        let floor = if coded && searched > k {
            *lows.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a)).1
        } else {
            // Not coded (too many dimensions) or no more documents than `k`: score them all.
            f64::NEG_INFINITY
        };
        // (similarity, position); positions follow rowids, so ties go to the lower rowid.
        let mut scored: Vec<(f32, usize)> = (0..positions.len())
            .filter(|&j| highs.get(j).is_none_or(|high| *high >= floor))
            .map(|j| {
                let i = positions[j];
                let v = &self.values[i * self.dims..(i + 1) * self.dims];
                (dot(v, query), i)
            })
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

    /// [`Self::nearest`] the plain way: every document scored with [`dot`] (what it must equal).
    #[cfg(test)]
    pub(crate) fn nearest_exhaustive(&self, query: &[f32], k: usize) -> Vec<(u64, f32)> {
        let mut scored: Vec<(f32, usize)> = self
            .values
            .chunks_exact(self.dims)
            .map(|v| dot(v, query))
            .enumerate()
            .map(|(i, s)| (s, i))
            .collect();
        scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(k);
        scored.into_iter().map(|(s, i)| (self.docs[i], s)).collect()
    }
}

/// The integer dot product of a document's codes and the query's, exact: each product is at most
/// 2047², so the sum of at most [`MAX_CODED_DIMS`] of them stays under 2³¹. Both lengths
/// are a multiple of [`CODE_LANES`] (vectors of other shapes are not coded).
fn dot_codes(a: &[i16], b: &[i16]) -> i64 {
    let (chunks_a, _) = a.as_chunks::<CODE_LANES>();
    let (chunks_b, _) = b.as_chunks::<CODE_LANES>();
    // Independent sums, so the compiler can keep them in vector registers.
    let mut sums = [0i32; CODE_LANES];
    for (x, y) in chunks_a.iter().zip(chunks_b) {
        for i in 0..CODE_LANES {
            sums[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    i64::from(sums.iter().sum::<i32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `values` as a corpus grouped into `count` clusters, `probes` searched per question.
    fn clustered(values: Vec<f32>, dims: usize, count: usize, probes: usize) -> DocVectors {
        let n = values.len() / dims;
        let mut v = DocVectors::new(
            dims,
            (1..=n as u64).collect(),
            values,
            (1..=n).map(|i| (format!("id{i}"), String::new())).collect(),
        );
        let clusters = Clusters::with(&v.values, dims, count, probes);
        v.codes = Codes::new(&v.values, dims, Some(clusters.order()));
        v.clusters = Some(clusters);
        v
    }

    #[test]
    fn a_clustered_search_finds_most_of_the_exhaustive_answer_with_exact_similarities() {
        let dims = 32;
        let values = crate::clusters::tests::clustered(40, 50, dims);
        let questions: Vec<Vec<f32>> = (0..40)
            .map(|i| values[i * dims..(i + 1) * dims].to_vec())
            .collect();
        let k = 20;
        // Every cluster probed: the exhaustive answer, to the bit.
        let all = clustered(values.clone(), dims, 40, 40);
        for q in &questions {
            let found: Vec<(u64, f32)> = all
                .nearest(q, k)
                .iter()
                .map(|n| (n.doc, n.similarity))
                .collect();
            assert_eq!(found, all.nearest_exhaustive(q, k));
        }
        // A quarter probed: most of it, each similarity exact, best first.
        let some = clustered(values, dims, 40, 10);
        let (mut hits, mut total) = (0, 0);
        for q in &questions {
            let exact = some.nearest_exhaustive(q, k);
            let found = some.nearest(q, k);
            assert_eq!(found.len(), k);
            assert!(found.windows(2).all(|w| w[0].similarity >= w[1].similarity));
            for n in &found {
                let i = usize::try_from(n.doc).unwrap() - 1;
                assert_eq!(
                    n.similarity.to_bits(),
                    dot(&some.values[i * dims..(i + 1) * dims], q).to_bits()
                );
            }
            hits += found
                .iter()
                .filter(|n| exact.iter().any(|(d, _)| *d == n.doc))
                .count();
            total += k;
        }
        let recall =
            f64::from(u32::try_from(hits).unwrap()) / f64::from(u32::try_from(total).unwrap());
        assert!(recall >= 0.9, "recall {recall}");
    }

    fn vectors(rows: &[[f32; 2]]) -> DocVectors {
        DocVectors::new(
            2,
            (1..=rows.len() as u64).collect(),
            rows.iter().flatten().copied().collect(),
            (1..=rows.len())
                .map(|i| (format!("id{i}"), format!("title {i}")))
                .collect(),
        )
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

    /// Deterministic pseudo-random values in -1..1 (a linear congruential generator).
    fn noise(seed: u64, n: usize) -> Vec<f32> {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    fn unit(mut v: Vec<f32>) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }

    #[test]
    fn nearest_equals_the_exhaustive_search() {
        let dims = 256;
        // Clusters of near-duplicates, exact duplicates (ties), a zero vector and one spike.
        let mut rows: Vec<Vec<f32>> = Vec::new();
        for c in 0..40u64 {
            let centre = unit(noise(c, dims));
            for j in 0..25u64 {
                let jitter = noise(1_000 + c * 100 + j, dims);
                rows.push(unit(
                    centre
                        .iter()
                        .zip(&jitter)
                        .map(|(a, b)| a + 0.05 * b)
                        .collect(),
                ));
            }
            rows.push(rows.last().unwrap().clone());
        }
        rows.push(vec![0.0; dims]);
        let mut spike = vec![0.0; dims];
        spike[7] = 1.0;
        rows.push(spike);
        let n = rows.len();
        let v = DocVectors::new(
            dims,
            (1..=n as u64).collect(),
            rows.concat(),
            (1..=n).map(|i| (format!("id{i}"), String::new())).collect(),
        );
        let mut queries: Vec<Vec<f32>> =
            (0..40u64).map(|s| unit(noise(50_000 + s, dims))).collect();
        // Queries close to a stored vector (many near-ties at the top), scaled ones, a one-hot.
        queries.push(v.values[dims * 30..dims * 31].to_vec());
        queries.push(noise(9, dims).iter().map(|x| x * 1e6).collect());
        queries.push(noise(10, dims).iter().map(|x| x * 1e-30).collect());
        let mut one_hot = vec![0.0; dims];
        one_hot[7] = -3.0;
        queries.push(one_hot);
        for (qi, q) in queries.iter().enumerate() {
            for k in [1, 5, 26, 50, n - 1, n, n + 3] {
                let fast: Vec<(u64, f32)> = v
                    .nearest(q, k)
                    .iter()
                    .map(|x| (x.doc, x.similarity))
                    .collect();
                let slow = v.nearest_exhaustive(q, k);
                assert_eq!(fast.len(), slow.len(), "query {qi}, k {k}");
                for (a, b) in fast.iter().zip(&slow) {
                    assert!(
                        a.0 == b.0 && a.1.to_bits() == b.1.to_bits(),
                        "query {qi}, k {k}: {fast:?} != {slow:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn vectors_too_wide_to_code_are_all_scored() {
        for dims in [MAX_CODED_DIMS + CODE_LANES, 250] {
            let rows: Vec<Vec<f32>> = (0..6u64).map(|s| unit(noise(s, dims))).collect();
            let v = DocVectors::new(
                dims,
                (1..=6).collect(),
                rows.concat(),
                (1..=6).map(|i| (format!("id{i}"), String::new())).collect(),
            );
            assert!(v.codes.codes.is_empty());
            let q = unit(noise(99, dims));
            let fast: Vec<(u64, f32)> = v
                .nearest(&q, 3)
                .iter()
                .map(|x| (x.doc, x.similarity))
                .collect();
            assert_eq!(fast, v.nearest_exhaustive(&q, 3));
        }
    }

    #[test]
    fn dot_codes_is_exact() {
        for n in [0, 16, 256, 496, MAX_CODED_DIMS] {
            let a: Vec<i16> = (0..n)
                .map(|i| if i % 3 == 0 { -2047 } else { 2047 })
                .collect();
            let b: Vec<i16> = (0..n)
                .map(|i| if i % 3 == 0 { -2047 } else { 2047 })
                .collect();
            assert_eq!(dot_codes(&a, &b), n as i64 * 2047 * 2047, "length {n}");
        }
    }
}
