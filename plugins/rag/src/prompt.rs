//! The request the plugin sends: an OpenAI-compatible chat completion, non-streaming and bounded,
//! whose system message says to answer only from the sources and cite their ids, and whose user
//! message holds the question and the numbered sources (id, title, snippet).

use serde_json::json;

/// What the model is told to do with the sources.
pub const SYSTEM: &str = "Answer the user's question using only the numbered sources in their \
message. Cite the id of each source you use in square brackets, \
like [argparse.ArgumentParser]. If the sources do not answer the question, say so: do not use \
anything else you know.";

/// One source as the model sees it.
#[derive(Debug, Clone, Copy)]
pub struct Cited<'a> {
    /// The corpus id, which the answer cites.
    pub id: &'a str,
    /// The document's title.
    pub title: &'a str,
    /// The extract that supports it.
    pub snippet: &'a str,
}

/// The user message: the question, then each source numbered from 1.
pub fn user_message(question: &str, sources: &[Cited<'_>]) -> String {
    let mut message = format!("Question: {question}\n\nSources:\n");
    for (n, source) in sources.iter().enumerate() {
        message.push_str(&format!(
            "\n[{}] id: {}\ntitle: {}\nsnippet: {}\n",
            n + 1,
            source.id,
            source.title,
            source.snippet
        ));
    }
    message
}

/// The JSON body of the chat completion request.
pub fn request_body(
    model: &str,
    max_tokens: u32,
    question: &str,
    sources: &[Cited<'_>],
) -> Vec<u8> {
    json!({
        "model": model,
        "messages": [
            { "role": "system", "content": SYSTEM },
            { "role": "user", "content": user_message(question, sources) },
        ],
        "max_tokens": max_tokens,
        "stream": false,
    })
    .to_string()
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn the_request_holds_the_question_and_every_numbered_source() {
        let sources = [
            Cited {
                id: "json.dumps",
                title: "json.dumps — Serialize obj",
                snippet: "Serialize [obj] to a JSON formatted str",
            },
            Cited {
                id: "json.loads",
                title: "json.loads — Deserialize",
                snippet: "a \"quoted\" word",
            },
        ];
        let body: Value = serde_json::from_slice(&request_body(
            "local-model",
            64,
            "how to write json?",
            &sources,
        ))
        .unwrap();
        assert_eq!(body["model"], "local-model");
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["stream"], false);
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][0]["content"], SYSTEM);
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.starts_with("Question: how to write json?\n"), "{user}");
        assert!(user.contains("[1] id: json.dumps\ntitle: json.dumps — Serialize obj\n"));
        assert!(user.contains("[2] id: json.loads\n"));
        assert!(user.contains("snippet: a \"quoted\" word"));
    }
}
