//! The hub behind `/events`: while anyone watches, it reads the gate's new events and a
//! snapshot every `interval`, serialises each once, and broadcasts it to every subscriber.
//!
//! Bounds: at most `max_subscribers` streams at once (more get 503 `too_many_subscribers`); one
//! broadcast ring of [`FRAMES_BUFFERED`] frames shared by all of them (a frame holds at most
//! [`turnstile_gate::RETAINED_EVENTS`] events or one snapshot with at most [`MAX_LIVE_LEASES`]
//! leases); each stream's kernel send buffer capped (`super::STREAM_SEND_BUFFER`). A stream that
//! falls behind the ring (a slow reader, a busy machine) skips to the newest frames and is told
//! how many events it missed. A subscriber that stops reading altogether — [`FRAMES_BUFFERED`]
//! frames behind and no progress for [`STALL_TIMEOUT`] — is dropped and its connection closed,
//! so it can neither slow the gate, nor grow memory, nor keep its seat. With nobody watching,
//! the hub only notes the newest event's order once per interval.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{broadcast, watch};
use turnstile_gate::{Event, EventsAfter, Gate};

use crate::edge::ConnectionSocket;
use crate::http::api::{EventsBody, LiveBody, LiveSnapshot};

/// Frames the ring keeps: a stream further behind skips ahead (and is told what it missed).
pub const FRAMES_BUFFERED: usize = 32;

/// A stream [`FRAMES_BUFFERED`] frames behind that has taken no frame for this long has stopped
/// reading: it is dropped.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Leases a snapshot lists (the oldest: a stuck call is among them); `active` counts them all.
pub const MAX_LIVE_LEASES: usize = 64;

/// Flows a snapshot shows at most (the busiest), with flows on.
pub const MAX_LIVE_FLOWS: usize = 32;

/// How the live view is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveConfig {
    /// Streams open at once.
    pub max_subscribers: usize,
    /// How often new events and a snapshot are sent.
    pub interval: Duration,
}

/// One message of the stream, serialised once for every subscriber.
#[derive(Debug)]
pub enum Frame {
    /// Gate events `first..=last` (consecutive orders), as the JSON of an [`EventsBody`].
    Events {
        /// The order of the first event.
        first: u64,
        /// The order of the last event.
        last: u64,
        /// The events (a subscriber that has seen some of them gets the rest).
        events: Vec<Event>,
        /// Events before `first` the hub no longer found retained.
        missed: u64,
        /// `{"missed": …, "events": […]}`.
        json: String,
    },
    /// A [`LiveSnapshot`] taken when the newest event was `last`.
    Snapshot {
        /// The order of the newest event then.
        last: u64,
        /// The snapshot's JSON.
        json: String,
    },
}

impl Frame {
    pub(super) fn events(after: &EventsAfter) -> Option<Self> {
        let (first, last) = (after.events.first()?.order, after.events.last()?.order);
        Some(Self::Events {
            first,
            last,
            missed: after.missed,
            json: events_json(after.missed, &after.events),
            events: after.events.clone(),
        })
    }
}

pub(super) fn events_json(missed: u64, events: &[Event]) -> String {
    serde_json::to_string(&EventsBody { missed, events }).expect("events serialise")
}

/// The hub. One per server.
pub struct Hub {
    config: LiveConfig,
    frames: broadcast::Sender<Arc<Frame>>,
    /// Frames broadcast so far.
    sent: AtomicU64,
    /// The hub's clock for stream progress.
    started: std::time::Instant,
    /// Every open stream's progress, for the hub to drop the ones that stopped reading; its
    /// length is the number of streams open (capped by `max_subscribers`). A dropped stream
    /// leaves it at once, under the same lock as `dropped` counts it, so `/state` never shows a
    /// stream both dropped and open.
    seats: std::sync::Mutex<Vec<Arc<SeatState>>>,
    dropped: AtomicU64,
    closing: watch::Sender<bool>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("config", &self.config)
            .field("body", &self.body())
            .finish_non_exhaustive()
    }
}

/// One stream's progress.
struct SeatState {
    /// `Hub::sent` when it subscribed.
    start: u64,
    /// Frames it has taken from the ring since.
    taken: AtomicU64,
    /// When it last took a frame (or subscribed), in milliseconds since the hub started.
    progress_ms: AtomicU64,
    /// Dropped already (counted once).
    dropped: std::sync::atomic::AtomicBool,
    /// Its connection, to close when it is dropped.
    socket: Option<ConnectionSocket>,
}

/// A subscriber's place: counted while it lives, or until the hub drops its stream.
pub struct Seat {
    hub: Arc<Hub>,
    state: Arc<SeatState>,
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut seats = self.hub.seats.lock().unwrap_or_else(|p| p.into_inner());
        seats.retain(|s| !Arc::ptr_eq(s, &self.state));
    }
}

