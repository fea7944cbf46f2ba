//! `turnstile serve` as a process: the listener (a fresh bind, or an inherited socket), the async
//! runtime sized for the blocking workers, the signals — SIGTERM/SIGINT drain, SIGHUP reloads
//! the plugin — and the exit when a drain runs out.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use turnstile_host::swap::{HotSwap, SwapOutcome};

use super::args::ServeArgs;
use super::load::load;
use super::run::{DrainTimeout, run};
use crate::traces::{TraceIntake, Traces};

/// The listener: the inherited socket `--fd`, or a fresh bind of `--listen`.
pub fn listener(args: &ServeArgs) -> anyhow::Result<TcpListener> {
    asynchronous(bind(args)?)
}

/// The socket `serve` listens on, bound (or adopted) before anything is loaded: a busy port or a
/// bad `--fd` fails at once, not after seconds of building an index and compiling a plugin.
/// Connections that arrive while it loads wait in the listen backlog.
fn bind(args: &ServeArgs) -> anyhow::Result<std::net::TcpListener> {
    match args.fd {
        Some(fd) => adopt_listener(fd),
        None => std::net::TcpListener::bind(args.listen).map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
                ": another process listens there (stop it, or choose another --listen)"
            } else {
                ""
            };
            anyhow::anyhow!("--listen {}: cannot bind: {e}{hint}", args.listen)
        }),
    }
}

/// A bound socket for the async runtime (inside it).
fn asynchronous(listener: std::net::TcpListener) -> anyhow::Result<TcpListener> {
    listener.set_nonblocking(true)?;
    Ok(TcpListener::from_std(listener)?)
}

#[allow(unsafe_code)]
fn adopt_listener(fd: i32) -> anyhow::Result<std::net::TcpListener> {
    use std::os::fd::FromRawFd;
    // SAFETY: the operator (or the parent process, e.g. `turnstile drive`) hands this process
    // ownership of descriptor `fd`, documented as an already-listening TCP socket; nothing else
    // in this process uses it. We check below that it really is a socket with a local address.
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    match listener.local_addr() {
        Ok(_) => Ok(listener),
        Err(e) => {
            // Not ours to close if it is not a socket: leak it rather than close a stranger's fd.
            std::mem::forget(listener);
            anyhow::bail!("--fd {fd}: not a listening TCP socket ({e})")
        }
    }
}

/// Runs `turnstile serve` until SIGTERM or SIGINT: binds, then loads (index build, plugin
/// compile) before the async runtime starts serving, reloads the plugin on SIGHUP, drains on the way out.
/// With `traces` (started before the log, whose layer it adds), a request's span takes a trusted
/// proxy's `traceparent` as its parent.
pub fn serve(args: ServeArgs, traces: Option<&Traces>) -> anyhow::Result<()> {
    raise_open_files_limit();
    let bound = bind(&args)?;
    let mut state = load(&args)?;
    if let Some(traces) = traces {
        tracing::info!(
            endpoint = traces.endpoint(),
            "traces exported over OTLP/HTTP"
        );
        state = state.with_traces(TraceIntake::new(args.access.trusted_proxies()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Every admitted call runs on a blocking thread: the pool always has room for
        // `max_active` of them, plus the few other blocking jobs (swaps, reloads).
        .max_blocking_threads(state.admission.gate().config().max_active + EXTRA_BLOCKING_THREADS)
        .build()?;
    let drain = Duration::from_millis(args.drain_ms);
    let result = runtime.block_on(async {
        let listener = asynchronous(bound)?;
        reload_on_sighup(Arc::clone(&state.swap));
        run(state, listener, shutdown_signal(), drain).await
    });
    if let Err(error) = &result
        && error.is::<DrainTimeout>()
    {
        // A plugin call still runs on a blocking thread and nothing can stop it (no epoch, no
        // fuel: by design). Exit now, without tearing the runtime down under it (the log's
        // buffered lines written first: they say which calls were still running).
        crate::logging::finish();
        std::process::exit(1);
    }
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}

/// Blocking threads beyond `max_active`: a hot swap, a SIGHUP reload and a little slack.
const EXTRA_BLOCKING_THREADS: usize = 8;

/// Each open connection is a file descriptor: raise the soft limit to the hard limit, so
/// `--max-connections` rather than a low default decides how many can be open.
fn raise_open_files_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::info!(limit, "open files limit"),
        Err(error) => tracing::warn!(%error, "cannot raise the open files limit"),
    }
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

/// SIGHUP returns to the configuration: the configured corpus (`--corpus`, or the embedded one;
/// re-read, swapped only if its sha256 differs from what serves and the serving plugin passes
/// its smoke checks over it), then the configured plugin (`--plugin` with the operator's
/// settings and grants; re-read, swapped only if it differs from what serves and passes its
/// checks), whatever admin swaps installed since. Either refused, the current one keeps
/// serving.
fn reload_on_sighup(swap: Arc<HotSwap>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangup) = signal(SignalKind::hangup()) else {
        tracing::error!(
            "cannot listen for SIGHUP; reload with POST /admin/corpus and /admin/plugin instead"
        );
        return;
    };
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            let swap = Arc::clone(&swap);
            let reloads = tokio::task::spawn_blocking(move || reload(&swap)).await;
            if let Err(error) = reloads {
                tracing::error!(%error, "reload failed");
            }
        }
    });
}

/// One SIGHUP's work, on a blocking thread: the corpus, then the plugin (over the new corpus).
fn reload(swap: &HotSwap) {
    let current = swap.slot().current();
    tracing::info!(corpus = %current.corpus.index.source, "SIGHUP received; reloading the corpus");
    match swap.reload_corpus() {
        Ok(swapped) if swapped.outcome == SwapOutcome::Unchanged => {
            tracing::info!(
                corpus_generation = swapped.generation.corpus.number,
                "corpus unchanged (the same sha256)"
            )
        }
        Ok(swapped) => tracing::info!(
            corpus_generation = swapped.generation.corpus.number,
            "corpus reload done"
        ),
        Err(error) => tracing::error!(
            code = crate::swap_codes::corpus_swap_code(&error),
            %error,
            "corpus reload refused; the current corpus keeps serving"
        ),
    }
    tracing::info!("SIGHUP received; reloading the plugin");
    match swap.reload_plugin() {
        Ok(swapped) if swapped.outcome == SwapOutcome::Unchanged => tracing::info!(
            generation = swapped.generation.number,
            "plugin unchanged (the same sha256, settings and grants)"
        ),
        Ok(swapped) => tracing::info!(generation = swapped.generation.number, "reload done"),
        Err(error) => tracing::error!(
            code = crate::swap_codes::plugin_swap_code(&error),
            %error,
            "reload refused; the current plugin keeps serving"
        ),
    }
}
