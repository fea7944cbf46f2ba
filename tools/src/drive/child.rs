//! A `turnstile serve` child on a loopback socket the driver bound itself (port 0) and hands
//! down as fd 3: the port is known before the child starts, and no other process can take it.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use command_fds::{CommandFdExt, FdMapping};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::report::ChildReport;

/// Captured output kept per stream.
const MAX_CAPTURE: usize = 256 * 1024;
/// The fd the child finds its listener on.
const CHILD_FD: i32 = 3;

/// A running server child. Dropped without [`ServerChild::stop`] (a failing test, an early
/// return), it is killed and reaped: no `serve` process outlives its owner.
pub struct ServerChild {
    name: String,
    command: Vec<String>,
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    startup_observed: bool,
}

fn capture(stream: impl Read + Send + 'static, into: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if let Ok(mut text) = into.lock()
                && text.len() + line.len() < MAX_CAPTURE
            {
                text.push_str(&line);
                text.push('\n');
            }
        }
    })
}

impl ServerChild {
    /// Starts `binary serve --fd 3 ARGS` and waits until it logs that it is ready.
    pub fn start(
        name: &str,
        binary: &Path,
        args: &[String],
        startup_timeout: Duration,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let mut full_args = vec!["serve".to_owned(), "--fd".to_owned(), CHILD_FD.to_string()];
        full_args.extend_from_slice(args);
        let mut cmd = Command::new(binary);
        cmd.args(&full_args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.fd_mappings(vec![FdMapping {
            parent_fd: listener.into(),
            child_fd: CHILD_FD,
        }])?;
        let mut child = cmd.spawn()?;
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(capture(out, Arc::clone(&stdout)));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(capture(err, Arc::clone(&stderr)));
        }
        let mut command = vec![binary.display().to_string()];
        command.extend(full_args);
        let mut server = Self {
            name: name.to_owned(),
            command,
            addr,
            child,
            stdout,
            stderr,
            readers,
            startup_observed: false,
        };
        let deadline = Instant::now() + startup_timeout;
        while Instant::now() < deadline {
            if server.logged("turnstile ready") {
                server.startup_observed = true;
                break;
            }
            if server.child.try_wait()?.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(server)
    }

    /// Whether its log (stderr) so far contains `needle`.
    pub fn logged(&self, needle: &str) -> bool {
        self.stderr.lock().is_ok_and(|t| t.contains(needle))
    }

    /// Sends SIGHUP: the operator's "reload the configured plugin".
    pub fn hang_up(&self) -> nix::Result<()> {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGHUP)
    }

    /// Whether it logged readiness.
    pub fn ready(&self) -> bool {
        self.startup_observed
    }

    /// `http://ADDR/PATH`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// SIGTERM, wait for a graceful exit (SIGKILL after `grace`), reap, and report.
    pub fn stop(mut self, grace: Duration) -> ChildReport {
        let pid = Pid::from_raw(self.child.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        let mut status = None;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => break,
            }
        }
        if status.is_none() {
            let _ = self.child.kill();
        }
        let waited = self.child.wait();
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let text = |s: &Arc<Mutex<String>>| s.lock().map(|t| t.clone()).unwrap_or_default();
        ChildReport {
            name: self.name.clone(),
            command: self.command.clone(),
            startup_observed: self.startup_observed,
            shutdown_exit_status: status.and_then(|s| s.code()),
            shutdown_complete_observed: self.logged("shutdown complete"),
            server_process_reaped: waited.is_ok(),
            stdout: text(&self.stdout),
            stderr: text(&self.stderr),
        }
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
