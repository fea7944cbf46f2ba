//! The OpenAI-compatible routes' bodies: `POST /v1/chat/completions` (a `chat.completion`, or a
//! stream of `chat.completion.chunk`s), `GET /v1/models`, and their errors in OpenAI's shape
//! (`{"error": {"message", "type", "param", "code"}}`). Shaped as OpenAI documents them, so the
//! OpenAI SDKs and every client built on them read them; the sources an answer was built on
//! ride beside it in a top-level `sources` array (the same objects as `/retrieve`'s).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::retrieval::SourceBody;

/// `POST /v1/chat/completions`'s body: OpenAI's chat completion request. Fields not listed are
/// ignored, as OpenAI ignores what it does not know.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatRequestBody {
    /// A model `GET /v1/models` lists (`turnstile-` and the plugin's name); another is 404
    /// `model_not_found`.
    #[schema(min_length = 1, pattern = r"\S")]
    pub model: String,
    /// The conversation, oldest first; the last message is the user's question (1 to 500
    /// characters, not blank; else 400). At most 257 messages.
    #[schema(min_items = 1, max_items = 257)]
    pub messages: Vec<ChatMessageBody>,
    /// Stream the answer as server-sent events (`chat.completion.chunk`s, then `[DONE]`).
    #[schema(default = false)]
    pub stream: Option<bool>,
    /// With `stream`: `{"include_usage": true}` adds a last chunk with the model's `usage`.
    pub stream_options: Option<StreamOptionsBody>,
    /// The most tokens the answer may have (deprecated by OpenAI for `max_completion_tokens`).
    #[schema(minimum = 1)]
    pub max_tokens: Option<u32>,
    /// The most tokens the answer may have (wins over `max_tokens`).
    #[schema(minimum = 1)]
    pub max_completion_tokens: Option<u32>,
    /// Sampling temperature, 0 to 2.
    #[schema(minimum = 0, maximum = 2)]
    pub temperature: Option<f64>,
    /// Up to 4 sequences where the model stops: a string or a list of strings.
    #[schema(value_type = Option<Object>)]
    pub stop: Option<serde_json::Value>,
    /// The end user, as the client names them (at most 256 bytes).
    #[schema(max_length = 256)]
    pub user: Option<String>,
    /// How many answers: only 1.
    #[schema(minimum = 1, maximum = 1)]
    pub n: Option<u32>,
}

/// One message of a chat request.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatMessageBody {
    /// `system`, `developer`, `user` or `assistant`.
    pub role: String,
    /// Text, or a list of text parts (`{"type": "text", "text": …}`); at most 32 KiB.
    #[schema(value_type = Option<Object>)]
    pub content: Option<serde_json::Value>,
}

/// A chat request's `stream_options`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StreamOptionsBody {
    /// Add a last chunk with `usage` and no choices.
    pub include_usage: Option<bool>,
}

/// `chat.completion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum ChatCompletionObject {
    /// The only value.
    #[serde(rename = "chat.completion")]
    ChatCompletion,
}

/// `chat.completion.chunk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum ChatChunkObject {
    /// The only value.
    #[serde(rename = "chat.completion.chunk")]
    ChatCompletionChunk,
}

/// Why an answer ended, in OpenAI's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReasonBody {
    /// The model finished (or, with no model, the sources are the answer).
    Stop,
    /// Cut at the token bound.
    Length,
    /// Withheld by the model's filter.
    ContentFilter,
}

/// The model's token counts, passed through from the upstream the plugin asked.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct UsageBody {
    /// Tokens of the prompt.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

/// `assistant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssistantRole {
    /// The only value.
    Assistant,
}

/// The answer's message.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssistantMessageBody {
    /// Always `assistant`.
    pub role: AssistantRole,
    /// The answer: the plugin's, or — when a plugin gives none — its sources, listed.
    pub content: String,
}

/// The one choice of a chat completion.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChoiceBody {
    /// Always 0.
    pub index: u32,
    /// The answer.
    pub message: AssistantMessageBody,
    /// Why it ended.
    pub finish_reason: FinishReasonBody,
    /// Always null: no log probabilities.
    #[schema(value_type = Option<Object>)]
    pub logprobs: Option<()>,
}

