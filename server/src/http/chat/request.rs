//! A `POST /v1/chat/completions` request, validated as OpenAI documents it: every field this
//! route reads is checked for its type and range, each refusal naming the field (`param`);
//! fields it does not know are ignored, as OpenAI ignores them. The last message is the
//! question; the turns before it, and what the client asked of the answer, go to the plugin as
//! its conversation.

use serde_json::{Map, Value};
use turnstile_host::capabilities::Conversation;
use turnstile_host::capabilities::conversation::{
    MAX_HISTORY_TURNS, MAX_STOP_SEQUENCES, MAX_TURN_BYTES, MAX_USER_BYTES, Parameters, Role, Turn,
};
use turnstile_host::sanitize;

use super::error::ChatError;

/// A request refused for one of its fields: what `ChatError::invalid` answers.
#[derive(Debug)]
pub struct Refused {
    /// Machine-readable.
    pub code: &'static str,
    /// For a person.
    pub message: String,
    /// The field at fault.
    pub param: Option<String>,
}

impl Refused {
    fn new(code: &'static str, message: impl Into<String>, param: Option<&str>) -> Self {
        Self {
            code,
            message: message.into(),
            param: param.map(str::to_owned),
        }
    }

    fn with_param(mut self, param: &str) -> Self {
        self.param = Some(param.to_owned());
        self
    }
}

impl From<Refused> for ChatError {
    fn from(refused: Refused) -> Self {
        let mut error = ChatError::invalid(refused.code, refused.message, None);
        error.param = refused.param;
        error
    }
}
use crate::http::error::MAX_QUOTED_BYTES;
use crate::http::request::MAX_QUESTION_CHARS;

/// Largest request body, in bytes: a conversation of 257 turns of up to 32 KiB is bounded by
/// this first.
pub const MAX_CHAT_BODY_BYTES: usize = 1 << 20;

/// Largest `max_tokens` taken (a plugin and its operator bound it further).
pub const MAX_ANSWER_TOKENS: u64 = 1 << 20;

/// Sources a chat answer is built on (the plugin's `limit`).
pub const CHAT_SOURCES: u32 = 5;

/// A validated chat request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The model named (checked against the served one by the handler).
    pub model: String,
    /// The last message: the user's question, 1..=500 characters.
    pub question: String,
    /// The turns before it and the answer's parameters.
    pub conversation: Conversation,
    /// Answer as a stream of chunks.
    pub stream: bool,
    /// With `stream`: a last chunk with the usage.
    pub include_usage: bool,
}

impl ChatRequest {
    /// Validates a JSON body: 400 naming the field for anything wrong.
    pub fn parse(body: &[u8]) -> Result<Self, Refused> {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            Refused::new(
                "malformed_json",
                format!("the body is not valid JSON: {e}"),
                None,
            )
        })?;
        let Value::Object(fields) = value else {
            return Err(Refused::new(
                "not_an_object",
                "the body must be a JSON object like {\"model\": ..., \"messages\": [...]}",
                None,
            ));
        };
        let model = match fields.get("model") {
            Some(Value::String(model)) if !model.trim().is_empty() => model.clone(),
            Some(Value::String(_)) => {
                return Err(invalid("model", "`model` must not be empty"));
            }
            Some(_) => return Err(invalid("model", "`model` must be a string")),
            None => return Err(missing("model")),
        };
        let messages = match fields.get("messages") {
            Some(Value::Array(messages)) => messages,
            Some(_) => return Err(invalid("messages", "`messages` must be an array")),
            None => return Err(missing("messages")),
        };
        let (history, question) = conversation(messages)?;
        if let Some(n) = fields.get("n").filter(|n| !n.is_null())
            && n.as_u64() != Some(1)
        {
            return Err(Refused::new(
                "unsupported_value",
                "`n` must be 1: one answer is made per request",
                Some("n"),
            ));
        }
        let stream = flag(&fields, "stream")?;
        let include_usage = match fields.get("stream_options") {
            None | Some(Value::Null) => false,
            Some(Value::Object(options)) => flag(options, "include_usage")
                .map_err(|e| e.with_param("stream_options.include_usage"))?,
            Some(_) => {
                return Err(invalid(
                    "stream_options",
                    "`stream_options` must be an object like {\"include_usage\": true}",
                ));
            }
        };
        if include_usage && !stream {
            return Err(Refused::new(
                "invalid_value",
                "`stream_options` is only allowed with `stream: true`",
                Some("stream_options"),
            ));
        }
        let max_tokens = match tokens(&fields, "max_completion_tokens")? {
            Some(n) => Some(n),
            None => tokens(&fields, "max_tokens")?,
        };
        let temperature = match fields.get("temperature") {
            None | Some(Value::Null) => None,
            Some(t) => match t.as_f64().filter(|t| (0.0..=2.0).contains(t)) {
                Some(t) => Some(t as f32),
                None => {
                    return Err(invalid(
                        "temperature",
                        "`temperature` must be a number from 0 to 2",
                    ));
                }
            },
        };
        let stop = stop(fields.get("stop"))?;
        let user = match fields.get("user") {
            None | Some(Value::Null) => None,
            Some(Value::String(user)) if user.len() <= MAX_USER_BYTES => Some(user.clone()),
            Some(_) => {
                return Err(invalid(
                    "user",
                    format!("`user` must be a string of at most {MAX_USER_BYTES} bytes"),
                ));
            }
        };
        Ok(Self {
            model,
            question,
            conversation: Conversation {
                history,
                parameters: Parameters {
                    max_tokens,
                    temperature,
                    stop,
                    user,
                },
            },
            stream,
            include_usage,
        })
    }
}

