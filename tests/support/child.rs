//! `turnstile serve` children of the real binary: for signals, logs and whole processes.

use std::time::Duration;

use serde_json::Value;
use turnstile_tools::drive::ServerChild;

use super::files::{binary, cache_dir};
use super::wait::eventually;

/// A `turnstile serve` child of the real binary (killed and reaped if the test fails first).
pub async fn serve_child(name: &str, flags: Vec<String>) -> ServerChild {
    let mut args = vec!["--cache-dir".to_owned(), cache_dir().display().to_string()];
    args.extend(flags);
    let name = name.to_owned();
    let child = tokio::task::spawn_blocking(move || {
        ServerChild::start(&name, binary(), &args, Duration::from_secs(120)).unwrap()
    })
    .await
    .unwrap();
    assert!(
        child.ready(),
        "the serve child never logged that it is ready"
    );
    child
}

/// POSTs `{"question": question}` to a child's `/retrieve`: its status and body.
pub async fn child_retrieve(
    client: &reqwest::Client,
    child: &ServerChild,
    question: &str,
) -> (u16, Value) {
    let response = client
        .post(child.url("/retrieve"))
        .json(&serde_json::json!({ "question": question }))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A child's `/metrics` scrape (a failure in words, for [`eventually`]).
pub async fn child_metrics(
    client: &reqwest::Client,
    child: &ServerChild,
) -> Result<String, String> {
    client
        .get(child.url("/metrics"))
        .send()
        .await
        .map_err(|e| e.to_string())?
        .text()
        .await
        .map_err(|e| e.to_string())
}

/// The value of `series` (its name and labels, as a scrape writes them) in `scrape`.
pub fn series_value(scrape: &str, series: &str) -> Option<f64> {
    scrape
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// Waits until a child has logged `needle`.
pub async fn logged(child: &ServerChild, needle: &str) {
    eventually(&format!("{needle:?} in the log"), || async {
        if child.logged(needle) {
            Ok(())
        } else {
            Err(format!(
                "not yet; the log ends with:\n{}",
                child.log_tail(4096)
            ))
        }
    })
    .await;
}

/// SIGTERM to a child; waits for it (SIGKILL past 30 s) and reports how it ended.
pub async fn stop_child(child: ServerChild) -> turnstile_tools::drive::ChildReport {
    tokio::task::spawn_blocking(move || child.stop(Duration::from_secs(30)))
        .await
        .unwrap()
}

/// Polls a child's `/state` until `done` holds.
pub async fn child_state_when(
    client: &reqwest::Client,
    child: &ServerChild,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, || async {
        let state: Value = client
            .get(child.url("/state"))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        if done(&state) {
            Ok(state)
        } else {
            Err(state.to_string())
        }
    })
    .await
}
