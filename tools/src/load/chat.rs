//! `turnstile load --chat`: each request is an OpenAI Chat Completions request (`POST
//! /v1/chat/completions`), streamed with `--stream`. A streamed answer is read as it arrives — a
//! server-sent event at a time — and the moment the first content delta arrives is kept: the
//! time to first token (TTFT) a chat user sees. Each question carries a tag `req:TAG`, unique in
//! the run, so that what a backend recorded about a request (the test upstream's
//! `/stats/requests`) can be joined with what the client saw (`requests.jsonl`).
//!
//! - [`completions_url`], [`models_url`]: where the route and its model list are, from `--url`;
//! - [`discover_model`]: the model `GET /v1/models` lists first, when `--model` is not given;
//! - [`SseParser`]: server-sent events from a body's pieces, however they are cut;
//! - [`read_stream`]: one streamed answer, read to its end, with the first content delta's time.

use std::time::Instant;

use reqwest::Url;
use serde::Deserialize;
use serde_json::json;

use super::stats::{ErrorKind, Outcome};

/// The path of the chat route under an OpenAI base URL (`…/v1`).
const COMPLETIONS: &str = "chat/completions";

/// The chat route's URL from `--url`: given as is when it ends with `/chat/completions`; a base
/// that ends with `/v1` gets `/chat/completions`; any other (a server's root) gets
/// `/v1/chat/completions`.
pub(crate) fn completions_url(url: &Url) -> Url {
    let path = url.path().trim_end_matches('/');
    if path.ends_with("/chat/completions") {
        return url.clone();
    }
    let mut out = url.clone();
    let tail = if path.ends_with("/v1") {
        COMPLETIONS.to_owned()
    } else {
        format!("v1/{COMPLETIONS}")
    };
    out.set_path(&format!("{path}/{tail}"));
    out
}

/// The model list beside a chat route's URL (`…/v1/models`).
pub(crate) fn models_url(completions: &Url) -> Url {
    let mut out = completions.clone();
    let path = completions.path().trim_end_matches('/');
    let base = path.strip_suffix(COMPLETIONS).unwrap_or(path);
    out.set_path(&format!("{}/models", base.trim_end_matches('/')));
    out.set_query(None);
    out
}

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
}

/// The first model `GET models` lists (turnstile lists one: `turnstile-` and its plugin's name).
pub(crate) async fn discover_model(
    client: &reqwest::Client,
    models: &Url,
) -> anyhow::Result<String> {
    let failed = |why: String| {
        anyhow::anyhow!("--model not given, and GET {models} did not name one: {why}; give --model")
    };
    let response = client
        .get(models.clone())
        .send()
        .await
        .map_err(|e| failed(e.to_string()))?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| failed(e.to_string()))?;
    if !status.is_success() {
        return Err(failed(format!("status {status}")));
    }
    let list: ModelList = serde_json::from_slice(&body)
        .map_err(|e| failed(format!("not an OpenAI model list ({e})")))?;
    list.data
        .into_iter()
        .map(|m| m.id)
        .find(|id| !id.is_empty())
        .ok_or_else(|| failed("the list is empty".into()))
}

/// The JSON body of one chat request: the question with its tag, as the one user message.
pub(crate) fn request_body(model: &str, question: &str, tag: &str, stream: bool) -> Vec<u8> {
    let body = json!({
        "model": model,
        "messages": [{"role": "user", "content": format!("{question} req:{tag}")}],
        "stream": stream,
    });
    // A `Value` always serializes.
    serde_json::to_vec(&body).unwrap_or_default()
}

/// Server-sent events from the pieces of a body, however they are cut: lines end with `\n`,
/// `\r\n` or `\r`; a blank line ends an event; `data:` lines (one leading space dropped) are
/// joined with `\n`; comments (`:`) and other fields are skipped.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// Bytes of a line not yet ended.
    line: Vec<u8>,
    /// The `data` of the event being read.
    data: Vec<u8>,
    /// The event being read has a `data` field.
    has_data: bool,
    /// The last byte seen was a `\r` (a `\n` right after it ends nothing more).
    after_cr: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `bytes`; returns the `data` of every event they complete, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut events = Vec::new();
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    self.end_line(&mut events);
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                }
            }
        }
        events
    }

    fn end_line(&mut self, events: &mut Vec<Vec<u8>>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if self.has_data {
                events.push(std::mem::take(&mut self.data));
                self.has_data = false;
            }
            return;
        }
        if line.first() == Some(&b':') {
            return;
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
    }
}

/// What one event of a chat stream says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChatEvent {
    /// A chunk with a piece of the answer (non-empty `delta.content`).
    Content,
    /// Any other chunk: the role and sources, the finish, the usage.
    Other,
    /// `data: [DONE]`: the stream is complete.
    Done,
    /// An error event (`{"error": …}`), or an event that is no chunk at all.
    Error,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
}

