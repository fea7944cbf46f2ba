//! `serve`'s settings from a file, the environment and flags, in that rising order; every problem
//! of every layer reported at once, in order, unknown keys with their line; `turnstile config
//! check`; the example file covers every flag. (The other commands' settings come the same way:
//! `settings.rs`; the machinery's own tests are in `config/`.)

use std::ffi::OsString;
use std::path::Path;
use turnstile_server::serve::MaxActive::Fixed;
use turnstile_server::serve::ServeArgs;

use turnstile_config::{Env, Origin, Problem, ResolveError};

fn argv(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn env_of(vars: &[(&str, &str)]) -> Env {
    Env::new(vars.iter().copied())
}

/// `serve`'s settings from `argv`, `env` and the file `--config` names.
fn resolve(argv: Vec<OsString>, env: &Env) -> Result<ServeArgs, ResolveError> {
    turnstile_config::resolve::<ServeArgs>(argv, env, &|path| std::fs::read_to_string(path))
}

fn write(dir: &Path, text: &str) -> String {
    let path = dir.join("turnstile.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn flags_override_the_environment_which_overrides_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "max-active = 2\nmax-waiting = 7\nwait-ms = 1234\nno-precompiled-cache = true\n\
         plugin-config = { delay_ms = \"350\", mode = \"a\" }\n",
    );
    let none = env_of(&[]);
    let from_file = resolve(argv(&["--config", &file]), &none).unwrap();
    assert_eq!(
        (
            from_file.max_active,
            from_file.max_waiting,
            from_file.wait_ms
        ),
        (Fixed(2), 7, 1234)
    );
    assert!(from_file.no_precompiled_cache);
    assert_eq!(from_file.given.plugin_config.len(), 2);

    let flags = resolve(
        argv(&[
            "--config",
            &file,
            "--max-active",
            "5",
            "--plugin-config",
            "x=1",
        ]),
        &none,
    )
    .unwrap();
    assert_eq!((flags.max_active, flags.max_waiting), (Fixed(5), 7));
    // A layer that sets a setting replaces it whole.
    assert_eq!(
        flags.given.plugin_config,
        vec![("x".to_owned(), "1".to_owned())]
    );

    let env = env_of(&[
        ("TURNSTILE_MAX_ACTIVE", "9"),
        ("TURNSTILE_WAIT_MS", "42"),
        ("TURNSTILE_NO_PRECOMPILED_CACHE", "false"),
    ]);
    let all = resolve(argv(&["--config", &file, "--max-active", "5"]), &env).unwrap();
    assert_eq!(
        (all.max_active, all.max_waiting, all.wait_ms),
        (Fixed(5), 7, 42)
    );
    assert!(!all.no_precompiled_cache, "the environment beats the file");
    let no_flag = resolve(argv(&["--config", &file]), &env).unwrap();
    assert_eq!(
        no_flag.max_active,
        Fixed(9),
        "the environment beats the file"
    );

    // Defaults when nothing sets a value.
    let defaults = resolve(argv(&[]), &none).unwrap();
    assert_eq!((defaults.max_active, defaults.wait_ms), (Fixed(4), 5000));
}

#[test]
fn bad_files_are_refused_naming_the_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let none = env_of(&[]);
    let file = write(dir.path(), "# settings\nmax-active = 2\nmax-actve = 3\n");
    let problems = refused(resolve(argv(&["--config", &file]), &none));
    assert_eq!(
        lines_and_flags(&problems),
        [(3, "max-actve")],
        "{problems:?}"
    );
    assert!(problems[0].message.contains("unknown key"), "{problems:?}");
    let file = write(dir.path(), "max-active = [1, 2]\n");
    let problems = refused(resolve(argv(&["--config", &file]), &none));
    assert_eq!(
        lines_and_flags(&problems),
        [(1, "max-active")],
        "{problems:?}"
    );
    let file = write(dir.path(), "max-active = \n");
    assert!(matches!(
        resolve(argv(&["--config", &file]), &none),
        Err(ResolveError::Syntax { line: 1, .. })
    ));
    // A value out of its flag's bounds is refused by the flag's own parser, naming its key
    // and line once.
    let file = write(dir.path(), "memory-limit-mib = 0\n");
    let error = resolve(argv(&["--config", &file]), &none)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!("{file}:1: memory-limit-mib: invalid value '0': 0 is not in 1..=4096")
    );
    // From the environment too, named by its variable.
    let bad_env = env_of(&[("TURNSTILE_DRAIN_MS", "forever")]);
    let error = resolve(argv(&[]), &bad_env).unwrap_err().to_string();
    assert_eq!(
        error,
        "TURNSTILE_DRAIN_MS: invalid value 'forever': invalid digit found in string"
    );
}

