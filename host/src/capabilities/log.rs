//! The `log` capability: the contract's `log.write`, into the server log — bounded per call
//! ([`MAX_LOG_CALLS`] messages, [`MAX_LOG_BYTES`] bytes; the excess is dropped and counted) and
//! escaped (one line per message), tagged with the plugin and the request id.

use wasmtime::component::Linker;

use super::capability::{Call, Capability, HasRoom, InRoom, Report, Room};
use crate::bindings::turnstile::retrieval::log;
use crate::error::PluginError;
use crate::output::{LogBudget, MAX_LOG_BYTES, MAX_LOG_CALLS, MAX_LOG_MESSAGE, sanitize};
use crate::provision::Provision;

/// The server log, for the plugin's own messages.
pub struct Log;

/// What one call's `log.write` calls dropped past the bounds.
#[derive(Debug, Clone, Default)]
pub struct LogReport {
    /// Messages dropped.
    pub dropped_messages: u32,
    /// Their bytes.
    pub dropped_bytes: u64,
    /// The last `warn` or `error` message the call wrote, as the log shows it (escaped, secrets
    /// redacted): the plugin's own word on what went wrong, for the line that reports the call.
    pub last_warning: Option<String>,
}

impl Report for LogReport {
    fn absorb(&mut self, later: &Self) {
        self.dropped_messages += later.dropped_messages;
        self.dropped_bytes += later.dropped_bytes;
        if later.last_warning.is_some() {
            self.last_warning.clone_from(&later.last_warning);
        }
    }
}

impl Capability for Log {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[(
        "turnstile:retrieval/log",
        "the server log (64 messages, 16 KiB per call, escaped)",
    )];

    type Options = ();
    type Grant = ();
    type State = (LogBudget, Option<String>);
    type Report = LogReport;

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        log::add_to_linker::<T, InRoom<Self>>(linker, T::room)
    }

    fn grant(_: &(), _: &Provision) -> Result<(), PluginError> {
        Ok(())
    }

    fn state(_: &(), _: &(), _: &Call) -> (LogBudget, Option<String>) {
        (LogBudget::default(), None)
    }

    fn finish((budget, last_warning): &mut (LogBudget, Option<String>), call: &Call) -> LogReport {
        if budget.dropped_calls > 0 {
            tracing::warn!(
                plugin = &*call.plugin,
                request_id = call.request_id,
                dropped_messages = budget.dropped_calls,
                dropped_bytes = budget.dropped_bytes,
                "plugin log cut at {MAX_LOG_CALLS} messages / {MAX_LOG_BYTES} bytes per call"
            );
        }
        LogReport {
            dropped_messages: budget.dropped_calls,
            dropped_bytes: budget.dropped_bytes,
            last_warning: last_warning.take(),
        }
    }
}

impl log::Host for Room<'_, Log> {
    fn write(&mut self, level: log::Level, message: String) -> wasmtime::Result<()> {
        if !self.state.0.admit(message.len()) {
            return Ok(());
        }
        // One line per message: control characters are escaped, so a plugin cannot forge lines.
        let message = sanitize(&self.call.redact(&message), MAX_LOG_MESSAGE);
        let (plugin, request_id) = (&*self.call.plugin, self.call.request_id);
        match level {
            log::Level::Debug => tracing::debug!(plugin, request_id, "{message}"),
            log::Level::Info => tracing::info!(plugin, request_id, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, request_id, "{message}"),
            log::Level::Error => tracing::error!(plugin, request_id, "{message}"),
        }
        if matches!(level, log::Level::Warn | log::Level::Error) {
            self.state.1 = Some(message);
        }
        Ok(())
    }
}
