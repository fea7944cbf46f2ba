//! `/metrics` after a mixed run — completed, 429, 503, a fault, a swap — checked by Prometheus'
//! own `promtool check metrics`, and its values against what the clients saw.

use std::collections::HashMap;

use serde_json::{Value, json};
use turnstile_fixtures::{FAULT, HOSTILE};

use crate::support::{TestApp, TestServer};

/// The samples of a scrape: series (name and labels, as written) → value.
fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

fn value(samples: &HashMap<String, f64>, series: &str) -> f64 {
    *samples
        .get(series)
        .unwrap_or_else(|| panic!("no {series} in the scrape"))
}

async fn post(server: &TestServer, question: &str) -> tokio::task::JoinHandle<u16> {
    let request = server
        .client
        .post(server.url("/retrieve"))
        .json(&json!({ "question": question }));
    tokio::spawn(async move { request.send().await.unwrap().status().as_u16() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_after_a_mixed_run_passes_promtool_and_counts_what_clients_saw() {
    let server = TestServer::start(&[
        "--plugin",
        HOSTILE,
        "--plugin-config",
        "attempt=sleep",
        "--plugin-config",
        "trigger=slowly",
        "--plugin-config",
        "sleep_ms=3000",
        "--max-active",
        "1",
        "--max-waiting",
        "1",
        "--wait-ms",
        "1000",
    ])
    .await;
    for _ in 0..3 {
        assert_eq!(post(&server, "json").await.await.unwrap(), 200);
    }
    // A runs 3 s; B waits, C finds the queue full, B's 1 s deadline passes.
    let a = post(&server, "json slowly").await;
    server.state_when("A running", |s| s["active"] == 1).await;
    let b = post(&server, "json").await;
    server.state_when("B waiting", |s| s["waiting"] == 1).await;
    assert_eq!(post(&server, "json").await.await.unwrap(), 429);
    assert_eq!(b.await.unwrap(), 503);
    assert_eq!(a.await.unwrap(), 200);
    // A fault: swap to the fixture that traps, then one request.
    let swapped = server.swap_plugin(json!({"path": FAULT})).await;
    assert_eq!(
        swapped.status().as_u16(),
        422,
        "the fault fixture fails its smoke checks"
    );
    let swapped = server
        .swap_plugin(json!({"path": turnstile_fixtures::DELAY, "config": {"delay_ms": "0"}}))
        .await;
    assert_eq!(swapped.status().as_u16(), 200);
    let bad = server
        .client
        .post(server.url("/retrieve"))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 415);

    let text = server.get("/metrics").await.text().await.unwrap();
    promtool_accepts(&text);
    let s = samples(&text);
    // Admitted: the 3, A, and none of B or C.
    assert_eq!(
        value(&s, r#"turnstile_gate_requests_total{outcome="admitted"}"#),
        4.0
    );
    assert_eq!(
        value(&s, r#"turnstile_gate_requests_total{outcome="queue_full"}"#),
        1.0
    );
    assert_eq!(
        value(
            &s,
            r#"turnstile_gate_requests_total{outcome="wait_timeout"}"#
        ),
        1.0
    );
    assert_eq!(
        value(&s, r#"turnstile_gate_requests_total{outcome="cancelled"}"#),
        0.0
    );
    assert_eq!(value(&s, "turnstile_gate_execution_seconds_count"), 4.0);
    assert_eq!(value(&s, "turnstile_gate_queue_wait_seconds_count"), 4.0);
    assert!(value(&s, "turnstile_gate_execution_seconds_sum") >= 3.0);
    assert_eq!(
        value(&s, r#"turnstile_plugin_calls_total{outcome="ok"}"#),
        4.0
    );
    assert_eq!(
        value(
            &s,
            r#"turnstile_http_responses_total{route="/retrieve",class="2xx"}"#
        ),
        4.0
    );
    assert_eq!(
        value(
            &s,
            r#"turnstile_http_responses_total{route="/retrieve",class="4xx"}"#
        ),
        2.0
    );
    assert_eq!(
        value(
            &s,
            r#"turnstile_http_responses_total{route="/retrieve",class="5xx"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            r#"turnstile_http_request_rejections_total{code="unsupported_media_type"}"#
        ),
        1.0
    );
    assert_eq!(
        value(&s, r#"turnstile_plugin_swaps_total{result="smoke_failed"}"#),
        1.0
    );
    assert_eq!(
        value(&s, r#"turnstile_plugin_swaps_total{result="swapped"}"#),
        1.0
    );
    assert_eq!(value(&s, "turnstile_plugin_generation"), 2.0);
    assert_eq!(value(&s, "turnstile_gate_active"), 0.0);
    assert_eq!(value(&s, "turnstile_gate_max_active"), 1.0);
    let plugin_info: Vec<&String> = s
        .keys()
        .filter(|k| k.starts_with("turnstile_plugin_info{"))
        .collect();
    assert_eq!(plugin_info.len(), 1, "{plugin_info:?}");
    assert!(
        plugin_info[0].contains(r#"name="delay""#),
        "{plugin_info:?}"
    );
    assert!(
        value(
            &s,
            r#"turnstile_corpus_host_calls_total{kind="open",outcome="ok"}"#
        ) >= 4.0
    );
    assert!(value(&s, "process_resident_memory_bytes") > 0.0);
    // The swapped-in plugin's call counts: one more request, one more `ok`.
    let (status, _): (u16, Value) = server.retrieve(json!({"question": "json"})).await;
    assert_eq!(status, 200);
    let s = samples(&server.get("/metrics").await.text().await.unwrap());
    assert_eq!(
        value(&s, r#"turnstile_plugin_calls_total{outcome="ok"}"#),
        5.0
    );
    assert_eq!(
        value(&s, r#"turnstile_gate_requests_total{outcome="admitted"}"#),
        5.0
    );
    server.stop().await;
}

/// A trap counts as `trap`; a 500 as `5xx`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_is_counted_as_one() {
    let app = TestApp::load(&["--plugin", FAULT]).await;
    let (status, _) = app.retrieve(json!({"question": "json"})).await;
    assert_eq!(status, 500);
    let s = samples(&app.get("/metrics").await.text().await.unwrap());
    assert_eq!(
        value(&s, r#"turnstile_plugin_calls_total{outcome="trap"}"#),
        1.0
    );
    assert_eq!(
        value(
            &s,
            r#"turnstile_http_responses_total{route="/retrieve",class="5xx"}"#
        ),
        1.0
    );
    app.stop().await;
}

/// `promtool check metrics` (Debian's `prometheus` package; `.ci/run` installs it).
fn promtool_accepts(text: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run promtool (Debian package `prometheus`): {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The default plugin's questions are ranked by the corpus's term index, not FTS5, and snippeted
/// by it, the delay fixture's searches too, and the scrape says so (with the index's memory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_term_index_answers_the_default_plugins_queries() {
    let app = TestApp::swappable(&[]).await;
    for question in ["parse command line arguments", "serialize json"] {
        let (status, body): (u16, Value) = app.retrieve(json!({"question": question})).await;
        assert_eq!(status, 200, "{body}");
    }
    let s = samples(&app.get("/metrics").await.text().await.unwrap());
    let queries = |call: &str, path: &str| {
        value(
            &s,
            &format!(r#"turnstile_corpus_queries_total{{call="{call}",path="{path}"}}"#),
        )
    };
    assert_eq!(queries("rank", "term_index"), 2.0);
    assert_eq!(queries("rank", "fts5"), 0.0);
    // Documents whose text is not ASCII (114 of 6,090) too.
    assert!(queries("snippet", "term_index") >= 2.0);
    assert_eq!(queries("snippet", "fts5"), 0.0);
    assert!(value(&s, "turnstile_corpus_term_index_bytes") > 1e6);
    assert_eq!(queries("search", "fts5"), 0.0);
    // The delay fixture calls `search` (contract 0.1.0), not `rank`: the term index answers that
    // too, snippets included.
    let swapped = app
        .swap_plugin(json!({"path": turnstile_fixtures::DELAY, "config": {"delay_ms": "0"}}))
        .await;
    assert_eq!(swapped.status().as_u16(), 200);
    let (status, body): (u16, Value) = app
        .retrieve(json!({"question": "round half up decimal rounding"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(!body["sources"].as_array().unwrap().is_empty(), "{body}");
    let s = samples(&app.get("/metrics").await.text().await.unwrap());
    let queries = |call: &str, path: &str| {
        value(
            &s,
            &format!(r#"turnstile_corpus_queries_total{{call="{call}",path="{path}"}}"#),
        )
    };
    assert!(queries("search", "term_index") >= 1.0);
    assert_eq!(queries("search", "fts5"), 0.0);
    app.stop().await;
}
