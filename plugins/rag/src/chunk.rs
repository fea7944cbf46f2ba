//! What one event of a streamed chat completion says (`chat.completion.chunk`, as OpenAI, vLLM,
//! TGI, Ollama and llama.cpp's server send them): the next piece of content, why the answer
//! ended, the token counts (the last chunk with `stream_options.include_usage`), or an error the
//! upstream reports in the stream.

use serde_json::Value;

/// One event, read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Part {
    /// The next piece of the answer (`choices[0].delta.content`), when not empty.
    pub content: Option<String>,
    /// `choices[0].finish_reason`, when given.
    pub finish: Option<Finish>,
    /// `usage`: prompt and completion tokens, when given.
    pub usage: Option<(u32, u32)>,
}

/// Why the model says its answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// It finished.
    Stop,
    /// It reached the token bound.
    Length,
    /// Its filter withheld the answer.
    ContentFilter,
}

/// Why an event gave no part.
#[derive(Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Not JSON.
    NotJson,
    /// The upstream reported an error in the stream (`{"error": …}`).
    Error,
}

/// The end of the stream: `data: [DONE]`.
pub const DONE: &str = "[DONE]";

/// Reads the data of one event.
pub fn part(data: &str) -> Result<Part, Unreadable> {
    let value: Value = serde_json::from_str(data).map_err(|_| Unreadable::NotJson)?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        return Err(Unreadable::Error);
    }
    let choice = value.pointer("/choices/0");
    let content = choice
        .and_then(|c| c.pointer("/delta/content"))
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    let finish = choice
        .and_then(|c| c.get("finish_reason"))
        .and_then(Value::as_str)
        .map(finish);
    Ok(Part {
        content,
        finish,
        usage: usage(&value),
    })
}

/// A finish reason's meaning (`tool_calls` and unknown ones end it as `stop` does).
pub fn finish(reason: &str) -> Finish {
    match reason {
        "length" => Finish::Length,
        "content_filter" => Finish::ContentFilter,
        _ => Finish::Stop,
    }
}

/// A body's `usage` (a completion's, or a stream's last chunk's), when it has both counts.
pub fn usage(value: &Value) -> Option<(u32, u32)> {
    let usage = value.get("usage")?;
    let count = |name: &str| {
        usage
            .get(name)?
            .as_u64()
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    Some((count("prompt_tokens")?, count("completion_tokens")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_chunk_is_read() {
        let first = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
        assert_eq!(part(first).unwrap(), Part::default());
        let token = r#"{"choices":[{"index":0,"delta":{"content":"json "},"finish_reason":null}]}"#;
        assert_eq!(part(token).unwrap().content.as_deref(), Some("json "));
        let last = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;
        assert_eq!(part(last).unwrap().finish, Some(Finish::Length));
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}"#;
        assert_eq!(part(usage).unwrap().usage, Some((12, 5)));
        let error = r#"{"error":{"message":"the model crashed","type":"server_error"}}"#;
        assert_eq!(part(error), Err(Unreadable::Error));
        assert_eq!(part("<html>"), Err(Unreadable::NotJson));
    }
}
