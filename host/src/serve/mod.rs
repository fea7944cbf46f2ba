//! `turnstile serve`: corpus → index → plugin → HTTP app → listener, with graceful shutdown on
//! SIGTERM/SIGINT and a plugin reload on SIGHUP.

mod args;

pub use args::{ServeArgs, ServeConfigError};

use std::future::{Future, IntoFuture};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::corpus::{CorpusIndex, CorpusPool, read_corpus};
use crate::gate::Gate;
use crate::http::{AdminPolicy, AppState, app};
use crate::plugin::{Plugin, PluginRuntime, PluginSlot, RuntimeOptions, Sha256Hex};
use crate::swap::HotSwap;

/// Idle read-only connections kept for reuse.
pub const MAX_IDLE_CONNECTIONS: usize = 16;

/// Loads everything `serve` needs: this is startup work, never done on a request path.
pub fn load(args: &ServeArgs) -> anyhow::Result<AppState> {
    let plugin_config = args.plugin_config()?;
    let gate_config = args.gate_config()?;
    let cache_dir = args.cache_dir();
    let corpus = read_corpus(args.corpus.as_deref())?;
    let index = CorpusIndex::open_or_build(&corpus, &cache_dir.join("index"))?;
    tracing::info!(
        source = %index.source, documents = index.documents, sha256 = %index.sha256,
        origin = ?index.origin, path = %index.path.display(), "corpus index ready"
    );
    let pool = CorpusPool::new(&index, MAX_IDLE_CONNECTIONS)?;
    let runtime = PluginRuntime::new(RuntimeOptions {
        memory_limit: args.memory_limit_mib as usize * 1024 * 1024,
        // The gate bounds concurrent plugin calls, and so live instances; one more for the
        // smoke checks of a hot-swap candidate (swaps are serialised, their calls sequential).
        max_instances: gate_config.max_active as u32 + 1,
        cache_dir: (!args.no_precompiled_cache).then(|| cache_dir.join("plugins")),
        pooling: true,
    })?;
    let source = args.plugin_source();
    let plugin = Plugin::load(&runtime, &source, plugin_config.clone(), pool)
        .context("loading the plugin")?;
    if let Some(expected) = &args.plugin_sha256
        && plugin.sha256() != expected.as_str()
    {
        anyhow::bail!(
            "--plugin-sha256: the plugin has sha256 {}, expected {expected}; refusing to start",
            plugin.sha256()
        );
    }
    tracing::info!(plugin = plugin.name(), sha256 = plugin.sha256(), allocator = ?runtime.allocator(), "plugin ready");
    tracing::info!(
        max_active = gate_config.max_active, max_waiting = gate_config.max_waiting,
        wait_deadline = ?gate_config.wait_deadline, "gate ready"
    );
    let admin = AdminPolicy {
        token: args.admin_token.clone(),
        protect_state: false,
    };
    let allocator = runtime.allocator();
    let index = Arc::new(index);
    let swap = HotSwap::new(
        Arc::new(PluginSlot::new(plugin, source)),
        Arc::new(runtime),
        Arc::clone(&index),
        plugin_config,
        MAX_IDLE_CONNECTIONS,
    );
    Ok(AppState::new(
        Arc::new(swap),
        index,
        allocator,
        Gate::new(gate_config),
        admin,
    ))
}

/// The listener: the inherited socket `--fd`, or a fresh bind of `--listen`.
pub fn listener(args: &ServeArgs) -> anyhow::Result<TcpListener> {
    let std_listener = match args.fd {
        Some(fd) => adopt_listener(fd)?,
        None => std::net::TcpListener::bind(args.listen)
            .with_context(|| format!("--listen {}: cannot bind", args.listen))?,
    };
    std_listener.set_nonblocking(true)?;
    Ok(TcpListener::from_std(std_listener)?)
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

/// Serves `state` on `listener` until `shutdown` resolves, then drains: stops accepting, lets
/// in-flight requests finish, and waits for every lease to be released — including leases of
/// workers whose client is gone — for at most `drain`. Past it, returns an error naming what
/// was still running.
pub async fn run(
    mut state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain: Duration,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        // Reachable beyond this machine: the gate's state is for operators only.
        let mut admin = (*state.admin).clone();
        admin.protect_state = true;
        state.admin = Arc::new(admin);
    }
    let gate = state.gate.clone();
    let signal = Arc::new(Notify::new());
    let signalled = Arc::new(AtomicBool::new(false));
    let serve = axum::serve(
        listener,
        app(state).into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown({
        let (signal, signalled) = (Arc::clone(&signal), Arc::clone(&signalled));
        async move {
            shutdown.await;
            signalled.store(true, Ordering::SeqCst);
            signal.notify_one();
        }
    })
    .into_future();
    tokio::pin!(serve);
    tracing::info!(%addr, "turnstile ready: listening on http://{addr}");
    // `serve` may finish on its own right after the signal (no open connections): that is a
    // drained server, not an unexpected stop.
    let connections_closed = tokio::select! {
        result = &mut serve => {
            result?;
            anyhow::ensure!(signalled.load(Ordering::SeqCst), "the server stopped without a shutdown signal");
            true
        }
        () = signal.notified() => false,
    };
    let deadline = tokio::time::Instant::now() + drain;
    tracing::info!(
        drain_ms = drain.as_millis() as u64,
        "draining: no new connections; letting in-flight work finish"
    );
    if !connections_closed {
        match tokio::time::timeout_at(deadline, &mut serve).await {
            Ok(result) => result?,
            Err(_) => anyhow::bail!("drain timeout: connections still open after {drain:?}"),
        }
    }
    // A worker whose client left keeps its lease until its plugin call returns: wait for it.
    loop {
        let snapshot = gate.snapshot();
        if snapshot.active == 0 {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!(
                "drain timeout: {} plugin calls still running after {drain:?}",
                snapshot.active
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tracing::info!("shutdown complete");
    Ok(())
}

/// Runs `turnstile serve` until SIGTERM or SIGINT: loads (index build, plugin compile) before
/// the async runtime starts serving, reloads the plugin on SIGHUP, drains on the way out.
pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let state = load(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let drain = Duration::from_millis(args.drain_ms);
    let result = runtime.block_on(async {
        let listener = listener(&args)?;
        reload_on_sighup(Arc::clone(&state.swap), args.plugin_sha256.clone());
        run(state, listener, shutdown_signal(), drain).await
    });
    // After a drain timeout a plugin call may still be running on a blocking thread: do not
    // wait for it on the way out (dropping the runtime would).
    runtime.shutdown_timeout(Duration::from_millis(100));
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
fn reload_on_sighup(swap: Arc<HotSwap>, pinned_sha256: Option<Sha256Hex>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot listen for SIGHUP; reload with POST /admin/plugin instead");
        return;
    };
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            let source = swap.slot().current().source;
            tracing::info!(?source, "SIGHUP received; reloading the plugin");
            let (swap, pinned) = (Arc::clone(&swap), pinned_sha256.clone());
            let outcome = tokio::task::spawn_blocking(move || {
                swap.swap(source, pinned.as_ref(), None)
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
