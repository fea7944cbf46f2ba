//! The OpenAI-compatible routes end to end: `POST /v1/chat/completions` and `GET /v1/models`
//! served by a real server with the `rag` plugin in front of a real upstream process
//! (`tests/upstream/upstream.py`, which streams its tokens, counts what it sees and notices a
//! client that goes), driven by the real OpenAI Python SDK (`tests/openai/client.py`), `curl -N`
//! and raw streaming clients. What is checked is what a client and the upstream observe: the
//! chunks and their order, the tokens arriving as they are made, the errors in OpenAI's shape,
//! the cap as the upstream counts it, a client's leaving freeing its slot and closing the
//! upstream's connection, and a credential that only its origin receives.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use turnstile_fixtures as components;

use crate::support::upstream::Upstream;
use crate::support::{TestServer, eventually, logged, serve_child, stop_child};

const QUESTION: &str = "how do I parse a json string";
const MODEL: &str = "turnstile-rag";

/// Flags serving `rag` against `origin` (granted), as `model`.
fn rag_flags(origin: &str, model: &str) -> Vec<String> {
    [
        "--plugin",
        components::RAG,
        "--outbound-allow",
        origin,
        "--plugin-config",
        &format!("upstream={origin}"),
        "--plugin-config",
        &format!("model={model}"),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn with(flags: Vec<String>, more: &[&str]) -> Vec<String> {
    flags
        .into_iter()
        .chain(more.iter().map(|s| (*s).to_owned()))
        .collect()
}

async fn server(flags: &[String]) -> TestServer {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    TestServer::start(&flags).await
}

/// A chat request's body.
fn chat(question: &str, stream: bool) -> Value {
    json!({
        "model": MODEL,
        "messages": [{"role": "user", "content": question}],
        "stream": stream,
    })
}

/// The `data:` payloads of a whole SSE body.
fn events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

/// The whole SDK run: models, a whole answer, a streamed one, the errors it raises.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_gets_answers_whole_and_streamed_as_the_tokens_come() {
    // 12 tokens over 1.2 s: a stream held to its end would deliver them all at once.
    let upstream = Upstream::start_with(
        Duration::from_millis(50),
        &["--stream-ms", "1200", "--answer-words", "12"],
        &[],
    );
    let child = serve_child("chat-sdk", rag_flags(upstream.origin(), "local")).await;
    let base = child.url("");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/openai/client.py");
    let python = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/test-venv/bin/python"
    );
    let base = base.trim_end_matches('/').to_owned();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .args([script, &base, MODEL, QUESTION])
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run: Value = serde_json::from_str(&stdout).unwrap();

    assert_eq!(run["models"], json!([MODEL]), "{run}");
    let whole = &run["whole"];
    assert_eq!(whole["object"], "chat.completion", "{whole}");
    assert!(whole["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(whole["role"], "assistant");
    assert_eq!(whole["finish_reason"], "stop");
    let first = whole["sources"][0]
        .as_str()
        .expect("the sources beside the answer");
    let content = whole["content"].as_str().unwrap();
    assert!(content.contains(&format!("[{first}]")), "{content}");
    // The upstream's own counts, passed through.
    assert_eq!(whole["usage"]["completion_tokens"], 12, "{whole}");
    assert!(
        whole["usage"]["prompt_tokens"].as_u64().unwrap() > 50,
        "{whole}"
    );

    let stream = &run["stream"];
    assert_eq!(stream["ids"], 1, "one id for every chunk: {stream}");
    assert_eq!(stream["role"], "assistant");
    assert_eq!(stream["finish_reason"], "stop");
    assert_eq!(stream["usage"]["completion_tokens"], 12, "{stream}");
    // The sources come first: before the answer's first token.
    let deltas = stream["deltas"].as_array().unwrap();
    assert_eq!(deltas.len(), 12, "one delta per token: {stream}");
    assert_eq!(stream["sources_at_chunk"], 0, "{stream}");
    assert!(deltas[0]["chunk"].as_u64().unwrap() > 0);
    assert_eq!(stream["sources"][0], first);
    let text: String = deltas.iter().map(|d| d["text"].as_str().unwrap()).collect();
    assert!(text.contains(&format!("[{first}]")), "{text}");
    // Each token as it came: the last arrived long after the first (1.2 s of tokens upstream).
    let spread = deltas[11]["at"].as_f64().unwrap() - deltas[0]["at"].as_f64().unwrap();
    assert!(
        spread > 0.6,
        "the tokens came {spread:.3} s apart: buffered?"
    );

    assert_eq!(
        run["errors"]["unknown_model"],
        json!({"status": 404, "code": "model_not_found", "param": "model"})
    );
    assert_eq!(
        run["errors"]["no_messages"],
        json!({"status": 400, "code": "invalid_type", "param": "messages"})
    );

    // `curl -N`, the shell's streaming client: the same events, `[DONE]` last.
    let url = child.url("/v1/chat/completions");
    let curl = tokio::task::spawn_blocking(move || {
        std::process::Command::new("curl")
            .args(["-sN", "-H", "content-type: application/json", "-d"])
            .arg(chat(QUESTION, true).to_string())
            .arg(url)
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    let body = String::from_utf8_lossy(&curl.stdout);
    let sent = events(&body);
    assert_eq!(sent.last().map(String::as_str), Some("[DONE]"), "{body}");
    let first_chunk: Value = serde_json::from_str(&sent[0]).unwrap();
    assert_eq!(first_chunk["object"], "chat.completion.chunk");
    assert_eq!(first_chunk["sources"][0]["id"], first, "{first_chunk}");

    // The stream's own access line: how it ended and when its first token went.
    logged(&child, "stream=true client_gone=false").await;
    assert!(child.logged("first_token_ms="));
    // A client that leaves before its whole answer is made: its line is a 499.
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let left = impatient
        .post(child.url("/v1/chat/completions"))
        .json(&chat(QUESTION, false))
        .send()
        .await;
    assert!(left.is_err(), "the answer takes 1.2 s: {left:?}");
    logged(&child, "status=499 client_gone=true").await;
    stop_child(child).await;
}

/// A cap of 3 is 3 streams at the upstream, by its own count, while 8 clients stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cap_of_three_is_three_streams_at_the_upstream() {
    let upstream = Upstream::start_with(
        Duration::from_millis(20),
        &["--stream-ms", "300", "--answer-words", "6"],
        &[],
    );
    let flags = with(
        rag_flags(upstream.origin(), "local"),
        &["--max-active", "3", "--max-waiting", "16"],
    );
    let server = server(&flags).await;
    let url = server.url("/v1/chat/completions");
    let streams: Vec<_> = (0..8)
        .map(|_| {
            let (client, url) = (server.client.clone(), url.clone());
            tokio::spawn(async move {
                let response = client.post(url).json(&chat(QUESTION, true)).send().await;
                let response = response.unwrap();
                assert_eq!(response.status(), 200);
                assert_eq!(response.headers()["content-type"], "text/event-stream");
                response.text().await.unwrap()
            })
        })
        .collect();
    for stream in streams {
        let body = stream.await.unwrap();
        assert_eq!(events(&body).last().map(String::as_str), Some("[DONE]"));
    }
    let seen = upstream.stats();
    assert_eq!(seen["requests"], 8, "{seen}");
    assert_eq!(seen["streams_completed"], 8, "{seen}");
    let most = seen["max_in_flight"].as_u64().unwrap();
    assert!(most <= 3, "{most} streams at the upstream at once: {seen}");
    let state = server
        .state_when("no lease held", |s| s["active"] == 0)
        .await;
    assert_eq!(state["streams_open"], 0, "{state}");
    server.stop().await;
}

/// A client that leaves mid-stream: the plugin is told at its next append, the upstream's
/// connection is closed, and the slot goes back when the plugin returns — then the next client
/// is served. Counted, and shown on `/state` while it lasts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_stream_frees_its_slot_and_closes_the_upstream() {
    let upstream = Upstream::start_with(Duration::ZERO, &[], &[]);
    let flags = with(
        rag_flags(upstream.origin(), "by-question"),
        &["--max-active", "1", "--max-waiting", "4"],
    );
    let server = server(&flags).await;
    let url = server.url("/v1/chat/completions");
    let question = format!("{QUESTION} upstream-mode:stall");
    let response = server
        .client
        .post(&url)
        .json(&chat(&question, true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // Read until the first content delta has come (the upstream then stalls), then leave.
    let mut body = response;
    let mut seen = String::new();
    while !seen.contains("\"content\":\"According") {
        let chunk = body.chunk().await.unwrap().expect("more of the stream");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let state = server.get_json("/state").await;
    assert_eq!(
        (&state["active"], &state["streams_open"]),
        (&json!(1), &json!(1))
    );
    let left = Instant::now();
    drop(body);
    let closed = tokio::task::spawn_blocking(move || {
        let stats = upstream.stats_when("the client's close seen", |s| {
            s["client_closed"] == 1 && s["in_flight"] == 0
        });
        (upstream, stats)
    })
    .await
    .unwrap();
    let (upstream, _) = closed;
    server
        .state_when("the slot given back", |s| {
            s["active"] == 0 && s["streams_open"] == 0
        })
        .await;
    eprintln!(
        "the slot came back {:?} after the client left",
        left.elapsed()
    );
    // The next client is served, by the same plugin, to the end.
    upstream.reset();
    let whole = server
        .client
        .post(&url)
        .json(&chat(QUESTION, false))
        .send()
        .await
        .unwrap();
    assert_eq!(whole.status(), 200);
    let metrics = server.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains(r#"turnstile_client_gone_total{route="/v1/chat/completions"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains("turnstile_stream_first_token_seconds_count"));
    assert!(
        metrics.contains(r#"turnstile_outbound_requests_total{origin=""#)
            && metrics.contains(r#"outcome="cancelled"} 1"#),
        "{metrics}"
    );
    server.stop().await;
}

/// Every refusal and failure in OpenAI's shape, with the status the SDKs act on: a full queue
/// (429, Retry-After), an upstream that rate limits (503 with its Retry-After, the sources kept),
/// one that refuses the credential (502, or — once the stream began — an `error` event and the
/// end of the stream), a bad body (400 naming it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_come_in_openai_shape_with_the_status_clients_act_on() {
    let upstream = Upstream::start_with(Duration::ZERO, &[], &[]);
    let flags = with(
        rag_flags(upstream.origin(), "by-question"),
        &["--max-active", "1", "--max-waiting", "0"],
    );
    let server = server(&flags).await;
    let url = server.url("/v1/chat/completions");
    let post = |body: Value| {
        let (client, url) = (server.client.clone(), url.clone());
        async move {
            let response = client.post(url).json(&body).send().await.unwrap();
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            let text = response.text().await.unwrap();
            (status, retry_after, text)
        }
    };

    let (status, retry, text) =
        post(chat(&format!("{QUESTION} upstream-mode:rate-limit"), false)).await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, retry.as_deref()), (503, Some("7")), "{body}");
    assert_eq!(body["error"]["code"], "upstream_rate_limited");
    assert_eq!(body["error"]["type"], "server_error");
    assert!(!body["sources"].as_array().unwrap().is_empty(), "{body}");

    let (status, retry, text) = post(chat(
        &format!("{QUESTION} upstream-mode:auth-failed"),
        false,
    ))
    .await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, retry), (502, None), "{body}");
    assert_eq!(body["error"]["code"], "upstream_auth_failed", "{body}");
    assert!(!body["sources"].as_array().unwrap().is_empty(), "{body}");

    // Streamed: the sources went first, so the failure is an event at the end of the stream.
    let (status, _, text) =
        post(chat(&format!("{QUESTION} upstream-mode:auth-failed"), true)).await;
    assert_eq!(status, 200);
    let sent = events(&text);
    let last: Value = serde_json::from_str(sent.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "upstream_auth_failed", "{text}");
    assert!(!text.contains("[DONE]"), "{text}");

    // A full queue: one stream holds the only slot, nobody may wait.
    let holder = {
        let (client, url) = (server.client.clone(), url.clone());
        let body = chat(&format!("{QUESTION} upstream-mode:stall"), true);
        tokio::spawn(async move { client.post(url).json(&body).send().await.unwrap() })
    };
    let holding = holder.await.unwrap();
    let (status, retry, text) = post(chat(QUESTION, true)).await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status, 429, "{body}");
    assert!(retry.is_some());
    assert_eq!(body["error"]["code"], "queue_full");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    drop(holding);
    server
        .state_when("the slot given back", |s| s["active"] == 0)
        .await;

    let (status, _, text) =
        post(json!({"model": MODEL, "messages": [{"role": "user", "content": 7}]})).await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "messages[0].content");
    let response = server
        .client
        .post(&url)
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "malformed_json");
    server.stop().await;
}

