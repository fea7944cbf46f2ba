//! `turnstile corpus build` without the rest of the CLI (for measuring the builder alone).

use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: turnstile_ingest::BuildArgs,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match turnstile_ingest::build(&cli.args, false) {
        Ok(summary) => {
            println!("{summary}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
