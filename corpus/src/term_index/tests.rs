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

/// CPU time this thread has run (`/proc/thread-self/schedstat`, as of the scheduler's last
/// tick): for spans of many milliseconds.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = stat.split_whitespace().next().and_then(|n| n.parse().ok());
    Duration::from_nanos(ns.unwrap_or(0))
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
/// With `TS_TERMS_ONLY=1`, a file of the documents and the term index alone is built (and kept
/// in `TS_BENCH_CACHE`) instead of the whole index file.
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
    // With `TS_TERMS_ONLY`, a file of the documents and the term index alone (no embeddings:
    // minutes rather than most of an hour at a million passages).
    let path = if std::env::var_os("TS_TERMS_ONLY").is_some() {
        let path = cache.join(format!("terms-only-{}.sqlite", corpus.jsonl.len()));
        if !path.exists() {
            let docs = crate::load_documents(&corpus.jsonl).expect("documents");
            let partial = path.with_extension("partial");
            let _ = std::fs::remove_file(&partial);
            let mut conn = rusqlite::Connection::open(&partial).expect("a file");
            index_into(
                &mut conn,
                docs.iter().map(|d| (d.title.as_str(), d.text.as_str())),
            );
            drop(conn);
            std::fs::rename(&partial, &path).expect("renamed");
        }
        path
    } else {
        CorpusIndex::open_or_build(&corpus, &cache)
            .expect("corpus index")
            .path
    };
    drop(corpus);
    let conn = crate::reader::open_read_only(&path).expect("index file");
    let before = resident_bytes();
    let mut terms = TermIndex::load(&conn).expect("term index");
    let grown = resident_bytes().saturating_sub(before);
    let mut loads = Vec::new();
    for _ in 0..3 {
        let (started, cpu) = (Instant::now(), cpu_time());
        terms = TermIndex::load(&conn).expect("term index");
        loads.push((started.elapsed(), cpu_time().saturating_sub(cpu)));
    }
    let tokenizer = Tokenizer::new().expect("tokenizer");
    let mix: Vec<Vec<Phrase>> = mix_expressions()
        .iter()
        .map(|e| phrases(&terms, &tokenizer, e))
        .collect();
    // Wall time, the three ways in turn (on shared cores each is slowed alike).
    let mut took: [Vec<Duration>; 3] = Default::default();
    type Rank = fn(&TermIndex, &[Phrase]) -> Vec<(u32, f64)>;
    let ways: [Rank; 3] = [
        |t, p| t.rank(p, 50).expect("within the phrase budget"),
        |t, p| t.rank_with_slack(p, 50, super::max_score::SLACK),
        |t, p| t.rank_exhaustive(p, 50),
    ];
    for _ in 0..5 {
        for p in &mix {
            for (way, took) in ways.iter().zip(&mut took) {
                let started = Instant::now();
                std::hint::black_box(way(&terms, p));
                took.push(started.elapsed());
            }
        }
    }
    // And CPU time, each way over the mix 5 times: a mean the neighbours do not inflate.
    // Each way alone (no other way's accumulator in the cache between calls): wall quantiles.
    let mut alone: [Vec<Duration>; 3] = Default::default();
    let cpu: Vec<Duration> = ways
        .iter()
        .zip(&mut alone)
        .map(|(way, alone)| {
            let cpu = cpu_time();
            for _ in 0..5 {
                for p in &mix {
                    let started = Instant::now();
                    std::hint::black_box(way(&terms, p));
                    alone.push(started.elapsed());
                }
            }
            alone.sort_unstable();
            cpu_time().saturating_sub(cpu) / (5 * mix.len() as u32)
        })
        .collect();
    for took in &mut took {
        took.sort_unstable();
    }
    let [chosen, max_score, exhaustive] = &took;
    let quantiles = |t: &[Duration]| (t[t.len() / 2], t[t.len() * 9 / 10], t[t.len() - 1]);
    let mb = |bytes: usize| bytes as f64 / 1e6;
    eprintln!(
        "{} documents: term index {:.1} MB (resident memory grew {:.1} MB on the first load: \
         postings {:.1} MB for {} postings, document tokens {:.1} MB, vocabulary {} tokens); \
         loaded in {:?} wall, {:?} CPU (best of 3)",
        terms.documents(),
        mb(terms.heap_bytes()),
        mb(grown),
        mb(terms.docs.capacity() * 4 + terms.parts.capacity() * 8),
        terms.docs.len(),
        mb(terms.tokens.capacity() * 4 + terms.token_starts.capacity() * 8),
        terms.numbers.len(),
        loads.iter().map(|l| l.0).min().unwrap_or_default(),
        loads.iter().map(|l| l.1).min().unwrap_or_default(),
    );
    eprintln!(
        "rank 50 on the mix, wall (median, p90, max) and mean CPU: as chosen {:?} {:?}; \
         MaxScore always {:?} {:?}; every posting term at a time {:?} {:?}",
        quantiles(chosen),
        cpu[0],
        quantiles(max_score),
        cpu[1],
        quantiles(exhaustive),
        cpu[2],
    );
    eprintln!(
        "each way alone, wall (median, p90, max): as chosen {:?}; MaxScore always {:?}; every \
         posting term at a time {:?}",
        quantiles(&alone[0]),
        quantiles(&alone[1]),
        quantiles(&alone[2]),
    );
    super::max_score::STATS.with_borrow_mut(|s| *s = (0, 0, 0));
    let total: usize = mix
        .iter()
        .map(|p| {
            terms.rank_with_slack(p, 50, super::max_score::SLACK);
            terms
                .lists(p)
                .unwrap()
                .iter()
                .map(|l| l.docs.len())
                .sum::<usize>()
        })
        .sum();
    let (candidates, lookups, scored) = super::max_score::STATS.with_borrow(|s| *s);
    eprintln!(
        "per question of the mix: {} postings, {} candidates, {} look-ups in non-essential lists, {} scored",
        total / mix.len(),
        candidates / mix.len(),
        lookups / mix.len(),
        scored / mix.len()
    );
}

