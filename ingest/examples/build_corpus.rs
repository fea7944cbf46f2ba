//! `turnstile corpus build` without the CLI (which compiles the plugin host): the builder's own
//! entry point, then the seconds it took and the process's peak resident memory (`VmHWM`), to
//! measure a large build in a release build of this crate alone:
//!
//! ```sh
//! cargo run --release -p turnstile-ingest --example build_corpus -- \
//!     /work/data/corpus-1000000.jsonl --out /tmp/million.jsonl
//! ```

use clap::Parser;

/// `corpus build`'s own arguments.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: turnstile_ingest::BuildArgs,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let started = std::time::Instant::now();
    let built = turnstile_ingest::build(&cli.args, true);
    let seconds = started.elapsed().as_secs_f64();
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        })
        .unwrap_or_else(|| "unknown".to_owned());
    match built {
        Ok(summary) => {
            println!("{summary}");
            println!("took {seconds:.1} s, peak resident memory (VmHWM) {peak}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("took {seconds:.1} s, peak resident memory (VmHWM) {peak}");
            std::process::ExitCode::FAILURE
        }
    }
}
