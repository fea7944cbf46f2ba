//! `turnstile eval`: a question set through a plugin, in process, scored — recall@1, recall@5,
//! MRR@10, nDCG@10, the misses and the per-question latency; `--compare` puts a second plugin
//! beside it. Plugin authors get a quality number as easily as a conformance verdict.
//!
//! The question file is JSON Lines, one `{"q": "...", "expect": ["id", ...]}` per line (the
//! format of the public dev set); ids are matched with its rule ([`score::acceptable`]).

pub mod score;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::corpus::{CorpusIndex, CorpusPool, read_corpus};
use crate::plugin::{Plugin, PluginRuntime, PluginSource, RuntimeOptions};
use score::{Means, Scores};

/// Most questions in a file.
pub const MAX_QUESTIONS: usize = 100_000;

/// Flags of `turnstile eval`.
#[derive(Debug, Clone, clap::Args)]
pub struct EvalArgs {
    /// Questions, JSON Lines: `{"q": "...", "expect": ["id", ...]}` per line.
    pub questions: PathBuf,

    /// The plugin to evaluate (default: the embedded retrieval plugin).
    #[arg(long)]
    pub plugin: Option<PathBuf>,

    /// A second plugin, shown beside the first: metrics, latency, the questions each gets
    /// that the other misses.
    #[arg(long)]
    pub compare: Option<PathBuf>,

    /// Sources asked per question (1..=20).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub limit: u32,

    /// Print a machine-readable JSON report instead of text.
    #[arg(long)]
    pub json: bool,

    /// A `KEY=VALUE` setting for the plugins' `config` import (repeatable).
    #[arg(long = "plugin-config", value_name = "KEY=VALUE", value_parser = crate::plugin::parse_config_entry)]
    pub plugin_config: Vec<(String, String)>,

    /// Corpus JSON Lines file (default: the embedded corpus).
    #[arg(long)]
    pub corpus: Option<PathBuf>,

    /// Directory for the corpus index (default: `$XDG_CACHE_HOME/turnstile` or
    /// `~/.cache/turnstile`).
    #[arg(long = "cache-dir", env = "TURNSTILE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// One question of the file.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Question {
    /// The question.
    pub q: String,
    /// Acceptable ids.
    pub expect: Vec<String>,
}

/// Reads a question file; an error names the line.
pub fn read_questions(path: &Path) -> anyhow::Result<Vec<Question>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut questions = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let question: Question = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{} line {}: expected {{\"q\": \"...\", \"expect\": [\"id\", ...]}}: {e}",
                path.display(),
                i + 1
            )
        })?;
        if question.expect.is_empty() {
            anyhow::bail!("{} line {}: \"expect\" is empty", path.display(), i + 1);
        }
        questions.push(question);
        if questions.len() > MAX_QUESTIONS {
            anyhow::bail!("{}: more than {MAX_QUESTIONS} questions", path.display());
        }
    }
    if questions.is_empty() {
        anyhow::bail!("{}: no question", path.display());
    }
    Ok(questions)
}

/// How one question went.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    /// The question.
    pub q: String,
    /// Its acceptable ids.
    pub expect: Vec<String>,
    /// The ids returned, best first.
    pub ids: Vec<String>,
    /// The plugin's error, if the call failed (scored as a miss).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its scores.
    pub scores: Scores,
    /// The call's time, in milliseconds (a fresh instance included).
    pub ms: f64,
}

/// Latency over the questions, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean.
    pub mean: f64,
}

/// One plugin's result.
#[derive(Debug, Clone, Serialize)]
pub struct PluginReport {
    /// The plugin (`retrieval` for the embedded one, else its path).
    pub plugin: String,
    /// sha256 of the component.
    pub sha256: String,
    /// Mean scores.
    pub metrics: Means,
    /// Per-question call time.
    pub latency_ms: Latency,
    /// Calls that failed.
    pub errors: usize,
    /// Every question.
    pub answers: Vec<Answer>,
}

