//! The term index measured at scale (load time, memory, `rank`'s cost), run by hand.

use std::time::{Duration, Instant};

use super::TermIndex;
use super::tokens::Phrase;
use crate::disjunction::{Tokenizer, terms};
use crate::{CorpusBytes, CorpusIndex};

// The plugins' own stop-word list, so the expressions here are exactly the plugins'.
include!("../../../plugins/query/src/stop_words.rs");

/// The expressions the plugins send for the question mix (`bench/mix.jsonl`), as the benches
/// make them (`benches/support`: stop words dropped, terms deduplicated).
fn mix_expressions() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/mix.jsonl"))
        .expect("bench/mix.jsonl");
    text.lines()
        .map(|line| {
            let body: serde_json::Value = serde_json::from_str(line).expect("a JSON body");
            let question = body["question"].as_str().expect("a question");
            let mut words: Vec<String> = Vec::new();
            for word in question
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
            {
                let word = word.to_lowercase();
                if !STOP_WORDS.contains(&word.as_str()) && !words.contains(&word) {
                    words.push(word);
                }
            }
            words
                .iter()
                .map(|t| format!("\"{t}\""))
                .collect::<Vec<_>>()
                .join(" OR ")
        })
        .collect()
}

/// This process's resident memory (`VmRSS`), in bytes.
fn resident_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// An expression's phrases as `index` numbers them (the session's way).
fn phrases(index: &TermIndex, tokenizer: &Tokenizer, expression: &str) -> Vec<Phrase> {
    let words = terms(expression).expect("a disjunction");
    index.phrases(&tokenizer.tokens(&words).expect("tokens"))
}

/// The term index of `TS_BENCH_CORPUS` (the shipped corpus without it), its index file cached in
/// `TS_BENCH_CACHE` (a temporary directory without it): how long `TermIndex::load` takes (best
/// of 3), what it holds, and what `rank` 50 deep costs on the question mix (median).
///
/// `TS_BENCH_CORPUS=/work/data/corpus-100000.jsonl TS_BENCH_CACHE=DIR cargo test --release -p
/// turnstile-corpus --lib -- --ignored --nocapture term_index_at_scale`
#[test]
#[ignore = "measures; run by hand in release"]
fn term_index_at_scale() {
    let corpus = match std::env::var_os("TS_BENCH_CORPUS") {
        Some(path) => CorpusBytes {
            name: path.to_string_lossy().into_owned(),
            jsonl: std::fs::read(&path).expect("TS_BENCH_CORPUS"),
        },
        None => crate::read_corpus(None).expect("embedded corpus"),
    };
    let temporary = tempfile::tempdir().expect("temporary directory");
    let cache = std::env::var_os("TS_BENCH_CACHE")
        .map_or_else(|| temporary.path().to_owned(), std::path::PathBuf::from);
    let index = CorpusIndex::open_or_build(&corpus, &cache).expect("corpus index");
    drop(corpus);
    let conn = crate::reader::open_read_only(&index.path).expect("index file");
    let mut loads = Vec::new();
    let before = resident_bytes();
    let mut terms = Some(TermIndex::load(&conn).expect("term index"));
    let grown = resident_bytes().saturating_sub(before);
    for _ in 0..3 {
        let started = Instant::now();
        let loaded = TermIndex::load(&conn).expect("term index");
        loads.push(started.elapsed());
        terms = Some(loaded);
    }
    let terms = terms.expect("loaded");
    for name in ["terms", "starts", "docs", "freqs", "tokens", "token_starts"] {
        let started = Instant::now();
        let bytes = super::index::array(&conn, name, u8::from_le_bytes).expect("an array");
        eprintln!(
            "{name}: {} bytes read in {:?}",
            bytes.len(),
            started.elapsed()
        );
    }
    let tokenizer = Tokenizer::new().expect("tokenizer");
    let mix: Vec<Vec<Phrase>> = mix_expressions()
        .iter()
        .map(|e| phrases(&terms, &tokenizer, e))
        .collect();
    let (mut times, mut exhaustive, mut max_score) = (Vec::new(), Vec::new(), Vec::new());
    let mut slowest: Vec<(Duration, usize)> = vec![(Duration::ZERO, 0); mix.len()];
    for _ in 0..5 {
        for (i, p) in mix.iter().enumerate() {
            let started = Instant::now();
            std::hint::black_box(terms.rank(p, 50));
            let took = started.elapsed();
            times.push(took);
            let started = Instant::now();
            std::hint::black_box(terms.rank_exhaustive(p, 50));
            exhaustive.push(started.elapsed());
            let started = Instant::now();
            std::hint::black_box(terms.rank_with_slack(p, 50, super::rank::SLACK));
            max_score.push(started.elapsed());
            slowest[i] = (slowest[i].0.max(took), i);
        }
    }
    slowest.sort_unstable();
    super::rank::STATS.with_borrow_mut(|s| *s = (0, 0, 0));
    let total: usize = mix
        .iter()
        .map(|p| {
            terms.rank_with_slack(p, 50, super::rank::SLACK);
            terms.lists(p).iter().map(|l| l.docs.len()).sum::<usize>()
        })
        .sum();
    let (candidates, seeks, scored) = super::rank::STATS.with_borrow(|s| *s);
    eprintln!(
        "per question of the mix: {} postings, {} candidates, {} seeks, {} scored",
        total / mix.len(),
        candidates / mix.len(),
        seeks / mix.len(),
        scored / mix.len()
    );
    let expressions = mix_expressions();
    for &(took, i) in slowest.iter().rev().take(3) {
        let lengths: Vec<usize> = terms.lists(&mix[i]).iter().map(|l| l.docs.len()).collect();
        eprintln!(
            "slow: {took:?} for {} (postings {lengths:?})",
            expressions[i]
        );
    }
    times.sort_unstable();
    exhaustive.sort_unstable();
    max_score.sort_unstable();
    eprintln!(
        "same runs, every posting term at a time: median {:?}, p90 {:?}; MaxScore always: \
         median {:?}, p90 {:?}",
        exhaustive[exhaustive.len() / 2],
        exhaustive[exhaustive.len() * 9 / 10],
        max_score[max_score.len() / 2],
        max_score[max_score.len() * 9 / 10],
    );
    let mb = |bytes: usize| bytes as f64 / 1e6;
    eprintln!(
        "resident memory grew {:.1} MB on the first load; postings {:.1} MB ({} postings), \
         document tokens {:.1} MB, vocabulary {} tokens",
        mb(grown),
        mb((terms.docs.capacity() + terms.freqs.capacity()) * 4),
        terms.docs.len(),
        mb(terms.tokens.capacity() * 4 + terms.token_starts.capacity() * 8),
        terms.numbers.len(),
    );
    eprintln!(
        "{} documents: term index loaded in {:?} (best of 3), {:.1} MB; rank 50 on the mix: \
         median {:?}, p90 {:?}, max {:?}",
        terms.documents(),
        loads.iter().min().expect("loads"),
        terms.heap_bytes() as f64 / 1e6,
        times[times.len() / 2],
        times[times.len() * 9 / 10],
        times[times.len() - 1],
    );
}

