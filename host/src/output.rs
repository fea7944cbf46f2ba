//! What a plugin writes — stdout, stderr, `log.write` — on its way to the server log: bounded per
//! call (the excess is dropped and counted, never an error the guest could trap on), and with
//! control characters escaped, so a plugin can neither flood the log nor forge a line of it.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Bytes of a plugin's stdout and of its stderr kept per call for the server log.
pub const MAX_CAPTURED_OUTPUT: usize = 16 * 1024;
/// `log.write` calls kept per plugin call; later ones are dropped and counted.
pub const MAX_LOG_CALLS: u32 = 64;
/// `log.write` bytes kept per plugin call, all messages together.
pub const MAX_LOG_BYTES: usize = 16 * 1024;
/// Longest single log message kept, in bytes.
pub const MAX_LOG_MESSAGE: usize = 4 * 1024;
/// Longest plugin-chosen text (an id, an error message) put into a host log line, in bytes.
pub const MAX_LOGGED_TEXT: usize = 256;

/// Text a plugin chose, made safe for one log line: control characters (newline and carriage
/// return included) escaped as `\n`, `\r`, `\u{1b}`…, and cut at `max` bytes of the original
/// with `…` marking the cut.
pub fn sanitize(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(end + 8);
    for c in text[..end].chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if end < text.len() {
        out.push('…');
    }
    out
}

/// One call's stdout or stderr: keeps the first [`MAX_CAPTURED_OUTPUT`] bytes, accepts and
/// counts the rest (so `println!` in a guest never fails and never panics on a full pipe).
#[derive(Clone, Default)]
pub struct CapturedOutput {
    inner: Arc<Mutex<Captured>>,
}

#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    dropped: u64,
}

impl CapturedOutput {
    /// What was kept, and how many bytes were dropped past the bound.
    pub fn take(&self) -> (Vec<u8>, u64) {
        let mut captured = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        (
            std::mem::take(&mut captured.kept),
            std::mem::take(&mut captured.dropped),
        )
    }

    fn push(&self, bytes: &[u8]) {
        let mut captured = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let room = MAX_CAPTURED_OUTPUT.saturating_sub(captured.kept.len());
        let kept = bytes.len().min(room);
        captured.kept.extend_from_slice(&bytes[..kept]);
        captured.dropped += (bytes.len() - kept) as u64;
    }
}

impl OutputStream for CapturedOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always room: what is past the bound is dropped, not refused.
        Ok(64 * 1024)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturedOutput {
    /// Always ready: writes never wait.
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for CapturedOutput {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.push(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// The `log.write` budget of one call: what may still be logged, and what was dropped.
#[derive(Debug, Default)]
pub struct LogBudget {
    calls: u32,
    bytes: usize,
    /// Messages dropped past the bounds.
    pub dropped_calls: u32,
    /// Their bytes.
    pub dropped_bytes: u64,
}

impl LogBudget {
    /// Whether a message of `len` bytes may still be logged; counts it either way.
    pub fn admit(&mut self, len: usize) -> bool {
        let len = len.min(MAX_LOG_MESSAGE);
        if self.calls < MAX_LOG_CALLS && self.bytes + len <= MAX_LOG_BYTES {
            self.calls += 1;
            self.bytes += len;
            true
        } else {
            self.dropped_calls += 1;
            self.dropped_bytes += len as u64;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitized_text_cannot_start_a_line_of_its_own() {
        let forged = "ok\nINFO turnstile::server: shutdown complete\r\u{1b}[2J";
        let safe = sanitize(forged, 1024);
        assert!(!safe.contains('\n') && !safe.contains('\r') && !safe.contains('\u{1b}'));
        assert!(safe.starts_with("ok\\nINFO turnstile::server: shutdown complete\\r\\u{1b}"));
        assert_eq!(sanitize("ééé", 3), "é…");
        assert_eq!(sanitize("plain", 256), "plain");
    }

    #[test]
    fn output_past_the_bound_is_dropped_and_counted() {
        let mut out = CapturedOutput::default();
        for _ in 0..3 {
            out.write(Bytes::from(vec![b'x'; MAX_CAPTURED_OUTPUT / 2 + 1]))
                .unwrap();
        }
        let (kept, dropped) = out.take();
        assert_eq!(kept.len(), MAX_CAPTURED_OUTPUT);
        assert_eq!(
            dropped as usize,
            3 * (MAX_CAPTURED_OUTPUT / 2 + 1) - MAX_CAPTURED_OUTPUT
        );
    }

    #[test]
    fn the_log_budget_counts_what_it_drops() {
        let mut budget = LogBudget::default();
        let admitted = (0..100).filter(|_| budget.admit(10)).count();
        assert_eq!(admitted, MAX_LOG_CALLS as usize);
        assert_eq!(budget.dropped_calls, 100 - MAX_LOG_CALLS);
        assert_eq!(budget.dropped_bytes, 10 * u64::from(100 - MAX_LOG_CALLS));
    }
}
