//! The `turnstile` command.

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use turnstile::check::CheckArgs;
use turnstile::config::ServeArgs;
use turnstile::drive::DriveArgs;
use turnstile::load::LoadArgs;

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
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Load(args) => turnstile::load::run(&args),
        Command::Check(args) => {
            if turnstile::check::run(&args)? {
                Ok(())
            } else {
                std::process::exit(1)
            }
        }
        Command::Drive(args) => {
            if turnstile::drive::run(&args)? {
                Ok(())
            } else {
                std::process::exit(1)
            }
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Loading (index build, plugin compile) happens before the async runtime starts serving.
    let state = turnstile::server::load(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let drain = std::time::Duration::from_millis(args.drain_ms);
    let result = runtime.block_on(async {
        let listener = turnstile::server::listener(&args)?;
        reload_on_sighup(state.clone(), args.plugin_sha256.clone());
        turnstile::server::run(state, listener, shutdown_signal(), drain).await
    });
    // After a drain timeout a plugin call may still be running on a blocking thread: do not
    // wait for it on the way out (dropping the runtime would).
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    result
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot listen for SIGTERM");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received; shutting down"),
        _ = term.recv() => tracing::info!("SIGTERM received; shutting down"),
    }
}

/// SIGHUP reloads the configured plugin (re-read, re-checked, swapped only if it passes).
fn reload_on_sighup(state: turnstile::http::AppState, pinned_sha256: Option<String>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot listen for SIGHUP; reload with POST /admin/plugin instead");
        return;
    };
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            let source = state.plugins.current().source;
            tracing::info!(?source, "SIGHUP received; reloading the plugin");
            let (state, pinned) = (state.clone(), pinned_sha256.clone());
            let outcome = tokio::task::spawn_blocking(move || {
                turnstile::swap::swap(&state, source, pinned.as_deref(), None)
                    .map(|s| s.generation.number)
            })
            .await;
            match outcome {
                Ok(Ok(generation)) => tracing::info!(generation, "reload done"),
                Ok(Err(error)) => {
                    tracing::error!(%error, "reload refused; the current plugin keeps serving")
                }
                Err(error) => tracing::error!(%error, "reload failed"),
            }
        }
    });
}
