//! `turnstile serve`: corpus → index → plugin → HTTP app → listener, with graceful shutdown on
//! SIGTERM/SIGINT and a plugin reload on SIGHUP.

mod args;
mod edge;
mod layers;

pub use args::{LogFormat, ServeArgs, ServeConfigError};
pub use edge::{ConnectionSocket, EdgeLimits};
pub use layers::{ResolveError, env_name, resolve, resolve_file};

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::cache::Cache;
use crate::corpus::{CorpusIndex, CorpusPool, read_corpus};
use crate::gate::Gate;
use crate::http::{AdminPolicy, AppState, Policies, app};
use crate::metrics::Metrics;
use crate::plugin::{Plugin, PluginRuntime, PluginSlot, RuntimeOptions};
use crate::swap::{HotSwap, Runtimes, Trigger};

/// Idle read-only connections kept for reuse.
pub const MAX_IDLE_CONNECTIONS: usize = 16;

/// Loads everything `serve` needs: this is startup work, never done on a request path.
pub fn load(args: &ServeArgs) -> anyhow::Result<AppState> {
    let plugin_config = args.plugin_config()?;
    let gate_config = args.gate_config()?;
    let metrics = Arc::new(Metrics::new());
    let cache = Cache::open(args.cache_dir.as_deref()).context("creating a cache directory")?;
    let precompiled = cache.plugins_dir().filter(|_| !args.no_precompiled_cache);
    let corpus = read_corpus(args.corpus.as_deref())?;
    let index = CorpusIndex::open_or_build(&corpus, &cache.index_dir())?;
    let pool = CorpusPool::new(&index, MAX_IDLE_CONNECTIONS)?;
    tracing::info!(
        source = %index.source, documents = index.documents, sha256 = %index.sha256,
        origin = ?index.origin, path = %index.path.display(),
        embedding_model = pool.model_name(), dimensions = pool.dims(), "corpus index ready"
    );
    let runtime = PluginRuntime::new(RuntimeOptions {
        memory_limit: args.memory_limit_mib as usize * 1024 * 1024,
        // The gate bounds concurrent plugin calls, and so live instances (a swap's smoke checks
        // run on the conformance runtime below).
        max_instances: gate_config.max_active as u32,
        cache_dir: precompiled.clone(),
        pooling: true,
        call_deadline: None,
        host_metrics: Some(metrics.host_calls()),
    })?;
    // Where a swap candidate's smoke checks run: not the serving engine (no epoch
    // interruption there), but one whose calls have a deadline.
    let conformance = PluginRuntime::new(RuntimeOptions {
        memory_limit: args.memory_limit_mib as usize * 1024 * 1024,
        max_instances: 1,
        cache_dir: precompiled,
        pooling: false,
        call_deadline: Some(crate::check::CALL_DEADLINE),
        host_metrics: None,
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
        Runtimes {
            serving: Arc::new(runtime),
            conformance: Arc::new(conformance),
        },
        plugin_config,
        MAX_IDLE_CONNECTIONS,
        args.plugin_sha256.clone(),
        Arc::clone(&metrics),
    );
    let swap = Arc::new(swap);
    let gate = Gate::new(gate_config);
    let global = match args.global_config()? {
        Some(config) => {
            tracing::info!(key = %config.key, max_active = config.max_active, max_waiting = config.max_waiting, lease_ttl = ?config.lease_ttl, failure = ?config.failure, "global limit on Redis");
            Some(turnstile_global::GlobalGate::new(config)?)
        }
        None => None,
    };
    let mut state = AppState::new(
        swap,
        index,
        allocator,
        gate,
        Policies {
            admin,
            edge: args.edge_limits(),
            health: args.health_policy(),
            access_log: args.access_log,
            live: args.live_config(),
        },
        Arc::new(cache),
        metrics,
    );
    state.global = global;
    Ok(state)
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
/// workers whose client is gone — for at most `drain`. Past it, returns [`DrainTimeout`] naming
/// what was still running.
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
        if state.admin.token.is_none() {
            tracing::warn!(%addr, "listening beyond loopback without --admin-token: /admin/* and /state answer loopback clients only, and behind a local reverse proxy every client looks local; set a token");
        }
    }
    let gate = state.gate.clone();
    let limits = state.edge;
    let upkeep = {
        let metrics = Arc::clone(&state.metrics);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(crate::metrics::UPKEEP_INTERVAL);
            loop {
                every.tick().await;
                metrics.upkeep();
            }
        })
    };
    if let Some(global) = &state.global {
        global.start()?;
    }
    let global = state.global.clone();
    let live = Arc::clone(&state.live);
    let live_task = {
        let state = state.clone();
        tokio::spawn(Arc::clone(&live).run(state.gate.clone(), move |last| {
            crate::http::live::snapshot(&state, last)
        }))
    };
    tracing::info!(%addr, "turnstile ready: listening on http://{addr}");
    let open = Arc::clone(&state.connections);
    let draining = edge::accept(listener, app(state), limits, open, shutdown).await;
    upkeep.abort();
    // Open streams never end by themselves: end them, or they would hold the drain.
    live.close();
    let _ = live_task.await;
    let deadline = tokio::time::Instant::now() + drain;
    tracing::info!(
        drain_ms = drain.as_millis() as u64,
        connections = draining.open(),
        "draining: no new connections; letting in-flight work finish"
    );
    let connections_closed = tokio::time::timeout_at(deadline, draining.closed())
        .await
        .is_ok();
    // A worker whose client left keeps its lease until its plugin call returns: wait for it.
    loop {
        let snapshot = gate.snapshot();
        if snapshot.active == 0 && connections_closed {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            let stuck: Vec<String> = snapshot
                .leases
                .iter()
                .map(|l| {
                    format!(
                        "ticket {} held {} ms{}",
                        l.ticket,
                        l.held_ms,
                        if l.client_gone { " (client gone)" } else { "" }
                    )
                })
                .collect();
            tracing::error!(
                drain_ms = drain.as_millis() as u64,
                running = snapshot.active,
                connections_closed,
                stuck = ?stuck,
                "drain timeout: plugin calls still running; they cannot be interrupted, so the process must exit"
            );
            return Err(DrainTimeout {
                drain,
                running: snapshot.active,
                connections_closed,
            }
            .into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if let Some(global) = global {
        global.stop();
    }
    tracing::info!("shutdown complete");
    Ok(())
}

/// The drain ran out with work still in progress.
#[derive(Debug, thiserror::Error)]
#[error(
    "drain timeout: {running} plugin calls still running after {drain:?} (connections closed: {connections_closed})"
)]
pub struct DrainTimeout {
    /// The drain bound.
    pub drain: Duration,
    /// Plugin calls still running.
    pub running: usize,
    /// Whether every connection had closed.
    pub connections_closed: bool,
}

