//! A source links back: `/retrieve` returns each source's `url` and `fields` as its corpus line
//! gave them (the corpus's, never the plugin's), omits both for a document that has none, and a
//! corpus line with a url of another scheme or fields that are not flat is refused by its line.

use serde_json::{Value, json};

use crate::support::TestApp;

/// Three documents: one with a url and fields, one with a relative url only, one with neither.
fn corpus(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let lines = [
        json!({
            "id": "billing.md#cancel-your-plan",
            "kind": "article",
            "title": "Billing › Cancel your plan",
            "text": "To cancel a subscription and stop future payments, open Settings and press Cancel plan.",
            "url": "https://help.example.com/billing#cancel-your-plan",
            "fields": {"tags": ["billing", "plans"], "owner": "Ana", "reviewed": true, "version": 3},
        }),
        json!({
            "id": "shipping.html#track",
            "kind": "html",
            "title": "Shipping › Track an order",
            "text": "Every parcel has a tracking number in the shipping confirmation email.",
            "url": "shipping.html#track",
        }),
        json!({
            "id": "hours.txt",
            "title": "Opening hours",
            "text": "Our support team answers the phone from 9 am to 5 pm, Monday to Friday.",
        }),
    ];
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    text.push_str(extra);
    let path = dir.join("corpus.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn source<'a>(body: &'a Value, id: &str) -> &'a Value {
    body["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == id))
        .unwrap_or_else(|| panic!("{id} not among the sources: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_source_carries_its_documents_url_and_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = corpus(dir.path(), "");
    let cache = dir.path().join("cache");
    let app = TestApp::load(&[
        "--corpus",
        path.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ])
    .await;
    let (status, body) = app
        .retrieve(json!({"question": "how do I cancel my subscription", "limit": 3}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sources"].as_array().unwrap().len(), 3, "{body}");
    let cancel = source(&body, "billing.md#cancel-your-plan");
    assert_eq!(
        cancel["url"],
        "https://help.example.com/billing#cancel-your-plan"
    );
    assert_eq!(
        cancel["fields"],
        json!({"tags": ["billing", "plans"], "owner": "Ana", "reviewed": true, "version": 3})
    );
    let track = source(&body, "shipping.html#track");
    assert_eq!(track["url"], "shipping.html#track");
    assert!(track.get("fields").is_none(), "{track}");
    let hours = source(&body, "hours.txt");
    assert!(
        hours.get("url").is_none() && hours.get("fields").is_none(),
        "{hours}"
    );
    // Read by the server on its own connection: the call's one session is the plugin's.
    let corpus = app.state.plugin().corpus().clone();
    assert_eq!((corpus.sessions_opened(), corpus.live_sessions()), (1, 0));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corpus_line_with_a_bad_url_or_nested_fields_is_refused_by_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = corpus(dir.path(), "");
    let app = TestApp::load(&["--corpus", good.to_str().unwrap()]).await;
    for (extra, says) in [
        (
            json!({"id": "x", "title": "x", "text": "x", "url": "javascript:alert(1)"}),
            "no other scheme",
        ),
        (
            json!({"id": "x", "title": "x", "text": "x", "fields": {"a": {"b": 1}}}),
            "a string, a number, a boolean or a list of those",
        ),
        (
            json!({"id": "x", "title": "x", "text": "x", "url": 7}),
            "wrong type",
        ),
    ] {
        let bad = dir.path().join("bad");
        std::fs::create_dir_all(&bad).unwrap();
        let path = corpus(&bad, &format!("{extra}\n"));
        let answer = app
            .post_json("/admin/corpus", &json!({"path": path.to_str().unwrap()}))
            .await;
        assert_eq!(answer.status().as_u16(), 422, "{extra}");
        let body = answer.json().await.unwrap();
        assert_eq!(body["error"], "invalid_corpus", "{body}");
        let message = body["detail"].as_str().unwrap_or_default();
        assert!(
            message.contains("line 4") && message.contains(says),
            "{extra}: {body}"
        );
        assert!(!message.contains("alert"), "{body}");
    }
    // Nothing changed: the corpus served is still the first one, with its links.
    let (status, body) = app
        .retrieve(json!({"question": "where is my parcel", "limit": 3}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["corpus"]["generation"], 1, "{body}");
    assert_eq!(
        source(&body, "shipping.html#track")["url"],
        "shipping.html#track"
    );
    app.stop().await;
}
