//! The `answer` room: the call's answer text, bounded at [`MAX_ANSWER_BYTES`] and kept only when
//! the call returns its sources; each part appended is sent on to a streaming client at once
//! (through the call's [`AnswerSink`]); sources told early are checked as a call's result is;
//! and how the answer ended, with the model's token counts.

use turnstile_corpus::CorpusPool;
use wasmtime::component::Linker;

use super::stream::{AnswerEvent, AnswerSink, FinishReason, Usage};
use crate::bindings::Source;
use crate::bindings::turnstile::retrieval::answer;
use crate::capabilities::capability::{Call, Capability, HasRoom, InRoom, Report, Room};
use crate::client_link::ClientLink;
use crate::error::PluginError;
use crate::provision::Provision;
use crate::source_checks::check_sources;

/// Longest answer, in bytes (`set`'s text, or all `append`s together).
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Most `cite` calls one call may make (each a list of at most `limit` sources).
pub const MAX_CITES: u32 = 8;

/// The call's answer.
pub struct AnswerCapability;

/// What the call's answer is so far.
pub struct AnswerState {
    /// The answer (`set`'s, or the appended parts).
    text: String,
    /// Whether `set` or `append` was called.
    touched: bool,
    /// Bytes of `text` a streaming client has been sent.
    streamed: usize,
    /// Where a streaming client's events go (none on `/retrieve`'s whole-answer route).
    sink: Option<AnswerSink>,
    /// The client's link: gone, and `append` fails.
    client: ClientLink,
    /// The call's `limit` (a cited list is checked against it) and the corpus its ids must be in.
    limit: u32,
    corpus: CorpusPool,
    cites: u32,
    cited: Option<Vec<Source>>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// Whether a part was refused because the client had gone.
    refused_gone: bool,
}

/// The answer a call made, and how it ended.
#[derive(Debug, Clone, Default)]
pub struct AnswerReport {
    /// The text (at most [`MAX_ANSWER_BYTES`]), if the plugin made one.
    pub text: Option<String>,
    /// The sources it told early (the last `cite`), if any.
    pub cited: Option<Vec<Source>>,
    /// How it ended, if the plugin said (`finish`).
    pub finish: Option<FinishReason>,
    /// The model's token counts, if the plugin passed them on.
    pub usage: Option<Usage>,
    /// Whether the plugin was told its client had gone (an `append` or `cite` refused).
    pub told_client_gone: bool,
    /// Whether the text a streaming client was sent is all of [`AnswerReport::text`] (false
    /// when a `set` replaced text already streamed).
    pub stream_whole: bool,
}

impl Report for AnswerReport {
    fn absorb(&mut self, later: &Self) {
        if later.text.is_some() {
            self.text.clone_from(&later.text);
        }
        if later.cited.is_some() {
            self.cited.clone_from(&later.cited);
        }
        self.finish = later.finish.or(self.finish);
        self.usage = later.usage.or(self.usage);
        self.told_client_gone |= later.told_client_gone;
    }
}

impl AnswerState {
    /// Sends what `text` holds past what the client has, if it only extends it.
    fn stream_rest(&mut self) {
        let Some(sink) = &self.sink else { return };
        let Some(rest) = self
            .text
            .get(self.streamed..)
            .filter(|_| self.text.is_char_boundary(self.streamed))
        else {
            return;
        };
        if !rest.is_empty() && sink.send(AnswerEvent::Delta(rest.to_owned())) {
            self.streamed = self.text.len();
        }
    }

    fn gone(&mut self) -> bool {
        let gone = self.client.is_gone() || self.sink.as_ref().is_some_and(AnswerSink::is_closed);
        if gone {
            // A stream no one reads: the call's other work (outbound requests) stops too.
            self.client.gone();
            self.refused_gone = true;
        }
        gone
    }
}

impl Capability for AnswerCapability {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[(
        "turnstile:retrieval/answer",
        "an answer beside the sources in the response, streamed to a client that asks (64 KiB)",
    )];

