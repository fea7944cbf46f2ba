//! Merging the layers: for each setting the value of the highest layer that gives one (the
//! command line, else the environment, else the file, else the flag's default), judged by the
//! flag's own parser; then the command's parse of the merged values (requirements, conflicts)
//! and its [`Layered::validate`].
//!
//! The invariant: every problem is found before any is reported, and they come out in one order
//! — the file's by line, the environment's by name, the command line's as typed, then those of
//! defaults and of missing settings — each once. A value that failed is left out of the merge
//! (so a requirement is not reported on top of it), and the checks across settings run only
//! when every value passed its own (they judge the settings together; with a default standing
//! in for a refused value, what they found could be the default's). Unknown keys and variables
//! do not stop them. A value a higher layer overrides is not judged (a file's keys and value
//! types always are; `config check` judges a file's values alone).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches};

use crate::env::{Env, PREFIX, takes_setting, variable};
use crate::file::{self, Entry};
use crate::layered::{CONFIG, Layered, command};
use crate::problem::{Origin, Problem, ResolveError};
use crate::shape::{Required, parse_shape, shape, strict};
use crate::suggest::nearest;

/// `L`'s settings from `argv` (what follows the command's name), the environment and the file
/// `--config` names (read with `read`: `std::fs::read_to_string`, or the fuzz target's bytes).
pub fn resolve<L: Layered>(
    argv: impl IntoIterator<Item = OsString>,
    env: &Env,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<L::Args, ResolveError> {
    let argv = std::iter::once(OsString::from(L::NAME)).chain(argv);
    let given = parse_shape(&|required| shape(command::<L>(), required), argv)
        .map_err(ResolveError::Flags)?;
    resolve_matches::<L>(&given, env, read)
}

/// [`resolve`], from the command line's shape already read (the binary reads every command's
/// shape at once, with [`crate::shape`] applied to each layered subcommand).
pub fn resolve_matches<L: Layered>(
    given: &ArgMatches,
    env: &Env,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<L::Args, ResolveError> {
    let merge = Merge::<L>::new(Required::Kept);
    match merge.run(given, env, read)? {
        (Some(args), problems) if problems.is_empty() => Ok(args),
        (_, problems) => Err(ResolveError::Settings(problems)),
    }
}

/// Checks the file at `path` as `L`'s config file alone (`turnstile config check`): its keys, its
/// values, and — when the file gives every setting `L` requires, so that its settings can be
/// built — the checks across them. The environment and the command line are left out.
pub fn check_file<L: Layered>(
    path: &Path,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<(), ResolveError> {
    let all_optional = || command::<L>().mut_args(|arg| arg.required(false));
    let argv = [
        OsString::from(L::NAME),
        OsString::from("--config"),
        path.as_os_str().to_owned(),
    ];
    let given = shape(all_optional(), Required::Relaxed)
        .try_get_matches_from(argv)
        .map_err(ResolveError::Flags)?;
    let merge = Merge::<L>::new(Required::Relaxed);
    let (_, problems) = merge.run(&given, &Env::default(), read)?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ResolveError::Settings(problems))
    }
}

/// Where a problem goes in the report: variants in report order, then within each.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    /// The file's line.
    File(usize),
    /// The variable's name.
    Env(String),
    /// The flag's place on the command line.
    Flag(usize),
    /// The flag's place in the command (a default, or nothing where something is required).
    Default(usize),
}

struct Merge<L> {
    command: Command,
    required: Required,
    problems: Vec<(Place, Problem)>,
    /// Each merged setting's origin and place (for the problems of checks across settings).
    origins: BTreeMap<String, (Origin, Place)>,
    /// Settings whose value failed its flag's parser, left out of the merge.
    broken: BTreeSet<String>,
    layered: std::marker::PhantomData<L>,
}

impl<L: Layered> Merge<L> {
    fn new(required: Required) -> Self {
        Self {
            command: strict(command::<L>(), required),
            required,
            problems: Vec::new(),
            origins: BTreeMap::new(),
            broken: BTreeSet::new(),
            layered: std::marker::PhantomData,
        }
    }

