//! `turnstile drive`: demonstrates the gate over real loopback HTTP against real `serve` child
//! processes, and checks every observation against what the gate promises.
//!
//! Ordering is established from the server's own `/state` before each next request is sent,
//! never from client submission order or sleeps.

mod cases;
mod child;
mod report;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

pub use child::ServerChild;
pub use report::{CaseResult, ChildReport, DriveReport};

/// Flags of `turnstile drive`.
#[derive(Debug, Clone, Args)]
pub struct DriveArgs {
    /// Where to write the JSON result.
    #[arg(long)]
    pub output: PathBuf,

    /// The `delay` fixture component (`cargo xtask plugins` puts it at the default path,
    /// relative to the repository root).
    #[arg(long = "delay-plugin", default_value = "target/plugins/delay.wasm")]
    pub delay_plugin: PathBuf,

    /// The `fault` fixture component (`cargo xtask plugins` puts it at the default path,
    /// relative to the repository root).
    #[arg(long = "fault-plugin", default_value = "target/plugins/fault.wasm")]
    pub fault_plugin: PathBuf,

    /// The `turnstile` binary to start as `serve` children (default: this executable).
    #[arg(long = "server-binary")]
    pub server_binary: Option<PathBuf>,

    /// How long to wait for a child to log that it is ready, in seconds.
    #[arg(long = "startup-timeout-s", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub startup_timeout_s: u64,
}

/// The scenario's fixed settings (those of the reference lab).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Settings {
    /// `delay_ms` given to the delay fixture.
    pub delay_ms: u64,
    /// Gate `max_active`.
    pub max_active: usize,
    /// Gate `max_waiting`.
    pub max_waiting: usize,
    /// Gate wait deadline (ms) for the main scenario.
    pub wait_ms: u64,
    /// Gate wait deadline (ms) for the FIFO-promotion case.
    pub fifo_wait_ms: u64,
    /// The client read timeout of the `client_timeout` case (ms).
    pub client_timeout_ms: u64,
}

/// Runs of the overflow scenario at most, when the machine misses its 150 ms window (see
/// [`DriveReport::overflow_retries`]).
pub const OVERFLOW_ATTEMPTS: usize = 3;

/// The reference lab's settings.
pub const SETTINGS: Settings = Settings {
    delay_ms: 350,
    max_active: 1,
    max_waiting: 1,
    wait_ms: 150,
    fifo_wait_ms: 1000,
    client_timeout_ms: 100,
};

/// Runs every case, writes the report to `--output`, prints a summary, and returns whether
/// everything matched.
pub fn run(args: &DriveArgs) -> anyhow::Result<bool> {
    for (flag, path) in [
        ("--delay-plugin", &args.delay_plugin),
        ("--fault-plugin", &args.fault_plugin),
    ] {
        anyhow::ensure!(
            path.is_file(),
            "{flag} {}: no such file; build the fixtures with `cargo xtask plugins` (run from \
             the repository root) or pass {flag} PATH",
            path.display()
        );
    }
    let binary = match &args.server_binary {
        Some(b) => b.clone(),
        None => std::env::current_exe()?,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let startup_timeout = Duration::from_secs(args.startup_timeout_s);
    let report = runtime.block_on(cases::run_all(&binary, args, SETTINGS, startup_timeout))?;
    let json = serde_json::to_string_pretty(&report)?;
    std::fs::write(&args.output, json + "\n")?;
    print!("{}", report.summary());
    println!("result written to {}", args.output.display());
    Ok(report.passed)
}
