//! Micro-benchmarks of the plugin path, through the public API:
//!
//! - `plugin_call/fault_error/{pooling,on_demand}`: the per-call overhead — a new `Store`, a fresh
//!   instance and one trivial call (the `fault` fixture with `mode=error` returns a typed error at
//!   once, without touching the corpus; `Plugin::retrieve` returns `Err`, as expected);
//! - `plugin_call/retrieval/{pooling,on_demand}`: a full retrieval call of the embedded default
//!   (hybrid) plugin for "How do I parse command line arguments?" (limit 5);
//! - `plugin_call/lexical/pooling`: the same call of the embedded lexical plugin, beside it;
//! - `hostcalls/calls/{0,10000}`: the `hostcalls` fixture calling `config::get` N times, from
//!   which one host-call round trip is derived and printed;
//! - `language_call/empty/{rust,python,javascript}`: the per-call overhead of a plugin in each
//!   language (the `hostcalls` fixtures with `calls=0`: a fresh instance and a call that returns
//!   nothing), pooled; one host call from each language is derived and printed;
//! - `corpus/search`: one FTS5 search on a held `CorpusSession`, with the expression the default
//!   plugin builds for the question above, limit 20.
//!
//! The corpus index and the precompiled plugins are cached in a temporary directory
//! (`$TMPDIR/turnstile-bench-cache`), reused by later runs.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use turnstile_corpus::{CorpusIndex, CorpusPool, read_corpus};
use turnstile_host::{
    Plugin, PluginConfig, PluginRuntime, PluginSource, Provision, RuntimeOptions,
};

const QUESTION: &str = "How do I parse command line arguments?";
/// What the default plugin searches for [`QUESTION`].
const EXPRESSION: &str = "\"parse\" OR \"command\" OR \"line\" OR \"arguments\"";
const HOST_CALLS: u32 = 10_000;

fn cache_dir() -> PathBuf {
    std::env::temp_dir().join("turnstile-bench-cache")
}

fn corpus_pool(cache: &Path) -> CorpusPool {
    let corpus = read_corpus(None).expect("embedded corpus");
    let index = CorpusIndex::open_or_build(&corpus, &cache.join("index")).expect("corpus index");
    CorpusPool::new(&index, 16).expect("corpus pool")
}

fn runtime(cache: &Path, pooling: bool) -> PluginRuntime {
    let mut options =
        RuntimeOptions::serving(4, Default::default()).with_cache(Some(cache.join("plugins")));
    // The pooling allocator against memory mapped per instance.
    options.pooling = pooling;
    let runtime = PluginRuntime::new(options).expect("plugin runtime");
    eprintln!(
        "runtime asked for pooling={pooling}: allocator {:?}",
        runtime.allocator()
    );
    runtime
}

fn load(
    runtime: &PluginRuntime,
    source: PluginSource,
    config: &[(&str, &str)],
    pool: &CorpusPool,
) -> Plugin {
    let config: PluginConfig = config
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Plugin::load(runtime, &source, Provision::new(pool.clone(), config)).expect("plugin loads")
}

fn fixture(path: &str) -> PluginSource {
    PluginSource::File(PathBuf::from(path))
}

/// Median wall time of `rounds` single calls (after a warm-up), outside criterion: used only to
/// print the derived host-call cost right away.
fn median_call(plugin: &Plugin, rounds: usize) -> Duration {
    for _ in 0..10 {
        black_box(plugin.retrieve(QUESTION, 5, 1).expect("hostcalls succeeds"));
    }
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            black_box(plugin.retrieve(QUESTION, 5, 1).expect("hostcalls succeeds"));
            start.elapsed()
        })
        .collect();
    times.sort();
    times[rounds / 2]
}

