//! A real turnstile server in this process, on a loopback socket: for what the edge takes part in
//! (connections, timeouts, streams) and for real concurrency.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use turnstile_server::http::AppState;

use super::load::load;
use super::wait::eventually;

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

impl TestServer {
    /// Loads like `turnstile serve FLAGS` and serves on 127.0.0.1:0.
    pub async fn start(flags: &[&str]) -> Self {
        let state = load(flags).await;
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

    /// [`TestServer::start`] with `--swap-root` for the fixture components' directories: for
    /// tests that swap to them.
    pub async fn swappable(flags: &[&str]) -> Self {
        let flags = super::files::with_fixture_roots(flags);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        Self::start(&flags).await
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