impl Seat {
    /// The stream took a frame from the ring (or skipped `skipped` frames it was too late for).
    pub fn took_frame(&self, skipped: u64) {
        self.state.taken.fetch_add(1 + skipped, Ordering::Relaxed);
        self.state
            .progress_ms
            .store(self.hub.now_ms(), Ordering::Relaxed);
    }
}

impl SeatState {
    fn drop_once(&self, hub: &Hub) {
        if !self.dropped.swap(true, Ordering::AcqRel) {
            hub.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("an /events subscriber fell behind: dropped");
            if let Some(socket) = &self.socket {
                socket.close();
            }
        }
    }
}

impl Hub {
    /// A hub with these bounds.
    pub fn new(config: LiveConfig) -> Self {
        Self {
            config,
            frames: broadcast::Sender::new(FRAMES_BUFFERED),
            sent: AtomicU64::new(0),
            seats: std::sync::Mutex::new(Vec::new()),
            started: std::time::Instant::now(),
            dropped: AtomicU64::new(0),
            closing: watch::Sender::new(false),
        }
    }

    /// Its bounds.
    pub fn config(&self) -> LiveConfig {
        self.config
    }

    /// A seat and the frames from now on, or `None` when `max_subscribers` are open. `socket` is
    /// the stream's connection, closed if the stream stops reading.
    pub fn subscribe(
        self: &Arc<Self>,
        socket: Option<ConnectionSocket>,
    ) -> Option<(Seat, broadcast::Receiver<Arc<Frame>>, watch::Receiver<bool>)> {
        let mut seats = self.seats.lock().unwrap_or_else(|p| p.into_inner());
        if seats.len() >= self.config.max_subscribers {
            return None;
        }
        // Under the seats' lock, so that `sent` and the receiver's first frame agree (the hub
        // takes the same lock to send). Subscribe before the caller reads its backlog from the
        // gate: no event falls between.
        let frames = self.frames.subscribe();
        let state = Arc::new(SeatState {
            start: self.sent.load(Ordering::Acquire),
            taken: AtomicU64::new(0),
            progress_ms: AtomicU64::new(self.now_ms()),
            dropped: std::sync::atomic::AtomicBool::new(false),
            socket,
        });
        seats.push(Arc::clone(&state));
        drop(seats);
        let seat = Seat {
            hub: Arc::clone(self),
            state,
        };
        Some((seat, frames, self.closing.subscribe()))
    }

    /// Sends a frame to every stream.
    fn send(&self, frame: Frame) {
        let _seats = self.seats.lock().unwrap_or_else(|p| p.into_inner());
        // An error only means every receiver left since the count was read.
        if self.frames.send(Arc::new(frame)).is_ok() {
            self.sent.fetch_add(1, Ordering::AcqRel);
        }
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Drops the streams whose readers stopped reading: [`FRAMES_BUFFERED`] frames behind and
    /// no progress for [`STALL_TIMEOUT`] (their socket is full, so their stream is not even
    /// polled to notice by itself).
    fn drop_stalled(&self) {
        let sent = self.sent.load(Ordering::Acquire);
        let now = self.now_ms();
        let mut seats = self.seats.lock().unwrap_or_else(|p| p.into_inner());
        seats.retain(|seat| {
            let behind = (sent - seat.start).saturating_sub(seat.taken.load(Ordering::Relaxed));
            let idle = now.saturating_sub(seat.progress_ms.load(Ordering::Relaxed));
            let stalled =
                behind >= FRAMES_BUFFERED as u64 && idle >= STALL_TIMEOUT.as_millis() as u64;
            if stalled {
                seat.drop_once(self);
            }
            !stalled
        });
    }

    /// Counts for `/state`.
    pub fn body(&self) -> LiveBody {
        // Both read under the seats' lock, which a drop holds while it counts and removes.
        let seats = self.seats.lock().unwrap_or_else(|p| p.into_inner());
        LiveBody {
            subscribers: seats.len(),
            max_subscribers: self.config.max_subscribers,
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }

    /// Ends every stream (the server is shutting down: open streams would hold the drain).
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Broadcasts new events and a snapshot every interval while anyone watches, until
    /// [`Hub::close`].
    pub async fn run(self: Arc<Self>, gate: Gate, snapshot: impl Fn(u64) -> LiveSnapshot) {
        let mut closing = self.closing.subscribe();
        let mut every = tokio::time::interval(self.config.interval);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut last = gate.last_event_order();
        loop {
            tokio::select! {
                _ = every.tick() => {}
                _ = closing.wait_for(|closed| *closed) => return,
            }
            if self.frames.receiver_count() == 0 {
                last = gate.last_event_order();
                continue;
            }
            self.drop_stalled();
            let after = gate.events_after(last);
            if let Some(frame) = Frame::events(&after) {
                last = after.events.last().map_or(last, |e| e.order);
                self.send(frame);
            }
            let json = serde_json::to_string(&snapshot(last)).expect("snapshot serialises");
            self.send(Frame::Snapshot { last, json });
        }
    }
}

/// Milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
