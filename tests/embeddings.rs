//! A remote embedding model (`--embeddings URL`): the corpus index built through a real
//! OpenAI-compatible server process (`tests/upstream/embeddings.py`, deterministic vectors), its
//! passages cached per text (a rebuild embeds only what changed, a restart nothing, a build cut
//! short resumes), failures retried with backoff, questions embedded under the call's lease and
//! kept in a bounded cache, the server's failure told as its own (503/502, never a 500), and the
//! credential bound to its origin added by the host.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::upstream::Upstream;
use crate::support::{TestServer, binary, try_load};

/// Passages of the test corpus.
const PASSAGES: usize = 40;

/// Passage `i`: words of its own (so each has a vector of its own) and one the question uses.
fn passage(i: usize, edition: &str) -> Value {
    json!({
        "id": format!("doc.{i}"),
        "title": format!("Topic {i} {edition}"),
        "text": format!("alpha{i} beta{i} gamma{i} delta{i} describes subject number {i} in words w{i}x w{i}y"),
    })
}

/// Writes the corpus (`edition` changes passage 7's text only when not "first").
fn write_corpus(dir: &Path, edition: &str) -> PathBuf {
    let path = dir.join(format!("corpus-{edition}.jsonl"));
    let lines: Vec<String> = (0..PASSAGES)
        .map(|i| passage(i, if i == 7 { edition } else { "first" }).to_string())
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// `serve` flags for `corpus` through `server`, with the cache in `cache`.
fn flags(server: &Upstream, corpus: &Path, cache: &Path, more: &[&str]) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--embeddings",
        server.origin(),
        "--embeddings-model",
        "test-hashing",
        "--corpus",
        &corpus.display().to_string(),
        "--cache-dir",
        &cache.display().to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    flags.extend(more.iter().map(|s| (*s).to_owned()));
    flags
}

async fn start(flags: &[String]) -> TestServer {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    TestServer::start(&flags).await
}

