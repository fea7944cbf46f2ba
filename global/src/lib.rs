//! A global admission limit shared by many replicas, on Redis: at most `max_active` leases out
//! across every replica that shares a key, other requests waiting in one FIFO queue (ticket
//! order across replicas), each lease renewed by its replica's heartbeat and gone within its TTL
//! when the replica dies.
//!
//! Every acquire, release and renewal is one Lua script (`src/lua/`), run atomically by Redis,
//! with times from Redis' `TIME`, never a replica's clock. Waiters are woken by pub/sub when a
//! lease is released, and re-check their place at least every [`RECHECK_INTERVAL`]. Each call
//! has [`CALL_TIMEOUT`]; failures feed a circuit breaker; when Redis fails the request is admitted
//! on the local gate alone ([`FailureMode::Open`], counted) or refused ([`FailureMode::Closed`]):
//! never does a request hang on Redis.
//!
//! The promise of the local gate holds here too: a [`GlobalLease`] is given back only when it is
//! dropped — by the worker, once the plugin call has really returned.

mod breaker;
mod config;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures_util::StreamExt;
use redis::Script;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde::Serialize;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use breaker::Breaker;
pub use config::{
    BREAKER_FAILURES, BREAKER_OPEN_FOR, CALL_TIMEOUT, FailureMode, GlobalConfig, RECHECK_INTERVAL,
};

/// Why the global gate refused a request. The request never ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GlobalRefusal {
    /// The global queue is full (HTTP 429 `queue_full`).
    #[error("queue_full: the global wait queue is full")]
    QueueFull,
    /// The request's deadline passed while it waited for a global lease (HTTP 503
    /// `wait_timeout`).
    #[error("wait_timeout: no global lease within the wait deadline")]
    WaitTimeout,
    /// Redis failed and `--global-failure closed` (HTTP 503 `global_unavailable`).
    #[error("global_unavailable: the global limit cannot be reached")]
    Unavailable,
}

/// A global admission.
#[derive(Debug)]
pub enum Admission {
    /// A lease: the request runs under it.
    Granted(GlobalLease),
    /// Redis failed and the failure mode is `open`: the request runs on the local gate alone.
    FailedOpen,
}

/// Invalid settings.
#[derive(Debug, thiserror::Error)]
pub enum GlobalError {
    /// The Redis URL does not parse.
    #[error("--redis-url: {0}")]
    Url(#[from] redis::RedisError),
}

/// Counts over this replica's life.
#[derive(Debug, Default)]
struct Stats {
    granted: AtomicU64,
    queue_full: AtomicU64,
    wait_timeout: AtomicU64,
    unavailable: AtomicU64,
    failed_open: AtomicU64,
    renewals: AtomicU64,
    reasserted: AtomicU64,
    failures: AtomicU64,
    waited_us: AtomicU64,
}

/// The counts [`GlobalGate::status`] reports.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GlobalTotals {
    /// Global leases this replica was granted.
    pub granted: u64,
    /// Refused: the global queue was full.
    pub queue_full: u64,
    /// Refused: the deadline passed while waiting for a global lease.
    pub wait_timeout: u64,
    /// Refused because Redis failed (`closed`).
    pub unavailable: u64,
    /// Admitted on the local gate alone because Redis failed (`open`).
    pub failed_open: u64,
    /// Lease renewals by the heartbeat.
    pub renewals: u64,
    /// Renewals that found their lease gone (expired) and asserted it again.
    pub reasserted: u64,
    /// Redis calls that failed or timed out.
    pub failures: u64,
    /// Total time spent waiting for global leases, in microseconds.
    pub waited_us: u64,
}

/// The global gate as `/state` shows it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GlobalStatus {
    /// The shared key.
    pub key: String,
    /// The global limit.
    pub max_active: u32,
    /// The global queue bound.
    pub max_waiting: u32,
    /// What happens when Redis fails.
    pub failure: FailureMode,
    /// Leases out across every replica (absent when Redis could not be asked).
    pub holders: Option<u64>,
    /// Requests waiting across every replica (absent when Redis could not be asked).
    pub waiting: Option<u64>,
    /// Of the leases, this replica's.
    pub this_replica: usize,
    /// Of the waiting requests, this replica's.
    pub this_replica_waiting: usize,
    /// Calls skip Redis now (too many failures in a row).
    pub circuit_open: bool,
    /// The last Redis failure, if any.
    pub last_error: Option<String>,
    /// Counts over this replica's life.
    pub totals: GlobalTotals,
}

