//! Every command whose settings are layered (`turnstile_config`: defaults < `--config` file <
//! `TURNSTILE_*` < flags) — `serve`, `check`, `eval`, `load`, `drive`, `corpus build` — with its
//! checks across settings. The one list of them: the command tree, `config check --for` and the
//! variables every command knows are read from it, so a command added here gets all three.
//!
//! Each command is its args struct (in its own crate, which needs nothing of this) and a marker
//! here; `serve`'s is its `ServeArgs` (in the server, whose fuzz target resolves it).

use std::path::Path;

use clap::Command;
use turnstile_author::check::CheckArgs;
use turnstile_author::eval::EvalArgs;
use turnstile_config::{Invalid, Layered, ResolveError};
use turnstile_ingest::BuildArgs;
use turnstile_server::serve::ServeArgs;
use turnstile_tools::drive::DriveArgs;
use turnstile_tools::load::LoadArgs;

/// `turnstile check`.
pub struct Check;

impl Layered for Check {
    type Args = CheckArgs;
    const NAME: &'static str = "check";

    fn validate(args: &CheckArgs) -> Vec<Invalid> {
        plugin_config(&args.given.plugin_config)
    }
}

/// `turnstile eval`.
pub struct Eval;

impl Layered for Eval {
    type Args = EvalArgs;
    const NAME: &'static str = "eval";

    fn validate(args: &EvalArgs) -> Vec<Invalid> {
        plugin_config(&args.given.plugin_config)
    }
}

/// `turnstile load` (its flags' bounds are their parsers').
pub struct Load;

impl Layered for Load {
    type Args = LoadArgs;
    const NAME: &'static str = "load";
}

/// `turnstile drive`.
pub struct Drive;

impl Layered for Drive {
    type Args = DriveArgs;
    const NAME: &'static str = "drive";
}

/// `turnstile corpus build`.
pub struct CorpusBuild;

impl Layered for CorpusBuild {
    type Args = BuildArgs;
    const NAME: &'static str = "corpus build";

    fn validate(args: &BuildArgs) -> Vec<Invalid> {
        args.overlap_problem()
            .map(|problem| Invalid::new("overlap", problem))
            .into_iter()
            .collect()
    }
}

/// The plugin's settings, checked as the plugin host checks them (at most 64, keys and values
/// bounded, no key twice).
fn plugin_config(entries: &[(String, String)]) -> Vec<Invalid> {
    match turnstile_host::plugin_config(entries.iter().cloned()) {
        Ok(_) => Vec::new(),
        Err(e) => vec![Invalid::new("plugin-config", e.to_string())],
    }
}

/// One layered command, by the name `config check --for` takes.
pub struct Entry {
    /// `serve`, …, `corpus-build` (the words after `turnstile`, `-` for a space).
    pub name: &'static str,
    /// Its command as parsed (its args and `--config`).
    pub command: fn() -> Command,
    /// Checks a config file for it alone.
    pub check_file: fn(&Path) -> Result<(), ResolveError>,
}

const fn entry<L: Layered>(name: &'static str) -> Entry {
    Entry {
        name,
        command: turnstile_config::command::<L>,
        check_file: check_file::<L>,
    }
}

fn check_file<L: Layered>(path: &Path) -> Result<(), ResolveError> {
    turnstile_config::check_file::<L>(path, &|path| std::fs::read_to_string(path))
}

/// Every layered command.
pub const ALL: [Entry; 6] = [
    entry::<ServeArgs>("serve"),
    entry::<Check>("check"),
    entry::<Eval>("eval"),
    entry::<Load>("load"),
    entry::<Drive>("drive"),
    entry::<CorpusBuild>("corpus-build"),
];

/// Every layered command's `TURNSTILE_*` variables: a variable of one command is no stranger to
/// another (a shell set up for `serve` may run `check`).
pub fn variables() -> Vec<String> {
    ALL.iter()
        .flat_map(|entry| {
            (entry.command)()
                .get_arguments()
                .filter_map(turnstile_config::variable)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_listed_once_by_its_name() {
        let names: Vec<&str> = ALL.iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            ["serve", "check", "eval", "load", "drive", "corpus-build"]
        );
        for entry in &ALL {
            // Each builds (clap's own checks of a command run when it is first parsed).
            let command = (entry.command)().no_binary_name(true);
            command.debug_assert();
        }
        assert!(variables().contains(&"TURNSTILE_CACHE_DIR".to_owned()));
        assert!(variables().contains(&"TURNSTILE_USERS".to_owned()));
    }
}
