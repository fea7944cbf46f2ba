//! A streamed chat answer: `text/event-stream` of `chat.completion.chunk`s, each sent as the
//! plugin makes it — the sources as soon as it tells them (before the first token when it cites
//! them early), each content delta as it is appended, never held to the end — then the finish
//! chunk, the usage chunk when asked, and `data: [DONE]`. An error after the stream began is one
//! `data: {"error": …}` event, then the stream ends.
//!
//! The headers wait for the call's first event: a call that fails before telling anything is
//! answered with its HTTP error, as a whole answer would be. From then on the stream's body owns
//! the client's guard: if the client goes away, the body is dropped, the call's client is marked
//! gone (its next `append` fails and its outbound requests are cancelled), and the lease is
//! given back when the plugin returns — never before. Its access line is written when it ends.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde::Serialize;
use turnstile_gate::ClientWatch;
use turnstile_host::capabilities::answer::{AnswerEvent, AnswerEvents};
use turnstile_host::{ClientGuard, Generation, Source};

use super::answer::{Completion, ROUTE, content_of, count_tokens, finish_reason, usage_of};
use super::error::ChatError;
use crate::http::access_log::LoggedAtEnd;
use crate::http::api::{
    AssistantRole, ChatChunkBody, ChatChunkObject, ChunkChoiceBody, DeltaBody, FinishReasonBody,
    SourceBody,
};
use crate::http::call::{self, Finished, millis, source_links};
use crate::http::state::AppState;
use crate::metrics::StreamOpen;

/// What a streamed answer starts from: an admitted call, running.
pub(super) struct StreamStart {
    pub state: AppState,
    pub generation: Generation,
    pub worker: tokio::task::JoinHandle<Finished>,
    pub events: AnswerEvents,
    pub client_guard: ClientGuard,
    pub lease_watch: ClientWatch,
    pub completion: Completion,
    pub include_usage: bool,
    pub arrived: Instant,
    pub queue_ms: f64,
}