impl PluginReport {
    /// Questions with no acceptable id in the top 5.
    pub fn misses(&self) -> impl Iterator<Item = &Answer> {
        self.answers.iter().filter(|a| a.scores.recall_at_5 == 0.0)
    }
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The question file.
    pub questions_file: String,
    /// Questions scored.
    pub questions: usize,
    /// Sources asked per question.
    pub limit: u32,
    /// The plugin, then the `--compare` one.
    pub plugins: Vec<PluginReport>,
}

/// Runs `turnstile eval`; prints text or JSON. Always succeeds when the question set could be
/// run: a score is a measurement, not a verdict.
pub fn run(args: &EvalArgs) -> anyhow::Result<bool> {
    let report = evaluate(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", text(&report));
    }
    Ok(true)
}

/// The runtime plugins are evaluated on: one instance at a time, the serving defaults (64 MiB,
/// no call deadline), compiled here rather than from a cache.
pub fn runtime() -> Result<PluginRuntime, crate::plugin::PluginError> {
    PluginRuntime::new(RuntimeOptions {
        memory_limit: 64 * 1024 * 1024,
        max_instances: 1,
        cache_dir: None,
        pooling: false,
        call_deadline: None,
        host_metrics: None,
    })
}

/// Evaluates the plugin (and the `--compare` one) over the question file.
pub fn evaluate(args: &EvalArgs) -> anyhow::Result<Report> {
    let questions = read_questions(&args.questions)?;
    let config = crate::plugin::plugin_config(args.plugin_config.iter().cloned())
        .map_err(|e| anyhow::anyhow!("--plugin-config: {e}"))?;
    let cache = crate::cache::Cache::open(args.cache_dir.as_deref())?;
    let corpus = read_corpus(args.corpus.as_deref())?;
    let index = CorpusIndex::open_or_build(&corpus, &cache.index_dir())?;
    let runtime = runtime()?;
    let mut plugins = vec![match &args.plugin {
        Some(path) => PluginSource::File(path.clone()),
        None => PluginSource::Embedded,
    }];
    if let Some(other) = &args.compare {
        plugins.push(PluginSource::File(other.clone()));
    }
    let mut reports = Vec::new();
    for source in plugins {
        let pool = CorpusPool::new(&index, 4)?;
        let plugin = Plugin::load(&runtime, &source, config.clone(), pool)
            .map_err(|e| anyhow::anyhow!("loading the plugin: {e}"))?;
        reports.push(evaluate_plugin(&plugin, &source, &questions, args.limit));
    }
    Ok(Report {
        questions_file: args.questions.display().to_string(),
        questions: questions.len(),
        limit: args.limit,
        plugins: reports,
    })
}

