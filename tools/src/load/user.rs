//! The closed loop. Users are started at `--spawn-rate` (user `i` at `i / rate` seconds); each
//! POSTs the body, reads the whole response, records it, and at once sends the next, until the
//! run stops. A request in flight when the run stops is awaited (the client timeout bounds it)
//! and recorded like any other.
//!
//! With `--chat`, each request is a chat request whose question carries a tag unique in the run;
//! a streamed answer is read as it arrives (its first content delta timed), and each request's
//! timings are appended to `requests.jsonl` as it completes (written through a buffer: nothing
//! is kept in memory per request).

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::Url;
use reqwest::header::CONTENT_TYPE;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::chat;
use super::stats::{Outcome, Stats};

/// File name of the per-request timings of a `--chat` run, inside the output directory.
pub const REQUESTS_FILE: &str = "requests.jsonl";

/// What every chat request asks.
pub(crate) struct ChatRun {
    /// The model asked for.
    pub model: String,
    /// `"stream": true`, read as events.
    pub stream: bool,
    /// The question; each request adds its tag.
    pub question: String,
    /// The tags' prefix: `PREFIX-N`, N counting from 1.
    pub tag_prefix: String,
    next: AtomicU64,
    /// `requests.jsonl`, one line per completed request.
    log: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl ChatRun {
    /// Chat requests for `model`, their timings written to `log`.
    pub fn new(
        model: String,
        stream: bool,
        question: String,
        tag_prefix: String,
        log: std::fs::File,
    ) -> Self {
        Self {
            model,
            stream,
            question,
            tag_prefix,
            next: AtomicU64::new(1),
            log: Mutex::new(std::io::BufWriter::new(log)),
        }
    }

    fn next_tag(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.tag_prefix)
    }

    /// Writes what is buffered of `requests.jsonl`.
    pub fn flush(&self) -> std::io::Result<()> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush()
    }
}

/// One chat request as its client saw it.
struct ChatDone {
    outcome: Outcome,
    tag: String,
    first_delta: Option<Instant>,
    deltas: u32,
}

/// What every user shares.
pub(crate) struct Shared {
    pub client: reqwest::Client,
    pub url: Url,
    /// Sent in turn: request n sends `bodies[n % len]`.
    pub bodies: Arc<[bytes::Bytes]>,
    next_body: std::sync::atomic::AtomicUsize,
    /// Time zero of the run.
    pub start: Instant,
    /// Time zero as wall-clock time, seconds since the Unix epoch (read with `start`).
    pub start_unix_s: f64,
    /// `--chat`: what each request asks.
    pub chat: Option<ChatRun>,
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
        chat: Option<ChatRun>,
    ) -> Result<Self, hdrhistogram::CreationError> {
        let start = Instant::now();
        let start_unix_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Ok(Self {
            client,
            url,
            bodies,
            next_body: std::sync::atomic::AtomicUsize::new(0),
            start,
            start_unix_s,
            chat,
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

    /// `at` as wall-clock time, seconds since the Unix epoch.
    pub fn unix_s(&self, at: Instant) -> f64 {
        self.start_unix_s + at.saturating_duration_since(self.start).as_secs_f64()
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
        let Some(chat) = &shared.chat else {
            let outcome = request(&shared).await;
            let done = Instant::now();
            shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            shared
                .stats()
                .record(done - shared.start, done - sent, outcome);
            continue;
        };
        let asked = chat_request(&shared, chat).await;
        let done = Instant::now();
        shared.in_flight.fetch_sub(1, Ordering::AcqRel);
        let ttft = asked.first_delta.map(|f| f.saturating_duration_since(sent));
        {
            let mut stats = shared.stats();
            stats.record(done - shared.start, done - sent, asked.outcome);
            if let Some(ttft) = ttft {
                stats.record_first_delta(done - shared.start, ttft);
            }
        }
        log_request(&shared, chat, &asked, sent, done, ttft);
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

/// One chat request: a streamed answer read event by event, a whole one read to its end.
async fn chat_request(shared: &Shared, chat: &ChatRun) -> ChatDone {
    let tag = chat.next_tag();
    let body = chat::request_body(&chat.model, &chat.question, &tag, chat.stream);
    let sent = shared
        .client
        .post(shared.url.clone())
        .header(CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await;
    let mut done = ChatDone {
        outcome: Outcome::Http(0),
        tag,
        first_delta: None,
        deltas: 0,
    };
    match sent {
        Ok(mut response) => {
            let status = response.status().as_u16();
            let events = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream"));
            if chat.stream && events {
                let read = chat::read_stream(status, &mut response).await;
                done.outcome = read.outcome;
                done.first_delta = read.first_delta;
                done.deltas = read.deltas;
            } else {
                done.outcome = match response.bytes().await {
                    Ok(_) => Outcome::Http(status),
                    Err(e) => Outcome::from_error(&e),
                };
            }
        }
        Err(e) => done.outcome = Outcome::from_error(&e),
    }
    done
}

/// Appends one line to `requests.jsonl`: the tag, the outcome, when the request was sent, when its
/// first content delta arrived and when it ended (Unix seconds, the clock a backend on the same
/// machine stamps its own records with), TTFT and total in milliseconds, the content events.
fn log_request(
    shared: &Shared,
    chat: &ChatRun,
    asked: &ChatDone,
    sent: Instant,
    done: Instant,
    ttft: Option<Duration>,
) {
    let line = serde_json::json!({
        "tag": asked.tag,
        "status": asked.outcome.key(),
        "sent": shared.unix_s(sent),
        "first_delta": asked.first_delta.map(|f| shared.unix_s(f)),
        "done": shared.unix_s(done),
        "ttft_ms": ttft.map(|t| t.as_secs_f64() * 1e3),
        "total_ms": (done - sent).as_secs_f64() * 1e3,
        "deltas": asked.deltas,
    });
    let mut log = chat.log.lock().unwrap_or_else(PoisonError::into_inner);
    if let Err(e) = writeln!(log, "{line}") {
        tracing::warn!(error = %e, "cannot write {REQUESTS_FILE}");
    }
}
