//! A corpus large enough to be searched through its inverted file (32,768 passages or more),
//! built and searched as the server does: its f32 vectors flat beside the index and covered by
//! its checksum, and `nearest` keeping the exact answer's top 10 at the server's probe and
//! candidate counts (recall@10 ≥ 0.95 on the question mix) — what a change to the lists, the
//! codes, the kernel or the re-scoring must not lose.

use std::collections::HashSet;
use std::path::Path;

use turnstile_corpus::{
    CorpusBytes, CorpusIndex, CorpusPool, IndexOrigin, load_documents, read_corpus,
};

/// Just past the smallest corpus given an inverted file (`ivf::MIN_DOCUMENTS`).
const PASSAGES: usize = 33_000;
const K: usize = 10;
/// Candidates the server scores exactly for `k` wanted (`vectors::rescored`).
fn rescored(k: usize) -> usize {
    k + 10
}

/// Passages mixed from the shipped corpus as `bench/mix-corpus.py` mixes them: passage `k`
/// joins the first half of one document's sentences to the second half of another's.
fn mixed_corpus(count: usize) -> CorpusBytes {
    let shipped = read_corpus(None).expect("the shipped corpus");
    let documents = load_documents(&shipped.jsonl).expect("its documents");
    let halves: Vec<(String, String)> = documents
        .iter()
        .map(|d| {
            let sentences: Vec<&str> = d.text.split(". ").collect();
            let middle = (sentences.len() / 2).max(1);
            (
                sentences[..middle.min(sentences.len())].join(". "),
                sentences[middle.min(sentences.len())..].join(". "),
            )
        })
        .collect();
    let n = documents.len();
    let mut jsonl = Vec::new();
    for k in 0..count {
        let a = k % n;
        let mut b = (a + 1 + (k / n) * 7919) % n;
        if b == a {
            b = (b + 1) % n;
        }
        let second = if halves[b].1.is_empty() {
            &halves[b].0
        } else {
            &halves[b].1
        };
        let text: String = format!("{} {second}", halves[a].0)
            .chars()
            .take(2000)
            .collect();
        let line = serde_json::json!({
            "id": format!("{}+{}#{k}", documents[a].id, documents[b].id),
            "kind": documents[a].kind,
            "title": format!("{} / {}", documents[a].title, documents[b].id),
            "text": text.trim(),
        });
        jsonl.extend_from_slice(line.to_string().as_bytes());
        jsonl.push(b'\n');
    }
    CorpusBytes {
        name: "mixed".into(),
        jsonl,
    }
}

/// The questions of `bench/mix.jsonl`.
fn questions() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/mix.jsonl"))
        .expect("bench/mix.jsonl");
    text.lines()
        .map(|l| {
            let body: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            body["question"].as_str().expect("a question").to_owned()
        })
        .collect()
}

/// Every stored vector, by rowid, read from the index's `vectors` table.
fn stored_vectors(index: &Path) -> Vec<(u64, Vec<f32>)> {
    let conn =
        rusqlite::Connection::open_with_flags(index, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("the index");
    let mut stmt = conn
        .prepare("SELECT doc, v FROM vectors ORDER BY doc")
        .expect("vectors");
    stmt.query_map([], |r| {
        let blob: Vec<u8> = r.get(1)?;
        Ok((
            r.get::<_, i64>(0)?.unsigned_abs(),
            blob.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        ))
    })
    .expect("vectors")
    .collect::<rusqlite::Result<_>>()
    .expect("vectors")
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

#[test]
fn a_large_corpus_keeps_the_exact_answer_through_its_inverted_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let corpus = mixed_corpus(PASSAGES);
    let started = std::time::Instant::now();
    let index = CorpusIndex::open_or_build(&corpus, dir.path()).expect("the index");
    println!("{PASSAGES} passages indexed in {:.1?}", started.elapsed());
    assert_eq!(index.origin, IndexOrigin::Built);
    assert_eq!(index.documents, PASSAGES as u64);

    // The flat vectors beside the index, covered by its checksum.
    let mut flat = index.path.file_name().expect("a name").to_owned();
    flat.push(".vectors");
    let flat = index.path.with_file_name(flat);
    let mut checksum = index.path.file_name().expect("a name").to_owned();
    checksum.push(".sha256");
    let checksum = std::fs::read_to_string(index.path.with_file_name(checksum)).expect("checksum");
    assert!(checksum.contains(" vectors xxh3-128/64MiB:"), "{checksum}");

    let pool = CorpusPool::new(&index, 1).expect("a pool");
    let dims = pool.dims();
    assert_eq!(
        std::fs::metadata(&flat).expect("flat vectors").len(),
        (PASSAGES * dims * 4) as u64
    );
    let (lists, probes) = pool.vector_lists().expect("an inverted file");
    assert!(lists > 2 * probes, "{lists} lists, {probes} probed");

    let stored = stored_vectors(&index.path);
    assert_eq!(stored.len(), PASSAGES);
    let session = pool.session().expect("a session");
    let (mut hits, mut total) = (0usize, 0usize);
    for question in questions() {
        let v = pool.embed(&question).unwrap();
        let mut exact: Vec<(f64, u64)> = stored.iter().map(|(doc, s)| (dot(s, &v), *doc)).collect();
        exact.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let truth: HashSet<u64> = exact[..K].iter().map(|(_, d)| *d).collect();
        let found = session
            .nearest_probing(&v, K, probes, rescored(K))
            .expect("nearest");
        assert_eq!(found.len(), K, "{question}");
        for pair in found.windows(2) {
            assert!(pair[0].1 >= pair[1].1, "best first: {question}");
        }
        // Each similarity is the document's exact one (its f32 vector, read from the flat file).
        for (doc, similarity) in &found {
            let (_, s) = &stored[usize::try_from(*doc).expect("a rowid") - 1];
            assert!(
                (f64::from(*similarity) - dot(s, &v)).abs() < 1e-5,
                "{question}: {doc}"
            );
        }
        hits += found.iter().filter(|(d, _)| truth.contains(d)).count();
        total += K;
    }
    let recall = hits as f64 / total as f64;
    println!("recall@10 {recall:.4} over {} questions", total / K);
    assert!(
        recall >= 0.95,
        "recall@10 {recall:.4} at {probes} probes, {} candidates",
        rescored(K)
    );
    drop(session);
    drop(pool);

    // Reused as it is: the flat vectors read back as they were written.
    let reused = CorpusIndex::open_or_build(&corpus, dir.path()).expect("the index");
    assert_eq!(reused.origin, IndexOrigin::Reused);
}
