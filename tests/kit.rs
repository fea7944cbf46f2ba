//! The kit for plugin authors: `turnstile new plugin --lang rust|python|js DIR` writes a project
//! that builds with its own pinned command, passes `turnstile check` (its `check.sh`, which runs
//! `eval` on the questions it ships too), serves, and is hot-swapped to; the Python and JavaScript
//! templates, given an `upstream`, answer with what a model behind it said.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::upstream::Upstream;
use crate::support::{TestApp, cache_dir};

const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Runs `program args` in `dir` with `envs`, failing the test with its output if it fails.
fn run(dir: &Path, program: &str, args: &[&str], envs: &[(&str, PathBuf)]) -> String {
    let mut command = Command::new(program);
    command.args(args).current_dir(dir);
    // The outer cargo's settings are for this workspace, not for the author's project.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
    ] {
        command.env_remove(var);
    }
    command.envs(envs.iter().map(|(k, v)| (k, v.as_os_str())));
    let output = command.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{program} {args:?} in {}:\n{text}",
        dir.display()
    );
    text
}

/// Scaffolds, builds and checks a project in `lang` (offline: the toolchains are the workspace's,
/// installed by `tests/setup.sh`; the Rust one's crates are in cargo's cache), then serves the
/// embedded plugin and swaps to the project's plugin. One test per language, so that the three
/// (each seconds of compiling) run beside the rest of the suite rather than one after another.
async fn scaffold_build_check_serve_and_swap(lang: &str) {
    let dir = tempfile::tempdir().unwrap();
    let toolchains = Path::new(WORKSPACE).join("target/toolchains");
    let envs = [
        ("TURNSTILE", crate::support::binary().to_owned()),
        ("COMPONENTIZE_PY", toolchains.join("py/bin/componentize-py")),
        (
            "COMPONENTIZE_JS",
            toolchains.join("js/node_modules/.bin/componentize-js"),
        ),
        // The Rust project builds with the workspace's pinned toolchain, from cargo's cache, into
        // the workspace's guest target directory with the workspace's release profile, so that
        // wit-bindgen and its dependencies, compiled for the workspace's own plugins, are reused
        // (the template's own profile asks for LTO: minutes of CPU on a cold machine, for the
        // same component a plugin author builds).
        ("RUSTUP_TOOLCHAIN", "1.95.0".into()),
        ("CARGO_NET_OFFLINE", "true".into()),
        (
            "CARGO_TARGET_DIR",
            Path::new(WORKSPACE).join("target/guests"),
        ),
        ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "3".into()),
        ("CARGO_PROFILE_RELEASE_LTO", "false".into()),
        ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16".into()),
        ("CARGO_PROFILE_RELEASE_DEBUG", "line-tables-only".into()),
        ("CARGO_PROFILE_RELEASE_STRIP", "debuginfo".into()),
    ];
    let project = dir.path().join(format!("my-{lang}-plugin"));
    let wrote = run(
        dir.path(),
        crate::support::binary().to_str().unwrap(),
        &["new", "plugin", "--lang", lang, project.to_str().unwrap()],
        &[],
    );
    assert!(wrote.contains("wit/retrieval.wit"), "{wrote}");
    run(&project, "./build.sh", &[], &envs);
    let wasm = project.join(format!("target/my-{lang}-plugin.wasm"));
    assert!(wasm.is_file(), "{}", wasm.display());
    let cache = cache_dir().display().to_string();
    let checked = run(&project, "./check.sh", &["--cache-dir", &cache], &envs);
    assert!(checked.contains(", 0 failed"), "{checked}");
    assert!(checked.contains("recall@5"), "{checked}");

    let project_arg = project.display().to_string();
    let app = TestApp::load(&["--swap-root", &project_arg]).await;
    let response = app.swap_plugin(json!({"path": wasm})).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{lang}: {body}");
    let (status, answer) = app
        .retrieve(json!({"question": "serialize an object to a JSON formatted string"}))
        .await;
    assert_eq!(status, 200, "{lang}: {answer}");
    assert_eq!(answer["plugin"]["generation"], 2, "{answer}");
    assert_eq!(answer["plugin"]["name"], format!("my-{lang}-plugin"));
    let ids = crate::support::ids(&answer);
    assert!(
        ids.iter().any(|id| id.starts_with("json")),
        "{lang}: {ids:?}"
    );
    assert_eq!(
        answer.get("answer"),
        None,
        "no upstream, no answer: {answer}"
    );
    app.stop().await;
    if lang != "rust" {
        asks_its_upstream(&wasm, lang).await;
    }
}

