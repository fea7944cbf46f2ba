//! What a local process or a web page can make the server do (issue 37): admin swaps read only
//! under the operator's swap roots, refuse what is not a regular file at once, and echo no file
//! content, hash or OS error; every route answers only the names it is allowed; reloads and
//! swaps say what they did — `unchanged` when nothing changed, and SIGHUP returns to the
//! configured files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use turnstile_fixtures as components;

use crate::corpus_swap::corpus_file;
use crate::support::{
    TestApp, child_state_when, hybrid_plugin, logged, serve_child, sha256_of, stop_child,
};

/// The directory of the fixture components (swapped in by admin requests in the tests).
pub fn components_root() -> String {
    Path::new(components::DELAY)
        .parent()
        .unwrap()
        .display()
        .to_string()
}

async fn swap(app: &TestApp, route: &str, body: Value) -> (u16, Value) {
    let answer = tokio::time::timeout(Duration::from_secs(60), app.post_json(route, &body))
        .await
        .unwrap_or_else(|_| panic!("{route} {body} did not answer within 60 s"));
    (answer.status().as_u16(), answer.json().await.unwrap())
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_swaps_read_only_under_the_swap_roots_and_tell_nothing_of_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // A readable file outside the roots, whose hash a probe would learn; a link to it inside.
    let secret = outside.join("secret.jsonl");
    std::fs::write(
        &secret,
        "{\"id\":\"canary\",\"title\":\"t\",\"text\":\"x\"}\n",
    )
    .unwrap();
    let secret_sha = sha256_of(&secret);
    std::os::unix::fs::symlink(&secret, root.join("link.jsonl")).unwrap();
    let app = TestApp::load(&["--swap-root", path(&root)]).await;
    let candidates = [
        path(&secret).to_owned(),
        path(&outside.join("missing.jsonl")).to_owned(),
        path(&root.join("link.jsonl")).to_owned(),
        format!("{}/../outside/secret.jsonl", path(&root)),
        "/etc/passwd".to_owned(),
        "/proc/self/environ".to_owned(),
    ];
    let mut details = Vec::new();
    for route in ["/admin/corpus", "/admin/plugin"] {
        for candidate in &candidates {
            let (status, body) = swap(
                &app,
                route,
                json!({"path": candidate, "sha256": "0".repeat(64)}),
            )
            .await;
            assert_eq!(status, 422, "{route} {candidate}: {body}");
            assert_eq!(
                body["error"], "path_not_allowed",
                "{route} {candidate}: {body}"
            );
            let text = body.to_string();
            assert!(!text.contains(&secret_sha), "{text}");
            assert!(
                !text.contains("No such file") && !text.contains("os error"),
                "{text}"
            );
            details.push(body["detail"].as_str().unwrap().to_owned());
        }
    }
    // The same words whether the file exists, is missing, or is reached through a link.
    details.dedup();
    assert_eq!(details.len(), 1, "{details:?}");
    assert_eq!(app.state.plugins.current().number, 1);
    assert_eq!(app.state.plugins.current().corpus.number, 1);
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("turnstile_corpus_swaps_total{result=\"path_not_allowed\"} 6"),
        "{metrics}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_files_directories_are_the_default_roots() {
    let dir = tempfile::tempdir().unwrap();
    let a = corpus_file(dir.path(), "a.jsonl", "a-", 0, 300);
    let b = corpus_file(dir.path(), "b.jsonl", "b-", 300, 300);
    let app = TestApp::load(&["--corpus", path(&a)]).await;
    let (status, body) = swap(&app, "/admin/corpus", json!({"path": path(&b)})).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("swapped")),
        "{body}"
    );
    let (status, body) = swap(&app, "/admin/plugin", json!({"path": components::DELAY})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (422, Some("path_not_allowed")),
        "the fixtures are not under the corpus's directory: {body}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_under_a_root_is_refused_at_once_and_holds_up_no_later_swap() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("corpus.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let good = corpus_file(dir.path(), "good.jsonl", "g-", 0, 300);
    let app = TestApp::load(&["--swap-root", path(dir.path())]).await;
    for route in ["/admin/corpus", "/admin/plugin"] {
        // Opening a FIFO for reading waits for a writer: before, this never answered.
        let (status, body) = swap(&app, route, json!({"path": path(&fifo)})).await;
        assert_eq!(status, 422, "{body}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("not a regular file"),
            "{body}"
        );
    }
    let (status, body) = swap(&app, "/admin/corpus", json!({"path": path(&good)})).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("swapped")),
        "{body}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_corpus_line_is_named_by_its_number_never_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let good = r#"{"id":"ok","title":"t","text":"x"}"#;
    let twice = r#"{"id":"canary","title":"t","text":"x"}"#;
    let cases = [
        format!("{good}\n\"canary-line\"\n"),
        format!("{good}\n{{\"id\":\"b\",\"title\":\"t\",\"text\":\"x\",\"canary-key\":1}}\n"),
        format!("{twice}\n{twice}\n"),
    ];
    let app = TestApp::load(&["--swap-root", path(dir.path())]).await;
    for (i, jsonl) in cases.iter().enumerate() {
        let file = dir.path().join(format!("bad-{i}.jsonl"));
        std::fs::write(&file, jsonl).unwrap();
        let (status, body) = swap(&app, "/admin/corpus", json!({"path": path(&file)})).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"], "invalid_corpus", "{body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains("line 2:"), "{detail}");
        assert!(!detail.contains("canary"), "{detail}");
    }
    app.stop().await;
}