/// The term index of `docs` (title, text), built as the index file builds it, in memory.
fn index_of<'a>(docs: impl IntoIterator<Item = (&'a str, &'a str)>) -> TermIndex {
    let mut conn = rusqlite::Connection::open_in_memory().expect("in-memory database");
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE docs USING fts5(
             id UNINDEXED, kind UNINDEXED, title, text,
             tokenize = '{}'
         );",
        crate::disjunction::TOKENIZER
    ))
    .expect("docs table");
    let tx = conn.transaction().expect("transaction");
    {
        let mut insert = tx
            .prepare("INSERT INTO docs (id, kind, title, text) VALUES (?1, 'topic', ?2, ?3)")
            .expect("insert");
        for (i, (title, text)) in docs.into_iter().enumerate() {
            insert
                .execute(rusqlite::params![i.to_string(), title, text])
                .expect("a document");
        }
    }
    super::build(&tx).expect("term index");
    tx.commit().expect("commit");
    TermIndex::load(&conn).expect("load")
}

/// A ranking as (position, the rank's bits): equal only if the `f64`s are.
fn bits(ranked: &[(u32, f64)]) -> Vec<(u32, u64)> {
    ranked.iter().map(|&(d, r)| (d, r.to_bits())).collect()
}

/// How many of `expressions` × `limits` MaxScore with pruning's slack `slack` ranks otherwise
/// than the exhaustive search (documents, order, or a rank's bits); asserted equal to 0 when
/// `slack` is [`SLACK`](super::rank::SLACK).
fn differences(index: &TermIndex, expressions: &[String], limits: &[usize], slack: f64) -> usize {
    let tokenizer = Tokenizer::new().expect("tokenizer");
    let mut differ = 0;
    for expression in expressions {
        let phrases = phrases(index, &tokenizer, expression);
        for &limit in limits {
            let exhaustive = bits(&index.rank_exhaustive(&phrases, limit));
            let pruned = bits(&index.rank_with_slack(&phrases, limit, slack));
            if slack == super::rank::SLACK {
                assert_eq!(pruned, exhaustive, "{expression} (limit {limit})");
                let ranked = bits(&index.rank(&phrases, limit));
                assert_eq!(ranked, exhaustive, "{expression} (limit {limit})");
            }
            differ += usize::from(pruned != exhaustive);
        }
    }
    differ
}