    /// The settings (when they could be built) and every problem, in report order.
    fn run(
        mut self,
        given: &ArgMatches,
        env: &Env,
        read: &dyn Fn(&Path) -> std::io::Result<String>,
    ) -> Result<(Option<L::Args>, Vec<Problem>), ResolveError> {
        let path = given.get_one::<PathBuf>(CONFIG).cloned();
        let file = match &path {
            Some(path) => {
                let (settings, problems) = file::read(path, read, &self.command, L::NAME)?;
                for problem in problems {
                    // A key of the wrong type: its setting has no value from the file.
                    if self.arg(&problem.flag).is_some() {
                        self.broken.insert(problem.flag.clone());
                    }
                    self.push(None, problem);
                }
                settings
            }
            None => BTreeMap::new(),
        };
        self.unknown_variables(env);
        let mut merged = vec![OsString::from(self.command.get_name())];
        let mut positionals = Vec::new();
        let arguments: Vec<Arg> = self.command.get_arguments().cloned().collect();
        for (position, arg) in arguments.iter().enumerate() {
            if !takes_setting(arg) || arg.get_id() == CONFIG {
                continue;
            }
            let id = arg.get_id().as_str();
            let from_command_line = given.value_source(id) == Some(ValueSource::CommandLine);
            let values: Vec<OsString> = match arg.get_action() {
                ArgAction::SetTrue | ArgAction::SetFalse => vec!["true".into()],
                _ => given
                    .get_raw_occurrences(id)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(OsString::from)
                    .collect(),
            };
            let place = Place::Flag(given.index_of(id).unwrap_or(usize::MAX));
            let Some(long) = arg.get_long() else {
                if from_command_line {
                    let name = positional_name(arg);
                    if self.judge(arg, &name, Origin::Flag, place, &values) {
                        positionals.push((arg.get_index().unwrap_or(usize::MAX), values));
                    }
                }
                continue;
            };
            let (origin, place, values) = if from_command_line {
                (Origin::Flag, place, values)
            } else if let Some((var, value)) =
                variable(arg).and_then(|var| Some((var.clone(), env.get(&var)?.to_owned())))
            {
                (Origin::Env(var.clone()), Place::Env(var), vec![value])
            } else if let (Some(Entry { line, values }), Some(path)) = (file.get(long), &path) {
                let origin = Origin::File {
                    path: path.clone(),
                    line: *line,
                };
                let values = values.iter().map(OsString::from).collect();
                (origin, Place::File(*line), values)
            } else {
                self.origins
                    .insert(long.to_owned(), (Origin::Default, Place::Default(position)));
                continue;
            };
            if self.judge(arg, long, origin.clone(), place.clone(), &values) {
                push(&mut merged, long, arg.get_action(), values);
                self.origins.insert(long.to_owned(), (origin, place));
            } else {
                self.broken.insert(long.to_owned());
            }
        }
        positionals.sort_by_key(|(index, _)| *index);
        merged.push("--".into());
        merged.extend(positionals.into_iter().flat_map(|(_, values)| values));
        let args = self.build(merged)?;
        let mut problems = self.problems;
        // Stable: problems at one place keep the order they were found in.
        problems.sort_by(|a, b| a.0.cmp(&b.0));
        let mut problems: Vec<Problem> = problems.into_iter().map(|(_, p)| p).collect();
        problems.dedup();
        Ok((args, problems))
    }

    /// Judges each value by `arg`'s parser; whether all passed.
    fn judge(
        &mut self,
        arg: &Arg,
        name: &str,
        origin: Origin,
        place: Place,
        values: &[OsString],
    ) -> bool {
        let mut passed = true;
        for value in values {
            if let Err(message) = crate::value::check(arg, value) {
                passed = false;
                let problem = Problem {
                    origin: origin.clone(),
                    flag: name.to_owned(),
                    message,
                };
                self.push(Some(place.clone()), problem);
            }
        }
        passed
    }