/// Every route, addressed to a name that is not allowed, as a DNS-rebinding page's requests are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_a_host_that_is_not_allowed() {
    let app = TestApp::load(&[]).await;
    let routes = [
        ("GET", "/state"),
        ("GET", "/metrics"),
        ("GET", "/events"),
        ("GET", "/dashboard"),
        ("GET", "/readyz"),
        ("GET", "/healthz"),
        ("GET", "/openapi.json"),
        ("POST", "/retrieve"),
        ("POST", "/admin/plugin"),
        ("POST", "/admin/corpus"),
    ];
    let send = |method: &str, route: &str, host: &str| {
        Request::builder()
            .method(method)
            .uri(route)
            .header("host", host)
            .header("content-type", "application/json")
            .body(Body::from(if method == "POST" {
                r#"{"question": "json"}"#
            } else {
                ""
            }))
            .unwrap()
    };
    for (method, route) in routes {
        for host in ["rebind.example", "rebind.example:8080", "10.0.0.7:8080"] {
            let answer = app.request(send(method, route, host)).await;
            assert_eq!(answer.status(), 403, "{method} {route} Host: {host}");
            let body = answer.json().await.unwrap();
            assert_eq!(body["error"], "host_not_allowed", "{route}");
            assert!(!body.to_string().contains("rebind"), "not echoed: {body}");
        }
    }
    for (method, route) in [("GET", "/state"), ("GET", "/readyz"), ("POST", "/retrieve")] {
        for host in ["localhost:8080", "127.0.0.1:8080", "[::1]:8080"] {
            let answer = app.respond(send(method, route, host)).await;
            assert_eq!(answer.status(), 200, "{method} {route} Host: {host}");
        }
    }
    app.stop().await;
    // Named hosts (behind a reverse proxy): those and no others.
    let app = TestApp::load(&["--allowed-host", "rag.example.com"]).await;
    let answer = app
        .respond(send("POST", "/retrieve", "rag.example.com"))
        .await;
    assert_eq!(answer.status(), 200);
    let answer = app.respond(send("POST", "/retrieve", "localhost")).await;
    assert_eq!(answer.status(), 403);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_shows_no_filesystem_path() {
    let dir = tempfile::tempdir().unwrap();
    let a = corpus_file(dir.path(), "a.jsonl", "a-", 0, 300);
    let app = TestApp::load(&["--corpus", path(&a)]).await;
    let ready = app.get_json("/readyz").await;
    assert_eq!(ready["corpus"]["source"], "a.jsonl", "{ready}");
    assert!(!ready.to_string().contains(path(dir.path())), "{ready}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_to_what_serves_is_unchanged_and_makes_no_generation() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = hybrid_plugin(dir.path());
    let a = corpus_file(dir.path(), "a.jsonl", "a-", 0, 300);
    let app = TestApp::load(&["--plugin", path(&plugin), "--corpus", path(&a)]).await;
    let (status, body) = swap(&app, "/admin/plugin", json!({"path": path(&plugin)})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "unchanged");
    assert_eq!(body["generation"], 1);
    assert_eq!(body["smoke_checks_passed"], 0);
    assert!(body.get("previous").is_none(), "{body}");
    // Other settings are another plugin: swapped.
    let (status, body) = swap(
        &app,
        "/admin/plugin",
        json!({"path": path(&plugin), "config": {"x": "1"}}),
    )
    .await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("swapped")),
        "{body}"
    );
    assert_eq!(body["generation"], 2);
    assert_eq!(body["previous"]["generation"], 1);
    let (status, body) = swap(&app, "/admin/corpus", json!({"path": path(&a)})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "unchanged");
    assert_eq!(body["corpus"]["generation"], 1);
    assert!(
        body.get("previous").is_none() && body.get("index").is_none(),
        "{body}"
    );
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("turnstile_plugin_swaps_total{result=\"unchanged\"} 1"),
        "{metrics}"
    );
    app.stop().await;
}

