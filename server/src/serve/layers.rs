//! Where `serve`'s settings come from, in rising precedence — the ecosystem's usual order: the
//! defaults, the `--config` file, the environment (`TURNSTILE_*`), the command line (the flag a
//! person typed wins). Every value, from whichever layer, goes through its flag's one parser and
//! bounds, and every problem of every layer is reported at once, each naming where it came from
//! (the file and line, the variable, or the flag).
//!
//! - The file is TOML; each key is a flag's name without `--` (`max-active = 8`,
//!   `no-precompiled-cache = true`, `[plugin-config] delay_ms = "350"`). An unknown key is
//!   refused with its name and line.
//! - The environment variable of a flag is `TURNSTILE_` and its name in capitals with `_` for
//!   `-` (`TURNSTILE_MAX_ACTIVE=8`, `TURNSTILE_NO_PRECOMPILED_CACHE=true`); `--plugin-config`
//!   has none (use the file or the flag).
//! - A layer that sets a setting replaces it whole: `--plugin-config` on the command line
//!   replaces the file's `[plugin-config]` table, it is not merged into it.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use clap::builder::ValueParser;
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, Args, Command, FromArgMatches};

use super::args::ServeArgs;

/// The settings of a `serve` command line, merged with its file and the environment, and
/// checked as a whole ([`ServeArgs::validate`]).
///
/// `argv` is what follows `serve`; `env` looks a variable up (`std::env::var_os` in the binary).
pub fn resolve(
    argv: impl IntoIterator<Item = OsString>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<ServeArgs, ResolveError> {
    resolve_reading(argv, env, &|path| std::fs::read_to_string(path))
}

/// [`resolve`], with the config file's text from `read` (the fuzz target gives it its bytes).
pub(crate) fn resolve_reading(
    argv: impl IntoIterator<Item = OsString>,
    env: &dyn Fn(&str) -> Option<OsString>,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<ServeArgs, ResolveError> {
    let command = ServeArgs::augment_args(Command::new("serve"));
    // The command line's shape first (an unknown flag, a missing value: clap cannot read past
    // them), with every value taken as it is; each value is checked below, with the others.
    let given = command
        .clone()
        .mut_args(|arg| match arg.get_action() {
            ArgAction::Set | ArgAction::Append => arg.value_parser(ValueParser::os_string()),
            _ => arg,
        })
        .try_get_matches_from(std::iter::once(OsString::from("serve")).chain(argv))
        .map_err(ResolveError::Flags)?;
    let mut problems = Vec::new();
    let file = match given.get_one::<OsString>("config") {
        Some(path) => read_file(Path::new(path), read, &command, &mut problems)?,
        None => BTreeMap::new(),
    };
    let mut merged = vec![OsString::from("serve")];
    let mut origins = BTreeMap::new();
    for arg in command.get_arguments() {
        let (id, Some(long)) = (arg.get_id().as_str(), arg.get_long()) else {
            continue;
        };
        if id == "config" {
            continue;
        }
        let from_env = (!matches!(arg.get_action(), ArgAction::Append))
            .then(|| env(&env_name(long)).map(|value| (Origin::Env(env_name(long)), value)))
            .flatten();
        let (origin, values): (Origin, Vec<OsString>) =
            if given.value_source(id) == Some(ValueSource::CommandLine) {
                let values = match arg.get_action() {
                    ArgAction::SetTrue => vec!["true".into()],
                    _ => given
                        .get_raw_occurrences(id)
                        .into_iter()
                        .flatten()
                        .flatten()
                        .map(OsString::from)
                        .collect(),
                };
                (Origin::Flag, values)
            } else if let Some((origin, value)) = from_env {
                (origin, vec![value])
            } else if let Some((line, values)) = file.get(long) {
                let path = given.get_one::<OsString>("config").cloned();
                let origin = Origin::File {
                    path: PathBuf::from(path.unwrap_or_default()),
                    line: *line,
                };
                (origin, values.iter().map(OsString::from).collect())
            } else {
                continue;
            };
        for value in &values {
            if let Err(message) = check_value(&command, arg, value) {
                problems.push(Problem {
                    origin: origin.clone(),
                    flag: long.to_owned(),
                    message,
                });
            }
        }
        push(&mut merged, long, arg.get_action(), values);
        origins.insert(long.to_owned(), origin);
    }
    if !problems.is_empty() {
        return Err(ResolveError::Settings(problems));
    }
    let matches = command
        .try_get_matches_from(merged)
        .map_err(ResolveError::Flags)?;
    let args = ServeArgs::from_arg_matches(&matches).map_err(ResolveError::Flags)?;
    // The checks across settings (the gate's limits, the plugin's settings, the global limit),
    // each naming its flag and where that flag's value came from.
    if let Err(invalid) = args.validate() {
        return Err(ResolveError::Settings(
            invalid
                .into_iter()
                .map(|error| {
                    let flag = error.flag().trim_start_matches("--").to_owned();
                    Problem {
                        origin: origins.get(&flag).cloned().unwrap_or(Origin::Default),
                        flag,
                        message: error.to_string(),
                    }
                })
                .collect(),
        ));
    }
    Ok(args)
}

/// The settings of a config file alone (`turnstile config check`).
pub fn resolve_file(path: &Path) -> Result<ServeArgs, ResolveError> {
    resolve(
        [OsString::from("--config"), path.as_os_str().to_owned()],
        &|_| None,
    )
}

/// `max-active` → `TURNSTILE_MAX_ACTIVE`.
pub fn env_name(long: &str) -> String {
    format!("TURNSTILE_{}", long.to_ascii_uppercase().replace('-', "_"))
}

/// Runs `arg`'s own parser (its type and bounds) on one value: the real command on that value
/// alone (no flag of `serve` needs another).
fn check_value(command: &Command, arg: &Arg, value: &OsStr) -> Result<(), String> {
    let Some(long) = arg.get_long() else {
        return Ok(());
    };
    // `--flag=` is a flag without its value to clap ("a value is required"): said in terms of
    // the setting instead, wherever the empty value came from (found by fuzzing the config file).
    if value.is_empty() && !matches!(arg.get_action(), ArgAction::SetTrue) {
        return Err(
            "an empty value: give one, or leave the setting out for its default".to_owned(),
        );
    }
    let checked = match arg.get_action() {
        ArgAction::SetTrue => {
            use clap::builder::TypedValueParser;
            clap::builder::BoolishValueParser::new()
                .parse_ref(command, Some(arg), value)
                .map(|_| ())
        }
        _ => {
            let argv = [OsStr::new("serve"), &flag_with_value(long, value)];
            command.clone().try_get_matches_from(argv).map(|_| ())
        }
    };
    // clap's own words (the value, the flag, what is accepted), without its usage footer.
    checked.map_err(|error| {
        let text = error.to_string();
        let first = text.lines().next().unwrap_or_default();
        first.trim_start_matches("error: ").to_owned()
    })
}

fn push(argv: &mut Vec<OsString>, long: &str, action: &ArgAction, values: Vec<OsString>) {
    match action {
        // A switch: present when its value is true.
        ArgAction::SetTrue => {
            if values
                .iter()
                .any(|v| matches!(v.to_str(), Some("true" | "1" | "yes" | "on")))
            {
                argv.push(OsString::from(format!("--{long}")));
            }
        }
        _ => argv.extend(values.iter().map(|value| flag_with_value(long, value))),
    }
}

/// `--long=value`: one argument, so that a value from a file or the environment that starts
/// with `-` (`"-5"`, `"--help"`) is that flag's value — refused by its own bounds or taken as it
/// is — and never read as another flag.
fn flag_with_value(long: &str, value: &OsStr) -> OsString {
    let mut flag = OsString::from(format!("--{long}="));
    flag.push(value);
    flag
}

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Its default (a problem only another setting's value can make).
    Default,
    /// A line of the config file.
    File {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
    },
    /// An environment variable.
    Env(String),
    /// The command line.
    Flag,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File { path, line } => write!(f, "{}: line {line}", path.display()),
            Self::Env(name) => write!(f, "environment {name}"),
            Self::Flag => f.write_str("command line"),
        }
    }
}

