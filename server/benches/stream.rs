//! What the host costs per streamed chunk: a whole turnstile server in this process (the edge,
//! the gate, the `rag` plugin, the chat route) in front of an in-process OpenAI-compatible
//! upstream that streams `TOKENS` tokens, asked the same question by a client on loopback
//! twice — streamed (`"stream": true`: one `chat.completion.chunk` event per token, each made
//! and written as the plugin appends it) and whole (the same call, the same upstream stream and
//! the same `answer.append`s, answered as one `chat.completion` at the end). The difference over
//! `TOKENS` is what streaming adds per chunk: the event sent from the plugin's `append` to the
//! response body, its chunk serialized, written by hyper and read by the client.
//!
//! Two upstream paces:
//!
//! - **burst**: the upstream writes every token at once; the difference in wall time per chunk
//!   is the streaming path's cost when events queue up (as under load);
//! - **paced**: one token every `GAP_US` µs, as a model writes them, so every chunk takes the
//!   whole path alone (a wake-up, a frame, a write, a read); wall time is the upstream's pace,
//!   so the process's CPU time (`CLOCK_PROCESS_CPUTIME_ID`: server, upstream and client, all
//!   in this process) is compared instead, and the upstream's write of each token is timed
//!   against the client's read of its delta: the per-chunk latency through the whole path
//!   (the plugin reading and parsing the upstream's event included).
//!
//! Rounds alternate the four requests, so drift hits all alike; medians of every round.
//!
//!     cargo xtask plugins && cargo bench -p turnstile-server --bench stream [-- ROUNDS]
#![allow(missing_docs, clippy::unwrap_used)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use turnstile_server::serve::ServeArgs;

/// Tokens per answer.
const TOKENS: usize = 100;
/// The paced upstream's gap between two tokens.
const GAP_US: u64 = 1000;
/// The word in a question that asks the upstream for a paced answer.
const PACED: &[u8] = b"zqpaced";
/// The word in a request that asks the upstream for its events in one piece at the end.
const WHOLE: &[u8] = b"zqwhole";
/// What a content delta of ours looks like in the server's chunks.
const DELTA: &[u8] = b"\"content\":\"token";

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    serve: ServeArgs,
}

/// When the upstream wrote each token of the paced answers (the last request's).
type Written = Arc<Mutex<Vec<Instant>>>;

fn event(json: &serde_json::Value) -> Bytes {
    Bytes::from(format!("data: {json}\n\n"))
}

fn token_event(i: usize) -> Bytes {
    event(&serde_json::json!({
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": format!("token{i} ")}, "finish_reason": null}],
    }))
}

fn end_events() -> Vec<Bytes> {
    vec![
        event(&serde_json::json!({
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        })),
        event(&serde_json::json!({
            "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 100, "completion_tokens": TOKENS},
        })),
        Bytes::from_static(b"data: [DONE]\n\n"),
    ]
}

/// An OpenAI-compatible upstream: `TOKENS` tokens, all at once, or one every `GAP_US` µs when
/// the prompt says `paced`.
fn upstream(rt: &tokio::runtime::Runtime, written: Written) -> std::net::SocketAddr {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            let written = Arc::clone(&written);
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let written = Arc::clone(&written);
                    async move {
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        let has = |word: &[u8]| body.windows(word.len()).any(|w| w == word);
                        let (paced, whole) = (has(PACED), has(WHOLE));
                        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(TOKENS + 8);
                        tokio::spawn(async move {
                            let role = serde_json::json!({
                                "object": "chat.completion.chunk",
                                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
                            });
                            // `whole`: the same events, paced alike, sent as one piece at the end.
                            let mut held: Vec<u8> = Vec::new();
                            let mut frames = vec![event(&role)];
                            let mut times = Vec::with_capacity(TOKENS);
                            for i in 0..=TOKENS {
                                for frame in frames.drain(..) {
                                    if whole {
                                        held.extend_from_slice(&frame);
                                    } else {
                                        let _ = tx.send(frame).await;
                                    }
                                }
                                if i == TOKENS {
                                    break;
                                }
                                if paced && i > 0 {
                                    tokio::time::sleep(Duration::from_micros(GAP_US)).await;
                                }
                                times.push(Instant::now());
                                frames.push(token_event(i));
                            }
                            frames.extend(end_events());
                            for frame in frames.drain(..) {
                                if whole {
                                    held.extend_from_slice(&frame);
                                } else {
                                    let _ = tx.send(frame).await;
                                }
                            }
                            if whole {
                                let _ = tx.send(Bytes::from(held)).await;
                            }
                            if paced {
                                *written.lock().unwrap() = times;
                            }
                        });
                        let frames = futures_util::stream::unfold(rx, |mut rx| async move {
                            rx.recv()
                                .await
                                .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
                        });
                        let mut response = hyper::Response::new(StreamBody::new(frames));
                        response.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("text/event-stream"),
                        );
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// The process's CPU time so far.
fn cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap(),
        u32::try_from(t.tv_nsec).unwrap(),
    )
}

