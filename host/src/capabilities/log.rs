//! The `log` capability and the plugin's stdout and stderr: everything a plugin writes reaches
//! the server log bounded per call and escaped (one line per message or stream), tagged with the
//! plugin and the request id.

use super::state::HostState;
use crate::bindings::turnstile::retrieval::log;
use crate::output::{MAX_CAPTURED_OUTPUT, MAX_LOG_BYTES, MAX_LOG_CALLS, MAX_LOG_MESSAGE, sanitize};

impl log::Host for HostState {
    fn write(&mut self, level: log::Level, message: String) -> wasmtime::Result<()> {
        if !self.log_budget.admit(message.len()) {
            return Ok(());
        }
        // One line per message: control characters are escaped, so a plugin cannot forge lines.
        let message = sanitize(&message, MAX_LOG_MESSAGE);
        let (plugin, request_id) = (&*self.plugin, self.request_id);
        match level {
            log::Level::Debug => tracing::debug!(plugin, request_id, "{message}"),
            log::Level::Info => tracing::info!(plugin, request_id, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, request_id, "{message}"),
            log::Level::Error => tracing::error!(plugin, request_id, "{message}"),
        }
        Ok(())
    }
}

/// What one call wrote, as [`flush_output`] reports it.
pub(crate) struct Flushed {
    /// Bytes of stdout and stderr dropped past the bounds.
    pub(crate) dropped_bytes: u64,
    /// `log.write` messages dropped past the bounds.
    pub(crate) dropped_messages: u32,
    /// The end of what the call wrote to stderr (escaped, at most [`STDERR_TAIL`] bytes): where a
    /// language runtime prints the exception that made it trap.
    pub(crate) stderr_tail: Option<String>,
}

/// Longest end of a call's stderr kept to explain a trap, in bytes.
pub const STDERR_TAIL: usize = 2048;

/// Puts what the call wrote to stdout and stderr into the log (escaped: one line per
/// stream), and says what was cut past the bounds.
pub(crate) fn flush_output(state: &mut HostState, plugin: &str, request_id: u64) -> Flushed {
    let mut dropped_bytes = 0;
    let mut stderr_tail = None;
    for (stream, pipe) in [("stdout", &state.stdout), ("stderr", &state.stderr)] {
        let (kept, dropped) = pipe.take();
        if !kept.is_empty() {
            let text = String::from_utf8_lossy(&kept);
            let trimmed = text.trim_end();
            if stream == "stderr" {
                let mut start = trimmed.len().saturating_sub(STDERR_TAIL);
                while !trimmed.is_char_boundary(start) {
                    start += 1;
                }
                stderr_tail = Some(sanitize(&trimmed[start..], STDERR_TAIL));
            }
            let text = sanitize(trimmed, MAX_CAPTURED_OUTPUT);
            tracing::info!(plugin, request_id, stream, "{text}");
        }
        if dropped > 0 {
            tracing::warn!(
                plugin,
                request_id,
                stream,
                dropped_bytes = dropped,
                "plugin output cut at {MAX_CAPTURED_OUTPUT} bytes"
            );
        }
        dropped_bytes += dropped;
    }
    let budget = &state.log_budget;
    if budget.dropped_calls > 0 {
        tracing::warn!(
            plugin,
            request_id,
            dropped_messages = budget.dropped_calls,
            dropped_bytes = budget.dropped_bytes,
            "plugin log cut at {MAX_LOG_CALLS} messages / {MAX_LOG_BYTES} bytes per call"
        );
    }
    Flushed {
        dropped_bytes,
        dropped_messages: budget.dropped_calls,
        stderr_tail,
    }
}