/// One setting refused: where it came from, which flag (key) it is, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where the value came from.
    pub origin: Origin,
    /// The flag's name without `--` (the file's key).
    pub flag: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: --{}: {}", self.origin, self.flag, self.message)
    }
}

/// Why the settings cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The command line's shape: an unknown flag, a flag without its value, `--help`.
    #[error("{0}")]
    Flags(clap::Error),
    /// The config file cannot be read.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file is not valid TOML.
    #[error("{}: line {line}: {message}", .path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Settings refused, every one of them: unknown keys and values of the wrong type in the
    /// file, values outside their flag's bounds from any layer, and settings that do not go
    /// together.
    #[error("{}", lines(.0))]
    Settings(Vec<Problem>),
}

fn lines(problems: &[Problem]) -> String {
    let lines: Vec<String> = problems.iter().map(Problem::to_string).collect();
    lines.join("\n")
}

impl ResolveError {
    /// Prints the error and exits like clap does (status 2 for usage errors).
    pub fn exit(self) -> ! {
        match self {
            Self::Flags(e) => e.exit(),
            Self::Settings(problems) => {
                for problem in problems {
                    eprintln!("error: {problem}");
                }
                std::process::exit(2)
            }
            other => {
                eprintln!("error: {other}");
                std::process::exit(2)
            }
        }
    }
}