/// `words` as an expression of quoted terms, at most 64 (the session's bound).
fn quoted<'a>(words: impl Iterator<Item = &'a str>) -> String {
    words
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .take(crate::SessionLimits::MAX_EXPRESSION_TERMS)
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// MaxScore ranks exactly as the exhaustive search does on the shipped corpus (6,090
/// passages) — same documents, same order, same `f64` ranks to the bit — at limits 1, 5, 10 and
/// 50, for every dev-set question (as the plugins send it, with its stop words kept, and cut at
/// white space only: phrases), the bench mix, and every seventh document's title.
#[test]
fn maxscore_ranks_as_the_exhaustive_search_does_on_the_shipped_corpus() {
    let shipped = crate::read_corpus(None).expect("embedded corpus");
    let docs = crate::load_documents(&shipped.jsonl).expect("documents");
    let index = index_of(docs.iter().map(|d| (d.title.as_str(), d.text.as_str())));
    let dev = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/eval/dev_questions.jsonl"
    ))
    .expect("dev questions");
    let mut expressions = mix_expressions();
    for line in dev.lines() {
        let q: serde_json::Value = serde_json::from_str(line).expect("a dev question");
        let q = q["q"].as_str().expect("its text");
        expressions.push(quoted(q.split(|c: char| !c.is_alphanumeric())));
        expressions.push(quoted(q.split_whitespace()));
    }
    for d in docs.iter().step_by(7) {
        expressions.push(quoted(d.title.split(|c: char| !c.is_alphanumeric())));
    }
    expressions.retain(|e| !e.is_empty());
    assert!(expressions.len() > 1_000, "{}", expressions.len());
    differences(&index, &expressions, &[1, 5, 10, 50], super::rank::SLACK);
}

/// A corpus of many ties: the same few documents again and again (whole copies, so scores tie
/// to the bit), phrases that repeat in a query, phrases of several tokens, tokens that are in
/// almost every document (floored idf) and in one. MaxScore ranks as the exhaustive search
/// does at every limit from 1 to 70; pruning with a bound a little below the truth loses
/// documents, so the comparison can fail.
#[test]
fn maxscore_ranks_ties_and_repeated_phrases_as_the_exhaustive_search_does() {
    let vocabulary = [
        "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
    ];
    let mut docs: Vec<(String, String)> = Vec::new();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut originals = Vec::new();
    for _ in 0..40 {
        let title: Vec<&str> = (0..1 + next(3)).map(|_| vocabulary[next(8)]).collect();
        let text: Vec<&str> = (0..3 + next(30))
            .map(|_| vocabulary[next(8).min(next(8))])
            .collect();
        originals.push((format!("common {}", title.join(" ")), text.join(" ")));
    }
    for copy in 0..600 {
        docs.push(originals[next(originals.len())].clone());
        if copy == 300 {
            docs.push(("unique".into(), "alpha beta unique".into()));
        }
    }
    let index = index_of(docs.iter().map(|(a, b)| (a.as_str(), b.as_str())));
    let expressions: Vec<String> = [
        r#""alpha""#,
        r#""alpha" OR "beta""#,
        r#""alpha" OR "alpha" OR "beta""#,
        r#""common" OR "alpha" OR "common""#,
        r#""alpha beta" OR "beta" OR "alpha beta""#,
        r#""theta" OR "eta" OR "zeta" OR "alpha""#,
        r#""unique" OR "alpha" OR "beta" OR "gamma" OR "delta""#,
        r#""common alpha" OR "gamma delta" OR "epsilon""#,
        r#""delta" OR "gamma" OR "beta" OR "alpha" OR "zeta" OR "eta" OR "theta" OR "epsilon""#,
        r#""alpha alpha" OR "beta beta beta" OR "zzqx" OR "common""#,
    ]
    .map(String::from)
    .to_vec();
    let limits: Vec<usize> = (1..=70).collect();
    differences(&index, &expressions, &limits, super::rank::SLACK);
    // A bound 1 % below the truth prunes documents that belong to the top.
    assert!(differences(&index, &expressions, &limits, -0.01) > 0);
}
