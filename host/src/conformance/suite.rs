//! The checks themselves. Each produces one [`Check`]: what was expected, what happened, time.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::probes;
use crate::capabilities::{CapabilityOptions, LimitsOptions, Reports};
use crate::{
    Plugin, PluginError, PluginGiven, PluginRuntime, PluginSource, Provision, RuntimeOptions,
    Source, contract,
};
use turnstile_corpus::{CorpusIndex, CorpusPool, read_corpus};

/// The default latency bound of one plugin call in conformance work (`turnstile check`, a swap's
/// smoke checks): a call still running past it fails with `timeout`. Generous for a retrieval
/// plugin (the default plugin answers in a few milliseconds), short enough that a hung
/// candidate is refused quickly.
pub const CALL_DEADLINE: Duration = Duration::from_secs(2);

/// How much of the suite to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subset {
    /// Everything.
    Full,
    /// The contract, two probes, determinism, two adversarial questions, hygiene: what a hot
    /// swap requires before a candidate may serve. Every call is bounded by the conformance
    /// runtime's call deadline.
    Smoke,
}

/// One check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// e.g. `contract.imports`, `behaviour.probe.1`.
    pub name: String,
    /// It passed.
    pub passed: bool,
    /// What the contract expects.
    pub expected: String,
    /// What happened.
    pub observed: String,
    /// Time taken, in milliseconds.
    pub ms: f64,
}

/// The whole suite's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The component checked.
    pub plugin: String,
    /// Its sha256.
    pub sha256: String,
    /// Every check, in order.
    pub checks: Vec<Check>,
    /// How many passed.
    pub passed: usize,
    /// How many failed.
    pub failed: usize,
    /// Every import of the component, with what it is granted (`null`: refused).
    pub imports: Vec<contract::Grant>,
}

struct Suite {
    checks: Vec<Check>,
    imports: Vec<contract::Grant>,
    /// Stop at the first failure (a swap's smoke checks: one failure refuses the candidate, and
    /// a hung candidate should cost one call deadline, not one per check).
    fail_fast: bool,
}

impl Suite {
    /// Whether the run should stop here.
    fn stopped(&self) -> bool {
        self.fail_fast && self.checks.iter().any(|c| !c.passed)
    }

    fn record(
        &mut self,
        name: impl Into<String>,
        expected: &str,
        started: Instant,
        outcome: Result<String, String>,
    ) {
        let (passed, observed) = match outcome {
            Ok(o) => (true, o),
            Err(o) => (false, o),
        };
        self.checks.push(Check {
            name: name.into(),
            passed,
            expected: expected.to_owned(),
            observed,
            ms: started.elapsed().as_secs_f64() * 1e3,
        });
    }
}

/// What a probe answer looked like. The answer has passed the host's own checks of what the
/// contract promises (at most `limit` sources, ids of the corpus, finite best-first scores,
/// bounded titles and snippets): the same rules serving applies, so `check` and serving agree.
fn summary(sources: &[Source]) -> Result<String, String> {
    let ids: Vec<&str> = sources.iter().map(|s| s.id.as_str()).take(3).collect();
    Ok(format!("{} sources, top {:?}", sources.len(), ids))
}

/// What a suite run is given besides the component: the operator's settings for it and where
/// its corpus index and compiled artifacts go.
#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// What the plugin is given: settings, secrets, the origins it is granted (listed; every
    /// request is still denied: a check costs no model call).
    pub given: PluginGiven,
    /// Per-instance memory cap, in bytes.
    pub memory_limit: usize,
    /// Where the shipped corpus's index is kept.
    pub index_dir: std::path::PathBuf,
    /// The precompiled cache (`None`: compiled every time).
    pub precompiled: Option<std::path::PathBuf>,
    /// Each call's deadline.
    pub call_deadline: Duration,
    /// How much of the suite.
    pub subset: Subset,
}

