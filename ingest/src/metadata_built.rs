//! Metadata built end to end (issue 40, item 3): what the corpus lines written carry beside their
//! text — a Markdown document's front matter (YAML or TOML), every document passage's url (its
//! path, after `--base-url`, with its section's anchor), a row's own `kind`, `url` and other
//! columns — read back from the output file; and what is refused.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::build::{BuildArgs, BuildError, build};

/// A folder `src` holding `files` (name, content), and the output's path beside it.
fn setup(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    for (name, content) in files {
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let out = tmp.path().join("out.jsonl");
    (tmp, src, out)
}

/// The output's lines, parsed.
fn lines(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The line of `id`.
fn line<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("no line {id} in {lines:#?}"))
}

/// The case: a page whose front matter names it "Cancelling" under a first heading
/// "Billing help" is titled "Cancelling"; its url and kind are the front matter's, each section's
/// url with its anchor; the rest of the front matter is its fields. TOML front matter too.
#[test]
fn front_matter_names_the_document_and_its_fields_are_kept() {
    let (_tmp, src, out) = setup(&[
        (
            "guide/cancel.md",
            "---\ntitle: Cancelling\nurl: https://docs.example.com/cancel\nkind: faq\n\
             tags: [billing, plans]\nauthor: Ana\ndate: 2024-05-01\nextra: {nested: 1}\n---\n\
             Stop paying any time.\n\n# Billing help\n\nAsk us.\n\n## Refunds {#refund-policy}\n\n\
             Within 30 days.\n",
        ),
        (
            "guide/toml.md",
            "+++\ntitle = \"From TOML\"\ntags = [\"x\"]\nweight = 3\n+++\n# Ignored title\n\nText.\n",
        ),
    ]);
    build(&BuildArgs::one(&src, &out), false).unwrap();
    let lines = lines(&out);
    let intro = line(&lines, "guide/cancel.md");
    assert_eq!(intro["title"], "Cancelling");
    assert_eq!(intro["kind"], "faq");
    assert_eq!(intro["url"], "https://docs.example.com/cancel");
    assert_eq!(
        intro["fields"],
        json!({"tags": ["billing", "plans"], "author": "Ana", "date": "2024-05-01"})
    );
    let help = line(&lines, "guide/cancel.md#billing-help");
    assert_eq!(help["title"], "Cancelling › Billing help");
    assert_eq!(help["url"], "https://docs.example.com/cancel#billing-help");
    assert_eq!(help["fields"], intro["fields"]);
    let refunds = line(&lines, "guide/cancel.md#refunds");
    assert_eq!(
        refunds["url"],
        "https://docs.example.com/cancel#refund-policy"
    );
    let toml = line(&lines, "guide/toml.md#ignored-title");
    assert_eq!(toml["title"], "From TOML › Ignored title");
    assert_eq!(toml["kind"], "markdown");
    assert_eq!(toml["url"], "guide/toml.md#ignored-title");
    assert_eq!(toml["fields"], json!({"tags": ["x"], "weight": 3}));
}

/// Without front matter, a passage links to its file's path and its section's anchor (HTML's
/// own ids, Markdown's GitHub slugs); `--base-url` makes them absolute, what a url cannot hold
/// percent-encoded; a text file links to its path alone. No fields: no `fields` key.
#[test]
fn urls_are_paths_with_anchors_after_the_base_url() {
    let (_tmp, src, out) = setup(&[
        (
            "my guide/start.md",
            "# Start here\n\nIntro.\n\n## Next step\n\nGo.\n",
        ),
        (
            "page.html",
            "<html><body><h1 id=\"top\">Page</h1><p>Intro.</p>\
             <section id=\"sec-plans\"><h2>Plans</h2><p>Seedling.</p></section>\
             <h2>No id</h2><p>Plain.</p></body></html>",
        ),
        ("notes.txt", "Plain notes."),
    ]);
    build(&BuildArgs::one(&src, &out), false).unwrap();
    let lines = lines(&out);
    let next = line(&lines, "my guide/start.md#next-step");
    assert_eq!(next["url"], "my%20guide/start.md#next-step");
    assert!(next.get("fields").is_none(), "{next}");
    assert_eq!(line(&lines, "page.html#page")["url"], "page.html#top");
    assert_eq!(
        line(&lines, "page.html#plans")["url"],
        "page.html#sec-plans"
    );
    assert_eq!(line(&lines, "page.html#no-id")["url"], "page.html");
    assert_eq!(line(&lines, "notes.txt")["url"], "notes.txt");

    let args = BuildArgs {
        base_url: Some("https://docs.example.com/help/".into()),
        ..BuildArgs::one(&src, &out)
    };
    build(&args, false).unwrap();
    let lines = self::lines(&out);
    assert_eq!(
        line(&lines, "my guide/start.md#next-step")["url"],
        "https://docs.example.com/help/my%20guide/start.md#next-step"
    );
    assert_eq!(
        line(&lines, "notes.txt")["url"],
        "https://docs.example.com/help/notes.txt"
    );
}