/// The turns before the question, and the question (the last message, the user's).
fn conversation(messages: &[Value]) -> Result<(Vec<Turn>, String), Refused> {
    let Some((last, earlier)) = messages.split_last() else {
        return Err(invalid(
            "messages",
            "`messages` must hold at least the user's question",
        ));
    };
    if earlier.len() > MAX_HISTORY_TURNS {
        return Err(invalid(
            "messages",
            format!(
                "`messages` has {} messages; at most {} are taken",
                messages.len(),
                MAX_HISTORY_TURNS + 1
            ),
        ));
    }
    let mut history = Vec::with_capacity(earlier.len());
    for (i, message) in earlier.iter().enumerate() {
        history.push(turn(message, i)?);
    }
    let last_index = earlier.len();
    let question = turn(last, last_index)?;
    if question.role != Role::User {
        return Err(Refused::new(
            "invalid_value",
            "the last message must be the user's question (role `user`)",
            Some(&format!("messages[{last_index}].role")),
        ));
    }
    let param = format!("messages[{last_index}].content");
    if question.content.trim().is_empty() {
        return Err(Refused::new(
            "blank_question",
            "the question (the last message) must not be empty or blank",
            Some(&param),
        ));
    }
    let chars = question.content.chars().count();
    if chars > MAX_QUESTION_CHARS {
        return Err(Refused::new(
            "question_too_long",
            format!(
                "the question (the last message) has {chars} characters; at most {MAX_QUESTION_CHARS} are taken"
            ),
            Some(&param),
        ));
    }
    Ok((history, question.content))
}

/// One message as a turn.
fn turn(message: &Value, index: usize) -> Result<Turn, Refused> {
    let at = |field: &str| format!("messages[{index}]{field}");
    let Value::Object(message) = message else {
        return Err(invalid(
            &at(""),
            "each message must be an object like {\"role\": \"user\", \"content\": \"...\"}",
        ));
    };
    let role = match message.get("role").and_then(Value::as_str) {
        Some("system" | "developer") => Role::System,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some(other @ ("tool" | "function")) => {
            return Err(Refused::new(
                "unsupported_value",
                format!("`{other}` messages are not taken: this model calls no tools"),
                Some(&at(".role")),
            ));
        }
        Some(other) => {
            return Err(Refused::new(
                "invalid_value",
                format!(
                    "role {:?} is none of `system`, `developer`, `user`, `assistant`",
                    sanitize(other, MAX_QUOTED_BYTES)
                ),
                Some(&at(".role")),
            ));
        }
        None => return Err(missing(&at(".role"))),
    };
    let content = match message.get("content") {
        // An assistant turn that only called tools has no content.
        None | Some(Value::Null) if role == Role::Assistant => String::new(),
        None => return Err(missing(&at(".content"))),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => text_parts(parts, &at(".content"))?,
        Some(_) => {
            return Err(invalid(
                &at(".content"),
                "`content` must be a string or a list of text parts",
            ));
        }
    };
    if content.len() > MAX_TURN_BYTES {
        return Err(Refused::new(
            "message_too_long",
            format!(
                "a message's content is {} bytes; at most {MAX_TURN_BYTES} are taken",
                content.len()
            ),
            Some(&at(".content")),
        ));
    }
    Ok(Turn { role, content })
}

