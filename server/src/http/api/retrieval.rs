//! `POST /retrieve`'s request and answer, and the plugin and corpus generations every answer
//! names.

use serde::{Deserialize, Serialize};
use turnstile_corpus::metadata::{Fields, Link};
use turnstile_host::capabilities::AnswerReport;
use turnstile_host::capabilities::Backend;
use turnstile_host::capabilities::answer::FinishReason;
use turnstile_host::{Generation, Source};
use utoipa::ToSchema;

/// `POST /retrieve`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrieveRequestBody {
    /// 1 to 500 characters, not blank.
    #[schema(min_length = 1, max_length = 500, pattern = r"\S")]
    pub question: String,
    /// How many sources, 1 to 20 (default 5); `null` is not a number of sources.
    #[schema(minimum = 1, maximum = 20, default = 5, nullable = false)]
    pub limit: Option<u32>,
}

/// `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompletedStatus {
    /// The only value.
    Completed,
}

/// A 200 answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetrieveResponse {
    /// Always `completed`.
    pub status: CompletedStatus,
    /// Best first.
    pub sources: Vec<SourceBody>,
    /// Which plugin answered.
    pub plugin: PluginBody,
    /// Which corpus it read (the one it was admitted with, even if a swap came meanwhile).
    pub corpus: CorpusRefBody,
    /// Process-unique request id.
    pub request_id: u64,
    /// The plugin's generated answer, when it gives one (contract 0.1.3, e.g. the `rag` plugin
    /// asking a model); absent for a retrieval-only plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// What became of the answer, when the plugin made one or asked a backend for one (absent
    /// for a retrieval-only call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_status: Option<AnswerStatus>,
    /// Where the time went.
    pub timing: Timing,
}

/// What became of a call's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    /// The model answered in full.
    Answered,
    /// The answer was cut at the token bound.
    Truncated,
    /// The model's filter withheld (part of) it.
    Filtered,
    /// No answer: the host refused every request the plugin made (its origin is not granted).
    Denied,
    /// No answer: the plugin's requests were made, and it gave none.
    NotAnswered,
}

impl AnswerStatus {
    /// The status of a call's answer, if the call made one or asked a backend for one.
    pub fn of(answer: &AnswerReport, backend: &Backend) -> Option<Self> {
        match (&answer.text, answer.finish) {
            (Some(_), Some(FinishReason::Length)) => Some(Self::Truncated),
            (Some(_), Some(FinishReason::ContentFilter)) => Some(Self::Filtered),
            (Some(_), _) => Some(Self::Answered),
            (None, _) if backend.requests > 0 => Some(Self::NotAnswered),
            (None, _) if backend.denied > 0 => Some(Self::Denied),
            (None, _) => None,
        }
    }
}

/// Queue wait and plugin execution, measured separately, in milliseconds to the microsecond.
#[derive(Debug, Serialize, ToSchema)]
pub struct Timing {
    /// From arrival at the gate to getting a lease.
    pub queue_ms: f64,
    /// The plugin call on the worker thread.
    pub execution_ms: f64,
    /// Outbound HTTP requests the call made (present when it made any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbound_requests: Option<u32>,
    /// Their time, added up (present when the call made any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbound_ms: Option<f64>,
}

/// One source in a response, best first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SourceBody {
    /// A document id of the corpus.
    id: String,
    /// At most 512 bytes.
    title: String,
    /// Higher is better; finite.
    score: f64,
    /// At most 1 KiB.
    snippet: String,
    /// Where the document can be read, for an answer to link back: the corpus line's `url`
    /// (`http`, `https` or relative, at most 2 KiB; present when it has one).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    url: Option<String>,
    /// The document's own fields, as its corpus line gave them (front matter, a row's other
    /// columns): names to a string, a number, a boolean or a list of those; at most 32 names
    /// and 4 KiB (present when it has any).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable = false)]
    fields: Option<Fields>,
}

/// A plugin generation: the one that served a response, or the one serving now.
#[derive(Debug, Serialize, ToSchema)]
pub struct PluginBody {
    /// Its name (the file stem, or `retrieval` for the embedded one).
    pub name: String,
    /// sha256 of its component.
    pub sha256: String,
    /// 1 at start, +1 per swap.
    pub generation: u64,
}

impl PluginBody {
    /// The body of a generation.
    pub fn of(generation: &Generation) -> Self {
        Self {
            name: generation.plugin.name().to_owned(),
            sha256: generation.plugin.sha256().to_owned(),
            generation: generation.number,
        }
    }
}

/// A corpus generation: the one a response read, or the one serving now.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorpusRefBody {
    /// 1 at start, +1 per corpus swap.
    pub generation: u64,
    /// sha256 of its JSON Lines (decompressed).
    pub sha256: String,
}

impl CorpusRefBody {
    /// The corpus of a generation.
    pub fn of(generation: &Generation) -> Self {
        Self {
            generation: generation.corpus.number,
            sha256: generation.corpus.index.sha256.clone(),
        }
    }
}

impl SourceBody {
    /// The document's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its title.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// Where it can be read, if the corpus says.
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// The body of a source the plugin gave, with its document's link from the corpus (`None`
    /// when it has none, or it could not be read).
    pub fn of(s: Source, link: Option<Link>) -> Self {
        let link = link.unwrap_or_default();
        Self {
            id: s.id,
            title: s.title,
            score: s.score,
            snippet: s.snippet,
            url: link.url,
            fields: link.fields,
        }
    }
}
