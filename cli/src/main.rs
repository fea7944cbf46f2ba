//! The `turnstile` command: the server (`serve`, `check`, `config check`), its client tools
//! (`drive`, `load`), the corpus builder (`corpus build`), and its own shell completions and
//! man pages (`completions`, `man`) behind one binary.
//!
//! The command line is read in two steps: its shape first (which command, which flags, their
//! raw values: [`commands::cli`]), then the command's settings through the layers — defaults,
//! its `--config` file, `TURNSTILE_*` variables, its flags — with every problem reported at once
//! ([`turnstile_config::resolve_matches`]). No flag's value is judged before the layers meet.

mod commands;
mod generated;
mod layered;

use std::path::{Path, PathBuf};

use clap::{ArgMatches, FromArgMatches};
use turnstile_config::{Env, Layered, Required, ResolveError};
use turnstile_server::serve::{LogFormat, ServeArgs};

use crate::commands::NewCommand;
use crate::layered::{ALL, Check, CorpusBuild, Drive, Eval, Load};

fn init_logging(format: LogFormat) {
    turnstile_server::logging::init_stderr(format);
}

/// `L`'s settings, or every problem with them printed and the process ended (status 2).
fn settings<L: Layered>(given: &ArgMatches) -> L::Args {
    let env = Env::process().with_settings_elsewhere(layered::variables());
    let read = |path: &Path| std::fs::read_to_string(path);
    turnstile_config::resolve_matches::<L>(given, &env, &read).unwrap_or_else(|e| e.exit())
}

/// Runs the command; a failure is told in words — `error: ` and its causes on one line — and
/// exits 1. Never anyhow's `Debug` form (what returning the error from `main` prints): with
/// `RUST_BACKTRACE` set, that appends a stack backtrace to a user's mistake (a busy port, a
/// missing file). A panic still prints its backtrace: that one is a bug.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let matches = turnstile_config::parse_shape(&commands::cli, std::env::args_os())
        .unwrap_or_else(|e| e.exit());
    let passed = match matches.subcommand() {
        Some(("serve", given)) => {
            let args = settings::<ServeArgs>(given);
            // Traces, when a collector is named: started first, as the log carries their layer.
            let traces = match args.traces.resolve(|name| std::env::var(name).ok())? {
                Some(export) => Some(turnstile_server::traces::Traces::start(&export)?),
                None => None,
            };
            // Serving logs through a bounded, non-blocking writer: a slow sink drops and counts
            // lines instead of stalling requests; what is buffered is written before exiting.
            turnstile_server::logging::init(
                args.log_format,
                args.log_buffer_lines,
                traces.as_ref(),
            );
            let served = turnstile_server::serve::serve(args, traces.as_ref());
            if let Some(traces) = traces {
                // The spans still waiting go before the process does (a gone collector is
                // given at most this long).
                traces.shutdown(std::time::Duration::from_secs(5));
            }
            turnstile_server::logging::finish();
            return served;
        }
        Some(("config", config)) => match config.subcommand() {
            Some(("check", given)) => config_check(given),
            _ => unreachable!("clap requires a subcommand of `config`"),
        },
        Some(("corpus", corpus)) => match corpus.subcommand() {
            Some(("build", given)) => {
                let args = settings::<CorpusBuild>(given);
                match turnstile_ingest::build(&args, true) {
                    Ok(summary) => {
                        println!("{summary}");
                        true
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        false
                    }
                }
            }
            _ => unreachable!("clap requires a subcommand of `corpus`"),
        },
        Some(("new", new)) => {
            let NewCommand::Plugin { lang, dir } = NewCommand::from_arg_matches(new)?;
            let written = turnstile_author::kit::new_plugin(lang, &dir)?;
            println!("wrote {} ({} files):", dir.display(), written.len());
            for file in written {
                println!("  {}", file.display());
            }
            println!(
                "next: cd {} && ./build.sh && ./check.sh (README.md says more)",
                dir.display()
            );
            true
        }
        Some(("completions", given)) => {
            let Some(shell) = given.get_one::<clap_complete::Shell>("shell") else {
                unreachable!("clap requires SHELL");
            };
            let tree = commands::cli(Required::Kept);
            generated::completions(tree, *shell, &mut std::io::stdout().lock());
            true
        }
        Some(("man", given)) => {
            let tree = commands::cli(Required::Kept);
            match given.get_one::<PathBuf>("out") {
                Some(dir) => {
                    for page in generated::man_pages(tree, dir)? {
                        println!("{}", page.display());
                    }
                }
                None => generated::man_page(tree, &mut std::io::stdout().lock())?,
            }
            true
        }
        Some(("openapi", _)) => {
            println!("{}", turnstile_server::http::openapi_json());
            true
        }
        Some(("load", given)) => {
            let args = settings::<Load>(given);
            init_logging(LogFormat::Text);
            return turnstile_tools::load::run(&args);
        }
        Some(("check", given)) => {
            let args = settings::<Check>(given);
            init_logging(LogFormat::Text);
            turnstile_author::check::run(&args)?
        }
        Some(("eval", given)) => {
            let args = settings::<Eval>(given);
            init_logging(LogFormat::Text);
            turnstile_author::eval::run(&args)?
        }
        Some(("drive", given)) => {
            let args = settings::<Drive>(given);
            init_logging(LogFormat::Text);
            turnstile_tools::drive::run(&args)?
        }
        _ => unreachable!("clap requires a known subcommand"),
    };
    if !passed {
        std::process::exit(1)
    }
    Ok(())
}

/// `turnstile config check [--for COMMAND] FILE`: whether the file is valid for that command.
fn config_check(given: &ArgMatches) -> bool {
    let (Some(name), Some(file)) = (
        given.get_one::<String>("for"),
        given.get_one::<PathBuf>("file"),
    ) else {
        unreachable!("`--for` has a default and FILE is required");
    };
    let Some(entry) = ALL.iter().find(|entry| entry.name == name) else {
        unreachable!("clap takes only the names of ALL");
    };
    match (entry.check_file)(file) {
        Ok(()) => {
            println!("{}: ok", file.display());
            true
        }
        Err(ResolveError::Settings(problems)) => {
            for problem in problems {
                eprintln!("error: {problem}");
            }
            false
        }
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}
