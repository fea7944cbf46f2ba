//! `turnstile check PLUGIN.wasm`: its flags, and running the full conformance suite
//! (`turnstile_host::conformance`) with a report as lines or JSON.

use std::path::PathBuf;

use clap::Args;
use turnstile_host::DEFAULT_MEMORY_LIMIT;
use turnstile_host::cache::Cache;
use turnstile_host::conformance::{CALL_DEADLINE, Subset, SuiteOptions, run_suite};

use super::report::lines;

/// Flags of `turnstile check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// The component to check.
    pub plugin: PathBuf,

    /// Print a machine-readable JSON report instead of lines.
    #[arg(long)]
    pub json: bool,

    /// What the plugin is given, as `serve` gives it (`--plugin-config`, `--plugin-secret`,
    /// `--outbound-allow`, …): the report lists the grants and proves a request to any other
    /// origin is refused. Nothing is sent during a check: every request is denied.
    #[command(flatten)]
    pub given: turnstile_host::PluginArgs,

    /// Longest a single call of the plugin may take, in milliseconds (1..=60000); a call still
    /// running then is stopped and fails its check with `timeout`.
    #[arg(long = "call-deadline-ms", default_value_t = CALL_DEADLINE.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub call_deadline_ms: u64,

    /// Directory for the corpus index (default: `$XDG_CACHE_HOME/turnstile` or
    /// `~/.cache/turnstile`).
    #[arg(long = "cache-dir", env = "TURNSTILE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,

    /// Per-instance memory cap in MiB.
    #[arg(long = "memory-limit-mib", default_value_t = (DEFAULT_MEMORY_LIMIT >> 20) as u32,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub memory_limit_mib: u32,
}

/// Runs the full suite; prints lines or JSON; returns whether every check passed.
pub fn run(args: &CheckArgs) -> anyhow::Result<bool> {
    let settings = args.given.read(&|var| std::env::var(var).ok(), &[])?;
    let cache = Cache::open(args.cache_dir.as_deref())?;
    let options = SuiteOptions {
        given: settings.given,
        memory_limit: args.memory_limit_mib as usize * 1024 * 1024,
        index_dir: cache.index_dir(),
        precompiled: cache.plugins_dir(),
        call_deadline: std::time::Duration::from_millis(args.call_deadline_ms),
        subset: Subset::Full,
    };
    let report = run_suite(&args.plugin, options)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", lines(&report));
    }
    Ok(report.failed == 0)
}
