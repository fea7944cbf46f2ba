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

/// A point of the deployment's history in Redis (`lua/grace.lua`): its epoch, moved on by each
/// grace, then the writes counted. Redis' history only moves on, so a later point seen than
/// Redis holds is a loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Point {
    pub(crate) epoch: u64,
    pub(crate) writes: u64,
}

impl Point {
    /// The point a script answered (its two last numbers; 0 where absent).
    pub(crate) fn answered(epoch: Option<i64>, writes: Option<i64>) -> Self {
        let number = |n: Option<i64>| n.unwrap_or(0).max(0) as u64;
        Self {
            epoch: number(epoch),
            writes: number(writes),
        }
    }
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
    /// The latest point of the history this replica saw, passed to every script (nothing seen:
    /// 0, 0, which no Redis is behind).
    pub(crate) seen: Mutex<Point>,
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

    /// The latest point of the history this replica saw.
    pub(crate) fn seen(&self) -> Point {
        *lock(&self.seen)
    }

    /// What a script answered of the grace: counts and logs a grace this call opened (`opened`,
    /// why: `lua/grace.lua`), and keeps the history's point if it is the latest seen (answers
    /// may arrive out of order).
    pub(crate) fn answered(&self, opened: Option<i64>, point: Point) {
        {
            let mut seen = lock(&self.seen);
            *seen = (*seen).max(point);
        }
        let why = match opened {
            Some(1) => {
                "Redis has none of this deployment's data (restarted empty, flushed, or first \
                 start)"
            }
            Some(2) => {
                "Redis is another server than the one that held this deployment's data (restarted \
                 from a snapshot that may be older than the last leases, or failed over)"
            }
            Some(3) => {
                "Redis went back to older data (this replica saw a later point of its history): \
                 the last leases may be gone"
            }
            _ => return,
        };
        self.stats.graces.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            grace_ms = self.config.lease_ttl.as_millis() as u64,
            "global gate: {why}: no new lease until every replica has asserted its running calls' \
             leases again"
        );
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
