//! The `wasi` capability: WASI 0.2 as a language runtime links it, granting nothing a plugin
//! could read or reach.
//!
//! A language runtime links WASI interfaces its plugin never uses: CPython (componentize-py)
//! imports the filesystem and sockets, StarlingMonkey (componentize-js) the filesystem for its
//! stdio. Refusing such a component for the import alone would leave every plugin but a Rust
//! one unusable; granting what they name would break the sandbox. So every interface of WASI 0.2
//! that the host links is linked — and grants nothing: no preopened directory, an empty
//! environment and no arguments, networking switched off, stdin empty, stdout and stderr
//! captured into the server log (bounded, escaped). Anything else — another WASI package, a WASI
//! version other than 0.2 — is refused at load (`crate::contract`), naming every such import.

use wasmtime::component::Linker;
use wasmtime_wasi::WasiCtx;

use super::capability::{Call, Capability, HasRoom, Report};
use crate::error::PluginError;
use crate::output::{CapturedOutput, MAX_CAPTURED_OUTPUT, sanitize};
use crate::provision::Provision;

/// Longest end of a call's stderr kept to explain a trap, in bytes.
pub const STDERR_TAIL: usize = 2048;

/// WASI 0.2, linked granting nothing.
pub struct Wasi;

/// One call's WASI context and the pipes its stdout and stderr write into.
pub struct WasiState {
    /// The context: no files, sockets, environment or arguments.
    pub(crate) ctx: WasiCtx,
    stdout: CapturedOutput,
    stderr: CapturedOutput,
}

/// What one call wrote to stdout and stderr, past what reached the log.
#[derive(Debug, Clone, Default)]
pub struct StdioReport {
    /// Bytes of stdout and stderr dropped past [`MAX_CAPTURED_OUTPUT`] each.
    pub dropped_bytes: u64,
    /// The end of what the call wrote to stderr (escaped, at most [`STDERR_TAIL`] bytes): where
    /// a language runtime prints the exception that made it trap.
    pub stderr_tail: Option<String>,
}

impl Report for StdioReport {
    fn absorb(&mut self, later: &Self) {
        self.dropped_bytes += later.dropped_bytes;
        if later.stderr_tail.is_some() {
            self.stderr_tail.clone_from(&later.stderr_tail);
        }
    }
}

impl Capability for Wasi {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[
        (
            "wasi:cli/environment",
            "nothing: no variables, no arguments, no working directory",
        ),
        ("wasi:cli/exit", "exit ends the call as a trap"),
        ("wasi:cli/stdin", "nothing: an empty stream"),
        (
            "wasi:cli/stdout",
            "a stream into the server log (16 KiB per call, escaped)",
        ),
        (
            "wasi:cli/stderr",
            "a stream into the server log (16 KiB per call, escaped)",
        ),
        ("wasi:cli/terminal-input", "nothing: no terminal"),
        ("wasi:cli/terminal-output", "nothing: no terminal"),
        ("wasi:cli/terminal-stdin", "nothing: stdin is no terminal"),
        ("wasi:cli/terminal-stdout", "nothing: stdout is no terminal"),
        ("wasi:cli/terminal-stderr", "nothing: stderr is no terminal"),
        ("wasi:io/error", "the errors of the streams above"),
        ("wasi:io/poll", "waiting on the streams and clocks above"),
        ("wasi:io/streams", "the streams above"),
        ("wasi:clocks/monotonic-clock", "the host's monotonic clock"),
        ("wasi:clocks/wall-clock", "the host's wall clock"),
        ("wasi:random/random", "random bytes"),
        ("wasi:random/insecure", "random bytes"),
        ("wasi:random/insecure-seed", "a random seed"),
        ("wasi:filesystem/types", "nothing: no directory is opened"),
        (
            "wasi:filesystem/preopens",
            "nothing: an empty list of directories",
        ),
        (
            "wasi:sockets/network",
            "nothing: networking is switched off",
        ),
        (
            "wasi:sockets/instance-network",
            "nothing: networking is switched off",
        ),
        ("wasi:sockets/tcp", "nothing: every TCP socket call fails"),
        (
            "wasi:sockets/tcp-create-socket",
            "nothing: every TCP socket call fails",
        ),
        ("wasi:sockets/udp", "nothing: every UDP socket call fails"),
        (
            "wasi:sockets/udp-create-socket",
            "nothing: every UDP socket call fails",
        ),
        (
            "wasi:sockets/ip-name-lookup",
            "nothing: every name lookup fails",
        ),
    ];

    type Options = ();
    type Grant = ();
    type State = WasiState;
    type Report = StdioReport;

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        // WASI's bindings reach the context through the store's `WasiView`, not a room.
        wasmtime_wasi::p2::add_to_linker_sync(linker)
    }

    fn grant(_: &(), _: &Provision) -> Result<(), PluginError> {
        Ok(())
    }

    fn state(_: &(), _: &(), _: &Call) -> WasiState {
        let stdout = CapturedOutput::default();
        let stderr = CapturedOutput::default();
        // Deny by default: no preopened directories, no environment, no arguments, no stdin;
        // sockets and name lookup are switched off (not merely given an empty allow-list).
        let ctx = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        WasiState {
            ctx,
            stdout,
            stderr,
        }
    }

    /// Puts what the call wrote to stdout and stderr into the log (escaped: one line per
    /// stream), and says what was cut past the bounds.
    fn finish(state: &mut WasiState, call: &Call) -> StdioReport {
        let (plugin, request_id) = (&*call.plugin, call.request_id);
        let mut report = StdioReport::default();
        for (stream, pipe) in [("stdout", &state.stdout), ("stderr", &state.stderr)] {
            let (kept, dropped) = pipe.take();
            if !kept.is_empty() {
                let text = call.redact(&String::from_utf8_lossy(&kept));
                let trimmed = text.trim_end();
                if stream == "stderr" {
                    let mut start = trimmed.len().saturating_sub(STDERR_TAIL);
                    while !trimmed.is_char_boundary(start) {
                        start += 1;
                    }
                    report.stderr_tail = Some(sanitize(&trimmed[start..], STDERR_TAIL));
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
            report.dropped_bytes += dropped;
        }
        report
    }
}
