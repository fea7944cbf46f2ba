//! Every command's settings come the way `serve`'s do (`config.rs`): its flags' defaults, its
//! `--config` file, `TURNSTILE_*` variables, its flags, in rising precedence — for `check`,
//! `eval`, `load`, `drive` and `corpus build` alike, through the one mechanism
//! (`turnstile-config`). Each test runs the binary with a clean `TURNSTILE_*` environment and
//! watches what a person would: the file written, the report's form, the problem and where it
//! says it came from.

use std::path::Path;
use std::process::Command;

use crate::support::binary;

/// `turnstile ARGS` in `dir` with only `vars` of the `TURNSTILE_*` variables: (status, stdout,
/// stderr).
fn turnstile(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> (i32, String, String) {
    let mut command = Command::new(binary());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("TURNSTILE_") {
            command.env_remove(name);
        }
    }
    let out = command
        .current_dir(dir)
        .args(args)
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error: "))
        .collect()
}

/// The corpus file is written where `out` says: the file's, then the variable's, then the
/// flag's (each layer replacing the one below it, the others untouched).
#[test]
fn corpus_build_writes_where_the_file_then_the_environment_then_the_flag_says() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("docs")).unwrap();
    std::fs::write(dir.join("docs/a.md"), "# Alpha\n\nSome text about alpha.\n").unwrap();
    std::fs::write(
        dir.join("corpus.toml"),
        "# corpus build's settings\nout = \"from-file.jsonl\"\nmax-tokens = 400\noverlap = 50\n",
    )
    .unwrap();
    let build = ["corpus", "build", "--config", "corpus.toml", "docs"];
    let written = |name: &str| dir.join(name).exists();

    let (code, _, stderr) = turnstile(dir, &build, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(written("from-file.jsonl"), "the file's `out`");

    let env = [("TURNSTILE_OUT", "from-env.jsonl")];
    let (code, _, stderr) = turnstile(dir, &build, &env);
    assert_eq!(code, 0, "{stderr}");
    assert!(written("from-env.jsonl"), "the variable beats the file");

    std::fs::remove_file(dir.join("from-file.jsonl")).unwrap();
    std::fs::remove_file(dir.join("from-env.jsonl")).unwrap();
    let mut with_flag = build.to_vec();
    with_flag.extend(["--out", "from-flag.jsonl"]);
    let (code, _, stderr) = turnstile(dir, &with_flag, &env);
    assert_eq!(code, 0, "{stderr}");
    assert!(written("from-flag.jsonl"), "the flag beats both");
    assert!(!written("from-env.jsonl") && !written("from-file.jsonl"));

    // The file's other settings were in effect: --overlap 50 is fine beside max-tokens = 400;
    // beside the flag's --max-tokens 100 it is over half, a problem naming the file's line.
    with_flag.extend(["--max-tokens", "100", "--overlap", "60"]);
    let (code, _, stderr) = turnstile(dir, &with_flag, &env);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        errors(&stderr),
        ["--overlap: 60 is over half of --max-tokens (100)"]
    );
}

/// `json = true` in the file makes a JSON report; `TURNSTILE_JSON=false` beats it (lines);
/// `--json` beats both.
#[test]
fn check_reports_as_the_file_then_the_environment_then_the_flag_says() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let plugin = crate::support::lexical_plugin(dir);
    let cache = crate::support::cache_dir();
    std::fs::write(
        dir.join("check.toml"),
        format!(
            "json = true\ncache-dir = {:?}\n",
            cache.display().to_string()
        ),
    )
    .unwrap();
    let check = ["check", "--config", "check.toml", plugin.to_str().unwrap()];
    let is_json = |stdout: &str| serde_json::from_str::<serde_json::Value>(stdout).is_ok();

    let (code, stdout, stderr) = turnstile(dir, &check, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(is_json(&stdout), "the file's json = true: {stdout}");

    let env = [("TURNSTILE_JSON", "false")];
    let (code, stdout, stderr) = turnstile(dir, &check, &env);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !is_json(&stdout),
        "the variable's false beats the file: {stdout}"
    );

    let mut with_flag = check.to_vec();
    with_flag.push("--json");
    let (code, stdout, stderr) = turnstile(dir, &with_flag, &env);
    assert_eq!(code, 0, "{stderr}");
    assert!(is_json(&stdout), "the flag beats both: {stdout}");
}