struct Keys {
    holders: String,
    queue: String,
    queue_exp: String,
    seq: String,
    channel: String,
}

struct Scripts {
    acquire: Script,
    release: Script,
    heartbeat: Script,
    status: Script,
}

struct Started {
    conn: ConnectionManager,
    runtime: tokio::runtime::Handle,
    tasks: Vec<JoinHandle<()>>,
}

struct Inner {
    config: GlobalConfig,
    client: redis::Client,
    keys: Keys,
    scripts: Scripts,
    /// This replica's name in lease ids: unique per process run.
    replica: String,
    next_id: AtomicU64,
    started: OnceLock<Started>,
    held: Mutex<HashSet<String>>,
    waiting: Mutex<HashSet<String>>,
    wake: Notify,
    breaker: Breaker,
    stats: Stats,
    last_error: Mutex<Option<String>>,
}

/// The global gate of one replica. Cloning shares it.
#[derive(Clone)]
pub struct GlobalGate {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for GlobalGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlobalGate")
            .field("key", &self.inner.config.key)
            .field("replica", &self.inner.replica)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl GlobalGate {
    /// A gate over `config`. Nothing connects until [`GlobalGate::start`].
    pub fn new(config: GlobalConfig) -> Result<Self, GlobalError> {
        let client = redis::Client::open(config.url.as_str())?;
        let tag = format!("turnstile:{{{}}}", config.key);
        let keys = Keys {
            holders: format!("{tag}:holders"),
            queue: format!("{tag}:queue"),
            queue_exp: format!("{tag}:queue_exp"),
            seq: format!("{tag}:seq"),
            channel: format!("{tag}:released"),
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(Self {
            inner: Arc::new(Inner {
                replica: format!("{}-{}", std::process::id(), nanos),
                config,
                client,
                keys,
                scripts: Scripts {
                    acquire: Script::new(include_str!("lua/acquire.lua")),
                    release: Script::new(include_str!("lua/release.lua")),
                    heartbeat: Script::new(include_str!("lua/heartbeat.lua")),
                    status: Script::new(include_str!("lua/status.lua")),
                },
                next_id: AtomicU64::new(1),
                started: OnceLock::new(),
                held: Mutex::default(),
                waiting: Mutex::default(),
                wake: Notify::new(),
                breaker: Breaker::default(),
                stats: Stats::default(),
                last_error: Mutex::default(),
            }),
        })
    }

    /// Its settings.
    pub fn config(&self) -> &GlobalConfig {
        &self.inner.config
    }

    /// Connects (lazily: a Redis that is down now is retried by each call) and starts the
    /// heartbeat and the wake-up subscription. Call once, inside the Tokio runtime.
    pub fn start(&self) -> Result<(), GlobalError> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CALL_TIMEOUT))
            .set_response_timeout(Some(CALL_TIMEOUT))
            .set_number_of_retries(1);
        let conn = ConnectionManager::new_lazy_with_config(self.inner.client.clone(), config)?;
        let tasks = vec![
            tokio::spawn(heartbeat(Arc::clone(&self.inner))),
            tokio::spawn(wake_ups(Arc::clone(&self.inner))),
        ];
        let _ = self.inner.started.set(Started {
            conn,
            runtime: tokio::runtime::Handle::current(),
            tasks,
        });
        Ok(())
    }

    /// Stops the background tasks (the server is shutting down).
    pub fn stop(&self) {
        if let Some(started) = self.inner.started.get() {
            for task in &started.tasks {
                task.abort();
            }
        }
    }

    /// A global lease before `deadline`, in FIFO order across replicas; or a refusal; or, when
    /// Redis fails and the mode is `open`, [`Admission::FailedOpen`].
    ///
    /// Cancel safe: dropping the future while it waits takes it out of the global queue.
    pub async fn acquire(&self, deadline: Instant) -> Result<Admission, GlobalRefusal> {
        let inner = &self.inner;
        let Some(started) = inner.started.get() else {
            return inner.failed("the global gate was not started");
        };
        let id = format!(
            "{}:{}",
            inner.replica,
            inner.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let since = Instant::now();
        // Armed from the first call: if this future is dropped while a call is in flight, the
        // id is released (whether Redis queued it, granted it, or never saw it).
        let mut queued = Queued {
            inner: Arc::clone(inner),
            id: id.clone(),
            armed: false,
        };
        queued.arm();
        loop {
            if inner.breaker.is_open() {
                queued.leave();
                return inner.failed("circuit open: Redis failed repeatedly");
            }
            // Registered before the call: a release published while it runs is not missed.
            let woken = inner.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let k = &inner.keys;
            let c = &inner.config;
            let mut invocation = inner.scripts.acquire.prepare_invoke();
            invocation
                .key(&k.holders)
                .key(&k.queue)
                .key(&k.queue_exp)
                .key(&k.seq)
                .arg(&id)
                .arg(c.max_active)
                .arg(c.max_waiting)
                .arg(c.lease_ttl.as_millis() as u64);
            match inner
                .call::<(i64, i64)>(started, &invocation, "acquire")
                .await
            {
                Some((1, _)) => {
                    queued.disarm();
                    lock(&inner.held).insert(id.clone());
                    inner.stats.granted.fetch_add(1, Ordering::Relaxed);
                    inner
                        .stats
                        .waited_us
                        .fetch_add(since.elapsed().as_micros() as u64, Ordering::Relaxed);
                    return Ok(Admission::Granted(GlobalLease {
                        inner: Arc::clone(inner),
                        id,
                    }));
                }
                Some((-1, _)) => {
                    queued.disarm();
                    inner.stats.queue_full.fetch_add(1, Ordering::Relaxed);
                    return Err(GlobalRefusal::QueueFull);
                }
                Some(_) => {}
                None => {
                    queued.leave();
                    return inner.failed("Redis failed or timed out");
                }
            }
            tokio::select! {
                () = &mut woken => {}
                () = tokio::time::sleep(RECHECK_INTERVAL) => {}
                () = tokio::time::sleep_until(deadline) => {
                    queued.leave();
                    inner.stats.wait_timeout.fetch_add(1, Ordering::Relaxed);
                    return Err(GlobalRefusal::WaitTimeout);
                }
            }
        }
    }

    /// How the global gate stands now (asks Redis, within [`CALL_TIMEOUT`]).
    pub async fn status(&self) -> GlobalStatus {
        let inner = &self.inner;
        let (mut holders, mut waiting) = (None, None);
        if let Some(started) = inner.started.get()
            && !inner.breaker.is_open()
        {
            let mut conn = started.conn.clone();
            let mut invocation = inner.scripts.status.prepare_invoke();
            invocation
                .key(&inner.keys.holders)
                .key(&inner.keys.queue)
                .key(&inner.keys.queue_exp);
            let call = invocation.invoke_async::<(u64, u64)>(&mut conn);
            if let Ok(Ok((h, w))) = tokio::time::timeout(CALL_TIMEOUT, call).await {
                (holders, waiting) = (Some(h), Some(w));
            }
        }
        GlobalStatus {
            key: inner.config.key.clone(),
            max_active: inner.config.max_active,
            max_waiting: inner.config.max_waiting,
            failure: inner.config.failure,
            holders,
            waiting,
            this_replica: lock(&inner.held).len(),
            this_replica_waiting: lock(&inner.waiting).len(),
            circuit_open: inner.breaker.is_open(),
            last_error: lock(&inner.last_error).clone(),
            totals: self.totals(),
        }
    }

    /// This replica's counts (no Redis call).
    pub fn totals(&self) -> GlobalTotals {
        let s = &self.inner.stats;
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        GlobalTotals {
            granted: load(&s.granted),
            queue_full: load(&s.queue_full),
            wait_timeout: load(&s.wait_timeout),
            unavailable: load(&s.unavailable),
            failed_open: load(&s.failed_open),
            renewals: load(&s.renewals),
            reasserted: load(&s.reasserted),
            failures: load(&s.failures),
            waited_us: load(&s.waited_us),
        }
    }

    /// Global leases this replica holds now (no Redis call).
    pub fn leases_held(&self) -> usize {
        lock(&self.inner.held).len()
    }

    /// Whether calls skip Redis now.
    pub fn circuit_open(&self) -> bool {
        self.inner.breaker.is_open()
    }
}

