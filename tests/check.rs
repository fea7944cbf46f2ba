//! `turnstile check` on every shipped component, each with its expected outcome.

use std::process::Command;

use serde_json::Value;
use turnstile_fixtures as components;

/// Runs `turnstile check --json PATH ARGS` and returns (exit success, report).
fn check(path: &str, args: &[&str]) -> (bool, Value) {
    let output = Command::new(crate::support::binary())
        .args(["check", "--json", path])
        .arg("--cache-dir")
        .arg(crate::support::cache_dir())
        .args(args)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    (output.status.success(), report)
}

fn failed(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

fn observed<'a>(report: &'a Value, name: &str) -> &'a str {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}"))["observed"]
        .as_str()
        .unwrap()
}

#[test]
fn both_shipped_plugins_pass_everything() {
    let dir = tempfile::tempdir().unwrap();
    for plugin in [
        crate::support::hybrid_plugin(dir.path()),
        crate::support::lexical_plugin(dir.path()),
    ] {
        let (ok, report) = check(plugin.to_str().unwrap(), &[]);
        assert!(ok, "{}: {report:#}", plugin.display());
        assert_eq!(
            failed(&report),
            Vec::<String>::new(),
            "{}",
            plugin.display()
        );
        assert!(report["passed"].as_u64().unwrap() >= 20, "{report:#}");
        assert_eq!(report["sha256"], crate::support::sha256_of(&plugin));
    }
}

#[test]
fn the_delay_fixture_passes_everything() {
    let (ok, report) = check(components::DELAY, &["--plugin-config", "delay_ms=0"]);
    assert!(ok, "{report:#}");
    assert_eq!(report["failed"], 0);
}

#[test]
fn the_fault_fixture_fits_the_contract_but_traps_as_designed() {
    let (ok, report) = check(components::FAULT, &[]);
    assert!(!ok);
    let failed = failed(&report);
    assert!(
        !failed
            .iter()
            .any(|n| n.starts_with("contract.") || n.starts_with("hygiene.")),
        "{failed:?}"
    );
    assert!(failed.contains(&"behaviour.probe.1".to_owned()));
    // The check names what trapped, not wasmtime's backtrace hint.
    let probe = observed(&report, "behaviour.probe.1");
    assert!(
        probe.starts_with("trapped: wasm trap: wasm `unreachable`"),
        "{probe}"
    );
    // Sessions live in the call's store, which the host drops whatever the call did: a check of
    // them could never fail, so none is reported (the HTTP tests assert no session stays open).
    assert!(
        !report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "hygiene.sessions"),
        "{report:#}"
    );
    assert!(observed(&report, "hygiene.memory").starts_with("peak "));
}

/// The memory check can fail: a plugin that asks for more than the cap fails it, with what it
/// asked for, even though the host refused the growth.
#[test]
fn a_plugin_that_asks_for_memory_past_the_cap_fails_the_memory_check() {
    let (ok, report) = check(
        components::HOSTILE,
        &[
            "--plugin-config",
            "attempt=memory",
            "--memory-limit-mib",
            "16",
        ],
    );
    assert!(!ok);
    assert!(
        failed(&report).contains(&"hygiene.memory".to_owned()),
        "{report:#}"
    );
    let memory = observed(&report, "hygiene.memory");
    assert!(memory.starts_with("asked for "), "{memory}");
}

#[test]
fn the_hostile_fixture_without_an_attempt_fails_behaviour_with_typed_errors() {
    let (ok, report) = check(components::HOSTILE, &[]);
    assert!(!ok);
    assert!(observed(&report, "behaviour.probe.1").contains("unknown attempt"));
    assert!(observed(&report, "behaviour.adversarial.emoji").starts_with("typed error"));
}

