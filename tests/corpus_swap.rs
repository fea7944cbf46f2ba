//! The corpus swapped live (`POST /admin/corpus`, SIGHUP), as plugins swap: under load nothing
//! is lost and every answer names the corpus it read — and reads only that one; a refused
//! candidate changes nothing; the sha256 pin is the plugins' rule; an old corpus stays in memory
//! exactly as long as a request admitted before its swap still runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use turnstile_fixtures as components;

use crate::support::{
    STATE_DEADLINE, TestApp, TestServer, child_retrieve, child_state_when, eventually, logged,
    serve_child, sha256_of, stop_child,
};

/// A corpus of `count` documents of the shipped corpus from `skip` on, each id prefixed with
/// `prefix` (so an answer's ids tell which corpus it read), written to `dir/name`.
pub fn corpus_file(dir: &Path, name: &str, prefix: &str, skip: usize, count: usize) -> PathBuf {
    let shipped = turnstile_corpus::read_corpus(None).unwrap();
    let mut out = String::new();
    for line in String::from_utf8(shipped.jsonl)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .skip(skip)
        .take(count)
    {
        let mut doc: Value = serde_json::from_str(line).unwrap();
        doc["id"] = json!(format!("{prefix}{}", doc["id"].as_str().unwrap()));
        out.push_str(&doc.to_string());
        out.push('\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path
}

async fn swap_corpus(server: &TestServer, body: Value) -> (u16, Value) {
    let response = server
        .client
        .post(server.url("/admin/corpus"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// [`swap_corpus`], in process.
async fn swap_corpus_in(app: &TestApp, body: Value) -> (u16, Value) {
    let answer = app.post_json("/admin/corpus", &body).await;
    (answer.status().as_u16(), answer.json().await.unwrap())
}

/// One answer as a client saw it: the corpus generation and sha256 it names, and its ids.
struct Seen {
    corpus: u64,
    sha256: String,
    ids: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corpus_swap_under_load_loses_nothing_and_each_answer_reads_the_corpus_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let a = corpus_file(dir.path(), "a.jsonl", "a:", 0, 400);
    let b = corpus_file(dir.path(), "b.jsonl", "b:", 400, 400);
    let (sha_a, sha_b) = (sha256_of(&a), sha256_of(&b));
    let server = Arc::new(
        TestServer::start(&[
            "--corpus",
            a.to_str().unwrap(),
            "--max-active",
            "2",
            "--max-waiting",
            "64",
        ])
        .await,
    );
    let ready = server.get_json("/readyz").await;
    assert_eq!(ready["corpus"]["generation"], 1, "{ready}");
    assert_eq!(ready["corpus"]["sha256"], sha_a);

    // Each client loops until it has itself been served by the new corpus; every answer must be
    // a 200.
    let served = Arc::new(AtomicUsize::new(0));
    let mut loops = Vec::new();
    for question in [
        "read rows from a CSV file",
        "json dumps",
        "run a subprocess",
        "parse command line arguments",
    ] {
        let (server, served) = (Arc::clone(&server), Arc::clone(&served));
        loops.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                let (status, body) = server
                    .retrieve(json!({"question": question, "limit": 10}))
                    .await;
                assert_eq!(status, 200, "{body}");
                served.fetch_add(1, Ordering::SeqCst);
                let corpus = body["corpus"]["generation"].as_u64().unwrap();
                seen.push(Seen {
                    corpus,
                    sha256: body["corpus"]["sha256"].as_str().unwrap().to_owned(),
                    ids: body["sources"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s["id"].as_str().unwrap().to_owned())
                        .collect(),
                });
                if corpus == 2 {
                    return seen;
                }
            }
        }));
    }
    eventually("20 answers before the swap", || async {
        let n = served.load(Ordering::SeqCst);
        if n >= 20 {
            Ok(())
        } else {
            Err(format!("{n} answers"))
        }
    })
    .await;
    let (status, body) = swap_corpus(
        &server,
        json!({"path": b.to_str().unwrap(), "sha256": sha_b}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "swapped");
    assert_eq!(body["corpus"]["generation"], 2);
    assert_eq!(body["corpus"]["sha256"], sha_b);
    assert_eq!(body["corpus"]["documents"], 400);
    assert_eq!(body["previous"]["generation"], 1);
    assert_eq!(body["previous"]["sha256"], sha_a);
    assert!(body["smoke_checks_passed"].as_u64().unwrap() > 0, "{body}");

    let mut all = Vec::new();
    for l in loops {
        let seen = tokio::time::timeout(STATE_DEADLINE, l)
            .await
            .expect("a client never saw corpus generation 2")
            .unwrap();
        // Corpus generations only move forward within one client's sequence.
        assert!(seen.windows(2).all(|w| w[0].corpus <= w[1].corpus));
        all.extend(seen);
    }
    for answer in &all {
        let (sha, prefix) = match answer.corpus {
            1 => (&sha_a, "a:"),
            2 => (&sha_b, "b:"),
            other => panic!("an answer names corpus generation {other}"),
        };
        assert_eq!(&answer.sha256, sha, "generation {}", answer.corpus);
        // An answer reads only the corpus it names: never a mix, never the other one.
        assert!(
            answer.ids.iter().all(|id| id.starts_with(prefix)),
            "corpus {} answered with {:?}",
            answer.corpus,
            answer.ids
        );
    }
    assert!(all.iter().any(|s| s.corpus == 1 && !s.ids.is_empty()));
    assert!(all.iter().any(|s| s.corpus == 2 && !s.ids.is_empty()));

    // The plugin is unchanged; nothing is left running, nothing of the old corpus in memory.
    let state: Value = server.get_json("/state").await;
    assert_eq!(state["plugin"]["generation"], 1, "{state}");
    assert_eq!(state["corpus"]["generation"], 2, "{state}");
    assert_eq!(state["active"], 0, "{state}");
    let ready = server.get_json("/readyz").await;
    assert_eq!(ready["corpus"]["sha256"], sha_b, "{ready}");
    assert_eq!(ready["corpus"]["documents"], 400, "{ready}");
    assert_eq!(ready["corpus"]["retired_in_memory"], 0, "{ready}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_corpus_stays_in_memory_exactly_as_long_as_a_request_admitted_before_its_swap() {
    let dir = tempfile::tempdir().unwrap();
    let a = corpus_file(dir.path(), "a.jsonl", "a:", 0, 200);
    let b = corpus_file(dir.path(), "b.jsonl", "b:", 200, 200);
    let app = TestApp::load(&["--corpus", a.to_str().unwrap()]).await;
    // What a running request holds: the generation it was admitted with (`retrieve` takes it
    // right after admission and keeps it until its worker returns).
    let running = app.state.plugins.current();
    let (status, body) = swap_corpus_in(&app, json!({"path": b.to_str().unwrap()})).await;
    assert_eq!(status, 200, "{body}");
    let ready = app.get_json("/readyz").await;
    assert_eq!(ready["corpus"]["generation"], 2, "{ready}");
    assert_eq!(ready["corpus"]["retired_in_memory"], 1, "{ready}");
    // The request still reads its own corpus, whole.
    let old = running
        .plugin
        .retrieve("read rows from a CSV file", 5, 1)
        .unwrap();
    assert!(!old.is_empty() && old.iter().all(|s| s.id.starts_with("a:")));
    drop((running, old));
    let ready = app.get_json("/readyz").await;
    assert_eq!(ready["corpus"]["retired_in_memory"], 0, "{ready}");
    // A new request reads the new one.
    let (status, answer) = app
        .retrieve(json!({"question": "read rows from a CSV file"}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["corpus"]["generation"], 2);
    let ids = answer["sources"].as_array().unwrap();
    assert!(
        !ids.is_empty()
            && ids
                .iter()
                .all(|s| s["id"].as_str().unwrap().starts_with("b:"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_corpus_changes_nothing_and_the_pin_is_the_plugins_rule() {
    let dir = tempfile::tempdir().unwrap();
    let a = corpus_file(dir.path(), "a.jsonl", "a:", 0, 100);
    let b = corpus_file(dir.path(), "b.jsonl", "b:", 100, 100);
    let broken = dir.path().join("broken.jsonl");
    let first_line = std::fs::read_to_string(&b).unwrap();
    let first_line = first_line.lines().next().unwrap();
    std::fs::write(&broken, format!("{first_line}\n{{\"id\": \"x\"}}\n")).unwrap();
    let (sha_a, sha_b) = (sha256_of(&a), sha256_of(&b));
    let app = TestApp::load(&["--corpus", a.to_str().unwrap()]).await;
    let path = |p: &Path| p.to_str().unwrap().to_owned();

    for (body, code, detail) in [
        (
            json!({"path": dir.path().join("missing.jsonl").to_str().unwrap()}),
            "corpus_unreadable",
            "missing.jsonl",
        ),
        (
            json!({"path": path(&broken)}),
            "invalid_corpus",
            "corpus line 2",
        ),
        (
            json!({"path": path(&b), "sha256": "0".repeat(64)}),
            "sha256_mismatch",
            &sha_b[..],
        ),
        (
            json!({"path": path(&b), "sha256": "xyz"}),
            "invalid_sha256",
            "64",
        ),
        (
            json!({"path": path(&b), "plugin": "x"}),
            "invalid_swap_request",
            "plugin",
        ),
        (json!({"path": ""}), "invalid_swap_request", "empty"),
    ] {
        let (status, refused) = swap_corpus_in(&app, body.clone()).await;
        assert_eq!(status, 422, "{body}: {refused}");
        assert_eq!(refused["error"], code, "{body}: {refused}");
        assert!(
            refused["detail"].as_str().unwrap().contains(detail),
            "{body}: {refused}"
        );
        let ready = app.get_json("/readyz").await;
        assert_eq!(ready["corpus"]["generation"], 1, "{ready}");
        assert_eq!(ready["corpus"]["sha256"], sha_a, "{ready}");
        let (status, answer) = app.retrieve(json!({"question": "json"})).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["corpus"]["generation"], 1);
    }

    // The corpus being served again: nothing to load, nothing installed.
    let (status, same) = swap_corpus_in(&app, json!({"path": path(&a)})).await;
    assert_eq!(status, 200, "{same}");
    assert_eq!(same["status"], "unchanged");
    assert_eq!(same["corpus"]["generation"], 1);
    assert_eq!(same["smoke_checks_passed"], 0);

    // A swap that names its sha256 pins the corpus: from then on every swap must name one.
    let (status, pinned) = swap_corpus_in(&app, json!({"path": path(&b), "sha256": sha_b})).await;
    assert_eq!(status, 200, "{pinned}");
    assert_eq!(pinned["corpus"]["generation"], 2);
    let (status, refused) = swap_corpus_in(&app, json!({"path": path(&a)})).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"], "sha256_required", "{refused}");
    let (status, back) = swap_corpus_in(&app, json!({"path": path(&a), "sha256": sha_a})).await;
    assert_eq!(status, 200, "{back}");
    assert_eq!(back["corpus"]["generation"], 3);
    // The first corpus's index was built already: reused.
    assert_eq!(back["index"], "reused", "{back}");

    let metrics = app.get("/metrics").await.text().await.unwrap();
    for line in [
        r#"turnstile_corpus_swaps_total{result="swapped"} 2"#,
        r#"turnstile_corpus_swaps_total{result="unchanged"} 1"#,
        r#"turnstile_corpus_swaps_total{result="invalid_corpus"} 1"#,
        r#"turnstile_corpus_swaps_total{result="sha256_required"} 1"#,
        "turnstile_corpus_generation 3",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_a_changed_corpus_and_refuses_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("corpus.jsonl");
    std::fs::copy(corpus_file(dir.path(), "a.jsonl", "a:", 0, 100), &served).unwrap();
    let b = corpus_file(dir.path(), "b.jsonl", "b:", 100, 100);
    let server = serve_child(
        "corpus-reload",
        vec![
            "--corpus".into(),
            served.display().to_string(),
            "--plugin".into(),
            components::DELAY.into(),
            "--plugin-config".into(),
            "delay_ms=0".into(),
        ],
    )
    .await;
    let client = reqwest::Client::new();
    let first = child_state_when(&client, &server, "any state", |_| true).await;
    assert_eq!(first["corpus"]["generation"], 1, "{first}");

    // Unchanged: a hang-up reloads nothing, of the corpus or of the plugin.
    server.hang_up().unwrap();
    logged(&server, "corpus unchanged").await;
    logged(&server, "plugin unchanged").await;
    let same = child_state_when(&client, &server, "any state", |_| true).await;
    assert_eq!(same["plugin"]["generation"], 1, "{same}");
    assert_eq!(same["corpus"]["generation"], 1, "{same}");

    // Replaced as an operator would (write aside, rename over), then a hang-up: swapped.
    let aside = dir.path().join("corpus.jsonl.new");
    std::fs::copy(&b, &aside).unwrap();
    std::fs::rename(&aside, &served).unwrap();
    server.hang_up().unwrap();
    let second = child_state_when(&client, &server, "corpus generation 2", |s| {
        s["corpus"]["generation"] == 2
    })
    .await;
    assert_eq!(second["corpus"]["sha256"], sha256_of(&b), "{second}");
    let (status, answer) = child_retrieve(&client, &server, "read rows from a CSV file").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["corpus"]["generation"], 2, "{answer}");
    assert!(
        answer["sources"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["id"].as_str().unwrap().starts_with("b:"))
    );

    // Broken: refused, logged, and generation 2 keeps serving.
    std::fs::write(&served, b"{\"id\": 1}\n").unwrap();
    server.hang_up().unwrap();
    logged(&server, "corpus reload refused").await;
    let after = child_state_when(&client, &server, "any state", |_| true).await;
    assert_eq!(after["corpus"]["generation"], 2, "{after}");
    let (status, _) = child_retrieve(&client, &server, "json dumps").await;
    assert_eq!(status, 200);

    let report = stop_child(server).await;
    assert_eq!(report.shutdown_exit_status, Some(0), "{}", report.stderr);
}

#[test]
fn a_pinned_corpus_sha256_that_does_not_match_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let a = corpus_file(dir.path(), "a.jsonl", "a:", 0, 20);
    let args = crate::support::args(&[
        "--corpus",
        a.to_str().unwrap(),
        "--corpus-sha256",
        &"0".repeat(64),
    ]);
    let error = turnstile_server::serve::load(&args).err().unwrap();
    assert!(
        format!("{error:#}").contains("--corpus-sha256"),
        "{error:#}"
    );
    let good = sha256_of(&a);
    let args = crate::support::args(&["--corpus", a.to_str().unwrap(), "--corpus-sha256", &good]);
    assert!(turnstile_server::serve::load(&args).is_ok());
}
