//! How much of the exact answer a large corpus's inverted file keeps, and what a search costs:
//! for every question of the mix (`bench/mix.jsonl`, 150), the exact top 10 (every stored vector
//! scored, read from the index file) against `nearest` through the inverted file, at the probe
//! count and candidate count the server uses and at others around them. Recall@10 is the share of
//! the exact top 10 found in the answer's top 10, for a call asking 10 and for one asking 50 (the
//! hybrid plugin's pool); times are medians over the questions of one call each.
//!
//! ```sh
//! python3 bench/mix-corpus.py 1000000 corpus/python-summaries.jsonl > /tmp/corpus-1m.jsonl
//! TS_BENCH_CORPUS=/tmp/corpus-1m.jsonl TS_BENCH_CACHE=/tmp/ann-cache \
//!     cargo bench -p turnstile-corpus --bench ann_recall
//! ```
//!
//! `TS_BENCH_CACHE` keeps the index between runs (a million passages take minutes to index);
//! without it a temporary directory is used. The corpus must be large enough to have an inverted
//! file (32,768 passages or more).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use turnstile_corpus::{CorpusBytes, CorpusIndex, CorpusPool};

const K: usize = 10;
const POOL: usize = 50;

fn main() {
    let Some(path) = std::env::var_os("TS_BENCH_CORPUS") else {
        eprintln!("ann_recall: set TS_BENCH_CORPUS to a corpus of 32,768 passages or more");
        return;
    };
    let temporary = tempfile::tempdir().expect("temporary directory");
    let cache = std::env::var_os("TS_BENCH_CACHE")
        .map_or_else(|| temporary.path().to_owned(), std::path::PathBuf::from);
    let corpus = CorpusBytes {
        name: path.to_string_lossy().into_owned(),
        jsonl: std::fs::read(&path).expect("TS_BENCH_CORPUS"),
    };
    let started = Instant::now();
    let index = CorpusIndex::open_or_build(&corpus, &cache).expect("corpus index");
    let checked = started.elapsed();
    drop(corpus);
    let started = Instant::now();
    let pool = CorpusPool::new(&index, 1).expect("corpus pool");
    let loaded = started.elapsed();
    let Some((lists, probes)) = pool.vector_lists() else {
        eprintln!(
            "ann_recall: {} passages are searched whole",
            index.documents
        );
        return;
    };
    println!(
        "{} passages ({:?}): index {:?} in {checked:.2?}, loaded in {loaded:.2?}; {lists} lists, \
         {probes} probed; vector search {:.1} MB, term index {:.1} MB in memory",
        index.documents,
        index.origin,
        index.path.file_name().unwrap_or_default(),
        pool.vector_search_bytes() as f64 / 1e6,
        pool.term_index_bytes() as f64 / 1e6,
    );
    let questions = questions();
    let vectors: Vec<Vec<f32>> = questions
        .iter()
        .map(|q| pool.embed(q).expect("the shipped model embeds"))
        .collect();
    let started = Instant::now();
    let exact = exact_top(&index.path, &vectors, POOL);
    println!(
        "exact top {POOL} of {} questions by scoring every stored vector: {:.1?}",
        vectors.len(),
        started.elapsed()
    );
    let session = pool.session().expect("session");
    println!(
        "| probes | candidates (k = 10 / 50) | recall@10, k = 10 | recall@10, k = 50 | recall@50, k = 50 | median µs, k = 10 | median µs, k = 50 |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let grid: [(usize, Rescore); 8] = [
        (probes, rescore),
        (16, rescore),
        (24, rescore),
        (32, rescore),
        (48, rescore),
        (64, rescore),
        (probes, |k| k),
        (probes, |k| 2 * k + 20),
    ];
    for (p, rescored) in grid {
        let (mut at10_10, mut at10_50, mut at50_50) = (0usize, 0usize, 0usize);
        let (mut t10, mut t50) = (Vec::new(), Vec::new());
        for (v, truth) in vectors.iter().zip(&exact) {
            let call = |k: usize, times: &mut Vec<Duration>| {
                let started = Instant::now();
                let found = session
                    .nearest_probing(v, k, p, rescored(k))
                    .expect("nearest");
                times.push(started.elapsed());
                found
            };
            let found10 = call(K, &mut t10);
            let found50 = call(POOL, &mut t50);
            let kept = |found: &[(u64, f32)], n: usize| {
                let truth: HashSet<u64> = truth[..n.min(truth.len())].iter().copied().collect();
                found[..n.min(found.len())]
                    .iter()
                    .filter(|(d, _)| truth.contains(d))
                    .count()
            };
            at10_10 += kept(&found10, K);
            at10_50 += kept(&found50, K);
            at50_50 += kept(&found50, POOL);
        }
        let n = vectors.len() as f64;
        println!(
            "| {p} | {} / {} | {:.4} | {:.4} | {:.4} | {:.0} | {:.0} |",
            rescored(K),
            rescored(POOL),
            at10_10 as f64 / (n * K as f64),
            at10_50 as f64 / (n * K as f64),
            at50_50 as f64 / (n * POOL as f64),
            median(&mut t10),
            median(&mut t50),
        );
    }
}

/// Candidates scored exactly for `k` wanted.
type Rescore = fn(usize) -> usize;

/// Candidates scored exactly for `k` wanted, as the server does (`vectors::rescored`).
fn rescore(k: usize) -> usize {
    k + 10
}

/// The mix's questions.
fn questions() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/mix.jsonl"))
        .expect("bench/mix.jsonl");
    text.lines()
        .map(|line| {
            let body: serde_json::Value = serde_json::from_str(line).expect("a JSON body");
            body["question"].as_str().expect("a question").to_owned()
        })
        .collect()
}

/// Per question, the rowids of its `k` most similar stored vectors (ties by rowid), every vector
/// of the index file scored.
fn exact_top(index: &std::path::Path, questions: &[Vec<f32>], k: usize) -> Vec<Vec<u64>> {
    let conn =
        rusqlite::Connection::open_with_flags(index, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("index file");
    let mut stmt = conn
        .prepare("SELECT doc, v FROM vectors ORDER BY doc")
        .expect("vectors");
    let mut rows = stmt.query([]).expect("vectors");
    let mut best: Vec<Vec<(f32, u64)>> = vec![Vec::new(); questions.len()];
    let mut v: Vec<f32> = Vec::new();
    while let Some(row) = rows.next().expect("a row") {
        let doc = row.get::<_, i64>(0).expect("doc").unsigned_abs();
        v.clear();
        v.extend(
            row.get_ref(1)
                .expect("v")
                .as_blob()
                .expect("a blob")
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        for (q, kept) in questions.iter().zip(&mut best) {
            let s: f32 = dot(&v, q);
            kept.push((s, doc));
            if kept.len() >= 4 * k {
                keep_best(kept, k);
            }
        }
    }
    best.into_iter()
        .map(|mut kept| {
            keep_best(&mut kept, k);
            kept.into_iter().map(|(_, d)| d).collect()
        })
        .collect()
}

fn keep_best(kept: &mut Vec<(f32, u64)>, k: usize) {
    kept.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    kept.truncate(k);
}

/// The server's dot product (eight sums), so similarities compare to the bit.
fn dot(a: &[f32], b: &[f32]) -> f32 {
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

fn median(times: &mut [Duration]) -> f64 {
    times.sort_unstable();
    times
        .get(times.len() / 2)
        .map_or(0.0, |t| t.as_secs_f64() * 1e6)
}
