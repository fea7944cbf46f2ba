//! Running `turnstile drive`: the cases against `serve` children, the report written and summed up.

use std::time::Duration;

use super::args::DriveArgs;
use super::cases;
use super::settings::SETTINGS;

/// Runs every case, writes the report to `--output`, prints a summary, and returns whether
/// everything matched.
pub fn run(args: &DriveArgs) -> anyhow::Result<bool> {
    for (flag, path) in [
        ("--delay-plugin", &args.delay_plugin),
        ("--fault-plugin", &args.fault_plugin),
    ] {
        anyhow::ensure!(
            path.is_file(),
            "{flag} {}: no such file; build the fixtures with `cargo xtask plugins` (run from \
             the repository root) or pass {flag} PATH",
            path.display()
        );
    }
    let binary = match &args.server_binary {
        Some(b) => b.clone(),
        None => std::env::current_exe()?,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let startup_timeout = Duration::from_secs(args.startup_timeout_s);
    let report = runtime.block_on(cases::run_all(&binary, args, SETTINGS, startup_timeout))?;
    let json = serde_json::to_string_pretty(&report)?;
    std::fs::write(&args.output, json + "\n")?;
    print!("{}", report.summary());
    println!("result written to {}", args.output.display());
    Ok(report.passed)
}