/// Context switches of every thread of this process so far (voluntary and not), from
/// `/proc/self/task/*/status`.
fn context_switches() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("status")).ok())
        .flat_map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .sum()
}

/// One request as the client saw it.
struct Asked {
    wall: Duration,
    cpu: Duration,
    /// Context switches in the process meanwhile.
    switches: u64,
    /// When each content delta arrived (streams only).
    deltas: Vec<Instant>,
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn quantile(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)]
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(300);
    let rag = std::env::var("RAG_WASM").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/plugins/rag.wasm").to_owned()
    });
    assert!(
        std::path::Path::new(&rag).exists(),
        "{rag} is missing: cargo xtask plugins (or RAG_WASM=PATH)"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let written: Written = Arc::default();
    let origin = format!("http://{}", upstream(&rt, Arc::clone(&written)));
    let direct_url: hyper::Uri = format!("{origin}/v1/chat/completions").parse().unwrap();

    // The bench's own cache (the plugin compiled once, kept for the next run).
    let cache_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/bench-stream-cache");
    let args = Wrapper::try_parse_from([
        "serve",
        "--cache-dir",
        cache_dir,
        "--plugin",
        &rag,
        "--outbound-allow",
        &origin,
        "--plugin-config",
        &format!("upstream={origin}"),
        "--plugin-config",
        "model=bench",
        "--plugin-config",
        "max_tokens=1000",
        "--access-log",
        "false",
    ])
    .unwrap()
    .serve;
    let state = turnstile_server::serve::load(&args).unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url: hyper::Uri = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    )
    .parse()
    .unwrap();
    rt.spawn(turnstile_server::serve::run(
        state,
        listener,
        std::future::pending(),
        Duration::from_secs(1),
    ));

    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(http);
    // `direct`: to the upstream itself, the transport's own cost (no turnstile between).
    let ask = |stream: bool, paced: bool, direct: bool| -> Asked {
        let question = match (paced, direct && !stream) {
            (true, true) => "How do I parse command line arguments? zqpaced zqwhole",
            (true, false) => "How do I parse command line arguments? zqpaced",
            _ => "How do I parse command line arguments?",
        };
        let body = serde_json::json!({
            "model": "turnstile-rag",
            "messages": [{"role": "user", "content": question}],
            "stream": stream,
        });
        let target = if direct {
            direct_url.clone()
        } else {
            url.clone()
        };
        let request = hyper::Request::post(target)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        let (switches0, cpu0, started) = (context_switches(), cpu(), Instant::now());
        let (deltas, bytes) = rt.block_on(async {
            let response = client.request(request).await.unwrap();
            assert_eq!(response.status(), 200);
            let mut body = response.into_body();
            let mut deltas = Vec::new();
            let mut bytes = Vec::new();
            while let Some(frame) = body.frame().await {
                let Ok(data) = frame.unwrap().into_data() else {
                    continue;
                };
                // The deltas this frame completes (one may be cut across two frames).
                let from = bytes.len().saturating_sub(DELTA.len() - 1);
                bytes.extend_from_slice(&data);
                if stream {
                    let at = Instant::now();
                    let n = bytes[from..]
                        .windows(DELTA.len())
                        .filter(|w| *w == DELTA)
                        .count();
                    deltas.extend(std::iter::repeat_n(at, n));
                }
            }
            (deltas, bytes)
        });
        let asked = Asked {
            wall: started.elapsed(),
            cpu: cpu() - cpu0,
            switches: context_switches() - switches0,
            deltas,
        };
        let text = String::from_utf8_lossy(&bytes);
        if stream {
            assert_eq!(asked.deltas.len(), TOKENS, "{text}");
            assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        } else {
            assert!(text.contains(&format!("token{} ", TOKENS - 1)), "{text}");
        }
        asked
    };

    // Warm up: the plugin's instances, connections, the allocator.
    for _ in 0..30 {
        for (stream, paced) in [(true, false), (false, false), (true, true), (false, true)] {
            ask(stream, paced, false);
        }
        ask(true, true, true);
        ask(false, true, true);
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (mut burst_stream, mut burst_whole) = (Vec::new(), Vec::new());
    let (mut burst_stream_cpu, mut burst_whole_cpu) = (Vec::new(), Vec::new());
    let (mut paced_stream_cpu, mut paced_whole_cpu) = (Vec::new(), Vec::new());
    let (mut direct_stream_cpu, mut direct_whole_cpu) = (Vec::new(), Vec::new());
    let (mut paced_stream_switches, mut paced_whole_switches) = (Vec::new(), Vec::new());
    let mut through = Vec::new();
    for _ in 0..rounds {
        let a = ask(true, false, false);
        burst_stream.push(us(a.wall));
        burst_stream_cpu.push(us(a.cpu));
        let b = ask(false, false, false);
        burst_whole.push(us(b.wall));
        burst_whole_cpu.push(us(b.cpu));
        let c = ask(true, true, false);
        paced_stream_cpu.push(us(c.cpu));
        paced_stream_switches.push(c.switches as f64);
        let sent = written.lock().unwrap().clone();
        assert_eq!(sent.len(), TOKENS);
        through.extend(
            sent.iter()
                .zip(&c.deltas)
                .map(|(w, r)| us(r.saturating_duration_since(*w))),
        );
        let d = ask(false, true, false);
        paced_whole_cpu.push(us(d.cpu));
        paced_whole_switches.push(d.switches as f64);
        direct_stream_cpu.push(us(ask(true, true, true).cpu));
        direct_whole_cpu.push(us(ask(false, true, true).cpu));
    }
    let n = TOKENS as f64;
    let (bs, bw) = (median(&mut burst_stream), median(&mut burst_whole));
    let (bsc, bwc) = (median(&mut burst_stream_cpu), median(&mut burst_whole_cpu));
    let (psc, pwc) = (median(&mut paced_stream_cpu), median(&mut paced_whole_cpu));
    println!("rounds: {rounds}, {TOKENS} tokens an answer (medians, µs)");
    println!("burst: streamed answer, wall                 {bs:10.1}");
    println!("burst: whole answer, wall                    {bw:10.1}");
    println!(
        "burst: added per streamed chunk, wall         {:9.2}",
        (bs - bw) / n
    );
    println!("burst: streamed answer, process CPU          {bsc:10.1}");
    println!("burst: whole answer, process CPU             {bwc:10.1}");
    println!(
        "burst: added per streamed chunk, CPU          {:9.2}",
        (bsc - bwc) / n
    );
    println!("paced ({GAP_US} µs a token): streamed, process CPU  {psc:10.1}");
    println!("paced ({GAP_US} µs a token): whole, process CPU     {pwc:10.1}");
    println!(
        "paced: added per streamed chunk, CPU          {:9.2}",
        (psc - pwc) / n
    );
    let (dsc, dwc) = (
        median(&mut direct_stream_cpu),
        median(&mut direct_whole_cpu),
    );
    println!("paced, no turnstile: streamed, process CPU    {dsc:10.1}");
    println!("paced, no turnstile: whole, process CPU       {dwc:10.1}");
    println!(
        "paced, no turnstile: per streamed chunk, CPU   {:9.2}",
        (dsc - dwc) / n
    );
    println!(
        "paced: added by turnstile per chunk beyond the transport's, CPU {:9.2}",
        (psc - pwc - (dsc - dwc)) / n
    );
    let (pss, pws) = (
        median(&mut paced_stream_switches),
        median(&mut paced_whole_switches),
    );
    println!(
        "paced: context switches, streamed {pss:.0}, whole {pws:.0}: {:.2} added per chunk",
        (pss - pws) / n
    );
    println!(
        "paced: upstream's write -> client's read of a delta: p50 {:.1}, p99 {:.1} ({} deltas)",
        quantile(&mut through, 0.5),
        quantile(&mut through, 0.99),
        through.len()
    );
}
