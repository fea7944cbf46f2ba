//! Hot swap without restart, integrity pinning and admin access: under load over real HTTP, and
//! by SIGHUP to a real process; refusals and tokens in process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use turnstile_fixtures as components;

use crate::confined::components_root;
use crate::support::{
    STATE_DEADLINE, TestApp, TestServer, child_retrieve, child_state_when, eventually,
    hybrid_plugin, logged, serve_child, sha256_of, stop_child,
};

async fn swap(server: &TestServer, body: Value, token: Option<&str>) -> (u16, Value) {
    let mut request = server.client.post(server.url("/admin/plugin")).json(&body);
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// [`swap`], in process.
async fn swap_in(app: &TestApp, body: Value, token: Option<&str>) -> (u16, Value) {
    let mut headers = vec![("content-type", "application/json".to_owned())];
    headers.extend(token.map(|t| ("authorization", format!("Bearer {t}"))));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    app.post("/admin/plugin", &headers, body.to_string()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_under_load_loses_and_fails_no_request() {
    let server =
        Arc::new(TestServer::swappable(&["--max-active", "2", "--max-waiting", "64"]).await);
    // Each client loops until it has itself been served by the new generation; every answer
    // must be a 200. `served` counts answers, so the swap waits for traffic to be flowing.
    let served = Arc::new(AtomicUsize::new(0));
    let mut loops = Vec::new();
    for _ in 0..4 {
        let (server, served) = (Arc::clone(&server), Arc::clone(&served));
        loops.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                let (status, body) = server.retrieve(json!({"question": "json dumps"})).await;
                assert_eq!(status, 200, "{body}");
                served.fetch_add(1, Ordering::SeqCst);
                let generation = body["plugin"]["generation"].as_u64().unwrap();
                seen.push((
                    generation,
                    body["plugin"]["name"].as_str().unwrap().to_owned(),
                ));
                if generation == 2 {
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
    let delay_sha = sha256_of(components::DELAY);
    let (status, body) = swap(
        &server,
        json!({"path": components::DELAY, "sha256": delay_sha, "config": {"delay_ms": "0"}}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "swapped");
    assert_eq!(body["generation"], 2);
    assert_eq!(body["previous"]["generation"], 1);
    assert_eq!(body["sha256"], delay_sha);
    // Every client reaches the new generation (each request admitted after the swap gets it).
    let mut all = Vec::new();
    for l in loops {
        let seen = tokio::time::timeout(STATE_DEADLINE, l)
            .await
            .expect("a client never saw generation 2")
            .unwrap();
        // Generations only move forward within one client's sequence.
        assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
        all.extend(seen);
    }
    assert!(all.iter().any(|(g, n)| *g == 1 && n == "retrieval-hybrid"));
    assert!(all.iter().any(|(g, n)| *g == 2 && n == "delay"));
    // No response names a generation that did not exist.
    assert!(all.iter().all(|(g, _)| *g == 1 || *g == 2));
    let state: Value = server.get_json("/state").await;
    assert_eq!(state["plugin"]["generation"], 2);
    assert_eq!(state["plugin"]["name"], "delay");
    assert_eq!(state["active"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_candidate_leaves_the_old_plugin_serving() {
    let root = components_root();
    let app = TestApp::swappable(&[]).await;
    let cases = [
        (
            json!({"path": format!("{root}/nonexistent.wasm")}),
            "plugin_unreadable",
        ),
        (
            json!({"path": "/nonexistent/plugin.wasm"}),
            "path_not_allowed",
        ),
        (json!({"path": components::OUTSIDE}), "incompatible_plugin"),
        (json!({"path": components::FAULT}), "smoke_failed"),
        (
            json!({"path": components::DELAY, "sha256": "0".repeat(64)}),
            "sha256_mismatch",
        ),
    ];
    for (body, code) in cases {
        let (status, answer) = swap_in(&app, body, None).await;
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["status"], "swap_failed");
        assert_eq!(answer["error"], code, "{answer}");
        let (status, served) = app.retrieve(json!({"question": "json"})).await;
        assert_eq!(status, 200);
        assert_eq!(served["plugin"]["generation"], 1);
        assert_eq!(served["plugin"]["name"], "retrieval-hybrid");
    }
    for (body, code) in [
        (
            json!({"path": components::DELAY, "sha256": "xyz"}),
            "invalid_sha256",
        ),
        (
            json!({"path": components::DELAY, "evil": true}),
            "invalid_swap_request",
        ),
    ] {
        let (status, answer) = swap_in(&app, body, None).await;
        assert_eq!(status, 422);
        assert_eq!(answer["error"], code);
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_endpoints_need_the_token_when_one_is_set() {
    let app = TestApp::swappable(&["--admin-token", "s3cret-token"]).await;
    let body = json!({"path": components::DELAY, "config": {"delay_ms": "0"}});
    let (status, answer) = swap_in(&app, body.clone(), None).await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(answer["status"], "unauthorized");
    let (status, _) = swap_in(&app, body.clone(), Some("wrong")).await;
    assert_eq!(status, 401);
    let (status, answer) = swap_in(&app, body, Some("s3cret-token")).await;
    assert_eq!(status, 200, "{answer}");
    // As on a server listening on loopback, /state stays open.
    let state = app.get("/state").await;
    assert_eq!(state.status().as_u16(), 200);
    app.stop().await;
}

#[test]
fn a_pinned_sha256_that_does_not_match_refuses_to_start() {
    let args = crate::support::args(&[
        "--plugin",
        components::DELAY,
        "--plugin-sha256",
        &"a".repeat(64),
    ]);
    let Err(error) = turnstile_server::serve::load(&args) else {
        panic!("started with a wrong pin");
    };
    assert!(
        format!("{error:#}").contains("--plugin-sha256"),
        "{error:#}"
    );
    let good = sha256_of(components::DELAY);
    assert!(
        turnstile_server::serve::load(&crate::support::args(&[
            "--plugin",
            components::DELAY,
            "--plugin-sha256",
            &good
        ]))
        .is_ok()
    );
}

/// The operator's other way to swap: replace the configured file and send SIGHUP. A good file is
/// swapped in; a bad one is refused and the current generation keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_configured_plugin_and_refuses_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = hybrid_plugin(dir.path());
    let retrieval_sha = sha256_of(&plugin);
    let server = serve_child(
        "reload",
        vec!["--plugin".into(), plugin.display().to_string()],
    )
    .await;
    let client = reqwest::Client::new();
    let first = child_state_when(&client, &server, "any state", |_| true).await;
    assert_eq!(first["plugin"]["generation"], 1);
    assert_eq!(first["plugin"]["sha256"], retrieval_sha);

    // Replace the file as an operator would (write aside, rename over), then hang up.
    let aside = dir.path().join("plugin.wasm.new");
    std::fs::copy(components::DELAY, &aside).unwrap();
    std::fs::rename(&aside, &plugin).unwrap();
    server.hang_up().unwrap();
    let second = child_state_when(&client, &server, "generation 2", |s| {
        s["plugin"]["generation"] == 2
    })
    .await;
    assert_eq!(second["plugin"]["sha256"], sha256_of(components::DELAY));
    let (_, answer) = child_retrieve(&client, &server, "json dumps").await;
    assert_eq!(answer["plugin"]["generation"], 2, "{answer}");

    // A broken file: refused, logged, and generation 2 keeps serving.
    std::fs::write(&plugin, b"\0asm but not really").unwrap();
    server.hang_up().unwrap();
    logged(&server, "reload refused").await;
    let after = child_state_when(&client, &server, "any state", |_| true).await;
    assert_eq!(after["plugin"]["generation"], 2);
    let (status, _) = child_retrieve(&client, &server, "json dumps").await;
    assert_eq!(status, 200);

    let report = stop_child(server).await;
    assert_eq!(report.shutdown_exit_status, Some(0), "{}", report.stderr);
}
