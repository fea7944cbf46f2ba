//! An inverted file over the document vectors, for corpora too large to scan per question: built
//! and stored with the index, loaded as it is.
//!
//! From [`MIN_DOCUMENTS`] up, the documents are grouped into `2⌈√n⌉` lists around unit centroids
//! by spherical k-means (cosine; trained on an evenly spaced sample, first centroids drawn with a
//! fixed seed, each round's assignment on every core: deterministic), and each list is then split
//! in two by 2-means over its members, so a corpus gets up to `4⌈√n⌉` lists. They are stored in
//! the `ivf` table: per list its centroid, its members (positions in rowid order) and their
//! vectors quantised to 8-bit integers with one scale per document. A question is compared with
//! every centroid, then the members of its [`PROBES`] nearest lists are scored by their integer
//! codes; the best few by that estimate (`k + 10` for `k` wanted) are the candidates the caller
//! scores exactly (`vectors.rs`). The answer is approximate — a document in a list not probed, or
//! ranked too low by its codes, is not found — which is why smaller corpora, the shipped one
//! included, keep the exhaustive scan and its exact answer. Recall against the exact answer is
//! measured by `corpus/benches/ann_recall.rs`.
//!
//! Memory: `dims` bytes + 8 per document (codes, scale, position), and the centroids
//! (`4 × dims × 4⌈√n⌉` bytes): 268 MB at a million 256-dimension documents, where their f32
//! vectors, which stay on disk, would take 1 GB.

use rusqlite::{Connection, Transaction, params};

use super::parallel;

/// The smallest corpus searched through its inverted file; below it every document is scanned
/// (exactly).
pub(crate) const MIN_DOCUMENTS: usize = 32_768;
/// Lists a question searches: a fixed number, so a search grows as √n, not as n.
pub(crate) const PROBES: usize = 40;
/// Rounds of k-means (assign, re-centre) over the training sample.
const ROUNDS: usize = 8;
/// Rounds of 2-means when a list is split in two.
const SPLIT_ROUNDS: usize = 4;
/// Training sample: about this many documents per list, evenly spaced.
const SAMPLE_PER_LIST: usize = 32;
/// The largest code (8 bits with the sign).
pub(crate) const CODE_MAX: f32 = 127.0;
/// Vectors read back at once when every document is assigned to its list.
const ASSIGN_CHUNK: usize = 16_384;

/// Lists k-means makes for `n` documents: `2⌈√n⌉`; each is then split in two ([`split`]), so
/// a corpus gets up to `4⌈√n⌉` lists (4,000 of about 250 documents at a million). With a fixed
/// number of probes, recall barely depends on the number of lists, and what a question scans
/// shrinks as they grow; the build's cost grows with the lists k-means makes (every document is
/// compared with every centroid), which is why the last doubling is a split of each list.
/// Measured at 100,000 documents (`explore_lists_and_probes`): with 32 probes, 317, 634 and 1,268
/// k-means lists keep 0.969, 0.967 and 0.964 of the exact top 10 within the lists probed,
/// scanning 9,970, 5,181 and 2,578 documents.
pub(crate) fn list_count(n: usize) -> usize {
    let root = n.isqrt();
    2 * (root + usize::from(root * root < n))
}

