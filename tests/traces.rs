//! Traces end to end: a real `serve` child exporting over OTLP/HTTP to a real receiver process
//! (`tests/otlp/receiver.py`, which decodes the protobuf with OpenTelemetry's own generated
//! classes), in front of a real upstream that traces itself with the OpenTelemetry Python SDK
//! (`tests/upstream/upstream.py --otlp-endpoint`). What is checked is what the receiver saw:
//! one trace from the client's `traceparent` through the edge, the gate, the plugin call and the
//! outbound request to the upstream's own span; a peer that is not trusted starts its own
//! trace; the trace id in the access line and in an error body; and a collector that is slow or
//! gone never holds a request (its spans dropped and counted).

use std::time::Duration;

use serde_json::{Value, json};
use turnstile_fixtures as components;
use turnstile_tools::drive::ServerChild;

use crate::support::upstream::Upstream;
use crate::support::{binary, cache_dir, child_metrics, eventually, series_value, stop_child};

/// The client's trace: its id and the span the request is a child of.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// A `serve` child of the `rag` plugin in front of `upstream`, exporting to `collector`, with
/// `more` flags; batches go out every 100 ms (`OTEL_BSP_SCHEDULE_DELAY`, honoured as the
/// standard says).
async fn traced_child(name: &str, collector: &str, upstream: &str, more: &[&str]) -> ServerChild {
    let mut args: Vec<String> = [
        "--cache-dir",
        &cache_dir().display().to_string(),
        "--log-format",
        "json",
        "--otlp-endpoint",
        collector,
        "--plugin",
        components::RAG,
        "--outbound-allow",
        upstream,
        "--plugin-config",
        &format!("upstream={upstream}"),
        "--plugin-config",
        "model=local",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(more.iter().map(|s| (*s).to_owned()));
    let name = name.to_owned();
    let child = tokio::task::spawn_blocking(move || {
        ServerChild::start_with_env(
            &name,
            binary(),
            &args,
            &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
            Duration::from_secs(120),
        )
        .unwrap()
    })
    .await
    .unwrap();
    assert!(child.ready(), "never ready:\n{}", child.log_tail(4096));
    child
}

/// The spans of `trace_id` the receiver holds, once there are at least `count`.
async fn trace_of(receiver: &Upstream, trace_id: &str, count: usize) -> Vec<Value> {
    eventually(&format!("{count} spans of trace {trace_id}"), || async {
        let spans: Vec<Value> = receiver
            .spans()
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["trace_id"] == trace_id)
            .cloned()
            .collect();
        if spans.len() >= count {
            Ok(spans)
        } else {
            Err(format!("{} spans: {spans:?}", spans.len()))
        }
    })
    .await
}

