//! Serving until told to stop, then draining: no new connections, in-flight requests finish, and
//! every lease comes back (a worker whose client left keeps its lease until its call returns).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::edge;
use crate::http::{AppState, app};

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
        // No --allowed-host: beyond loopback, any name (the listener's own are not known).
        if *state.hosts == crate::http::AllowedHosts::Loopback {
            state.hosts = Arc::new(crate::http::AllowedHosts::Any);
        }
        if state.admin.token.is_none() {
            tracing::warn!(%addr, "listening beyond loopback without --admin-token: /admin/* and /state answer loopback clients only, and behind a local reverse proxy every client looks local; set a token");
        }
    }
    let gate = state.admission.gate().clone();
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
    if let Some(global) = state.admission.global() {
        global.start()?;
    }
    let global = state.admission.global().cloned();
    let live = Arc::clone(&state.live);
    let live_task = {
        let state = state.clone();
        tokio::spawn(
            Arc::clone(&live).run(state.admission.gate().clone(), move |last| {
                crate::http::live::snapshot(&state, last)
            }),
        )
    };
    tracing::info!(
        %addr,
        "turnstile ready: listening on http://{addr} (the live page: http://{addr}/dashboard)"
    );
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
