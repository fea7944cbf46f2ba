//! The scenario: the reference lab's cases, each checked against what the gate promises.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::args::DriveArgs;
use super::child::ServerChild;
use super::report::{CaseResult, ChildReport, DriveReport};
use super::settings::{OVERFLOW_ATTEMPTS, Settings};

const QUESTION: &str = "How do I parse command line arguments?";
/// How long to wait for a server state before the case fails.
const STATE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a child gets to exit after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

type Cases = BTreeMap<String, CaseResult>;

/// One HTTP answer, as the report shows it.
#[derive(Debug, Clone)]
struct Answer {
    http_status: u16,
    body: Value,
    retry_after: Option<String>,
}

impl Answer {
    fn observed(&self) -> Value {
        json!({
            "http_status": self.http_status,
            "status": self.body["status"],
            "retry_after": self.retry_after,
            "body": self.body,
        })
    }
}

async fn post(client: &reqwest::Client, server_url: &str) -> Result<Answer, reqwest::Error> {
    let response = client
        .post(format!("{server_url}/retrieve"))
        .json(&json!({"question": QUESTION}))
        .send()
        .await?;
    let http_status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.json().await.unwrap_or(Value::Null);
    Ok(Answer {
        http_status,
        body,
        retry_after,
    })
}

fn spawn_post(
    client: &reqwest::Client,
    url: &str,
) -> tokio::task::JoinHandle<Result<Answer, reqwest::Error>> {
    let (client, url) = (client.clone(), url.to_owned());
    tokio::spawn(async move { post(&client, &url).await })
}

async fn answer_of(task: tokio::task::JoinHandle<Result<Answer, reqwest::Error>>) -> Answer {
    match task.await {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => Answer {
            http_status: 0,
            body: json!({"client_error": e.to_string()}),
            retry_after: None,
        },
        Err(e) => Answer {
            http_status: 0,
            body: json!({"client_error": e.to_string()}),
            retry_after: None,
        },
    }
}

async fn state(client: &reqwest::Client, url: &str) -> Value {
    match client.get(format!("{url}/state")).send().await {
        Ok(r) => r.json().await.unwrap_or(Value::Null),
        Err(e) => json!({"client_error": e.to_string()}),
    }
}