#[test]
fn a_component_importing_what_no_plugin_gets_is_refused_naming_every_import() {
    let (ok, report) = check(components::OUTSIDE, &[]);
    assert!(!ok);
    assert_eq!(failed(&report), ["contract.imports", "contract.world"]);
    let imports = observed(&report, "contract.imports");
    for import in ["wasi:io/streams@0.3.0", "example:secrets/vault@1.0.0"] {
        assert!(imports.contains(import), "{imports}");
    }
    // Outbound HTTP is a capability: its import is not refused.
    assert!(!imports.contains("wasi:http"), "{imports}");
    // Every import is listed with what it is granted: wasi:http what the operator grants, the
    // other two nothing.
    let listed = report["imports"].as_array().unwrap();
    assert_eq!(listed.len(), 3, "{report:#}");
    let refused: Vec<&str> = listed
        .iter()
        .filter(|i| i["granted"].is_null())
        .map(|i| i["import"].as_str().unwrap())
        .collect();
    assert_eq!(refused.len(), 2, "{report:#}");
    assert!(
        !refused.iter().any(|i| i.starts_with("wasi:http")),
        "{report:#}"
    );
}

/// A component whose runtime links WASI's filesystem and sockets passes the contract: `check`
/// lists each import with what it is granted — nothing, for files and sockets.
#[test]
fn check_lists_every_import_with_what_it_is_granted() {
    let (_, report) = check(components::ESCAPE, &[]);
    assert_eq!(
        failed(&report)
            .iter()
            .filter(|n| n.starts_with("contract."))
            .count(),
        0,
        "{report:#}"
    );
    let listed = report["imports"].as_array().unwrap();
    let granted = |prefix: &str| -> Vec<String> {
        listed
            .iter()
            .filter(|i| i["import"].as_str().unwrap().starts_with(prefix))
            .map(|i| i["granted"].as_str().unwrap_or("REFUSED").to_owned())
            .collect()
    };
    for prefix in ["wasi:filesystem/", "wasi:sockets/"] {
        let grants = granted(prefix);
        assert!(!grants.is_empty(), "{prefix}: {report:#}");
        assert!(
            grants.iter().all(|g| g.starts_with("nothing")),
            "{grants:?}"
        );
    }
    assert_eq!(granted("turnstile:retrieval/config").len(), 1);
}

#[test]
fn human_output_has_a_line_per_check_and_a_summary() {
    let output = Command::new(crate::support::binary())
        .args(["check", components::OUTSIDE])
        .arg("--cache-dir")
        .arg(crate::support::cache_dir())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("PASS contract.component"), "{text}");
    assert!(text.contains("FAIL contract.imports"), "{text}");
    assert!(text.trim_end().ends_with("2 passed, 2 failed"), "{text}");
}

#[test]
fn a_file_that_is_not_a_component_fails_the_first_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-a-component.wasm");
    std::fs::write(&path, b"\0asm\x01\0\0\0").unwrap();
    let (ok, report) = check(path.to_str().unwrap(), &[]);
    assert!(!ok);
    assert_eq!(failed(&report), ["contract.component"]);
}

/// `check` lists a plugin's outbound grants and proves, through the very policy serving uses,
/// that a request to an origin no grant covers is refused — and it sends nothing anywhere.
#[test]
fn check_lists_the_outbound_grants_and_proves_a_denial() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = crate::support::lexical_plugin(dir.path());
    let plugin = plugin.to_str().unwrap();
    let (ok, report) = check(plugin, &[]);
    assert!(ok, "{report:#}");
    assert_eq!(
        observed(&report, "outbound.grants"),
        "none: every request is denied"
    );
    let denied = observed(&report, "outbound.denied");
    assert!(denied.contains("HTTP-request-denied"), "{denied}");
    let (ok, report) = check(
        plugin,
        &[
            "--outbound-allow",
            "https://API.example.com:443",
            "--outbound-allow",
            "http://*.models.example.net:8000",
        ],
    );
    assert!(ok, "{report:#}");
    assert_eq!(
        observed(&report, "outbound.grants"),
        "granted: https://api.example.com, http://*.models.example.net:8000"
    );
    // The metadata address is not granted: the probe asks for it, and it is refused.
    let denied = observed(&report, "outbound.denied");
    assert!(
        denied.starts_with("http://169.254.169.254/") && denied.contains("HTTP-request-denied"),
        "{denied}"
    );
    // A grant that is no origin is refused before anything runs, naming the flag.
    let output = Command::new(crate::support::binary())
        .args([
            "check",
            plugin,
            "--outbound-allow",
            "https://example.com/path",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--outbound-allow"), "{stderr}");
}
