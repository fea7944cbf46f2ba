//! A command whose settings are layered: its flags (a clap `Args` struct), its name, and its
//! checks across settings. The per-command wiring is one small `impl` of [`Layered`]; everything
//! else is this crate's.

use clap::{Arg, Command};

/// A `turnstile` command whose settings come from the defaults, a `--config` file, the
/// environment and the command line.
///
/// Implemented on a marker type (or on the args struct itself) next to where the command is
/// wired: the orphan rule lets the binary implement it for an args struct of any crate.
pub trait Layered {
    /// The command's flags: each long flag is a key of the file and a variable of the
    /// environment ([`crate::variable`]).
    type Args: clap::Args + clap::FromArgMatches;

    /// The words after `turnstile`: `"serve"`, `"corpus build"`.
    const NAME: &'static str;

    /// The checks across settings, once each value passed its flag's own parser: every problem,
    /// each naming the flag it is about (its origin is then the origin of that flag's value).
    fn validate(args: &Self::Args) -> Vec<Invalid> {
        let _ = args;
        Vec::new()
    }
}

/// One check across settings that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The flag it is about, without `--` (`"max-active"`).
    pub flag: String,
    /// What is wrong, without the flag's name (the problem's origin names it).
    pub message: String,
}

impl Invalid {
    /// A problem with `flag` (without `--`).
    pub fn new(flag: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            flag: flag.into(),
            message: message.into(),
        }
    }
}

/// The flag every layered command has: the file is named on the command line only.
pub(crate) const CONFIG: &str = "config";

/// `L`'s command as it is parsed: its args, `--config FILE`, and `turnstile NAME` in its usage.
pub fn command<L: Layered>() -> Command {
    let name = L::NAME.rsplit(' ').next().unwrap_or(L::NAME);
    let command = <L::Args as clap::Args>::augment_args(Command::new(name))
        .bin_name(format!("turnstile {}", L::NAME));
    with_config(command)
}

/// Adds `--config FILE` unless the command has it.
pub(crate) fn with_config(command: Command) -> Command {
    if command.get_arguments().any(|a| a.get_id() == CONFIG) {
        return command;
    }
    command.arg(
        Arg::new(CONFIG)
            .long(CONFIG)
            .value_name("FILE")
            .value_parser(clap::value_parser!(std::path::PathBuf))
            .help(
                "A TOML file of this command's settings: each key is a flag's name without `--` \
                 (one file per command; `turnstile config check --for COMMAND FILE` checks one). \
                 `TURNSTILE_*` variables override it; flags override both",
            ),
    )
}
