//! The HTTP API's bodies as types: what the handlers send is built from them, and the OpenAPI
//! document (`super::openapi`) describes exactly these. No handler lives here.

mod admin;
mod chat;
mod errors;
mod live;
mod operations;
mod retrieval;

pub use admin::{
    CorpusGenerationBody, CorpusSwapRequestBody, CorpusSwappedBody, GenerationBody,
    SwapRequestBody, SwapStatus, SwappedBody,
};
pub use chat::{
    AssistantMessageBody, AssistantRole, ChatChunkBody, ChatChunkObject, ChatCompletionBody,
    ChatCompletionObject, ChatMessageBody, ChatRequestBody, ChoiceBody, ChunkChoiceBody, DeltaBody,
    FinishReasonBody, ListObject, ModelBody, ModelListBody, ModelObject, OpenAiErrorBody,
    OpenAiErrorDetail, OpenAiErrorType, StreamOptionsBody, UsageBody,
};
pub use errors::{
    ForbiddenBody, ForbiddenCode, ForbiddenStatus, InternalBody, InternalStatus, InvalidCode,
    InvalidRequestBody, InvalidStatus, RefusalBody, RefusalStatus, RefusingGate,
    RetrieveUnavailable, SwapFailedBody, SwapFailedStatus, SwapRefusal, TooManySubscribersBody,
    TooManySubscribersStatus, UnauthorizedBody, UnauthorizedStatus, UpstreamBody, UpstreamCode,
    UpstreamStatus,
};
pub use live::{EventsBody, LiveBody, LiveSnapshot};
pub use operations::{
    AllocatorBody, ConnectionsBody, CorpusBody, EmbeddingsBackend, EmbeddingsBody, HealthBody,
    HealthStatus, OutboundBody, QuestionCacheBody, ReadyBody, ReadyStatus, StateBody, StuckCall,
};
pub use retrieval::{
    AnswerStatus, CompletedStatus, CorpusRefBody, PluginBody, RetrieveRequestBody,
    RetrieveResponse, SourceBody, Timing,
};