/// The text of a list of content parts, joined by newlines: only `text` parts are taken.
fn text_parts(parts: &[Value], param: &str) -> Result<String, Refused> {
    let mut texts = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        match (
            part.get("type").and_then(Value::as_str),
            part.get("text").and_then(Value::as_str),
        ) {
            (Some("text"), Some(text)) => texts.push(text),
            (Some("text"), None) => {
                return Err(invalid(
                    &format!("{param}[{i}].text"),
                    "a text part must have a string `text`",
                ));
            }
            (Some(kind), _) => {
                return Err(Refused::new(
                    "unsupported_value",
                    format!(
                        "content parts of type {:?} are not taken: only text",
                        sanitize(kind, MAX_QUOTED_BYTES)
                    ),
                    Some(&format!("{param}[{i}].type")),
                ));
            }
            (None, _) => {
                return Err(invalid(
                    &format!("{param}[{i}]"),
                    "a content part must be an object like {\"type\": \"text\", \"text\": \"...\"}",
                ));
            }
        }
    }
    Ok(texts.join("\n"))
}

/// A boolean field, `false` when absent or null.
fn flag(fields: &Map<String, Value>, name: &str) -> Result<bool, Refused> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid(name, format!("`{name}` must be true or false"))),
    }
}

/// A token bound: a whole number from 1 to [`MAX_ANSWER_TOKENS`], if given.
fn tokens(fields: &Map<String, Value>, name: &str) -> Result<Option<u32>, Refused> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64().filter(|n| (1..=MAX_ANSWER_TOKENS).contains(n)) {
            Some(n) => Ok(Some(n as u32)),
            None => Err(invalid(
                name,
                format!("`{name}` must be a whole number from 1 to {MAX_ANSWER_TOKENS}"),
            )),
        },
    }
}

/// `stop`: a string or up to 4 strings.
fn stop(value: Option<&Value>) -> Result<Vec<String>, Refused> {
    let bad = || {
        invalid(
            "stop",
            format!(
                "`stop` must be a string or a list of at most {MAX_STOP_SEQUENCES} strings of at most 256 bytes"
            ),
        )
    };
    let sequences: Vec<String> = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(list)) if list.len() <= MAX_STOP_SEQUENCES => list
            .iter()
            .map(|s| s.as_str().map(str::to_owned).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad()),
    };
    if sequences.iter().any(|s| s.len() > 256) {
        return Err(bad());
    }
    Ok(sequences)
}

fn missing(param: &str) -> Refused {
    Refused::new(
        "missing_field",
        format!("`{param}` is required"),
        Some(param),
    )
}

