//! `GET /events`: a Server-Sent Events stream of gate events and periodic snapshots, each
//! subscriber following the hub's broadcast ring (see [`super::hub`] for the bounds).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast::error::RecvError;
use turnstile_gate::{Gate, MAX_EVENTS};

use super::hub::{Frame, MAX_LIVE_FLOWS, MAX_LIVE_LEASES, Seat, events_json, now_ms};
use crate::edge::ConnectionSocket;
use crate::http::api::{
    InvalidCode, InvalidRequestBody, LiveSnapshot, PluginBody, TooManySubscribersBody,
};
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// The kernel send buffer of an `/events` connection: with [`super::hub::FRAMES_BUFFERED`] frames, what
/// a subscriber that stops reading can hold before it is dropped.
pub const STREAM_SEND_BUFFER: usize = 64 * 1024;

/// A stream that has sent nothing for this long sends a comment line (`:`), so that a proxy
/// between it and its reader does not take it for dead. The server itself never cuts a stream
/// that its reader reads: the idle timeout applies between requests, not to a response.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(15);

/// How long a browser waits before reconnecting a dropped stream, in milliseconds.
const RECONNECT_MS: u64 = 1_000;

/// The snapshot the stream sends, built from the server's state.
pub fn snapshot(state: &AppState, last_event: u64) -> LiveSnapshot {
    let gate = state.admission.gate().snapshot();
    let mut leases = gate.leases;
    leases.truncate(MAX_LIVE_LEASES);
    let mut flows = gate.flows;
    flows.truncate(MAX_LIVE_FLOWS);
    LiveSnapshot {
        at_ms: now_ms(),
        last_event,
        active: gate.active,
        waiting: gate.waiting,
        max_active: gate.max_active,
        max_waiting: gate.max_waiting,
        wait_seconds: gate.wait_seconds,
        totals: gate.totals,
        client_gone: gate.client_gone,
        leases,
        stuck_after_ms: state.health.stuck_after.as_millis() as u64,
        plugin: PluginBody::of(&state.plugins.current()),
        subscribers: state.live.body().subscribers,
        streams_open: state.metrics.streams_open(),
        flows,
    }
}

/// `GET /events`: gate events (`event: events`, data `{"missed": n, "events": [...]}`) and a
/// snapshot (`event: snapshot`) every `--events-interval-ms`. Each message's `id` is the order of
/// the newest gate event it covers; reconnecting with `Last-Event-ID` resumes after it when the
/// gate still retains those events (`missed` counts the ones it no longer has). A first
/// connection gets the last 128 events and a snapshot at once.
#[utoipa::path(
    get,
    path = "/events",
    tag = "operations",
    params(("Last-Event-ID" = Option<u64>, Header, description = "Resume after this gate event order")),
    responses(
        (status = 200, description = "A Server-Sent Events stream (docs/DASHBOARD.md)", body = String, content_type = "text/event-stream"),
        (status = 400, description = "`invalid_last_event_id`", body = InvalidRequestBody),
        (status = 503, description = "`too_many_subscribers`: --max-subscribers streams are open", body = TooManySubscribersBody),
    )
)]
pub async fn events(
    State(state): State<AppState>,
    socket: Option<Extension<ConnectionSocket>>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let resume = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::invalid(
                        InvalidCode::InvalidLastEventId,
                        "Last-Event-ID must be the decimal id of an event this stream sent",
                    )
                })?,
        ),
    };
    let socket = socket.map(|Extension(socket)| socket);
    if let Some(socket) = &socket {
        socket.limit_send_buffer(STREAM_SEND_BUFFER);
    }
    let Some((seat, frames, closing)) = state.live.subscribe(socket) else {
        return Err(ApiError::TooManySubscribers {
            max: state.live.config().max_subscribers,
        });
    };
    let backlog = backlog(state.admission.gate(), resume);
    let seen = backlog.last_event;
    let first = vec![
        backlog.events,
        Some(
            snapshot_event(&snapshot(&state, seen))
                .retry(std::time::Duration::from_millis(RECONNECT_MS)),
        ),
    ];
    let stream = Subscriber {
        seat,
        frames,
        closing,
        seen,
        gate: state.admission.gate().clone(),
    }
    .into_stream(first.into_iter().flatten());
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(HEARTBEAT)))
}

