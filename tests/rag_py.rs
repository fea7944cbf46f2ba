//! The Python answering plugin (`plugins/rag-py`) at the host level, loaded as `tests/outbound.rs`
//! loads `rag`: on a runtime with short outbound bounds, asking the local OpenAI-compatible
//! upstream (`tests/upstream/upstream.py`, a real process). It must answer as `rag` does: the
//! sources told first, then the answer appended a piece at a time as the upstream streams it;
//! a refused origin answered with sources only; a failing upstream typed by what the host saw,
//! the sources kept; and a client that leaves mid-stream let go at once. Two tests, each one
//! upstream and one load of the 19 MB component: a Python guest costs seconds to compile.

use std::time::{Duration, Instant};

use turnstile_corpus::{CorpusIndex, CorpusPool, read_corpus};
use turnstile_fixtures as components;
use turnstile_host::capabilities::answer::{
    AnswerEvent, AnswerEvents, FinishReason, answer_stream,
};
use turnstile_host::capabilities::outbound::Origins;
use turnstile_host::capabilities::{FailureKind, SignalKind, UpstreamSignal};
use turnstile_host::{
    Asked, CallInput, CallStats, CapabilityOptions, ClientLink, Plugin, PluginConfig, PluginError,
    PluginRuntime, PluginSource, Provision, RuntimeOptions, Source,
};

use crate::outbound::{failed_answer, short_bounds};
use crate::support::upstream::Upstream;
use crate::support::{STATE_DEADLINE, cache_dir};

/// A question with plenty of sources; `upstream-mode:NAME` is appended to pick a behaviour.
const QUESTION: &str = "how do I parse a json string";

fn runtime() -> PluginRuntime {
    // tests/outbound.rs's short bounds: a stuck call would show at once.
    let capabilities = CapabilityOptions {
        outbound: short_bounds(),
        ..CapabilityOptions::default()
    };
    PluginRuntime::new(
        RuntimeOptions::serving(4, capabilities).with_cache(Some(cache_dir().join("plugins"))),
    )
    .unwrap()
}

fn pool() -> CorpusPool {
    let index = CorpusIndex::open_or_build(&read_corpus(None).unwrap(), &cache_dir().join("index"))
        .unwrap();
    CorpusPool::new(&index, 8).unwrap()
}

/// `rag-py.wasm` asking `upstream` (an origin) as `model`, granted `granted`.
fn rag_py(runtime: &PluginRuntime, upstream: &str, model: &str, granted: &[&str]) -> Plugin {
    let config = PluginConfig::from([
        ("upstream".to_owned(), upstream.to_owned()),
        ("model".to_owned(), model.to_owned()),
    ]);
    let provision = Provision::new(pool(), config)
        .with(|given| given.outbound.origins = Origins::parse(granted).unwrap());
    Plugin::load(
        runtime,
        &PluginSource::File(components::RAG_PY.into()),
        provision,
    )
    .unwrap()
}

/// A streamed call's result, what it used, and the events its client was sent, in order.
type Streamed = (
    Result<Vec<Source>, PluginError>,
    CallStats,
    Vec<AnswerEvent>,
);

/// One call whose answer streams to `client`, its events read by `sent` as they come.
fn streamed(
    plugin: &Plugin,
    question: &str,
    client: ClientLink,
    sent: impl FnOnce(AnswerEvents) -> Vec<AnswerEvent> + Send,
) -> Streamed {
    let (sink, events) = answer_stream();
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| sent(events));
        let (result, stats) = plugin.call(CallInput {
            question,
            request_id: 1,
            asked: Asked {
                limit: 5,
                conversation: None,
                stream: Some(sink),
            },
            client,
        });
        (result, stats, reader.join().unwrap())
    })
}

/// Every event, until the call ends (it drops its sink).
fn all(mut events: AnswerEvents) -> Vec<AnswerEvent> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut seen = Vec::new();
        let read = async {
            while let Some(event) = events.next().await {
                seen.push(event);
            }
        };
        if tokio::time::timeout(STATE_DEADLINE, read).await.is_err() {
            panic!("the call never ended within {STATE_DEADLINE:?}");
        }
        seen
    })
}

