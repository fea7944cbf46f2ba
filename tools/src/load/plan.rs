//! The validated settings of one run. Every flag is checked twice with the same functions: by
//! clap while parsing (so the command line fails before anything starts) and again in
//! `Plan::from_args` (so a [`LoadArgs`] built in code is held to the same rules). Every error
//! names the flag, the value and what is accepted.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::Url;

use super::args::LoadArgs;

use super::bounds::{
    DEFAULT_QUESTION, bodies_file, body_value, check_duration, check_spawn_rate, check_timeout,
    check_users, model, question, url,
};
use super::chat::{completions_url, models_url};
/// A flag whose value is refused.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{flag} {value:?}: {problem}")]
pub struct FlagError {
    /// The flag, e.g. `--users`.
    pub flag: &'static str,
    /// The value given.
    pub value: String,
    /// What is wrong and what is accepted.
    pub problem: String,
}

/// Everything a run needs, checked.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub url: Url,
    pub users: u32,
    pub spawn_rate: f64,
    pub duration: Duration,
    /// What the users send, in turn (one body unless `--bodies`).
    pub bodies: std::sync::Arc<[bytes::Bytes]>,
    pub bodies_file: Option<PathBuf>,
    pub output: PathBuf,
    pub timeout: Duration,
    pub quiet: bool,
    /// Sent with every request.
    pub headers: reqwest::header::HeaderMap,
    /// `--chat`: chat requests instead of `--body`.
    pub chat: Option<ChatPlan>,
}

/// What `--chat` asks.
#[derive(Debug, Clone)]
pub(crate) struct ChatPlan {
    /// The models list beside the route (`…/v1/models`).
    pub models: Url,
    /// `--stream`.
    pub stream: bool,
    /// `--model`, if given.
    pub model: Option<String>,
    /// `--question`, or the default.
    pub question: String,
}

impl Plan {
    /// Checks every flag of `args`.
    pub fn from_args(args: &LoadArgs) -> Result<Self, FlagError> {
        fn flag<T>(
            flag: &'static str,
            value: impl ToString,
            r: Result<T, String>,
        ) -> Result<T, FlagError> {
            r.map_err(|problem| FlagError {
                flag,
                value: value.to_string(),
                problem,
            })
        }
        let url = flag("--url", &args.url, url(&args.url))?;
        let url = flag(
            "--url",
            &args.url,
            Url::parse(&url).map_err(|e| e.to_string()),
        )?;
        let users = flag("--users", args.users, check_users(args.users))?;
        let spawn_rate = flag(
            "--spawn-rate",
            args.spawn_rate,
            check_spawn_rate(args.spawn_rate),
        )?;
        let duration_s = flag("--duration", args.duration, check_duration(args.duration))?;
        let timeout_s = flag("--timeout-s", args.timeout_s, check_timeout(args.timeout_s))?;
        flag("--body", &args.body, body_value(&args.body))?;
        let bodies: Vec<bytes::Bytes> = match &args.bodies {
            None => vec![bytes::Bytes::from(args.body.clone())],
            Some(path) => flag("--bodies", path.display(), bodies_file(path))?,
        };
        if args.output.as_os_str().is_empty() {
            return Err(FlagError {
                flag: "--output",
                value: String::new(),
                problem: "must name a directory".into(),
            });
        }
        if args.header.len() > super::bounds::MAX_HEADERS {
            return Err(FlagError {
                flag: "--header",
                value: args.header.len().to_string(),
                problem: format!("at most {} headers", super::bounds::MAX_HEADERS),
            });
        }
        let chat = if args.chat {
            if args.bodies.is_some() {
                return Err(FlagError {
                    flag: "--bodies",
                    value: args
                        .bodies
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default(),
                    problem: "not with --chat (its body is a chat request)".into(),
                });
            }
            let model = match &args.model {
                Some(m) => Some(flag("--model", m, model(m))?),
                None => None,
            };
            let question = match &args.question {
                Some(q) => flag("--question", q, question(q))?,
                None => DEFAULT_QUESTION.to_owned(),
            };
            Some(ChatPlan {
                models: models_url(&completions_url(&url)),
                stream: args.stream,
                model,
                question,
            })
        } else {
            for (given, name) in [
                (args.stream, "--stream"),
                (args.model.is_some(), "--model"),
                (args.question.is_some(), "--question"),
            ] {
                if given {
                    return Err(FlagError {
                        flag: name,
                        value: String::new(),
                        problem: "only with --chat".into(),
                    });
                }
            }
            None
        };
        let url = if chat.is_some() {
            completions_url(&url)
        } else {
            url
        };
        let mut headers = reqwest::header::HeaderMap::new();
        for h in &args.header {
            let (name, value) = flag("--header", h, super::bounds::header_pair(h))?;
            headers.append(name, value);
        }
        Ok(Self {
            headers,
            url,
            users,
            spawn_rate,
            duration: Duration::from_secs_f64(duration_s),
            bodies: bodies.into(),
            bodies_file: args.bodies.clone(),
            output: args.output.clone(),
            timeout: Duration::from_secs_f64(timeout_s),
            quiet: args.quiet,
            chat,
        })
    }
}
