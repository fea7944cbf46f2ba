//! What a new user meets first: README's sample answers are what the server answers (the same
//! request, the same sources, scores, plugin and corpus; timings without float noise), and a
//! request for a route or method that does not exist gets the same JSON refusal as every other.

use axum::body::Body;
use axum::http::Request;
use serde_json::Value;

use crate::support::TestApp;

/// README's "Example" section.
fn example_section() -> &'static str {
    let readme = include_str!("../README.md");
    let start = readme
        .find("\n## Example\n")
        .expect("README has an Example section");
    let rest = &readme[start + 1..];
    let end = rest.find("\n### ").unwrap_or(rest.len());
    &rest[..end]
}

/// Each `curl` of the Example: (the body it sends, whether it asks for the headers, the status
/// line shown if any, the answer's body as shown).
fn examples() -> Vec<(String, Option<String>, String)> {
    let mut examples = Vec::new();
    let lines: Vec<&str> = example_section().lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with("$ curl") {
            i += 1;
            continue;
        }
        let mut command = lines[i].trim_end_matches('\\').to_owned();
        while lines[i].ends_with('\\') {
            i += 1;
            command.push_str(lines[i].trim_end_matches('\\'));
        }
        let sent = command
            .split_once("-d '")
            .and_then(|(_, rest)| rest.split_once('\''))
            .map(|(body, _)| body.to_owned())
            .expect("each example sends a body with -d '...'");
        let mut status_line = None;
        let mut answer = None;
        i += 1;
        while i < lines.len() && !lines[i].starts_with("$ ") && !lines[i].starts_with("```") {
            if lines[i].starts_with("HTTP/1.1 ") {
                status_line = Some(lines[i].to_owned());
            }
            if lines[i].starts_with('{') {
                answer = Some(lines[i].to_owned());
            }
            i += 1;
        }
        examples.push((
            sent,
            status_line,
            answer.expect("each example shows its answer"),
        ));
    }
    examples
}

/// Every number of `timing` written with at most three decimals (microseconds).
fn timings_are_microseconds(raw: &str) {
    for key in ["\"queue_ms\":", "\"execution_ms\":"] {
        let at = raw.find(key).unwrap_or_else(|| panic!("no {key} in {raw}"));
        let number: String = raw[at + key.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
        assert!(
            decimals <= 3,
            "{key}{number}: more than microseconds, in {raw}"
        );
    }
}

/// README's two sample answers, sent to a server on the embedded defaults (the first command
/// README gives): the same status, the same body — sources, scores, snippets, the plugin and
/// corpus with their sha256 — but for the request number and the time it took. When this
/// fails, README shows an answer the server no longer gives: update it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readme_sample_answers_are_what_the_server_answers() {
    let examples = examples();
    assert_eq!(examples.len(), 2, "README's Example shows two requests");
    let app = TestApp::load(&[]).await;
    for (sent, status_line, shown) in examples {
        let answer = app
            .request(
                Request::post("/retrieve")
                    .header("content-type", "application/json")
                    .body(Body::from(sent.clone()))
                    .unwrap(),
            )
            .await;
        let status = answer.status();
        let raw = answer.text().await.unwrap();
        if let Some(line) = status_line {
            assert_eq!(
                line.trim_end(),
                format!(
                    "HTTP/1.1 {} {}",
                    status.as_u16(),
                    status.canonical_reason().unwrap()
                ),
                "{sent}"
            );
        }
        if !status.is_success() {
            // A refusal is shown byte for byte.
            assert_eq!(raw, shown, "README's refusal of {sent}");
        }
        let mut got: Value = serde_json::from_str(&raw).unwrap();
        let mut expected: Value = serde_json::from_str(&shown).unwrap();
        if status.is_success() {
            timings_are_microseconds(&raw);
            timings_are_microseconds(&shown);
            // The embedded plugin's digest is its build's: the component's name section carries
            // symbol hashes that differ between machines (cargo's home, the toolchain's path),
            // so the README shows one build's digest. It must still be a sha256.
            let digest = got["plugin"]["sha256"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(
                digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
                "{raw}"
            );
            for answer in [&mut got, &mut expected] {
                answer["request_id"] = Value::Null;
                answer["timing"] = Value::Null;
                answer["plugin"]["sha256"] = Value::Null;
            }
        }
        assert_eq!(
            got, expected,
            "README's answer to {sent} is not what the server answers:\n{raw}"
        );
    }
}

/// `GET /` is where a person opening the service's address lands: it leads to the live page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_leads_to_the_live_page() {
    let app = TestApp::load(&[]).await;
    let answer = app
        .request(Request::builder().uri("/").body(Body::empty()).unwrap())
        .await;
    assert_eq!(answer.status().as_u16(), 307);
    assert_eq!(answer.headers()["location"], "/dashboard");
    let page = app
        .request(
            Request::builder()
                .uri("/dashboard")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(page.status().as_u16(), 200);
}

/// A path no route has and a method a route does not take are refused like every other
/// request: `{"status":"invalid_request","error","detail"}`, the 405 with its `Allow` header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_and_methods_get_the_json_refusal() {
    let app = TestApp::load(&[]).await;
    for (method, path, status, code) in [
        ("GET", "/nowhere", 404, "not_found"),
        ("POST", "/retrieve/more", 404, "not_found"),
        ("GET", "/retrieve", 405, "method_not_allowed"),
        ("DELETE", "/healthz", 405, "method_not_allowed"),
    ] {
        let answer = app
            .request(
                Request::builder()
                    .method(method)
                    .uri(path)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(answer.status().as_u16(), status, "{method} {path}");
        let content_type = answer.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(content_type, "application/json", "{method} {path}");
        if status == 405 {
            let allow = answer.headers()["allow"].to_str().unwrap().to_owned();
            assert!(!allow.is_empty(), "{method} {path}: an empty Allow");
        }
        let body = answer.json().await.unwrap();
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["detail", "error", "status"], "{body}");
        assert_eq!(body["status"], "invalid_request", "{body}");
        assert_eq!(body["error"], code, "{body}");
        assert!(!body["detail"].as_str().unwrap().is_empty(), "{body}");
    }
}

