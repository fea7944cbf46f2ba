//! The file layer: a TOML file whose keys are one command's long flags without `--`
//! (`max-active = 8`, `no-precompiled-cache = true`). One file per command: a key that is no
//! flag of the command is a problem, with the nearest key it may have meant, so a file written
//! for `serve` and given to `check` says so rather than being half read. A repeatable flag takes
//! a table (`[plugin-config] delay_ms = "350"`, each entry one `KEY=VALUE`) or an array of
//! values (`header = ["x-tenant: batch"]`).
//!
//! The invariant: every key and every value is looked at, each problem is recorded with its
//! line, and reading goes on; only a file that cannot be read or is not TOML stops here.

use std::collections::BTreeMap;
use std::path::Path;

use clap::{Arg, ArgAction, Command};

use crate::env::takes_setting;
use crate::layered::CONFIG;
use crate::problem::{Origin, Problem, ResolveError};

/// One key of the file: its line and its values as they would be typed after the flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The key's line, 1-based.
    pub line: usize,
    /// Its values (several for a repeatable flag).
    pub values: Vec<String>,
}

/// The settings of the file at `path`, by long flag name, and the problems of its keys and
/// values' types (every one of them).
pub(crate) fn read(
    path: &Path,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
    command: &Command,
    command_name: &str,
) -> Result<(BTreeMap<String, Entry>, Vec<Problem>), ResolveError> {
    let text = read(path).map_err(|source| ResolveError::Read {
        path: path.to_owned(),
        source,
    })?;
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let syntax = |e: toml::de::Error| ResolveError::Syntax {
        path: path.to_owned(),
        line: line_of(e.span().map_or(0, |s| s.start)),
        message: e.message().to_owned(),
    };
    let spanned = toml::de::DeTable::parse(&text).map_err(syntax)?;
    let table: toml::Table = text.parse().map_err(syntax)?;
    let mut settings = BTreeMap::new();
    let mut problems = Vec::new();
    for (key, value) in spanned.get_ref() {
        let name: &str = key.get_ref();
        let line = line_of(key.span().start);
        let problem = |line, message: String| Problem {
            origin: Origin::File {
                path: path.to_owned(),
                line,
            },
            flag: name.to_owned(),
            message,
        };
        let Some(arg) = setting(command, name) else {
            problems.push(problem(line, unknown(command, command_name, name)));
            continue;
        };
        let value_line = line_of(value.span().start);
        match values(arg, &table[name]) {
            Ok(values) => {
                settings.insert(name.to_owned(), Entry { line, values });
            }
            Err(expected) => problems.push(problem(value_line, format!("takes {expected}"))),
        }
    }
    Ok((settings, problems))
}

/// The flag a file key names: a long flag of the command that is a setting, not `--config`.
fn setting<'a>(command: &'a Command, key: &str) -> Option<&'a Arg> {
    command
        .get_arguments()
        .find(|a| a.get_long() == Some(key) && key != CONFIG && takes_setting(a))
}

/// Why `key` is no setting, and what it may have meant.
fn unknown(command: &Command, command_name: &str, key: &str) -> String {
    if key == CONFIG {
        return "a config file cannot name another (give --config on the command line)".to_owned();
    }
    if let Some(positional) = command
        .get_positionals()
        .find(|a| a.get_id().as_str() == key.replace('-', "_"))
    {
        let shown = positional
            .get_value_names()
            .and_then(|names| names.first().map(ToString::to_string))
            .unwrap_or_else(|| key.to_ascii_uppercase());
        return format!("{shown} is given on the command line only");
    }
    let keys = command
        .get_arguments()
        .filter(|a| takes_setting(a))
        .filter_map(Arg::get_long)
        .filter(|long| *long != CONFIG);
    let mut message = format!(
        "unknown key: not a flag of `turnstile {command_name}` (keys are its flags without `--`)"
    );
    if let Some(similar) = crate::suggest::nearest(key, keys) {
        message.push_str(&format!("; a similar key exists: '{similar}'"));
    }
    message
}

/// A TOML value as the flag's values, or what the flag takes instead.
fn values(arg: &Arg, value: &toml::Value) -> Result<Vec<String>, &'static str> {
    match (arg.get_action(), value) {
        (ArgAction::Append, toml::Value::Table(entries)) => entries
            .iter()
            .map(|(k, v)| scalar(v).map(|v| format!("{k}={v}")))
            .collect::<Option<_>>()
            .ok_or("a table of strings, numbers or booleans"),
        (ArgAction::Append, toml::Value::Array(items)) => items
            .iter()
            .map(scalar)
            .collect::<Option<_>>()
            .ok_or("an array of strings, numbers or booleans"),
        (ArgAction::Append, _) => Err("a table of settings or an array of values"),
        (ArgAction::SetTrue | ArgAction::SetFalse, toml::Value::Boolean(b)) => {
            Ok(vec![b.to_string()])
        }
        (ArgAction::SetTrue | ArgAction::SetFalse, _) => Err("true or false"),
        (_, value) => scalar(value)
            .map(|v| vec![v])
            .ok_or("a string, a number or a boolean"),
    }
}

/// A string, number or boolean as it would be typed.
fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}