/// Builds the inverted file of the `vectors` table (every document's f32 vector, `dims` each,
/// rowid order) into the `ivf` table when there are at least [`MIN_DOCUMENTS`]; an empty table
/// otherwise. Reads the vectors back twice (the sample, then all of them in chunks): never
/// every f32 vector in memory at once.
pub(crate) fn build(tx: &Transaction<'_>, dims: usize) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE ivf (list INTEGER PRIMARY KEY, centroid BLOB NOT NULL,
             members BLOB NOT NULL, codes BLOB NOT NULL, scales BLOB NOT NULL);",
    )?;
    let n: i64 = tx.query_row("SELECT count(*) FROM vectors", [], |r| r.get(0))?;
    let n = usize::try_from(n).unwrap_or(0);
    if n < MIN_DOCUMENTS || dims == 0 {
        return Ok(());
    }
    let count = list_count(n);
    let sample_size = (count * SAMPLE_PER_LIST).min(n);
    let mut sample = Vec::with_capacity(sample_size * dims);
    let mut next = 0;
    for_each_vector(tx, dims, |position, v| {
        if next < sample_size && position == next * n / sample_size {
            sample.extend_from_slice(v);
            next += 1;
        }
    })?;
    let centroids = train(&sample, dims, count);
    drop(sample);
    // Every document's list, code and scale, in position order.
    let mut lists = Vec::with_capacity(n);
    let mut codes = Vec::with_capacity(n * dims);
    let mut scales = Vec::with_capacity(n);
    let mut chunk: Vec<f32> = Vec::with_capacity(ASSIGN_CHUNK * dims);
    let mut assign = |chunk: &mut Vec<f32>| {
        let rows: Vec<&[f32]> = chunk.chunks_exact(dims).collect();
        lists.extend(parallel::map(&rows, |v| {
            nearest_centroid(&centroids, dims, v)
        }));
        for v in &rows {
            scales.push(quantize(v, &mut codes));
        }
        chunk.clear();
    };
    for_each_vector(tx, dims, |_, v| {
        chunk.extend_from_slice(v);
        if chunk.len() == ASSIGN_CHUNK * dims {
            assign(&mut chunk);
        }
    })?;
    assign(&mut chunk);
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); count];
    for (position, &list) in lists.iter().enumerate() {
        members[list].push(u32::try_from(position).unwrap_or(u32::MAX));
    }
    drop(lists);
    // Each list split in two around its own two centroids (from the documents' codes), every
    // core taking its share of the lists: twice the lists for the price of assigning to half.
    let coded = Coded {
        dims,
        codes: &codes,
        scales: &scales,
    };
    let halves = parallel::map(&members, |m| split(&coded, m));
    let (mut centroids, mut members) = (Vec::with_capacity(2 * count * dims), Vec::new());
    for half in halves.into_iter().flatten() {
        centroids.extend(half.0);
        members.push(half.1);
    }
    let mut insert = tx.prepare(
        "INSERT INTO ivf (list, centroid, members, codes, scales) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (list, (centroid, members)) in centroids.chunks_exact(dims).zip(&members).enumerate() {
        let mut list_codes = Vec::with_capacity(members.len() * dims);
        let mut list_scales = Vec::with_capacity(members.len() * 4);
        for &m in members {
            let m = m as usize;
            list_codes.extend(
                codes[m * dims..(m + 1) * dims]
                    .iter()
                    .map(|c| c.to_le_bytes()[0]),
            );
            list_scales.extend_from_slice(&scales[m].to_le_bytes());
        }
        insert.execute(params![
            i64::try_from(list).unwrap_or(i64::MAX),
            le_bytes(centroid.iter().map(|x| x.to_le_bytes())),
            le_bytes(members.iter().map(|x| x.to_le_bytes())),
            list_codes,
            list_scales,
        ])?;
    }
    Ok(())
}

/// Every document's 8-bit codes and scale, in position order.
struct Coded<'a> {
    dims: usize,
    codes: &'a [i8],
    scales: &'a [f32],
}

impl Coded<'_> {
    /// The document at `position`, decoded (`scale × code`).
    fn vector(&self, position: u32) -> Vec<f32> {
        let p = position as usize;
        let scale = self.scales[p];
        self.codes[p * self.dims..(p + 1) * self.dims]
            .iter()
            .map(|c| scale * f32::from(*c))
            .collect()
    }
}

