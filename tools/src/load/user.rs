//! The closed loop. Users are started at `--spawn-rate` (user `i` at `i / rate` seconds); each
//! POSTs the body, reads the whole response, records it, and at once sends the next, until the
//! run stops. A request in flight when the run stops is awaited (the client timeout bounds it)
//! and recorded like any other.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use reqwest::Url;
use reqwest::header::CONTENT_TYPE;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::stats::{Outcome, Stats};

/// What every user shares.
pub(crate) struct Shared {
    pub client: reqwest::Client,
    pub url: Url,
    /// Sent in turn: request n sends `bodies[n % len]`.
    pub bodies: Arc<[bytes::Bytes]>,
    next_body: std::sync::atomic::AtomicUsize,
    /// Time zero of the run.
    pub start: Instant,
    /// When users stop sending (unless stopped earlier).
    pub deadline: Instant,
    stopping: AtomicBool,
    /// Users whose loop is running.
    pub running: AtomicU32,
    /// Users started so far.
    pub started: AtomicU32,
    /// Requests sent and not yet recorded.
    pub in_flight: AtomicU32,
    stats: Mutex<Stats>,
}

impl Shared {
    /// A run starting now.
    pub fn new(
        client: reqwest::Client,
        url: Url,
        bodies: Arc<[bytes::Bytes]>,
        duration: Duration,
    ) -> Result<Self, hdrhistogram::CreationError> {
        let start = Instant::now();
        Ok(Self {
            client,
            url,
            bodies,
            next_body: std::sync::atomic::AtomicUsize::new(0),
            start,
            deadline: start + duration,
            stopping: AtomicBool::new(false),
            running: AtomicU32::new(0),
            started: AtomicU32::new(0),
            in_flight: AtomicU32::new(0),
            stats: Mutex::new(Stats::new()?),
        })
    }

    /// The next body in turn.
    fn next_body(&self) -> bytes::Bytes {
        let n = self.next_body.fetch_add(1, Ordering::Relaxed);
        self.bodies[n % self.bodies.len()].clone()
    }

    /// No new request may be sent.
    pub fn stopped(&self) -> bool {
        self.stopping.load(Ordering::Acquire) || Instant::now() >= self.deadline
    }

    /// Stops users from sending new requests.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// Time since the start.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// The measurements (never held across an await).
    pub fn stats(&self) -> MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts `users` users at `rate` per second, then waits for every one of them to finish.
/// Starting stops early when the run stops; `stop` is the wake-up for a long gap between starts.
pub(crate) async fn drive(
    shared: Arc<Shared>,
    users: u32,
    rate: f64,
    mut stop: watch::Receiver<bool>,
) {
    let mut set = JoinSet::new();
    for i in 0..users {
        let at = shared.start + Duration::from_secs_f64(f64::from(i) / rate);
        if at >= shared.deadline {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(at.into()) => {}
            _ = stop.wait_for(|stopped| *stopped) => break,
        }
        if shared.stopped() {
            break;
        }
        let running = shared.running.fetch_add(1, Ordering::AcqRel) + 1;
        shared.started.fetch_add(1, Ordering::AcqRel);
        {
            let now = shared.now();
            let mut stats = shared.stats();
            stats.note_users(now, running);
            if i + 1 == users {
                stats.all_running(now);
            }
        }
        set.spawn(user(Arc::clone(&shared)));
    }
    while let Some(joined) = set.join_next().await {
        if let Err(e) = joined
            && e.is_panic()
        {
            tracing::error!(error = %e, "a load user panicked");
        }
    }
}

/// One user's closed loop.
async fn user(shared: Arc<Shared>) {
    while !shared.stopped() {
        shared.in_flight.fetch_add(1, Ordering::AcqRel);
        let sent = Instant::now();
        let outcome = request(&shared).await;
        let done = Instant::now();
        shared.in_flight.fetch_sub(1, Ordering::AcqRel);
        shared
            .stats()
            .record(done - shared.start, done - sent, outcome);
    }
    shared.running.fetch_sub(1, Ordering::AcqRel);
}

/// One POST, read to the end.
async fn request(shared: &Shared) -> Outcome {
    let sent = shared
        .client
        .post(shared.url.clone())
        .header(CONTENT_TYPE, "application/json")
        .body(shared.next_body())
        .send()
        .await;
    match sent {
        Ok(response) => {
            let status = response.status().as_u16();
            match response.bytes().await {
                Ok(_) => Outcome::Http(status),
                Err(e) => Outcome::from_error(&e),
            }
        }
        Err(e) => Outcome::from_error(&e),
    }
}
