//! The server's log never blocks serving. Every line (events, the access log, plugins' output)
//! goes through a bounded, non-blocking writer (`tracing-appender`): a thread of its own writes
//! to stderr, and a request's thread only hands its line over. When the sink is slower than the
//! server (a full pipe nobody reads, a stuck log shipper) and [`LOG_BUFFER_LINES`] lines are
//! waiting, a new line is dropped whole — never torn — and counted
//! (`turnstile_log_lines_dropped_total`); once the sink takes lines again, a warning line says how
//! many were dropped.

use std::io::{self, Write};
use std::sync::{Mutex, OnceLock};

use tracing_appender::non_blocking::{ErrorCounter, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::filter::{FilterExt, LevelFilter, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::traces::{TRACE_TARGET, Traces};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};

/// The log's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (tracing-subscriber's JSON format), with the request's span.
    Json,
}

/// Lines waiting for the sink at most, by default (`--log-buffer-lines`); past this, new lines
/// are dropped (and counted). A line
/// is one event: a plugin's output is cut to a few KiB before it is logged, so this bounds the
/// buffer to a few tens of MiB at worst (typically a line is 200–400 bytes: 2–3 MiB).
pub const LOG_BUFFER_LINES: u64 = 8_192;

/// The target of the line that reports dropped lines.
const TARGET: &str = "turnstile_server::logging";

static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();
/// The log thread's guard, from [`init`] to [`finish`].
static GUARD: Mutex<Option<WorkerGuard>> = Mutex::new(None);

/// Log lines dropped so far because the sink was slower than the server (0 before [`init`]).
pub fn dropped_lines() -> u64 {
    DROPPED.get().map_or(0, |c| c.dropped_lines() as u64)
}

/// Installs the process's log: `RUST_LOG` (default `info`) in `format`, on stderr through the
/// bounded writer, at most `buffer_lines` lines waiting — and, with `traces`, the layer that
/// makes spans OpenTelemetry spans. Call [`finish`] before the process exits, so that the lines
/// still buffered are written.
pub fn init(format: LogFormat, buffer_lines: u64, traces: Option<&Traces>) {
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(usize::try_from(buffer_lines).unwrap_or(usize::MAX))
        .thread_name("turnstile-log")
        .finish(Sink {
            stderr: io::stderr(),
            format,
            reported: 0,
        });
    // A second init in one process keeps the first counter (the first writer is the one
    // installed as the global subscriber).
    let _ = DROPPED.set(writer.error_counter());
    install(format, writer, traces);
    *GUARD.lock().unwrap_or_else(|p| p.into_inner()) = Some(guard);
}

/// Installs a log that writes straight to stderr (a command-line tool's: `check`, `eval`,
/// `load`, `drive`, where waiting for the terminal is what a person expects).
pub fn init_stderr(format: LogFormat) {
    install(format, std::io::stderr, None);
}

/// The subscriber: `RUST_LOG` (default `info`) in `format`, written by `writer` — never what
/// only traces show ([`TRACE_TARGET`]: a line logged inside such a span still names the
/// request's) — and the trace layer, with traces on.
fn install<W>(format: LogFormat, writer: W, traces: Option<&Traces>)
where
    W: for<'writer> tracing_subscriber::fmt::MakeWriter<'writer> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // The exclusion says it passes every level, so the subscriber's level hint stays the
    // filter's: below it, `log` records of the dependencies are dropped where they are made (a
    // filter without a hint would make every `log::trace!` of wasmtime a dispatch).
    let logged = filter.and(
        filter_fn(|meta| meta.target() != TRACE_TARGET).with_max_level_hint(LevelFilter::TRACE),
    );
    let lines = tracing_subscriber::fmt::layer().with_writer(writer);
    let lines: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => lines
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(logged)
            .boxed(),
        LogFormat::Json => lines
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_filter(logged)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(lines)
        .with(traces.map(Traces::layer))
        .init();
}

/// Writes the lines still buffered (waiting at most about a second for a slow sink) and stops
/// the log's thread: the last thing before the process exits. Lines logged after it are lost.
pub fn finish() {
    let guard = GUARD.lock().unwrap_or_else(|p| p.into_inner()).take();
    drop(guard);
}

/// Stderr, as the log thread writes it: before the first line it can write after lines were
/// dropped, the line that says how many.
struct Sink {
    stderr: io::Stderr,
    format: LogFormat,
    /// Dropped lines already reported.
    reported: usize,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stderr.write(buf)
    }

    /// The log thread hands over each line whole, here: the report goes between two lines.
    fn write_all(&mut self, line: &[u8]) -> io::Result<()> {
        let dropped = DROPPED.get().map_or(0, ErrorCounter::dropped_lines);
        if dropped > self.reported {
            let report = report(self.format, dropped - self.reported, dropped);
            self.stderr.write_all(report.as_bytes())?;
            self.reported = dropped;
        }
        self.stderr.write_all(line)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stderr.flush()
    }
}

/// The warning line for `dropped` lines lost since the last report (`total` in all), in the
/// log's format.
fn report(format: LogFormat, dropped: usize, total: usize) -> String {
    let mut timestamp = String::new();
    // The subscriber's own clock and layout (RFC 3339, UTC).
    let _ = SystemTime.format_time(&mut Writer::new(&mut timestamp));
    let message = "log lines dropped: the log sink was slower than the server";
    match format {
        LogFormat::Text => format!(
            "{timestamp}  WARN {TARGET}: {message} dropped={dropped} dropped_total={total}\n"
        ),
        LogFormat::Json => {
            let line = serde_json::json!({
                "timestamp": timestamp,
                "level": "WARN",
                "fields": {"message": message, "dropped": dropped, "dropped_total": total},
                "target": TARGET,
            });
            format!("{line}\n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_one_line_in_the_log_format() {
        let text = report(LogFormat::Text, 3, 10);
        assert!(text.ends_with("dropped=3 dropped_total=10\n"), "{text}");
        assert_eq!(text.matches('\n').count(), 1);
        let json: serde_json::Value =
            serde_json::from_str(&report(LogFormat::Json, 3, 10)).expect("a JSON report is JSON");
        assert_eq!(json["level"], "WARN");
        assert_eq!(json["fields"]["dropped"], 3);
        assert_eq!(json["fields"]["dropped_total"], 10);
    }
}
