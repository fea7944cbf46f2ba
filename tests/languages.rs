//! Plugins in other languages: the Python and JavaScript retrieval plugins pass `check`, rank the
//! dev set exactly as the Rust plugin they port, serve, and swap in and out under load; their
//! runtimes' WASI imports link but grant nothing (each language's probe can read no file, no
//! variable and no socket); an exception becomes an error an author can read.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use turnstile_corpus::{CorpusIndex, CorpusPool, read_corpus};
use turnstile_fixtures as components;
use turnstile_host::{
    Plugin, PluginConfig, PluginError, PluginRuntime, PluginSource, Provision, RetrieveError,
    RuntimeOptions,
};

use crate::support::{TestServer, cache_dir, eventually, hybrid_plugin};

/// A serving runtime (no deadline), its artifacts in the tests' shared precompiled cache: each
/// language component is compiled once per test run, whichever test loads it first.
fn runtime() -> PluginRuntime {
    PluginRuntime::new(
        RuntimeOptions::serving(4, Default::default())
            .with_cache(Some(cache_dir().join("plugins"))),
    )
    .unwrap()
}

fn pool() -> CorpusPool {
    let index = CorpusIndex::open_or_build(&read_corpus(None).unwrap(), &cache_dir().join("index"))
        .unwrap();
    CorpusPool::new(&index, 4).unwrap()
}

