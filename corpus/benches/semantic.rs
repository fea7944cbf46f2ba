//! What the semantic half of a hybrid request costs on the shipped corpus (6,090 documents):
//! embedding one question with the shipped static model and the corpus's token weights, and the
//! brute-force `nearest` search for its 50 best documents (dot products over every document's
//! vector, then their ids and titles), beside the lexical pool it is fused with (`rank` 50 deep)
//! for scale. Criterion medians, one run; `docs/RETRIEVAL.md` reports them.
//!
//! `cargo bench -p turnstile-corpus --bench semantic`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use turnstile_corpus::{CorpusIndex, CorpusPool, read_corpus};

const QUESTION: &str = "How do I parse command line arguments?";
/// The hybrid plugin's expression for the question.
const EXPRESSION: &str = "\"parse\" OR \"command\" OR \"line\" OR \"arguments\"";
const POOL: u32 = 50;

fn bench(c: &mut Criterion) {
    let cache = tempfile::tempdir().expect("temporary directory");
    let corpus = read_corpus(None).expect("embedded corpus");
    let index = CorpusIndex::open_or_build(&corpus, cache.path()).expect("corpus index");
    let pool = CorpusPool::new(&index, 1).expect("corpus pool");
    let session = pool.session().expect("session");
    let vector = pool.embed(QUESTION).expect("the shipped model embeds");

    let mut group = c.benchmark_group("semantic");
    group.bench_function("embed question", |b| {
        b.iter(|| {
            pool.embed(black_box(QUESTION))
                .expect("the shipped model embeds")
        })
    });
    group.bench_function("nearest 50", |b| {
        b.iter(|| session.nearest(black_box(&vector), POOL).expect("nearest"))
    });
    group.bench_function("embed + nearest 50", |b| {
        b.iter(|| {
            let v = pool
                .embed(black_box(QUESTION))
                .expect("the shipped model embeds");
            session.nearest(&v, POOL).expect("nearest")
        })
    });
    group.bench_function("rank 50 (lexical pool, for scale)", |b| {
        b.iter(|| session.rank(black_box(EXPRESSION), POOL).expect("rank"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