    fn push(&mut self, place: Option<Place>, problem: Problem) {
        let place = place.unwrap_or(match &problem.origin {
            Origin::File { line, .. } => Place::File(*line),
            Origin::Env(name) => Place::Env(name.clone()),
            Origin::Flag => Place::Flag(usize::MAX),
            Origin::Default | Origin::Unset => Place::Default(usize::MAX),
        });
        self.problems.push((place, problem));
    }

    /// `TURNSTILE_*` variables that mean nothing, each with the nearest variable of `L`.
    fn unknown_variables(&mut self, env: &Env) {
        let known: BTreeSet<String> = self.command.get_arguments().filter_map(variable).collect();
        let unknown: Vec<String> = env.unknown(&known).map(str::to_owned).collect();
        for name in unknown {
            let mut message = format!(
                "unknown variable: not a setting of `turnstile {}` (a setting's variable is {PREFIX} \
                 and its flag's name in capitals, `_` for `-`)",
                L::NAME
            );
            let stem = |var: &str| var.trim_start_matches(PREFIX).to_owned();
            let stems: Vec<(String, &String)> = known.iter().map(|var| (stem(var), var)).collect();
            if let Some(similar) = nearest(&stem(&name), stems.iter().map(|(s, _)| s.as_str()))
                && let Some((_, var)) = stems.iter().find(|(s, _)| s == similar)
            {
                message.push_str(&format!("; a similar variable exists: {var}"));
            }
            let problem = Problem {
                origin: Origin::Env(name.clone()),
                flag: name,
                message,
            };
            self.push(None, problem);
        }
    }

    /// The command's own parse of the merged values (requirements, conflicts), then its checks
    /// across settings. `None` when the settings cannot be built.
    fn build(&mut self, merged: Vec<OsString>) -> Result<Option<L::Args>, ResolveError> {
        let matches = match self.command.clone().try_get_matches_from(merged) {
            Ok(matches) => matches,
            Err(error) => {
                self.ties(error)?;
                return Ok(None);
            }
        };
        let args = match L::Args::from_arg_matches(&matches) {
            Ok(args) => args,
            // Only without requirements (`config check`): a required setting the file leaves
            // out, so the checks across settings cannot run.
            Err(_) if self.required == Required::Relaxed => return Ok(None),
            Err(error) => return Err(ResolveError::Flags(error)),
        };
        // The checks across settings judge them together: with a value refused (its default
        // standing in), a problem they found could be the default's, not the user's.
        if !self.broken.is_empty() {
            return Ok(Some(args));
        }
        for invalid in L::validate(&args) {
            let (origin, place) = self
                .origins
                .get(&invalid.flag)
                .cloned()
                .unwrap_or((Origin::Default, Place::Default(usize::MAX)));
            let problem = Problem {
                origin,
                flag: invalid.flag,
                message: invalid.message,
            };
            self.push(Some(place), problem);
        }
        Ok(Some(args))
    }

    /// A refusal of the final parse as problems: settings required and given by no layer, or
    /// two settings that cannot go together. Any other refusal is clap's.
    fn ties(&mut self, error: clap::Error) -> Result<(), ResolveError> {
        let named = |kind| match error.get(kind) {
            Some(ContextValue::String(s)) => vec![s.clone()],
            Some(ContextValue::Strings(s)) => s.clone(),
            _ => Vec::new(),
        };
        let long_of = |shown: &str| {
            let flag = shown.split_whitespace().next().unwrap_or_default();
            flag.trim_start_matches("--").to_owned()
        };
        match error.kind() {
            ErrorKind::MissingRequiredArgument => {
                for shown in named(ContextKind::InvalidArg) {
                    let long = long_of(&shown);
                    if self.broken.contains(&long) {
                        continue;
                    }
                    let var = self.arg(&long).and_then(variable);
                    let place = self.position(&long);
                    let mut message = format!("required: give --{long}, `{long} = …` in the file");
                    if let Some(var) = var {
                        message.push_str(&format!(", or {var}"));
                    }
                    let problem = Problem {
                        origin: Origin::Unset,
                        flag: long,
                        message,
                    };
                    self.push(Some(place), problem);
                }
                Ok(())
            }
            ErrorKind::ArgumentConflict => {
                let long = long_of(&named(ContextKind::InvalidArg).concat());
                let others: Vec<String> = named(ContextKind::PriorArg)
                    .iter()
                    .map(|shown| {
                        let other = long_of(shown);
                        match self.origins.get(&other) {
                            Some((origin, _)) => format!("--{other} (from {origin})"),
                            None => format!("--{other}"),
                        }
                    })
                    .collect();
                let (origin, place) = self
                    .origins
                    .get(&long)
                    .cloned()
                    .unwrap_or((Origin::Flag, Place::Flag(usize::MAX)));
                let problem = Problem {
                    origin,
                    flag: long,
                    message: format!("cannot be used with {}", others.join(", ")),
                };
                self.push(Some(place), problem);
                Ok(())
            }
            _ => Err(ResolveError::Flags(error)),
        }
    }

