//! The flags that name a remote embedding model, one group for every command that embeds
//! (`serve`, `eval`): their defaults are [`RemoteOptions::new`]'s, written nowhere else.

use std::time::Duration;

use super::remote::{MAX_BATCH, MAX_DIMENSIONS, RemoteOptions};

/// Flags of a remote embedding model (flattened into a command's arguments).
#[derive(Debug, Clone, clap::Args)]
pub struct EmbeddingsArgs {
    /// An OpenAI-compatible embeddings server (`POST URL/v1/embeddings`: OpenAI, Hugging Face
    /// text-embeddings-inference, Ollama, vLLM) whose model embeds the corpus (when its index
    /// is built) and the questions (`embeddings.embed`, during a call, under its lease), instead
    /// of the built-in static model. Naming it is its grant: the host reaches it, no plugin
    /// does; a credential bound to its origin (`--outbound-bearer ORIGIN=...`) is added by the
    /// host. Each model's passage vectors are kept in the cache: a rebuild embeds only passages
    /// it has not seen, and an interrupted build resumes.
    #[arg(long = "embeddings", value_name = "URL", requires = "embeddings_model")]
    pub embeddings: Option<String>,

    /// The model the embeddings server is asked for (with --embeddings), e.g.
    /// `text-embedding-3-small`, `BAAI/bge-small-en-v1.5`, `nomic-embed-text`.
    #[arg(
        long = "embeddings-model",
        value_name = "NAME",
        requires = "embeddings"
    )]
    pub embeddings_model: Option<String>,

    /// Dimensions asked of the model (1..=8192), sent as `dimensions` in the request, for a model
    /// that can shorten its vectors; without it, the model's own, learnt from its first answer.
    #[arg(long = "embeddings-dimensions", value_name = "N", requires = "embeddings",
          value_parser = clap::value_parser!(u32).range(1..=MAX_DIMENSIONS as i64))]
    pub embeddings_dimensions: Option<u32>,

    /// Passages per request when a corpus index is built through the model (1..=2048).
    #[arg(long = "embeddings-batch", value_name = "N", default_value_t = RemoteOptions::new("", "").batch as u32,
          value_parser = clap::value_parser!(u32).range(1..=MAX_BATCH as i64))]
    pub embeddings_batch: u32,

    /// Requests in flight at once to the embeddings server when an index is built (1..=64):
    /// the build's own limit in front of the server.
    #[arg(long = "embeddings-in-flight", value_name = "N", default_value_t = RemoteOptions::new("", "").in_flight as u32,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub embeddings_in_flight: u32,

    /// Longest one request to the embeddings server may take, in milliseconds (1..=600000).
    #[arg(long = "embeddings-timeout-ms", value_name = "MS", default_value_t = RemoteOptions::new("", "").timeout.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub embeddings_timeout_ms: u64,

    /// Retries of one batch of an index build after a 408, 429, 5xx, a timeout or no
    /// connection (0..=30), with backoff from 250 ms doubling to 30 s, or the server's
    /// `Retry-After` when longer (at most 120 s). A question is never retried: its call waits.
    #[arg(long = "embeddings-retries", value_name = "N", default_value_t = RemoteOptions::new("", "").retries,
          value_parser = clap::value_parser!(u32).range(0..=30))]
    pub embeddings_retries: u32,

    /// Question vectors kept, most recently used (0..=1000000), 0 for none: a question asked
    /// again costs no request.
    #[arg(long = "embeddings-question-cache", value_name = "N", default_value_t = RemoteOptions::new("", "").question_cache as u32,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub embeddings_question_cache: u32,
}

impl EmbeddingsArgs {
    /// The remote model's settings, if the flags name one (`headers`: the credential bound to
    /// its origin, if any).
    pub fn options(&self, headers: Vec<(String, String)>) -> Option<RemoteOptions> {
        let url = self.embeddings.as_ref()?;
        let mut options =
            RemoteOptions::new(url, self.embeddings_model.clone().unwrap_or_default());
        options.dimensions = self.embeddings_dimensions.map(|d| d as usize);
        options.headers = headers;
        options.batch = self.embeddings_batch as usize;
        options.in_flight = self.embeddings_in_flight as usize;
        options.timeout = Duration::from_millis(self.embeddings_timeout_ms);
        options.retries = self.embeddings_retries;
        options.question_cache = self.embeddings_question_cache as usize;
        Some(options)
    }
}
