//! Outbound HTTPS to a model server whose certificate an internal CA signed: the test makes the
//! CA and the server's certificate (`openssl`, from tests/setup.sh's packages), serves the real
//! upstream over TLS, and shows that only `--outbound-ca-file` makes the host trust it — and that
//! a CA file that holds no certificate stops `serve` at start, naming the file, not its contents.

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
    server.stop().await;

    // Its CA named: the same request is answered.
    let mut flags = fetch_flags(&origin);
    flags.extend(["--outbound-ca-file".to_owned(), ca.display().to_string()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start(&flags).await;
    let (status, body) = server.retrieve(json!({ "question": "tls" })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["timing"]["outbound_requests"], 1, "{body}");
    server.stop().await;
}

#[test]
fn a_ca_file_without_a_certificate_stops_serve_naming_it_not_its_contents() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("internal-ca.pem");
    std::fs::write(&bad, "sk-canary-not-a-certificate-90b1\n").unwrap();
    let output = Command::new(binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--cache-dir"])
        .arg(cache_dir())
        .arg("--outbound-ca-file")
        .arg(&bad)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("--outbound-ca-file"), "{stderr}");
    assert!(stderr.contains(&*bad.to_string_lossy()), "{stderr}");
    assert!(stderr.contains("holds no certificate"), "{stderr}");
    assert!(!stderr.contains("sk-canary"), "{stderr}");
}