fn load(runtime: &PluginRuntime, path: &str, attempt: &str) -> Plugin {
    let config = PluginConfig::from([("attempt".to_owned(), attempt.to_owned())]);
    Plugin::load(
        runtime,
        &PluginSource::File(path.into()),
        Provision::new(pool(), config),
    )
    .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn refusal(plugin: &Plugin, attempt: &str) -> String {
    match plugin.retrieve("x", 1, 1) {
        Err(PluginError::Guest(RetrieveError::Internal(message))) => message,
        other => panic!("{attempt}: expected a refusal, got {other:?}"),
    }
}

/// The Python plugin's runtime imports WASI's filesystem, sockets and environment: they link,
/// and each attempt to use them fails cleanly inside Python — no file, no directory, no variable,
/// no connection.
#[test]
fn python_can_read_no_file_no_variable_and_no_socket() {
    let runtime = runtime();
    for (attempt, expected) in [
        ("read-file", "read-file refused"),
        ("list-dir", "list-dir refused"),
        ("env", "env refused"),
        ("socket", "socket refused"),
    ] {
        let plugin = load(&runtime, components::ESCAPE_PY, attempt);
        let message = refusal(&plugin, attempt);
        assert!(message.starts_with(expected), "{attempt}: {message}");
    }
}

/// The JavaScript runtime has no file, directory, environment or socket API; its one way out
/// (`fetch`, over `wasi:http`) is outbound HTTP, linked and granted nothing unless the operator
/// grants origins: a component that imports it loads, and finds nothing else either.
#[test]
fn javascript_can_read_no_file_no_variable_and_no_socket() {
    let runtime = runtime();
    for attempt in ["read-file", "list-dir", "env", "socket"] {
        let plugin = load(&runtime, components::ESCAPE_JS, attempt);
        let message = refusal(&plugin, attempt);
        assert!(
            message.starts_with(&format!("{attempt} refused")),
            "{attempt}: {message}"
        );
    }
    for attempt in ["read-file", "env", "socket"] {
        let plugin = load(&runtime, components::ESCAPE_JS_HTTP, attempt);
        let message = refusal(&plugin, attempt);
        assert!(
            message.starts_with(&format!("{attempt} refused")),
            "{attempt}: {message}"
        );
    }
}

/// Every call starts from the component's pristine image, in every language: a Python and a
/// JavaScript plugin that append 20,000 objects to module state each call, and a Rust one that
/// dirties hundreds of scattered pages, find none of it on the next call, though one pool slot
/// serves them all (reset in place, not rebuilt).
#[test]
fn a_call_never_sees_what_the_previous_call_wrote_in_any_language() {
    let one_slot = PluginRuntime::new(
        RuntimeOptions::serving(1, Default::default())
            .with_cache(Some(cache_dir().join("plugins"))),
    )
    .unwrap();
    for (component, attempt) in [
        (components::ESCAPE_PY, "remember"),
        (components::ESCAPE_JS, "remember"),
        (components::HOSTILE, "remember-scattered"),
    ] {
        let plugin = load(&one_slot, component, attempt);
        for call in 1..=4 {
            match plugin.retrieve("x", 1, call) {
                Err(PluginError::Guest(RetrieveError::Internal(message))) => assert_eq!(
                    message,
                    format!("{attempt} refused: memory started fresh"),
                    "{component}, call {call}"
                ),
                other => panic!("{component}, call {call}: expected fresh memory, got {other:?}"),
            }
        }
    }
}

/// An exception inside `retrieve` is something an author can act on: caught by the plugin, a
/// typed error carrying the traceback; uncaught, a trap whose description carries what the
/// runtime printed (Python's traceback).
#[test]
fn an_exception_reaches_the_log_with_its_traceback() {
    let runtime = runtime();
    let python = load(&runtime, components::ESCAPE_PY, "traceback-frames");
    let message = refusal(&python, "traceback-frames");
    assert!(message.contains("app.py"), "{message}");
    let uncaught = load(&runtime, components::ESCAPE_PY, "raise");
    match uncaught.retrieve("x", 1, 1) {
        Err(error @ PluginError::Trap(_)) => {
            let text = error.to_string();
            assert!(text.contains("the plugin wrote to stderr"), "{text}");
            assert!(text.contains("Traceback"), "{text}");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    let javascript = load(&runtime, components::ESCAPE_JS, "traceback");
    let message = refusal(&javascript, "traceback");
    assert!(message.contains("escape.js"), "{message}");
}

/// Runs `turnstile` with `args`, returning whether it succeeded and its stdout.
fn turnstile(args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(crate::support::binary())
        .args(args)
        .arg("--cache-dir")
        .arg(cache_dir())
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_python_and_javascript_plugins_pass_check() {
    for plugin in [components::RETRIEVAL_PY, components::RETRIEVAL_JS] {
        let (ok, stdout, stderr) = turnstile(&["check", "--json", plugin]);
        let report: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{plugin}: {e}: {stdout} {stderr}"));
        assert!(ok, "{plugin}: {report:#}");
        assert_eq!(report["failed"], 0, "{report:#}");
        // Every import is listed; what a runtime links of files and sockets gets nothing.
        for import in report["imports"].as_array().unwrap() {
            let name = import["import"].as_str().unwrap();
            if name.starts_with("wasi:filesystem/") || name.starts_with("wasi:sockets/") {
                assert!(
                    import["granted"].as_str().unwrap().starts_with("nothing"),
                    "{import}"
                );
            }
        }
    }
}

/// The ports are faithful: on the dev set, the Python and the JavaScript plugin rank exactly as
/// the Rust hybrid plugin (the embedded default) does — the same metrics, to the digit.
#[test]
fn each_language_ranks_the_dev_set_as_the_rust_plugin_does() {
    let dev = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/eval/dev_questions.jsonl"
    );
    let metrics = |args: &[&str]| -> Value {
        let (ok, stdout, stderr) = turnstile(&[&["eval", dev, "--json"], args].concat());
        assert!(ok, "{args:?}: {stderr}");
        let report: Value = serde_json::from_str(&stdout).unwrap();
        let plugin = &report["plugins"][0];
        assert_eq!(plugin["errors"], 0, "{args:?}: {plugin:#}");
        plugin["metrics"].clone()
    };
    let rust = metrics(&[]);
    assert!(rust["recall_at_5"].as_f64().unwrap() > 0.6, "{rust}");
    for plugin in [components::RETRIEVAL_PY, components::RETRIEVAL_JS] {
        assert_eq!(metrics(&["--plugin", plugin]), rust, "{plugin}");
    }
}

/// Served, and swapped under load from Rust to Python to JavaScript and back: no request is
/// lost or failed, and each answer names the generation that gave it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_under_load_from_rust_to_python_to_javascript_and_back_loses_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let back = hybrid_plugin(dir.path());
    let dir_arg = dir.path().display().to_string();
    let server = Arc::new(
        TestServer::swappable(&[
            "--max-active",
            "2",
            "--max-waiting",
            "64",
            "--swap-root",
            &dir_arg,
        ])
        .await,
    );
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let served = Arc::new(AtomicUsize::new(0));
    let mut loops = Vec::new();
    for _ in 0..3 {
        let (server, served, stop) = (Arc::clone(&server), Arc::clone(&served), Arc::clone(&stop));
        loops.push(tokio::spawn(async move {
            let mut seen = std::collections::BTreeSet::new();
            while !stop.load(Ordering::SeqCst) {
                let (status, body) = server.retrieve(json!({"question": "json dumps"})).await;
                assert_eq!(status, 200, "{body}");
                served.fetch_add(1, Ordering::SeqCst);
                seen.insert((
                    body["plugin"]["generation"].as_u64().unwrap(),
                    body["plugin"]["name"].as_str().unwrap().to_owned(),
                ));
            }
            seen
        }));
    }
    let answers = |n: usize| {
        let served = Arc::clone(&served);
        async move {
            let at = served.load(Ordering::SeqCst);
            eventually(&format!("{n} more answers"), || async {
                let now = served.load(Ordering::SeqCst);
                if now >= at + n {
                    Ok(())
                } else {
                    Err(format!("{} answers", now - at))
                }
            })
            .await;
        }
    };
    answers(10).await;
    for (generation, path, name) in [
        (2, components::RETRIEVAL_PY.to_owned(), "retrieval-py"),
        (3, components::RETRIEVAL_JS.to_owned(), "retrieval-js"),
        (4, back.display().to_string(), "retrieval-hybrid"),
    ] {
        let response = server.swap_plugin(json!({"path": path})).await;
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            (body["generation"].as_u64(), body["name"].as_str()),
            (Some(generation), Some(name))
        );
        answers(10).await;
    }
    stop.store(true, Ordering::SeqCst);
    let mut seen = std::collections::BTreeSet::new();
    for handle in loops {
        seen.extend(handle.await.unwrap());
    }
    let names: Vec<&str> = seen.iter().map(|(_, n)| n.as_str()).collect();
    for name in ["retrieval-hybrid", "retrieval-py", "retrieval-js"] {
        assert!(names.contains(&name), "{seen:?}");
    }
    assert!(
        seen.contains(&(4, "retrieval-hybrid".to_owned())),
        "{seen:?}"
    );
    Arc::try_unwrap(server).ok().unwrap().stop().await;
}

/// The language plugins' own logic, natively: Python's unit tests and node's.
#[test]
fn the_ports_own_unit_tests_pass() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let python = std::process::Command::new("python3")
        .args(["-m", "unittest", "-q", "test_hybrid"])
        .current_dir(format!("{root}/plugins/retrieval-py"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(
        python.status.success(),
        "{}",
        String::from_utf8_lossy(&python.stderr)
    );
    let node = std::process::Command::new("node")
        .args(["--test", "hybrid.test.js"])
        .current_dir(format!("{root}/plugins/retrieval-js"))
        .output()
        .unwrap();
    assert!(
        node.status.success(),
        "{}",
        String::from_utf8_lossy(&node.stdout)
    );
}
