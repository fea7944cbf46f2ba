//! The global gate of one replica: ask for a lease (FIFO across replicas, before a deadline),
//! read its status and counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::breaker::Breaker;
#[cfg(doc)]
use crate::config::BREAKER_FAILURES;
use crate::config::{CALL_TIMEOUT, FailureMode, GlobalConfig, RECHECK_INTERVAL};
use crate::error::GlobalError;
use crate::heartbeat::{heartbeat, wake_ups};
use crate::inner::{Inner, Point, Started, lock};
use crate::keys::Keys;
use crate::lease::{GlobalLease, Queued};
use crate::outcome::{GlobalPass, GlobalRefusal};
use crate::scripts::Scripts;
use crate::status::{GlobalStatus, GlobalTotals, Stats};

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

impl GlobalGate {
    /// A gate over `config`. Nothing connects until [`GlobalGate::start`].
    pub fn new(config: GlobalConfig) -> Result<Self, GlobalError> {
        let client = redis::Client::open(config.url.as_str())?;
        let keys = Keys::new(&config.key);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(Self {
            inner: Arc::new(Inner {
                replica: format!("{}-{}", std::process::id(), nanos),
                config,
                client,
                keys,
                scripts: Scripts::new(),
                next_id: AtomicU64::new(1),
                started: OnceLock::new(),
                held: Mutex::default(),
                waiting: Mutex::default(),
                wakers: Mutex::default(),
                breaker: Breaker::default(),
                stats: Stats::default(),
                last_error: Mutex::default(),
                seen: Mutex::default(),
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
    /// Redis fails and the mode is `open`, [`GlobalPass::FailedOpen`]. In the grace after Redis
    /// lost writes, it waits in the queue like any request past the limit.
    ///
    /// Cancel safe: dropping the future while it waits takes it out of the global queue.
    pub async fn acquire(&self, deadline: Instant) -> Result<GlobalPass, GlobalRefusal> {
        let inner = &self.inner;
        let Some(started) = inner.started.get() else {
            return failed(inner, "the global gate was not started");
        };
        let number = inner.next_id.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}:{number}", inner.replica);
        let since = Instant::now();
        // Its own wake-up signal, in this replica's line of waiters (by its place in the global
        // queue) from its first queued answer until this call ends.
        let mut waker = Waiter::new(inner, number);
        let signal = Arc::clone(&waker.signal);
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
                return failed(inner, "circuit open: Redis failed repeatedly");
            }
            // A release published while the call runs is not missed: the signal is kept.
            let woken = signal.notified();
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
                .key(&k.marker)
                .key(&k.server)
                .key(&k.history)
                .arg(&id)
                .arg(c.max_active)
                .arg(c.max_waiting)
                .arg(c.lease_ttl.as_millis() as u64);
            let seen = inner.seen();
            invocation.arg(seen.epoch).arg(seen.writes);
            let sent = Instant::now();
            let answer = inner
                .call::<Vec<i64>>(started, &invocation, "acquire")
                .await
                .map(|a| {
                    let point = Point::answered(a.get(4).copied(), a.get(5).copied());
                    inner.answered(a.get(3).copied(), point);
                    (a.first().copied(), a.get(2).copied())
                });
            match answer {
                // An answer later than its own timeout reached a replica that was stalled
                // (stopped, starved) after Redis granted it: the lease may have expired meanwhile
                // and gone to another. It is not relied on: asked again under the same id, Redis
                // renews it if it still holds it, else queues or grants it as any request.
                Some((Some(1), _)) if sent.elapsed() > CALL_TIMEOUT => {
                    if Instant::now() >= deadline {
                        queued.leave();
                        inner.stats.wait_timeout.fetch_add(1, Ordering::Relaxed);
                        return Err(GlobalRefusal::WaitTimeout);
                    }
                    continue;
                }
                Some((Some(1), _)) => {
                    queued.disarm();
                    drop(waker);
                    lock(&inner.held).insert(id.clone());
                    inner.stats.granted.fetch_add(1, Ordering::Relaxed);
                    inner
                        .stats
                        .waited_us
                        .fetch_add(since.elapsed().as_micros() as u64, Ordering::Relaxed);
                    return Ok(GlobalPass::Lease(GlobalLease {
                        inner: Arc::clone(inner),
                        id,
                    }));
                }
                Some((Some(-1), _)) => {
                    queued.disarm();
                    inner.stats.queue_full.fetch_add(1, Ordering::Relaxed);
                    return Err(GlobalRefusal::QueueFull);
                }
                Some((_, ticket)) => waker.queued(ticket.unwrap_or(0).max(0) as u64),
                // One failed call is no evidence that Redis is gone (a stall, a reconnect): ask
                // again at once. Only when the breaker opens ([`BREAKER_FAILURES`] failures in a
                // row, across this replica's calls) does the failure mode decide, at the top of
                // the loop; the deadline still bounds the wait.
                None => {
                    if Instant::now() >= deadline {
                        queued.leave();
                        inner.stats.wait_timeout.fetch_add(1, Ordering::Relaxed);
                        return Err(GlobalRefusal::WaitTimeout);
                    }
                    continue;
                }
            }
            // Only this replica's oldest waiter re-checks on its own (a lost message, a dead
            // replica's waiter expiring at the head): the others wait for their turn.
            let oldest =
                waker.key.is_some() && lock(&inner.wakers).keys().next() == waker.key.as_ref();
            tokio::select! {
                () = &mut woken => {}
                () = tokio::time::sleep(RECHECK_INTERVAL), if oldest => {}
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
        let (mut holders, mut waiting, mut grace_ms) = (None, None, None);
        if let Some(started) = inner.started.get()
            && !inner.breaker.is_open()
        {
            let mut conn = started.conn.clone();
            let mut invocation = inner.scripts.status.prepare_invoke();
            invocation
                .key(&inner.keys.holders)
                .key(&inner.keys.queue)
                .key(&inner.keys.queue_exp)
                .key(&inner.keys.marker)
                .key(&inner.keys.server)
                .key(&inner.keys.history)
                .arg(inner.config.lease_ttl.as_millis() as u64);
            let seen = inner.seen();
            invocation.arg(seen.epoch).arg(seen.writes);
            let call = invocation.invoke_async::<(u64, u64, u64, i64, i64, i64)>(&mut conn);
            if let Ok(Ok((h, w, g, opened, epoch, writes))) =
                tokio::time::timeout(CALL_TIMEOUT, call).await
            {
                inner.answered(Some(opened), Point::answered(Some(epoch), Some(writes)));
                (holders, waiting, grace_ms) = (Some(h), Some(w), Some(g));
            }
        }
        GlobalStatus {
            key: inner.config.key.clone(),
            max_active: inner.config.max_active,
            max_waiting: inner.config.max_waiting,
            failure: inner.config.failure,
            holders,
            waiting,
            grace_ms,
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
            graces: load(&s.graces),
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

/// Redis could not decide: admit alone or refuse, as configured.
fn failed(inner: &Inner, why: &str) -> Result<GlobalPass, GlobalRefusal> {
    match inner.config.failure {
        FailureMode::Open => {
            inner.stats.failed_open.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                why,
                "global gate unavailable: admitted on the local gate alone"
            );
            Ok(GlobalPass::FailedOpen)
        }
        FailureMode::Closed => {
            inner.stats.unavailable.fetch_add(1, Ordering::Relaxed);
            Err(GlobalRefusal::Unavailable)
        }
    }
}

/// A waiter's place in this replica's line, ordered as the global queue orders it (its ticket,
/// then its number): its wake-up signal, registered from its first queued answer while it
/// waits, gone when the acquire ends (granted, refused or dropped).
struct Waiter<'a> {
    inner: &'a Inner,
    number: u64,
    key: Option<(u64, u64)>,
    signal: Arc<Notify>,
}

impl<'a> Waiter<'a> {
    fn new(inner: &'a Inner, number: u64) -> Self {
        Self {
            inner,
            number,
            key: None,
            signal: Arc::new(Notify::new()),
        }
    }

    /// Redis queued it with `ticket` (a new one if Redis lost the queue and it joined again).
    fn queued(&mut self, ticket: u64) {
        let key = (ticket, self.number);
        if self.key != Some(key) {
            let mut wakers = lock(&self.inner.wakers);
            if let Some(old) = self.key.take() {
                wakers.remove(&old);
            }
            wakers.insert(key, Arc::clone(&self.signal));
            self.key = Some(key);
        }
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            lock(&self.inner.wakers).remove(&key);
        }
        // The next waiter asks in its turn: a lease may be free (this one was granted and
        // several were released at once, or it left with a wake-up it did not use). One
        // command more per waiter that ends, whatever the length of the queue.
        self.inner.wake_oldest();
    }
}
