//! The log never blocks serving: a server whose stdout and stderr are pipes that nobody reads
//! (a stuck log shipper) keeps answering; the lines past its buffer are dropped whole, counted,
//! and reported once the sink drains.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;
use turnstile_tools::drive::ServerChild;

use crate::support::{binary, cache_dir, child_metrics, eventually, series_value};

/// Far more log than a pipe (64 KiB) and the buffer (64 lines) hold: about 500 bytes per
/// access line.
const REQUESTS: usize = 600;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_that_nobody_reads_does_not_stall_serving() {
    let args: Vec<String> = [
        "--cache-dir",
        &cache_dir().display().to_string(),
        "--log-format",
        "json",
        "--log-buffer-lines",
        "64",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let (child, _stdout, mut stderr) = tokio::task::spawn_blocking(move || {
        ServerChild::start_unread("unread-log", binary(), &args).unwrap()
    })
    .await
    .unwrap();
    // A request that the log could stall would never answer: every one must, within the client's
    // patience (generous: it bounds a stall, it does not time the server).
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    for n in 0..REQUESTS {
        let response = client
            .post(child.url("/retrieve"))
            .json(&serde_json::json!({"question": format!("json dumps {n}")}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("request {n} while nobody reads the log: {e}"));
        assert_eq!(response.status(), 200, "request {n}");
    }
    let dropped = dropped_lines(&client, &child).await;
    assert!(
        dropped > 0,
        "{REQUESTS} access lines with nobody reading and nothing dropped"
    );

    // The sink drains: read the pipe from here on, and make one more line.
    let reader = std::thread::spawn(move || {
        let mut log = Vec::new();
        let _ = stderr.read_to_end(&mut log);
        log
    });
    // Until the sink has drained, a new line may still be dropped: wait (with a deadline) until a
    // request's access line is no longer lost — then nothing is dropped any more.
    let after = crate::support::eventually("a line that is not dropped", || async {
        let before = dropped_lines(&client, &child).await;
        let (status, _) = retrieve(&client, &child).await;
        assert_eq!(status, 200);
        let after = dropped_lines(&client, &child).await;
        if after == before {
            Ok(after)
        } else {
            Err(format!("{after} dropped, {before} before the request"))
        }
    })
    .await;
    // Dropping still counts only what was lost while the sink was full.
    assert!(after >= dropped, "{after} < {dropped}");
    let report = tokio::task::spawn_blocking(move || child.stop(Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(report.shutdown_exit_status, Some(0), "{report:?}");
    let log = String::from_utf8(reader.join().unwrap()).expect("the log is UTF-8");

    // No torn line: every line is one whole JSON object.
    let mut reported = 0;
    for line in log.lines() {
        let entry: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a torn or foreign line ({e}): {line:.200}"));
        if entry["target"] == "turnstile_server::logging" {
            assert_eq!(entry["level"], "WARN", "{entry}");
            reported += entry["fields"]["dropped"].as_u64().unwrap();
        }
    }
    // Reported once the sink drained: every line dropped before it, in one warning or more.
    assert!(
        reported >= dropped,
        "reported {reported} of {dropped}: {log:.2000}"
    );
    assert!(reported <= after, "reported {reported}, counted {after}");
}

async fn retrieve(client: &reqwest::Client, child: &ServerChild) -> (u16, Value) {
    let response = client
        .post(child.url("/retrieve"))
        .json(&serde_json::json!({"question": "json dumps"}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// `turnstile_log_lines_dropped_total` from the child's `/metrics`.
async fn dropped_lines(client: &reqwest::Client, child: &ServerChild) -> u64 {
    eventually("turnstile_log_lines_dropped_total in /metrics", || async {
        let text = child_metrics(client, child).await?;
        series_value(&text, "turnstile_log_lines_dropped_total")
            .map(|v| v as u64)
            .ok_or_else(|| "no such series".to_owned())
    })
    .await
}