/// The template's outbound call, switched on: served with `upstream` naming a local
/// OpenAI-compatible server (`tests/upstream/upstream.py`) whose origin is granted, the answer is
/// the model's, quoting the first source it was given. Set by a swap, whose smoke checks refuse
/// every request the candidate makes — which each language's client must take as a refusal
/// (the host reads a refused request's body before answering, so `fetch` sees the refusal).
async fn asks_its_upstream(wasm: &Path, lang: &str) {
    let upstream = Upstream::start(Duration::ZERO);
    let origin = upstream.origin();
    let project = wasm
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .display()
        .to_string();
    // A granted origin where nothing listens: the connection is refused.
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}", nobody.local_addr().unwrap());
    drop(nobody);
    let app = TestApp::load(&[
        "--outbound-allow",
        origin,
        "--outbound-allow",
        &closed,
        "--swap-root",
        &project,
    ])
    .await;
    let swapped = app
        .swap_plugin(json!({"path": wasm, "config": {"upstream": origin}}))
        .await;
    let status = swapped.status().as_u16();
    assert_eq!(status, 200, "{lang}: {}", swapped.text().await.unwrap());
    let (status, answer) = app
        .retrieve(json!({"question": "serialize an object to a JSON formatted string"}))
        .await;
    assert_eq!(status, 200, "{lang}: {answer}");
    let first = answer["sources"][0]["id"].as_str().unwrap_or_default();
    let said = answer["answer"].as_str().unwrap_or_default();
    assert!(
        said.starts_with(&format!("According to [{first}]")),
        "{lang}: {answer}"
    );
    assert_eq!(upstream.stats()["requests"], 1, "{}", upstream.log());
    // A connection that cannot be made: the plugin is told so, and answers with its sources.
    let swapped = app
        .swap_plugin(json!({"path": wasm, "config": {"upstream": closed}}))
        .await;
    assert_eq!(swapped.status(), 200, "{lang}");
    let (status, answer) = app
        .retrieve(json!({"question": "serialize an object to a JSON formatted string"}))
        .await;
    assert_eq!(status, 200, "{lang}: {answer}");
    assert!(
        !answer["sources"].as_array().unwrap().is_empty(),
        "{answer}"
    );
    assert_eq!(answer.get("answer"), None, "{lang}: {answer}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_template_builds_checks_serves_and_is_swapped_to() {
    scaffold_build_check_serve_and_swap("rust").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_template_builds_checks_serves_and_is_swapped_to() {
    scaffold_build_check_serve_and_swap("python").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_template_builds_checks_serves_and_is_swapped_to() {
    scaffold_build_check_serve_and_swap("js").await;
}

/// The stubs the templates ship for an author's editor (Python's `typings/`, JavaScript's `types/`)
/// are what the pinned toolchains generate from the contract (`kit/stubs.sh --check`): a change to
/// `wit/retrieval.wit` that is not carried into them fails here, naming the difference.
#[test]
fn the_templates_stubs_are_what_the_contract_generates() {
    let script = format!("{WORKSPACE}/kit/stubs.sh");
    run(Path::new(WORKSPACE), &script, &["--check"], &[]);
}

/// The JavaScript template's `plugin.js` type-checks against its stubs (`tsc -p jsconfig.json`,
/// with the TypeScript its lock installs beside componentize-js), and a call the host does not
/// offer is caught: the stubs declare the modules as `plugin.js` imports them.
#[test]
fn the_javascript_template_type_checks_against_its_stubs() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("typed-plugin");
    run(
        dir.path(),
        crate::support::binary().to_str().unwrap(),
        &["new", "plugin", "--lang", "js", project.to_str().unwrap()],
        &[],
    );
    let toolchains = std::env::var_os("TURNSTILE_TOOLCHAINS").map_or_else(
        || Path::new(WORKSPACE).join("target/toolchains"),
        PathBuf::from,
    );
    let tsc = toolchains.join("js/node_modules/.bin/tsc");
    let tsc = tsc.to_str().unwrap();
    run(&project, tsc, &["-p", "jsconfig.json"], &[]);

    let plugin = project.join("plugin.js");
    let text = std::fs::read_to_string(&plugin).unwrap();
    assert!(text.contains("Session.open()"), "{text}");
    std::fs::write(&plugin, text.replace("Session.open()", "Session.opne()")).unwrap();
    let output = Command::new(tsc)
        .args(["-p", "jsconfig.json"])
        .current_dir(&project)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{stdout}");
    assert!(stdout.contains("'opne' does not exist"), "{stdout}");
}

/// `new plugin` refuses a folder that is not empty, and a name that cannot name a plugin, and
/// writes nothing then.
#[test]
fn new_plugin_overwrites_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("keep.txt"), "mine").unwrap();
    for (target, expected) in [
        (taken.clone(), "not empty"),
        (dir.path().join("Bad Name"), "cannot name a plugin"),
    ] {
        let output = Command::new(crate::support::binary())
            .args(["new", "plugin", "--lang", "python"])
            .arg(&target)
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{stderr}");
    }
    let left: Vec<_> = std::fs::read_dir(&taken).unwrap().collect();
    assert_eq!(left.len(), 1);
    assert!(!dir.path().join("Bad Name").exists());
}
