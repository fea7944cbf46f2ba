//! An answer that came whole (an upstream that does not stream, whatever it was asked): a chat
//! completion's `choices[0].message.content`, why it ended and its usage.

use serde_json::Value;

use crate::chunk::{Finish, finish, usage};

/// The longest answer the host keeps, in bytes (`answer.append`'s bound).
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Why a 2xx body gave no answer; the message is the plugin's error (no part of the body).
#[derive(Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Not JSON at all.
    NotJson,
    /// JSON without a non-empty `choices[0].message.content`.
    NoContent,
}

impl Unreadable {
    /// The plugin's error message.
    pub fn message(&self) -> &'static str {
        match self {
            Self::NotJson => "upstream answered invalid JSON",
            Self::NoContent => "upstream answered no content",
        }
    }
}

/// A whole answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Whole {
    /// The content, at most [`MAX_ANSWER_BYTES`].
    pub content: String,
    /// Why it ended.
    pub finish: Option<Finish>,
    /// Prompt and completion tokens.
    pub usage: Option<(u32, u32)>,
}

/// The answer in a chat completion `body`.
pub fn whole(body: &[u8]) -> Result<Whole, Unreadable> {
    let value: Value = serde_json::from_slice(body).map_err(|_| Unreadable::NotJson)?;
    let content = value
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or(Unreadable::NoContent)?;
    let cut_short = content.len() > MAX_ANSWER_BYTES;
    Ok(Whole {
        content: cut(content, MAX_ANSWER_BYTES).to_owned(),
        finish: if cut_short {
            Some(Finish::Length)
        } else {
            value
                .pointer("/choices/0/finish_reason")
                .and_then(Value::as_str)
                .map(finish)
        },
        usage: usage(&value),
    })
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_choice_content_is_the_answer() {
        let body = br#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"According to [json.dumps], yes."},"finish_reason":"stop"},{"message":{"content":"no"}}],"usage":{"prompt_tokens":9,"completion_tokens":5}}"#;
        let answer = whole(body).unwrap();
        assert_eq!(answer.content, "According to [json.dumps], yes.");
        assert_eq!(answer.finish, Some(Finish::Stop));
        assert_eq!(answer.usage, Some((9, 5)));
    }

    #[test]
    fn not_json_or_no_content_is_an_error() {
        assert_eq!(whole(b"<html>busy</html>"), Err(Unreadable::NotJson));
        for body in [
            &br#"{}"#[..],
            br#"{"choices":[]}"#,
            br#"{"choices":[{"message":{"content":null}}]}"#,
            br#"{"choices":[{"message":{"content":"  "}}]}"#,
            br#"{"choices":[{"message":{"content":7}}]}"#,
        ] {
            assert_eq!(whole(body), Err(Unreadable::NoContent));
        }
    }

    #[test]
    fn a_long_answer_is_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_ANSWER_BYTES); // two bytes each
        let body = serde_json::json!({"choices":[{"message":{"content": long}}]}).to_string();
        let answer = whole(body.as_bytes()).unwrap();
        assert_eq!(answer.content.len(), MAX_ANSWER_BYTES);
        assert_eq!(answer.finish, Some(Finish::Length));
        assert_eq!(cut("aé", 2), "a");
        assert_eq!(cut("abc", 10), "abc");
    }
}
