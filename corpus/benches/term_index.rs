//! The corpus work of one lexical request on the question mix, through FTS5 and through the term
//! index, side by side: `rank` 50 deep (the plugins' candidate pool) and a snippet for each of the
//! 5 sources kept. Each iteration takes the next of the mix's 150 questions (`bench/mix.jsonl`),
//! so a median is the mean over the mix. Criterion medians, one run; `docs/BENCHMARKS.md` reports
//! them.
//!
//! `cargo bench -p turnstile-corpus --bench term_index`
//!
//! With `TS_BENCH_CORPUS=FILE.jsonl` (e.g. the 16× corpus `bench/replicate-corpus.py` makes) the
//! same runs over that corpus; with `TS_BENCH_CACHE=DIR` its index file is kept there between
//! runs.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use turnstile_corpus::{CorpusBytes, CorpusIndex, CorpusPool, CorpusSession, Ranked, read_corpus};

const POOL: u32 = 50;
const KEEP: usize = 5;

mod support;

use support::mix;

fn bench(c: &mut Criterion) {
    let temporary = tempfile::tempdir().expect("temporary directory");
    // `TS_BENCH_CACHE=DIR` keeps the index file between runs (a 100,000-passage one takes
    // minutes to build).
    let cache = std::env::var_os("TS_BENCH_CACHE")
        .map_or_else(|| temporary.path().to_owned(), std::path::PathBuf::from);
    let corpus = match std::env::var_os("TS_BENCH_CORPUS") {
        Some(path) => CorpusBytes {
            name: path.to_string_lossy().into_owned(),
            jsonl: std::fs::read(&path).expect("TS_BENCH_CORPUS"),
        },
        None => read_corpus(None).expect("embedded corpus"),
    };
    let index = CorpusIndex::open_or_build(&corpus, &cache).expect("corpus index");
    let pool = CorpusPool::new(&index, 1).expect("corpus pool");
    let session = pool.session().expect("session");
    let mix = mix();
    println!(
        "{} documents; term index {:.1} MB in memory",
        index.documents,
        pool.term_index_bytes() as f64 / 1e6
    );

    type Rank = fn(&CorpusSession, &str, u32) -> Vec<Ranked>;
    type Snippet = fn(&CorpusSession, &str, u64) -> Option<String>;
    let paths: [(&str, Rank, Snippet); 2] = [
        (
            "fts5",
            |s, e, n| s.rank_by_fts5(e, n).expect("rank"),
            |s, e, d| s.snippet_by_fts5(e, d).expect("snippet"),
        ),
        (
            "term index",
            |s, e, n| s.rank(e, n).expect("rank"),
            |s, e, d| s.snippet(e, d).expect("snippet"),
        ),
    ];
    let kept: Vec<Vec<u64>> = mix
        .iter()
        .map(|e| {
            session.rank_by_fts5(e, POOL).expect("rank")[..]
                .iter()
                .take(KEEP)
                .map(|r| r.doc)
                .collect()
        })
        .collect();

    let mut group = c.benchmark_group(format!("mix of {} questions", mix.len()));
    for (name, rank, snippet) in paths {
        let mut i = 0;
        group.bench_function(format!("rank {POOL}, {name}"), |b| {
            b.iter(|| {
                i = (i + 1) % mix.len();
                rank(&session, black_box(&mix[i]), POOL)
            })
        });
        let mut i = 0;
        group.bench_function(format!("{KEEP} snippets, {name}"), |b| {
            b.iter(|| {
                i = (i + 1) % mix.len();
                for &doc in &kept[i] {
                    black_box(snippet(&session, &mix[i], doc));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
