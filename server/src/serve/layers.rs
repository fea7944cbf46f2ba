//! Where `serve`'s settings come from, in rising precedence: the defaults, the `--config` file,
//! the command line, the environment (`TURNSTILE_*`). The layers are merged into one command
//! line that clap parses, so every value, from whichever layer, goes through the same parser and
//! bounds.
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
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{ArgAction, Args, Command, FromArgMatches};

use super::ServeArgs;

/// The settings of a `serve` command line, merged with its file and the environment.
///
/// `argv` is what follows `serve`; `env` looks a variable up (`std::env::var_os` in the binary).
pub fn resolve(
    argv: impl IntoIterator<Item = OsString>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<ServeArgs, ResolveError> {
    let command = ServeArgs::augment_args(Command::new("serve"));
    let given = command
        .clone()
        .try_get_matches_from(std::iter::once(OsString::from("serve")).chain(argv))
        .map_err(ResolveError::Flags)?;
    let file = match given.get_one::<PathBuf>("config") {
        Some(path) => read_file(path, &command)?,
        None => BTreeMap::new(),
    };
    let mut merged = vec![OsString::from("serve")];
    for arg in command.get_arguments() {
        let (id, Some(long)) = (arg.get_id().as_str(), arg.get_long()) else {
            continue;
        };
        if id == "config" {
            continue;
        }
        let from_env = (!matches!(arg.get_action(), ArgAction::Append))
            .then(|| env(&env_name(long)))
            .flatten();
        let values: Vec<OsString> = if let Some(value) = from_env {
            vec![value]
        } else if given.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
            given
                .get_raw_occurrences(id)
                .into_iter()
                .flatten()
                .flatten()
                .map(OsString::from)
                .collect()
        } else if let Some(values) = file.get(long) {
            values.iter().map(OsString::from).collect()
        } else {
            continue;
        };
        push(&mut merged, long, arg.get_action(), values);
    }
    let matches = command
        .try_get_matches_from(merged)
        .map_err(ResolveError::Flags)?;
    ServeArgs::from_arg_matches(&matches).map_err(ResolveError::Flags)
}

/// The settings of a config file alone (`turnstile config check FILE`).
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

fn push(argv: &mut Vec<OsString>, long: &str, action: &ArgAction, values: Vec<OsString>) {
    let flag = OsString::from(format!("--{long}"));
    match action {
        // A switch: present when its value is true.
        ArgAction::SetTrue => {
            if values
                .iter()
                .any(|v| matches!(v.to_str(), Some("true" | "1" | "yes" | "on")))
            {
                argv.push(flag);
            }
        }
        _ => {
            for value in values {
                argv.push(flag.clone());
                argv.push(value);
            }
        }
    }
}

/// Why the settings cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A flag, or a value from any layer, that clap refuses (its message names the flag, the
    /// value and what is allowed).
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
    /// A key that is no `serve` flag.
    #[error("{}: line {line}: unknown key `{key}` (the keys are `serve`'s flags without `--`)", .path.display())]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// The key.
        key: String,
    },
    /// A value of a type the key does not take.
    #[error("{}: line {line}: `{key}` takes {expected}", .path.display())]
    WrongType {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// The key.
        key: String,
        /// What it takes.
        expected: &'static str,
    },
}

impl ResolveError {
    /// Prints the error and exits like clap does (status 2 for usage errors).
    pub fn exit(self) -> ! {
        match self {
            Self::Flags(e) => e.exit(),
            other => {
                eprintln!("error: {other}");
                std::process::exit(2)
            }
        }
    }
}

/// A config file's settings: each key (a flag's long name) with its values as command-line
/// strings.
fn read_file(
    path: &Path,
    command: &Command,
) -> Result<BTreeMap<String, Vec<String>>, ResolveError> {
    let text = std::fs::read_to_string(path).map_err(|source| ResolveError::Read {
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
        let arg = command
            .get_arguments()
            .find(|a| a.get_long() == Some(name) && name != "config")
            .ok_or_else(|| ResolveError::UnknownKey {
                path: path.to_owned(),
                line,
                key: name.to_owned(),
            })?;
        let wrong = |expected| ResolveError::WrongType {
            path: path.to_owned(),
            line: line_of(value.span().start),
            key: name.to_owned(),
            expected,
        };
        let values = match (arg.get_action(), &table[name]) {
            (ArgAction::Append, toml::Value::Table(entries)) => entries
                .iter()
                .map(|(k, v)| match v {
                    toml::Value::String(v) => Ok(format!("{k}={v}")),
                    toml::Value::Integer(i) => Ok(format!("{k}={i}")),
                    toml::Value::Boolean(b) => Ok(format!("{k}={b}")),
                    toml::Value::Float(f) => Ok(format!("{k}={f}")),
                    _ => Err(wrong("a table of string values")),
                })
                .collect::<Result<Vec<_>, ResolveError>>()?,
            (ArgAction::Append, _) => return Err(wrong("a table of settings")),
            (ArgAction::SetTrue, toml::Value::Boolean(b)) => vec![b.to_string()],
            (ArgAction::SetTrue, _) => return Err(wrong("true or false")),
            (_, toml::Value::String(s)) => vec![s.clone()],
            (_, toml::Value::Integer(i)) => vec![i.to_string()],
            (_, toml::Value::Boolean(b)) => vec![b.to_string()],
            (_, toml::Value::Float(f)) => vec![f.to_string()],
            (_, _) => return Err(wrong("a string, a number or a boolean")),
        };
        settings.insert(name.to_owned(), values);
    }
    Ok(settings)
}