/// A list's members split in two by [`SPLIT_ROUNDS`] rounds of spherical 2-means over their
/// decoded codes, from two far-apart members (the one least like the first member, and the one
/// least like that): each half's unit centroid and members (ascending). A list of fewer than two
/// members, or whose members cannot be told apart, stays whole; an empty one is dropped.
fn split(coded: &Coded<'_>, members: &[u32]) -> Vec<(Vec<f32>, Vec<u32>)> {
    let dims = coded.dims;
    let vectors: Vec<Vec<f32>> = members.iter().map(|&m| coded.vector(m)).collect();
    let whole = |vectors: &[Vec<f32>], members: &[u32]| {
        let mut centroid = vec![0f32; dims];
        for v in vectors {
            for (c, x) in centroid.iter_mut().zip(v) {
                *c += x;
            }
        }
        normalise(&mut centroid);
        (centroid, members.to_vec())
    };
    if vectors.is_empty() {
        return Vec::new();
    }
    let farthest = |from: &[f32]| {
        let mut best = (f32::INFINITY, 0);
        for (i, v) in vectors.iter().enumerate() {
            let s = dot(v, from);
            if s < best.0 {
                best = (s, i);
            }
        }
        best.1
    };
    let a = farthest(&vectors[0]);
    let b = farthest(&vectors[a]);
    if a == b {
        return vec![whole(&vectors, members)];
    }
    let mut centres = [vectors[a].clone(), vectors[b].clone()];
    let mut side = vec![false; vectors.len()];
    for _ in 0..SPLIT_ROUNDS {
        for (s, v) in side.iter_mut().zip(&vectors) {
            *s = dot(v, &centres[1]) > dot(v, &centres[0]);
        }
        for (half, centre) in centres.iter_mut().enumerate() {
            let mut sum = vec![0f32; dims];
            for v in vectors
                .iter()
                .zip(&side)
                .filter(|(_, s)| **s == (half == 1))
            {
                for (c, x) in sum.iter_mut().zip(v.0) {
                    *c += x;
                }
            }
            if normalise(&mut sum) {
                *centre = sum;
            }
        }
    }
    let mut halves = Vec::with_capacity(2);
    for (half, centre) in centres.into_iter().enumerate() {
        let kept: Vec<u32> = members
            .iter()
            .zip(&side)
            .filter(|(_, s)| **s == (half == 1))
            .map(|(m, _)| *m)
            .collect();
        if !kept.is_empty() {
            halves.push((centre, kept));
        }
    }
    halves
}

/// Scales `v` to unit length; false (and `v` unchanged) for the zero vector.
fn normalise(v: &mut [f32]) -> bool {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    norm > 0.0
}

fn le_bytes<const N: usize>(values: impl Iterator<Item = [u8; N]>) -> Vec<u8> {
    values.flatten().collect()
}

/// Calls `f` with every document's position and vector, in rowid order.
fn for_each_vector(
    conn: &Connection,
    dims: usize,
    mut f: impl FnMut(usize, &[f32]),
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare("SELECT v FROM vectors ORDER BY doc")?;
    let mut rows = stmt.query([])?;
    let mut v = Vec::with_capacity(dims);
    let mut position = 0;
    while let Some(row) = rows.next()? {
        v.clear();
        v.extend(
            row.get_ref(0)?
                .as_blob()?
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        if v.len() != dims {
            return Err(corrupt("a vector of another size"));
        }
        f(position, &v);
        position += 1;
    }
    Ok(())
}

pub(crate) fn corrupt(what: &str) -> rusqlite::Error {
    rusqlite::Error::InvalidColumnType(0, what.into(), rusqlite::types::Type::Blob)
}

/// `count` unit centroids (row-major) for `sample` (unit vectors of `dims`, row-major), by
/// [`ROUNDS`] rounds of spherical k-means from distinct sample rows drawn with a fixed seed,
/// each round's assignment on every core.
pub(crate) fn train(sample: &[f32], dims: usize, count: usize) -> Vec<f32> {
    let rows: Vec<&[f32]> = sample.chunks_exact(dims).collect();
    let count = count.clamp(1, rows.len().max(1));
    let mut centroids: Vec<f32> = first_picks(rows.len(), count)
        .into_iter()
        .flat_map(|i| rows[i])
        .copied()
        .collect();
    for _ in 0..ROUNDS {
        let nearest = parallel::map(&rows, |v| nearest_centroid(&centroids, dims, v));
        let mut sums = vec![0f32; count * dims];
        for (v, &c) in rows.iter().zip(&nearest) {
            for (s, x) in sums[c * dims..(c + 1) * dims].iter_mut().zip(*v) {
                *s += x;
            }
        }
        for (centroid, sum) in centroids
            .chunks_exact_mut(dims)
            .zip(sums.chunks_exact(dims))
        {
            let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
            // A list no sample joined keeps its centroid.
            if norm > 0.0 {
                for (c, s) in centroid.iter_mut().zip(sum) {
                    *c = s / norm;
                }
            }
        }
    }
    centroids
}

/// `count` distinct positions below `n` (`count ≤ n`), drawn by xorshift from a fixed seed, in
/// the order drawn.
fn first_picks(n: usize, count: usize) -> Vec<usize> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut taken = vec![false; n];
    let mut picks = Vec::with_capacity(count);
    while picks.len() < count.min(n) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        #[allow(clippy::cast_possible_truncation)] // the remainder is below n, a usize
        let i = (state % n as u64) as usize;
        if !taken[i] {
            taken[i] = true;
            picks.push(i);
        }
    }
    picks
}

