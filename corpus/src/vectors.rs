//! Document vectors for semantic search: computed once per index build with the embedding model
//! (`turnstile-embed`) and the corpus's own token weights, on every core, stored in the index
//! (`token_weights`, `vectors`, and for a large corpus its inverted file, `ivf.rs`).
//!
//! A corpus below [`MIN_DOCUMENTS`](super::ivf::MIN_DOCUMENTS) is held in memory and searched by
//! brute force: a scan of 12-bit integer copies of the vectors (half the memory to stream,
//! integer arithmetic) with an error bound per document, then the exact f32 dot product for the
//! few documents the bounds cannot rule out, so the answer is the exhaustive f32 search's, to the
//! bit (`corpus/benches/semantic.rs` measures it). A larger one is searched through its inverted
//! file, and only the candidates it gives are scored exactly, their f32 vectors read from the
//! flat file beside the index (`flat.rs`): the vectors of a million documents (1 GB) never come
//! into memory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use rusqlite::{Connection, Transaction, params};
use turnstile_embed::{Embedder, TokenWeights};

use super::flat::FlatVectors;
use super::inverted_file::{Candidate, InvertedFile};
use super::ivf::{self, dot};
use super::labels::Labels;
use super::passage_vectors::{PassageKey, PassageStore};
use super::{CorpusError, Document, parallel};

/// The text a document is embedded from: its id, title and text, so that a question naming the
/// object (`shutil.rmtree`) and one describing it both find it.
pub(super) fn document_text(doc: &Document) -> String {
    format!("{} {} {}", doc.id, doc.title, doc.text)
}

/// The embedding model every index is built with and every question is embedded by.
pub(super) fn model() -> Result<&'static Embedder, CorpusError> {
    Embedder::shipped().map_err(|e| CorpusError::Embedding(e.to_string()))
}

/// Documents embedded (and stored) at once: each batch is split over every core.
const EMBED_BATCH: usize = 8_192;

/// Where an index build's document vectors come from.
pub(super) enum VectorSource<'a> {
    /// The shipped static model, with token weights from these documents.
    Shipped(&'a Embedder),
    /// A remote model's vectors, embedded into the store before the build
    /// (`passage_vectors`): looked up by each document's key, `keys[i]` the `i`th document's.
    Stored {
        store: &'a PassageStore,
        keys: &'a [PassageKey],
    },
}

impl VectorSource<'_> {
    /// Dimensions of the vectors.
    pub(super) fn dims(&self) -> usize {
        match self {
            Self::Shipped(model) => model.dims(),
            Self::Stored { store, .. } => store.dims(),
        }
    }
}

/// Stores every document's vector (little-endian f32, under its rowid), and for a large corpus
/// its inverted file (`ivf.rs`): from the shipped model ([`build_shipped`]) or from the store a
/// remote model's run filled (a document whose vector it does not hold fails the build: the run
/// embedded every one).
pub(super) fn build(
    tx: &Transaction<'_>,
    source: &VectorSource<'_>,
    docs: &[(i64, &Document)],
) -> rusqlite::Result<()> {
    let (store, keys) = match source {
        VectorSource::Shipped(model) => return build_shipped(tx, model, docs),
        VectorSource::Stored { store, keys } => (store, keys),
    };
    tx.execute_batch("CREATE TABLE vectors (doc INTEGER PRIMARY KEY, v BLOB NOT NULL);")?;
    let mut insert = tx.prepare("INSERT INTO vectors (doc, v) VALUES (?1, ?2)")?;
    for ((rowid, doc), key) in docs.iter().zip(*keys) {
        let blob = store.get_bytes(key)?.ok_or_else(|| {
            rusqlite::Error::InvalidColumnType(
                0,
                format!("no stored vector for document {}", doc.id),
                rusqlite::types::Type::Blob,
            )
        })?;
        insert.execute(params![rowid, blob])?;
    }
    ivf::build(tx, store.dims())
}

/// The text of `doc` a remote model is sent (and its vector is keyed by): [`document_text`] cut
/// to the bytes a model reads.
pub(super) fn embedded_text(doc: &Document) -> String {
    turnstile_embed::sent_text(&document_text(doc)).to_owned()
}