impl Inner {
    fn redis_failed(&self, error: &str) {
        self.breaker.failure();
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        *lock(&self.last_error) = Some(error.to_owned());
        tracing::warn!(error, "global gate: Redis call failed");
    }

    /// Redis could not decide: admit alone or refuse, as configured.
    fn failed(&self, why: &str) -> Result<Admission, GlobalRefusal> {
        match self.config.failure {
            FailureMode::Open => {
                self.stats.failed_open.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    why,
                    "global gate unavailable: admitted on the local gate alone"
                );
                Ok(Admission::FailedOpen)
            }
            FailureMode::Closed => {
                self.stats.unavailable.fetch_add(1, Ordering::Relaxed);
                Err(GlobalRefusal::Unavailable)
            }
        }
    }

    /// Gives `id` back (a lease or a place in the queue), in the background, bounded.
    fn release(self: &Arc<Self>, id: String) {
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
    async fn call<T: redis::FromRedisValue>(
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

/// A place in the global queue, left (in the background) if the acquire ends without a lease.
struct Queued {
    inner: Arc<Inner>,
    id: String,
    armed: bool,
}

impl Queued {
    fn arm(&mut self) {
        if !self.armed {
            self.armed = true;
            lock(&self.inner.waiting).insert(self.id.clone());
        }
    }

    fn disarm(&mut self) {
        if self.armed {
            self.armed = false;
            lock(&self.inner.waiting).remove(&self.id);
        }
    }

    fn leave(&mut self) {
        if self.armed {
            self.disarm();
            self.inner.release(self.id.clone());
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.leave();
    }
}

/// A global lease: given back when dropped (the worker drops it when the plugin call has
/// returned), renewed by the heartbeat until then.
pub struct GlobalLease {
    inner: Arc<Inner>,
    id: String,
}

impl std::fmt::Debug for GlobalLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlobalLease").field("id", &self.id).finish()
    }
}

impl Drop for GlobalLease {
    fn drop(&mut self) {
        lock(&self.inner.held).remove(&self.id);
        self.inner.release(std::mem::take(&mut self.id));
    }
}

/// Renews this replica's leases and waiters every third of the TTL, in one script call.
async fn heartbeat(inner: Arc<Inner>) {
    let mut every = tokio::time::interval(inner.config.heartbeat());
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let held: Vec<String> = lock(&inner.held).iter().cloned().collect();
        let waiting: Vec<String> = lock(&inner.waiting).iter().cloned().collect();
        if held.is_empty() && waiting.is_empty() {
            continue;
        }
        let Some(started) = inner.started.get() else {
            continue;
        };
        let mut invocation = inner.scripts.heartbeat.prepare_invoke();
        invocation
            .key(&inner.keys.holders)
            .key(&inner.keys.queue_exp)
            .arg(inner.config.lease_ttl.as_millis() as u64)
            .arg(held.len());
        for id in held.iter().chain(&waiting) {
            invocation.arg(id);
        }
        if let Some((renewed, reasserted)) = inner
            .call::<(u64, u64)>(started, &invocation, "heartbeat")
            .await
        {
            inner.stats.renewals.fetch_add(renewed, Ordering::Relaxed);
            if reasserted > 0 {
                inner
                    .stats
                    .reasserted
                    .fetch_add(reasserted, Ordering::Relaxed);
                tracing::warn!(
                    reasserted,
                    "global gate: leases had expired while their calls ran; asserted again"
                );
            }
        }
    }
}

/// Wakes this replica's waiters when any replica releases a lease (pub/sub); reconnects after
/// a failure. Waiters also re-check on their own, so a lost message only delays them.
async fn wake_ups(inner: Arc<Inner>) {
    loop {
        if let Ok(Ok(mut pubsub)) =
            tokio::time::timeout(CALL_TIMEOUT, inner.client.get_async_pubsub()).await
            && let Ok(Ok(())) =
                tokio::time::timeout(CALL_TIMEOUT, pubsub.subscribe(&inner.keys.channel)).await
        {
            let mut messages = pubsub.on_message();
            while messages.next().await.is_some() {
                inner.wake.notify_waiters();
            }
        }
        tokio::time::sleep(BREAKER_OPEN_FOR).await;
    }
}
