//! The OpenAI-compatible routes: `POST /v1/chat/completions` ([`completions`], whole or
//! streamed by [`stream`]) and `GET /v1/models` ([`models`]), with requests validated as
//! OpenAI documents them ([`request`]) and errors in OpenAI's shape ([`error`]). Admission,
//! the worker and the plugin's call are `/retrieve`'s (`super::call`).

mod answer;
pub(crate) mod completions;
mod error;
pub(crate) mod models;
pub(crate) mod request;
mod stream;