/// Raw HTML inside Markdown keeps its text in the corpus: tags go, scripts go whole.
#[test]
fn raw_html_in_markdown_keeps_its_text() {
    let (_tmp, src, out) = setup(&[(
        "keys.md",
        "# Keys\n\nCopy with <kbd>Ctrl</kbd>+<kbd>C</kbd>.\n\n<div>raw html</div>\n\n\
         <details><summary>More</summary>\n\nHidden.\n\n</details>\n\n<script>gone()</script>\n",
    )]);
    build(&BuildArgs::one(&src, &out), false).unwrap();
    let lines = lines(&out);
    assert_eq!(
        line(&lines, "keys.md#keys")["text"],
        "Copy with Ctrl+C.\n\nraw html\n\nMore\n\nHidden."
    );
}

/// A JSON Lines row's `kind` and `url` are its passage's (no longer replaced), its other fields
/// kept when flat; a CSV row's other cells kept as strings, empty ones left out.
#[test]
fn a_rows_kind_url_and_other_columns_are_kept() {
    let (_tmp, src, out) = setup(&[
        (
            "faq.jsonl",
            "{\"id\": \"q1\", \"title\": \"Refunds\", \"text\": \"Within 30 days.\", \
             \"kind\": \"faq\", \"url\": \"https://help.example.com/q1\", \"tags\": [\"billing\"], \
             \"votes\": 12, \"meta\": {\"a\": 1}, \"none\": null}\n\
             {\"id\": \"q2\", \"text\": \"Plain.\"}\n",
        ),
        (
            "rows.csv",
            "id,text,url,product,owner\nr1,First row.,/r1,Seedling,\nr2,Second.,,,Ana\n",
        ),
    ]);
    build(&BuildArgs::one(&src, &out), false).unwrap();
    let lines = lines(&out);
    let q1 = line(&lines, "q1");
    assert_eq!(
        (&q1["kind"], &q1["url"]),
        (&json!("faq"), &json!("https://help.example.com/q1"))
    );
    assert_eq!(q1["fields"], json!({"tags": ["billing"], "votes": 12}));
    let q2 = line(&lines, "q2");
    assert_eq!(q2["kind"], "jsonl");
    assert!(
        q2.get("url").is_none() && q2.get("fields").is_none(),
        "{q2}"
    );
    let r1 = line(&lines, "r1");
    assert_eq!((&r1["kind"], &r1["url"]), (&json!("csv"), &json!("/r1")));
    assert_eq!(r1["fields"], json!({"product": "Seedling"}));
    let r2 = line(&lines, "r2");
    assert!(r2.get("url").is_none(), "{r2}");
    assert_eq!(r2["fields"], json!({"owner": "Ana"}));
}

/// A row's url, kind or fields past the corpus's bounds is a bad row, named by its line and
/// quoting nothing of it; front matter that does not parse or breaks a bound skips its file,
/// with the reason in the summary.
#[test]
fn bad_metadata_is_a_bad_row_or_a_skipped_file() {
    let many: String = (0..40).map(|i| format!(", \"f{i}\": 1")).collect();
    for (content, line, says) in [
        (
            "{\"text\": \"ok\"}\n{\"text\": \"x\", \"url\": \"javascript:canary()\"}\n".to_owned(),
            2,
            "`url`: url must be http, https or relative",
        ),
        (
            format!("{{\"text\": \"x\", \"kind\": \"{}\"}}\n", "k".repeat(65)),
            1,
            "`kind`: kind must be",
        ),
        (
            format!("{{\"text\": \"ok\"}}\n\n{{\"text\": \"x\"{many}}}\n"),
            3,
            "its other columns: fields must be at most 32 names",
        ),
    ] {
        let (_tmp, src, out) = setup(&[("rows.jsonl", &content)]);
        let error = build(&BuildArgs::one(&src, &out), false).unwrap_err();
        assert!(
            matches!(&error, BuildError::BadRow { line: at, why, .. } if *at == line && why.contains(says)),
            "{error}"
        );
        assert!(!error.to_string().contains("canary"), "{error}");
    }
    let (_tmp, src, out) = setup(&[
        ("bad.md", "---\ntitle: [canary\n---\n# Bad\n\nText.\n"),
        ("good.md", "# Good\n\nText.\n"),
    ]);
    let summary = build(&BuildArgs::one(&src, &out), false).unwrap();
    assert_eq!(summary.passages, 1);
    assert_eq!(summary.skipped.len(), 1);
    assert!(summary.skipped[0].path.ends_with("bad.md"));
    assert!(
        summary.skipped[0]
            .why
            .starts_with("front matter: not valid YAML"),
        "{}",
        summary.skipped[0].why
    );
    assert!(!summary.to_string().contains("canary"));
}
