//! The OpenAPI document: generated from the code's own types, served at `/openapi.json`, and
//! committed as `docs/openapi.json` — the same document everywhere; and it names exactly the
//! routes the router serves, with the access rule the router applies, both checked against a
//! list written here by hand (not read from the generator).

use std::collections::BTreeSet;

use axum::body::Body;
use axum::http::Request;
use serde_json::Value;

use crate::support::TestApp;

/// Every route of the service as a client sees it — method, path, and whether it is guarded
/// beyond loopback (401/403) — written here, independently of the route table.
const ROUTES: [(&str, &str, bool); 13] = [
    ("POST", "/retrieve", false),
    ("POST", "/v1/chat/completions", false),
    ("GET", "/v1/models", false),
    ("GET", "/healthz", false),
    ("GET", "/readyz", false),
    ("GET", "/openapi.json", false),
    ("GET", "/", false),
    ("GET", "/state", true),
    ("GET", "/metrics", true),
    ("GET", "/dashboard", true),
    ("GET", "/events", true),
    ("POST", "/admin/plugin", true),
    ("POST", "/admin/corpus", true),
];

fn request(method: &str, path: &str) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .body(Body::empty())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committed_document_is_the_generated_one_and_is_served() {
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
    let served = app.get("/openapi.json").await;
    assert_eq!(served.status(), 200);
    assert_eq!(served.headers()["content-type"], "application/json");
    let served = served.text().await.unwrap();
    assert_eq!(served, generated);
    let document: Value = serde_json::from_str(&served).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    app.stop().await;
}

/// The document's routes are the list's; the router answers each of them (never 404 or 405),
/// refuses every other method on their paths (405) and knows no other path (404); the metric
/// labels are the list's paths.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_names_exactly_the_routes_the_router_serves() {
    let app = TestApp::load(&[]).await;
    let document = app.get_json("/openapi.json").await;
    let documented: BTreeSet<(String, String)> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| (method.to_uppercase(), path.clone()))
        })
        .collect();
    let listed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(method, path, _)| ((*method).to_owned(), (*path).to_owned()))
        .collect();
    assert_eq!(
        documented, listed,
        "the document's routes are not the list's"
    );

    for (method, path, _) in ROUTES {
        let status = app.respond(request(method, path)).await.status().as_u16();
        assert!(
            status != 404 && status != 405,
            "{method} {path}: {status}, the router does not serve it"
        );
        for other in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
            if other != method {
                let status = app.respond(request(other, path)).await.status().as_u16();
                assert_eq!(status, 405, "{other} {path} is served, undocumented");
            }
        }
    }
    assert_eq!(app.respond(request("GET", "/nowhere")).await.status(), 404);

    let labels: BTreeSet<&str> = turnstile_server::http::routes().iter().copied().collect();
    let paths: BTreeSet<&str> = ROUTES.iter().map(|(_, path, _)| *path).collect();
    assert_eq!(labels, paths, "the route labels are not the list's paths");
    app.stop().await;
}

/// The document's 401 is exactly on the guarded routes (its 403 on every route: a `Host` not
/// allowed), and the router guards exactly those: beyond loopback, a request from another origin
/// is refused (403 `cross_origin`) on each of them and on no other route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guarded_routes_are_documented_and_guarded_alike() {
    let app = TestApp::beyond_loopback(&[]).await;
    let document = app.get_json("/openapi.json").await;
    for (method, path, guarded) in ROUTES {
        let responses = &document["paths"][path][method.to_lowercase()]["responses"];
        assert!(responses.is_object(), "{method} {path} is not documented");
        for (status, schema) in [("401", "UnauthorizedBody"), ("403", "ForbiddenBody")] {
            let documented = &responses[status]["content"]["application/json"]["schema"]["$ref"];
            // Every route refuses a Host it does not answer to (403); only guarded ones ask for
            // a token (401).
            if guarded || status == "403" {
                assert_eq!(
                    documented,
                    &format!("#/components/schemas/{schema}"),
                    "{method} {path}: no {status} documented"
                );
            } else {
                assert!(
                    responses.get(status).is_none(),
                    "{method} {path}: {status} documented on a public route"
                );
            }
        }
        let refused = app
            .send(
                Request::builder()
                    .method(method)
                    .uri(path)
                    .header("origin", "http://evil.example")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        if guarded {
            assert_eq!(
                (refused.0, refused.1["error"].as_str()),
                (403, Some("cross_origin")),
                "{method} {path} is not guarded"
            );
        } else {
            assert_ne!(refused.0, 403, "{method} {path} is guarded: {}", refused.1);
        }
    }
    app.stop().await;
}

/// Every route that reads a body documents what reading it answers — 400, 408, 413 and 415, in
/// the route's error shape — and does as documented: a body one byte over the bound the 413 names
/// is refused 413, one of exactly the bound is not, and a body not declared JSON is refused 415.
/// Routes that read no body document none of these.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_body_answers_are_documented_where_a_body_is_read_and_given_as_documented() {
    let app = TestApp::load(&[]).await;
    let document = app.get_json("/openapi.json").await;
    let mut reading = Vec::new();
    for (method, path, _) in ROUTES {
        let operation = &document["paths"][path][method.to_lowercase()];
        let responses = &operation["responses"];
        if operation.get("requestBody").is_none() {
            for status in ["408", "413", "415"] {
                assert!(
                    responses.get(status).is_none(),
                    "{method} {path} reads no body but documents {status}"
                );
            }
            continue;
        }
        let schema = |status: &str| {
            responses[status]["content"]["application/json"]["schema"]["$ref"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path}: no {status} documented"))
                .to_owned()
        };
        let shape = schema("413");
        for status in ["400", "408", "415"] {
            assert_eq!(schema(status), shape, "{method} {path}: {status}'s shape");
        }
        let description = responses["413"]["description"].as_str().unwrap();
        let (n, unit) = description
            .strip_prefix("Body over ")
            .and_then(|d| d.split_once(' '))
            .unwrap_or_else(|| panic!("{method} {path}: 413 says {description}"));
        let unit = match unit {
            "KiB" => 1024,
            "MiB" => 1 << 20,
            other => panic!("{method} {path}: a bound in {other}"),
        };
        let bound = n.parse::<usize>().unwrap() * unit;
        reading.push(path);

        let json = [("content-type", "application/json")];
        let (status, body) = app.post(path, &json, vec![b' '; bound + 1]).await;
        assert_eq!(status, 413, "{method} {path}, {} bytes: {body}", bound + 1);
        let (status, body) = app.post(path, &json, vec![b' '; bound]).await;
        assert!(
            status != 413 && status < 500,
            "{method} {path}, {bound} bytes: {status} {body}"
        );
        let text = [("content-type", "text/plain")];
        let (status, body) = app.post(path, &text, "{}").await;
        assert_eq!(status, 415, "{method} {path}: {body}");
    }
    assert_eq!(
        reading,
        [
            "/retrieve",
            "/v1/chat/completions",
            "/admin/plugin",
            "/admin/corpus"
        ]
    );
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
