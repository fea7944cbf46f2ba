//! The `turnstile` command: the server (`serve`, `check`, `config check`), its client tools
//! (`drive`, `load`) and the corpus builder (`corpus build`) behind one binary.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use turnstile_author::check::CheckArgs;
use turnstile_server::serve::{LogFormat, ServeArgs};
use turnstile_tools::drive::DriveArgs;
use turnstile_tools::load::LoadArgs;

#[derive(Parser)]
#[command(
    name = "turnstile",
    version,
    about = "FIFO admission gate in front of WebAssembly retrieval plugins"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve `POST /retrieve` (and `/state`, `/healthz`, `/readyz`, `/metrics`). Settings come
    /// from the defaults, then `--config FILE`, then `TURNSTILE_*` variables, then these flags.
    Serve(Box<ServeArgs>),
    /// Demonstrate the gate over real loopback HTTP against temporary `serve` children, and
    /// check every case (exits non-zero when any case differs from what is expected).
    Drive(DriveArgs),
    /// Run the conformance suite against a plugin component (exits non-zero on any failure).
    Check(CheckArgs),
    /// Run a question set through a plugin in process and score it: recall@1, recall@5,
    /// MRR@10, nDCG@10, the misses and the per-question latency (`--compare` a second plugin).
    Eval(turnstile_author::eval::EvalArgs),
    /// Closed-loop HTTP load: users, spawn rate, duration; live progress, a summary table,
    /// `summary.json` and a chart.
    Load(LoadArgs),
    /// Work with `serve`'s config file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Make a corpus from your own documents: `turnstile corpus build SRC… --out FILE`.
    #[command(subcommand)]
    Corpus(CorpusCommand),
    /// Print the HTTP API's OpenAPI 3.1 document (what `GET /openapi.json` serves).
    Openapi,
    /// Start something new: `turnstile new plugin --lang rust|python|js DIR`.
    #[command(subcommand)]
    New(NewCommand),
}

#[derive(Subcommand)]
enum NewCommand {
    /// Write a standalone plugin project into DIR (named after it): the contract at this host's
    /// version, a minimal lexical plugin, the pinned build command (build.sh), a README, and
    /// check.sh, which runs `turnstile check` and `turnstile eval` on the questions it ships.
    Plugin {
        /// The plugin's language.
        #[arg(long, value_enum)]
        lang: turnstile_author::kit::Lang,
        /// The project's folder (created; must be new or empty). Its name is the plugin's.
        dir: PathBuf,
    },
}

#[derive(Subcommand)]
enum CorpusCommand {
    /// Turn files and folders of Markdown, HTML and plain text (and CSV or JSON Lines with
    /// named columns) into a corpus file for `serve --corpus`: passages split at headings and
    /// at --max-chars with --overlap, ids `PATH#heading-slug`, titles from the document and its
    /// heading path, text without markup. The same input always gives the same file.
    Build(turnstile_ingest::BuildArgs),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate a config file without starting: every key known, every value within its
    /// bounds, the settings consistent (exits non-zero, naming every problem with its line).
    Check {
        /// The TOML file.
        file: PathBuf,
    },
}

fn init_logging(format: LogFormat) {
    turnstile_server::logging::init_stderr(format);
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let passed = match cli.command {
        Command::Serve(_) => {
            // The flags again, now merged with the file and the environment.
            let env = |name: &str| std::env::var_os(name);
            let args = turnstile_server::serve::resolve(std::env::args_os().skip(2), &env)
                .unwrap_or_else(|e| e.exit());
            // Serving logs through a bounded, non-blocking writer: a slow sink drops and counts
            // lines instead of stalling requests; what is buffered is written before exiting.
            turnstile_server::logging::init(args.log_format, args.log_buffer_lines);
            let served = turnstile_server::serve::serve(args);
            turnstile_server::logging::finish();
            return served;
        }
        Command::Config(ConfigCommand::Check { file }) => {
            match turnstile_server::serve::resolve_file(&file) {
                Ok(_) => {
                    println!("{}: ok", file.display());
                    true
                }
                Err(turnstile_server::serve::ResolveError::Settings(problems)) => {
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
        Command::Corpus(CorpusCommand::Build(args)) => match turnstile_ingest::build(&args, true) {
            Ok(summary) => {
                println!("{summary}");
                true
            }
            Err(e) => {
                eprintln!("error: {e}");
                false
            }
        },
        Command::New(NewCommand::Plugin { lang, dir }) => {
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
        Command::Openapi => {
            println!("{}", turnstile_server::http::openapi_json());
            true
        }
        Command::Load(args) => {
            init_logging(LogFormat::Text);
            return turnstile_tools::load::run(&args);
        }
        Command::Check(args) => {
            init_logging(LogFormat::Text);
            turnstile_author::check::run(&args)?
        }
        Command::Eval(args) => {
            init_logging(LogFormat::Text);
            turnstile_author::eval::run(&args)?
        }
        Command::Drive(args) => {
            init_logging(LogFormat::Text);
            turnstile_tools::drive::run(&args)?
        }
    };
    if !passed {
        std::process::exit(1)
    }
    Ok(())
}