/// Classifies one event's `data`.
pub(crate) fn classify(data: &[u8]) -> ChatEvent {
    if data == b"[DONE]" {
        return ChatEvent::Done;
    }
    match serde_json::from_slice::<Chunk>(data) {
        Ok(chunk) if chunk.error.is_some() => ChatEvent::Error,
        Ok(chunk) => {
            let content = chunk.choices.iter().any(|c| {
                c.delta
                    .as_ref()
                    .and_then(|d| d.content.as_deref())
                    .is_some_and(|t| !t.is_empty())
            });
            if content {
                ChatEvent::Content
            } else {
                ChatEvent::Other
            }
        }
        Err(_) => ChatEvent::Error,
    }
}

/// One streamed answer as the client saw it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamRead {
    /// How it ended: `200` with `[DONE]`; `stream_error` (an error event), `stream_incomplete`
    /// (the body ended without `[DONE]`), or the client's error reading it.
    pub outcome: Outcome,
    /// When the first piece of the answer (the first non-empty content delta) arrived.
    pub first_delta: Option<Instant>,
    /// How many events carried content.
    pub deltas: u32,
}

/// A source of a body's pieces, as they arrive.
pub(crate) trait Pieces {
    /// The next piece, `None` at the end of the body.
    fn next_piece(
        &mut self,
    ) -> impl std::future::Future<Output = Result<Option<bytes::Bytes>, reqwest::Error>> + Send;
}

impl Pieces for reqwest::Response {
    async fn next_piece(&mut self) -> Result<Option<bytes::Bytes>, reqwest::Error> {
        self.chunk().await
    }
}

