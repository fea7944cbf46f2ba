//! `turnstile corpus build`: a folder of a team's own documents into a corpus that `serve
//! --corpus` answers questions from — ids, titles and text as documented, the same bytes every
//! time, and every input it cannot use refused or listed with why.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{TestApp, binary};

/// A small help center: Markdown articles with headings, a text file, an HTML page, and files
/// the builder must pass over.
fn help_center(dir: &Path) {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "billing.md",
        "# Billing help\n\nEverything about **payments** and plans.\n\n\
         ## Cancel your plan\n\nTo cancel a subscription and stop future payments, open \
         *Settings*, choose [Billing](https://example.com/billing) and press **Cancel plan**. \
         Nothing is charged after the current period ends.\n\n\
         ## Change your payment card\n\nA new credit card or debit card can be added under \
         Settings, Billing, Payment methods. The old card is removed once the new one is \
         verified.\n\n## Invoices\n\nInvoices are emailed as PDF files on the first day of \
         each month.\n",
    );
    write(
        "account/security.md",
        "# Account security\n\n## Reset your password\n\nForgot your password? Use the \
         *Forgot password* link on the sign-in page; a reset link arrives by email within \
         minutes.\n\n## Two-factor authentication\n\nTurn on two-factor authentication with \
         an authenticator app to protect your sign-in.\n",
    );
    write(
        "shipping.html",
        "<html><head><title>Shipping</title><script>track()</script></head><body>\
         <h1>Shipping</h1><h2>Track an order</h2><p>Every parcel has a tracking number; \
         follow the courier's link in the shipping confirmation email to see where it \
         is.</p><h2>Returns</h2><p>Send items back within 30 days for a full refund.</p>\
         </body></html>",
    );
    write(
        "opening-hours.txt",
        "Our support team answers the phone from 9 am to 5 pm, Monday to Friday.\n\n\
         Chat support is open around the clock.",
    );
    write("logo.png", "\u{89}PNG");
    write(".drafts/new.md", "# Draft\n\nNot ready.");
}

