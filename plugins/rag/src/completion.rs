//! The answer the plugin reads back: `choices[0].message.content` of a chat completion, cut to
//! what the host keeps (16 KiB) on a character boundary.

use serde_json::Value;

/// The longest answer the host keeps, in bytes (`answer.set`'s bound).
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;

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

/// The answer in a chat completion `body`, at most [`MAX_ANSWER_BYTES`].
pub fn answer(body: &[u8]) -> Result<String, Unreadable> {
    let value: Value = serde_json::from_slice(body).map_err(|_| Unreadable::NotJson)?;
    let content = value
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or(Unreadable::NoContent)?;
    Ok(cut(content, MAX_ANSWER_BYTES).to_owned())
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
        let body = br#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"According to [json.dumps], yes."}},{"message":{"content":"no"}}]}"#;
        assert_eq!(answer(body).unwrap(), "According to [json.dumps], yes.");
    }

    #[test]
    fn not_json_or_no_content_is_an_error() {
        assert_eq!(answer(b"<html>busy</html>"), Err(Unreadable::NotJson));
        for body in [
            &br#"{}"#[..],
            br#"{"choices":[]}"#,
            br#"{"choices":[{"message":{"content":null}}]}"#,
            br#"{"choices":[{"message":{"content":"  "}}]}"#,
            br#"{"choices":[{"message":{"content":7}}]}"#,
        ] {
            assert_eq!(answer(body), Err(Unreadable::NoContent));
        }
    }

    #[test]
    fn a_long_answer_is_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_ANSWER_BYTES); // two bytes each
        let body = serde_json::json!({"choices":[{"message":{"content": long}}]}).to_string();
        let cut_answer = answer(body.as_bytes()).unwrap();
        assert_eq!(cut_answer.len(), MAX_ANSWER_BYTES);
        assert_eq!(cut("aé", 2), "a");
        assert_eq!(cut("abc", 10), "abc");
    }
}
