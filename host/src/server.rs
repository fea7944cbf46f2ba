//! Wiring: corpus → index → plugin → HTTP app → listener, with graceful shutdown.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::config::ServeArgs;
use crate::corpus::{CorpusIndex, CorpusPool, read_corpus};
use crate::gate::Gate;
use crate::http::{AppState, app};
use crate::plugin::{Plugin, PluginRuntime, RuntimeOptions};

/// Idle read-only connections kept for reuse.
const MAX_IDLE_CONNECTIONS: usize = 16;

/// Loads everything `serve` needs: this is startup work, never done on a request path.
pub fn load(args: &ServeArgs) -> anyhow::Result<AppState> {
    let plugin_config = args.plugin_config().map_err(anyhow::Error::msg)?;
    let gate_config = args.gate_config().map_err(anyhow::Error::msg)?;
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
        // The gate bounds concurrent plugin calls, and so live instances.
        max_instances: gate_config.max_active as u32,
        cache_dir: (!args.no_precompiled_cache).then(|| cache_dir.join("plugins")),
        pooling: true,
    })?;
    let plugin = Plugin::load(&runtime, &args.plugin_source(), plugin_config, pool)
        .context("loading the plugin")?;
    tracing::info!(plugin = plugin.name(), sha256 = plugin.sha256(), allocator = ?runtime.allocator(), "plugin ready");
    tracing::info!(
        max_active = gate_config.max_active, max_waiting = gate_config.max_waiting,
        wait_deadline = ?gate_config.wait_deadline, "gate ready"
    );
    Ok(AppState::new(
        Arc::new(plugin),
        Arc::new(index),
        runtime.allocator(),
        Gate::new(gate_config),
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

/// Serves `state` on `listener` until `shutdown` resolves, then drains in-flight requests.
pub async fn run(
    state: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "turnstile ready: listening on http://{addr}");
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown)
        .await?;
    tracing::info!("shutdown complete");
    Ok(())
}