/// The index of the centroid most similar to `v` (the first of equals).
fn nearest_centroid(centroids: &[f32], dims: usize, v: &[f32]) -> usize {
    let mut best = (f32::NEG_INFINITY, 0);
    for (c, centroid) in centroids.chunks_exact(dims).enumerate() {
        let s = dot(centroid, v);
        if s > best.0 {
            best = (s, c);
        }
    }
    best.1
}

/// Appends `values` coded as integers of at most [`CODE_MAX`] to `codes` and returns their
/// scale, `max |value| / CODE_MAX` (0 for a zero vector): `value ≈ scale × code`.
pub(crate) fn quantize(values: &[f32], codes: &mut Vec<i8>) -> f32 {
    let scale = values.iter().fold(0f32, |m, x| m.max(x.abs())) / CODE_MAX;
    codes.extend(values.iter().map(|x| {
        let code = if scale > 0.0 {
            (x / scale).round().clamp(-CODE_MAX, CODE_MAX)
        } else {
            0.0
        };
        #[allow(clippy::cast_possible_truncation)] // within ±127 by the clamp
        let code = code as i8;
        code
    }));
    scale
}

pub(crate) fn floats(blob: &[u8]) -> impl Iterator<Item = f32> + '_ {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The dot product of two vectors: their cosine similarity when both have unit length.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
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
    use crate::inverted_file::InvertedFile;

    /// Builds the inverted file of a built index again (`TS_IVF_INDEX=…sqlite`), in place: for
    /// measuring a change of the inverted file on a large index without building it all again
    /// (its checksum file must then be written again). By hand, in release.
    #[test]
    #[ignore = "rewrites a large built index; run by hand in release"]
    fn rebuild_the_inverted_file_of_a_built_index() {
        let Some(path) = std::env::var_os("TS_IVF_INDEX") else {
            return;
        };
        let mut conn = Connection::open(path).unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute_batch("DROP TABLE ivf;").unwrap();
        let started = std::time::Instant::now();
        build(&tx, 256).unwrap();
        tx.commit().unwrap();
        let lists: i64 = conn
            .query_row("SELECT count(*) FROM ivf", [], |r| r.get(0))
            .unwrap();
        println!("{lists} lists built in {:.1?}", started.elapsed());
    }

    /// Recall@10 and documents scanned for list counts and probes around the shipped ones, on a
    /// built index (`TS_IVF_INDEX=…sqlite`) and the mix's questions. By hand, in release:
    /// `TS_IVF_INDEX=… cargo test --release -p turnstile-corpus --lib -- --ignored explore --nocapture`.
    #[test]
    #[ignore = "explores on a large built index; run by hand in release"]
    fn explore_lists_and_probes() {
        let Some(path) = std::env::var_os("TS_IVF_INDEX") else {
            return;
        };
        let conn = Connection::open(path).unwrap();
        let dims = 256;
        let mut values = Vec::new();
        for_each_vector(&conn, dims, |_, v| values.extend_from_slice(v)).unwrap();
        let n = values.len() / dims;
        let model = crate::vectors::model().unwrap();
        let weights = crate::vectors::load_weights(&conn, model).unwrap();
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/mix.jsonl"))
                .unwrap();
        let queries: Vec<Vec<f32>> = text
            .lines()
            .map(|l| {
                let body: serde_json::Value = serde_json::from_str(l).unwrap();
                model.embed(body["question"].as_str().unwrap(), &weights)
            })
            .collect();
        let truths: Vec<Vec<u32>> = parallel::map(&queries, |q| exact(&values, dims, q, 10));
        for factor in [1usize, 2, 4] {
            let count = list_count(n) * factor;
            let sample_size = (count * SAMPLE_PER_LIST).min(n);
            let sample: Vec<f32> = (0..sample_size)
                .flat_map(|s| {
                    values[(s * n / sample_size) * dims..(s * n / sample_size + 1) * dims].to_vec()
                })
                .collect();
            let started = std::time::Instant::now();
            let centroids = train(&sample, dims, count);
            let rows: Vec<&[f32]> = values.chunks_exact(dims).collect();
            let lists = parallel::map(&rows, |v| nearest_centroid(&centroids, dims, v));
            let trained = started.elapsed();
            let mut members: Vec<Vec<u32>> = vec![Vec::new(); count];
            for (p, &l) in lists.iter().enumerate() {
                members[l].push(u32::try_from(p).unwrap());
            }
            let largest = members.iter().map(Vec::len).max().unwrap();
            for probes in [16, 32, 64, 128] {
                let (mut hits, mut scanned) = (0usize, 0usize);
                for (q, truth) in queries.iter().zip(&truths) {
                    let mut scored: Vec<(f32, usize)> = centroids
                        .chunks_exact(dims)
                        .map(|c| dot(c, q))
                        .enumerate()
                        .map(|(i, s)| (s, i))
                        .collect();
                    scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
                    let probed: std::collections::HashSet<u32> = scored[..probes.min(count)]
                        .iter()
                        .flat_map(|(_, l)| members[*l].iter().copied())
                        .collect();
                    scanned += probed.len();
                    hits += truth.iter().filter(|t| probed.contains(t)).count();
                }
                println!(
                    "n {n} lists {count} (largest {largest}, trained+assigned {trained:.1?}) probes {probes}: recall@10 upper bound {:.4}, scanned {:.0} per question",
                    hits as f64 / (10.0 * queries.len() as f64),
                    scanned as f64 / queries.len() as f64
                );
            }
        }
    }

    /// `per` noisy unit vectors around each of `groups` random unit directions, interleaved
    /// (document `i` is in group `i % groups`).
    fn clustered(groups: usize, per: usize, dims: usize) -> Vec<f32> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            #[allow(clippy::cast_precision_loss)]
            let x = (state >> 11) as f32 / (1u64 << 53) as f32;
            x - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..groups)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect();
        let mut values = Vec::with_capacity(groups * per * dims);
        for _ in 0..per {
            for centre in &centres {
                let mut v: Vec<f32> = centre.iter().map(|c| c + 0.3 * next()).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                values.extend(v);
            }
        }
        values
    }

    /// An in-memory index file with a `vectors` table of `values` (rowids from 1) and its
    /// inverted file built.
    fn built(values: &[f32], dims: usize) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute_batch("CREATE TABLE vectors (doc INTEGER PRIMARY KEY, v BLOB NOT NULL);")
            .unwrap();
        for (i, v) in values.chunks_exact(dims).enumerate() {
            let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            tx.execute(
                "INSERT INTO vectors (doc, v) VALUES (?1, ?2)",
                params![i64::try_from(i).unwrap() + 1, blob],
            )
            .unwrap();
        }
        build(&tx, dims).unwrap();
        tx.commit().unwrap();
        conn
    }

    fn exact(values: &[f32], dims: usize, query: &[f32], k: usize) -> Vec<u32> {
        let mut scored: Vec<(f32, u32)> = values
            .chunks_exact(dims)
            .enumerate()
            .map(|(i, v)| (dot(v, query), u32::try_from(i).unwrap()))
            .collect();
        scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(k).map(|(_, i)| i).collect()
    }

    #[test]
    fn a_small_corpus_gets_no_inverted_file() {
        let dims = 16;
        let conn = built(&clustered(8, 100, dims), dims);
        let lists: i64 = conn
            .query_row("SELECT count(*) FROM ivf", [], |r| r.get(0))
            .unwrap();
        assert_eq!(lists, 0);
        assert!(InvertedFile::load(&conn, dims, 800).unwrap().is_none());
        assert_eq!(list_count(MIN_DOCUMENTS), 364); // 2⌈√32768⌉ = 2 × 182 (181² = 32761)
    }

    /// Built and stored once, loaded as stored: every document in exactly one list, the same
    /// lists from a second build, most of the exact answer found for questions near documents
    /// and far from any, and a damaged table refused on load.
    #[test]
    fn the_stored_inverted_file_keeps_most_of_the_exact_answer() {
        let dims = 32;
        let groups = 256;
        let values = clustered(groups, MIN_DOCUMENTS.div_ceil(groups), dims);
        let n = values.len() / dims;
        let conn = built(&values, dims);
        let file = InvertedFile::load(&conn, dims, n)
            .unwrap()
            .expect("an inverted file");
        assert!(
            (list_count(n)..=2 * list_count(n)).contains(&file.lists()),
            "{} lists",
            file.lists()
        );
        let mut all = file.order().to_vec();
        all.sort_unstable();
        assert_eq!(all, (0..u32::try_from(n).unwrap()).collect::<Vec<_>>());
        let lists = |c: &Connection| -> Vec<Vec<u8>> {
            c.prepare("SELECT members FROM ivf ORDER BY list")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        assert_eq!(lists(&conn), lists(&built(&values, dims)), "deterministic");

        let k = 10;
        let (mut hits, mut total) = (0, 0);
        let mut queries: Vec<Vec<f32>> = (0..40)
            .map(|i| values[i * 97 * dims..(i * 97 + 1) * dims].to_vec())
            .collect();
        queries.extend(
            clustered(7, 3, dims)
                .chunks_exact(dims)
                .map(<[f32]>::to_vec),
        );
        for q in &queries {
            let truth = exact(&values, dims, q, k);
            // As many candidates as the server scores exactly: `k + 10`, not more.
            let wanted = crate::vectors::rescored(k);
            let candidates = file.candidates(q, PROBES, wanted);
            assert!(candidates.len() <= wanted);
            // No document's exact similarity passes its bound; rows are where the flat
            // vectors hold it.
            for c in &candidates {
                let p = c.position as usize;
                let exact = f64::from(dot(&values[p * dims..(p + 1) * dims], q));
                assert!(exact <= c.high, "{exact} above its bound {}", c.high);
                assert!(
                    c.high - exact < 0.1,
                    "a loose bound: {} for {exact}",
                    c.high
                );
                assert_eq!(file.order()[c.row as usize], c.position);
            }
            let found: Vec<u32> = candidates.iter().map(|c| c.position).collect();
            hits += truth.iter().filter(|t| found.contains(t)).count();
            total += k;
        }
        let recall =
            f64::from(u32::try_from(hits).unwrap()) / f64::from(u32::try_from(total).unwrap());
        assert!(recall >= 0.95, "recall {recall}");

        conn.execute("UPDATE ivf SET scales = zeroblob(4) WHERE list = 3", [])
            .unwrap();
        assert!(
            InvertedFile::load(&conn, dims, n).is_err(),
            "inconsistent sizes"
        );
        conn.execute(
            "UPDATE ivf SET members = (SELECT members FROM ivf WHERE list = 1), \
             codes = (SELECT codes FROM ivf WHERE list = 1), \
             scales = (SELECT scales FROM ivf WHERE list = 1) WHERE list = 3",
            [],
        )
        .unwrap();
        assert!(
            InvertedFile::load(&conn, dims, n).is_err(),
            "a document in two lists"
        );
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
