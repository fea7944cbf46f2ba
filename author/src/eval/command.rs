//! `turnstile eval`: its flags, and running a question set through one or two plugins in process.

use std::path::PathBuf;
use std::time::Instant;

use turnstile_corpus::{CorpusIndex, CorpusPool, EmbeddingModel, RemoteModel, read_corpus};

use super::questions::{Question, read_questions};
use super::report::{Latency, PluginReport, QuestionAnswer, Report, text};
use super::score::{Means, Scores};
use turnstile_host::cache::Cache;
use turnstile_host::{
    CapabilityOptions, Plugin, PluginError, PluginRuntime, PluginSource, Provision, RuntimeOptions,
};

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

    /// Corpus JSON Lines file (default: the embedded corpus).
    #[arg(long)]
    pub corpus: Option<PathBuf>,

    /// What the plugins are given, as `serve` gives it (`--plugin-config`, `--plugin-secret`,
    /// `--outbound-allow`, `--outbound-bearer`, `--outbound-ca-file`, the bounds): a plugin that
    /// asks a model is evaluated with it.
    #[command(flatten)]
    pub given: turnstile_host::PluginArgs,

    /// Directory for the corpus index (default: `$XDG_CACHE_HOME/turnstile` or
    /// `~/.cache/turnstile`).
    #[arg(long = "cache-dir", env = "TURNSTILE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,

    /// The embedding model, when not the built-in one (`--embeddings URL`), as `serve`'s: the
    /// corpus index is built through it (its passage cache shared with `serve`'s when the cache
    /// directory is), and the questions embedded by it.
    #[command(flatten)]
    pub embeddings: turnstile_embed::EmbeddingsArgs,
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

/// The runtime plugins are evaluated on: one instance at a time, the serving defaults (the
/// default memory cap, no call deadline), with the precompiled cache in `precompiled` (`None`: compiled every time).
pub fn runtime(precompiled: Option<PathBuf>) -> Result<PluginRuntime, PluginError> {
    runtime_bounded(precompiled, CapabilityOptions::default())
}

/// The same, its capabilities under `capabilities` (their flags' options: the outbound bounds
/// and trusted CAs).
pub fn runtime_bounded(
    precompiled: Option<PathBuf>,
    capabilities: CapabilityOptions,
) -> Result<PluginRuntime, PluginError> {
    PluginRuntime::new(RuntimeOptions::evaluation(capabilities).with_cache(precompiled))
}

/// Evaluates the plugin (and the `--compare` one) over the question file.
pub fn evaluate(args: &EvalArgs) -> anyhow::Result<Report> {
    let questions = read_questions(&args.questions)?;
    let settings = args.given.read(&|var| std::env::var(var).ok(), &[])?;
    let cache = Cache::open(args.cache_dir.as_deref())?;
    let model = match args.embeddings.options(Vec::new()) {
        None => EmbeddingModel::Shipped,
        Some(options) => EmbeddingModel::Remote(std::sync::Arc::new(
            RemoteModel::connect(options).map_err(|e| anyhow::anyhow!("--embeddings: {e}"))?,
        )),
    };
    let corpus = read_corpus(args.corpus.as_deref())?;
    let sha256 = turnstile_host::sha256_hex(&corpus.jsonl);
    let index = CorpusIndex::open_or_build_hashed(&corpus, sha256, &cache.index_dir(), &model)?;
    let runtime = runtime_bounded(cache.plugins_dir(), settings.capabilities.clone())?;
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
        let given = Provision::of(pool, &settings.given);
        let plugin = Plugin::load(&runtime, &source, given)
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
        answers.push(QuestionAnswer {
            scores: super::score::score(&ids, &question.expect),
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