/// Runs the suite against the component at `path`, over the shipped corpus.
pub fn run_suite(path: &Path, options: SuiteOptions) -> anyhow::Result<Report> {
    let SuiteOptions {
        given,
        memory_limit,
        index_dir,
        precompiled,
        call_deadline,
        subset,
    } = options;
    let bytes =
        std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let corpus = read_corpus(None)?;
    let index = CorpusIndex::open_or_build(&corpus, &index_dir)?;
    let pool = CorpusPool::new(&index, 4)?;
    let capabilities = CapabilityOptions {
        limits: LimitsOptions { memory_limit },
        ..CapabilityOptions::default()
    };
    // Four instances: the suite's concurrency probes run calls side by side.
    let options = RuntimeOptions::conformance(call_deadline, capabilities)
        .with_instances(4)
        .with_cache(precompiled);
    let runtime = PluginRuntime::new(options)?;
    let mut suite = Suite {
        checks: Vec::new(),
        imports: Vec::new(),
        fail_fast: false,
    };
    // Behaviour is only checked on a component that fits the contract.
    let given = Provision::of(pool, &given);
    if let Some(plugin) = check_contract(path, &bytes, given, &runtime, &mut suite) {
        check_behaviour(&Arc::new(plugin), subset, &mut suite);
    }
    Ok(report(path, sha256, suite))
}

fn report(path: &Path, sha256: String, suite: Suite) -> Report {
    let passed = suite.checks.iter().filter(|c| c.passed).count();
    Report {
        plugin: path.display().to_string(),
        sha256,
        failed: suite.checks.len() - passed,
        passed,
        checks: suite.checks,
        imports: suite.imports,
    }
}

/// The smoke subset's behaviour and hygiene checks on an already loaded plugin (a hot swap
/// runs them on its candidate before installing it).
pub fn smoke(plugin: &Arc<Plugin>) -> Vec<Check> {
    let mut suite = Suite {
        checks: Vec::new(),
        imports: Vec::new(),
        fail_fast: true,
    };
    check_behaviour(plugin, Subset::Smoke, &mut suite);
    suite.checks
}

fn check_contract(
    path: &Path,
    bytes: &[u8],
    given: Provision,
    runtime: &PluginRuntime,
    suite: &mut Suite,
) -> Option<Plugin> {
    let name = path.display().to_string();
    let started = Instant::now();
    let sha256 = hex::encode(Sha256::digest(bytes));
    let component = runtime.compile(&name, bytes, &sha256);
    suite.record(
        "contract.component",
        "a WebAssembly component",
        started,
        component
            .as_ref()
            .map(|_| "compiled".to_owned())
            .map_err(|e| format!("{e:#}")),
    );
    let Ok(component) = component else {
        return None;
    };
    let started = Instant::now();
    let imports = contract::imports(&component, runtime.engine());
    let versions: Vec<&str> = imports
        .iter()
        .filter(|i| i.starts_with(contract::CONTRACT_PACKAGE))
        .filter_map(|i| i.split_once('@').map(|(_, v)| v))
        .collect();
    let unsupported: Vec<&&str> = versions
        .iter()
        .filter(|v| !contract::SUPPORTED_VERSIONS.contains(v))
        .collect();
    suite.record(
        "contract.version",
        &format!(
            "{}@{}",
            contract::CONTRACT_PACKAGE,
            contract::SUPPORTED_VERSIONS.join("|")
        ),
        started,
        if unsupported.is_empty() {
            Ok(format!(
                "{:?}",
                versions.first().copied().unwrap_or("no contract imports")
            ))
        } else {
            Err(format!(
                "built against unsupported version(s) {unsupported:?}"
            ))
        },
    );
    let started = Instant::now();
    suite.imports = contract::grants(&component, runtime.engine());
    let nothing = suite
        .imports
        .iter()
        .filter(|g| g.granted.is_some_and(|g| g.starts_with("nothing")))
        .count();
    suite.record(
        "contract.imports",
        "only the contract's interfaces and WASI 0.2 (which grants no files, network or environment)",
        started,
        contract::check(&name, &component, runtime.engine())
            .map(|()| {
                format!(
                    "{} imports, all allowed ({nothing} of them linked granting nothing)",
                    imports.len()
                )
            })
            .map_err(|e| e.to_string()),
    );
    let started = Instant::now();
    let plugin = Plugin::link(
        runtime,
        PluginSource::File(path.to_owned()).name(),
        bytes.into(),
        sha256,
        &component,
        given,
    );
    suite.record(
        "contract.world",
        "exports retrieve(question, limit) of world retrieval-plugin, types match",
        started,
        plugin
            .as_ref()
            .map(|_| "linked".to_owned())
            .map_err(|e| e.to_string()),
    );
    plugin.ok()
}

