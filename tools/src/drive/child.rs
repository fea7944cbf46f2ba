//! A `turnstile serve` child on a loopback socket the driver bound itself (port 0) and hands
//! down as fd 3: the port is known before the child starts, and no other process can take it.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use command_fds::{CommandFdExt, FdMapping};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::report::ChildReport;

/// Captured output kept per stream: the newest lines, so a late wait for a line still sees
/// what was logged last (and a failure shows it).
const MAX_CAPTURE: usize = 1024 * 1024;
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
            if let Ok(mut text) = into.lock() {
                keep_newest(&mut text, &line);
            }
        }
    })
}

/// Appends `line` to `text`, then drops the oldest whole lines while it is over
/// [`MAX_CAPTURE`] (a single line longer than that is kept cut to its end).
fn keep_newest(text: &mut String, line: &str) {
    text.push_str(line);
    text.push('\n');
    if text.len() > MAX_CAPTURE {
        let mut cut = text.len() - MAX_CAPTURE;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        let cut = match text[cut..].find('\n') {
            Some(at) if cut + at + 1 < text.len() => cut + at + 1,
            _ => cut,
        };
        text.drain(..cut);
    }
}

impl ServerChild {
    /// Starts `binary serve --fd 3 ARGS` and waits until it logs that it is ready.
    pub fn start(
        name: &str,
        binary: &Path,
        args: &[String],
        startup_timeout: Duration,
    ) -> anyhow::Result<Self> {
        Self::start_with_env(name, binary, args, &[], startup_timeout)
    }

    /// [`ServerChild::start`] with `env` added to the child's environment (the standard
    /// `OTEL_*` variables, say).
    pub fn start_with_env(
        name: &str,
        binary: &Path,
        args: &[String],
        env: &[(&str, &str)],
        startup_timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut server = Self::spawn(name, binary, args, env, true)?;
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

    /// Starts `binary serve --fd 3 ARGS` with its stdout and stderr on pipes that nobody reads
    /// (a stuck log shipper), handed to the caller to read when it chooses. Nothing waits for
    /// readiness: the listener is already bound, so a request waits until the child serves.
    pub fn start_unread(
        name: &str,
        binary: &Path,
        args: &[String],
    ) -> anyhow::Result<(Self, ChildStdout, ChildStderr)> {
        let mut server = Self::spawn(name, binary, args, &[], false)?;
        let stdout = server.child.stdout.take();
        let stderr = server.child.stderr.take();
        let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
            anyhow::bail!("the child's output pipes are missing");
        };
        Ok((server, stdout, stderr))
    }

    fn spawn(
        name: &str,
        binary: &Path,
        args: &[String],
        env: &[(&str, &str)],
        read: bool,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let mut full_args = vec!["serve".to_owned(), "--fd".to_owned(), CHILD_FD.to_string()];
        full_args.extend_from_slice(args);
        let mut cmd = Command::new(binary);
        cmd.args(&full_args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
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
        if read {
            if let Some(out) = child.stdout.take() {
                readers.push(capture(out, Arc::clone(&stdout)));
            }
            if let Some(err) = child.stderr.take() {
                readers.push(capture(err, Arc::clone(&stderr)));
            }
        }
        let mut command = vec![binary.display().to_string()];
        command.extend(full_args);
        Ok(Self {
            name: name.to_owned(),
            command,
            addr,
            child,
            stdout,
            stderr,
            readers,
            startup_observed: false,
        })
    }

    /// Whether its log (stderr) so far contains `needle`.
    pub fn logged(&self, needle: &str) -> bool {
        self.stderr.lock().is_ok_and(|t| t.contains(needle))
    }

    /// The newest part of its log (stderr), at most the last `bytes` of what is kept.
    pub fn log_tail(&self, bytes: usize) -> String {
        self.stderr.lock().map_or_else(
            |_| String::new(),
            |text| {
                let mut from = text.len().saturating_sub(bytes);
                while !text.is_char_boundary(from) {
                    from += 1;
                }
                text[from..].to_owned()
            },
        )
    }

    /// Sends SIGHUP: the operator's "reload the configured plugin".
    pub fn hang_up(&self) -> nix::Result<()> {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGHUP)
    }

    /// Sends SIGSTOP: the whole process stalls (a long pause, a stop-the-world stall) until
    /// [`ServerChild::resume`]; its sockets stay open. Resume it before [`ServerChild::stop`],
    /// whose SIGTERM a stopped process only sees once continued.
    pub fn pause(&self) -> nix::Result<()> {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGSTOP)
    }

    /// Sends SIGCONT: a paused child runs on.
    pub fn resume(&self) -> nix::Result<()> {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGCONT)
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

#[cfg(test)]
mod tests {
    use super::{MAX_CAPTURE, keep_newest};

    #[test]
    fn the_capture_keeps_the_newest_whole_lines() {
        let mut text = String::new();
        let line = "x".repeat(999);
        for n in 0..3 * MAX_CAPTURE / 1000 {
            keep_newest(&mut text, &format!("{n} {line}"));
        }
        assert!(text.len() <= MAX_CAPTURE, "{}", text.len());
        assert!(text.len() > MAX_CAPTURE - 2_000, "{}", text.len());
        let last = 3 * MAX_CAPTURE / 1000 - 1;
        assert!(text.ends_with(&format!("{last} {line}\n")));
        // Whole lines only: the first kept line starts at a line's start.
        let first = text.lines().next().unwrap();
        assert!(
            first.split(' ').next().unwrap().parse::<usize>().is_ok(),
            "{first:.20}"
        );
    }
}
