//! The service's router over a loaded state, driven in process with `oneshot` — no socket: for
//! handler behaviour the edge takes no part in (validation, access rules, ids, bodies, the plugin
//! call and its answer). Requests come from a loopback peer (`MockConnectInfo`), as from a local
//! client, addressed to `Host: localhost` unless a test names another.

use std::net::SocketAddr;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;
use turnstile_server::http::AppState;

use super::load::load;
use super::wait::eventually;

/// The router and the state it serves.
pub struct TestApp {
    pub state: AppState,
    router: axum::Router,
}

/// A response read whole, read like reqwest's: `status()`, `headers()`, `json()`, `text()`.
#[derive(Debug)]
pub struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The body as JSON.
    pub async fn json(self) -> serde_json::Result<Value> {
        serde_json::from_slice(&self.body)
    }

    /// The body as text.
    pub async fn text(self) -> Result<String, std::string::FromUtf8Error> {
        String::from_utf8(self.body.to_vec())
    }
}

impl TestApp {
    /// Loads like `turnstile serve FLAGS`, without listening.
    pub async fn load(flags: &[&str]) -> Self {
        Self::over(load(flags).await)
    }

    /// [`TestApp::load`] with `--swap-root` for the fixture components' directories: for tests
    /// that swap to them.
    pub async fn swappable(flags: &[&str]) -> Self {
        let flags = super::files::with_fixture_roots(flags);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        Self::load(&flags).await
    }

    fn over(state: AppState) -> Self {
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let router = turnstile_server::http::app(state.clone())
            .layer(axum::extract::connect_info::MockConnectInfo(peer));
        Self { state, router }
    }

    /// Loads like [`TestApp::load`], as a server listening beyond loopback does (`serve::run`):
    /// `/state`, `/metrics` and the live page need admin access too.
    pub async fn beyond_loopback(flags: &[&str]) -> Self {
        let mut state = load(flags).await;
        let mut admin = (*state.admin).clone();
        admin.protect_state = true;
        state.admin = std::sync::Arc::new(admin);
        Self::over(state)
    }

    /// Sends `request` through the router: the response, its body not read (a stream may never
    /// end).
    pub async fn respond(&self, mut request: Request<Body>) -> Response {
        if !request.headers().contains_key("host") {
            request
                .headers_mut()
                .insert("host", "localhost".parse().unwrap());
        }
        self.router.clone().oneshot(request).await.unwrap()
    }

    /// Sends `request` through the router and reads the answer whole.
    pub async fn request(&self, request: Request<Body>) -> Answer {
        let response = self.respond(request).await;
        let (parts, body) = response.into_parts();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes(),
        }
    }

    /// Sends `request` through the router: the status and the JSON body (`Null` if none).
    pub async fn send(&self, request: Request<Body>) -> (u16, Value) {
        let answer = self.request(request).await;
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    /// A POST of `body` to `path` with these headers.
    pub async fn post(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Body>,
    ) -> (u16, Value) {
        let mut request = Request::post(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(body.into()).unwrap()).await
    }

    /// GET a path.
    pub async fn get(&self, path: &str) -> Answer {
        self.request(Request::get(path).body(Body::empty()).unwrap())
            .await
    }

    /// GET a path and parse its JSON body.
    pub async fn get_json(&self, path: &str) -> Value {
        self.get(path).await.json().await.unwrap()
    }

    /// POST a JSON value to /retrieve; returns status and JSON body.
    pub async fn retrieve(&self, body: Value) -> (u16, Value) {
        let answer = self.post_json("/retrieve", &body).await;
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap())
    }

    /// POST a swap request (`{"path": …, "config": …}`) to /admin/plugin (no token: loopback).
    pub async fn swap_plugin(&self, body: Value) -> Answer {
        self.post_json("/admin/plugin", &body).await
    }

    /// POST a JSON value to `path`.
    pub async fn post_json(&self, path: &str, body: &Value) -> Answer {
        self.request(
            Request::post(path)
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
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

    /// What a server's drain checks, in process: every lease has come back.
    pub async fn stop(self) {
        eventually("every lease back", || async {
            match self.state.admission.gate().snapshot().active {
                0 => Ok(()),
                n => Err(format!("{n} leases still held")),
            }
        })
        .await;
    }
}
