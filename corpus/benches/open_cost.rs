//! What opening a reused index costs, step by step, and what building it costs in time and peak
//! memory: `TS_OPEN_CORPUS=FILE.jsonl` (e.g. `/work/data/corpus-100000.jsonl`), its index kept
//! in `TS_OPEN_CACHE=DIR` between runs.
//!
//! `TS_OPEN_MODE=build cargo bench -p turnstile-corpus --bench open_cost` builds the index (into
//! an empty `DIR`) and prints the seconds and the process's peak resident memory (VmHWM); then
//! `TS_OPEN_MODE=open …` (the default) opens the built index `TS_OPEN_ROUNDS` times (3), each
//! as a server starts: `CorpusIndex::open_or_build` (the corpus's sha256, the integrity check of
//! the file) then `CorpusPool::new` (vectors, ids, term index into memory), and after the last
//! round the pool's load again step by step (`TS_OPEN_MODE=check`: each round stops after
//! `open_or_build`). Not run by CI: it needs a large corpus to say
//! anything.

use std::path::PathBuf;
use std::time::Instant;

use sha2::{Digest, Sha256};
use turnstile_corpus::{CorpusBytes, CorpusIndex, CorpusPool, IndexOrigin, open_cost};

fn main() {
    let Some(corpus) = std::env::var_os("TS_OPEN_CORPUS") else {
        println!("open_cost: set TS_OPEN_CORPUS=FILE.jsonl and TS_OPEN_CACHE=DIR (see the source)");
        return;
    };
    let cache = PathBuf::from(std::env::var_os("TS_OPEN_CACHE").expect("TS_OPEN_CACHE=DIR"));
    let mode = std::env::var("TS_OPEN_MODE").unwrap_or_else(|_| "open".into());
    let rounds: usize = std::env::var("TS_OPEN_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let started = Instant::now();
    let corpus = CorpusBytes {
        name: corpus.to_string_lossy().into_owned(),
        jsonl: std::fs::read(&corpus).expect("TS_OPEN_CORPUS"),
    };
    println!(
        "read the corpus ({:.1} MB): {:.3} s",
        corpus.jsonl.len() as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    if mode == "build" {
        let started = Instant::now();
        let index = CorpusIndex::open_or_build(&corpus, &cache).expect("corpus index");
        assert_eq!(
            index.origin,
            IndexOrigin::Built,
            "TS_OPEN_CACHE must be empty"
        );
        println!(
            "built {} documents: {:.1} s; file {:.1} MB; peak resident (VmHWM) {} MiB",
            index.documents,
            started.elapsed().as_secs_f64(),
            std::fs::metadata(&index.path).expect("index").len() as f64 / 1e6,
            peak_mib()
        );
        return;
    }
    for round in 1..=rounds {
        let started = Instant::now();
        let cpu = cpu_seconds();
        let sha256 = hex::encode(Sha256::digest(&corpus.jsonl));
        let hashed = (started.elapsed(), cpu_seconds());
        let index = CorpusIndex::open_or_build_hashed(&corpus, sha256, &cache, &Default::default())
            .expect("corpus index");
        assert_eq!(index.origin, IndexOrigin::Reused, "build the index first");
        let checked = (started.elapsed(), cpu_seconds());
        if mode == "check" {
            println!(
                "round {round}: corpus sha256 {:.3} s + integrity check {:.3} s (CPU seconds: {:.2} + {:.2})",
                hashed.0.as_secs_f64(),
                (checked.0 - hashed.0).as_secs_f64(),
                hashed.1 - cpu,
                checked.1 - hashed.1,
            );
            continue;
        }
        let pool = CorpusPool::new(&index, 1).expect("corpus pool");
        let loaded = (started.elapsed(), cpu_seconds());
        println!(
            "round {round}: {:.3} s = corpus sha256 {:.3} + integrity check {:.3} + CorpusPool::new {:.3} \
             (CPU seconds: {:.2} = {:.2} + {:.2} + {:.2})",
            loaded.0.as_secs_f64(),
            hashed.0.as_secs_f64(),
            (checked.0 - hashed.0).as_secs_f64(),
            (loaded.0 - checked.0).as_secs_f64(),
            loaded.1 - cpu,
            hashed.1 - cpu,
            checked.1 - hashed.1,
            loaded.1 - checked.1,
        );
        drop(pool);
        if round == rounds {
            for (step, took) in open_cost::load_steps(&index).expect("steps") {
                println!("  {step}: {:.3} s", took.as_secs_f64());
            }
        }
    }
    println!("peak resident (VmHWM) {} MiB", peak_mib());
}

/// The CPU time (user and system, all threads) the process has used, in seconds (to 10 ms).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command name's closing parenthesis: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// The process's peak resident memory, MiB.
fn peak_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}