fn bench_plugin(c: &mut Criterion) {
    let cache = cache_dir();
    let pool = corpus_pool(&cache);
    let pooling = runtime(&cache, true);
    let on_demand = runtime(&cache, false);

    let mut group = c.benchmark_group("plugin_call");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (label, rt) in [("pooling", &pooling), ("on_demand", &on_demand)] {
        let fault = load(
            rt,
            fixture(turnstile_fixtures::FAULT),
            &[("mode", "error")],
            &pool,
        );
        assert!(fault.retrieve(QUESTION, 5, 1).is_err());
        group.bench_function(format!("fault_error/{label}"), |b| {
            b.iter(|| black_box(fault.retrieve(QUESTION, 5, 1).is_err()))
        });
    }
    for (label, rt) in [("pooling", &pooling), ("on_demand", &on_demand)] {
        let retrieval = load(rt, PluginSource::Embedded, &[], &pool);
        let sources = retrieval
            .retrieve(QUESTION, 5, 1)
            .expect("retrieval succeeds");
        assert_eq!(sources.len(), 5);
        group.bench_function(format!("retrieval/{label}"), |b| {
            b.iter(|| {
                black_box(
                    retrieval
                        .retrieve(QUESTION, 5, 1)
                        .expect("retrieval succeeds"),
                )
            })
        });
    }
    let lexical_file = cache.join("lexical.wasm");
    std::fs::write(&lexical_file, turnstile_host::embedded_lexical()).expect("write lexical");
    let lexical = load(&pooling, PluginSource::File(lexical_file), &[], &pool);
    assert_eq!(lexical.retrieve(QUESTION, 5, 1).expect("lexical").len(), 5);
    group.bench_function("lexical/pooling", |b| {
        b.iter(|| black_box(lexical.retrieve(QUESTION, 5, 1).expect("lexical succeeds")))
    });
    group.finish();

    let mut group = c.benchmark_group("hostcalls");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let calls_0 = load(
        &pooling,
        fixture(turnstile_fixtures::HOSTCALLS),
        &[("calls", "0")],
        &pool,
    );
    let calls_n = load(
        &pooling,
        fixture(turnstile_fixtures::HOSTCALLS),
        &[("calls", &HOST_CALLS.to_string())],
        &pool,
    );
    for (n, plugin) in [(0, &calls_0), (HOST_CALLS, &calls_n)] {
        group.bench_function(format!("calls/{n}"), |b| {
            b.iter(|| black_box(plugin.retrieve(QUESTION, 5, 1).expect("hostcalls succeeds")))
        });
    }
    group.finish();
    let (t0, tn) = (median_call(&calls_0, 201), median_call(&calls_n, 201));
    println!(
        "host call round trip (config::get): (t({HOST_CALLS}) - t(0)) / {HOST_CALLS} = {:.1} ns \
         [medians of 201 single calls: t(0) = {:?}, t({HOST_CALLS}) = {:?}]",
        (tn.as_nanos() as f64 - t0.as_nanos() as f64) / f64::from(HOST_CALLS),
        t0,
        tn
    );

    // The per-call overhead per language: a plugin that returns nothing (`hostcalls` with
    // `calls=0`: a fresh instance of the component's memory image, the call boundary, the
    // result checks), in Rust, Python and JavaScript; and one host call from each.
    let mut group = c.benchmark_group("language_call");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5));
    // The Python and JavaScript fixtures come from `cargo xtask plugins` (target/plugins).
    let plugins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins");
    let (python, javascript) = (
        plugins.join("hostcalls-py.wasm"),
        plugins.join("hostcalls-js.wasm"),
    );
    assert!(
        python.is_file() && javascript.is_file(),
        "{} missing: run cargo xtask plugins",
        python.display()
    );
    let languages = [
        ("rust", turnstile_fixtures::HOSTCALLS),
        ("python", python.to_str().expect("a UTF-8 path")),
        ("javascript", javascript.to_str().expect("a UTF-8 path")),
    ];
    let mut round_trips = Vec::new();
    for (language, path) in languages {
        let empty = load(&pooling, fixture(path), &[("calls", "0")], &pool);
        group.bench_function(format!("empty/{language}"), |b| {
            b.iter(|| black_box(empty.retrieve(QUESTION, 5, 1).expect("returns nothing")))
        });
        let busy = load(&pooling, fixture(path), &[("calls", "1000")], &pool);
        let (t0, tn) = (median_call(&empty, 101), median_call(&busy, 101));
        round_trips.push((
            language,
            t0,
            (tn.as_nanos() as f64 - t0.as_nanos() as f64) / 1000.0,
        ));
    }
    group.finish();
    for (language, t0, ns) in round_trips {
        println!(
            "{language}: a call that returns nothing {t0:?} (median of 101), one host call {ns:.0} ns"
        );
    }

    let mut group = c.benchmark_group("corpus");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let session = pool.session().expect("corpus session");
    assert_eq!(session.search(EXPRESSION, 20).expect("search").len(), 20);
    group.bench_function("search", |b| {
        b.iter(|| black_box(session.search(EXPRESSION, 20).expect("search")))
    });
    group.finish();
}

criterion_group!(benches, bench_plugin);
criterion_main!(benches);