/// Reads a streamed answer of status `status` to its end, noting when its first content delta
/// arrived: the moment the piece that completed that event was read, not the end of the stream.
pub(crate) async fn read_stream(status: u16, body: &mut impl Pieces) -> StreamRead {
    let mut parser = SseParser::new();
    let mut read = StreamRead {
        outcome: Outcome::Error(ErrorKind::StreamIncomplete),
        first_delta: None,
        deltas: 0,
    };
    let mut ended: Option<Outcome> = None;
    loop {
        let piece = match body.next_piece().await {
            Ok(Some(piece)) => piece,
            Ok(None) => break,
            Err(e) => {
                read.outcome = Outcome::from_error(&e);
                return read;
            }
        };
        // tokio's clock: the real one, or a test's paused one.
        let arrived = tokio::time::Instant::now().into_std();
        for event in parser.feed(&piece) {
            match classify(&event) {
                ChatEvent::Content => {
                    read.deltas += 1;
                    read.first_delta.get_or_insert(arrived);
                }
                ChatEvent::Other => {}
                ChatEvent::Done => {
                    ended.get_or_insert(Outcome::Http(status));
                }
                ChatEvent::Error => {
                    ended.get_or_insert(Outcome::Error(ErrorKind::StreamError));
                }
            }
        }
    }
    if let Some(outcome) = ended {
        read.outcome = outcome;
    }
    read
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::time::Duration;

    use super::*;

    fn data(events: Vec<Vec<u8>>) -> Vec<String> {
        events
            .into_iter()
            .map(|e| String::from_utf8(e).expect("utf-8"))
            .collect()
    }

    #[test]
    fn events_are_whole_however_the_body_is_cut() {
        let body = "data: {\"a\":1}\n\n: a comment\n\nevent: x\ndata: one\ndata:two\r\n\r\ndata: [DONE]\r\r";
        let whole = data(SseParser::new().feed(body.as_bytes()));
        assert_eq!(whole, ["{\"a\":1}", "one\ntwo", "[DONE]"]);
        // Every cut, down to a byte at a time, gives the same events.
        for size in 1..body.len() {
            let mut parser = SseParser::new();
            let mut got = Vec::new();
            for piece in body.as_bytes().chunks(size) {
                got.extend(data(parser.feed(piece)));
            }
            assert_eq!(got, whole, "cut every {size} bytes");
        }
        // An event not yet ended by a blank line is not told.
        assert!(SseParser::new().feed(b"data: half").is_empty());
    }

    #[test]
    fn events_are_classified_as_a_chat_client_reads_them() {
        let role = br#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"sources":[]}"#;
        let token =
            br#"{"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#;
        let finish = br#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        let usage = br#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
        let error = br#"{"error":{"message":"the model crashed","type":"server_error"}}"#;
        assert_eq!(classify(role), ChatEvent::Other);
        assert_eq!(classify(token), ChatEvent::Content);
        assert_eq!(classify(finish), ChatEvent::Other);
        assert_eq!(classify(usage), ChatEvent::Other);
        assert_eq!(classify(b"[DONE]"), ChatEvent::Done);
        assert_eq!(classify(error), ChatEvent::Error);
        assert_eq!(classify(b"not json"), ChatEvent::Error);
    }

    /// A body whose pieces come at set times after the start.
    struct Timed {
        start: tokio::time::Instant,
        pieces: VecDeque<(Duration, &'static [u8])>,
    }

    impl Pieces for Timed {
        async fn next_piece(&mut self) -> Result<Option<bytes::Bytes>, reqwest::Error> {
            let Some((at, piece)) = self.pieces.pop_front() else {
                return Ok(None);
            };
            tokio::time::sleep_until(self.start + at).await;
            Ok(Some(bytes::Bytes::from_static(piece)))
        }
    }

    const ROLE: &[u8] =
        b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    const TOKEN: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"tok \"}}]}\n\n";
    const FINISH: &[u8] = b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    const DONE: &[u8] = b"data: [DONE]\n\n";

    #[tokio::test(start_paused = true)]
    async fn the_first_delta_is_timed_when_it_arrives_not_at_the_end() {
        let start = tokio::time::Instant::now();
        // The role at once (not content), the first token at 200 ms, split across two pieces
        // (its event completes with the second, at 250 ms), more tokens up to 2 s, the end.
        let (head, tail) = TOKEN.split_at(20);
        let mut body = Timed {
            start,
            pieces: VecDeque::from([
                (Duration::ZERO, ROLE),
                (Duration::from_millis(200), head),
                (Duration::from_millis(250), tail),
                (Duration::from_millis(1000), TOKEN),
                (Duration::from_millis(2000), TOKEN),
                (Duration::from_millis(2000), FINISH),
                (Duration::from_millis(2000), DONE),
            ]),
        };
        let read = read_stream(200, &mut body).await;
        let end = tokio::time::Instant::now();
        assert_eq!(read.outcome, Outcome::Http(200));
        assert_eq!(read.deltas, 3);
        let first = tokio::time::Instant::from_std(read.first_delta.expect("a first delta"));
        assert_eq!(first - start, Duration::from_millis(250));
        assert_eq!(end - start, Duration::from_millis(2000));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_without_its_end_or_with_an_error_is_a_failure() {
        let start = tokio::time::Instant::now();
        let mut cut = Timed {
            start,
            pieces: VecDeque::from([(Duration::ZERO, ROLE), (Duration::ZERO, TOKEN)]),
        };
        let read = read_stream(200, &mut cut).await;
        assert_eq!(read.outcome, Outcome::Error(ErrorKind::StreamIncomplete));
        assert_eq!(read.outcome.key(), "stream_incomplete");
        assert!(read.first_delta.is_some());

        let mut failed = Timed {
            start,
            pieces: VecDeque::from([
                (Duration::ZERO, ROLE),
                (
                    Duration::ZERO,
                    b"data: {\"error\":{\"message\":\"x\",\"type\":\"server_error\"}}\n\n",
                ),
            ]),
        };
        let read = read_stream(200, &mut failed).await;
        assert_eq!(read.outcome, Outcome::Error(ErrorKind::StreamError));
        assert!(read.first_delta.is_none());
        assert!(read.outcome.is_failure());
    }

    #[test]
    fn urls_of_the_route_and_its_models() {
        let cases = [
            ("http://h:1", "http://h:1/v1/chat/completions"),
            ("http://h:1/", "http://h:1/v1/chat/completions"),
            ("http://h:1/v1", "http://h:1/v1/chat/completions"),
            ("http://h:1/v1/", "http://h:1/v1/chat/completions"),
            (
                "http://h:1/v1/chat/completions",
                "http://h:1/v1/chat/completions",
            ),
            (
                "http://h:1/api/v1/chat/completions",
                "http://h:1/api/v1/chat/completions",
            ),
        ];
        for (given, want) in cases {
            let url = completions_url(&Url::parse(given).expect("url"));
            assert_eq!(url.as_str(), want, "{given}");
        }
        let models = |s: &str| models_url(&Url::parse(s).expect("url")).to_string();
        assert_eq!(
            models("http://h:1/v1/chat/completions"),
            "http://h:1/v1/models"
        );
        assert_eq!(
            models("http://h:1/api/v1/chat/completions"),
            "http://h:1/api/v1/models"
        );
    }

    #[test]
    fn the_question_carries_its_tag() {
        let body: serde_json::Value =
            serde_json::from_slice(&request_body("turnstile-rag", "How?", "r1-7", true))
                .expect("json");
        assert_eq!(body["model"], "turnstile-rag");
        assert_eq!(body["stream"], true);
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["messages"][0]["content"], "How? req:r1-7");
    }
}
