//! The raw FTS5 query rate, without HTTP or wasm: the ceiling that end-to-end `/retrieve`
//! throughput is compared against.
//!
//! Two threads, each holding its own `CorpusPool` session, run searches back to back for 10 s,
//! cycling over the expressions the default plugin would build for ten realistic questions
//! (every non-stop-word term quoted, joined with ` OR `), limit 5. Prints queries/s in total and
//! per thread; a single-thread run comes first for reference.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use turnstile::corpus::{CorpusIndex, CorpusPool, read_corpus};

const THREADS: usize = 2;
const RUN: Duration = Duration::from_secs(10);
const SINGLE_THREAD_RUN: Duration = Duration::from_secs(5);
const LIMIT: u32 = 5;

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

/// The default plugin's stop words (`plugins/retrieval/src/lib.rs`).
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "do", "does",
    "for", "from", "get", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of",
    "on", "or", "should", "so", "that", "the", "their", "them", "then", "there", "these", "this",
    "to", "use", "using", "was", "way", "we", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your",
];

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
fn measure(pool: &CorpusPool, expressions: &[String], threads: usize, run: Duration) -> Vec<u64> {
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
                            .search(&expressions[i % expressions.len()], LIMIT)
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
    let expressions: Vec<String> = QUESTIONS.iter().map(|q| expression(q)).collect();
    println!(
        "FTS5 ceiling over {} documents, limit {LIMIT}:",
        index.documents
    );
    for e in &expressions {
        let session = pool.session().expect("corpus session");
        let hits = session.search(e, LIMIT).expect("search");
        println!("  {e}  ({} hits)", hits.len());
    }
    // Warm the page cache and the prepared statements.
    measure(&pool, &expressions, THREADS, Duration::from_secs(1));

    for (threads, run) in [(1, SINGLE_THREAD_RUN), (THREADS, RUN)] {
        let counts = measure(&pool, &expressions, threads, run);
        let total: u64 = counts.iter().sum();
        let per_thread: Vec<String> = counts
            .iter()
            .map(|n| format!("{:.0}", *n as f64 / run.as_secs_f64()))
            .collect();
        println!(
            "{threads} thread(s), {:.0} s: {total} queries = {:.0} queries/s total (per thread: {}), {:.1} µs per query per thread",
            run.as_secs_f64(),
            total as f64 / run.as_secs_f64(),
            per_thread.join(", "),
            run.as_secs_f64() * 1e6 * threads as f64 / total as f64
        );
    }
}