/// The one span named `name` among `spans`.
fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found: Vec<&Value> = spans.iter().filter(|s| s["name"] == name).collect();
    assert_eq!(found.len(), 1, "one span {name:?} in {spans:#?}");
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_one_trace_from_its_client_to_the_upstream() {
    let receiver = Upstream::otlp_receiver();
    let upstream = Upstream::traced(Duration::from_millis(20), receiver.origin());
    let child = traced_child("traced", receiver.origin(), upstream.origin(), &[]).await;
    // Probes and scrapes first: never traced.
    for probe in ["/healthz", "/readyz", "/metrics"] {
        let answered = reqwest::get(child.url(probe)).await.unwrap();
        assert_eq!(answered.status(), 200, "{probe}");
    }
    let response = reqwest::Client::new()
        .post(child.url("/retrieve"))
        .header("traceparent", format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .header("tracestate", "client=7")
        .json(&json!({"question": "how do I parse a json string"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    // The edge, the gate, the call, the outbound request — and the upstream's own span.
    let spans = trace_of(&receiver, CLIENT_TRACE, 5).await;
    let edge = named(&spans, "POST /retrieve");
    let wait = named(&spans, "gate.wait");
    let call = named(&spans, "plugin.call");
    // Exported in the order they ended: the probes' spans, had they been made, would be here.
    let routes: Vec<Value> = receiver
        .spans()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["attributes"]["http.route"].clone())
        .collect();
    for probe in ["/healthz", "/readyz", "/metrics"] {
        assert!(
            !routes.contains(&json!(probe)),
            "{probe} traced: {routes:?}"
        );
    }
    assert!(routes.contains(&json!("/retrieve")), "{routes:?}");
    let outbound = named(&spans, "POST");
    let upstream_span = named(&spans, "chat local");
    assert_eq!(edge["kind"], "server");
    assert_eq!(edge["service"], "turnstile");
    assert_eq!(
        edge["parent_span_id"], CLIENT_SPAN,
        "the client's span is the parent"
    );
    assert_eq!(edge["attributes"]["http.route"], "/retrieve");
    assert_eq!(edge["attributes"]["http.response.status_code"], 200);
    assert_eq!(wait["parent_span_id"], edge["span_id"]);
    assert_eq!(wait["attributes"]["turnstile.outcome"], "admitted");
    assert_eq!(call["parent_span_id"], edge["span_id"]);
    assert_eq!(call["attributes"]["turnstile.plugin"], "rag");
    assert_eq!(call["attributes"]["turnstile.outcome"], "ok");
    // The call's host calls, one figure per capability.
    let corpus_calls = &call["attributes"]["turnstile.host_calls.corpus.calls"];
    assert!(
        corpus_calls.as_i64().unwrap_or(0) >= 2,
        "open and rank: {call:#}"
    );
    assert_eq!(call["attributes"]["turnstile.host_calls.corpus.failed"], 0);
    assert_eq!(
        call["attributes"]["turnstile.host_calls.embeddings.calls"], 1,
        "{call:#}"
    );
    assert_eq!(outbound["kind"], "client");
    assert_eq!(outbound["parent_span_id"], call["span_id"]);
    assert_eq!(outbound["attributes"]["http.response.status_code"], 200);
    assert_eq!(outbound["attributes"]["turnstile.outcome"], "ok");
    assert_eq!(upstream_span["service"], "upstream");
    assert_eq!(upstream_span["kind"], "server");
    assert_eq!(
        upstream_span["parent_span_id"], outbound["span_id"],
        "the upstream's span is a child of the outbound request's: traceparent went along"
    );
    assert_eq!(
        upstream_span["trace_state"], "client=7",
        "tracestate went along too"
    );
    // Time nests: the call inside the edge, the upstream inside the outbound request.
    let span_time = |s: &Value| {
        (
            s["start_ns"].as_u64().unwrap(),
            s["end_ns"].as_u64().unwrap(),
        )
    };
    let (edge_start, edge_end) = span_time(edge);
    let (call_start, call_end) = span_time(call);
    assert!(
        edge_start <= call_start && call_end <= edge_end,
        "{edge:#} {call:#}"
    );

    // The access line names the trace.
    assert!(
        child.logged(&format!("\"trace_id\":\"{CLIENT_TRACE}\"")),
        "{}",
        child.log_tail(4096)
    );
    stop_child(child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_not_trusted_starts_its_own_trace_and_an_error_names_it() {
    let receiver = Upstream::otlp_receiver();
    let upstream = Upstream::start(Duration::ZERO);
    // Only 10.0.0.0/8 may name a parent: this test's loopback client may not.
    let child = traced_child(
        "untrusted",
        receiver.origin(),
        upstream.origin(),
        &["--trusted-proxy", "10.0.0.0/8"],
    )
    .await;
    let client = reqwest::Client::new();
    let response = client
        .post(child.url("/retrieve"))
        .header("traceparent", format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .header("content-type", "application/json")
        .body(r#"{"question": ""}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    let trace_id = body["trace_id"]
        .as_str()
        .unwrap_or_else(|| panic!("an error body names its trace: {body}"))
        .to_owned();
    assert_eq!(trace_id.len(), 32, "{body}");
    assert_ne!(
        trace_id, CLIENT_TRACE,
        "an untrusted traceparent is not taken"
    );
    let spans = trace_of(&receiver, &trace_id, 1).await;
    let edge = named(&spans, "POST /retrieve");
    assert_eq!(edge["parent_span_id"], "", "a root: {edge:#}");
    assert_eq!(edge["attributes"]["http.response.status_code"], 422);
    assert!(
        !receiver
            .spans()
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["trace_id"] == CLIENT_TRACE),
        "nothing joined the client's trace"
    );
    stop_child(child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_collector_never_holds_a_request_and_its_spans_are_counted() {
    let receiver = Upstream::otlp_receiver();
    // Every export waits 3 s and is then refused: the queue of 8 spans fills at once.
    receiver.control(json!({"delay_ms": 3000, "status": 503}));
    let upstream = Upstream::start(Duration::ZERO);
    let child = traced_child(
        "slow-collector",
        receiver.origin(),
        upstream.origin(),
        &["--otlp-queue-spans", "8"],
    )
    .await;
    let client = reqwest::Client::new();
    for _ in 0..20 {
        let response = client
            .post(child.url("/retrieve"))
            .json(&json!({"question": "how do I parse a json string"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let metrics = eventually("dropped and failed spans counted", || async {
        let text = child_metrics(&client, &child).await?;
        let count = |outcome: &str| {
            series_value(
                &text,
                &format!("turnstile_trace_spans_total{{outcome=\"{outcome}\"}}"),
            )
            .unwrap_or(0.0)
        };
        if count("dropped") > 0.0 && count("failed") > 0.0 {
            Ok(text)
        } else {
            Err(text
                .lines()
                .filter(|l| l.contains("trace"))
                .collect::<Vec<_>>()
                .join("\n"))
        }
    })
    .await;
    assert!(metrics.contains("turnstile_trace_spans_total{outcome=\"exported\"} 0"));
    assert_eq!(
        receiver.stats()["spans"],
        0,
        "the receiver refused every export"
    );
    stop_child(child).await;
}