/// Weighs the model's tokens by their frequency in these documents ([`TokenWeights::sif`]),
/// embeds every document, and stores the weights and each vector (little-endian f32, under its
/// rowid); then, for a large corpus, its inverted file (`ivf.rs`). Tokenizing and embedding run
/// on every core; the documents are tokenized twice (to count, then to embed) so that no more
/// than a batch's tokens are ever held.
fn build_shipped(
    tx: &Transaction<'_>,
    model: &Embedder,
    docs: &[(i64, &Document)],
) -> rusqlite::Result<()> {
    let vocabulary = model.vocabulary();
    let counts = parallel::fold(
        docs,
        || vec![0u64; vocabulary],
        |counts, (_, d)| {
            for token in model.tokens(&document_text(d)) {
                if let Some(count) = counts.get_mut(token as usize) {
                    *count += 1;
                }
            }
        },
        |total, part| {
            for (t, p) in total.iter_mut().zip(part) {
                *t += p;
            }
        },
    );
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
    for batch in docs.chunks(EMBED_BATCH) {
        let blobs = parallel::map(batch, |(_, d)| {
            let v = model.embed(&document_text(d), &weights);
            v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()
        });
        for ((rowid, _), blob) in batch.iter().zip(blobs) {
            insert.execute(params![rowid, blob])?;
        }
    }
    ivf::build(tx, model.dims())
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

/// Every document's id and title, in memory, in rowid order, and what searching their vectors
/// needs: for a corpus searched whole, the vectors themselves (row-major) and their 12-bit
/// codes; for a large one, its inverted file (the vectors stay on disk).
pub(crate) struct DocVectors {
    dims: usize,
    docs: Vec<u64>,
    labels: Labels,
    search: Search,
}

/// How a corpus's vectors are searched.
enum Search {
    /// Every document, exactly: the vectors (row-major) and their codes.
    Whole { values: Vec<f32>, codes: Codes },
    /// The members of a question's nearest lists; candidates scored with their f32 vectors,
    /// read from the flat file beside the index.
    Lists {
        file: InvertedFile,
        flat: FlatVectors,
    },
}

/// Candidates scored exactly per question, for `k` wanted: the best of the lists' members by
/// their 8-bit codes, enough that one ranked too low by its codes is rarely missed
/// (`corpus/benches/ann_recall.rs` measures it).
pub(crate) fn rescored(k: usize) -> usize {
    k + 10
}

/// The vectors quantised to 12-bit integers, one scale per document (`value ≈ scale × code`, off
/// by at most `scale / 2`): what [`DocVectors::nearest`] scans first for a corpus searched whole.
/// Row `r` is the document at position `r`.
struct Codes {
    codes: Vec<i16>,
    /// Per document: its scale ([`quantize`]).
    scales: Vec<f64>,
    /// Per document: the sum of its codes' magnitudes (for the query's share of the error).
    magnitudes: Vec<f64>,
}

impl Codes {
    /// The rows of `values` coded in position order.
    fn new(values: &[f32], dims: usize) -> Self {
        let rows = if dims <= MAX_CODED_DIMS && dims.is_multiple_of(CODE_LANES) {
            values.len().checked_div(dims).unwrap_or(0)
        } else {
            0
        };
        let mut codes = Vec::with_capacity(rows * dims);
        let (mut scales, mut magnitudes) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
        for v in values.chunks_exact(dims.max(1)).take(rows) {
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
    /// Reads every document's rowid, id and title, and either the inverted file (`ivf`) or,
    /// when it is empty, every vector (`vectors`, each of `dims` values).
    /// A large corpus's flat vectors are opened beside the index at `path`.
    pub(super) fn load(conn: &Connection, dims: usize, path: &Path) -> rusqlite::Result<Self> {
        let (mut docs, mut labels) = (Vec::new(), Labels::default());
        let mut stmt = conn.prepare("SELECT rowid, id, title FROM docs ORDER BY rowid")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            docs.push(row.get::<_, i64>(0)?.unsigned_abs());
            let text = |i| row.get_ref(i)?.as_str().map_err(rusqlite::Error::from);
            labels.push(text(1)?, text(2)?);
        }
        let labels = labels.finish();
        if let Some(file) = InvertedFile::load(conn, dims, docs.len())? {
            let flat = FlatVectors::open(path, dims, docs.len())
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
            return Ok(Self {
                dims,
                docs,
                labels,
                search: Search::Lists { file, flat },
            });
        }
        let mut stmt = conn.prepare("SELECT doc, v FROM vectors ORDER BY doc")?;
        let mut rows = stmt.query([])?;
        let mut values = Vec::with_capacity(docs.len() * dims);
        let mut position = 0;
        while let Some(row) = rows.next()? {
            let blob = row.get_ref(1)?.as_blob()?;
            if blob.len() != dims * 4
                || docs.get(position) != Some(&row.get::<_, i64>(0)?.unsigned_abs())
            {
                return Err(rusqlite::Error::InvalidColumnType(
                    1,
                    format!(
                        "vector of {} bytes, not {}, or of no document",
                        blob.len(),
                        dims * 4
                    ),
                    rusqlite::types::Type::Blob,
                ));
            }
            values.extend(
                blob.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
            position += 1;
        }
        if position != docs.len() {
            return Err(rusqlite::Error::InvalidColumnType(
                1,
                "a document without a vector".into(),
                rusqlite::types::Type::Blob,
            ));
        }
        Ok(Self::new(dims, docs, values, labels))
    }

    /// A corpus searched whole.
    fn new(dims: usize, docs: Vec<u64>, values: Vec<f32>, labels: Labels) -> Self {
        let codes = Codes::new(&values, dims);
        Self {
            dims,
            docs,
            labels,
            search: Search::Whole { values, codes },
        }
    }

    /// For a large corpus, its lists and how many a search covers; `None`: every document is
    /// searched.
    pub(crate) fn lists(&self) -> Option<(usize, usize)> {
        match &self.search {
            Search::Lists { file, .. } => Some((file.lists(), ivf::PROBES.min(file.lists()))),
            Search::Whole { .. } => None,
        }
    }

    /// Bytes the search holds (vectors and codes, or the inverted file, and every document's
    /// id and title), for reports.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.labels.heap_bytes()
            + self.docs.capacity() * 8
            + match &self.search {
                Search::Lists { file, .. } => file.heap_bytes(),
                Search::Whole { values, codes } => {
                    values.len() * 4 + codes.codes.len() * 2 + codes.scales.len() * 16
                }
            }
    }

    /// Whether a document has this id.
    pub(crate) fn has_id(&self, id: &str) -> bool {
        self.labels.has_id(id)
    }

    /// The rowid of the document with this id, if any (no SQL: the ids are in memory).
    pub(crate) fn rowid_of(&self, id: &str) -> Option<u64> {
        self.docs.get(self.labels.position_of(id)?).copied()
    }

    /// Documents held (one vector each).
    pub(crate) fn len(&self) -> usize {
        self.docs.len()
    }

    /// The rowid, id and title of the document at `position` (rowid order), if any.
    pub(crate) fn document(&self, position: usize) -> Option<(u64, &str, &str)> {
        let (id, title) = self.labels.get(position)?;
        Some((*self.docs.get(position)?, id, title))
    }

    /// Dimensions of every vector.
    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// The `k` documents most similar to `query` (cosine: both sides are unit vectors or zero),
    /// best first, ties by rowid, each with its exact similarity ([`dot`] of its f32 vector). A
    /// zero query is near nothing: no documents.
    ///
    /// A corpus searched whole gets exactly what scoring each document with [`dot`] would give:
    /// the integer scan bounds each document's similarity from below and above; the `k`-th best
    /// lower bound is a floor the true `k`-th similarity cannot be under, so only documents whose
    /// upper bound reaches it are scored exactly, and those include every one of the true best
    /// `k`, ties too. A large one gets the best `k` of the candidates its inverted file gives,
    /// each read from the flat vectors and scored exactly unless its bound shows it cannot
    /// enter the best `k` scored before it (the same answer as scoring them all).
    #[cfg(test)]
    pub(crate) fn nearest(&self, query: &[f32], k: usize) -> std::io::Result<Vec<Near<'_>>> {
        self.nearest_probing(query, k, ivf::PROBES, rescored(k))
    }

    /// [`Self::nearest`] searching `probes` lists and scoring up to `wanted` candidates exactly
    /// (for a large corpus; for measuring recall).
    pub(crate) fn nearest_probing(
        &self,
        query: &[f32],
        k: usize,
        probes: usize,
        wanted: usize,
    ) -> std::io::Result<Vec<Near<'_>>> {
        if query.len() != self.dims || query.iter().all(|x| *x == 0.0) || k == 0 {
            return Ok(Vec::new());
        }
        let scored = match &self.search {
            Search::Whole { values, codes } => self.nearest_whole(values, codes, query, k),
            Search::Lists { file, flat } => {
                let candidates = file.candidates(query, probes, wanted.max(k));
                best(rescore(&candidates, flat, query, k)?, k)
            }
        };
        Ok(scored
            .into_iter()
            .filter_map(|(similarity, i)| {
                let (doc, id, title) = self.document(i)?;
                Some(Near {
                    doc,
                    id,
                    title,
                    similarity,
                })
            })
            .collect())
    }

    /// The exact search of a corpus searched whole: (similarity, position), best first.
    fn nearest_whole(
        &self,
        values: &[f32],
        codes: &Codes,
        query: &[f32],
        k: usize,
    ) -> Vec<(f32, usize)> {
        let searched = self.len();
        let q = QueryCodes::new(query);
        // Each document's lower and upper bound; the k-th best lower bound is the floor.
        let coded = !codes.scales.is_empty();
        let capacity = if coded { searched } else { 0 };
        let (mut highs, mut lows) = (
            Vec::with_capacity(capacity),
            Vec::<f64>::with_capacity(capacity),
        );
        if coded {
            for row in 0..searched {
                let c = &codes.codes[row * self.dims..(row + 1) * self.dims];
                let (scale, magnitude) = (codes.scales[row], codes.magnitudes[row]);
                #[allow(clippy::cast_precision_loss)]
                let estimate = scale * q.step * dot_codes(c, &q.codes) as f64;
                // |Σ δᵢqᵢ| ≤ scale/2 · ‖q‖₁ (the document's rounding), plus scale · Σ|cᵢ| · step/2
                // (the query's), plus f32 rounding of the exact product (Σ|vᵢqᵢ| ≤ max|v| ‖q‖₁,
                // max|v| = CODE_MAX · scale).
                let error = scale * 0.5 * q.l1
                    + scale * magnitude * q.step * 0.5
                    + ROUNDING_SLACK * scale * CODE_MAX * q.l1;
                highs.push(estimate + error);
                lows.push(estimate - error);
            }
        }
        let floor = if coded && searched > k {
            *lows.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a)).1
        } else {
            // Not coded (too many dimensions) or no more documents than `k`: score them all.
            f64::NEG_INFINITY
        };
        // (similarity, position); positions follow rowids, so ties go to the lower rowid.
        let scored: Vec<(f32, usize)> = (0..searched)
            .filter(|&i| highs.get(i).is_none_or(|high| *high >= floor))
            .map(|i| (dot(&values[i * self.dims..(i + 1) * self.dims], query), i))
            .collect();
        best(scored, k)
    }

    /// [`Self::nearest`] the plain way: every document scored with [`dot`] (what it must equal;
    /// `None` for a large corpus, whose vectors are not in memory).
    #[cfg(test)]
    pub(crate) fn nearest_exhaustive(&self, query: &[f32], k: usize) -> Vec<(u64, f32)> {
        let Search::Whole { values, .. } = &self.search else {
            return Vec::new();
        };
        let mut scored: Vec<(f32, usize)> = values
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

/// The exact similarity of each of `candidates` (best estimate first) that can still enter the
/// best `k`: (similarity, position). One whose bound is below the `k`-th best similarity scored
/// before it could not enter them, and is not read.
fn rescore(
    candidates: &[Candidate],
    flat: &FlatVectors,
    query: &[f32],
    k: usize,
) -> std::io::Result<Vec<(f32, usize)>> {
    let mut scored = Vec::with_capacity(candidates.len());
    // The best `k` similarities so far, the lowest on top.
    let mut kept: BinaryHeap<Reverse<Similarity>> = BinaryHeap::with_capacity(k + 1);
    let (mut vector, mut bytes) = (Vec::with_capacity(query.len()), Vec::new());
    for c in candidates {
        if kept.len() == k && kept.peek().is_some_and(|low| c.high < f64::from(low.0.0)) {
            continue;
        }
        flat.read(c.row, &mut vector, &mut bytes)?;
        let similarity = dot(&vector, query);
        kept.push(Reverse(Similarity(similarity)));
        if kept.len() > k {
            kept.pop();
        }
        scored.push((similarity, c.position as usize));
    }
    Ok(scored)
}

/// A similarity ordered by `total_cmp`.
#[derive(Clone, Copy, PartialEq)]
struct Similarity(f32);

impl Eq for Similarity {}

impl PartialOrd for Similarity {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Similarity {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The best `k` of `scored` (similarity, position), best first, ties by position.
fn best(mut scored: Vec<(f32, usize)>, k: usize) -> Vec<(f32, usize)> {
    let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, order);
        scored.truncate(k);
    }
    scored.sort_unstable_by(order);
    scored
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

    fn labels(all: impl Iterator<Item = (String, String)>) -> Labels {
        let mut labels = Labels::default();
        for (id, title) in all {
            labels.push(&id, &title);
        }
        labels.finish()
    }

    /// `nearest` of a corpus searched whole (it never reads a stored vector).
    fn near<'a>(v: &'a DocVectors, query: &[f32], k: usize) -> Vec<Near<'a>> {
        v.nearest(query, k).unwrap()
    }

    fn vectors(rows: &[[f32; 2]]) -> DocVectors {
        DocVectors::new(
            2,
            (1..=rows.len() as u64).collect(),
            rows.iter().flatten().copied().collect(),
            labels((1..=rows.len()).map(|i| (format!("id{i}"), format!("title {i}")))),
        )
    }

    fn found<'a>(near: &[Near<'a>]) -> Vec<(u64, &'a str, f32)> {
        near.iter().map(|n| (n.doc, n.id, n.similarity)).collect()
    }

    /// Candidates whose bound cannot reach the `k`-th best scored before them are not read, and
    /// the answer is the one scoring every candidate gives.
    #[test]
    fn rescoring_skips_only_candidates_that_cannot_enter_the_best() {
        let dims = 16;
        let rows = 400;
        let values = {
            let mut state = 0x2545_f491_4f6c_dd1d_u64;
            let mut values = Vec::with_capacity(rows * dims);
            for _ in 0..rows * dims {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                values.push(f32::from(u16::try_from(state >> 48).unwrap()) / 65536.0 - 0.5);
            }
            values
        };
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("index.sqlite");
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(crate::flat::path_beside(&index), bytes).unwrap();
        let flat = FlatVectors::open(&index, dims, rows).unwrap();
        assert!(
            FlatVectors::open(&index, dims, rows + 1).is_err(),
            "a size checked"
        );
        let query: Vec<f32> = values[..dims].iter().map(|x| -x).collect();
        // Bounds above each exact similarity by a varying margin, offered best bound first
        // (row r at position rows - 1 - r).
        let mut candidates: Vec<Candidate> = (0..rows)
            .map(|r| {
                let exact = f64::from(dot(&values[r * dims..(r + 1) * dims], &query));
                Candidate {
                    position: u32::try_from(rows - 1 - r).unwrap(),
                    row: u32::try_from(r).unwrap(),
                    high: exact + 0.01 * f64::from(u32::try_from(r % 7).unwrap()),
                }
            })
            .collect();
        candidates.sort_by(|a, b| b.high.total_cmp(&a.high));
        for k in [1, 5, 20] {
            let pruned = rescore(&candidates, &flat, &query, k).unwrap();
            let all: Vec<(f32, usize)> = candidates
                .iter()
                .map(|c| {
                    let r = c.row as usize;
                    (
                        dot(&values[r * dims..(r + 1) * dims], &query),
                        c.position as usize,
                    )
                })
                .collect();
            assert!(pruned.len() < all.len() / 2, "k {k}: {} read", pruned.len());
            assert_eq!(best(pruned, k), best(all, k), "k {k}");
        }
    }

    #[test]
    fn nearest_is_best_first_with_ties_by_document() {
        let v = vectors(&[[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [0.0, 1.0]]);
        assert_eq!(
            found(&near(&v, &[0.0, 1.0], 3)),
            vec![(2, "id2", 1.0), (4, "id4", 1.0), (3, "id3", 0.8)]
        );
        assert_eq!(near(&v, &[0.0, 1.0], 1)[0].title, "title 2");
        assert_eq!(near(&v, &[1.0, 0.0], 10).len(), 4);
    }

    #[test]
    fn a_zero_or_misshapen_query_is_near_nothing() {
        let v = vectors(&[[1.0, 0.0]]);
        assert!(near(&v, &[0.0, 0.0], 5).is_empty());
        assert!(near(&v, &[1.0], 5).is_empty());
        assert!(near(&v, &[1.0, 0.0], 0).is_empty());
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
            labels((1..=n).map(|i| (format!("id{i}"), String::new()))),
        );
        let mut queries: Vec<Vec<f32>> =
            (0..40u64).map(|s| unit(noise(50_000 + s, dims))).collect();
        // Queries close to a stored vector (many near-ties at the top), scaled ones, a one-hot.
        queries.push(rows[30].clone());
        queries.push(noise(9, dims).iter().map(|x| x * 1e6).collect());
        queries.push(noise(10, dims).iter().map(|x| x * 1e-30).collect());
        let mut one_hot = vec![0.0; dims];
        one_hot[7] = -3.0;
        queries.push(one_hot);
        for (qi, q) in queries.iter().enumerate() {
            for k in [1, 5, 26, 50, n - 1, n, n + 3] {
                let fast: Vec<(u64, f32)> = near(&v, q, k)
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
                labels((1..=6).map(|i| (format!("id{i}"), String::new()))),
            );
            let Search::Whole { codes, .. } = &v.search else {
                panic!("searched whole")
            };
            assert!(codes.codes.is_empty());
            let q = unit(noise(99, dims));
            let fast: Vec<(u64, f32)> = near(&v, &q, 3)
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
