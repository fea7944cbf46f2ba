//! The `answer` capability (contract 0.1.3, streamed since 0.1.4): a generated answer a plugin
//! attaches to its call's response beside the sources, appended as the model writes it and sent
//! on to a streaming client as it comes ([`stream`]), with the sources told early and how the
//! answer ended ([`room`]).

mod room;
mod stream;

pub use room::{AnswerCapability, AnswerReport, AnswerState, MAX_ANSWER_BYTES, MAX_CITES};
pub use stream::{AnswerEvent, AnswerEvents, AnswerSink, FinishReason, Usage, answer_stream};
