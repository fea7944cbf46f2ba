//! The OpenAPI document: served at `/openapi.json`, generated from the code's own types, and
//! committed as `docs/openapi.json` — the same document everywhere.

use crate::support::TestApp;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committed_document_is_the_generated_one() {
    let generated = turnstile_server::http::openapi_json();
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json"))
            .unwrap();
    assert!(
        committed.trim_end() == generated.trim_end(),
        "docs/openapi.json is not the generated document; regenerate it with \
         `cargo run -p turnstile-cli -- openapi > docs/openapi.json`"
    );
    let app = TestApp::load(&[]).await;
    let served = app.get("/openapi.json").await.text().await.unwrap();
    assert_eq!(served, generated);
    let document: serde_json::Value = serde_json::from_str(&served).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    for path in turnstile_server::http::routes() {
        assert!(
            document["paths"][path].is_object(),
            "{path} is not documented"
        );
    }
    app.stop().await;
}

/// Schemathesis against a real server (`tests/schemathesis/run.sh`; `tests/setup.sh` installs
/// it): no 5xx, every response as the document says, every schema-valid request answered.
#[test]
fn schemathesis_finds_nothing() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/schemathesis/run.sh");
    let out = std::process::Command::new(script)
        .arg(crate::support::binary())
        .output()
        .unwrap();
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains(" passed"), "{report}");
}
