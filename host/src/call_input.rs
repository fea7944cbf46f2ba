//! What one plugin call is asked: its question, and — beyond it — what the capabilities it
//! concerns read: how many sources, the conversation around the question (the chat route),
//! where the answer streams, and the client whose leaving cancels the call's outbound work.

use std::sync::Arc;

use crate::capabilities::answer::AnswerSink;
use crate::client_link::ClientLink;

pub use crate::bindings::turnstile::retrieval::conversation::{
    AnswerParameters as Parameters, Role, Turn,
};

/// Most turns before the question that a call is given.
pub const MAX_HISTORY_TURNS: usize = 256;
/// Longest turn, in bytes.
pub const MAX_TURN_BYTES: usize = 32 * 1024;
/// Most stop sequences.
pub const MAX_STOP_SEQUENCES: usize = 4;
/// Longest `user`, in bytes.
pub const MAX_USER_BYTES: usize = 256;

/// A conversation, as the chat route gives it to a call.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// The turns before the question, oldest first.
    pub history: Vec<Turn>,
    /// What the client asked of the answer.
    pub parameters: Parameters,
}

impl Default for Conversation {
    fn default() -> Self {
        Self {
            history: Vec::new(),
            parameters: Parameters {
                max_tokens: None,
                temperature: None,
                stop: Vec::new(),
                user: None,
            },
        }
    }
}

/// What a request asked of a call, beyond its question: read by the capabilities it concerns.
#[derive(Debug, Clone)]
pub struct Asked {
    /// At most this many sources (1..=20).
    pub limit: u32,
    /// The turns before the question and the answer's parameters (the chat route only).
    pub conversation: Option<Arc<Conversation>>,
    /// Where the answer streams as it is made (a streaming client only).
    pub stream: Option<AnswerSink>,
}

impl Asked {
    /// Just a limit: a whole answer, no conversation.
    pub fn limit(limit: u32) -> Self {
        Self {
            limit,
            conversation: None,
            stream: None,
        }
    }
}

/// One call's input.
#[derive(Debug, Clone)]
pub struct CallInput<'a> {
    /// 1..=500 characters of untrusted user text.
    pub question: &'a str,
    /// The request the call serves (log lines name it).
    pub request_id: u64,
    /// What else the request asked.
    pub asked: Asked,
    /// The client: when it goes, `answer.append` fails and outbound requests are cancelled.
    pub client: ClientLink,
}
