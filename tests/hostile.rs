//! A hostile plugin that passes `check` and the swap's smoke checks and misbehaves only on some
//! questions (the `hostile` fixture with `trigger=WORD`), and one written in the text format
//! that Rust cannot express (`TABLE_GROW`): what the host does about each.

use std::time::Duration;

use serde_json::{Value, json};
use turnstile_fixtures::{HOSTILE, TABLE_GROW};

use crate::support::{
    TestApp, TestServer, child_retrieve, child_state_when, logged, serve_child, stop_child,
};

fn hostile(attempt: &str, trigger: Option<&str>) -> Vec<String> {
    let mut flags = vec![
        "--plugin".to_owned(),
        HOSTILE.to_owned(),
        "--plugin-config".to_owned(),
        format!("attempt={attempt}"),
    ];
    if let Some(word) = trigger {
        flags.extend(["--plugin-config".to_owned(), format!("trigger={word}")]);
    }
    flags
}

async fn retrieve(server: &TestServer, question: &str) -> (u16, Value) {
    server.retrieve(json!({"question": question})).await
}

/// [`retrieve`], in process.
async fn ask(app: &TestApp, question: &str) -> (u16, Value) {
    app.retrieve(json!({"question": question})).await
}

/// A call that never returns keeps its slot (the serving engine never interrupts it), and is
/// made visible: `/state` shows its age, `/readyz` turns 503 `degraded` naming it once it is
/// older than `--stuck-after-ms`, and `/healthz` fails too past `--stuck-unhealthy-after-ms`.
/// Other requests are still served on the free slot. SIGTERM then exits 1 after the drain,
/// naming the stuck call, without a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_call_keeps_its_slot_and_degrades_readiness() {
    let mut flags = hostile("spin", Some("spin-now"));
    flags.extend(
        [
            "--max-active",
            "2",
            "--stuck-after-ms",
            "200",
            "--stuck-unhealthy-after-ms",
            "400",
            "--drain-ms",
            "300",
        ]
        .map(String::from),
    );
    let child = serve_child("spin", flags).await;
    let client = reqwest::Client::new();
    let impatient = crate::support::impatient_client(Duration::from_millis(500));
    let spinning = impatient
        .post(child.url("/retrieve"))
        .json(&json!({"question": "spin-now please"}))
        .send()
        .await;
    assert!(spinning.is_err(), "a spinning call answered");
    // The server notices the client left when it reads the closed connection: wait for that too
    // (a busy machine can take a while), not only for the lease's age.
    let state = child_state_when(
        &client,
        &child,
        "the spinning lease held 400 ms, its client gone",
        |s| {
            s["leases"][0]["held_ms"].as_u64().unwrap_or(0) > 400
                && s["leases"][0]["client_gone"] == true
        },
    )
    .await;
    assert_eq!(state["active"], 1, "{state}");
    let ready = client.get(child.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status().as_u16(), 503);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["status"], "degraded");
    assert_eq!(ready["stuck"][0]["ticket"], state["leases"][0]["ticket"]);
    let health = client.get(child.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 503);
    // The other slot still serves.
    let (status, _) = child_retrieve(&client, &child, "json").await;
    assert_eq!(status, 200);
    let report = stop_child(child).await;
    assert_eq!(report.shutdown_exit_status, Some(1), "{}", report.stderr);
    assert!(report.stderr.contains("drain timeout"), "{}", report.stderr);
    assert!(report.stderr.contains("held"), "{}", report.stderr);
    assert!(!report.stderr.contains("panicked"), "{}", report.stderr);
    assert!(
        !report.stderr.contains("shutdown complete"),
        "{}",
        report.stderr
    );
}

/// A sleeping call: the same drain, no tokio panic on the way out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_call_ends_the_drain_without_a_panic() {
    let mut flags = hostile("sleep", None);
    flags.extend(["--drain-ms", "300"].map(String::from));
    let child = serve_child("sleep", flags).await;
    let client = reqwest::Client::new();
    let request = client
        .post(child.url("/retrieve"))
        .json(&json!({"question": "json"}))
        .send();
    let sleeping = tokio::spawn(request);
    child_state_when(&client, &child, "the sleeping call admitted", |s| {
        s["active"] == 1
    })
    .await;
    let report = stop_child(child).await;
    sleeping.abort();
    assert_eq!(report.shutdown_exit_status, Some(1), "{}", report.stderr);
    assert!(report.stderr.contains("drain timeout"), "{}", report.stderr);
    assert!(!report.stderr.contains("panicked"), "{}", report.stderr);
}