/// Waits for the call's first event, then answers with the stream — or, when the call ended
/// before telling anything and failed, with its error.
pub(super) async fn respond_streaming(start: StreamStart) -> Result<Response, ChatError> {
    let StreamStart {
        state,
        generation,
        worker,
        mut events,
        client_guard,
        lease_watch,
        completion,
        include_usage,
        arrived,
        queue_ms,
    } = start;
    let first = events.next().await;
    let mut stream = Streaming {
        open: None,
        span: tracing::Span::current(),
        state,
        generation,
        worker: Some(worker),
        events: first.is_some().then_some(events),
        client_guard: Some(client_guard),
        lease_watch: Some(lease_watch),
        completion,
        include_usage,
        arrived,
        queue_ms,
        headers_at: Instant::now(),
        pending: VecDeque::new(),
        role_sent: false,
        sources_sent: None,
        streamed_text: false,
        first_token_ms: None,
        deltas: 0,
        ended: None,
        delta_frame: None,
        execution_ms: None,
        outbound_requests: 0,
    };
    match first {
        Some(event) => stream.tell(event).await,
        // The call ended without telling anything: settle it now, so that a failure is answered
        // with its status (the OpenAI SDKs raise by status, and retry 429 and 503).
        None => stream.finish_or_fail().await?,
    }
    stream.open = Some(stream.state.metrics.stream_opened());
    stream.headers_at = Instant::now();
    let body = futures_util::stream::unfold(stream, |mut stream| async move {
        stream
            .next_frame()
            .await
            .map(|frame| (Ok::<_, Infallible>(frame), stream))
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // A proxy in front (nginx) must pass each event on at once, not buffer the answer.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response.extensions_mut().insert(LoggedAtEnd);
    Ok(response)
}

/// How a stream ended, for its access line.
#[derive(Debug, Clone, Copy)]
enum Ended {
    /// `[DONE]` was sent.
    Done,
    /// An error event was sent (its code).
    Failed(&'static str),
}

/// One stream's state, owned by its response body: dropped when the body ends or when the
/// client goes away.
struct Streaming {
    /// Counted among the open streams while it lives.
    open: Option<StreamOpen>,
    span: tracing::Span,
    state: AppState,
    generation: Generation,
    worker: Option<tokio::task::JoinHandle<Finished>>,
    /// The call's events, until it has ended.
    events: Option<AnswerEvents>,
    client_guard: Option<ClientGuard>,
    lease_watch: Option<ClientWatch>,
    completion: Completion,
    include_usage: bool,
    arrived: Instant,
    queue_ms: f64,
    headers_at: Instant,
    /// Frames made and not yet sent.
    pending: VecDeque<Bytes>,
    role_sent: bool,
    /// The ids of the sources the client was told, once it was.
    sources_sent: Option<Vec<String>>,
    streamed_text: bool,
    first_token_ms: Option<f64>,
    deltas: u64,
    ended: Option<Ended>,
    /// The frame of a content chunk, but for its text (once the role has gone out).
    delta_frame: Option<DeltaFrame>,
    execution_ms: Option<f64>,
    outbound_requests: u32,
}

impl Streaming {
    /// The next frame to send, or `None` when the stream is over.
    async fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            if !self.pending.is_empty() {
                // What else the call has told already goes in the same write: events that
                // queue up (a client reading slower than the model writes) cost one frame, not
                // one each. Nothing waits for more.
                while self.pending.len() < MAX_EVENTS_A_FRAME
                    && let Some(event) = self.events.as_mut().and_then(AnswerEvents::try_next)
                {
                    self.tell(event).await;
                }
                return Some(self.take_pending());
            }
            if self.ended.is_some() {
                return None;
            }
            match self.events.as_mut() {
                Some(events) => match events.next().await {
                    Some(event) => self.tell(event).await,
                    None => self.events = None,
                },
                None => {
                    if let Err(mut error) = self.finish_or_fail().await {
                        self.ended = Some(Ended::Failed(error.code));
                        self.pending.push_back(event(&error.body()));
                    }
                }
            }
        }
    }

    /// Every pending frame, as one.
    fn take_pending(&mut self) -> Bytes {
        if self.pending.len() == 1 {
            return self.pending.pop_front().unwrap_or_default();
        }
        let mut joined = Vec::with_capacity(self.pending.iter().map(Bytes::len).sum());
        for frame in self.pending.drain(..) {
            joined.extend_from_slice(&frame);
        }
        Bytes::from(joined)
    }

    /// Makes the frames of one event of the call.
    async fn tell(&mut self, told: AnswerEvent) {
        match told {
            AnswerEvent::Cited(sources) => {
                let sources = self.with_links(sources).await;
                self.send_sources(sources);
            }
            AnswerEvent::Delta(text) => {
                if self.first_token_ms.is_none() {
                    let after = self.arrived.elapsed();
                    self.first_token_ms = Some(millis(after));
                    self.state.metrics.first_token(ROUTE, after);
                }
                self.deltas += 1;
                self.streamed_text = true;
                let frame = match &self.delta_frame {
                    Some(frame) => frame.with(&text),
                    None => {
                        let chunk = self.chunk(Some(text), None);
                        // Every later content chunk is this one but for its text: made once.
                        let template = self.chunk(Some(String::new()), None);
                        self.delta_frame = Some(DeltaFrame::new(&template));
                        event(&chunk)
                    }
                };
                self.pending.push_back(frame);
            }
        }
    }

    /// A chunk telling `sources` (with the role, if it is the first).
    fn send_sources(&mut self, sources: Vec<SourceBody>) {
        self.sources_sent = Some(sources.iter().map(|s| s.id().to_owned()).collect());
        let mut chunk = self.chunk(None, None);
        chunk.sources = Some(sources);
        self.pending.push_back(event(&chunk));
    }

    /// The sources with their links from the corpus (read off the async threads).
    async fn with_links(&self, sources: Vec<Source>) -> Vec<SourceBody> {
        let plugin = Arc::clone(&self.generation.plugin);
        let ids: Vec<Source> = sources.clone();
        let links = tokio::task::spawn_blocking(move || source_links(&plugin, &ids))
            .await
            .unwrap_or_else(|_| vec![None; sources.len()]);
        sources
            .into_iter()
            .zip(links)
            .map(|(source, link)| SourceBody::of(source, link))
            .collect()
    }

    /// Once the call has ended: its last frames (sources if they changed, content not yet sent,
    /// the finish chunk, the usage chunk, `[DONE]`), or its error.
    async fn finish_or_fail(&mut self) -> Result<(), ChatError> {
        let Some(worker) = self.worker.take() else {
            return Ok(());
        };
        let joined = worker.await;
        if let Some(watch) = self.lease_watch.take() {
            watch.disarm();
        }
        if let Ok(finished) = &joined {
            self.execution_ms = Some(finished.execution_ms);
            self.outbound_requests = finished.backend.requests;
        }
        let request_id = self.completion.request_id;
        let ran = call::settle(joined, &self.generation.plugin, request_id)?;
        count_tokens(&self.state.metrics, &ran.answer, &ran.backend);
        let ids: Vec<String> = ran.sources.iter().map(|s| s.id().to_owned()).collect();
        if self.sources_sent.as_ref() != Some(&ids) {
            self.send_sources(ran.sources.clone());
        }
        // What was not streamed: an answer only `set` (an older plugin), one `set` replaced, or —
        // with no answer at all — the sources, listed.
        let unsent = match &ran.answer.text {
            Some(_) if self.streamed_text && ran.answer.stream_whole => None,
            Some(text) if self.streamed_text => {
                tracing::debug!(
                    bytes = text.len(),
                    "the answer was replaced after parts of it were streamed"
                );
                None
            }
            _ => Some(content_of(&ran.answer, &ran.sources).0),
        };
        if let Some(text) = unsent.filter(|t| !t.is_empty()) {
            if self.first_token_ms.is_none() {
                let after = self.arrived.elapsed();
                self.first_token_ms = Some(millis(after));
                self.state.metrics.first_token(ROUTE, after);
            }
            self.deltas += 1;
            let chunk = self.chunk(Some(text), None);
            self.pending.push_back(event(&chunk));
        }
        let reason = match ran.answer.text {
            Some(_) => finish_reason(ran.answer.finish),
            None => FinishReasonBody::Stop,
        };
        let chunk = self.chunk(None, Some(reason));
        self.pending.push_back(event(&chunk));
        if self.include_usage {
            let mut chunk = self.chunk(None, None);
            chunk.choices.clear();
            chunk.usage = Some(usage_of(&ran.answer));
            self.pending.push_back(event(&chunk));
        }
        self.pending
            .push_back(Bytes::from_static(b"data: [DONE]\n\n"));
        self.ended = Some(Ended::Done);
        Ok(())
    }

    /// A chunk adding `content` (or nothing), ending with `finish` if given; the first carries
    /// the role.
    fn chunk(
        &mut self,
        content: Option<String>,
        finish: Option<FinishReasonBody>,
    ) -> ChatChunkBody {
        let role = (!self.role_sent).then_some(AssistantRole::Assistant);
        self.role_sent = true;
        let content = match (&role, content) {
            (_, Some(text)) => Some(text),
            // OpenAI's first chunk: the role, with empty content.
            (Some(_), None) => Some(String::new()),
            (None, None) => None,
        };
        ChatChunkBody {
            id: self.completion.id.clone(),
            object: ChatChunkObject::ChatCompletionChunk,
            created: self.completion.created,
            model: self.completion.model.clone(),
            choices: vec![ChunkChoiceBody {
                index: 0,
                delta: DeltaBody { role, content },
                finish_reason: finish,
            }],
            sources: None,
            usage: self.include_usage.then_some(None),
        }
    }
}

impl Drop for Streaming {
    /// The stream is over — sent to its end, or dropped because its client went away (the
    /// guard marks the call's client gone): its metrics and its access line.
    fn drop(&mut self) {
        let client_gone = self.ended.is_none() || !self.pending.is_empty();
        if let Some(guard) = self.client_guard.take() {
            if client_gone {
                drop(guard);
            } else {
                guard.disarm();
            }
        }
        if self.open.is_none() {
            // Never opened: the handler answered with an error (logged as any response is).
            return;
        }
        self.state
            .metrics
            .stream_ended(ROUTE, self.headers_at.elapsed());
        if !self.state.access_log {
            return;
        }
        let error = match self.ended {
            Some(Ended::Failed(code)) => Some(code),
            _ => None,
        };
        self.span.in_scope(|| {
            tracing::info!(
                target: "turnstile::access",
                route = ROUTE,
                status = 200u16,
                error,
                stream = true,
                client_gone,
                generation = self.generation.number,
                corpus_generation = self.generation.corpus.number,
                queue_ms = self.queue_ms,
                execution_ms = self.execution_ms,
                outbound_requests = Some(self.outbound_requests).filter(|n| *n > 0),
                first_token_ms = self.first_token_ms,
                deltas = self.deltas,
                total_ms = self.arrived.elapsed().as_secs_f64() * 1e3,
                "request completed"
            );
        });
    }
}

/// Events of the call joined into one write, at most.
const MAX_EVENTS_A_FRAME: usize = 64;

/// A content chunk's frame, cut where its text goes: every content delta after the first is
/// the same chunk but for the text, so only the text is serialized per token.
#[derive(Debug)]
struct DeltaFrame {
    before: Vec<u8>,
    after: Vec<u8>,
}

/// What a content chunk with empty text serializes to around its text.
const TEXT_MARK: &[u8] = br#""content":"""#;

impl DeltaFrame {
    /// The frame of `chunk` (a content chunk with empty text, no role), cut at its text.
    fn new(chunk: &ChatChunkBody) -> Self {
        let whole = event(chunk);
        // The text's two quotes are the mark's last two bytes.
        let at = whole
            .windows(TEXT_MARK.len())
            .position(|w| w == TEXT_MARK)
            .map_or(whole.len(), |i| i + TEXT_MARK.len() - 2);
        Self {
            before: whole[..at].to_vec(),
            after: whole[(at + 2).min(whole.len())..].to_vec(),
        }
    }

    /// The frame with `text`.
    fn with(&self, text: &str) -> Bytes {
        let mut frame = Vec::with_capacity(self.before.len() + text.len() + 8 + self.after.len());
        frame.extend_from_slice(&self.before);
        // A string serializes without failing.
        let _ = serde_json::to_writer(&mut frame, text);
        frame.extend_from_slice(&self.after);
        Bytes::from(frame)
    }
}

/// One server-sent event: `data: JSON`.
fn event(body: &impl Serialize) -> Bytes {
    let mut frame = b"data: ".to_vec();
    // Serializing our own bodies cannot fail (no map with non-string keys, no failing impl).
    let _ = serde_json::to_writer(&mut frame, body);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A content frame made from the cut template is the chunk serde would write.
    #[test]
    fn a_delta_frame_is_the_chunk_serialized() {
        for usage in [None, Some(None)] {
            let chunk = |content: &str| ChatChunkBody {
                id: "chatcmpl-1".into(),
                object: ChatChunkObject::ChatCompletionChunk,
                created: 7,
                model: "turnstile-rag".into(),
                choices: vec![ChunkChoiceBody {
                    index: 0,
                    delta: DeltaBody {
                        role: None,
                        content: Some(content.into()),
                    },
                    finish_reason: None,
                }],
                sources: None,
                usage,
            };
            let frame = DeltaFrame::new(&chunk(""));
            for text in ["json ", "", "a \"quoted\"\n line — é", "\u{0}"] {
                assert_eq!(frame.with(text), event(&chunk(text)), "{text:?}");
            }
        }
    }
}