fn invalid(param: &str, message: impl Into<String>) -> Refused {
    Refused::new("invalid_type", message, Some(param))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<ChatRequest, Refused> {
        ChatRequest::parse(body.to_string().as_bytes())
    }

    fn refusal(body: Value) -> (String, Option<String>) {
        let error = parse(body.clone()).expect_err(&body.to_string());
        (error.code.to_owned(), error.param.clone())
    }

    #[test]
    fn a_conversation_gives_its_last_user_message_as_the_question() {
        let request = parse(json!({
            "model": "turnstile-rag",
            "messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "how do I"}, {"type": "text", "text": "parse json?"}]},
                {"role": "assistant", "content": null},
                {"role": "user", "content": "and write it?"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 99,
            "max_completion_tokens": 64,
            "temperature": 0.2,
            "stop": "\n\n",
            "user": "u-1",
            "response_format": {"type": "text"},
            "n": 1,
        }))
        .unwrap();
        assert_eq!(request.question, "and write it?");
        assert!(request.stream && request.include_usage);
        let history = &request.conversation.history;
        assert_eq!(history.len(), 3);
        assert_eq!(history[0].role, Role::System);
        assert_eq!(history[1].content, "how do I\nparse json?");
        assert_eq!(history[2].role, Role::Assistant);
        assert_eq!(history[2].content, "");
        let p = &request.conversation.parameters;
        assert_eq!(p.max_tokens, Some(64));
        assert_eq!(p.temperature, Some(0.2));
        assert_eq!(p.stop, ["\n\n"]);
        assert_eq!(p.user.as_deref(), Some("u-1"));
    }

    #[test]
    fn every_bad_field_is_refused_by_name() {
        let user = json!({"role": "user", "content": "q"});
        let cases = [
            (json!({"messages": [user]}), "missing_field", Some("model")),
            (json!({"model": "m"}), "missing_field", Some("messages")),
            (
                json!({"model": 5, "messages": [user]}),
                "invalid_type",
                Some("model"),
            ),
            (
                json!({"model": "m", "messages": []}),
                "invalid_type",
                Some("messages"),
            ),
            (
                json!({"model": "m", "messages": {}}),
                "invalid_type",
                Some("messages"),
            ),
            (
                json!({"model": "m", "messages": [{"role": "assistant", "content": "x"}]}),
                "invalid_value",
                Some("messages[0].role"),
            ),
            (
                json!({"model": "m", "messages": [{"role": "tool", "content": "x"}, user]}),
                "unsupported_value",
                Some("messages[0].role"),
            ),
            (
                json!({"model": "m", "messages": [{"role": "wizard", "content": "x"}, user]}),
                "invalid_value",
                Some("messages[0].role"),
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}),
                "unsupported_value",
                Some("messages[0].content[0].type"),
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": " "}]}),
                "blank_question",
                Some("messages[0].content"),
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "a".repeat(501)}]}),
                "question_too_long",
                Some("messages[0].content"),
            ),
            (
                json!({"model": "m", "messages": [{"role": "system", "content": "a".repeat(MAX_TURN_BYTES + 1)}, user]}),
                "message_too_long",
                Some("messages[0].content"),
            ),
            (
                json!({"model": "m", "messages": [user], "n": 2}),
                "unsupported_value",
                Some("n"),
            ),
            (
                json!({"model": "m", "messages": [user], "stream": "yes"}),
                "invalid_type",
                Some("stream"),
            ),
            (
                json!({"model": "m", "messages": [user], "stream_options": {"include_usage": true}}),
                "invalid_value",
                Some("stream_options"),
            ),
            (
                json!({"model": "m", "messages": [user], "max_tokens": 0}),
                "invalid_type",
                Some("max_tokens"),
            ),
            (
                json!({"model": "m", "messages": [user], "max_completion_tokens": 1.5}),
                "invalid_type",
                Some("max_completion_tokens"),
            ),
            (
                json!({"model": "m", "messages": [user], "temperature": 3}),
                "invalid_type",
                Some("temperature"),
            ),
            (
                json!({"model": "m", "messages": [user], "stop": ["a", "b", "c", "d", "e"]}),
                "invalid_type",
                Some("stop"),
            ),
            (
                json!({"model": "m", "messages": [user], "stop": [1]}),
                "invalid_type",
                Some("stop"),
            ),
            (
                json!({"model": "m", "messages": [user], "user": "u".repeat(257)}),
                "invalid_type",
                Some("user"),
            ),
        ];
        for (body, code, param) in cases {
            assert_eq!(
                refusal(body.clone()),
                (code.to_owned(), param.map(str::to_owned)),
                "{body}"
            );
        }
        let error = ChatRequest::parse(b"{").unwrap_err();
        assert_eq!(error.code, "malformed_json");
        let many: Vec<Value> = (0..=MAX_HISTORY_TURNS + 1).map(|_| user.clone()).collect();
        assert_eq!(
            refusal(json!({"model": "m", "messages": many})),
            ("invalid_type".to_owned(), Some("messages".to_owned()))
        );
    }
}