/// `turnstile ARGS`, with `RUST_BACKTRACE=1` as a developer's shell may have it: (success,
/// stdout, stderr).
fn turnstile(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(crate::support::binary())
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A user's mistake is told in words, without a stack backtrace even when RUST_BACKTRACE asks
/// for them (anyhow appends one to the error `main` returns).
fn told_without_backtrace(stderr: &str) {
    assert!(
        !stderr.to_lowercase().contains("backtrace") && !stderr.contains("  0: "),
        "a stack backtrace for a user's mistake:\n{stderr}"
    );
}

/// Documents given where a corpus is expected — a folder, a Markdown file — are told to make a
/// corpus of them with `corpus build`, not what a JSON parser makes of their first line.
#[test]
fn documents_given_as_a_corpus_are_told_to_run_corpus_build() {
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("billing.md");
    std::fs::write(
        &markdown,
        "# Billing help\n\nCancel your plan at any time.\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    for (corpus, says) in [
        (
            &markdown,
            "is not a corpus file: its first line is not a JSON object",
        ),
        (&dir.path().to_path_buf(), "is a folder, not a corpus file"),
    ] {
        let corpus = corpus.to_str().unwrap();
        let (ok, _, stderr) = turnstile(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--cache-dir",
            cache.to_str().unwrap(),
            "--corpus",
            corpus,
        ]);
        assert!(!ok, "served {corpus}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "turnstile corpus build {corpus} --out corpus.jsonl"
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("column"), "{stderr}");
        told_without_backtrace(&stderr);
    }
}

/// `check` on a file that is not WebAssembly says so, and on a core module that it is not a
/// component, instead of the parser's dump of the bytes it expected.
#[test]
fn check_says_what_a_file_is_when_it_is_not_a_component() {
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("README.md");
    std::fs::write(&markdown, "# My plugin\n").unwrap();
    let module = dir.path().join("module.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    let cache = crate::support::cache_dir();
    for (file, says) in [
        (&markdown, "it is not a WebAssembly file"),
        (&module, "it is a core WebAssembly module, not a component"),
    ] {
        let (ok, stdout, stderr) = turnstile(&[
            "check",
            file.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
        ]);
        assert!(!ok);
        assert!(stdout.contains("FAIL contract.component"), "{stdout}");
        assert!(stdout.contains(says), "{stdout}");
        assert!(!stdout.contains("magic"), "{stdout}");
        told_without_backtrace(&stderr);
    }
}

/// `serve` binds its port before it loads anything: a busy port fails at once, with what to
/// do, before a corpus index is built or a plugin compiled (a fresh cache would take seconds).
#[test]
fn a_busy_port_fails_before_anything_is_loaded() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let cache = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = turnstile(&[
        "serve",
        "--listen",
        &addr,
        "--cache-dir",
        cache.path().to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains(&format!("error: --listen {addr}: cannot bind")),
        "{stderr}"
    );
    assert!(stderr.contains("another process listens there"), "{stderr}");
    assert!(
        !stderr.contains("corpus index ready"),
        "loaded first:\n{stderr}"
    );
    told_without_backtrace(&stderr);
    drop(busy);
}

/// Shell completions and man pages come from the command tree: every command is in them.
#[test]
fn completions_and_man_pages_come_from_the_parser() {
    for (shell, marker) in [
        ("bash", "_turnstile()"),
        ("zsh", "#compdef turnstile"),
        ("fish", "complete -c turnstile"),
    ] {
        let (ok, script, stderr) = turnstile(&["completions", shell]);
        assert!(ok, "{stderr}");
        assert!(script.contains(marker), "{shell}: {script}");
        for command in ["serve", "check", "eval", "corpus", "max-active"] {
            assert!(script.contains(command), "{shell} completes no {command}");
        }
    }
    let (ok, page, _) = turnstile(&["man"]);
    assert!(ok);
    assert!(page.contains(".TH turnstile 1"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let (ok, listed, stderr) = turnstile(&["man", "--out", dir.path().to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let serve = dir.path().join("turnstile-serve.1");
    assert!(listed.contains(serve.to_str().unwrap()), "{listed}");
    let serve = std::fs::read_to_string(serve).unwrap();
    assert!(serve.contains(".TH turnstile-serve 1"), "{serve}");
    assert!(serve.contains("max\\-active"), "{serve}");
    assert!(dir.path().join("turnstile-corpus-build.1").exists());
}

/// A flag named by another tool's word for it is pointed at turnstile's, not at the flag spelt
/// nearest (`--max-concurrency` is nearest `--max-connections`, which means something else).
#[test]
fn a_flag_named_by_its_meaning_is_pointed_at_the_right_one() {
    for (given, meant, not) in [
        ("--max-concurrency", "--max-active", "--max-connections"),
        ("--queue-size", "--max-waiting", "--max-connections"),
    ] {
        let (ok, _, stderr) = turnstile(&["serve", given, "5"]);
        assert!(!ok);
        assert!(stderr.contains(&format!("'{meant}'")), "{given}: {stderr}");
        assert!(!stderr.contains(not), "{given}: {stderr}");
    }
    // A slip of spelling still gets clap's own suggestion.
    let (ok, _, stderr) = turnstile(&["serve", "--max-activ", "5"]);
    assert!(!ok && stderr.contains("'--max-active'"), "{stderr}");
}
