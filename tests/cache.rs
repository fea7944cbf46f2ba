//! The cache stays small enough to restart on: what a build cut short left is removed when a
//! server starts, and `--cache-max-mib` trims the least recently used entries — never the index
//! being served.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::json;
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
