//! The request the plugin sends: an OpenAI-compatible chat completion, streamed and bounded. Its
//! system message says to answer only from the sources and cite them by id; then the client's
//! own instructions and the most recent earlier turns of its conversation (within
//! [`MAX_HISTORY_BYTES`]); then the user message: each source numbered, with its id, title and
//! text (the passage itself, not a highlighted snippet), and the question. The client's
//! parameters pass on within the operator's bounds (`max_tokens` at most the setting's).

use serde_json::{Value, json};

/// What the model is told to do with the sources (no corpus's own words: any documents).
pub const SYSTEM: &str = "Answer the user's question using only the numbered sources in their \
message. After each statement, cite the sources it comes from by their id in square brackets, \
as in [id]. If the sources do not answer the question, say that they do not: do not use \
anything else you know.";

/// Most bytes of earlier turns sent (the most recent first kept).
pub const MAX_HISTORY_BYTES: usize = 32 * 1024;

/// One source as the model reads it.
#[derive(Debug, Clone, Copy)]
pub struct Passage<'a> {
    /// The corpus id, which the answer cites.
    pub id: &'a str,
    /// The document's title.
    pub title: &'a str,
    /// The document's text.
    pub text: &'a str,
}

/// Who said an earlier turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// The client's instructions.
    System,
    /// The user.
    User,
    /// An earlier answer.
    Assistant,
}

/// An earlier turn of the conversation.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// Who said it.
    pub speaker: Speaker,
    /// What was said.
    pub content: &'a str,
}

/// What the client asked of the answer, already held within the operator's bounds.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// Tokens the answer may have.
    pub max_tokens: u32,
    /// Sampling temperature, if the client gave one.
    pub temperature: Option<f32>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// The client's end user.
    pub user: Option<String>,
}

/// The user message: each source numbered from 1 (id, title, text), then the question.
pub fn user_message(question: &str, passages: &[Passage<'_>]) -> String {
    let mut message = String::from("Sources:\n");
    for (n, passage) in passages.iter().enumerate() {
        message.push_str(&format!(
            "\n[{}] id: {}\ntitle: {}\n{}\n",
            n + 1,
            passage.id,
            passage.title,
            passage.text.trim()
        ));
    }
    message.push_str(&format!("\nQuestion: {question}"));
    message
}

/// The messages: ours, the client's instructions, the recent turns, the sources and question.
pub fn messages(question: &str, passages: &[Passage<'_>], history: &[Turn<'_>]) -> Vec<Value> {
    let mut messages = vec![json!({ "role": "system", "content": SYSTEM })];
    for turn in history.iter().filter(|t| t.speaker == Speaker::System) {
        messages.push(json!({ "role": "system", "content": turn.content }));
    }
    // The most recent turns that fit, in their order.
    let mut budget = MAX_HISTORY_BYTES;
    let mut kept: Vec<&Turn<'_>> = Vec::new();
    for turn in history
        .iter()
        .rev()
        .filter(|t| t.speaker != Speaker::System)
    {
        if turn.content.len() > budget {
            break;
        }
        budget -= turn.content.len();
        kept.push(turn);
    }
    for turn in kept.into_iter().rev() {
        let role = match turn.speaker {
            Speaker::User => "user",
            _ => "assistant",
        };
        messages.push(json!({ "role": role, "content": turn.content }));
    }
    messages.push(json!({ "role": "user", "content": user_message(question, passages) }));
    messages
}

/// The JSON body of the chat completion request: streamed, with the usage at its end.
pub fn request_body(
    model: &str,
    asked: &Asked,
    question: &str,
    passages: &[Passage<'_>],
    history: &[Turn<'_>],
) -> Vec<u8> {
    let mut body = json!({
        "model": model,
        "messages": messages(question, passages, history),
        "max_tokens": asked.max_tokens,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    if let Some(temperature) = asked.temperature {
        body["temperature"] = json!(temperature);
    }
    if !asked.stop.is_empty() {
        body["stop"] = json!(asked.stop);
    }
    if let Some(user) = &asked.user {
        body["user"] = json!(user);
    }
    body.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSAGES: [Passage<'static>; 2] = [
        Passage {
            id: "billing#refunds",
            title: "Billing › Refunds",
            text: "Ask for a refund within 30 days: we send your money back.\n",
        },
        Passage {
            id: "billing#cancel",
            title: "Billing › Cancel",
            text: "Cancel your plan from the \"Account\" page.",
        },
    ];

    #[test]
    fn the_request_streams_the_question_and_every_numbered_passage() {
        let asked = Asked {
            max_tokens: 64,
            temperature: Some(0.5),
            stop: vec!["\n\n".into()],
            user: Some("u-7".into()),
        };
        let body: Value = serde_json::from_slice(&request_body(
            "local-model",
            &asked,
            "can I get my money back?",
            &PASSAGES,
            &[],
        ))
        .unwrap();
        assert_eq!(body["model"], "local-model");
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["stop"][0], "\n\n");
        assert_eq!(body["user"], "u-7");
        assert_eq!(body["messages"][0]["content"], SYSTEM);
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.starts_with("Sources:\n\n[1] id: billing#refunds\ntitle: Billing › Refunds\nAsk for a refund within 30 days"), "{user}");
        assert!(user.contains("[2] id: billing#cancel\n"), "{user}");
        assert!(
            user.ends_with("\nQuestion: can I get my money back?"),
            "{user}"
        );
        // No corpus's own words in what every model is told.
        assert!(!SYSTEM.contains("argparse"));
    }

    #[test]
    fn earlier_turns_go_before_the_question_the_newest_kept() {
        let long = "x".repeat(MAX_HISTORY_BYTES - 10);
        let history = [
            Turn {
                speaker: Speaker::System,
                content: "answer in French",
            },
            Turn {
                speaker: Speaker::User,
                content: "an old question",
            },
            Turn {
                speaker: Speaker::Assistant,
                content: &long,
            },
            Turn {
                speaker: Speaker::User,
                content: "how do I cancel?",
            },
            Turn {
                speaker: Speaker::Assistant,
                content: "From the Account page.",
            },
        ];
        let messages = messages("and get a refund?", &PASSAGES, &history);
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "system", "user", "assistant", "user"]);
        assert_eq!(messages[1]["content"], "answer in French");
        assert_eq!(messages[2]["content"], "how do I cancel?");
        assert_eq!(messages[3]["content"], "From the Account page.");
    }
}
