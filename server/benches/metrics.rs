//! What the metrics cost one request: the recording a `/retrieve` does (its response, the gate's
//! two histograms, the plugin call, and the corpus host calls of the default plugin — one open,
//! one rank, five snippets), criterion median, beside a request's own cost
//! (`cargo bench -p turnstile-host --bench plugin`: a whole retrieval call is about 2 ms).
//!
//! `cargo bench -p turnstile-server --bench metrics`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use turnstile_host::{HostCallKind, HostCallOutcome};
use turnstile_server::metrics::{CallOutcome, Metrics};

fn bench(c: &mut Criterion) {
    let metrics = Metrics::new();
    let host = metrics.host_calls();
    let mut group = c.benchmark_group("metrics");
    group.bench_function("one /retrieve's recording", |b| {
        let mut recorded = 0u32;
        b.iter(|| {
            let took = black_box(Duration::from_micros(150));
            host.observe(HostCallKind::Open, HostCallOutcome::Ok, took);
            host.observe(HostCallKind::Rank, HostCallOutcome::Ok, took);
            for _ in 0..5 {
                host.observe(HostCallKind::Snippet, HostCallOutcome::Ok, took);
            }
            metrics.call(CallOutcome::Ok, took);
            metrics.admitted(Duration::ZERO, took);
            metrics.response("/retrieve", 200);
            // Fold the queued observations now and then, as the server's upkeep does every 5 s
            // (here every 5,000 requests: 5 s at 1,000 requests/s).
            recorded += 1;
            if recorded.is_multiple_of(5000) {
                metrics.upkeep();
            }
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