fn evaluate_plugin(
    plugin: &Plugin,
    source: &PluginSource,
    questions: &[Question],
    limit: u32,
) -> PluginReport {
    let mut answers = Vec::with_capacity(questions.len());
    for (i, question) in questions.iter().enumerate() {
        let started = Instant::now();
        let result = plugin.retrieve(&question.q, limit, i as u64 + 1);
        let took = started.elapsed();
        let (ids, error) = match result {
            Ok(sources) => (sources.into_iter().map(|s| s.id).collect(), None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        answers.push(Answer {
            scores: score::score(&ids, &question.expect),
            q: question.q.clone(),
            expect: question.expect.clone(),
            ids,
            error,
            ms: took.as_secs_f64() * 1e3,
        });
    }
    let scores: Vec<Scores> = answers.iter().map(|a| a.scores).collect();
    let mut times: Vec<f64> = answers.iter().map(|a| a.ms).collect();
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    PluginReport {
        plugin: match source {
            PluginSource::Embedded => "retrieval-hybrid (embedded)".to_owned(),
            PluginSource::File(path) => path.display().to_string(),
        },
        sha256: plugin.sha256().to_owned(),
        metrics: Means::of(&scores),
        latency_ms: Latency {
            p50: at(0.5),
            p99: at(0.99),
            mean: answers.iter().map(|a| a.ms).sum::<f64>() / answers.len() as f64,
        },
        errors: answers.iter().filter(|a| a.error.is_some()).count(),
        answers,
    }
}

/// The report as text: metrics (side by side with `--compare`), latency, and the misses.
pub fn text(report: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} questions from {}, limit {}",
        report.questions, report.questions_file, report.limit
    );
    let names: Vec<String> = report
        .plugins
        .iter()
        .map(|p| format!("{} ({}…)", p.plugin, &p.sha256[..12.min(p.sha256.len())]))
        .collect();
    for (i, name) in names.iter().enumerate() {
        let _ = writeln!(out, "  [{}] {name}", (b'A' + i as u8) as char);
    }
    let _ = write!(out, "\n{:<24}", "");
    for i in 0..report.plugins.len() {
        let _ = write!(out, "{:>10}", format!("[{}]", (b'A' + i as u8) as char));
    }
    if report.plugins.len() == 2 {
        let _ = write!(out, "{:>10}", "B - A");
    }
    let _ = writeln!(out);
    type Row = (&'static str, fn(&PluginReport) -> f64, usize);
    let rows: [Row; 8] = [
        ("recall@1", |p| p.metrics.recall_at_1, 3),
        ("recall@5", |p| p.metrics.recall_at_5, 3),
        ("MRR@10", |p| p.metrics.mrr_at_10, 3),
        ("nDCG@10", |p| p.metrics.ndcg_at_10, 3),
        ("latency p50 ms", |p| p.latency_ms.p50, 2),
        ("latency p99 ms", |p| p.latency_ms.p99, 2),
        ("latency mean ms", |p| p.latency_ms.mean, 2),
        ("errors", |p| p.errors as f64, 0),
    ];
    for (name, value, digits) in rows {
        let _ = write!(out, "{name:<24}");
        for p in &report.plugins {
            let _ = write!(out, "{:>10.digits$}", value(p));
        }
        if let [a, b] = report.plugins.as_slice() {
            let _ = write!(out, "{:>+10.digits$}", value(b) - value(a));
        }
        let _ = writeln!(out);
    }
    if let [a, b] = report.plugins.as_slice() {
        let hits = |p: &PluginReport, i: usize| p.answers[i].scores.recall_at_5 > 0.0;
        let fixed: Vec<&str> = (0..a.answers.len())
            .filter(|&i| !hits(a, i) && hits(b, i))
            .map(|i| a.answers[i].q.as_str())
            .collect();
        let broken: Vec<&str> = (0..a.answers.len())
            .filter(|&i| hits(a, i) && !hits(b, i))
            .map(|i| a.answers[i].q.as_str())
            .collect();
        let _ = writeln!(
            out,
            "\nB finds in its top 5 what A misses ({}):",
            fixed.len()
        );
        for q in fixed {
            let _ = writeln!(out, "  + {q}");
        }
        let _ = writeln!(out, "B misses what A finds ({}):", broken.len());
        for q in broken {
            let _ = writeln!(out, "  - {q}");
        }
    } else if let Some(p) = report.plugins.first() {
        let misses: Vec<&Answer> = p.misses().collect();
        let _ = writeln!(
            out,
            "\nmisses: no acceptable id in the top 5 ({}):",
            misses.len()
        );
        for a in misses {
            let top: Vec<&str> = a.ids.iter().take(3).map(String::as_str).collect();
            let _ = writeln!(
                out,
                "  {:?}\n      expected {:?}, got {:?}{}",
                a.q,
                a.expect,
                top,
                a.error
                    .as_deref()
                    .map_or(String::new(), |e| format!(" (error: {e})"))
            );
        }
    }
    out
}