/// 200: a chat completion, with the sources it was built on.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatCompletionBody {
    /// `chatcmpl-…`, unique to the request.
    pub id: String,
    /// Always `chat.completion`.
    pub object: ChatCompletionObject,
    /// Unix seconds.
    pub created: u64,
    /// The model asked for.
    pub model: String,
    /// One choice.
    pub choices: Vec<ChoiceBody>,
    /// The model's token counts, when the plugin passed them on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageBody>,
    /// The sources the answer was built on, best first (as `/retrieve` gives them).
    pub sources: Vec<SourceBody>,
    /// Process-unique request id (also `x-request-id`).
    pub request_id: u64,
}

/// A streamed chunk's delta: the role first, then the content as it comes.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct DeltaBody {
    /// `assistant`, in the first chunk only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<AssistantRole>,
    /// The next piece of the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// A streamed chunk's choice.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChunkChoiceBody {
    /// Always 0.
    pub index: u32,
    /// What this chunk adds.
    pub delta: DeltaBody,
    /// Set in the last chunk of the answer.
    pub finish_reason: Option<FinishReasonBody>,
}

/// One `data:` event of a stream: a `chat.completion.chunk`. The first carries the role and —
/// as early as the plugin tells them — the `sources`; a later one carries `sources` again only
/// if they changed; with `stream_options.include_usage` the last one before `[DONE]` carries
/// `usage` and no choices.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatChunkBody {
    /// The same for every chunk of a stream.
    pub id: String,
    /// Always `chat.completion.chunk`.
    pub object: ChatChunkObject,
    /// Unix seconds (the same for every chunk).
    pub created: u64,
    /// The model asked for.
    pub model: String,
    /// One choice, or none (the usage chunk).
    pub choices: Vec<ChunkChoiceBody>,
    /// The sources, best first, when this chunk tells them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<SourceBody>>,
    /// With `include_usage`: null in every chunk but the last, which has the counts (null when
    /// the plugin passed none on).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<UsageBody>)]
    pub usage: Option<Option<UsageBody>>,
}

/// `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListObject {
    /// The only value.
    List,
}

/// `model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModelObject {
    /// The only value.
    Model,
}

/// One model served: the plugin serving now.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelBody {
    /// `turnstile-` and the plugin's name (e.g. `turnstile-rag`): what a request names.
    pub id: String,
    /// Always `model`.
    pub object: ModelObject,
    /// Unix seconds when this plugin generation began serving.
    pub created: u64,
    /// Always `turnstile`.
    pub owned_by: String,
}

/// 200: the models served.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelListBody {
    /// Always `list`.
    pub object: ListObject,
    /// The models: one, the plugin serving now.
    pub data: Vec<ModelBody>,
}

/// An error's kind, in OpenAI's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpenAiErrorType {
    /// The request is wrong (400, 404, 405, 408, 413, 415).
    InvalidRequestError,
    /// 429: the wait queue is full.
    RateLimitError,
    /// 503 (no slot in time, the model's backend refused) and 500.
    ServerError,
    /// 502: the model's backend failed the answer.
    UpstreamError,
    /// 403: refused for where the request comes from.
    PermissionError,
}

/// What went wrong.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiErrorDetail {
    /// For a person.
    pub message: String,
    /// The kind of error.
    #[serde(rename = "type")]
    pub kind: OpenAiErrorType,
    /// The request field at fault (`messages[2].content`), when one is.
    pub param: Option<String>,
    /// Machine-readable: turnstile's code (`queue_full`, `wait_timeout`, `model_not_found`,
    /// `upstream_auth_failed`, …).
    pub code: String,
}

/// Every error of the `/v1` routes — and, in a stream that had begun, its last `data:` event
/// before the stream ends. A 502 or 503 of a call that found sources keeps them.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiErrorBody {
    /// What went wrong.
    pub error: OpenAiErrorDetail,
    /// The sources the call found before its answer failed, when it found any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<SourceBody>>,
    /// Matches the server log's lines about this request (absent for a refusal at the edge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<u64>,
}