fn describe(result: &Result<Vec<Source>, PluginError>) -> String {
    match result {
        Ok(s) => format!("{} sources", s.len()),
        // A trap's message says what trapped on its first line; a backtrace follows. What the
        // plugin wrote to stderr before it (a language runtime's traceback) is shown too.
        Err(e @ PluginError::Trap(trap)) => {
            let cause = e.trap_cause().unwrap_or_default();
            let cause = cause.lines().next().unwrap_or("").trim().to_owned();
            match trap
                .to_string()
                .strip_prefix("the plugin wrote to stderr: ")
            {
                Some(stderr) => format!(
                    "trapped: {cause}; the plugin wrote to stderr: {}",
                    crate::sanitize(stderr, 600)
                ),
                None => format!("trapped: {cause}"),
            }
        }
        Err(e) => {
            let mut text = e.to_string();
            text.truncate(200);
            text
        }
    }
}

fn check_behaviour(plugin: &Arc<Plugin>, subset: Subset, suite: &mut Suite) {
    let (questions, adversarial) = match subset {
        Subset::Full => (probes::QUESTIONS.len(), usize::MAX),
        Subset::Smoke => (2, 2),
    };
    let mut used = Reports::default();
    let mut call = |question: &str, limit: u32| {
        let (result, stats) = plugin.retrieve_bounded(question, limit);
        used.absorb(&stats.used);
        result
    };
    for (i, question) in probes::QUESTIONS.iter().take(questions).enumerate() {
        let started = Instant::now();
        let outcome = match call(question, 5) {
            Ok(sources) => summary(&sources),
            Err(e) => Err(describe(&Err(e))),
        };
        suite.record(
            format!("behaviour.probe.{}", i + 1),
            "a result: ≤ limit, ids in the corpus, finite best-first scores",
            started,
            outcome,
        );
        if suite.stopped() {
            return;
        }
    }
    let started = Instant::now();
    let first = call(probes::QUESTIONS[0], 5);
    let second = call(probes::QUESTIONS[0], 5);
    let same = match (&first, &second) {
        (Ok(a), Ok(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.id == y.id && x.score == y.score)
        }
        _ => false,
    };
    suite.record(
        "behaviour.deterministic",
        "the same question twice gives the same answer",
        started,
        if same {
            Ok(describe(&first))
        } else {
            Err(format!("{} vs {}", describe(&first), describe(&second)))
        },
    );
    if suite.stopped() {
        return;
    }
    if subset == Subset::Full {
        for limit in [1u32, 20] {
            let started = Instant::now();
            let outcome = match call(probes::QUESTIONS[1], limit) {
                Ok(sources) => summary(&sources),
                Err(e) => Err(describe(&Err(e))),
            };
            suite.record(
                format!("behaviour.limit.{limit}"),
                &format!("at most {limit} sources"),
                started,
                outcome,
            );
        }
    }
    for (name, question) in probes::adversarial().into_iter().take(adversarial) {
        let started = Instant::now();
        let result = call(&question, 5);
        let outcome = match &result {
            Ok(sources) => summary(sources),
            Err(PluginError::Guest(_)) => Ok(format!("typed error: {}", describe(&result))),
            Err(_) => Err(describe(&result)),
        };
        suite.record(
            format!("behaviour.adversarial.{name}"),
            "a result or a typed error, never a trap",
            started,
            outcome,
        );
        if suite.stopped() {
            return;
        }
    }
    // No check of open corpus sessions: they live in the call's store, which the host drops
    // when the call ends, so a plugin cannot leak one and such a check could never fail.
    // Each capability checks what it promises, over what every call above used.
    for probe in plugin.probes(&used) {
        let started = Instant::now();
        suite.record(probe.name, &probe.expected, started, probe.outcome);
        if suite.stopped() {
            return;
        }
    }
}
