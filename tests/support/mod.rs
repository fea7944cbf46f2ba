//! Shared test support: a real turnstile server (real socket, real wasm, real corpus) in this
//! process, `serve` children of the real binary, the shipped components as files, and waiting on
//! state with a deadline.
//!
//! Files: each test writes only into its own [`tempfile::TempDir`] (removed on drop), except the
//! corpus index and precompiled-plugin cache, which all tests share under cargo's scratch
//! directory for integration tests (`CARGO_TARGET_TMPDIR`): a cache, built once and reused.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::Value;
use turnstile_server::http::AppState;
use turnstile_server::serve::ServeArgs;
use turnstile_tools::drive::ServerChild;

pub mod upstream;

/// How long a test waits for a state it expects before it fails.
pub const STATE_DEADLINE: Duration = Duration::from_secs(20);

/// The shared corpus-index and precompiled-plugin cache.
pub fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache")
}

/// The `turnstile` binary under test.
pub fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_turnstile"))
}

/// Polls `probe` until it returns `Some`, failing the test after [`STATE_DEADLINE`] with
/// `what` and the last thing seen.
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + STATE_DEADLINE;
    loop {
        match probe().await {
            Ok(found) => return found,
            Err(last) => assert!(
                Instant::now() < deadline,
                "never reached within {STATE_DEADLINE:?}: {what}; last seen: {last}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The service's router over a loaded state, driven in process with `oneshot` — no socket: for
/// handler tests (validation, access rules) that the edge does not take part in. Requests come
/// from a loopback peer (`MockConnectInfo`), as from a local client.
pub struct TestApp {
    pub state: AppState,
    router: axum::Router,
}

impl TestApp {
    /// Loads like `turnstile serve FLAGS`, without listening.
    pub async fn load(flags: &[&str]) -> Self {
        let args = args(flags);
        let state = tokio::task::spawn_blocking(move || turnstile_server::serve::load(&args))
            .await
            .unwrap()
            .unwrap();
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let router = turnstile_server::http::app(state.clone())
            .layer(axum::extract::connect_info::MockConnectInfo(peer));
        Self { state, router }
    }

    /// Sends `request` through the router: the status and the JSON body (`Null` if none).
    pub async fn send(&self, request: axum::http::Request<axum::body::Body>) -> (u16, Value) {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// A POST of `body` to `path` with these headers (the `Host` is `localhost` unless given).
    pub async fn post(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<axum::body::Body>,
    ) -> (u16, Value) {
        let mut request = axum::http::Request::post(path);
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            request = request.header("host", "localhost");
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(body.into()).unwrap()).await
    }
}

/// A server on a port-0 loopback socket, shut down when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    pub state: AppState,
    /// Connections open now, as the edge counts them.
    pub connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    pub client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    serve: ServeArgs,
}

/// `serve` flags as on the command line, with the shared cache directory.
pub fn args(flags: &[&str]) -> ServeArgs {
    let cache = cache_dir().display().to_string();
    let mut argv = vec!["serve"];
    if !flags.contains(&"--cache-dir") {
        argv.extend(["--cache-dir", cache.as_str()]);
    }
    argv.extend_from_slice(flags);
    Wrapper::try_parse_from(argv).unwrap().serve
}

impl TestServer {
    /// Loads like `turnstile serve FLAGS` and serves on 127.0.0.1:0.
    pub async fn start(flags: &[&str]) -> Self {
        let args = args(flags);
        let state = tokio::task::spawn_blocking(move || turnstile_server::serve::load(&args))
            .await
            .unwrap()
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async {
            let _ = stopped.await;
        };
        let drain = Duration::from_secs(30);
        let task = tokio::spawn(turnstile_server::serve::run(
            state.clone(),
            listener,
            shutdown,
            drain,
        ));
        Self {
            addr,
            connections: state.connections.clone(),
            state,
            client: reqwest::Client::new(),
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// GET a path.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    /// GET a path and parse its JSON body.
    pub async fn get_json(&self, path: &str) -> Value {
        self.get(path).await.json().await.unwrap()
    }

    /// POST a JSON value to /retrieve; returns status and JSON body.
    pub async fn retrieve(&self, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url("/retrieve"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    /// POST a swap request (`{"path": …, "config": …}`) to /admin/plugin (no token: loopback).
    pub async fn swap_plugin(&self, body: Value) -> reqwest::Response {
        self.client
            .post(self.url("/admin/plugin"))
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// Polls `/state` until `done` holds.
    pub async fn state_when(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        eventually(what, || async {
            let state = self.get_json("/state").await;
            if done(&state) {
                Ok(state)
            } else {
                Err(state.to_string())
            }
        })
        .await
    }

    /// Stops accepting, drains, and checks the server exited cleanly.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A server whose plugin is the `delay` fixture (each call holds its worker `delay_ms`, then
/// really retrieves) behind a gate of one slot and one waiting place, waiting at most `wait_ms`;
/// `more` flags on top.
pub async fn delay_server(delay_ms: u64, wait_ms: u64, more: &[&str]) -> TestServer {
    let config = format!("delay_ms={delay_ms}");
    let wait = wait_ms.to_string();
    let mut flags = vec![
        "--plugin",
        turnstile_fixtures::DELAY,
        "--plugin-config",
        &config,
        "--max-active",
        "1",
        "--max-waiting",
        "1",
        "--wait-ms",
        &wait,
    ];
    flags.extend_from_slice(more);
    TestServer::start(&flags).await
}

/// A client that gives up on a request after `patience` (its connection closes).
pub fn impatient_client(patience: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(patience)
        .build()
        .unwrap()
}

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

/// The embedded default (hybrid) plugin written to `dir/retrieval-hybrid.wasm`, for tests that
/// need its path.
pub fn hybrid_plugin(dir: &Path) -> PathBuf {
    let path = dir.join("retrieval-hybrid.wasm");
    std::fs::write(&path, turnstile_host::embedded_retrieval()).unwrap();
    path
}

/// The lexical (bm25-only, contract 0.1.1) plugin written to `dir/lexical.wasm`.
pub fn lexical_plugin(dir: &Path) -> PathBuf {
    let path = dir.join("lexical.wasm");
    std::fs::write(&path, turnstile_host::embedded_lexical()).unwrap();
    path
}

/// sha256 (hex) of a file.
pub fn sha256_of(path: impl AsRef<Path>) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// Ids of the sources in a 200 body.
pub fn ids(body: &Value) -> Vec<String> {
    body["sources"]
        .as_array()
        .unwrap_or_else(|| panic!("no sources in {body}"))
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The statuses of a `/state` body's events, in order.
pub fn statuses(state: &Value) -> Vec<String> {
    state["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap().to_owned())
        .collect()
}
