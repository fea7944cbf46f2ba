//! The local OpenAI-compatible upstream (`tests/upstream/upstream.py`) as a child process: started
//! on a free loopback port with a given latency, ready once it printed its `listening on` line
//! (within a deadline), stopped when dropped. Its `/stats` are read over a plain socket, so a
//! test needs no async runtime around its blocking plugin calls.
//!
//! `python3` may be a launcher that runs Python as its own child (pyenv's shim does), which a
//! kill would orphan: the upstream also stops when its standard input closes
//! (`--exit-with-stdin`), which happens when the handle drops or this process ends, however.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::STATE_DEADLINE;

/// The script.
pub const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/upstream/upstream.py");
/// The embeddings server's script.
pub const EMBEDDINGS_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/upstream/embeddings.py"
);

/// The OTLP receiver's script (`tests/otlp/receiver.py`).
pub const RECEIVER_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/otlp/receiver.py");
/// The tests' venv Python (`tests/setup.sh`): it has the OpenTelemetry SDK and protocol.
pub const VENV_PYTHON: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../target/test-venv/bin/python"
);

/// A running upstream.
pub struct Upstream {
    child: Child,
    /// Its lifeline: closing it stops the upstream.
    lifeline: Option<ChildStdin>,
    /// `http://127.0.0.1:PORT`.
    origin: String,
    /// What it logged (one line per request), for failure messages.
    log: Arc<Mutex<String>>,
}

impl Upstream {
    /// Starts one whose normal answers take `latency`.
    pub fn start(latency: Duration) -> Self {
        Self::start_with(latency, &[], &[])
    }

    /// [`Upstream::start`] with more flags (`--stream-ms`, `--answer-words`, …) and environment
    /// (`UPSTREAM_REQUIRE_KEY`: a key need not sit in its arguments).
    pub fn start_with(latency: Duration, flags: &[&str], env: &[(&str, &str)]) -> Self {
        let latency = latency.as_millis().to_string();
        let mut all = vec!["--latency-ms", latency.as_str()];
        all.extend_from_slice(flags);
        Self::start_script("python3", SCRIPT, &all, env)
    }

    /// An upstream whose normal answers take `latency` that traces each completions request to
    /// the OTLP collector at `collector` (its parent: the request's `traceparent`).
    pub fn traced(latency: Duration, collector: &str) -> Self {
        let latency = latency.as_millis().to_string();
        let flags = [
            "--latency-ms",
            latency.as_str(),
            "--otlp-endpoint",
            collector,
        ];
        Self::start_script(VENV_PYTHON, SCRIPT, &flags, &[])
    }

    /// The OTLP receiver (`tests/otlp/receiver.py`): [`Upstream::spans`] lists what it took,
    /// [`Upstream::control`] makes it slow or refusing.
    pub fn otlp_receiver() -> Self {
        Self::start_script(VENV_PYTHON, RECEIVER_SCRIPT, &[], &[])
    }

    /// The spans an OTLP receiver took, oldest first.
    pub fn spans(&self) -> Value {
        self.call("GET", "/spans")
    }

    /// The local embeddings server (`tests/upstream/embeddings.py`) with `flags` (`--dims N`,
    /// `--delay-ms N`); `POST /control` ([`Upstream::control`]) changes how it behaves.
    pub fn embeddings(flags: &[&str]) -> Self {
        Self::start_script("python3", EMBEDDINGS_SCRIPT, flags, &[])
    }

    /// `script` (a server of the same conventions: `--port 0`, its first line `listening on
    /// URL`, `/stats`, `--exit-with-stdin`) run by `python` with `flags` and `env`.
    fn start_script(python: &str, script: &str, flags: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(python)
            .arg(script)
            .args(["--port", "0"])
            .args(flags)
            .envs(env.iter().copied())
            .arg("--exit-with-stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {python} {script}: {e}"));
        let lifeline = child.stdin.take();
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let stdout = child.stdout.take().unwrap();
        let (ready, first_line) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = ready.send(line);
        });
        let line = match first_line.recv_timeout(STATE_DEADLINE) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the upstream never said it listens within {STATE_DEADLINE:?}; it logged: {}",
                    log.lock().unwrap()
                );
            }
        };
        let origin = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from the upstream: {line:?}"))
            .to_owned();
        Self {
            child,
            lifeline,
            origin,
            log,
        }
    }

    /// `http://127.0.0.1:PORT`, to grant.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Its `/stats`.
    pub fn stats(&self) -> Value {
        self.call("GET", "/stats")
    }

    /// Zeroes its `/stats`.
    pub fn reset(&self) {
        self.call("POST", "/stats/reset");
    }

    /// Polls `/stats` until `done` holds, failing after [`STATE_DEADLINE`] with the last seen.
    pub fn stats_when(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + STATE_DEADLINE;
        loop {
            let stats = self.stats();
            if done(&stats) {
                return stats;
            }
            assert!(
                Instant::now() < deadline,
                "the upstream never reached {what} within {STATE_DEADLINE:?}: {stats}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// POSTs `settings` to its `/control` (the embeddings server's): what it does from now on.
    pub fn control(&self, settings: Value) -> Value {
        self.call_with("POST", "/control", &settings.to_string())
    }

    /// One request on a connection of its own; the JSON body of the answer.
    fn call(&self, method: &str, path: &str) -> Value {
        self.call_with(method, path, "")
    }

    /// [`Self::call`] with a body.
    fn call_with(&self, method: &str, path: &str, body: &str) -> Value {
        let authority = self.origin.trim_start_matches("http://");
        let mut stream = TcpStream::connect(authority).unwrap();
        stream.set_read_timeout(Some(STATE_DEADLINE)).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no HTTP answer from the upstream: {response:?}"));
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"))
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        // Python stops by itself once its input closes; the kill ends a launcher in between.
        drop(self.lifeline.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
