//! The admin surface trusts nothing by accident: browser origins, non-JSON bodies, foreign
//! `Host` names, files that are not plugin files, and one sha256 pin rule on every path.

use serde_json::{Value, json};
use turnstile_fixtures::DELAY;

use crate::support::{
    TestApp, child_state_when, hybrid_plugin, logged, serve_child, sha256_of, stop_child,
};

async fn post(app: &TestApp, headers: &[(&str, &str)], body: String) -> (u16, Value) {
    app.post("/admin/plugin", headers, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_other_hosts_and_non_json_bodies_are_refused() {
    // The access rules are router layering: driven in process, without a socket.
    let app = TestApp::swappable(&[]).await;
    let swap = json!({"path": DELAY, "config": {"delay_ms": "0"}}).to_string();
    let json_ct = ("content-type", "application/json");
    // A page elsewhere posting to the admin endpoint.
    let (status, body) = app
        .post(
            "/admin/plugin",
            &[json_ct, ("origin", "http://evil.example")],
            swap.clone(),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("cross_origin"))
    );
    let (status, body) = app
        .post(
            "/admin/plugin",
            &[json_ct, ("origin", "null")],
            swap.clone(),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("cross_origin"))
    );
    // A DNS-rebinding page: loopback peer, foreign Host.
    let (status, body) = app
        .post(
            "/admin/plugin",
            &[json_ct, ("host", "evil.example:8080")],
            swap.clone(),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("host_not_allowed"))
    );
    // Through a local reverse proxy, without a token.
    let (status, body) = app
        .post(
            "/admin/plugin",
            &[json_ct, ("x-forwarded-for", "192.0.2.7")],
            swap.clone(),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("proxied_without_token"))
    );
    // A form post (no preflight) is not JSON.
    let (status, body) = app
        .post(
            "/admin/plugin",
            &[("content-type", "text/plain")],
            swap.clone(),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (415, Some("unsupported_media_type"))
    );
    let (status, body) = app.post("/admin/plugin", &[], swap.clone()).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (415, Some("unsupported_media_type"))
    );
    // Nothing was swapped.
    assert_eq!(app.state.plugins.current().number, 1);
    // Same origin, loopback Host, JSON: allowed.
    let (status, body) = app
        .post(
            "/admin/plugin",
            &[
                json_ct,
                ("host", "localhost:8080"),
                ("origin", "http://localhost:8080"),
            ],
            swap,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(app.state.plugins.current().number, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_regular_files_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().display().to_string();
    let app = TestApp::load(&["--swap-root", &dir_arg]).await;
    let fifo = dir.path().join("fifo");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero")).unwrap();
    for path in [
        fifo.display().to_string(),
        dir.path().join("sub").display().to_string(),
    ] {
        let (status, body) = app
            .post(
                "/admin/plugin",
                &[("content-type", "application/json")],
                json!({"path": path}).to_string(),
            )
            .await;
        assert_eq!(status, 422, "{path}: {body}");
        assert_eq!(body["error"], "plugin_unreadable", "{path}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("not a regular file"),
            "{body}"
        );
    }
    // A device, named or through a link under the root: outside the roots, never opened.
    for path in [
        "/dev/zero".into(),
        dir.path().join("zero").display().to_string(),
    ] {
        let (status, body) = app
            .post(
                "/admin/plugin",
                &[("content-type", "application/json")],
                json!({"path": path}).to_string(),
            )
            .await;
        assert_eq!(
            (status, body["error"].as_str()),
            (422, Some("path_not_allowed")),
            "{path}: {body}"
        );
    }
}

/// The pin rule on the admin path: a pinned server needs the candidate's sha256, which then
/// becomes the pin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_server_needs_the_sha256_of_every_admin_swap() {
    let dir = tempfile::tempdir().unwrap();
    let retrieval = hybrid_plugin(dir.path());
    let pin = sha256_of(&retrieval);
    let retrieval_arg = retrieval.display().to_string();
    let app = TestApp::swappable(&["--plugin", &retrieval_arg, "--plugin-sha256", &pin]).await;
    let json_ct = [("content-type", "application/json")];
    let (status, body) = post(&app, &json_ct, json!({"path": DELAY}).to_string()).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (422, Some("sha256_required")),
        "{body}"
    );
    let (status, body) = post(
        &app,
        &json_ct,
        json!({"path": DELAY, "sha256": "0".repeat(64)}).to_string(),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (422, Some("sha256_mismatch"))
    );
    let delay_sha = sha256_of(DELAY);
    let (status, body) = post(
        &app,
        &json_ct,
        json!({"path": DELAY, "sha256": delay_sha, "config": {"delay_ms": "0"}}).to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(app.state.swap.pin().unwrap().as_str(), delay_sha);
    app.stop().await;
}

/// The pin rule on SIGHUP: the reloaded file must match the current pin — the startup pin, or
/// the one the last admin swap named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_only_a_file_that_matches_the_pin() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = hybrid_plugin(dir.path());
    let pin = sha256_of(&plugin);
    let child = serve_child(
        "pinned",
        vec![
            "--plugin".into(),
            plugin.display().to_string(),
            "--plugin-sha256".into(),
            pin,
        ],
    )
    .await;
    let client = reqwest::Client::new();
    // Another file under the configured path: refused, generation 1 keeps serving.
    std::fs::copy(DELAY, &plugin).unwrap();
    child.hang_up().unwrap();
    logged(&child, "sha256_mismatch").await;
    let state = child_state_when(&client, &child, "any state", |_| true).await;
    assert_eq!(state["plugin"]["generation"], 1);
    // An admin swap that names the sha256 moves the pin; a SIGHUP of that file (with the
    // operator's settings, not the swap's) then works.
    let delay_sha = sha256_of(DELAY);
    let response = client
        .post(child.url("/admin/plugin"))
        .json(&json!({"path": plugin, "sha256": delay_sha, "config": {"delay_ms": "0"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    child.hang_up().unwrap();
    child_state_when(&client, &child, "generation 3", |s| {
        s["plugin"]["generation"] == 3
    })
    .await;
    let report = stop_child(child).await;
    assert_eq!(report.shutdown_exit_status, Some(0), "{}", report.stderr);
}

/// A cache directory others may write to is not used: nothing is cached there (the index goes to
/// a private temporary directory), and the server still serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_writable_cache_directory_is_ignored() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o775)).unwrap();
    let cache_arg = cache.display().to_string();
    let app = TestApp::load(&["--cache-dir", &cache_arg]).await;
    let (status, _) = app.retrieve(json!({"question": "json"})).await;
    assert_eq!(status, 200);
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        0,
        "something was cached"
    );
    app.stop().await;
}
