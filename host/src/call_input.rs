//! What one plugin call is asked: its question, and — beyond it — what the capabilities it
//! concerns read: how many sources, the conversation around the question (the chat route),
//! where the answer streams, and the client whose leaving cancels the call's outbound work.

use std::sync::Arc;

use crate::capabilities::answer::AnswerSink;
use crate::capabilities::conversation::Conversation;
use crate::client_link::ClientLink;

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