/// Passages the server embedded (their text starts with their id), not the start's probe of the
/// dimensions or a question.
fn passages_embedded(stats: &Value) -> u64 {
    stats["texts_seen"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(text, _)| text.starts_with("doc."))
        .map(|(_, times)| times.as_u64().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corpus_and_the_questions_are_embedded_by_the_named_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = Upstream::embeddings(&["--dims", "48"]);
    let corpus = write_corpus(dir.path(), "first");
    let server = start(&flags(
        &model,
        &corpus,
        dir.path(),
        &["--embeddings-batch", "16"],
    ))
    .await;

    let stats = model.stats();
    assert_eq!(passages_embedded(&stats), PASSAGES as u64, "{stats}");
    assert_eq!(stats["max_batch"], 16, "batches of --embeddings-batch");
    let state = server.get_json("/state").await;
    let embeddings = &state["embeddings"];
    assert_eq!(embeddings["backend"], "remote", "{state}");
    assert_eq!(embeddings["model"], "test-hashing");
    assert_eq!(embeddings["dimensions"], 48);
    assert_eq!(
        embeddings["passages"],
        json!({"embedded": PASSAGES, "reused": 0})
    );

    // A question goes to the model (one text), and its answer finds the passage by its words.
    model.reset();
    let question = "what do alpha12 beta12 gamma12 describe";
    let (status, body) = server.retrieve(json!({"question": question})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sources"][0]["id"], "doc.12", "{body}");
    let stats = model.stats();
    assert_eq!(stats["texts_seen"][question], 1, "{stats}");
    // Asked again: from the question cache, no request.
    let (status, _) = server.retrieve(json!({"question": question})).await;
    assert_eq!(status, 200);
    assert_eq!(model.stats()["requests"], stats["requests"]);
    let state = server.get_json("/state").await;
    let cache = &state["embeddings"]["question_cache"];
    assert_eq!(cache["hits"], 1, "{state}");
    assert!(cache["entries"].as_u64().unwrap() >= 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_embeds_only_what_changed_and_a_restart_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let model = Upstream::embeddings(&[]);
    let first = write_corpus(dir.path(), "first");
    start(&flags(&model, &first, dir.path(), &[]))
        .await
        .stop()
        .await;
    assert_eq!(passages_embedded(&model.stats()), PASSAGES as u64);

    // One passage changed: only it is embedded.
    model.reset();
    let second = write_corpus(dir.path(), "second");
    let server = start(&flags(&model, &second, dir.path(), &[])).await;
    let stats = model.stats();
    assert_eq!(passages_embedded(&stats), 1, "{stats}");
    let state = server.get_json("/state").await;
    assert_eq!(
        state["embeddings"]["passages"],
        json!({"embedded": 1, "reused": PASSAGES - 1})
    );
    server.stop().await;

    // A restart on the same corpus reuses the index: nothing embedded.
    model.reset();
    start(&flags(&model, &second, dir.path(), &[]))
        .await
        .stop()
        .await;
    assert_eq!(passages_embedded(&model.stats()), 0);

    // The built-in model's index of the same corpus is another file: the remote one stays.
    let (shipped, cache) = (
        second.display().to_string(),
        dir.path().display().to_string(),
    );
    let server = TestServer::start(&["--corpus", &shipped, "--cache-dir", &cache]).await;
    let state = server.get_json("/state").await;
    assert_eq!(state["embeddings"]["backend"], "built_in");
    assert!(state["embeddings"].get("passages").is_none());
    server.stop().await;
    model.reset();
    start(&flags(&model, &second, dir.path(), &[]))
        .await
        .stop()
        .await;
    assert_eq!(passages_embedded(&model.stats()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_server_is_retried_and_an_outage_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let model = Upstream::embeddings(&[]);
    let corpus = write_corpus(dir.path(), "first");
    let batching = ["--embeddings-batch", "4", "--embeddings-in-flight", "1"];

    // Two 503s (Retry-After: 0) on the way: the build waits and tries again.
    model.control(json!({"fail_next": 2, "fail_status": 503, "retry_after": 0}));
    start(&flags(&model, &corpus, dir.path(), &batching))
        .await
        .stop()
        .await;
    let stats = model.stats();
    assert_eq!(stats["failed"], 2, "{stats}");
    assert_eq!(passages_embedded(&stats), PASSAGES as u64);

    // An outage after 4 batches (and the probe), past the retries: the start fails, saying why.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    model.reset();
    model.control(json!({"fail_after_requests": 5, "fail_status": 503, "retry_after": 0}));
    let mut failing = flags(&model, &corpus, &other, &batching);
    failing.extend(["--embeddings-retries".into(), "1".into()]);
    let failing: Vec<&str> = failing.iter().map(String::as_str).collect();
    let error = try_load(&failing).await.err().expect("the start fails");
    assert!(
        error.contains("answered 503") && error.contains(model.origin()),
        "{error}"
    );
    assert_eq!(passages_embedded(&model.stats()), 16);

    // The server is back: the next start embeds the rest, nothing twice.
    model.control(json!({"fail_after_requests": null}));
    start(&flags(&model, &corpus, &other, &batching))
        .await
        .stop()
        .await;
    let stats = model.stats();
    assert_eq!(passages_embedded(&stats), PASSAGES as u64, "{stats}");
    let twice: Vec<&String> = stats["texts_seen"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(text, times)| text.starts_with("doc.") && times.as_u64() != Some(1))
        .map(|(text, _)| text)
        .collect();
    assert!(twice.is_empty(), "embedded twice: {twice:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_build_resumes_with_at_most_the_batches_in_flight_redone() {
    let dir = tempfile::tempdir().unwrap();
    // Slow enough that the kill lands in the middle: 40 passages, batches of 2, 2 in flight.
    let model = Upstream::embeddings(&["--delay-ms", "150"]);
    let corpus = write_corpus(dir.path(), "first");
    let run = |model: &Upstream| {
        let mut args = vec!["serve".to_owned(), "--listen".into(), "127.0.0.1:0".into()];
        args.extend(flags(
            model,
            &corpus,
            dir.path(),
            &["--embeddings-batch", "2", "--embeddings-in-flight", "2"],
        ));
        Command::new(binary())
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut child = run(&model);
    let stats = model.stats_when("6 batches embedded", |s| {
        s["requests"].as_u64().unwrap() >= 7
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let before_kill = passages_embedded(&stats);
    assert!(
        before_kill < PASSAGES as u64,
        "the kill came too late: {stats}"
    );

    model.control(json!({"delay_ms": 0}));
    let mut child = run(&model);
    let stats = model.stats_when("every passage embedded", |s| {
        passages_embedded(s) >= PASSAGES as u64
    });
    // Redone: what was in flight (2 batches of 2) at most, and what came back between the
    // stats read and the kill (each batch is committed as it comes back).
    let redone = passages_embedded(&stats) - PASSAGES as u64;
    assert!(
        redone <= 2 * 2 + 2,
        "{redone} passages embedded again: {stats}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_the_server_fails_is_its_failure_not_the_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let model = Upstream::embeddings(&[]);
    let corpus = write_corpus(dir.path(), "first");
    let server = start(&flags(&model, &corpus, dir.path(), &[])).await;

    model.control(json!({"fail_always": true, "fail_status": 429, "retry_after": 3}));
    let response = server
        .client
        .post(server.url("/retrieve"))
        .json(&json!({"question": "alpha1 beta1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "3");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "embeddings_unavailable", "{body}");

    model.control(json!({"fail_status": 400}));
    let (status, body) = server.retrieve(json!({"question": "alpha2 beta2"})).await;
    assert_eq!(
        (status, &body["error"]),
        (502, &json!("embeddings_failed")),
        "{body}"
    );

    // The slot was given back each time, and the server answers once the model does.
    model.control(json!({"fail_always": false}));
    let (status, body) = server.retrieve(json!({"question": "alpha3 beta3"})).await;
    assert_eq!(status, 200, "{body}");
    let state = server.get_json("/state").await;
    assert_eq!(state["active"], 0, "{state}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_credential_bound_to_the_server_is_added_by_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let model = Upstream::embeddings(&[]);
    model.control(json!({"require_key": "sk-embed-test"}));
    let corpus = write_corpus(dir.path(), "first");

    // Without it: the start fails with the server's 401, the key nowhere in the message.
    let without = flags(&model, &corpus, dir.path(), &[]);
    let without: Vec<&str> = without.iter().map(String::as_str).collect();
    let error = try_load(&without).await.err().expect("refused");
    assert!(error.contains("answered 401"), "{error}");

    let key = dir.path().join("key");
    std::fs::write(&key, "sk-embed-test").unwrap();
    let bound = format!("{}=file:{}", model.origin(), key.display());
    let server = start(&flags(
        &model,
        &corpus,
        dir.path(),
        &["--outbound-bearer", &bound],
    ))
    .await;
    let (status, body) = server.retrieve(json!({"question": "alpha4 beta4"})).await;
    assert_eq!(status, 200, "{body}");
    let stats = model.stats();
    assert_eq!(stats["authorized"], stats["requests"], "{stats}");
    // No plugin was granted the server: naming it with --embeddings grants the host alone.
    let state = server.get_json("/state").await;
    assert!(!state.to_string().contains("sk-embed-test"));
    server.stop().await;
}

#[tokio::test]
async fn bad_embeddings_settings_are_told_before_anything_is_built() {
    // A URL without its model: refused as the command line is read.
    let output = Command::new(binary())
        .args(["serve", "--embeddings", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--embeddings-model"), "{stderr}");

    for (more, expected) in [
        (
            ["--embeddings", "http://user:key@127.0.0.1:9"],
            "must not carry a credential",
        ),
        (
            ["--embeddings", "http://127.0.0.1:9"],
            "could not be reached",
        ),
    ] {
        let mut flags = more.to_vec();
        flags.extend(["--embeddings-model", "m", "--embeddings-retries", "0"]);
        let error = try_load(&flags).await.err().expect("refused");
        assert!(error.contains(expected), "{flags:?}: {error}");
        assert!(!error.contains("user:key"), "{error}");
    }
}

#[test]
fn eval_measures_a_plugin_with_the_named_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = Upstream::embeddings(&[]);
    let corpus = write_corpus(dir.path(), "first");
    let questions = dir.path().join("questions.jsonl");
    let asked: Vec<String> = [3, 17, 29]
        .iter()
        .map(|i| {
            json!({"q": format!("gamma{i} delta{i}"), "expect": [format!("doc.{i}")]}).to_string()
        })
        .collect();
    std::fs::write(&questions, asked.join("\n") + "\n").unwrap();
    let output = Command::new(binary())
        .arg("eval")
        .arg(&questions)
        .args(["--json", "--corpus"])
        .arg(&corpus)
        .arg("--cache-dir")
        .arg(dir.path())
        .args([
            "--embeddings",
            model.origin(),
            "--embeddings-model",
            "test-hashing",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["plugins"][0]["errors"], 0, "{report}");
    assert_eq!(
        report["plugins"][0]["metrics"]["recall_at_1"], 1.0,
        "{report}"
    );
    let stats = model.stats();
    assert_eq!(passages_embedded(&stats), PASSAGES as u64, "{stats}");
    assert_eq!(stats["texts_seen"]["gamma17 delta17"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_corpus_swap_embeds_only_the_new_passages_with_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = Upstream::embeddings(&[]);
    let first = write_corpus(dir.path(), "first");
    let root = dir.path().display().to_string();
    let server = start(&flags(&model, &first, dir.path(), &["--swap-root", &root])).await;
    model.reset();

    let second = write_corpus(dir.path(), "second");
    let response = server
        .client
        .post(server.url("/admin/corpus"))
        .json(&json!({"path": second.to_str().unwrap()}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["corpus"]["generation"], 2, "{body}");
    assert_eq!(passages_embedded(&model.stats()), 1);
    let state = server.get_json("/state").await;
    assert_eq!(
        state["embeddings"]["passages"],
        json!({"embedded": 1, "reused": PASSAGES - 1}),
        "{state}"
    );
    assert_eq!(state["embeddings"]["backend"], "remote");
    // The changed passage is found by the words of its new edition.
    let (status, body) = server
        .retrieve(json!({"question": "topic 7 second alpha7"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sources"][0]["id"], "doc.7", "{body}");
    server.stop().await;
}
