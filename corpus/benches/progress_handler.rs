//! What the corpus call's time budget costs: the corpus work of one benchmark request (the
//! default plugin's expression for "How do I parse command line arguments?", ranked 20 deep,
//! then 5 snippets) through a session — SQLite's progress handler installed, the call's deadline
//! set and cleared around each query — beside the same statements on a plain read-only
//! connection with no handler. Criterion medians, side by side in one run.
//!
//! `cargo bench -p turnstile-corpus --bench progress_handler`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rusqlite::{Connection, OpenFlags, params};
use turnstile_corpus::{CorpusIndex, CorpusPool, read_corpus, sql};

/// The default plugin's expression for the benchmark question.
const EXPRESSION: &str = "\"parse\" OR \"command\" OR \"line\" OR \"arguments\"";
const POOL: u32 = 20;
const KEEP: usize = 5;

fn bench(c: &mut Criterion) {
    let cache = tempfile::tempdir().expect("temporary directory");
    let corpus = read_corpus(None).expect("embedded corpus");
    let index = CorpusIndex::open_or_build(&corpus, cache.path()).expect("corpus index");
    let pool = CorpusPool::new(&index, 1).expect("corpus pool");
    let plain = Connection::open_with_flags(&index.path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("plain connection");

    let mut group = c.benchmark_group("progress_handler");
    group.bench_function("session (time budget)", |b| {
        let session = pool.session().expect("session");
        b.iter(|| {
            let ranked = session.rank(EXPRESSION, POOL).expect("rank");
            for r in ranked.iter().take(KEEP) {
                black_box(session.snippet(EXPRESSION, r.doc).expect("snippet"));
            }
            ranked.len()
        });
    });
    group.bench_function("plain connection (no handler)", |b| {
        b.iter(|| {
            let mut rank = plain.prepare_cached(sql::RANK_SQL).expect("prepare");
            let docs: Vec<i64> = rank
                .query_map(params![EXPRESSION, POOL], |r| r.get::<_, i64>(0))
                .expect("rank")
                .collect::<Result<_, _>>()
                .expect("rows");
            let mut snippet = plain.prepare_cached(sql::SNIPPET_SQL).expect("prepare");
            for doc in docs.iter().take(KEEP) {
                black_box(
                    snippet
                        .query_row(params![EXPRESSION, doc], |r| r.get::<_, String>(0))
                        .expect("snippet"),
                );
            }
            docs.len()
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
