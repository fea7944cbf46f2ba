//! The `answer` capability (contract 0.1.3): a generated answer a plugin attaches to its call's
//! response, beside the sources — what a plugin that asks a model found. Bounded at
//! [`MAX_ANSWER_BYTES`]; kept only when the call returns its sources.

use wasmtime::component::Linker;

use super::capability::{Call, Capability, HasRoom, InRoom, Report, Room};
use crate::bindings::turnstile::retrieval::answer;
use crate::error::PluginError;
use crate::provision::Provision;

/// Longest answer, in bytes.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;

/// The call's answer.
pub struct Answer;

/// The answer a call set, if any.
#[derive(Debug, Clone, Default)]
pub struct AnswerReport {
    /// The text (at most [`MAX_ANSWER_BYTES`]).
    pub text: Option<String>,
}

impl Report for AnswerReport {
    fn absorb(&mut self, later: &Self) {
        if later.text.is_some() {
            self.text.clone_from(&later.text);
        }
    }
}

impl Capability for Answer {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[(
        "turnstile:retrieval/answer",
        "an answer beside the sources in the response (16 KiB)",
    )];

    type Options = ();
    type Grant = ();
    type State = Option<String>;
    type Report = AnswerReport;

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        answer::add_to_linker::<T, InRoom<Self>>(linker, T::room)
    }

    fn grant(_: &(), _: &Provision) -> Result<(), PluginError> {
        Ok(())
    }

    fn state(_: &(), _: &(), _: &Call) -> Option<String> {
        None
    }

    fn finish(text: &mut Option<String>, _: &Call) -> AnswerReport {
        AnswerReport { text: text.take() }
    }
}

impl answer::Host for Room<'_, Answer> {
    fn set(&mut self, text: String) -> wasmtime::Result<Result<(), answer::AnswerError>> {
        if text.len() > MAX_ANSWER_BYTES {
            return Ok(Err(answer::AnswerError::TooLong(MAX_ANSWER_BYTES as u32)));
        }
        *self.state = Some(text);
        Ok(Ok(()))
    }
}