/// The term index of `docs` (title, text), built as the index file builds it, in memory.
fn index_of<'a>(docs: impl IntoIterator<Item = (&'a str, &'a str)>) -> TermIndex {
    let mut conn = rusqlite::Connection::open_in_memory().expect("in-memory database");
    index_into(&mut conn, docs);
    TermIndex::load(&conn).expect("load")
}

/// The `docs` table of `docs` (title, text) and its term index, in `conn`.
fn index_into<'a>(
    conn: &mut rusqlite::Connection,
    docs: impl IntoIterator<Item = (&'a str, &'a str)>,
) {
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
}

/// A ranking as (position, the rank's bits): equal only if the `f64`s are.
fn bits(ranked: &[(u32, f64)]) -> Vec<(u32, u64)> {
    ranked.iter().map(|&(d, r)| (d, r.to_bits())).collect()
}

/// How many of `expressions` × `limits` MaxScore with pruning's slack `slack` ranks otherwise
/// than the exhaustive search (documents, order, or a rank's bits); asserted equal to 0 when
/// `slack` is [`SLACK`](super::max_score::SLACK).
fn differences(index: &TermIndex, expressions: &[String], limits: &[usize], slack: f64) -> usize {
    let tokenizer = Tokenizer::new().expect("tokenizer");
    let mut differ = 0;
    for expression in expressions {
        let phrases = phrases(index, &tokenizer, expression);
        for &limit in limits {
            let exhaustive = bits(&index.rank_exhaustive(&phrases, limit));
            let pruned = bits(&index.rank_with_slack(&phrases, limit, slack));
            if slack == super::max_score::SLACK {
                assert_eq!(pruned, exhaustive, "{expression} (limit {limit})");
                let ranked = bits(&index.rank(&phrases, limit).unwrap());
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
    differences(
        &index,
        &expressions,
        &[1, 5, 10, 50],
        super::max_score::SLACK,
    );
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
    differences(&index, &expressions, &limits, super::max_score::SLACK);
    // A bound 1 % below the truth prunes documents that belong to the top.
    assert!(differences(&index, &expressions, &limits, -0.01) > 0);
}

/// A phrase of words in every document would make the index scan every document's tokens: past
/// [`PHRASE_SCAN_BUDGET`](super::index::PHRASE_SCAN_BUDGET) the query goes to FTS5 (its position
/// lists), with FTS5's answer; a phrase with a rare word stays the index's.
#[test]
fn a_phrase_of_common_words_goes_to_fts5_past_the_scan_budget() {
    // Texts are at most 2,000 characters: "of the " 270 times, 540 tokens and a few more.
    let docs = 1 + super::index::PHRASE_SCAN_BUDGET / 540;
    let mut jsonl = String::new();
    for i in 0..docs {
        let text = format!("note {i} guide {}", "of the ".repeat(270));
        jsonl.push_str(&format!(
            "{{\"id\": \"d{i}\", \"title\": \"Part {i}\", \"text\": \"{text}\"}}\n"
        ));
    }
    let (pool, _dir) = crate::testing::pool_of(jsonl.as_bytes(), 1);
    let session = pool.session().unwrap();
    let cases = [
        (r#""of the" OR "guide""#, false),
        (r#""note 7" OR "guide""#, true),
    ];
    for (expression, by_index) in cases {
        let fts5 = session.rank_by_fts5(expression, 10).unwrap();
        assert_eq!(fts5.len(), 10, "{expression}");
        let before = pool.rank_paths();
        assert_eq!(session.rank(expression, 10).unwrap(), fts5, "{expression}");
        let after = pool.rank_paths();
        let took = (after.0 - before.0, after.1 - before.1);
        let expected = if by_index { (1, 0) } else { (0, 1) };
        assert_eq!(took, expected, "{expression}: (by the index, by FTS5)");
    }
}