/// Runs `turnstile serve` until SIGTERM or SIGINT: loads (index build, plugin compile) before
/// the async runtime starts serving, reloads the plugin on SIGHUP, drains on the way out.
pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
    raise_open_files_limit();
    let state = load(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Every admitted call runs on a blocking thread: the pool always has room for
        // `max_active` of them, plus the few other blocking jobs (swaps, reloads).
        .max_blocking_threads(state.gate.config().max_active + EXTRA_BLOCKING_THREADS)
        .build()?;
    let drain = Duration::from_millis(args.drain_ms);
    let result = runtime.block_on(async {
        let listener = listener(&args)?;
        reload_on_sighup(Arc::clone(&state.swap));
        run(state, listener, shutdown_signal(), drain).await
    });
    if let Err(error) = &result
        && error.is::<DrainTimeout>()
    {
        // A plugin call still runs on a blocking thread and nothing can stop it (no epoch, no
        // fuel: by design). Exit now, without tearing the runtime down under it.
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

/// SIGHUP reloads the configured plugin (re-read, re-checked, swapped only if it passes).
fn reload_on_sighup(swap: Arc<HotSwap>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot listen for SIGHUP; reload with POST /admin/plugin instead");
        return;
    };
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            let source = swap.slot().current().source;
            tracing::info!(?source, "SIGHUP received; reloading the plugin");
            let swap = Arc::clone(&swap);
            let outcome = tokio::task::spawn_blocking(move || {
                swap.swap(source, Trigger::Reload, None)
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