/// `turnstile check` stops a looping candidate at its call deadline and reports `timeout`.
#[test]
fn check_refuses_a_looping_plugin_with_timeout() {
    let output = std::process::Command::new(crate::support::binary())
        .args([
            "check",
            "--json",
            HOSTILE,
            "--plugin-config",
            "attempt=spin",
        ])
        .args(["--call-deadline-ms", "300"])
        .arg("--cache-dir")
        .arg(crate::support::cache_dir())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let probe = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "behaviour.probe.1")
        .unwrap();
    assert_eq!(probe["passed"], false);
    assert!(
        probe["observed"].as_str().unwrap().contains("timeout"),
        "{probe}"
    );
}

/// A swap to a looping, a sleeping or a slow candidate is refused with `timeout` (its smoke
/// checks run with a call deadline); the swap lock is released, so the next good swap works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn looping_sleeping_and_slow_candidates_are_refused_and_the_next_swap_works() {
    let app = TestApp::swappable(&[]).await;
    for config in [
        json!({"attempt": "spin"}),
        json!({"attempt": "sleep", "sleep_ms": "4000"}),
        json!({"attempt": "slow", "slow_ms": "3000"}),
    ] {
        let response = app
            .swap_plugin(json!({"path": HOSTILE, "config": config}))
            .await;
        assert_eq!(response.status().as_u16(), 422, "{config}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "timeout", "{config}: {body}");
        let (status, served) = ask(&app, "json").await;
        assert_eq!(status, 200);
        assert_eq!(served["plugin"]["generation"], 1);
    }
    let good = app
        .swap_plugin(json!({"path": turnstile_fixtures::DELAY, "config": {"delay_ms": "0"}}))
        .await;
    assert_eq!(good.status().as_u16(), 200);
    app.stop().await;
}

/// Ids the corpus does not have, and a 1 MiB id: served as strictly as `check` checks, so 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_unknown_ids_are_never_served() {
    for attempt in ["big-id", "unknown-id"] {
        let flags = hostile(attempt, Some("evil"));
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let app = TestApp::load(&flags).await;
        let (status, _) = ask(&app, "json").await;
        assert_eq!(status, 200, "{attempt}: the trigger word is absent");
        let (status, body) = ask(&app, "evil json").await;
        assert_eq!(status, 500, "{attempt}: {body}");
        assert_eq!(body["status"], "internal_error");
        app.stop().await;
    }
}

/// A costly expression (64 prefix terms) is stopped by the corpus call's time budget: the plugin
/// gets the typed error and the request a quick 500, instead of one uninterruptible call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_corpus_expression_is_stopped_by_the_time_budget() {
    let flags = hostile("slow-query", None);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let app = TestApp::load(&flags).await;
    let plugin = app.state.plugin();
    let outcome = tokio::task::spawn_blocking(move || plugin.retrieve("json", 5, 0))
        .await
        .unwrap();
    let error = outcome.unwrap_err().to_string();
    assert!(error.contains("time budget"), "{error}");
    let (status, _) = ask(&app, "json").await;
    assert_eq!(status, 500);
    app.stop().await;
}

/// Floods of log messages and stdout are cut at their per-call bounds and counted; the call
/// still answers (no panic in the guest, no 500).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_stdout_floods_are_cut_and_counted() {
    for (attempt, what) in [("log-flood", "messages"), ("stdout-flood", "bytes")] {
        let flags = hostile(attempt, None);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let app = TestApp::load(&flags).await;
        let plugin = app.state.plugin();
        let (result, stats) =
            tokio::task::spawn_blocking(move || plugin.retrieve_metered("json", 3, 0))
                .await
                .unwrap();
        assert!(result.is_ok(), "{attempt}: {result:?}");
        match what {
            "messages" => assert_eq!(
                u64::from(stats.used.log.dropped_messages),
                1_000_000 - u64::from(turnstile_host::MAX_LOG_CALLS)
            ),
            _ => assert_eq!(
                stats.used.wasi.dropped_bytes,
                (1 << 20) - turnstile_host::MAX_CAPTURED_OUTPUT as u64
            ),
        }
        let (status, _) = ask(&app, "json").await;
        assert_eq!(status, 200, "{attempt}");
        app.stop().await;
    }
}