/// What a new stream sends first.
struct Backlog {
    events: Option<SseEvent>,
    last_event: u64,
}

fn backlog(gate: &Gate, resume: Option<u64>) -> Backlog {
    let newest = gate.last_event_order();
    // No id, or one above the newest (from an earlier run of the server): start afresh, with
    // the last events the page shows.
    let (start, fresh) = match resume {
        Some(id) if id <= newest => (id, false),
        _ => (newest.saturating_sub(MAX_EVENTS as u64), true),
    };
    let mut after = gate.events_after(start);
    if fresh {
        after.missed = 0;
    }
    let last_event = after.events.last().map_or(start, |e| e.order);
    let events = (!after.events.is_empty() || after.missed > 0)
        .then(|| events_message(last_event, events_json(after.missed, &after.events)));
    Backlog { events, last_event }
}

/// An `events` message whose newest event is `last`.
fn events_message(last: u64, data: String) -> SseEvent {
    SseEvent::default()
        .event("events")
        .id(last.to_string())
        .data(data)
}

fn snapshot_event(snapshot: &LiveSnapshot) -> SseEvent {
    SseEvent::default()
        .event("snapshot")
        .id(snapshot.last_event.to_string())
        .data(serde_json::to_string(snapshot).expect("snapshot serialises"))
}

/// One open stream.
struct Subscriber {
    seat: Seat,
    frames: tokio::sync::broadcast::Receiver<Arc<Frame>>,
    closing: tokio::sync::watch::Receiver<bool>,
    /// The newest gate event this subscriber was sent.
    seen: u64,
    /// Where it catches up from when it falls behind the ring.
    gate: Gate,
}

impl Subscriber {
    fn into_stream(
        self,
        first: impl Iterator<Item = SseEvent> + Send + 'static,
    ) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static {
        let first = futures_util::stream::iter(first.map(Ok));
        let rest = futures_util::stream::unfold(self, |mut me| async move {
            let event = me.next().await?;
            Some((Ok(event), me))
        });
        futures_util::StreamExt::chain(first, rest)
    }

    /// The next message, or `None` when the stream ends (shutdown, or it fell behind).
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            let frame = tokio::select! {
                received = self.frames.recv() => received,
                _ = self.closing.wait_for(|closed| *closed) => return None,
            };
            let frame = match frame {
                Ok(frame) => {
                    self.seat.took_frame(0);
                    frame
                }
                Err(RecvError::Lagged(skipped)) => {
                    // Too slow for the ring: skip ahead, with the events it can still get from
                    // the gate's log (and how many it missed).
                    self.seat.took_frame(skipped);
                    let after = self.gate.events_after(self.seen);
                    if let Some(last) = after.events.last().map(|e| e.order) {
                        self.seen = last;
                        return Some(events_message(
                            last,
                            events_json(after.missed, &after.events),
                        ));
                    }
                    continue;
                }
                Err(RecvError::Closed) => return None,
            };
            if let Some(event) = self.message(&frame) {
                return Some(event);
            }
        }
    }

    /// The message of a frame for this subscriber: events it was already sent (in its backlog)
    /// are left out.
    fn message(&mut self, frame: &Frame) -> Option<SseEvent> {
        match frame {
            Frame::Events {
                first,
                last,
                events,
                missed,
                json,
            } => {
                if *last <= self.seen {
                    return None;
                }
                let data = if *first <= self.seen {
                    let skip = (self.seen + 1 - first) as usize;
                    events_json(0, &events[skip..])
                } else {
                    // Anything between what it saw and this frame was missed.
                    let gap = first - self.seen - 1;
                    if gap == *missed {
                        json.clone()
                    } else {
                        events_json(gap, events)
                    }
                };
                self.seen = *last;
                Some(events_message(*last, data))
            }
            Frame::Snapshot { last, json } => Some(
                SseEvent::default()
                    .event("snapshot")
                    .id(last.max(&self.seen).to_string())
                    .data(json.as_str()),
            ),
        }
    }
}
