//! What every answer of the chat route says, whole or streamed: the completion's id and model,
//! the content (the plugin's answer, or its sources listed), why it ended, the model's usage,
//! and the tokens counted by origin.

use std::time::{SystemTime, UNIX_EPOCH};

use turnstile_host::capabilities::AnswerReport;
use turnstile_host::capabilities::Backend;
use turnstile_host::capabilities::answer::FinishReason;

use crate::http::api::{FinishReasonBody, SourceBody, UsageBody};
use crate::metrics::Metrics;

/// This route, as the metrics label it.
pub const ROUTE: &str = "/v1/chat/completions";

/// What every message of one completion shares.
#[derive(Debug, Clone)]
pub(super) struct Completion {
    /// `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model asked for.
    pub model: String,
    /// The request's id.
    pub request_id: u64,
}

impl Completion {
    pub(super) fn new(model: String, request_id: u64) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Self {
            // Unique across restarts too: the process's start is in it.
            id: format!("chatcmpl-{:x}{request_id:06x}", process_started()),
            created: now.as_secs(),
            model,
            request_id,
        }
    }
}

/// When this process started, in Unix milliseconds.
fn process_started() -> u64 {
    static STARTED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *STARTED.get_or_init(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    })
}

/// The answer's content and why it ended: the plugin's answer, or — when it made none (a
/// retrieval-only plugin) — its sources, listed, so a chat client shows what was found.
pub(super) fn content_of(
    answer: &AnswerReport,
    sources: &[SourceBody],
) -> (String, FinishReasonBody) {
    match &answer.text {
        Some(text) => (text.clone(), finish_reason(answer.finish)),
        None => (sources_as_text(sources), FinishReasonBody::Stop),
    }
}

/// OpenAI's word for how an answer ended (`stop` when the plugin did not say).
pub(super) fn finish_reason(reason: Option<FinishReason>) -> FinishReasonBody {
    match reason {
        Some(FinishReason::Length) => FinishReasonBody::Length,
        Some(FinishReason::ContentFilter) => FinishReasonBody::ContentFilter,
        _ => FinishReasonBody::Stop,
    }
}

/// The sources as a Markdown list: what a chat shows when the plugin answers with sources only.
pub(super) fn sources_as_text(sources: &[SourceBody]) -> String {
    if sources.is_empty() {
        return "No sources were found for this question.".to_owned();
    }
    let mut text = String::from("Sources found for this question:\n");
    for (n, source) in sources.iter().enumerate() {
        let title = source.title().replace(['[', ']', '\n'], " ");
        match source.url() {
            Some(url) => text.push_str(&format!("\n{}. [{title}]({url})", n + 1)),
            None => text.push_str(&format!("\n{}. {title} (`{}`)", n + 1, source.id())),
        }
    }
    text
}

/// The model's token counts, as the plugin passed them on.
pub(super) fn usage_of(answer: &AnswerReport) -> Option<UsageBody> {
    answer.usage.map(|u| UsageBody {
        prompt_tokens: u64::from(u.prompt_tokens),
        completion_tokens: u64::from(u.completion_tokens),
        total_tokens: u64::from(u.prompt_tokens) + u64::from(u.completion_tokens),
    })
}

/// Counts the model's tokens by the backend the call asked (its origin; `(none)` when it sent
/// nothing).
pub(super) fn count_tokens(metrics: &Metrics, answer: &AnswerReport, backend: &Backend) {
    if let Some(usage) = answer.usage {
        metrics.tokens(
            backend.reached.as_deref().unwrap_or("(none)"),
            u64::from(usage.prompt_tokens),
            u64::from(usage.completion_tokens),
        );
    }
}