/// A credential bound to an origin: the host adds it there — the plugin sends no key — and
/// nowhere else, not even when a swap points the same plugin at another granted origin; a swap
/// may not widen the grants; `/state` names the binding, never the value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_credential_reaches_its_origin_and_no_other() {
    const KEY: &str = "sk-bound-canary-7d2e91";
    let keyed = Upstream::start_with(Duration::ZERO, &[], &[("UPSTREAM_REQUIRE_KEY", KEY)]);
    let other = Upstream::start_with(Duration::ZERO, &[], &[]);
    // As systemd's LoadCredential= gives it: a file, read once at start.
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("model-key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let flags = with(
        rag_flags(keyed.origin(), "local"),
        &[
            "--outbound-allow",
            other.origin(),
            "--outbound-bearer",
            &format!("{}=file:{}", keyed.origin(), key_file.display()),
        ],
    );
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::swappable(&flags).await;
    let url = server.url("/v1/chat/completions");
    let response = server
        .client
        .post(&url)
        .json(&chat(QUESTION, false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let seen = keyed.stats();
    assert_eq!(
        (&seen["auth_accepted"], &seen["auth_rejected"]),
        (&json!(1), &json!(0)),
        "{seen}"
    );

    // The same plugin, swapped in pointing at the other granted origin: it gets no key.
    let swapped = server
        .swap_plugin(json!({
            "path": components::RAG,
            "config": {"upstream": other.origin(), "model": "local"},
        }))
        .await;
    assert_eq!(swapped.status(), 200, "{}", swapped.text().await.unwrap());
    let response = server
        .client
        .post(&url)
        .json(&chat(QUESTION, false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let seen = other.stats();
    assert_eq!(seen["requests"], 1, "{seen}");
    assert_eq!(
        seen["authorization_values"], 0,
        "the other origin got a key: {seen}"
    );

    // A swap that names an origin the operator did not grant is refused, naming it.
    let widened = server
        .swap_plugin(json!({
            "path": components::RAG,
            "outbound_allow": [other.origin(), "http://127.0.0.1:1"],
        }))
        .await;
    assert_eq!(widened.status(), 422);
    let body: Value = widened.json().await.unwrap();
    assert_eq!(body["error"], "outbound_not_granted", "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("http://127.0.0.1:1")
    );

    let state = server.get("/state").await.text().await.unwrap();
    assert!(!state.contains(KEY), "{state}");
    let state: Value = serde_json::from_str(&state).unwrap();
    assert_eq!(
        state["outbound"]["credentials"],
        json!([format!("{} authorization", keyed.origin())])
    );
    server.stop().await;
}

/// `GET /v1/models` names the plugin serving now, and follows a swap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_list_names_the_plugin_serving() {
    let server = TestServer::swappable(&[]).await;
    let models = server.get_json("/v1/models").await;
    assert_eq!(
        models["data"][0]["id"], "turnstile-retrieval-hybrid",
        "{models}"
    );
    // A retrieval-only plugin through the chat route: its sources, listed, are the answer.
    let response = server
        .client
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"model": "turnstile-retrieval-hybrid", "messages": [{"role": "user", "content": QUESTION}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    let first = body["sources"][0]["id"].as_str().unwrap();
    assert!(content.starts_with("Sources found"), "{content}");
    assert!(content.contains(first), "{content}");
    let swapped = server.swap_plugin(json!({"path": components::RAG})).await;
    assert_eq!(swapped.status(), 200);
    eventually("the list follows the swap", || async {
        let models = server.get_json("/v1/models").await;
        if models["data"][0]["id"] == MODEL {
            Ok(())
        } else {
            Err(models.to_string())
        }
    })
    .await;
    server.stop().await;
}
