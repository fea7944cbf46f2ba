//! `serve`'s settings from a file, flags and the environment, in that rising order; unknown keys
//! refused with their line; `turnstile config check`; the example file covers every flag.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;

use turnstile_server::serve::{ResolveError, resolve};

fn argv(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| vars.get(name).map(OsString::from)
}

fn write(dir: &Path, text: &str) -> String {
    let path = dir.join("turnstile.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn the_environment_overrides_flags_which_override_the_file() {
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
        (2, 7, 1234)
    );
    assert!(from_file.no_precompiled_cache);
    assert_eq!(from_file.plugin_config.len(), 2);

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
    assert_eq!((flags.max_active, flags.max_waiting), (5, 7));
    // A layer that sets a setting replaces it whole.
    assert_eq!(flags.plugin_config, vec![("x".to_owned(), "1".to_owned())]);

    let env = env_of(&[
        ("TURNSTILE_MAX_ACTIVE", "9"),
        ("TURNSTILE_WAIT_MS", "42"),
        ("TURNSTILE_NO_PRECOMPILED_CACHE", "false"),
    ]);
    let all = resolve(argv(&["--config", &file, "--max-active", "5"]), &env).unwrap();
    assert_eq!((all.max_active, all.max_waiting, all.wait_ms), (9, 7, 42));
    assert!(!all.no_precompiled_cache);

    // Defaults when nothing sets a value.
    let defaults = resolve(argv(&[]), &none).unwrap();
    assert_eq!((defaults.max_active, defaults.wait_ms), (4, 5000));
}

#[test]
fn bad_files_are_refused_naming_the_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let none = env_of(&[]);
    let file = write(dir.path(), "# settings\nmax-active = 2\nmax-actve = 3\n");
    match resolve(argv(&["--config", &file]), &none) {
        Err(ResolveError::UnknownKey { key, line, .. }) => {
            assert_eq!((key.as_str(), line), ("max-actve", 3))
        }
        other => panic!("{other:?}"),
    }
    let file = write(dir.path(), "max-active = [1, 2]\n");
    assert!(matches!(
        resolve(argv(&["--config", &file]), &none),
        Err(ResolveError::WrongType { line: 1, .. })
    ));
    let file = write(dir.path(), "max-active = \n");
    assert!(matches!(
        resolve(argv(&["--config", &file]), &none),
        Err(ResolveError::Syntax { line: 1, .. })
    ));
    // A value out of its flag's bounds is refused by the flag's own parser, naming it.
    let file = write(dir.path(), "memory-limit-mib = 0\n");
    let error = resolve(argv(&["--config", &file]), &none)
        .unwrap_err()
        .to_string();
    assert!(error.contains("--memory-limit-mib"), "{error}");
    // From the environment too.
    let bad_env = env_of(&[("TURNSTILE_DRAIN_MS", "forever")]);
    let error = resolve(argv(&[]), &bad_env).unwrap_err().to_string();
    assert!(error.contains("--drain-ms"), "{error}");
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
        text.contains("line 3") && text.contains("listen-on"),
        "{text}"
    );
    let out_of_range = write(dir.path(), "max-waiting = 100001\n");
    let (ok, text) = config_check(&out_of_range);
    assert!(!ok);
    assert!(text.contains("--max-waiting"), "{text}");
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
    let command = <turnstile_server::serve::ServeArgs as clap::Args>::augment_args(
        clap::Command::new("serve"),
    );
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
/// its span (the same id as its `x-request-id`) with route, status, generation and timings.
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