fn refused(resolved: Result<ServeArgs, ResolveError>) -> Vec<Problem> {
    match resolved {
        Err(ResolveError::Settings(problems)) => problems,
        other => panic!("expected refused settings, got {other:?}"),
    }
}

fn lines_and_flags(problems: &[Problem]) -> Vec<(usize, &str)> {
    problems
        .iter()
        .map(|p| match &p.origin {
            Origin::File { line, .. } => (*line, p.flag.as_str()),
            other => panic!("{p:?} came from {other}"),
        })
        .collect()
}

/// Every problem of every layer at once, each with where it came from: two unknown keys and a
/// value out of bounds in the file, a bad variable, a bad flag, and limits that do not go
/// together.
#[test]
fn every_problem_is_reported_at_once_with_its_origin() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "max-actve = 2\nmemory-limit-mib = 0\nwait-m = 3\nredis-url = \"redis://127.0.0.1:1\"\n",
    );
    let env = env_of(&[("TURNSTILE_DRAIN_MS", "forever")]);
    let problems = refused(resolve(
        argv(&[
            "--max-subscribers",
            "0",
            "--config",
            &file,
            "--max-active",
            "x",
        ]),
        &env,
    ));
    // In order: the file's by line, then the environment's, then the flags as typed.
    let seen: Vec<String> = problems
        .iter()
        .map(|p| format!("{} {}", p.origin, p.flag))
        .collect();
    let expected = vec![
        format!("{file}:1 max-actve"),
        format!("{file}:2 memory-limit-mib"),
        format!("{file}:3 wait-m"),
        "environment TURNSTILE_DRAIN_MS drain-ms".to_owned(),
        "command line max-subscribers".to_owned(),
        "command line max-active".to_owned(),
    ];
    assert_eq!(seen, expected, "{problems:#?}");
    // Once each value is within its bounds, the checks across settings report every problem
    // too, naming where the value that breaks them came from, in line order.
    // 65 settings for the plugin: each is fine, together they are one too many.
    let entries: Vec<String> = (0..65).map(|i| format!("k{i} = \"v\"")).collect();
    let file = write(
        dir.path(),
        &format!(
            "max-active = 2000\nredis-url = \"redis://127.0.0.1:1\"\nplugin-config = {{ {} }}\n",
            entries.join(", ")
        ),
    );
    let problems = refused(resolve(argv(&["--config", &file]), &env_of(&[])));
    let flags: Vec<&str> = problems.iter().map(|p| p.flag.as_str()).collect();
    assert_eq!(
        flags,
        ["max-active", "redis-url", "plugin-config"],
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .all(|p| matches!(p.origin, Origin::File { .. })),
        "{problems:#?}"
    );
}

fn config_check(path: &str) -> (bool, String) {
    let out = std::process::Command::new(crate::support::binary())
        .args(["config", "check", path])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn config_check_validates_without_starting() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "max-active = 2\n");
    let (ok, text) = config_check(&good);
    assert!(ok, "{text}");
    assert!(text.contains(": ok"), "{text}");
    let unknown = write(dir.path(), "\n\nlisten-on = \"x\"\n");
    let (ok, text) = config_check(&unknown);
    assert!(!ok);
    assert!(
        text.contains(":3: listen-on: unknown key")
            && text.contains("similar key exists: 'listen'"),
        "{text}"
    );
    let out_of_range = write(dir.path(), "max-waiting = 100001\n");
    let (ok, text) = config_check(&out_of_range);
    assert!(!ok);
    assert!(
        text.contains(":1: max-waiting: must be 0..=100000, got 100001"),
        "{text}"
    );
}

/// `docs/turnstile.example.toml` is valid and names every `serve` flag.
#[test]
fn the_example_file_is_valid_and_documents_every_flag() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/turnstile.example.toml"
    );
    let (ok, text) = config_check(example);
    assert!(ok, "{text}");
    let content = std::fs::read_to_string(example).unwrap();
    let command = turnstile_config::command::<ServeArgs>();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if long == "config" {
            continue;
        }
        let documented = content
            .lines()
            .any(|l| l.trim_start_matches("# ").starts_with(&format!("{long} =")));
        assert!(
            documented,
            "docs/turnstile.example.toml does not document `{long}`"
        );
    }
}

