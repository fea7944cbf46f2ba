//! What the host adds to an outbound HTTP call: a plugin's GET to a loopback upstream through
//! `wasi:http` (the grants, the guarded resolver, the pooled client, the bounded bodies, the
//! report), against the same GET from a plain hyper-util client, side by side in one run.
//!
//! The upstream is a hyper server in this process answering `ok` (keep-alive). The `fetch`
//! fixture makes `count` sequential GETs per call; a call with 10 minus a call with none, over
//! 10, is one outbound request's cost inside a plugin (the guest's few calls included). Rounds
//! alternate the three measurements, so drift hits all alike; medians of every round.
//!
//!     cargo bench -p turnstile-host --bench outbound [-- ROUNDS]
#![allow(missing_docs, clippy::unwrap_used)]

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use turnstile_corpus::{CorpusIndex, CorpusPool, read_corpus};
use turnstile_host::capabilities::outbound::Origins;
use turnstile_host::{
    Plugin, PluginConfig, PluginRuntime, PluginSource, Provision, RuntimeOptions,
};

const PER_CALL: u32 = 10;

fn upstream(rt: &tokio::runtime::Runtime) -> std::net::SocketAddr {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let service = service_fn(|_req| async {
                    Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(b"ok"))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

fn plugin(runtime: &PluginRuntime, pool: &CorpusPool, origin: &str, count: u32) -> Arc<Plugin> {
    let config = PluginConfig::from([
        ("url".to_owned(), format!("{origin}/ping")),
        ("count".to_owned(), count.to_string()),
    ]);
    let given = Provision::new(pool.clone(), config)
        .with(|given| given.outbound.origins = Origins::parse(&[origin]).unwrap());
    let source = PluginSource::File(turnstile_fixtures::FETCH.into());
    Arc::new(Plugin::load(runtime, &source, given).unwrap())
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let addr = upstream(&rt);
    let origin = format!("http://{addr}");
    let uri: hyper::Uri = format!("{origin}/ping").parse().unwrap();
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build(http);

    let dir = tempfile::tempdir().unwrap();
    let index = CorpusIndex::open_or_build(&read_corpus(None).unwrap(), dir.path()).unwrap();
    let pool = CorpusPool::new(&index, 4).unwrap();
    let runtime = PluginRuntime::new(RuntimeOptions::serving(4, Default::default())).unwrap();
    let none = plugin(&runtime, &pool, &origin, 0);
    let ten = plugin(&runtime, &pool, &origin, PER_CALL);

    let native = || {
        let started = Instant::now();
        rt.block_on(async {
            let response = client.get(uri.clone()).await.unwrap();
            response.into_body().collect().await.unwrap();
        });
        started.elapsed()
    };
    let call = |plugin: &Plugin| {
        let started = Instant::now();
        let (result, stats) = plugin.retrieve_metered("x", 1, 0);
        let elapsed = started.elapsed();
        result.unwrap();
        assert_eq!(stats.used.outbound.denied, 0);
        (elapsed, stats.used.outbound.requests)
    };
    // Warm up: connections, caches, the allocator's pool.
    for _ in 0..200 {
        native();
        call(&none);
        call(&ten);
    }
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(native().as_secs_f64() * 1e6);
        b.push(call(&none).0.as_secs_f64() * 1e6);
        let (elapsed, requests) = call(&ten);
        assert_eq!(requests, PER_CALL);
        c.push(elapsed.as_secs_f64() * 1e6);
    }
    let (native_us, none_us, ten_us) = (median(&mut a), median(&mut b), median(&mut c));
    let per_request = (ten_us - none_us) / f64::from(PER_CALL);
    println!("rounds: {rounds} (medians, µs)");
    println!("plain hyper-util client, one GET:          {native_us:8.1}");
    println!("plugin call, no request:                   {none_us:8.1}");
    println!("plugin call, {PER_CALL} GETs:                     {ten_us:8.1}");
    println!("one GET inside a plugin ((10 - 0) / 10):   {per_request:8.1}");
    println!(
        "added by the host per outbound call:       {:8.1}  ({:.2}x the plain client)",
        per_request - native_us,
        per_request / native_us
    );
}