/// For every command without a server: a bad value in the file is reported at its line; the
/// same setting from the environment replaces it (now the variable is reported, the file's
/// value no longer in effect); from the command line, it replaces both. Nothing runs.
#[test]
fn a_bad_value_is_reported_from_the_layer_that_gives_it() {
    struct Case {
        argv: &'static [&'static str],
        key: &'static str,
        var: &'static str,
        values: [&'static str; 3],
    }
    let cases = [
        Case {
            argv: &["check", "missing.wasm"],
            key: "memory-limit-mib",
            var: "TURNSTILE_MEMORY_LIMIT_MIB",
            values: ["0", "5000", "9999"],
        },
        Case {
            argv: &["eval", "questions.jsonl"],
            key: "limit",
            var: "TURNSTILE_LIMIT",
            values: ["0", "21", "99"],
        },
        Case {
            argv: &[
                "load",
                "--url",
                "http://127.0.0.1:9/retrieve",
                "--duration",
                "1",
                "--output",
                "out",
            ],
            key: "users",
            var: "TURNSTILE_USERS",
            values: ["0", "10001", "20000"],
        },
        Case {
            argv: &["drive", "--output", "drive.json"],
            key: "startup-timeout-s",
            var: "TURNSTILE_STARTUP_TIMEOUT_S",
            values: ["0", "601", "999"],
        },
    ];
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for case in cases {
        let [in_file, in_env, in_flag] = case.values;
        std::fs::write(dir.join("c.toml"), format!("\n{} = {in_file}\n", case.key)).unwrap();
        let mut argv = case.argv.to_vec();
        argv.extend(["--config", "c.toml"]);
        let (code, _, stderr) = turnstile(dir, &argv, &[]);
        assert_eq!(code, 2, "{stderr}");
        let found = errors(&stderr);
        let expected = format!("c.toml:2: {}: invalid value '{in_file}'", case.key);
        assert!(
            found.len() == 1 && found[0].starts_with(&expected),
            "{stderr}"
        );

        let env = [(case.var, in_env)];
        let (code, _, stderr) = turnstile(dir, &argv, &env);
        assert_eq!(code, 2, "{stderr}");
        let found = errors(&stderr);
        let expected = format!("{}: invalid value '{in_env}'", case.var);
        assert!(
            found.len() == 1 && found[0].starts_with(&expected),
            "{stderr}"
        );

        let flag = format!("--{}={in_flag}", case.key);
        argv.push(&flag);
        let (code, _, stderr) = turnstile(dir, &argv, &env);
        assert_eq!(code, 2, "{stderr}");
        let found = errors(&stderr);
        let expected = format!("--{}: invalid value '{in_flag}'", case.key);
        assert!(
            found.len() == 1 && found[0].starts_with(&expected),
            "{stderr}"
        );
    }
}

/// A misspelled variable is a problem with the one it may have meant; a variable of another
/// command's setting (a shell set up for `serve`) and one the project reads for something else
/// are not.
#[test]
fn an_unknown_variable_is_a_problem_with_a_suggestion() {
    let tmp = tempfile::tempdir().unwrap();
    let env = [
        ("TURNSTILE_MEMORY_LIMT_MIB", "8"),
        ("TURNSTILE_MAX_WAITING", "5"),
        ("TURNSTILE_PERFMAP", "1"),
    ];
    let (code, _, stderr) = turnstile(tmp.path(), &["check", "missing.wasm"], &env);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        errors(&stderr),
        [
            "TURNSTILE_MEMORY_LIMT_MIB: unknown variable: not a setting of `turnstile check` (a \
          setting's variable is TURNSTILE_ and its flag's name in capitals, `_` for `-`); a \
          similar variable exists: TURNSTILE_MEMORY_LIMIT_MIB"
        ]
    );
    // Without it, check runs (and fails on its missing plugin, status 1).
    let (code, _, stderr) = turnstile(tmp.path(), &["check", "missing.wasm"], &env[1..]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        errors(&stderr).iter().all(|e| !e.contains("TURNSTILE_")),
        "{stderr}"
    );
}

