//! `turnstile drive` as a user runs it: real child servers, real HTTP; its JSON checked case by
//! case, independently of the driver's own verdict.

use serde_json::Value;

fn statuses(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[test]
fn drive_reproduces_the_reference_lab() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("drive.json");
    let run = std::process::Command::new(crate::support::binary())
        .args(["drive", "--output"])
        .arg(&output)
        .args(["--delay-plugin", turnstile_fixtures::DELAY])
        .args(["--fault-plugin", turnstile_fixtures::FAULT])
        .env("TURNSTILE_CACHE_DIR", crate::support::cache_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    assert!(run.status.success(), "drive failed:\n{stdout}\n{report:#}");
    assert!(stdout.contains("11 passed, 0 failed"), "{stdout}");

    let case = |name: &str| report["cases"][name]["observed"].clone();
    assert_eq!(case("active_observed")["active"], 1);
    assert_eq!(case("queued_observed")["waiting"], 1);
    assert_eq!(case("queue_overflow")["http_status"], 429);
    assert_eq!(case("queue_overflow")["status"], "queue_full");
    assert_eq!(case("wait_deadline")["http_status"], 503);
    assert_eq!(case("wait_deadline")["status"], "wait_timeout");
    assert_eq!(case("first_completed")["http_status"], 200);
    assert_eq!(
        statuses(&case("idle")["events"]),
        [
            "admitted",
            "queued",
            "queue_full",
            "wait_timeout",
            "released"
        ]
    );
    assert_eq!(case("idle")["active"], 0);
    assert_eq!(case("client_timeout")["client_exception"], "ReadTimeout");
    assert_eq!(case("server_after_timeout")["active"], 1);
    assert_eq!(case("server_after_completion")["active"], 0);
    assert_eq!(
        statuses(&case("server_after_completion")["events"]),
        ["admitted", "released"]
    );
    assert_eq!(
        statuses(&case("fifo_promotion")["events"]),
        ["admitted", "queued", "released", "promoted", "released"]
    );
    assert_eq!(
        case("fifo_promotion")["http_statuses"],
        serde_json::json!([200, 200])
    );
    assert_eq!(case("server_constructor_failure")["http_status"], 500);
    assert_eq!(
        case("server_constructor_failure")["status"],
        "internal_error"
    );
    assert_eq!(case("server_constructor_failure")["active_after"], 0);

    assert_eq!(
        report["execution_mode"],
        "actual-concurrent-loopback-http-single-process"
    );
    assert_eq!(report["model_called"], false);
    assert_eq!(report["controlled_delay_seconds"], 0.35);
    assert!(
        report["scope"]
            .as_str()
            .unwrap()
            .contains("not a latency or capacity benchmark")
    );
    let servers = report["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 3);
    for server in servers {
        assert_eq!(server["startup_observed"], true, "{server}");
        assert_eq!(server["shutdown_exit_status"], 0, "{server}");
        assert_eq!(server["shutdown_complete_observed"], true, "{server}");
        assert_eq!(server["server_process_reaped"], true, "{server}");
        assert!(
            server["command"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == "--fd")
        );
    }
    assert_eq!(report["passed"], true);
    // A run this machine was too slow for is re-run on a fresh server (at most twice, by
    // construction): each re-run is one whose third request timed out in the queue.
    let retries = report["overflow_retries"].as_array().unwrap();
    for retry in retries {
        assert_eq!(retry["events"][2], "wait_timeout", "{retry}");
    }
}