/// Polls `/state` until `done` holds; returns the last state either way.
async fn state_when(client: &reqwest::Client, url: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + STATE_TIMEOUT;
    loop {
        let s = state(client, url).await;
        if done(&s) || Instant::now() >= deadline {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn statuses(state: &Value) -> Vec<Value> {
    state["events"]
        .as_array()
        .map(|events| events.iter().map(|e| e["status"].clone()).collect())
        .unwrap_or_default()
}

fn counts(state: &Value) -> Value {
    json!({"active": state["active"], "waiting": state["waiting"]})
}

async fn start(
    name: &str,
    binary: &Path,
    args: Vec<String>,
    startup_timeout: Duration,
) -> anyhow::Result<ServerChild> {
    let (name, binary) = (name.to_owned(), binary.to_owned());
    tokio::task::spawn_blocking(move || ServerChild::start(&name, &binary, &args, startup_timeout))
        .await?
}

fn gate_args(
    plugin: &Path,
    config: Option<String>,
    settings: &Settings,
    wait_ms: u64,
) -> Vec<String> {
    let mut args = vec!["--plugin".to_owned(), plugin.display().to_string()];
    if let Some(c) = config {
        args.extend(["--plugin-config".to_owned(), c]);
    }
    args.extend([
        "--max-active".to_owned(),
        settings.max_active.to_string(),
        "--max-waiting".to_owned(),
        settings.max_waiting.to_string(),
        "--wait-ms".to_owned(),
        wait_ms.to_string(),
        "--drain-ms".to_owned(),
        "5000".to_owned(),
    ]);
    args
}

/// A, B, C against one slot and one queue place: admitted, queued, 429, 503, 200, idle.
async fn overflow_and_deadline(client: &reqwest::Client, url: &str, cases: &mut Cases) {
    let a = spawn_post(client, url);
    let active = state_when(client, url, |s| s["active"] == 1).await;
    cases.insert(
        "active_observed".into(),
        CaseResult::check(json!({"active": 1, "waiting": 0}), counts(&active)),
    );
    let b = spawn_post(client, url);
    let queued = state_when(client, url, |s| s["waiting"] == 1).await;
    cases.insert(
        "queued_observed".into(),
        CaseResult::check(json!({"active": 1, "waiting": 1}), counts(&queued)),
    );
    let c = answer_of(spawn_post(client, url)).await;
    cases.insert(
        "queue_overflow".into(),
        CaseResult::check(
            json!({"http_status": 429, "status": "queue_full"}),
            c.observed(),
        ),
    );
    let b = answer_of(b).await;
    cases.insert(
        "wait_deadline".into(),
        CaseResult::check(
            json!({"http_status": 503, "status": "wait_timeout"}),
            b.observed(),
        ),
    );
    let a = answer_of(a).await;
    cases.insert(
        "first_completed".into(),
        CaseResult::check(
            json!({"http_status": 200, "status": "completed"}),
            a.observed(),
        ),
    );
    let idle = state_when(client, url, |s| s["active"] == 0 && s["waiting"] == 0).await;
    cases.insert(
        "idle".into(),
        CaseResult::check(
            json!({"active": 0, "waiting": 0,
                   "events": ["admitted", "queued", "queue_full", "wait_timeout", "released"]}),
            json!({"active": idle["active"], "waiting": idle["waiting"], "events": statuses(&idle), "snapshot": idle}),
        ),
    );
}

/// A client that gives up while its worker runs: the lease stays held until the worker ends.
async fn client_timeout(url: &str, settings: &Settings, cases: &mut Cases) {
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(settings.client_timeout_ms))
        .build()
        .unwrap_or_default();
    let observer = reqwest::Client::new();
    let before = statuses(&state(&observer, url).await).len();
    let outcome = post(&impatient, url).await;
    let (exception, detail) = match &outcome {
        Err(e) if e.is_timeout() => ("ReadTimeout".to_owned(), e.to_string()),
        Err(e) => (format!("{e:?}"), e.to_string()),
        Ok(a) => (
            format!("no exception: HTTP {}", a.http_status),
            String::new(),
        ),
    };
    cases.insert(
        "client_timeout".into(),
        CaseResult::check(
            json!({"client_exception": "ReadTimeout"}),
            json!({"client_exception": exception, "detail": detail, "timeout_ms": settings.client_timeout_ms}),
        ),
    );
    let after_timeout = state(&observer, url).await;
    cases.insert(
        "server_after_timeout".into(),
        CaseResult::check(
            json!({"active": 1}),
            json!({"active": after_timeout["active"], "waiting": after_timeout["waiting"],
                   "client_gone": after_timeout["client_gone"], "leases": after_timeout["leases"]}),
        ),
    );
    let done = state_when(&observer, url, |s| s["active"] == 0).await;
    let new_events: Vec<Value> = statuses(&done).into_iter().skip(before).collect();
    cases.insert(
        "server_after_completion".into(),
        CaseResult::check(
            json!({"active": 0, "events": ["admitted", "released"]}),
            json!({"active": done["active"], "waiting": done["waiting"], "events": new_events}),
        ),
    );
}

/// Two overlapping requests with a long deadline: the second is promoted when the first ends.
async fn fifo_promotion(client: &reqwest::Client, url: &str, cases: &mut Cases) {
    let a = spawn_post(client, url);
    state_when(client, url, |s| s["active"] == 1).await;
    let b = spawn_post(client, url);
    state_when(client, url, |s| s["waiting"] == 1).await;
    let (a, b) = (answer_of(a).await, answer_of(b).await);
    let idle = state_when(client, url, |s| s["active"] == 0 && s["waiting"] == 0).await;
    cases.insert(
        "fifo_promotion".into(),
        CaseResult::check(
            json!({"http_statuses": [200, 200], "statuses": ["completed", "completed"],
                   "events": ["admitted", "queued", "released", "promoted", "released"]}),
            json!({"http_statuses": [a.http_status, b.http_status],
                   "statuses": [a.body["status"], b.body["status"]],
                   "events": statuses(&idle),
                   "queue_ms_of_second": b.body["timing"]["queue_ms"]}),
        ),
    );
}

/// The fault fixture fails while constructing its corpus tools: 500, and the lease is released.
async fn constructor_failure(client: &reqwest::Client, url: &str, cases: &mut Cases) {
    let answer = post(client, url).await;
    let after = state_when(client, url, |s| s["active"] == 0).await;
    let observed = match answer {
        Ok(a) => json!({"http_status": a.http_status, "status": a.body["status"],
                        "active_after": after["active"], "events": statuses(&after)}),
        Err(e) => json!({"client_error": e.to_string()}),
    };
    cases.insert(
        "server_constructor_failure".into(),
        CaseResult::check(
            json!({"http_status": 500, "status": "internal_error", "active_after": 0,
                   "events": ["admitted", "released"]}),
            observed,
        ),
    );
}

async fn stop(server: ServerChild) -> anyhow::Result<ChildReport> {
    Ok(tokio::task::spawn_blocking(move || server.stop(SHUTDOWN_GRACE)).await?)
}

fn not_started(cases: &mut Cases, names: &[&str]) {
    for name in names {
        cases.insert(
            (*name).into(),
            CaseResult::check(json!("server started"), json!("server did not start")),
        );
    }
}

/// Runs the three servers' scenarios one after the other.
pub async fn run_all(
    binary: &Path,
    args: &DriveArgs,
    settings: Settings,
    startup_timeout: Duration,
) -> anyhow::Result<DriveReport> {
    let client = reqwest::Client::new();
    let mut cases = Cases::new();
    let mut servers = Vec::new();
    let delay = Some(format!("delay_ms={}", settings.delay_ms));

    let mut overflow_retries = Vec::new();
    for attempt in 1..=OVERFLOW_ATTEMPTS {
        let gate = start(
            "gate",
            binary,
            gate_args(
                &args.delay_plugin,
                delay.clone(),
                &settings,
                settings.wait_ms,
            ),
            startup_timeout,
        )
        .await?;
        if !gate.ready() {
            not_started(
                &mut cases,
                &[
                    "active_observed",
                    "queued_observed",
                    "queue_overflow",
                    "wait_deadline",
                    "first_completed",
                    "idle",
                    "client_timeout",
                    "server_after_timeout",
                    "server_after_completion",
                ],
            );
            servers.push(stop(gate).await?);
            break;
        }
        let url = gate.url("");
        let mut attempt_cases = Cases::new();
        overflow_and_deadline(&client, &url, &mut attempt_cases).await;
        if missed_the_window(&attempt_cases) && attempt < OVERFLOW_ATTEMPTS {
            let report = stop(gate).await?;
            overflow_retries.push(json!({
                "attempt": attempt,
                "events": attempt_cases.get("idle").map(|c| c.observed["events"].clone()),
                "server_exit_status": report.shutdown_exit_status,
            }));
            continue;
        }
        cases.append(&mut attempt_cases);
        client_timeout(&url, &settings, &mut cases).await;
        servers.push(stop(gate).await?);
        break;
    }

    let fifo = start(
        "fifo_promotion",
        binary,
        gate_args(&args.delay_plugin, delay, &settings, settings.fifo_wait_ms),
        startup_timeout,
    )
    .await?;
    if fifo.ready() {
        fifo_promotion(&client, &fifo.url(""), &mut cases).await;
    } else {
        not_started(&mut cases, &["fifo_promotion"]);
    }
    servers.push(stop(fifo).await?);

    let fault = start(
        "constructor_failure",
        binary,
        gate_args(&args.fault_plugin, None, &settings, settings.wait_ms),
        startup_timeout,
    )
    .await?;
    if fault.ready() {
        constructor_failure(&client, &fault.url(""), &mut cases).await;
    } else {
        not_started(&mut cases, &["server_constructor_failure"]);
    }
    servers.push(stop(fault).await?);

    let children_ok = servers.iter().all(|s| {
        s.startup_observed
            && s.shutdown_exit_status == Some(0)
            && s.shutdown_complete_observed
            && s.server_process_reaped
    });
    let passed = children_ok && cases.values().all(|c| c.passed);
    Ok(DriveReport {
        execution_mode: "actual-concurrent-loopback-http-single-process",
        model_called: false,
        controlled_delay_seconds: settings.delay_ms as f64 / 1000.0,
        settings,
        scope: "Shows, over real loopback HTTP against real `turnstile serve` processes with a \
                controlled 350 ms plugin delay, that one process's gate admits, queues, refuses (429), \
                times out waiters (503), promotes in FIFO order, and holds a lease until the worker \
                really ends. It is not a latency or capacity benchmark, and says nothing about capacity \
                shared across processes, rate limits or per-user fairness.",
        cases,
        servers,
        overflow_retries,
        passed,
    })
}

/// Whether an overflow run failed only because the machine was slower than the scenario's
/// window: the waiter's deadline passed (its `wait_timeout` is the server's third event) before
/// the third request arrived. Then that request was queued and served, not refused. A gate fault
/// (a refusal missing with the waiter still queued, or events out of order) is not this.
fn missed_the_window(cases: &Cases) -> bool {
    let overflow_refused = cases.get("queue_overflow").is_some_and(|c| c.passed);
    let events = cases
        .get("idle")
        .map(|c| c.observed["events"].clone())
        .unwrap_or_default();
    !overflow_refused
        && events.as_array().is_some_and(|e| {
            e.len() >= 3 && e[0] == "admitted" && e[1] == "queued" && e[2] == "wait_timeout"
        })
}
