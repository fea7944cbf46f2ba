//! Where a call's answer goes as it is made: a channel from the call (on its worker thread) to
//! whoever streams it to the client (the server's response body). The channel is unbounded but
//! what goes through it is not: at most [`super::MAX_ANSWER_BYTES`] of deltas (empty ones are
//! not sent) and [`super::MAX_CITES`] lists of at most `limit` sources, so a client that reads
//! slowly never blocks the call — nor costs more than that.

use tokio::sync::mpsc;

use crate::bindings::Source;

pub use crate::bindings::turnstile::retrieval::answer::{FinishReason, Usage};

/// What a streaming client is told as the call goes.
#[derive(Debug, Clone)]
pub enum AnswerEvent {
    /// The sources the answer is built on, checked as a call's result is (before the first
    /// token, when the plugin tells them early).
    Cited(Vec<Source>),
    /// The next piece of the answer (never empty).
    Delta(String),
}

/// The call's end of an answer stream.
#[derive(Debug, Clone)]
pub struct AnswerSink(mpsc::UnboundedSender<AnswerEvent>);

impl AnswerSink {
    /// Sends `event`; false if no one reads the stream any more.
    pub(crate) fn send(&self, event: AnswerEvent) -> bool {
        self.0.send(event).is_ok()
    }

    /// Whether the reading end is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// The reading end of an answer stream: each event as the call makes it, then `None` once the
/// call has ended (and dropped its sink).
#[derive(Debug)]
pub struct AnswerEvents(mpsc::UnboundedReceiver<AnswerEvent>);

impl AnswerEvents {
    /// The next event, or `None` when the call has ended.
    pub async fn next(&mut self) -> Option<AnswerEvent> {
        self.0.recv().await
    }

    /// The next event if one is waiting now.
    pub fn try_next(&mut self) -> Option<AnswerEvent> {
        self.0.try_recv().ok()
    }
}

/// A new answer stream: the sink goes into the call, the events to the client's response.
pub fn answer_stream() -> (AnswerSink, AnswerEvents) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (AnswerSink(sender), AnswerEvents(receiver))
}