/// The new user, through the binary: a file with a value out of bounds, a misspelled
/// key, a misspelled variable and a flag of the wrong type — all reported at once, in order,
/// each once, each with its origin; nothing served.
#[test]
fn serve_reports_every_problem_of_every_layer_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("serve.toml"),
        "max-active = 0\nmax-waitng = 5\n",
    )
    .unwrap();
    let (code, stdout, stderr) = turnstile(
        tmp.path(),
        &[
            "serve",
            "--config",
            "serve.toml",
            "--max-subscribers",
            "abc",
        ],
        &[("TURNSTILE_MAX_WAITNG", "3")],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(
        errors(&stderr),
        [
            "serve.toml:2: max-waitng: unknown key: not a flag of `turnstile serve` (keys are its \
             flags without `--`); a similar key exists: 'max-waiting'",
            "TURNSTILE_MAX_WAITNG: unknown variable: not a setting of `turnstile serve` (a \
             setting's variable is TURNSTILE_ and its flag's name in capitals, `_` for `-`); a \
             similar variable exists: TURNSTILE_MAX_WAITING",
            "--max-subscribers: invalid value 'abc': invalid digit found in string",
        ]
    );
    // With the flag fixed, the check across settings runs and names the file's line.
    let (code, _, stderr) = turnstile(tmp.path(), &["serve", "--config", "serve.toml"], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        errors(&stderr),
        [
            "serve.toml:1: max-active: must be 1..=1024, got 0",
            "serve.toml:2: max-waitng: unknown key: not a flag of `turnstile serve` (keys are its \
             flags without `--`); a similar key exists: 'max-waiting'",
        ]
    );
}

/// `config check --for COMMAND FILE` checks a file as that command's: its keys, its values,
/// in line order; a file for one command given for another says which keys are not its own.
#[test]
fn config_check_checks_a_file_for_any_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("load.toml"),
        "users = 0\nurl = \"ftp://x\"\nspawn-rat = 2\nduration = 10\n",
    )
    .unwrap();
    let (code, _, stderr) = turnstile(dir, &["config", "check", "--for", "load", "load.toml"], &[]);
    assert_eq!(code, 1, "{stderr}");
    let found = errors(&stderr);
    assert_eq!(found.len(), 3, "{stderr}");
    assert!(
        found[0].starts_with("load.toml:1: users: invalid value '0'"),
        "{stderr}"
    );
    assert!(
        found[1].starts_with("load.toml:2: url: invalid value 'ftp://x'"),
        "{stderr}"
    );
    assert!(
        found[2].ends_with("a similar key exists: 'spawn-rate'"),
        "{stderr}"
    );

    std::fs::write(
        dir.join("good.toml"),
        "users = 4\nduration = 10\nquiet = true\n",
    )
    .unwrap();
    let (code, stdout, stderr) =
        turnstile(dir, &["config", "check", "--for", "load", "good.toml"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "good.toml: ok");
    // The same file is no `serve` file (`--for` is `serve` unless given).
    let (code, _, stderr) = turnstile(dir, &["config", "check", "good.toml"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(errors(&stderr).len(), 3, "{stderr}");
    assert!(errors(&stderr)[0].contains("unknown key: not a flag of `turnstile serve`"));
}

/// A plugin file that is not there is told before the corpus is read (whose index may take
/// minutes to build: here the corpus is not even JSON Lines, and is never looked at), once, with
/// the OS's reason once.
#[test]
fn a_missing_plugin_is_told_at_once_before_the_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("corpus.jsonl"), "not json lines\n").unwrap();
    let (code, _, stderr) = turnstile(
        tmp.path(),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--plugin",
            "missing.wasm",
            "--corpus",
            "corpus.jsonl",
            "--cache-dir",
            "cache",
        ],
        &[],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        errors(&stderr),
        [
            "loading the plugin: cannot read plugin missing.wasm: No such file or directory (os error 2)"
        ],
        "{stderr}"
    );
}

/// A plugin and a corpus given in each other's place: the file that is not a plugin is told
/// before the corpus is read (a corpus that is no JSON Lines is never looked at), and a plugin
/// given as the corpus is named as a plugin, not sent to `corpus build` as a document.
#[test]
fn a_plugin_and_a_corpus_swapped_are_told_for_what_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("corpus.jsonl"), "{\"id\": \"a\"}\n").unwrap();
    std::fs::write(tmp.path().join("broken.jsonl"), "not json lines\n").unwrap();
    let serve = |plugin: &str, corpus: &str| {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--cache-dir", "cache"];
        args.extend(["--plugin", plugin, "--corpus", corpus]);
        let (code, _, stderr) = turnstile(tmp.path(), &args, &[]);
        assert_eq!(code, 1, "{stderr}");
        errors(&stderr)
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<String>>()
    };
    let told = serve("corpus.jsonl", "broken.jsonl");
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].starts_with("loading the plugin: plugin corpus is not a usable")
            && told[0].contains("not a WebAssembly file"),
        "{told:?}"
    );
    let plugin = crate::support::lexical_plugin(tmp.path());
    let told = serve(plugin.to_str().unwrap(), plugin.to_str().unwrap());
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].contains("is WebAssembly (a plugin), not a corpus: give a plugin with --plugin"),
        "{told:?}"
    );
}
