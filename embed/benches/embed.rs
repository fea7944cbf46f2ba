//! What embedding one question costs with the shipped static model (tokenize, sum the token
//! vectors, normalise): the semantic part's first half (`docs/RETRIEVAL.md`).

use criterion::{Criterion, criterion_group, criterion_main};
use turnstile_embed::{Embedder, TokenWeights};

fn embed(c: &mut Criterion) {
    let Ok(model) = Embedder::shipped() else {
        panic!("the shipped model loads");
    };
    let weights = TokenWeights::uniform(model.vocabulary());
    let mut group = c.benchmark_group("embed");
    for (name, question) in [
        ("short", "parse command line arguments"),
        (
            "long",
            "call a blocking function from async code without stalling the event loop, \
             and get its result back when it is done",
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| model.embed(std::hint::black_box(question), &weights))
        });
    }
    group.finish();
}

criterion_group!(benches, embed);
criterion_main!(benches);
