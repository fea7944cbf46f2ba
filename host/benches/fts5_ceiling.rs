//! The raw FTS5 query rate, without HTTP or wasm: the ceiling that end-to-end `/retrieve`
//! throughput is compared against.
//!
//! Two threads, each holding its own `CorpusPool` session, run searches back to back for 10 s.
//! Two workloads, each with a single-thread run first for reference:
//!
//! - `request`: exactly the search one end-to-end benchmark request makes — the expression the
//!   default plugin builds for the benchmark's question ("How do I parse command line
//!   arguments?") and its candidate pool for `limit` 5 (4 × 5 = 20 rows, with snippets). This is
//!   the ceiling that end-to-end `/retrieve` throughput is compared against.
//! - `mix`: cycling over the expressions for ten realistic questions, limit 5 — how the cost
//!   varies with the question (the number of documents matching is what the query pays for).
//!
//! The expression is built as the plugin does: every non-stop-word term quoted, joined with
//! ` OR `.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use turnstile::corpus::{CorpusIndex, CorpusPool, read_corpus};

const THREADS: usize = 2;
const RUN: Duration = Duration::from_secs(10);
const SINGLE_THREAD_RUN: Duration = Duration::from_secs(5);
const LIMIT: u32 = 5;
/// The question the end-to-end benchmark (`bench/peer-compare.sh`) sends, with `limit` 5.
const REQUEST_QUESTION: &str = "How do I parse command line arguments?";
/// The default plugin's candidate pool for `limit` 5 (`CANDIDATES_PER_RESULT` × 5).
const REQUEST_POOL: u32 = 20;

const QUESTIONS: [&str; 10] = [
    "How do I parse command line arguments?",
    "serialize an object to a JSON formatted string",
    "limit concurrency with an asyncio semaphore",
    "read a CSV file",
    "run a subprocess and capture its output",
    "How do I make an HTTP request?",
    "format a date as a string",
    "compress a file with gzip",
    "sort a list of dictionaries by a key",
    "match a regular expression against a string",
];

// The default plugin's own stop-word list, so the expressions here are exactly the plugin's.
include!("../../plugins/retrieval/src/stop_words.rs");

/// The expression the default plugin builds: lowercased terms, stop words dropped, deduplicated,
/// each quoted, joined with ` OR `.
fn expression(question: &str) -> String {
    let mut terms: Vec<String> = Vec::new();
    for word in question
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if !STOP_WORDS.contains(&word.as_str()) && !terms.contains(&word) {
            terms.push(word);
        }
    }
    terms
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// Runs `threads` threads for `run`; returns the queries each completed.
fn measure(
    pool: &CorpusPool,
    expressions: &[String],
    limit: u32,
    threads: usize,
    run: Duration,
) -> Vec<u64> {
    let start_line = Barrier::new(threads);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let start_line = &start_line;
                s.spawn(move || {
                    let session = pool.session().expect("corpus session");
                    start_line.wait();
                    let start = Instant::now();
                    let mut done = 0u64;
                    // Each thread starts at a different question.
                    let mut i = t;
                    while start.elapsed() < run {
                        let hits = session
                            .search(&expressions[i % expressions.len()], limit)
                            .expect("search");
                        black_box(hits);
                        done += 1;
                        i += 1;
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker thread"))
            .collect()
    })
}

fn main() {
    let cache = std::env::temp_dir().join("turnstile-bench-cache");
    let corpus = read_corpus(None).expect("embedded corpus");
    let index = CorpusIndex::open_or_build(&corpus, &cache.join("index")).expect("corpus index");
    let pool = CorpusPool::new(&index, 16).expect("corpus pool");
    let mix: Vec<String> = QUESTIONS.iter().map(|q| expression(q)).collect();
    let request = vec![expression(REQUEST_QUESTION)];
    println!("FTS5 ceiling over {} documents", index.documents);
    for (name, expressions, limit) in [("request", &request, REQUEST_POOL), ("mix", &mix, LIMIT)] {
        println!("\n{name}: limit {limit}");
        for e in expressions {
            let session = pool.session().expect("corpus session");
            let hits = session.search(e, limit).expect("search");
            println!("  {e}  ({} hits)", hits.len());
        }
        // Warm the page cache and the prepared statements.
        measure(&pool, expressions, limit, THREADS, Duration::from_secs(1));
        for (threads, run) in [(1, SINGLE_THREAD_RUN), (THREADS, RUN)] {
            let counts = measure(&pool, expressions, limit, threads, run);
            let total: u64 = counts.iter().sum();
            let per_thread: Vec<String> = counts
                .iter()
                .map(|n| format!("{:.0}", *n as f64 / run.as_secs_f64()))
                .collect();
            println!(
                "{name}: {threads} thread(s), {:.0} s: {total} queries = {:.0} queries/s total (per thread: {}), {:.1} µs per query per thread",
                run.as_secs_f64(),
                total as f64 / run.as_secs_f64(),
                per_thread.join(", "),
                run.as_secs_f64() * 1e6 * threads as f64 / total as f64
            );
        }
    }
}
