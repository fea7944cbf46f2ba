//! The raw FTS5 query rate, without HTTP or wasm: the ceiling that end-to-end `/retrieve`
//! throughput is compared against.
//!
//! Two threads, each holding its own `CorpusPool` session, run queries back to back for 10 s.
//! Three workloads, each with a single-thread run first for reference:
//!
//! - `request`: exactly the corpus work one end-to-end benchmark request makes — for the
//!   expression the default plugin builds for the benchmark's question ("How do I parse command
//!   line arguments?"), its candidate pool (50, whatever `limit` is) ranked without snippets
//!   (`session.rank`, 50 rows), then a snippet for each of the 5 it keeps. This is the
//!   ceiling that end-to-end `/retrieve` throughput is compared against.
//! - `request-0.1.0`: what the plugin did on contract 0.1.0 — `search` for 20 rows, every one
//!   with a snippet.
//! - `mix`: cycling over the expressions for ten realistic questions, `search` with limit 5 —
//!   how the cost varies with the question (the number of documents matching is what ranking
//!   pays for).
//! - `question-mix`: the request's work (rank 50, 5 snippets) for each of the 150 questions of
//!   `bench/mix.jsonl` in turn, as the plugin does it: through the term index (the ceiling for
//!   the end-to-end mix benchmark); and `question-mix-fts5`, the same through FTS5 alone, as it
//!   was before the term index.
//!
//! The expression is built as the plugin does: every non-stop-word term quoted, joined with
//! ` OR `.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use turnstile_corpus::{CorpusIndex, CorpusPool, CorpusSession, read_corpus};

const THREADS: usize = 2;
const RUN: Duration = Duration::from_secs(10);
const SINGLE_THREAD_RUN: Duration = Duration::from_secs(5);
const LIMIT: u32 = 5;
/// The question the end-to-end benchmark (`bench/peer-compare.sh`) sends, with `limit` 5.
const REQUEST_QUESTION: &str = "How do I parse command line arguments?";
/// The default plugin's candidate pool, whatever `limit` is (`POOL`).
const REQUEST_POOL: u32 = 50;

/// What one query of a workload does.
#[derive(Clone, Copy)]
enum Work {
    /// `search(expression, limit)`: ranked rows, each with a snippet.
    Search { limit: u32 },
    /// `rank(expression, pool)`, then `snippet` for the first `keep` rows.
    RankThenSnippets { pool: u32, keep: usize },
    /// The same through FTS5 only (`rank_by_fts5`, `snippet_by_fts5`).
    RankThenSnippetsFts5 { pool: u32, keep: usize },
}

impl Work {
    /// Runs once; returns the rows it produced.
    fn run(self, session: &CorpusSession, expression: &str) -> usize {
        match self {
            Work::Search { limit } => {
                black_box(session.search(expression, limit).expect("search")).len()
            }
            Work::RankThenSnippets { pool, keep } => {
                let ranked = session.rank(expression, pool).expect("rank");
                for r in ranked.iter().take(keep) {
                    black_box(session.snippet(expression, r.doc).expect("snippet"));
                }
                ranked.len()
            }
            Work::RankThenSnippetsFts5 { pool, keep } => {
                let ranked = session.rank_by_fts5(expression, pool).expect("rank");
                for r in ranked.iter().take(keep) {
                    black_box(session.snippet_by_fts5(expression, r.doc).expect("snippet"));
                }
                ranked.len()
            }
        }
    }
}

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

mod support;

use support::expression;

/// Runs `threads` threads for `run`; returns the queries each completed.
fn measure(
    pool: &CorpusPool,
    expressions: &[String],
    work: Work,
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
                        work.run(&session, &expressions[i % expressions.len()]);
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
    let question_mix = support::mix();
    let plugin_request = Work::RankThenSnippets {
        pool: REQUEST_POOL,
        keep: LIMIT as usize,
    };
    println!("FTS5 ceiling over {} documents", index.documents);
    let workloads = [
        (
            "request",
            &request,
            Work::RankThenSnippets {
                pool: REQUEST_POOL,
                keep: LIMIT as usize,
            },
        ),
        (
            "request-0.1.0",
            &request,
            Work::Search {
                limit: REQUEST_POOL,
            },
        ),
        ("mix", &mix, Work::Search { limit: LIMIT }),
        ("question-mix", &question_mix, plugin_request),
        (
            "question-mix-fts5",
            &question_mix,
            Work::RankThenSnippetsFts5 {
                pool: REQUEST_POOL,
                keep: LIMIT as usize,
            },
        ),
    ];
    for (name, expressions, work) in workloads {
        println!("\n{name}:");
        for e in expressions.iter().take(10) {
            let session = pool.session().expect("corpus session");
            println!("  {e}  ({} rows)", work.run(&session, e));
        }
        // Warm the page cache and the prepared statements.
        measure(&pool, expressions, work, THREADS, Duration::from_secs(1));
        for (threads, run) in [(1, SINGLE_THREAD_RUN), (THREADS, RUN)] {
            let counts = measure(&pool, expressions, work, threads, run);
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
