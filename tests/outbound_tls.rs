//! Outbound HTTPS to a model server whose certificate an internal CA signed: the test makes the
//! CA and the server's certificate (`openssl`, from tests/setup.sh's packages), serves the real
//! upstream over TLS, and shows that only `--outbound-ca-file` makes the host trust it — for
//! `serve` (and `/state` names the file) and for `eval` — that the plugin meanwhile gets
//! wasi:http's `TLS-certificate-error`, and that a CA file that cannot be used stops the start,
//! naming the flag and the file, never its contents.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use turnstile_fixtures as components;

use crate::support::upstream::Upstream;
use crate::support::{TestServer, binary, cache_dir};

/// Runs `openssl` with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl: run tests/setup.sh (Debian package openssl)");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A CA (`ca.pem`) and a certificate it signed for 127.0.0.1 (`server.pem`, `server.key`).
fn internal_ca(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=turnstile tests internal CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(dir, &ca);
    let mut request = vec!["req"];
    request.extend(ec);
    request.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    openssl(dir, &request);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
    (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    )
}

/// Flags serving the `fetch` fixture against `origin`'s `/status/200`, granted it.
fn fetch_flags(origin: &str) -> Vec<String> {
    [
        "--plugin",
        components::FETCH,
        "--outbound-allow",
        origin,
        "--plugin-config",
        &format!("url={origin}/status/200"),
        "--plugin-config",
        "count=1",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_internal_ca_is_trusted_only_when_the_operator_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = internal_ca(dir.path());
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let upstream = Upstream::start_with(
        Duration::ZERO,
        &["--tls-cert", &cert, "--tls-key", &key],
        &[],
    );
    let origin = upstream.origin().to_owned();
    assert!(origin.starts_with("https://127.0.0.1:"), "{origin}");

    // The compiled-in roots alone: the certificate is not trusted, the request fails.
    let flags = fetch_flags(&origin);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start(&flags).await;
    let (status, body) = server.retrieve(json!({ "question": "tls" })).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"], "upstream_unreachable", "{body}");
    let state = server.get_json("/state").await;
    assert_eq!(state["outbound"]["ca_files"], json!([]), "{state}");
    server.stop().await;

    // Its CA named: the same request is answered.
    let mut flags = fetch_flags(&origin);
    flags.extend(["--outbound-ca-file".to_owned(), ca.display().to_string()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start(&flags).await;
    let (status, body) = server.retrieve(json!({ "question": "tls" })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["timing"]["outbound_requests"], 1, "{body}");
    // The path, as the operator named it: never what the file holds.
    let state = server.get_json("/state").await;
    assert_eq!(
        state["outbound"]["ca_files"],
        json!([ca.display().to_string()]),
        "{state}"
    );
    assert!(!state.to_string().contains("BEGIN CERTIFICATE"), "{state}");
    server.stop().await;
}

/// `turnstile eval --json` with the `fetch` plugin asking `origin`, plus `more` flags: each
/// answer's error (`None`: the call succeeded).
fn eval_errors(dir: &Path, origin: &str, more: &[&str]) -> Vec<Option<String>> {
    let questions = dir.join("questions.jsonl");
    std::fs::write(&questions, "{\"q\": \"tls\", \"expect\": [\"json\"]}\n").unwrap();
    let output = Command::new(binary())
        .arg("eval")
        .arg(&questions)
        .args([
            "--json",
            "--plugin",
            components::FETCH,
            "--outbound-allow",
            origin,
        ])
        .args(["--plugin-config", &format!("url={origin}/status/200")])
        .args(["--plugin-config", "count=1", "--cache-dir"])
        .arg(cache_dir())
        .args(more)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["plugins"][0]["answers"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|answer| answer["error"].as_str().map(str::to_owned))
        .collect()
}

/// `eval` makes real requests (`check` sends none), so it takes the operator's CAs too; and
/// until the CA is trusted, the plugin is told why its request failed: wasi:http's
/// `TLS-certificate-error`, not a refused connection.
#[test]
fn eval_trusts_the_ca_it_is_given_and_the_plugin_sees_a_certificate_error_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = internal_ca(dir.path());
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let upstream = Upstream::start_with(
        Duration::ZERO,
        &["--tls-cert", &cert, "--tls-key", &key],
        &[],
    );
    let origin = upstream.origin();

    let errors = eval_errors(dir.path(), origin, &[]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let error = errors[0].as_deref().unwrap_or_default();
    assert!(error.contains("TlsCertificateError"), "{errors:?}");

    let ca = ca.display().to_string();
    let errors = eval_errors(dir.path(), origin, &["--outbound-ca-file", &ca]);
    assert_eq!(errors, [None], "{errors:?}");
}

/// `serve` started with `flags` (on a free port, the test cache): it must fail before serving;
/// its standard error.
fn refused_start(flags: &[&std::ffi::OsStr]) -> String {
    let output = Command::new(binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--cache-dir"])
        .arg(cache_dir())
        .args(flags)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{stderr}");
    stderr
}

#[test]
fn a_ca_file_that_cannot_be_used_stops_serve_naming_it_not_its_contents() {
    let dir = tempfile::tempdir().unwrap();
    let canary = "sk-canary-not-a-certificate-90b1";
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let cases = [
        (dir.path().join("missing.pem"), "could not be read"),
        (
            write("no-pem.pem", &format!("{canary}\n")),
            "holds no certificate",
        ),
        (
            write(
                "broken.pem",
                &format!("-----BEGIN CERTIFICATE-----\n{canary}!!\n"),
            ),
            "not a PEM file",
        ),
        (
            write(
                "not-a-certificate.pem",
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            ),
            "cannot be a root",
        ),
    ];
    for (path, why) in &cases {
        let stderr = refused_start(&["--outbound-ca-file".as_ref(), path.as_os_str()]);
        assert!(stderr.contains("--outbound-ca-file"), "{stderr}");
        assert!(stderr.contains(&*path.to_string_lossy()), "{stderr}");
        assert!(stderr.contains(why), "{stderr}");
        assert!(!stderr.contains(canary), "{stderr}");
    }

    // The config key is the same setting, refused the same way.
    let bad = &cases[1].0;
    let config = write(
        "turnstile.toml",
        &format!("outbound-ca-file = [{:?}]\n", bad.display().to_string()),
    );
    let stderr = refused_start(&["--config".as_ref(), config.as_os_str()]);
    assert!(stderr.contains("--outbound-ca-file"), "{stderr}");
    assert!(stderr.contains(&*bad.to_string_lossy()), "{stderr}");
    assert!(!stderr.contains(canary), "{stderr}");
}
