//! The `turnstile` command tree: which commands there are, what each is for, and each layered
//! command as its *shape* (`turnstile_config::shape`) — its flags read as typed, judged later
//! with the file and the environment — so that reading the command line never stops at a
//! layered command's first bad value. `--help` shows each command as it is, with its variables.

use std::path::PathBuf;

use clap::{Arg, Command, Subcommand};
use turnstile_config::{Layered, Required, shape};
use turnstile_server::serve::ServeArgs;

use crate::layered::{ALL, Check, CorpusBuild, Drive, Eval, Load};

/// The whole tree, each layered command's requirements as `required` says.
pub fn cli(required: Required) -> Command {
    let layered = |command: Command, about: &'static str| {
        shape(command, required).about(about).long_about(None)
    };
    Command::new("turnstile")
        .version(env!("CARGO_PKG_VERSION"))
        .about("FIFO admission gate in front of WebAssembly retrieval plugins")
        .after_help(
            "Every command's settings come, in rising precedence, from its flags' defaults, its \
             --config FILE (TOML: each key a flag's name without --), TURNSTILE_* variables \
             (shown in each command's --help) and its flags. Every problem is reported at once, \
             each with where it came from.",
        )
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(layered(
            command::<ServeArgs>(),
            "Serve `POST /retrieve` (and `/state`, `/healthz`, `/readyz`, `/metrics`)",
        ))
        .subcommand(layered(
            command::<Drive>(),
            "Demonstrate the gate over real loopback HTTP against temporary `serve` children, and \
             check every case (exits non-zero when any case differs from what is expected)",
        ))
        .subcommand(layered(
            command::<Check>(),
            "Run the conformance suite against a plugin component (exits non-zero on any failure)",
        ))
        .subcommand(layered(
            command::<Eval>(),
            "Run a question set through a plugin in process and score it: recall@1, recall@5, \
             MRR@10, nDCG@10, the misses and the per-question latency (`--compare` a second \
             plugin)",
        ))
        .subcommand(layered(
            command::<Load>(),
            "Closed-loop HTTP load: users, spawn rate, duration; live progress, a summary table, \
             `summary.json` and a chart",
        ))
        .subcommand(config())
        .subcommand(
            Command::new("corpus")
                .about("Make a corpus from your own documents: `turnstile corpus build SRC… --out FILE`")
                .subcommand_required(true)
                .arg_required_else_help(true)
                .subcommand(layered(
                    command::<CorpusBuild>(),
                    "Turn files and folders of Markdown, HTML and plain text (and CSV or JSON \
                     Lines with named columns) into a corpus file for `serve --corpus`: passages \
                     split at headings, then packed from whole blocks within --max-tokens and \
                     --max-chars with --overlap, ids \
                     `PATH#heading-slug`, titles from the document and its heading path, text \
                     without markup; each passage's url (its path and section anchor, after \
                     --base-url) and a Markdown page's front matter or a row's other columns \
                     kept beside it. The same input always gives the same file",
                )),
        )
        .subcommand(
            Command::new("openapi")
                .about("Print the HTTP API's OpenAPI 3.1 document (what `GET /openapi.json` serves)"),
        )
        .subcommand(crate::generated::completions_command())
        .subcommand(crate::generated::man_command())
        .subcommand(
            NewCommand::augment_subcommands(Command::new("new"))
                .about("Start something new: `turnstile new plugin --lang rust|python|js DIR`")
                .subcommand_required(true)
                .arg_required_else_help(true),
        )
}

fn command<L: Layered>() -> Command {
    turnstile_config::command::<L>()
}

/// `turnstile config check [--for COMMAND] FILE`.
fn config() -> Command {
    let check = Command::new("check")
        .about(
            "Validate a config file without running the command: every key known, every value \
             within its bounds, the settings consistent (exits non-zero, naming every problem \
             with its line)",
        )
        .arg(
            Arg::new("for")
                .long("for")
                .value_name("COMMAND")
                .default_value("serve")
                .value_parser(clap::builder::PossibleValuesParser::new(ALL.map(|e| e.name)))
                .help("The command whose file it is: one file per command, its keys that command's flags"),
        )
        .arg(
            Arg::new("file")
                .value_name("FILE")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("The TOML file"),
        );
    Command::new("config")
        .about("Work with a command's config file")
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(check)
}

/// `turnstile new …`.
#[derive(Subcommand)]
pub enum NewCommand {
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
