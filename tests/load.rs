//! `turnstile load` against a real in-process server: a smoke-sized closed-loop run, flag
//! validation, the Locust profiles that mirror it, and `--chat --stream` against the `rag`
//! plugin in front of the streaming test upstream.

use std::path::PathBuf;

use std::time::Duration;

use crate::support::TestServer;
use crate::support::upstream::Upstream;
use clap::Parser;
use serde_json::Value;
use turnstile_tools::load::{
    DEFAULT_BODY, DEFAULT_QUESTION, LoadArgs, REQUESTS_FILE, SUMMARY_FILE, SVG_FILE, run_load,
};

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    load: LoadArgs,
}

fn args(url: String, output: PathBuf) -> LoadArgs {
    LoadArgs {
        url,
        users: 4,
        spawn_rate: 100.0,
        duration: 2.0,
        body: DEFAULT_BODY.to_owned(),
        bodies: None,
        header: Vec::new(),
        output,
        timeout_s: 10.0,
        quiet: true,
        chat: false,
        stream: false,
        model: None,
        question: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn smoke_run_against_the_delay_plugin() {
    let server = TestServer::start(&[
        "--plugin",
        turnstile_fixtures::DELAY,
        "--plugin-config",
        "delay_ms=50",
        "--max-active",
        "2",
    ])
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let output = tmp.path().to_owned();
    let summary = run_load(&args(server.url("/retrieve"), output.join("nested")))
        .await
        .unwrap();
    server.stop().await;

    let dir = output.join("nested");
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join(SUMMARY_FILE)).unwrap()).unwrap();
    let requests = json["requests"].as_u64().unwrap();
    assert!(requests > 0, "{json:#}");
    assert_eq!(requests, summary.requests);
    // 4 users, 2 slots, 50 ms per call: about 40 requests per second.
    assert!(requests >= 20, "only {requests} requests in 2 s: {json:#}");
    assert_eq!(json["statuses"].as_object().unwrap().len(), 1, "{json:#}");
    assert_eq!(json["statuses"]["200"].as_u64(), Some(requests), "{json:#}");
    assert_eq!(json["failures"], 0);
    assert_eq!(json["abandoned"], 0);
    assert_eq!(json["ramp"]["users_started"], 4);
    assert_eq!(json["settings"]["users"], 4);
    assert_eq!(
        json["settings"]["body"]["question"],
        "How do I parse command line arguments?"
    );

    // Latency: at least the plugin's 50 ms, and ordered percentiles.
    let l = &json["latency_ms"];
    let p = |k: &str| l[k].as_f64().unwrap();
    assert!(p("p50") >= 50.0, "{l}");
    assert!(
        p("p50") <= p("p90") && p("p90") <= p("p99") && p("p99") <= p("max"),
        "{l}"
    );

    // The plateau exists, and its rate is near the gate's capacity (2 slots / ~50 ms).
    let plateau = json["plateau"]["requests_per_s"].as_f64().unwrap();
    assert!(
        (10.0..=60.0).contains(&plateau),
        "plateau {plateau}: {json:#}"
    );

    // The per-second series accounts for every request.
    let series = json["time_series"].as_array().unwrap();
    assert!(series.len() >= 2, "{json:#}");
    let total: u64 = series.iter().map(|s| s["requests"].as_u64().unwrap()).sum();
    assert_eq!(total, requests);
    assert_eq!(series[0]["second"], 0);
    assert!(series.iter().any(|s| s["users"] == 4), "{json:#}");

    let svg = std::fs::read_to_string(dir.join(SVG_FILE)).unwrap();
    assert!(svg.starts_with("<svg") && svg.len() > 1000, "{svg}");
    assert!(svg.contains("Requests per second"));
    assert_eq!(json["charts"]["svg"], SVG_FILE);
    // PNG is optional (it needs a font), but then the reason is given.
    assert!(
        json["charts"]["png"].is_string() || json["charts"]["png_skipped"].is_string(),
        "{json:#}"
    );

    let table = turnstile_tools::load::table(&summary);
    assert!(table.contains("requests/s plateau"), "{table}");
    assert!(table.contains("status 200"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bodies_file_is_sent_in_turn() {
    let server = TestServer::start(&[]).await;
    let tmp = tempfile::tempdir().unwrap();
    let mix = tmp.path().join("mix.jsonl");
    // Two valid questions and one blank (422): in turn, so both statuses appear, 2 : 1.
    std::fs::write(
        &mix,
        "{\"question\": \"json dumps\", \"limit\": 3}\n\n{\"question\": \"parse arguments\"}\n{\"question\": \" \"}\n",
    )
    .unwrap();
    let mut a = args(server.url("/retrieve"), tmp.path().join("out"));
    a.bodies = Some(mix.clone());
    let summary = run_load(&a).await.unwrap();
    server.stop().await;
    let json: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("out").join(SUMMARY_FILE)).unwrap())
            .unwrap();
    assert_eq!(json["settings"]["bodies"], 3, "{json:#}");
    assert_eq!(json["settings"]["body"]["question"], "json dumps");
    let ok = json["statuses"]["200"].as_u64().unwrap();
    let blank = json["statuses"]["422"].as_u64().unwrap();
    assert_eq!(ok + blank, summary.requests);
    // Request n sends line n mod 3: 200, 200, 422, 200, 200, 422, ...
    assert!(ok.abs_diff(2 * blank) <= 2, "{ok} ok, {blank} blank");

    // A bad line is refused with its number, before any request.
    std::fs::write(&mix, "{\"question\": \"q\"}\n[1, 2]\n").unwrap();
    let error = run_load(&a).await.unwrap_err().to_string();
    assert!(
        error.contains("--bodies") && error.contains("line 2"),
        "{error}"
    );
}

/// `--chat --stream` against `rag` and the streaming upstream: every stream read to its `[DONE]`,
/// its first content delta timed before its end, the model found through `/v1/models`, and each
/// request's tag recorded by the client and by the upstream alike, so the two can be joined.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chat_streams_are_read_as_they_arrive_and_tagged() {
    // 6 tokens over 300 ms after 20 ms: a stream's first delta comes well before its end.
    let upstream = Upstream::start_with(
        Duration::from_millis(20),
        &["--stream-ms", "300", "--answer-words", "6"],
        &[],
    );
    let origin = upstream.origin().to_owned();
    let server = TestServer::start(&[
        "--plugin",
        turnstile_fixtures::RAG,
        "--outbound-allow",
        &origin,
        "--plugin-config",
        &format!("upstream={origin}"),
        "--plugin-config",
        "model=local",
        "--max-active",
        "2",
    ])
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("chat");
    // The server's root: the chat route and its model list are found from it.
    let mut a = args(server.url("/"), dir.clone());
    a.chat = true;
    a.stream = true;
    a.duration = 1.5;
    let summary = run_load(&a).await.unwrap();
    let route = server.url("/v1/chat/completions");
    let stats: Value = reqwest::get(format!("{origin}/stats"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let timed: Value = reqwest::get(format!("{origin}/stats/requests"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    server.stop().await;

    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join(SUMMARY_FILE)).unwrap()).unwrap();
    let requests = json["requests"].as_u64().unwrap();
    assert!(requests >= 2, "{json:#}");
    assert_eq!(json["statuses"]["200"].as_u64(), Some(requests), "{json:#}");
    assert_eq!(json["settings"]["url"], route);
    let chat = &json["settings"]["chat"];
    assert_eq!(chat["model"], "turnstile-rag", "from /v1/models: {json:#}");
    assert_eq!(chat["stream"], true);
    assert_eq!(chat["question"], DEFAULT_QUESTION);
    assert_eq!(json["settings"]["body"]["stream"], true, "{json:#}");
    // TTFT beside the total, for every stream; the first delta came before the end.
    let (ttft, total) = (&json["ttft_ms"], &json["latency_ms"]);
    let p = |v: &Value, k: &str| v[k].as_f64().unwrap();
    assert!(p(ttft, "p50") < p(total, "p50"), "{ttft} {total}");
    assert!(p(ttft, "p50") <= p(ttft, "p95") && p(ttft, "p95") <= p(ttft, "p99"));
    assert!(
        json["time_series"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["ttft_p50_ms"].is_number()),
        "{json:#}"
    );
    // The upstream never saw more than the gate's 2 at once.
    assert!(stats["max_in_flight"].as_u64().unwrap() <= 2, "{stats}");

    // One line per request, each tag once, each first delta between sending and the end, each
    // tag known to the upstream with its own first token.
    let log = std::fs::read_to_string(dir.join(REQUESTS_FILE)).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, requests, "{log}");
    let upstream_tags: std::collections::HashMap<&str, &Value> = timed["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["tag"].as_str().unwrap(), r))
        .collect();
    let mut tags = std::collections::HashSet::new();
    for line in &lines {
        let tag = line["tag"].as_str().unwrap();
        assert!(tags.insert(tag.to_owned()), "{tag} twice: {log}");
        assert_eq!(line["status"], "200", "{line}");
        assert_eq!(line["deltas"], 6, "one delta per token: {line}");
        let (sent, first, done) = (p(line, "sent"), p(line, "first_delta"), p(line, "done"));
        assert!(sent < first && first <= done, "{line}");
        let seen = upstream_tags
            .get(tag)
            .unwrap_or_else(|| panic!("the upstream never saw {tag}: {timed}"));
        assert!(seen["first_token"].is_number(), "{seen}");
    }
    let table = turnstile_tools::load::table(&summary);
    assert!(
        table.contains("ttft p95") && table.contains("total p99"),
        "{table}"
    );
    assert!(
        table.contains("chat, streamed, model turnstile-rag"),
        "{table}"
    );
}

fn parse_error(flags: &[&str]) -> String {
    let mut argv = vec!["load"];
    argv.extend_from_slice(flags);
    match Wrapper::try_parse_from(argv) {
        Ok(_) => panic!("{flags:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn invalid_flags_are_refused_with_flag_value_and_range() {
    let base = ["--url", "http://127.0.0.1:1/retrieve", "--output", "/tmp/x"];
    let with = |extra: &[&'static str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    // Each refusal: the flags after `--url … --output …` (or the whole line when the URL itself
    // is the bad value), and what the message must name.
    let with_base: &[(&[&str], &[&str])] = &[
        (
            &["--users", "0", "--duration", "1"],
            &["--users", "'0'", "1..=10000"],
        ),
        (
            &["--users", "10001", "--duration", "1"],
            &["--users", "1..=10000"],
        ),
        (
            &["--users", "2", "--duration", "1", "--spawn-rate", "0"],
            &["--spawn-rate", "more than 0"],
        ),
        (
            &["--users", "2", "--duration", "-3"],
            &["--duration", "86400"],
        ),
        (
            &["--users", "2", "--duration", "soon"],
            &["--duration", "not a number"],
        ),
        (
            &["--users", "2", "--duration", "1", "--timeout-s", "0"],
            &["--timeout-s", "3600"],
        ),
        (
            &["--users", "2", "--duration", "1", "--body", "{oops"],
            &["--body", "not valid JSON"],
        ),
        (
            &["--users", "2", "--duration", "1", "--header", "x-tenant"],
            &["--header", "NAME: VALUE"],
        ),
        (
            &[
                "--users",
                "2",
                "--duration",
                "1",
                "--header",
                "content-type: text/plain",
            ],
            &["--header", "content-type"],
        ),
    ];
    let chat: &[(&[&str], &[&str])] = &[
        (
            &["--users", "2", "--duration", "1", "--stream"],
            &["--stream", "--chat"],
        ),
        (
            &["--users", "2", "--duration", "1", "--model", "m"],
            &["--model", "--chat"],
        ),
        (
            &["--users", "2", "--duration", "1", "--chat", "--body", "{}"],
            &["--body", "--chat"],
        ),
        (
            &[
                "--users",
                "2",
                "--duration",
                "1",
                "--chat",
                "--question",
                " ",
            ],
            &["--question", "blank"],
        ),
    ];
    let whole: &[(&[&str], &[&str])] = &[
        (
            &[
                "--url",
                "https://example.com/",
                "--output",
                "/tmp/x",
                "--users",
                "1",
                "--duration",
                "1",
            ],
            &["--url", "https is not supported"],
        ),
        (
            &[
                "--url",
                "not a url",
                "--output",
                "/tmp/x",
                "--users",
                "1",
                "--duration",
                "1",
            ],
            &["--url", "absolute URL"],
        ),
    ];
    let cases = with_base
        .iter()
        .chain(chat)
        .map(|(extra, needles)| (with(extra), *needles))
        .chain(
            whole
                .iter()
                .map(|(argv, needles)| (argv.to_vec(), *needles)),
        );
    for (argv, needles) in cases {
        let e = parse_error(&argv);
        assert!(needles.iter().all(|n| e.contains(n)), "{argv:?}: {e}");
    }

    // Accepted: the defaults fill in body, spawn rate and timeout.
    let mut argv = vec!["load"];
    argv.extend(with(&["--users", "3", "--duration", "2.5"]));
    let ok = Wrapper::try_parse_from(argv).unwrap();
    assert_eq!(ok.load.body, DEFAULT_BODY);
    assert_eq!(ok.load.spawn_rate, 1.0);
    assert_eq!(ok.load.timeout_s, 60.0);
}

#[tokio::test]
async fn invalid_args_built_in_code_are_refused_before_any_request() {
    let tmp = tempfile::tempdir().unwrap();
    let output = tmp.path().join("invalid");
    let mut bad = args("http://127.0.0.1:1/retrieve".into(), output.clone());
    bad.users = 0;
    let e = run_load(&bad).await.unwrap_err().to_string();
    assert!(e.contains("--users") && e.contains("1..=10000"), "{e}");

    let mut bad = args("http://127.0.0.1:1/retrieve".into(), output.clone());
    bad.body = "not json".into();
    let e = run_load(&bad).await.unwrap_err().to_string();
    assert!(e.contains("--body") && e.contains("not valid JSON"), "{e}");

    let mut bad = args("http://127.0.0.1:1/retrieve".into(), output.clone());
    bad.spawn_rate = f64::NAN;
    let e = run_load(&bad).await.unwrap_err().to_string();
    assert!(e.contains("--spawn-rate"), "{e}");

    // An --output that is a file.
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let e = run_load(&args("http://127.0.0.1:1/retrieve".into(), file.clone()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--output") && e.contains("not a directory"),
        "{e}"
    );
    assert!(!output.exists(), "nothing is created for refused flags");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_errors_are_counted_by_kind() {
    // A port nothing listens on: every request fails to connect, quickly.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let tmp = tempfile::tempdir().unwrap();
    let output = tmp.path().join("refused");
    let mut a = args(format!("http://127.0.0.1:{port}/retrieve"), output.clone());
    a.users = 1;
    a.duration = 0.5;
    let summary = run_load(&a).await.unwrap();
    assert!(summary.requests > 0);
    assert_eq!(summary.failures, summary.requests);
    assert_eq!(
        summary.statuses.keys().collect::<Vec<_>>(),
        ["connect_error"],
        "{:?}",
        summary.statuses
    );
}

#[test]
fn locustfile_parses() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../loadtest/locustfile.py");
    let run = std::process::Command::new("python3")
        .args([
            "-c",
            "import ast,sys; ast.parse(open(sys.argv[1]).read())",
            path,
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 (needed to check {path}): {e}"));
    assert!(
        run.status.success(),
        "{path} does not parse:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("HttpUser") && text.contains("constant(0)"));
    assert!(text.contains("/retrieve") && text.contains("How do I parse command line arguments?"));
}

/// `--header` is sent with every request: against a server whose flows are named by that header,
/// a value that is no flow name is refused, every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn headers_are_sent_with_every_request() {
    let server = TestServer::start(&["--flow-header", "x-tenant"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = args(server.url("/retrieve"), tmp.path().join("bad"));
    bad.duration = 0.5;
    bad.header = vec!["x-tenant: two words".to_owned()];
    let summary = run_load(&bad).await.unwrap();
    assert!(summary.requests > 0);
    assert_eq!(
        summary.statuses.get("400"),
        Some(&summary.requests),
        "{:?}",
        summary.statuses
    );
    let mut good = args(server.url("/retrieve"), tmp.path().join("good"));
    good.duration = 0.5;
    good.header = vec!["x-tenant: batch".to_owned()];
    let summary = run_load(&good).await.unwrap();
    assert_eq!(
        summary.statuses.get("200"),
        Some(&summary.requests),
        "{:?}",
        summary.statuses
    );
    server.stop().await;
}

/// The streamed chat profile for Locust parses, streams, and reports TTFT beside the request.
#[test]
fn chat_locustfile_parses() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bench/locust/chat_stream.py"
    );
    let run = std::process::Command::new("python3")
        .args([
            "-c",
            "import ast,sys; ast.parse(open(sys.argv[1]).read())",
            path,
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 (needed to check {path}): {e}"));
    assert!(
        run.status.success(),
        "{path} does not parse:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(path).unwrap();
    for needle in [
        "HttpUser",
        "constant(0)",
        "/v1/chat/completions",
        "stream=True",
        "events.request.fire",
        "\"ttft\"",
        "num_users=60",
        "spawn_rate=5",
    ] {
        assert!(text.contains(needle), "{path} lacks {needle}");
    }
}