/// A config file's settings: each key (a flag's long name) with its line and its values as
/// command-line strings. Unknown keys and values of the wrong type are added to `problems`, all
/// of them; only a file that cannot be read or parsed stops here.
fn read_file(
    path: &Path,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
    command: &Command,
    problems: &mut Vec<Problem>,
) -> Result<BTreeMap<String, (usize, Vec<String>)>, ResolveError> {
    let text = read(path).map_err(|source| ResolveError::Read {
        path: path.to_owned(),
        source,
    })?;
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let spanned = toml::de::DeTable::parse(&text).map_err(|e| ResolveError::Syntax {
        path: path.to_owned(),
        line: line_of(e.span().map_or(0, |s| s.start)),
        message: e.message().to_owned(),
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ResolveError::Syntax {
            path: path.to_owned(),
            line: line_of(e.span().map_or(0, |s| s.start)),
            message: e.message().to_owned(),
        })?;
    let mut settings = BTreeMap::new();
    for (key, value) in spanned.get_ref() {
        let name: &str = key.get_ref();
        let line = line_of(key.span().start);
        let at = |line| Origin::File {
            path: path.to_owned(),
            line,
        };
        let Some(arg) = command
            .get_arguments()
            .find(|a| a.get_long() == Some(name) && name != "config")
        else {
            problems.push(Problem {
                origin: at(line),
                flag: name.to_owned(),
                message: "unknown key (the keys are `serve`'s flags without `--`)".to_owned(),
            });
            continue;
        };
        let wrong = |expected: &str| Problem {
            origin: at(line_of(value.span().start)),
            flag: name.to_owned(),
            message: format!("takes {expected}"),
        };
        let values = match (arg.get_action(), &table[name]) {
            (ArgAction::Append, toml::Value::Table(entries)) => {
                let mut values = Vec::new();
                for (k, v) in entries {
                    match v {
                        toml::Value::String(v) => values.push(format!("{k}={v}")),
                        toml::Value::Integer(i) => values.push(format!("{k}={i}")),
                        toml::Value::Boolean(b) => values.push(format!("{k}={b}")),
                        toml::Value::Float(f) => values.push(format!("{k}={f}")),
                        _ => problems.push(wrong("a table of string values")),
                    }
                }
                values
            }
            (ArgAction::Append, _) => {
                problems.push(wrong("a table of settings"));
                continue;
            }
            (ArgAction::SetTrue, toml::Value::Boolean(b)) => vec![b.to_string()],
            (ArgAction::SetTrue, _) => {
                problems.push(wrong("true or false"));
                continue;
            }
            (_, toml::Value::String(s)) => vec![s.clone()],
            (_, toml::Value::Integer(i)) => vec![i.to_string()],
            (_, toml::Value::Boolean(b)) => vec![b.to_string()],
            (_, toml::Value::Float(f)) => vec![f.to_string()],
            (_, _) => {
                problems.push(wrong("a string, a number or a boolean"));
                continue;
            }
        };
        settings.insert(name.to_owned(), (line, values));
    }
    Ok(settings)
}