/// `--log-format json`: every log line is a JSON object; a request's completion line is inside
/// its span (the same id as its `x-request-id`) with route, status, generations and timings.
/// `--access-log false` turns that line off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_the_request_span_and_one_access_line() {
    use crate::support::{serve_child, stop_child};
    let child = serve_child("json", vec!["--log-format".into(), "json".into()]).await;
    let client = reqwest::Client::new();
    let response = client
        .post(child.url("/retrieve"))
        .header("x-request-id", "trace-42")
        .json(&serde_json::json!({"question": "json dumps"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    crate::support::logged(&child, "request completed").await;
    let report = stop_child(child).await;
    assert_eq!(report.shutdown_exit_status, Some(0), "{}", report.stderr);
    let lines: Vec<serde_json::Value> = report
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let access: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["target"] == "turnstile::access" && l["fields"]["route"] == "/retrieve")
        .collect();
    assert_eq!(access.len(), 1, "{}", report.stderr);
    let line = access[0];
    assert_eq!(line["span"]["x_request_id"], "trace-42");
    assert_eq!(line["fields"]["status"], 200);
    assert_eq!(line["fields"]["generation"], 1);
    assert_eq!(line["fields"]["corpus_generation"], 1);
    assert!(line["fields"]["queue_ms"].is_number() && line["fields"]["execution_ms"].is_number());

    let quiet = serve_child("quiet", vec!["--access-log".into(), "false".into()]).await;
    let (status, _) = crate::support::child_retrieve(&client, &quiet, "json").await;
    assert_eq!(status, 200);
    let report = stop_child(quiet).await;
    assert!(
        !report.stderr.contains("request completed"),
        "{}",
        report.stderr
    );
}

/// The README's `serve` flags table is tested against the flags themselves, so a bound is
/// written once (in the flag's parser, or the gate's config) and every place that states it
/// agrees: every flag has a row and every row a flag; a default in the table is clap's default;
/// a range in the table or in the flag's help (`(1..=4096)`) is exactly what `serve` accepts —
/// both ends accepted, one past either end refused.
#[test]
fn the_readme_flags_table_and_the_help_state_the_bounds_serve_enforces() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let table = readme
        .split("## `turnstile serve` flags")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    // The command as it is parsed: its flags and `--config`.
    let command = turnstile_config::command::<ServeArgs>();
    let mut rows = std::collections::BTreeMap::new();
    for line in table.lines().filter(|l| l.starts_with("| `--")) {
        let line = line.replace("\\|", "/");
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let flag = cells[1]
            .trim_matches('`')
            .split_whitespace()
            .next()
            .unwrap();
        let flag = flag
            .trim_start_matches("--")
            .trim_end_matches('`')
            .to_owned();
        rows.insert(flag, (cells[2].to_owned(), cells[3].to_owned()));
    }
    let flags: std::collections::BTreeSet<String> = command
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_owned))
        .collect();
    let documented: std::collections::BTreeSet<String> = rows.keys().cloned().collect();
    assert_eq!(documented, flags, "README rows against `serve`'s flags");

    // Accepted: no problem with this flag (another may still be needed with it).
    let accepts = |flag: &str, value: u64| match resolve(
        argv(&[&format!("--{flag}"), &value.to_string()]),
        &env_of(&[]),
    ) {
        Ok(_) => true,
        Err(ResolveError::Settings(problems)) => problems.iter().all(|p| p.flag != flag),
        Err(other) => panic!("--{flag} {value}: {other}"),
    };
    let number = |text: &str| text.replace(',', "").parse::<u64>().ok();
    let mut ranges_checked = 0;
    for arg in command.get_arguments() {
        let Some(flag) = arg.get_long() else { continue };
        let (default, meaning) = &rows[flag];
        if let Some(clap_default) = arg.get_default_values().first() {
            assert_eq!(
                default.trim_matches('`'),
                clap_default.to_string_lossy(),
                "--{flag}: the README's default"
            );
        }
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        // `(1..=4096)` in the help; `1–4096` (digits with thousands commas) in the README.
        let in_help = help.split('(').skip(1).find_map(|s| {
            let (range, _) = s.split_once(')')?;
            let (low, high) = range.split_once("..=")?;
            Some((number(low)?, number(high)?))
        });
        let in_readme = meaning.split_whitespace().find_map(|word| {
            let (low, high) = word.trim_end_matches([',', ';', ')']).split_once('–')?;
            Some((number(low)?, number(high)?))
        });
        assert_eq!(
            in_readme, in_help,
            "--{flag}: the README's range against the help's"
        );
        if let Some((low, high)) = in_help {
            assert!(
                accepts(flag, low) && accepts(flag, high),
                "--{flag}: {low}..={high} accepted"
            );
            assert!(!accepts(flag, high + 1), "--{flag}: {} refused", high + 1);
            if low > 0 {
                assert!(!accepts(flag, low - 1), "--{flag}: {} refused", low - 1);
            }
            ranges_checked += 1;
        }
    }
    assert!(ranges_checked >= 10, "only {ranges_checked} ranges stated");
}
