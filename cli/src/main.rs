//! The `turnstile` command: the server (`serve`, `check`) and its client tools (`drive`, `load`)
//! behind one binary.

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use turnstile::check::CheckArgs;
use turnstile::serve::ServeArgs;
use turnstile_tools::drive::DriveArgs;
use turnstile_tools::load::LoadArgs;

#[derive(Parser)]
#[command(
    name = "turnstile",
    version,
    about = "FIFO admission gate in front of WebAssembly retrieval plugins"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve `POST /retrieve` (and `/state`, `/healthz`, `/readyz`).
    Serve(ServeArgs),
    /// Demonstrate the gate over real loopback HTTP against temporary `serve` children, and
    /// check every case (exits non-zero when any case differs from what is expected).
    Drive(DriveArgs),
    /// Run the conformance suite against a plugin component (exits non-zero on any failure).
    Check(CheckArgs),
    /// Closed-loop HTTP load: users, spawn rate, duration; live progress, a summary table,
    /// `summary.json` and a chart.
    Load(LoadArgs),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let passed = match cli.command {
        Command::Serve(args) => return turnstile::serve::serve(args),
        Command::Load(args) => return turnstile_tools::load::run(&args),
        Command::Check(args) => turnstile::check::run(&args)?,
        Command::Drive(args) => turnstile_tools::drive::run(&args)?,
    };
    if !passed {
        std::process::exit(1)
    }
    Ok(())
}