/// SIGHUP returns to the configured files, whatever admin swaps installed since; with nothing
/// changed it makes no generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_configured_plugin_and_corpus_not_the_last_swapped_in() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = hybrid_plugin(dir.path());
    let a = corpus_file(dir.path(), "a.jsonl", "a-", 0, 300);
    let b: PathBuf = corpus_file(dir.path(), "b.jsonl", "b-", 300, 300);
    let server = serve_child(
        "configured",
        vec![
            "--plugin".into(),
            path(&plugin).into(),
            "--corpus".into(),
            path(&a).into(),
            "--swap-root".into(),
            components_root(),
        ],
    )
    .await;
    let client = reqwest::Client::new();
    let post = |route: &str, body: Value| {
        let request = client.post(server.url(route)).json(&body);
        async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
        }
    };
    post(
        "/admin/plugin",
        json!({"path": components::DELAY, "config": {"delay_ms": "0"}}),
    )
    .await;
    post("/admin/corpus", json!({"path": path(&b)})).await;
    let swapped = child_state_when(&client, &server, "generation 2", |s| {
        s["plugin"]["generation"] == 2
    })
    .await;
    assert_eq!(swapped["plugin"]["sha256"], sha256_of(components::DELAY));
    server.hang_up().unwrap();
    let back = child_state_when(&client, &server, "the configured files again", |s| {
        s["plugin"]["generation"] == 3 && s["corpus"]["generation"] == 3
    })
    .await;
    assert_eq!(back["plugin"]["sha256"], sha256_of(&plugin), "{back}");
    assert_eq!(back["corpus"]["sha256"], sha256_of(&a), "{back}");
    server.hang_up().unwrap();
    logged(&server, "plugin unchanged").await;
    let same = child_state_when(&client, &server, "any state", |_| true).await;
    assert_eq!(same["plugin"]["generation"], 3, "{same}");
    assert_eq!(same["corpus"]["generation"], 3, "{same}");
    let report = stop_child(server).await;
    assert_eq!(report.shutdown_exit_status, Some(0), "{}", report.stderr);
}

/// A corpus swap holds at most three corpora: the serving one, one swapped out that a request
/// admitted before still reads, and the candidate. One more swap while that old one is held is
/// refused, saying why, and works once it is freed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corpus_swap_waits_until_the_corpus_before_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let a = corpus_file(dir.path(), "a.jsonl", "a-", 0, 200);
    let b = corpus_file(dir.path(), "b.jsonl", "b-", 200, 200);
    let c = corpus_file(dir.path(), "c.jsonl", "c-", 400, 200);
    let app = TestApp::load(&["--corpus", path(&a)]).await;
    // What a running request holds: the generation it was admitted with.
    let running = app.state.plugins.current();
    let (status, body) = swap(&app, "/admin/corpus", json!({"path": path(&b)})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = swap(&app, "/admin/corpus", json!({"path": path(&c)})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (422, Some("corpus_memory")),
        "{body}"
    );
    assert_eq!(app.state.plugins.current().corpus.number, 2);
    drop(running);
    let (status, body) = swap(&app, "/admin/corpus", json!({"path": path(&c)})).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("swapped")),
        "{body}"
    );
    app.stop().await;
}

/// `--corpus-max-mib` bounds what a corpus swap reads, gzip included (decompressed as it is
/// read, never past the bound), and the refusal names the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corpus_over_its_bound_is_refused_naming_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let big = corpus_file(dir.path(), "big.jsonl", "x-", 0, 6000);
    assert!(std::fs::metadata(&big).unwrap().len() > 1 << 20);
    let gz = dir.path().join("big.jsonl.gz");
    let mut encoder =
        flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), Default::default());
    std::io::Write::write_all(&mut encoder, &std::fs::read(&big).unwrap()).unwrap();
    encoder.finish().unwrap();
    assert!(
        std::fs::metadata(&gz).unwrap().len() < 1 << 20,
        "compressed under the bound"
    );
    let root = path(dir.path()).to_owned();
    let app = TestApp::load(&["--corpus-max-mib", "1", "--swap-root", &root]).await;
    for candidate in [&big, &gz] {
        let (status, body) = swap(&app, "/admin/corpus", json!({"path": path(candidate)})).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"], "corpus_too_large", "{body}");
        assert!(body["detail"].as_str().unwrap().contains("1 MiB"), "{body}");
    }
    assert_eq!(app.state.plugins.current().corpus.number, 1);
    app.stop().await;
}