/// Text a plugin writes cannot become a line of the server log of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_cannot_forge_log_lines() {
    let child = serve_child("forge", hostile("forge-log", None)).await;
    let client = reqwest::Client::new();
    let (status, _) = child_retrieve(&client, &child, "json").await;
    assert_eq!(status, 200);
    logged(
        &child,
        r"ok\nINFO turnstile_server::serve::run: shutdown complete\r\u{1b}",
    )
    .await;
    let report = stop_child(child).await;
    let forged_lines = report
        .stderr
        .lines()
        .filter(|l| l.starts_with("INFO turnstile_server::serve::run: shutdown complete"))
        .count();
    assert_eq!(forged_lines, 0, "{}", report.stderr);
    assert!(
        !report.stderr.contains('\u{1b}'),
        "an escape sequence reached the log"
    );
}

/// A component with a table it grows without bound: `check` fails it on what it asked for, and
/// serving it gives 500 — the growth is refused, the host's memory does not follow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_growing_a_table_without_bound_is_refused() {
    let output = std::process::Command::new(crate::support::binary())
        .args(["check", "--json", TABLE_GROW])
        .arg("--cache-dir")
        .arg(crate::support::cache_dir())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    let memory = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "hygiene.memory")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(memory["passed"], false, "{memory}");
    assert!(
        memory["observed"]
            .as_str()
            .unwrap()
            .contains("table of 50000001"),
        "{memory}"
    );
    let server = TestServer::start(&["--plugin", TABLE_GROW]).await;
    let before = resident_bytes();
    let (a, b) = tokio::join!(retrieve(&server, "json"), retrieve(&server, "json"));
    assert_eq!((a.0, b.0), (500, 500));
    let grown = resident_bytes().saturating_sub(before);
    assert!(grown < 256 << 20, "the process grew by {grown} bytes");
    server.stop().await;
}

/// This process's resident memory, in bytes.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Five candidates that hang in a host call are refused with `timeout`, each after its own
/// deadline (its abandoned call counts on its own engine, not against the next candidate), and
/// then a good candidate installs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hung_candidates_then_a_good_one_which_installs() {
    let app = TestApp::swappable(&[]).await;
    for n in 0..5 {
        let response = app
            .swap_plugin(json!({
                "path": HOSTILE,
                "config": {"attempt": "sleep", "sleep_ms": "60000"}
            }))
            .await;
        assert_eq!(response.status().as_u16(), 422, "hung candidate {n}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "timeout", "hung candidate {n}: {body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(
            !detail.contains("within 0 ms"),
            "hung candidate {n} was refused for another's calls: {detail}"
        );
    }
    let good = app
        .swap_plugin(json!({"path": turnstile_fixtures::DELAY, "config": {"delay_ms": "0"}}))
        .await;
    let status = good.status().as_u16();
    let body: Value = good.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["generation"], 2, "{body}");
    app.stop().await;
}

/// Two swaps at once: a candidate slow to check does not hold up a quick one, which installs;
/// the slow one then gets `swap_conflict` and nothing of it is installed; sent again, it
/// installs over the new generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_that_loses_the_race_is_told_and_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().display().to_string();
    let server = std::sync::Arc::new(TestServer::swappable(&["--swap-root", &dir_arg]).await);
    let slow_swap = json!({"path": turnstile_fixtures::DELAY, "config": {"delay_ms": "800"}});
    let slow = {
        let (server, body) = (std::sync::Arc::clone(&server), slow_swap.clone());
        tokio::spawn(async move {
            let response = server.swap_plugin(body).await;
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        })
    };
    crate::support::eventually("the slow candidate being checked", || async {
        match server.state.swap.candidates_checking() {
            1 => Ok(()),
            n => Err(format!("{n} candidates being checked")),
        }
    })
    .await;
    let quick = server
        .swap_plugin(json!({"path": crate::support::lexical_plugin(dir.path())}))
        .await;
    assert_eq!(quick.status().as_u16(), 200);
    let (status, body) = slow.await.unwrap();
    assert_eq!(
        (status, body["error"].as_str()),
        (422, Some("swap_conflict")),
        "{body}"
    );
    let (status, served) = server.retrieve(json!({"question": "json dumps"})).await;
    assert_eq!(status, 200);
    assert_eq!(served["plugin"]["generation"], 2, "{served}");
    let again = server.swap_plugin(slow_swap).await;
    let status = again.status().as_u16();
    let body: Value = again.json().await.unwrap();
    assert_eq!((status, &body["generation"]), (200, &json!(3)), "{body}");
    std::sync::Arc::try_unwrap(server)
        .ok()
        .unwrap()
        .stop()
        .await;
}