    type Options = ();
    type Grant = CorpusPool;
    type State = AnswerState;
    type Report = AnswerReport;

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        answer::add_to_linker::<T, InRoom<Self>>(linker, T::room)
    }

    fn grant(_: &(), given: &Provision) -> Result<CorpusPool, PluginError> {
        Ok(given.corpus.clone())
    }

    fn state(_: &(), corpus: &CorpusPool, call: &Call) -> AnswerState {
        AnswerState {
            text: String::new(),
            touched: false,
            streamed: 0,
            sink: call.asked.stream.clone(),
            client: call.client.clone(),
            limit: call.asked.limit,
            corpus: corpus.clone(),
            cites: 0,
            cited: None,
            finish: None,
            usage: None,
            refused_gone: false,
        }
    }

    fn finish(state: &mut AnswerState, _: &Call) -> AnswerReport {
        // The sink goes with the call: the stream's reader sees its end.
        let streamed = state.sink.take().is_some();
        let stream_whole = !streamed || state.streamed == state.text.len();
        AnswerReport {
            text: state.touched.then(|| std::mem::take(&mut state.text)),
            cited: state.cited.take(),
            finish: state.finish,
            usage: state.usage,
            told_client_gone: state.refused_gone,
            stream_whole,
        }
    }
}

impl answer::Host for Room<'_, AnswerCapability> {
    fn set(&mut self, text: String) -> wasmtime::Result<Result<(), answer::AnswerError>> {
        if text.len() > MAX_ANSWER_BYTES {
            return Ok(Err(answer::AnswerError::TooLong(MAX_ANSWER_BYTES as u32)));
        }
        let state = &mut *self.state;
        let extends = text
            .as_bytes()
            .starts_with(&state.text.as_bytes()[..state.streamed]);
        state.text = text;
        state.touched = true;
        if extends {
            state.stream_rest();
        } else if state.sink.is_some() {
            tracing::debug!(
                plugin = &*self.call.plugin,
                request_id = self.call.request_id,
                "answer.set replaced text already streamed: the stream keeps what it was sent"
            );
        }
        Ok(Ok(()))
    }

    fn append(&mut self, delta: String) -> wasmtime::Result<Result<(), answer::StreamError>> {
        let state = &mut *self.state;
        if state.gone() {
            return Ok(Err(answer::StreamError::ClientGone));
        }
        if state.text.len() + delta.len() > MAX_ANSWER_BYTES {
            return Ok(Err(answer::StreamError::TooLong(MAX_ANSWER_BYTES as u32)));
        }
        state.touched = true;
        if delta.is_empty() {
            return Ok(Ok(()));
        }
        // Only what was streamed so far stays the stream's: a `set` that replaced it is not
        // recalled, and the appended part goes on from what the client has.
        let was_whole = state.streamed == state.text.len();
        state.text.push_str(&delta);
        if let Some(sink) = &state.sink
            && was_whole
        {
            if !sink.send(AnswerEvent::Delta(delta)) {
                state.gone();
                return Ok(Err(answer::StreamError::ClientGone));
            }
            state.streamed = state.text.len();
        }
        Ok(Ok(()))
    }

    fn cite(
        &mut self,
        sources: Vec<answer::Cited>,
    ) -> wasmtime::Result<Result<(), answer::StreamError>> {
        let state = &mut *self.state;
        if state.gone() {
            return Ok(Err(answer::StreamError::ClientGone));
        }
        state.cites += 1;
        if state.cites > MAX_CITES {
            return Ok(Err(answer::StreamError::InvalidArgument(format!(
                "at most {MAX_CITES} cite calls a call"
            ))));
        }
        let sources: Vec<Source> = sources
            .into_iter()
            .map(|c| Source {
                id: c.id,
                title: c.title,
                snippet: c.snippet,
                score: c.score,
            })
            .collect();
        if let Err(violation) = check_sources(&sources, state.limit, &state.corpus) {
            return Ok(Err(answer::StreamError::InvalidArgument(
                self.call.redact(&violation.to_string()),
            )));
        }
        if let Some(sink) = &state.sink
            && !sink.send(AnswerEvent::Cited(sources.clone()))
        {
            state.gone();
            return Ok(Err(answer::StreamError::ClientGone));
        }
        state.cited = Some(sources);
        Ok(Ok(()))
    }

    fn finish(
        &mut self,
        reason: answer::FinishReason,
        usage: Option<answer::Usage>,
    ) -> wasmtime::Result<()> {
        self.state.finish = Some(reason);
        self.state.usage = usage;
        Ok(())
    }
}
