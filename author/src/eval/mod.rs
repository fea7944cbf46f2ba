//! `turnstile eval`: a question set through a plugin, in process, scored — recall@1, recall@5,
//! MRR@10, nDCG@10, the misses and the per-question latency; `--compare` puts a second plugin
//! beside it. Plugin authors get a quality number as easily as a conformance verdict.
//!
//! The question file is JSON Lines, one `{"q": "...", "expect": ["id", ...]}` per line (the
//! format of the public dev set); ids are matched with its rule ([`score::acceptable`]).

mod command;
mod questions;
mod report;
pub mod score;

pub use command::{EvalArgs, evaluate, run, runtime, runtime_bounded};
pub use questions::{MAX_QUESTIONS, Question, read_questions};
pub use report::{Latency, PluginReport, QuestionAnswer, Report, text};
