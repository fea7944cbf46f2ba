//! A layered command's *shape*: its flags and their raw values as typed, none of them judged
//! yet. clap stops at the first value its parser refuses, so the command line is read with every
//! parser made lenient, and each value is judged later with the file's and the environment's —
//! all problems together ([`crate::resolve`]).
//!
//! The invariant: the shape differs from the command only where judging is deferred — parsers
//! accept anything (keeping their possible values for `--help`), ties between flags (conflicts,
//! requirements) are left to the final parse — so `--help` shows the real command, with each
//! flag's variable (`[env: TURNSTILE_MAX_ACTIVE]`, values never shown).

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};

use clap::builder::{PossibleValue, Resettable, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgMatches, Command};

use crate::env::{takes_setting, variable};
use crate::layered::{CONFIG, with_config};

/// Whether the shape keeps the flags a command requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Required {
    /// As the command says (so that `--help` shows them as required).
    Kept,
    /// Long flags optional: the file or the environment may give them (checked after merging).
    /// Positionals stay required: only the command line gives them.
    Relaxed,
}

/// The shape of a layered command (`--config` added if it has none).
pub fn shape(command: Command, required: Required) -> Command {
    with_config(command).mut_args(|arg| lenient(arg, required))
}

/// Reads `argv` with `build`'s shape: first keeping required flags; if one is missing, again
/// with them relaxed (a layer may give it). Errors are clap's (an unknown flag, a missing value,
/// a missing positional, `--help`, `--version`).
pub fn parse_shape(
    build: &dyn Fn(Required) -> Command,
    argv: impl IntoIterator<Item = OsString>,
) -> Result<ArgMatches, clap::Error> {
    let argv: Vec<OsString> = argv.into_iter().collect();
    let matched = match build(Required::Kept).try_get_matches_from(&argv) {
        Err(e) if e.kind() == ErrorKind::MissingRequiredArgument => {
            build(Required::Relaxed).try_get_matches_from(&argv)
        }
        matched => matched,
    };
    matched.map_err(|error| with_synonym(error, &build(Required::Kept), &argv))
}

/// Flags a user may reach for by another field's word, and the flag that does it: clap suggests
/// by spelling (`--max-concurrency` is nearest `--max-connections`), a person means the meaning.
const SYNONYMS: [(&str, &str); 6] = [
    ("--max-concurrency", "--max-active"),
    ("--concurrency", "--max-active"),
    ("--max-concurrent", "--max-active"),
    ("--max-queue", "--max-waiting"),
    ("--queue-size", "--max-waiting"),
    ("--timeout-ms", "--wait-ms"),
];

/// `error` suggesting the flag a [`SYNONYMS`] word means instead of clap's nearest spelling,
/// when the command it was given to has that flag.
fn with_synonym(mut error: clap::Error, root: &Command, argv: &[OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue};
    if error.kind() != ErrorKind::UnknownArgument {
        return error;
    }
    let Some(ContextValue::String(given)) = error.get(ContextKind::InvalidArg) else {
        return error;
    };
    let given = given.split('=').next().unwrap_or_default();
    let Some((_, meant)) = SYNONYMS.iter().find(|(word, _)| *word == given) else {
        return error;
    };
    // The command the flag was given to: the first subcommand named on the line, else the root.
    let command = argv
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find_map(|a| root.find_subcommand(a))
        .unwrap_or(root);
    if command
        .get_arguments()
        .any(|a| a.get_long() == meant.strip_prefix("--"))
    {
        error.insert(
            ContextKind::SuggestedArg,
            ContextValue::String((*meant).to_owned()),
        );
        // clap's usage line showed the flag it had suggested: the command's own instead.
        let mut usage = command.clone();
        if !std::ptr::eq(command, root) {
            let bin = root.get_bin_name().unwrap_or(root.get_name());
            usage = usage.bin_name(format!("{bin} {}", command.get_name()));
        }
        error.insert(
            ContextKind::Usage,
            ContextValue::StyledStr(usage.render_usage()),
        );
    }
    error
}

/// The command for the final parse of merged values: the real parsers and ties, and no variable
/// of clap's own (the environment is a layer, read once, by [`crate::Env`]).
pub(crate) fn strict(command: Command, required: Required) -> Command {
    with_config(command).mut_args(|arg| {
        let arg = arg.env(None);
        if required == Required::Relaxed {
            arg.required(false)
        } else {
            arg
        }
    })
}

fn lenient(arg: Arg, required: Required) -> Arg {
    if !takes_setting(&arg) || arg.get_id() == CONFIG {
        return arg;
    }
    let var = variable(&arg);
    let possible = arg.get_possible_values();
    let arg = arg
        .conflicts_with(Resettable::Reset)
        .requires(Resettable::Reset)
        .overrides_with(Resettable::Reset)
        .env(None);
    let arg = match arg.get_action() {
        ArgAction::SetTrue | ArgAction::SetFalse => arg.value_parser(AnySwitch),
        _ => arg.value_parser(AnyValue { possible }),
    };
    let arg = match var {
        Some(var) => arg.env(interned(var)).hide_env_values(true),
        None => arg,
    };
    if required == Required::Relaxed && !arg.is_positional() {
        arg.required(false)
    } else {
        arg
    }
}

/// `name`, kept for the life of the process: clap takes a variable's name as `&'static str`
/// (without its `string` feature). Each distinct name is kept once, and the names are the
/// commands' variables — a few dozen — however often a shape is made (the fuzz target makes
/// one per input).
fn interned(name: String) -> &'static str {
    static NAMES: std::sync::Mutex<BTreeSet<&'static str>> = std::sync::Mutex::new(BTreeSet::new());
    let mut names = NAMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(kept) = names.get(name.as_str()) {
        return kept;
    }
    let kept: &'static str = Box::leak(name.into_boxed_str());
    names.insert(kept);
    kept
}

/// Takes any value as it is, and tells `--help` the flag's possible values.
#[derive(Clone)]
struct AnyValue {
    possible: Vec<PossibleValue>,
}

impl TypedValueParser for AnyValue {
    type Value = OsString;

    fn parse_ref(
        &self,
        _: &Command,
        _: Option<&Arg>,
        value: &OsStr,
    ) -> Result<OsString, clap::Error> {
        Ok(value.to_owned())
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        (!self.possible.is_empty()).then(|| Box::new(self.possible.iter().cloned()) as _)
    }
}

/// A switch's value taken as given (its raw value is judged later).
#[derive(Clone)]
struct AnySwitch;

impl TypedValueParser for AnySwitch {
    type Value = bool;

    fn parse_ref(&self, _: &Command, _: Option<&Arg>, _: &OsStr) -> Result<bool, clap::Error> {
        Ok(true)
    }
}
