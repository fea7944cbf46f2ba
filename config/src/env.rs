//! The environment layer: the `TURNSTILE_*` variables a command sees. Each single-valued long flag
//! has one — `TURNSTILE_` and the flag's name in capitals with `_` for `-`
//! (`--max-active` → `TURNSTILE_MAX_ACTIVE`), or the name its clap `env` attribute gives. A
//! repeatable flag (`--plugin-config`) and `--config` have none.
//!
//! The invariant: every `TURNSTILE_*` variable means something. One that is no setting of the
//! command is a problem (with the nearest variable it may have meant), unless it is a setting of
//! another `turnstile` command (a shell set up for `serve` may run `check`; see
//! [`Env::with_settings_elsewhere`]) or the project reads it for another purpose
//! ([`NOT_SETTINGS`]).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};

use clap::{Arg, ArgAction};

use crate::layered::CONFIG;

/// The prefix of every variable of a setting.
pub const PREFIX: &str = "TURNSTILE_";

/// Variables with the prefix that are no command's settings, with what reads them: never reported
/// as unknown. Keep in step with README.md ("Where every command's settings come from").
pub const NOT_SETTINGS: &[(&str, &str)] = &[
    (
        "TURNSTILE_PERFMAP",
        "`1`: the plugin host names every compiled guest function in /tmp/perf-PID.map (docs/PLUGINS.md)",
    ),
    (
        "TURNSTILE_TOOLCHAINS",
        "building: where the Python and JavaScript guests' toolchains are (guest-build)",
    ),
    (
        "TURNSTILE_BIN",
        "bench/ scripts: the turnstile binary they run",
    ),
    (
        "TURNSTILE_CHROMIUM",
        "tests/dashboard: the browser that renders the live page",
    ),
    (
        "TURNSTILE_WAITER_MEMORY_MODE",
        "the gate's waiter-memory benchmark (gate/benches)",
    ),
    (
        "TURNSTILE_GIT_COMMIT",
        "building: the commit the metrics' build label names (server/build.rs)",
    ),
    (
        "TURNSTILE_WASMTIME_VERSION",
        "building: the wasmtime version the metrics' build label names (server/build.rs)",
    ),
];

/// The `TURNSTILE_*` variables a command sees, and the names other commands' settings use.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, OsString>,
    elsewhere: BTreeSet<String>,
}

impl Env {
    /// This process's `TURNSTILE_*` variables (a name that is not UTF-8 cannot be one).
    pub fn process() -> Self {
        Self::new(
            std::env::vars_os().filter_map(|(name, value)| Some((name.into_string().ok()?, value))),
        )
    }

    /// The `TURNSTILE_*` variables among `vars` (tests, the fuzz target).
    pub fn new<K: Into<String>, V: Into<OsString>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        let vars = vars
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .filter(|(k, _)| k.starts_with(PREFIX))
            .collect();
        Self {
            vars,
            elsewhere: BTreeSet::new(),
        }
    }

    /// Variables that are settings of other commands: not reported as unknown to this one.
    pub fn with_settings_elsewhere(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.elsewhere.extend(names);
        self
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars.get(name).map(OsString::as_os_str)
    }

    /// Variables that mean nothing: neither in `known` (this command's), nor another command's
    /// setting, nor in [`NOT_SETTINGS`]. In name order.
    pub(crate) fn unknown<'a>(
        &'a self,
        known: &'a BTreeSet<String>,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.vars.keys().map(String::as_str).filter(move |name| {
            !known.contains(*name)
                && !self.elsewhere.contains(*name)
                && !NOT_SETTINGS.iter().any(|(n, _)| n == name)
        })
    }
}

/// The variable of `arg`, if it has one: its clap `env` name, else `TURNSTILE_` and its long name
/// in capitals with `_` for `-`. None for a positional, a repeatable flag and `--config`.
pub fn variable(arg: &Arg) -> Option<String> {
    let long = arg.get_long()?;
    if long == CONFIG || matches!(arg.get_action(), ArgAction::Append) || !takes_setting(arg) {
        return None;
    }
    if let Some(name) = arg.get_env().and_then(OsStr::to_str) {
        return Some(name.to_owned());
    }
    Some(format!(
        "{PREFIX}{}",
        long.to_ascii_uppercase().replace('-', "_")
    ))
}

/// Whether `arg` is a setting at all (not `--help` or `--version`).
pub(crate) fn takes_setting(arg: &Arg) -> bool {
    matches!(
        arg.get_action(),
        ArgAction::Set | ArgAction::Append | ArgAction::SetTrue | ArgAction::SetFalse
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_s_variable_is_its_name_in_capitals_or_its_env_attribute() {
        let plain = Arg::new("max_active").long("max-active");
        assert_eq!(variable(&plain).as_deref(), Some("TURNSTILE_MAX_ACTIVE"));
        let named = Arg::new("cache_dir")
            .long("cache-dir")
            .env("TURNSTILE_CACHE_DIR");
        assert_eq!(variable(&named).as_deref(), Some("TURNSTILE_CACHE_DIR"));
        let repeatable = Arg::new("x")
            .long("plugin-config")
            .action(ArgAction::Append);
        assert_eq!(variable(&repeatable), None);
        assert_eq!(variable(&Arg::new("plugin")), None, "a positional");
        assert_eq!(variable(&Arg::new("config").long("config")), None);
    }

    #[test]
    fn only_variables_that_mean_nothing_are_unknown() {
        let env = Env::new([
            ("TURNSTILE_MAX_ACTIVE", "1"),
            ("TURNSTILE_MAX_WAITNG", "1"),
            ("TURNSTILE_USERS", "1"),
            ("TURNSTILE_PERFMAP", "1"),
            ("HOME", "/root"),
        ])
        .with_settings_elsewhere(["TURNSTILE_USERS".to_owned()]);
        let known = BTreeSet::from(["TURNSTILE_MAX_ACTIVE".to_owned()]);
        assert_eq!(
            env.unknown(&known).collect::<Vec<_>>(),
            ["TURNSTILE_MAX_WAITNG"]
        );
        assert_eq!(env.get("HOME"), None, "only TURNSTILE_* variables are kept");
    }
}
