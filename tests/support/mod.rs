//! Shared test support: start a real turnstile server (real socket, real wasm, real corpus) in
//! this process and talk to it over HTTP.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;

use clap::Parser;
use turnstile::config::ServeArgs;
use turnstile::http::AppState;

/// A server on a port-0 loopback socket, shut down when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    pub state: AppState,
    pub client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    serve: ServeArgs,
}

/// One cache directory for the whole test binary: the corpus index is built once.
pub fn cache_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("turnstile-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// `serve` flags as on the command line, with the test cache directory.
pub fn args(flags: &[&str]) -> ServeArgs {
    let cache = cache_dir().display().to_string();
    let mut argv = vec!["serve", "--cache-dir", cache.as_str()];
    argv.extend_from_slice(flags);
    Wrapper::try_parse_from(argv).unwrap().serve
}

impl TestServer {
    /// Loads like `turnstile serve FLAGS` and serves on 127.0.0.1:0.
    pub async fn start(flags: &[&str]) -> Self {
        let args = args(flags);
        let state = tokio::task::spawn_blocking(move || turnstile::server::load(&args))
            .await
            .unwrap()
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async {
            let _ = stopped.await;
        };
        let drain = std::time::Duration::from_secs(30);
        let task = tokio::spawn(turnstile::server::run(
            state.clone(),
            listener,
            shutdown,
            drain,
        ));
        Self {
            addr,
            state,
            client: reqwest::Client::new(),
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// GET a path and parse its JSON body.
    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        let response = self.client.get(self.url(path)).send().await.unwrap();
        response.json().await.unwrap()
    }

    /// POST a JSON value to /retrieve; returns status and JSON body.
    pub async fn retrieve(&self, body: serde_json::Value) -> (u16, serde_json::Value) {
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

/// Ids of the sources in a 200 body.
pub fn ids(body: &serde_json::Value) -> Vec<String> {
    body["sources"]
        .as_array()
        .unwrap_or_else(|| panic!("no sources in {body}"))
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}