fn corpus_build(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(binary())
        .args(["corpus", "build"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_of_markdown_becomes_a_corpus_that_answers_questions() {
    let tmp = tempfile::tempdir().unwrap();
    let help = tmp.path().join("help");
    help_center(&help);
    let out = tmp.path().join("corpus.jsonl");
    let (code, stdout, stderr) =
        corpus_build(&[help.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("read 4 files (1 html, 2 markdown, 1 text)"),
        "{stdout}"
    );
    assert!(stdout.contains("skipped 2:"), "{stdout}");
    assert!(stdout.contains(".drafts: hidden"), "{stdout}");
    assert!(
        stdout.contains("logo.png: not a format read here"),
        "{stdout}"
    );
    let bytes = std::fs::read(&out).unwrap();
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
    assert!(stdout.contains(&format!("sha256 {sha}")), "{stdout}");

    // Ids from the path and the heading, titles from the document and its heading path, the
    // text without markup.
    let docs = lines(&out);
    let by_id = |id: &str| {
        docs.iter()
            .find(|d| d["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {docs:#?}"))
    };
    let cancel = by_id("billing.md#cancel-your-plan");
    assert_eq!(cancel["kind"], "markdown");
    assert_eq!(cancel["title"], "Billing help › Cancel your plan");
    assert!(
        cancel["text"]
            .as_str()
            .unwrap()
            .starts_with("To cancel a subscription and stop future payments, open Settings, choose Billing and press Cancel plan."),
        "{cancel}"
    );
    let intro = by_id("billing.md#billing-help");
    assert_eq!(intro["text"], "Everything about payments and plans.");
    assert_eq!(intro["title"], "Billing help");
    assert_eq!(
        by_id("account/security.md#reset-your-password")["title"],
        "Account security › Reset your password"
    );
    assert_eq!(by_id("shipping.html#track-an-order")["kind"], "html");
    assert_eq!(by_id("opening-hours.txt")["title"], "opening-hours");
    assert_eq!(docs.len(), 9, "{docs:#?}");
    for doc in &docs {
        let text = doc["text"].as_str().unwrap();
        assert!(!text.contains(['*', '#', '<', '[']), "markup left: {doc}");
    }

    // The same input, the same bytes.
    let again = tmp.path().join("again.jsonl");
    let (code, _, _) = corpus_build(&[help.to_str().unwrap(), "--out", again.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(std::fs::read(&again).unwrap(), bytes);

    // Served with the default plugin: paraphrased questions find their article first.
    let cache = tmp.path().join("cache");
    let app = TestApp::load(&[
        "--corpus",
        out.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ])
    .await;
    for (question, expected) in [
        ("how do I stop paying", "billing.md#cancel-your-plan"),
        (
            "I forgot my password",
            "account/security.md#reset-your-password",
        ),
        ("where is my parcel", "shipping.html#track-an-order"),
        (
            "replace my credit card",
            "billing.md#change-your-payment-card",
        ),
        ("when can I call support", "opening-hours.txt"),
    ] {
        let (status, body) = app
            .retrieve(json!({"question": question, "limit": 3}))
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["sources"][0]["id"], expected, "{question}: {body}");
        // Each source links back to its page, and to its section where the page has an anchor
        // for it (Markdown's heading slugs; this HTML page gives its headings no ids).
        let url = expected.replace("html#track-an-order", "html");
        assert_eq!(body["sources"][0]["url"], url, "{question}: {body}");
    }
    app.stop().await;
}

#[test]
fn what_cannot_be_built_is_refused_and_the_old_file_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("corpus.jsonl");
    std::fs::write(&out, "kept").unwrap();
    let out_arg = out.to_str().unwrap();
    let missing = tmp.path().join("missing");
    let (code, _, stderr) = corpus_build(&[missing.to_str().unwrap(), "--out", out_arg]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("missing") && stderr.contains("No such file"),
        "{stderr}"
    );

    let rows = tmp.path().join("rows.csv");
    std::fs::write(&rows, "id,text\na,first\na,second\n").unwrap();
    let (code, _, stderr) = corpus_build(&[rows.to_str().unwrap(), "--out", out_arg]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("id \"a\" comes from both"), "{stderr}");

    let (code, _, stderr) = corpus_build(&[
        rows.to_str().unwrap(),
        "--out",
        out_arg,
        "--max-tokens",
        "200",
        "--overlap",
        "150",
    ]);
    // A check across settings, reported with the settings' other problems (status 2).
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--overlap: 150 is over half of --max-tokens (200)"),
        "{stderr}"
    );

    let (code, _, stderr) = corpus_build(&[
        rows.to_str().unwrap(),
        "--out",
        out_arg,
        "--max-chars",
        "5000",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("5000 is not in 100..=2000"), "{stderr}");

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("notes.doc"), "binary").unwrap();
    let (code, _, stderr) = corpus_build(&[empty.to_str().unwrap(), "--out", out_arg]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("no passages: 0 files read, 1 skipped"),
        "{stderr}"
    );

    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !left
            .iter()
            .any(|n| n.to_string_lossy().ends_with(".partial")),
        "{left:?}"
    );
}

/// A bad row fails the build with its file and line, and the old corpus stays; told to, the
/// build keeps the good rows and says how many it left out and where.
#[test]
fn a_bad_row_fails_the_build_with_its_line_unless_told_to_keep_the_good_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("corpus.jsonl");
    std::fs::write(&out, "kept").unwrap();
    let rows = tmp.path().join("rows.jsonl");
    std::fs::write(
        &rows,
        "{\"id\": \"a\", \"text\": \"first\"}\n\n{\"id\": \"b\", \"text\": \"secret-value\"\n{\"id\": \"c\", \"text\": \"third\"}\n",
    )
    .unwrap();
    let (code, _, stderr) = corpus_build(&[rows.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("rows.jsonl: line 3"), "{stderr}");
    assert!(stderr.contains("--skip-bad-rows"), "{stderr}");
    assert!(
        !stderr.contains("secret-value"),
        "the row is not echoed: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept");

    let (code, stdout, stderr) = corpus_build(&[
        rows.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--skip-bad-rows",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let output = format!("{stdout}{stderr}");
    assert!(output.contains("bad rows left out: 1"), "{output}");
    assert!(output.contains("line 3"), "{output}");
    let ids: Vec<String> = lines(&out)
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(
        ids.iter()
            .all(|id| !id.contains('b') || id.contains("rows")),
        "{ids:?}"
    );
}

/// A page links back: its front matter names it and gives its fields; without front matter,
/// `--base-url` joined with its path and its section's anchor; a relative front-matter url after
/// the base too; served, each source carries them; a base url that is not http or https is
/// refused before anything is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn front_matter_and_base_url_make_each_passage_link_back() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("help");
    std::fs::create_dir_all(src.join("guide")).unwrap();
    std::fs::write(
        src.join("guide/cancel.md"),
        "---\ntitle: Cancelling\ntags: [billing]\n---\n# Billing help\n\nStop any time.\n",
    )
    .unwrap();
    std::fs::write(
        src.join("guide/pay.md"),
        "# Paying\n\n## By card\n\nVisa.\n",
    )
    .unwrap();
    std::fs::write(
        src.join("plans.md"),
        "+++\nurl = \"/pricing/\"\nowner = \"Ana\"\n+++\n# Plans\n\nSeedling is free; Grove costs $9 a month.\n",
    )
    .unwrap();
    let out = tmp.path().join("corpus.jsonl");
    let (code, _, stderr) = corpus_build(&[
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--base-url",
        "https://docs.example.com/help",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let docs = lines(&out);
    let by_id = |id: &str| docs.iter().find(|d| d["id"] == id).unwrap().clone();
    let cancel = by_id("guide/cancel.md#billing-help");
    assert_eq!(cancel["title"], "Cancelling › Billing help");
    assert_eq!(
        cancel["url"],
        "https://docs.example.com/help/guide/cancel.md#billing-help"
    );
    assert_eq!(cancel["fields"], json!({"tags": ["billing"]}));
    assert_eq!(
        by_id("guide/pay.md#by-card")["url"],
        "https://docs.example.com/help/guide/pay.md#by-card"
    );
    assert_eq!(
        by_id("plans.md#plans")["url"],
        "https://docs.example.com/help/pricing/#plans"
    );

    // Served: each source carries its url and fields from the corpus.
    let cache = tmp.path().join("cache");
    let app = TestApp::load(&[
        "--corpus",
        out.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ])
    .await;
    let (status, body) = app
        .retrieve(json!({"question": "how do I stop paying", "limit": 3}))
        .await;
    assert_eq!(status, 200, "{body}");
    let source = |id: &str| {
        body["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {body}"))
            .clone()
    };
    let cancel = source("guide/cancel.md#billing-help");
    assert_eq!(cancel["title"], "Cancelling › Billing help", "{body}");
    assert_eq!(
        cancel["url"],
        "https://docs.example.com/help/guide/cancel.md#billing-help"
    );
    assert_eq!(cancel["fields"], json!({"tags": ["billing"]}));
    let plans = source("plans.md#plans");
    assert_eq!(plans["url"], "https://docs.example.com/help/pricing/#plans");
    assert_eq!(plans["fields"], json!({"owner": "Ana"}));
    app.stop().await;

    let (code, _, stderr) = corpus_build(&[
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--base-url",
        "ftp://docs.example.com",
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("--base-url") && stderr.contains("http or https"),
        "{stderr}"
    );
}

#[test]
fn rows_of_csv_and_json_lines_become_passages_by_their_named_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(
        src.join("faq.csv"),
        "question,answer,key\nHow to pay?,\"By card, or invoice.\",pay\nEmpty?,,\n",
    )
    .unwrap();
    std::fs::write(
        src.join("more.jsonl"),
        "{\"answer\": \"Yes.\", \"question\": \"Open on Sunday?\"}\n",
    )
    .unwrap();
    let long = "word ".repeat(500);
    std::fs::write(
        src.join("long.jsonl"),
        json!({"answer": long, "key": "long"}).to_string(),
    )
    .unwrap();
    let out = tmp.path().join("rows.jsonl");
    let (code, stdout, stderr) = corpus_build(&[
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--id-column",
        "key",
        "--title-column",
        "question",
        "--text-column",
        "answer",
        "--max-chars",
        "1000",
        "--overlap",
        "20",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("rows without text: 1"), "{stdout}");
    let docs = lines(&out);
    let ids: Vec<&str> = docs.iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["pay", "long", "long/2", "long/3", "more.jsonl#row-1"]);
    assert_eq!(docs[0]["title"], "How to pay?");
    assert_eq!(docs[0]["kind"], "csv");
    assert_eq!(docs[4]["title"], "Open on Sunday?");
    for doc in &docs {
        assert!(doc["text"].as_str().unwrap().chars().count() <= 1000);
    }
}