    fn arg(&self, long: &str) -> Option<&Arg> {
        self.command
            .get_arguments()
            .find(|a| a.get_long() == Some(long))
    }

    fn position(&self, long: &str) -> Place {
        let position = self
            .command
            .get_arguments()
            .position(|a| a.get_long() == Some(long));
        Place::Default(position.unwrap_or(usize::MAX))
    }
}

/// `<PLUGIN>`: how `--help` shows a positional.
fn positional_name(arg: &Arg) -> String {
    let name = arg
        .get_value_names()
        .and_then(|names| names.first().map(ToString::to_string))
        .unwrap_or_else(|| arg.get_id().as_str().to_ascii_uppercase());
    format!("<{name}>")
}

/// Adds a setting's values to the merged command line.
fn push(argv: &mut Vec<OsString>, long: &str, action: &ArgAction, values: Vec<OsString>) {
    match action {
        // A switch: present when its value is true (a layer's `false` beats a lower `true`).
        ArgAction::SetTrue | ArgAction::SetFalse => {
            let on = values.iter().any(|v| {
                matches!(
                    v.to_str().map(str::to_ascii_lowercase).as_deref(),
                    Some("true" | "t" | "1" | "yes" | "y" | "on")
                )
            });
            if on {
                argv.push(OsString::from(format!("--{long}")));
            }
        }
        // `--long=value`, one argument: a value starting with `-` stays this flag's value.
        _ => argv.extend(values.into_iter().map(|value| {
            let mut flag = OsString::from(format!("--{long}="));
            flag.push(value);
            flag
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command with a setting of each kind: bounded numbers, a switch, possible values, a
    /// repeatable `KEY=VALUE`, a required flag, a positional, a secret and two flags that
    /// conflict.
    #[derive(Debug, clap::Args)]
    struct Demo {
        /// Calls at once (1..=1024).
        #[arg(long = "max-active", default_value_t = 4,
              value_parser = clap::value_parser!(u32).range(1..=1024))]
        max_active: u32,
        /// Waiting requests (0..=100000).
        #[arg(long = "max-waiting", default_value_t = 64,
              value_parser = clap::value_parser!(u32).range(0..=100_000))]
        max_waiting: u32,
        #[arg(long = "wait-ms", default_value_t = 5000)]
        wait_ms: u64,
        #[arg(long)]
        json: bool,
        #[arg(long = "log-format", default_value = "text", value_parser = ["text", "json"])]
        log_format: String,
        #[arg(long = "plugin-config", value_name = "KEY=VALUE")]
        plugin_config: Vec<String>,
        #[arg(long = "admin-token", value_parser = token)]
        admin_token: Option<String>,
        #[arg(long)]
        body: Option<String>,
        #[arg(long, conflicts_with = "body")]
        bodies: Option<String>,
        #[arg(long, value_name = "DIR")]
        output: PathBuf,
        #[arg(value_name = "PLUGIN")]
        plugin: Option<PathBuf>,
    }

    fn token(value: &str) -> Result<String, String> {
        if value.len() >= 8 {
            Ok(value.to_owned())
        } else {
            Err(format!("{value} is shorter than 8 bytes"))
        }
    }

    /// `max-waiting` may not be over 100 times `max-active`: a check across settings.
    struct DemoCommand;

    impl Layered for DemoCommand {
        type Args = Demo;
        const NAME: &'static str = "demo";

        fn validate(args: &Demo) -> Vec<crate::Invalid> {
            let mut invalid = Vec::new();
            if args.max_waiting > args.max_active * 100 {
                invalid.push(crate::Invalid::new(
                    "max-waiting",
                    format!("over 100 times --max-active ({})", args.max_active),
                ));
            }
            invalid
        }
    }

    const FILE: &str = "demo.toml";

    /// Resolves `argv` (after `demo`) with `vars` and the file `demo.toml` holding `text`.
    fn demo(argv: &[&str], vars: &[(&str, &str)], text: &str) -> Result<Demo, ResolveError> {
        let text = text.to_owned();
        let read = move |path: &Path| {
            assert_eq!(path, Path::new(FILE));
            Ok(text.clone())
        };
        resolve::<DemoCommand>(
            argv.iter().map(OsString::from),
            &Env::new(vars.iter().copied()),
            &read,
        )
    }

    fn problems(resolved: Result<Demo, ResolveError>) -> Vec<String> {
        match resolved {
            Err(ResolveError::Settings(problems)) => {
                problems.iter().map(ToString::to_string).collect()
            }
            other => panic!("expected problems, got {other:?}"),
        }
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_file_which_beats_the_default() {
        let file = "max-active = 2\nmax-waiting = 7\nwait-ms = 1234\njson = true\n\
                    plugin-config = { a = \"1\", b = 2 }\noutput = \"out\"\n";
        let from_file = demo(&["--config", FILE], &[], file).unwrap();
        assert_eq!(
            (
                from_file.max_active,
                from_file.max_waiting,
                from_file.wait_ms
            ),
            (2, 7, 1234)
        );
        assert!(from_file.json);
        assert_eq!(from_file.plugin_config, ["a=1", "b=2"]);
        assert_eq!(
            from_file.output,
            PathBuf::from("out"),
            "a required flag from the file"
        );

        let env = [
            ("TURNSTILE_MAX_ACTIVE", "9"),
            ("TURNSTILE_WAIT_MS", "42"),
            ("TURNSTILE_JSON", "false"),
        ];
        let from_env = demo(&["--config", FILE], &env, file).unwrap();
        assert_eq!((from_env.max_active, from_env.max_waiting), (9, 7));
        assert_eq!(from_env.wait_ms, 42);
        assert!(
            !from_env.json,
            "the environment's false beats the file's true"
        );

        let flags = demo(
            &[
                "--config",
                FILE,
                "--max-active",
                "5",
                "--plugin-config",
                "x=1",
            ],
            &env,
            file,
        )
        .unwrap();
        assert_eq!((flags.max_active, flags.wait_ms), (5, 42));
        assert_eq!(
            flags.plugin_config,
            ["x=1"],
            "a layer replaces a setting whole"
        );

        let defaults = demo(&["--output", "o"], &[], "").unwrap();
        assert_eq!((defaults.max_active, defaults.max_waiting), (4, 64));
        assert_eq!(defaults.log_format, "text");
        // A positional comes from the command line, even one that looks like a flag.
        let positional = demo(&["--output", "o", "--", "-plugin.wasm"], &[], "").unwrap();
        assert_eq!(positional.plugin, Some(PathBuf::from("-plugin.wasm")));
    }

    /// The new user: a value out of bounds and a misspelled key in one file, a bad
    /// variable, a misspelled variable, a flag clap would have stopped at, and a check across
    /// settings — every one reported at once, in order, once each, with its origin.
    #[test]
    fn every_problem_is_reported_at_once_in_order_with_its_origin() {
        let file = "# demo\nmax-waitng = 5\nmax-active = 0\noutput = \"o\"\nlog-format = \"jsn\"\n";
        let env = [
            ("TURNSTILE_WAIT_MS", "forever"),
            ("TURNSTILE_MAX_WAITNG", "1"),
            ("TURNSTILE_PERFMAP", "1"),
        ];
        let argv = ["--json", "--config", FILE, "--max-active", "abc"];
        let found = problems(demo(&argv, &env, file));
        assert_eq!(
            found,
            [
                "demo.toml:2: max-waitng: unknown key: not a flag of `turnstile demo` (keys are \
                 its flags without `--`); a similar key exists: 'max-waiting'",
                "demo.toml:5: log-format: invalid value 'jsn'; possible values: text, json; a \
                 similar value exists: 'json'",
                "TURNSTILE_MAX_WAITNG: unknown variable: not a setting of `turnstile demo` (a \
                 setting's variable is TURNSTILE_ and its flag's name in capitals, `_` for `-`); \
                 a similar variable exists: TURNSTILE_MAX_WAITING",
                "TURNSTILE_WAIT_MS: invalid value 'forever': invalid digit found in string",
                "--max-active: invalid value 'abc': invalid digit found in string",
            ]
        );
        // The file's 0 is overridden by the flag; alone, it is reported at its line, after the
        // misspelled key. The check across settings waits until max-active is valid: with its
        // default standing in, its "over 100 times --max-active (4)" would be the default's.
        let file = "max-waitng = 5\nmax-active = 0\nmax-waiting = 500\noutput = \"o\"\n";
        let found = problems(demo(&["--config", FILE], &[], file));
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0].starts_with("demo.toml:1: max-waitng: unknown key"),
            "{found:#?}"
        );
        assert_eq!(
            found[1],
            "demo.toml:2: max-active: invalid value '0': 0 is not in 1..=1024"
        );
        // With max-active valid, the check across settings names max-waiting's line; a check
        // on a setting whose value was refused is not reported on top of it.
        let file = "max-active = 2\nmax-waiting = 500\noutput = \"o\"\n";
        let found = problems(demo(&["--config", FILE], &[], file));
        assert_eq!(
            found,
            ["demo.toml:2: max-waiting: over 100 times --max-active (2)"]
        );
        let found = problems(demo(&["--config", FILE, "--max-waiting=-1"], &[], file));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].starts_with("--max-waiting: invalid value '-1'"),
            "{found:#?}"
        );
    }

    #[test]
    fn problems_come_in_line_order_then_variables_then_flags_as_typed() {
        let file = "wait-ms = \"x\"\nmax-active = 0\nnope = 1\n";
        let env = [("TURNSTILE_ZZZ", "1"), ("TURNSTILE_AAA", "1")];
        let argv = [
            "--max-waiting",
            "x",
            "--config",
            FILE,
            "--output",
            "",
            "--",
            "",
        ];
        let found = problems(demo(&argv, &env, file));
        let heads: Vec<&str> = found
            .iter()
            .map(|p| p.split(": ").next().unwrap_or_default())
            .collect();
        assert_eq!(
            heads,
            [
                "demo.toml:1",
                "demo.toml:2",
                "demo.toml:3",
                "TURNSTILE_AAA",
                "TURNSTILE_ZZZ",
                "--max-waiting",
                "--output",
                "<PLUGIN>",
            ],
            "{found:#?}"
        );
    }

    #[test]
    fn a_misspelled_name_gets_the_nearest_and_a_far_one_none() {
        let found = problems(demo(
            &["--config", FILE],
            &[("TURNSTILE_MAX_ACTVE", "1"), ("TURNSTILE_COLOUR", "1")],
            "output = \"o\"\nwait-m = 1\nplugin = \"p\"\nconfig = \"x\"\nfrobnicate = 1\n",
        ));
        assert!(
            found[0].ends_with("a similar key exists: 'wait-ms'"),
            "{found:#?}"
        );
        assert!(
            found[1].ends_with("PLUGIN is given on the command line only"),
            "{found:#?}"
        );
        assert!(found[2].contains("cannot name another"), "{found:#?}");
        assert!(!found[3].contains("similar"), "{found:#?}");
        assert!(
            found[4].starts_with("TURNSTILE_COLOUR: unknown variable"),
            "{found:#?}"
        );
        assert!(!found[4].contains("similar"), "{found:#?}");
        assert!(
            found[5].ends_with("a similar variable exists: TURNSTILE_MAX_ACTIVE"),
            "{found:#?}"
        );
    }

    #[test]
    fn variables_of_other_commands_and_of_the_project_are_not_unknown() {
        let read = |_: &Path| Ok(String::new());
        let env = Env::new([("TURNSTILE_USERS", "3"), ("TURNSTILE_TOOLCHAINS", "/t")])
            .with_settings_elsewhere(["TURNSTILE_USERS".to_owned()]);
        let argv = ["--output", "o"].map(OsString::from);
        assert!(resolve::<DemoCommand>(argv, &env, &read).is_ok());
    }

    #[test]
    fn requirements_and_conflicts_are_problems_with_their_origins() {
        let found = problems(demo(&[], &[("TURNSTILE_BODY", "{}")], ""));
        assert_eq!(
            found,
            [
                "--output (not set): required: give --output, `output = …` in the file, or \
              TURNSTILE_OUTPUT"
            ]
        );
        let found = problems(demo(
            &["--config", FILE, "--bodies", "b.jsonl"],
            &[],
            "output = \"o\"\nbody = \"{}\"\n",
        ));
        assert_eq!(
            found,
            ["demo.toml:2: body: cannot be used with --bodies (from command line)"]
        );
    }

    #[test]
    fn a_secret_s_value_is_never_echoed_from_any_layer() {
        for (argv, env, file) in [
            (vec!["--admin-token", "hunter2"], vec![], ""),
            (vec![], vec![("TURNSTILE_ADMIN_TOKEN", "hunter2")], ""),
            (
                vec!["--config", FILE],
                vec![],
                "admin-token = \"hunter2\"\n",
            ),
        ] {
            let mut argv = argv;
            argv.extend(["--output", "o"]);
            let found = problems(demo(&argv, &env, file));
            assert_eq!(found.len(), 1, "{found:#?}");
            assert!(!found[0].contains("hunter2"), "{found:#?}");
            assert!(found[0].contains("shorter than 8 bytes"), "{found:#?}");
        }
    }

    #[test]
    fn what_clap_cannot_read_and_a_file_that_is_no_toml_stop_first() {
        assert!(matches!(
            demo(&["--max-activ", "3"], &[], ""),
            Err(ResolveError::Flags(e)) if e.kind() == ErrorKind::UnknownArgument
        ));
        assert!(matches!(
            demo(&["--config", FILE], &[], "output = \n"),
            Err(ResolveError::Syntax { line: 1, .. })
        ));
        let found = problems(demo(&["--config", FILE], &[], "output = [1]\njson = 1\n"));
        assert_eq!(
            found,
            [
                "demo.toml:1: output: takes a string, a number or a boolean",
                "demo.toml:2: json: takes true or false",
            ]
        );
    }

    #[test]
    fn a_file_alone_is_checked_without_its_requirements() {
        let read = |text: &'static str| move |_: &Path| Ok(text.to_owned());
        let path = Path::new(FILE);
        assert!(check_file::<DemoCommand>(path, &read("max-active = 3\n")).is_ok());
        let refused = check_file::<DemoCommand>(
            path,
            &read("max-active = 3\nmax-waiting = 900\noutput = \"o\"\n"),
        );
        match refused {
            Err(ResolveError::Settings(found)) => {
                assert_eq!(found.len(), 1, "{found:#?}");
                assert_eq!(found[0].flag, "max-waiting");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn help_shows_the_real_command_with_each_variable() {
        let mut command = shape(command::<DemoCommand>(), Required::Kept);
        let help = command.render_long_help().to_string();
        assert!(help.contains("[env: TURNSTILE_MAX_ACTIVE]"), "{help}");
        assert!(help.contains("[possible values: text, json]"), "{help}");
        assert!(help.contains("--config <FILE>"), "{help}");
        assert!(!help.contains("TURNSTILE_PLUGIN_CONFIG"), "{help}");
        let usage = command.render_usage().to_string();
        assert!(
            usage.contains("--output <DIR>"),
            "required in the usage: {usage}"
        );
    }
}
