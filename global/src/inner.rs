//! The engine shared by a replica's gate, its leases and its background tasks: the Redis client
//! and connection, the scripts, what this replica holds and waits for, the breaker and the counts.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use redis::aio::ConnectionManager;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::breaker::Breaker;
use crate::config::{CALL_TIMEOUT, GlobalConfig};
use crate::keys::Keys;
use crate::scripts::Scripts;
use crate::status::Stats;

pub(crate) struct Started {
    pub(crate) conn: ConnectionManager,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) tasks: Vec<JoinHandle<()>>,
}

pub(crate) struct Inner {
    pub(crate) config: GlobalConfig,
    pub(crate) client: redis::Client,
    pub(crate) keys: Keys,
    pub(crate) scripts: Scripts,
    /// This replica's name in lease ids: unique per process run.
    pub(crate) replica: String,
    pub(crate) next_id: AtomicU64,
    pub(crate) started: OnceLock<Started>,
    pub(crate) held: Mutex<HashSet<String>>,
    pub(crate) waiting: Mutex<HashSet<String>>,
    /// This replica's queued waiters in the global queue's order (ticket, then number), each
    /// woken by its own signal.
    pub(crate) wakers: Mutex<BTreeMap<(u64, u64), Arc<Notify>>>,
    pub(crate) breaker: Breaker,
    pub(crate) stats: Stats,
    pub(crate) last_error: Mutex<Option<String>>,
}

/// A lock, even if a holder panicked (the data behind it stays whole).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    pub(crate) fn redis_failed(&self, error: &str) {
        self.breaker.failure();
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        *lock(&self.last_error) = Some(error.to_owned());
        tracing::warn!(error, "global gate: Redis call failed");
    }

    /// Counts and logs a grace this replica's call opened (`opened` is the script's flag): Redis
    /// was found without the deployment's data.
    pub(crate) fn grace_opened(&self, opened: Option<i64>) {
        if opened == Some(1) {
            self.stats.graces.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                grace_ms = self.config.lease_ttl.as_millis() as u64,
                "global gate: Redis has none of this deployment's data (restarted empty, flushed, \
                 or first start): no new lease until every replica has asserted its running \
                 calls' leases again"
            );
        }
    }

    /// Wakes this replica's oldest waiter (a lease was released somewhere): only the waiter that
    /// may now be at the head of the global queue asks Redis again, so the commands a release
    /// causes do not grow with the number of waiters. A signal sent while that waiter is between
    /// two checks is kept for its next wait.
    pub(crate) fn wake_oldest(&self) {
        if let Some(waker) = lock(&self.wakers).values().next() {
            waker.notify_one();
        }
    }

    /// Gives `id` back (a lease or a place in the queue), in the background, bounded.
    pub(crate) fn release(self: &Arc<Self>, id: String) {
        let Some(started) = self.started.get() else {
            return;
        };
        let inner = Arc::clone(self);
        started.runtime.spawn(async move {
            let k = &inner.keys;
            let mut invocation = inner.scripts.release.prepare_invoke();
            invocation
                .key(&k.holders)
                .key(&k.queue)
                .key(&k.queue_exp)
                .arg(&id)
                .arg(&k.channel);
            // A failed release is not retried: no longer renewed, it expires within the TTL.
            if let Some(started) = inner.started.get() {
                let _ = inner.call::<i64>(started, &invocation, "release").await;
            }
        });
    }

    /// Runs one script within [`CALL_TIMEOUT`], feeding the circuit breaker; a failure is
    /// recorded (and counted) and gives `None`.
    pub(crate) async fn call<T: redis::FromRedisValue>(
        &self,
        started: &Started,
        invocation: &redis::ScriptInvocation<'_>,
        what: &str,
    ) -> Option<T> {
        let mut conn = started.conn.clone();
        match tokio::time::timeout(CALL_TIMEOUT, invocation.invoke_async::<T>(&mut conn)).await {
            Ok(Ok(value)) => {
                self.breaker.success();
                Some(value)
            }
            Ok(Err(error)) => {
                self.redis_failed(&format!("{what}: {error}"));
                None
            }
            Err(_) => {
                self.redis_failed(&format!("{what}: no answer within 200 ms"));
                None
            }
        }
    }
}
