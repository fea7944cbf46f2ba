//! The cache stays small enough to restart on: what a build cut short left is removed when a
//! server starts, and `--cache-max-mib` trims the least recently used entries — never the index
//! being served.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::TestApp;

fn write(path: &Path, bytes: usize, modified: SystemTime) {
    std::fs::write(path, vec![b'x'; bytes]).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
}

/// A cache holding an index temporary of a build cut short (its lock free) and a day-old index
/// of another corpus: a server bounded to 1 MiB starts, serves, and leaves only the index it
/// serves (which alone passes the bound: it is kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_removes_leftovers_and_trims_the_cache_to_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let index = cache.join("index");
    std::fs::create_dir_all(&index).unwrap();
    let now = SystemTime::now();
    write(&index.join("corpus-0123456789abcdef-v5.lock"), 0, now);
    write(
        &index.join("corpus-0123456789abcdef-v5.Ab12Cd.tmp"),
        1 << 20,
        now,
    );
    let day = Duration::from_secs(24 * 3600);
    write(
        &index.join("corpus-fedcba9876543210-v5.sqlite"),
        2 << 20,
        now - day,
    );
    write(
        &index.join("corpus-fedcba9876543210-v5.sqlite.sha256"),
        64,
        now - day,
    );
    let cache_arg = cache.display().to_string();
    let app = TestApp::load(&[
        "--cache-dir",
        &cache_arg,
        "--cache-max-mib",
        "1",
        "--no-precompiled-cache",
    ])
    .await;
    let (status, _) = app.retrieve(json!({"question": "json"})).await;
    assert_eq!(status, 200);
    let embedded = turnstile_corpus::read_corpus(None).unwrap();
    let served = turnstile_corpus::CorpusIndex::cache_path(
        &index,
        &hex::encode(Sha256::digest(&embedded.jsonl)),
        &turnstile_corpus::EmbeddingModel::Shipped,
    );
    let name = served.file_name().unwrap().to_string_lossy().into_owned();
    let stem = name.trim_end_matches(".sqlite");
    let mut left: Vec<String> = std::fs::read_dir(&index)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    // The leftover's lock stays (empty: a builder may be about to take it).
    assert_eq!(
        left,
        [
            "corpus-0123456789abcdef-v5.lock".to_owned(),
            format!("{stem}.lock"),
            name.clone(),
            format!("{name}.sha256")
        ]
    );
    assert!(std::fs::metadata(&served).unwrap().len() > 1 << 20);
    app.stop().await;
}

/// The corpus index's `checksum` on `/readyz` once it is no longer `checking`, with the status.
async fn settled_checksum(app: &TestApp) -> (u16, Value) {
    crate::support::eventually("the index checksum settles", || async {
        let answer = app.get("/readyz").await;
        let status = answer.status().as_u16();
        let body: Value = answer.json().await.unwrap();
        if body["corpus"]["checksum"] == "checking" {
            Err(body.to_string())
        } else {
            Ok((status, body))
        }
    })
    .await
}

/// A second start on an unchanged corpus file does not read it: the file's stamp gives its
/// sha256, the index is reused and its checksum computed after the server is ready — and an
/// index found damaged then makes the server not ready (`/readyz` 503, `corpus.checksum`
/// `damaged`) and is rebuilt by the next start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_on_an_unchanged_corpus_reuses_its_index_and_checks_it_after() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    // The shipped corpus, where it was checked out: a file left alone for more than the
    // two seconds a stamp waits for.
    let corpus = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../corpus/python-summaries.jsonl"
    );
    let cache_arg = cache.display().to_string();
    let flags = [
        "--corpus",
        corpus,
        "--cache-dir",
        &cache_arg,
        "--no-precompiled-cache",
    ];
    let app = TestApp::load(&flags).await;
    let (status, body) = settled_checksum(&app).await;
    assert_eq!(
        (status, &body["corpus"]["index"]),
        (200, &json!("built")),
        "{body}"
    );
    assert_eq!(body["corpus"]["checksum"], "verified", "{body}");
    app.stop().await;
    let index_dir = cache.join("index");
    let names = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&index_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert!(
        names()
            .iter()
            .any(|n| n.starts_with("source-") && n.ends_with(".stamp")),
        "the corpus file's stamp is recorded (is the checkout less than 2 s old?): {:?}",
        names()
    );

    let app = TestApp::load(&flags).await;
    let (status, body) = settled_checksum(&app).await;
    assert_eq!(
        (status, &body["corpus"]["index"]),
        (200, &json!("reused")),
        "{body}"
    );
    assert_eq!(body["corpus"]["checksum"], "verified", "{body}");
    app.stop().await;

    // Bytes added to the index file behind the cache's back: SQLite still opens it, so only
    // its checksum can tell — after the start, which reused it on the corpus's stamp.
    let sqlite = names()
        .into_iter()
        .find(|n| n.ends_with(".sqlite"))
        .map(|n| index_dir.join(n))
        .unwrap();
    let mut file = std::fs::File::options().append(true).open(&sqlite).unwrap();
    std::io::Write::write_all(&mut file, &[0u8; 4096]).unwrap();
    drop(file);
    let app = TestApp::load(&flags).await;
    let (status, body) = settled_checksum(&app).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "degraded", "{body}");
    assert_eq!(body["corpus"]["index"], "reused", "{body}");
    assert_eq!(body["corpus"]["checksum"], "damaged", "{body}");
    let mut checksum = sqlite.as_os_str().to_owned();
    checksum.push(".sha256");
    assert!(!Path::new(&checksum).exists(), "its checksum is removed");
    app.stop().await;

    let app = TestApp::load(&flags).await;
    let (status, body) = settled_checksum(&app).await;
    assert_eq!(
        (status, &body["corpus"]["index"]),
        (200, &json!("built")),
        "{body}"
    );
    assert_eq!(body["corpus"]["checksum"], "verified", "{body}");
    app.stop().await;
}
