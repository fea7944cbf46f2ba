//! `turnstile drive`'s flags.

use std::path::PathBuf;

use clap::Args;

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
