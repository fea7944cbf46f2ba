//! `turnstile load`'s flags.

use std::path::PathBuf;

use clap::Args;

use super::bounds::{self, DEFAULT_BODY};

/// Flags of `turnstile load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// URL to POST to (http:// only), e.g. http://127.0.0.1:8080/retrieve. With --chat: the chat
    /// route (`…/v1/chat/completions`), its base (`…/v1`) or the server's root.
    #[arg(long, value_name = "URL", value_parser = bounds::url)]
    pub url: String,

    /// Concurrent users, 1..=10000; each sends its next request as soon as the last one ends.
    #[arg(long, value_name = "N", value_parser = bounds::users, allow_negative_numbers = true)]
    pub users: u32,

    /// Users started per second (more than 0, at most 10000); user i starts at i / RATE seconds.
    #[arg(long = "spawn-rate", value_name = "RATE", default_value = "1", value_parser = bounds::spawn_rate, allow_negative_numbers = true)]
    pub spawn_rate: f64,

    /// Total run time in seconds, ramp-up included (more than 0, at most 86400).
    #[arg(long, value_name = "SECONDS", value_parser = bounds::duration, allow_negative_numbers = true)]
    pub duration: f64,

    /// JSON body of every request (sent as is, with content-type application/json).
    #[arg(long, value_name = "JSON", default_value = DEFAULT_BODY, value_parser = bounds::body)]
    pub body: String,

    /// A question mix instead of `--body`: a file of JSON bodies, one per line (each sent as is,
    /// e.g. `{"question": "...", "limit": 5}`; blank lines skipped; at most 100,000 lines). The
    /// users take them in turn: request n of the run sends line n modulo their number.
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "body")]
    pub bodies: Option<PathBuf>,

    /// A header sent with every request, `NAME: VALUE` (repeatable, at most 16), e.g. a flow's
    /// name: `--header 'x-tenant: batch'`.
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = bounds::header)]
    pub header: Vec<String>,

    /// Speak OpenAI's Chat Completions: each request is a chat request to `--url`'s
    /// `/v1/chat/completions` whose one user message is `--question` and a tag `req:ID` unique
    /// in the run; each request's timings go to DIR/requests.jsonl.
    #[arg(long, conflicts_with_all = ["body", "bodies"])]
    pub chat: bool,

    /// With --chat: ask for a streamed answer (`"stream": true`) and read its events as they
    /// arrive, timing the first content delta (TTFT).
    #[arg(long, requires = "chat")]
    pub stream: bool,

    /// With --chat: the model to ask for (default: the first `GET /v1/models` lists).
    #[arg(long, value_name = "NAME", requires = "chat", value_parser = bounds::model)]
    pub model: Option<String>,

    /// With --chat: the question (1..=400 characters, not blank; default: the classic demo's).
    #[arg(long, value_name = "TEXT", requires = "chat", value_parser = bounds::question)]
    pub question: Option<String>,

    /// Directory for summary.json, chart.svg and chart.png (created if missing).
    #[arg(long, value_name = "DIR")]
    pub output: PathBuf,

    /// Per-request timeout in seconds, connect to last body byte (more than 0, at most 3600).
    #[arg(long = "timeout-s", value_name = "SECONDS", default_value = "60", value_parser = bounds::timeout, allow_negative_numbers = true)]
    pub timeout_s: f64,

    /// No live progress (the final table is still printed).
    #[arg(long)]
    pub quiet: bool,
}