#[test]
fn the_python_rag_streams_its_answer_and_fails_as_rag_does() {
    // Its own logic first, natively: the Rust plugin's unit tests, ported (a fraction of a second).
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../plugins/rag-py");
    let unit = std::process::Command::new("python3")
        .args(["-m", "unittest", "-q", "test_rag"])
        .current_dir(dir)
        .env("PYTHONPATH", "../retrieval-py")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(
        unit.status.success(),
        "{}",
        String::from_utf8_lossy(&unit.stderr)
    );

    let upstream = Upstream::start(Duration::ZERO);
    let runtime = runtime();
    let origin = upstream.origin();
    let plugin = rag_py(&runtime, origin, "by-question", &[origin]);

    // A normal answer: the sources first, then the answer a token at a time, quoting the first.
    let started = Instant::now();
    let (result, stats, events) = streamed(&plugin, QUESTION, ClientLink::new(), all);
    let elapsed = started.elapsed();
    let sources = result.expect("an answer");
    assert!(!sources.is_empty(), "no sources");
    let Some(AnswerEvent::Cited(cited)) = events.first() else {
        panic!("the sources were not told first: {events:?}")
    };
    let cited: Vec<&str> = cited.iter().map(|s| s.id.as_str()).collect();
    let returned: Vec<&str> = sources.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(cited, returned);
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AnswerEvent::Delta(text) => Some(text.as_str()),
            AnswerEvent::Cited(_) => None,
        })
        .collect();
    assert!(deltas.len() > 1, "one append, not a stream: {deltas:?}");
    let answer = stats.used.answer.text.as_deref().expect("an answer text");
    assert_eq!(deltas.concat(), answer);
    assert!(
        answer.contains(&format!("[{}]", sources[0].id)),
        "the answer quotes no source of the prompt: {answer:?}"
    );
    assert_eq!(stats.used.answer.finish, Some(FinishReason::Stop));
    let usage = stats.used.answer.usage.expect("the upstream's usage");
    assert_eq!(usage.completion_tokens as usize, deltas.len());
    assert_eq!(stats.used.outbound.requests, 1, "{:?}", stats.used.outbound);

    // A 429: the answer failed, the sources kept, the backend's signal recorded.
    let (result, stats) =
        plugin.retrieve_metered(&format!("{QUESTION} upstream-mode:rate-limit"), 5, 2);
    assert_eq!(failed_answer(result, &stats), "upstream answered 429");
    assert_eq!(
        stats.used.outbound.signal,
        Some(UpstreamSignal {
            kind: SignalKind::RateLimited,
            retry_after: Some(Duration::from_secs(7)),
        })
    );

    // A refused key: the answer failed, typed as an authentication failure.
    let (result, stats) =
        plugin.retrieve_metered(&format!("{QUESTION} upstream-mode:auth-failed"), 5, 3);
    assert_eq!(failed_answer(result, &stats), "upstream answered 401");
    assert_eq!(stats.used.outbound.failure, Some(FailureKind::AuthFailed));
    assert_eq!(stats.used.outbound.signal, None);
    assert_eq!(upstream.stats()["requests"], 3, "{}", upstream.log());

    // An origin not granted: sources only, nothing sent, and the log says why.
    let refused = rag_py(&runtime, origin, "local", &["http://127.0.0.1:1"]);
    let (result, stats) = refused.retrieve_metered(QUESTION, 5, 4);
    assert!(!result.unwrap().is_empty(), "sources");
    assert_eq!(stats.used.answer.text, None);
    assert_eq!(stats.used.answer.finish, None);
    assert_eq!(stats.used.outbound.denied, 1, "{:?}", stats.used.outbound);
    assert_eq!(stats.used.outbound.requests, 0);
    assert_eq!(
        stats.used.log.last_warning.as_deref(),
        Some("upstream request denied by the host: answering with sources only")
    );
    assert_eq!(upstream.stats()["requests"], 3, "{}", upstream.log());
    eprintln!(
        "rag-py: a streamed answer of {} deltas in {elapsed:?}",
        deltas.len()
    );
}

/// The upstream stalls after its first tokens; the client leaves once the first has reached it:
/// the call returns at once (the host cancels its request, which the plugin was reading), and the
/// upstream sees its client go.
#[test]
fn the_python_rag_returns_at_once_when_its_client_leaves_mid_stream() {
    let upstream = Upstream::start(Duration::ZERO);
    let runtime = runtime();
    let origin = upstream.origin();
    let plugin = rag_py(&runtime, origin, "stall", &[origin]);

    let client = ClientLink::new();
    let leaves = client.clone();
    let mut left = None;
    let (result, stats, events) = streamed(&plugin, QUESTION, client, |mut events| {
        let deadline = Instant::now() + STATE_DEADLINE;
        let mut seen = Vec::new();
        while !seen.iter().any(|e| matches!(e, AnswerEvent::Delta(_))) {
            assert!(Instant::now() < deadline, "no delta arrived: {seen:?}");
            match events.try_next() {
                Some(event) => seen.push(event),
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        left = Some(Instant::now());
        leaves.gone();
        seen.extend(all(events));
        seen
    });
    let returned_after = left.expect("the client left").elapsed();
    assert!(
        returned_after < Duration::from_secs(2),
        "the call went on for {returned_after:?} after its client left"
    );
    assert!(!result.unwrap().is_empty(), "the sources");
    assert!(
        matches!(events.first(), Some(AnswerEvent::Cited(_))),
        "{events:?}"
    );
    // Nobody reads the answer any more: the plugin says nothing of how it ended.
    assert_eq!(stats.used.answer.finish, None);
    assert_eq!(
        stats.used.outbound.cancelled, 1,
        "{:?}",
        stats.used.outbound
    );
    let seen = upstream.stats_when("its client gone and no request in flight", |s| {
        s["client_closed"] == 1 && s["in_flight"] == 0
    });
    assert_eq!(seen["requests"], 1, "{seen}");
    eprintln!("rag-py: returned {returned_after:?} after its client left");
}
