//! `turnstile eval`: the shipped plugins on the public dev set, each held to a quality floor set
//! from its measured scores at limit 10 (the lexical plugin: recall@1 .313, recall@5 .547,
//! MRR@10 .420, nDCG@10 .389; the hybrid default: [`HYBRID_FLOORS`]); the default at or above
//! the lexical plugin on the known-item set, where exact wording favours bm25; and the command's
//! refusals.

use std::process::Command;

use serde_json::Value;

use crate::support::{binary, cache_dir};

const DEV_SET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/eval/dev_questions.jsonl"
);

/// 300 documents asked for by their own one-line descriptions (`tests/eval/make_known_items.py`).
const KNOWN_ITEMS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/eval/known_items.jsonl"
);

/// The hybrid plugin's floors: recall@1, recall@5, MRR@10, nDCG@10, a little under its measured
/// scores (.393 / .687 / .515 / .497, docs/RETRIEVAL.md).
const HYBRID_FLOORS: [f64; 4] = [0.37, 0.66, 0.49, 0.47];

const METRICS: [&str; 4] = ["recall_at_1", "recall_at_5", "mrr_at_10", "ndcg_at_10"];

/// `eval QUESTIONS --compare <the lexical plugin> --json`: the report, after checking that both
/// plugins answered every one of `count` questions without an error.
fn default_against_lexical(questions: &str, count: u64) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let lexical = crate::support::lexical_plugin(dir.path());
    let out = eval(&[questions, "--compare", lexical.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["questions"], count);
    assert_eq!(report["limit"], 10);
    for plugin in 0..2 {
        let plugin = &report["plugins"][plugin];
        assert_eq!(plugin["errors"], 0);
        assert_eq!(plugin["answers"].as_array().unwrap().len() as u64, count);
    }
    report
}

/// A metric of plugin `plugin` ([0] the default, hybrid; [1] the lexical one) in `report`.
fn metric(report: &Value, plugin: usize, name: &str) -> f64 {
    report["plugins"][plugin]["metrics"][name].as_f64().unwrap()
}

fn eval(args: &[&str]) -> std::process::Output {
    Command::new(binary())
        .arg("eval")
        .args(args)
        .arg("--cache-dir")
        .arg(cache_dir())
        .output()
        .unwrap()
}

#[test]
fn the_shipped_plugins_keep_their_quality_floors() {
    let report = default_against_lexical(DEV_SET, 150);
    for ((name, hybrid_floor), lexical_floor) in METRICS
        .into_iter()
        .zip(HYBRID_FLOORS)
        .zip([0.30, 0.53, 0.40, 0.37])
    {
        let (hybrid, lexical) = (metric(&report, 0, name), metric(&report, 1, name));
        assert!(
            hybrid >= hybrid_floor,
            "hybrid {name} {hybrid} fell below its floor {hybrid_floor}"
        );
        assert!(
            lexical >= lexical_floor,
            "lexical {name} {lexical} fell below its floor {lexical_floor}"
        );
        // The default is the default because it is better on every measure.
        assert!(
            hybrid > lexical,
            "hybrid {name} {hybrid} is not above lexical {lexical}"
        );
    }
}

/// What the dev set's paraphrases gain must not be paid for by questions in the API's own words:
/// on the known-item set the default is at or above the lexical plugin on every metric (measured:
/// .857 / .997 / .919 / .933 against .850 / .980 / .910 / .927).
#[test]
fn the_default_keeps_up_with_the_lexical_plugin_on_known_items() {
    let report = default_against_lexical(KNOWN_ITEMS, 300);
    for name in METRICS {
        let (hybrid, lexical) = (metric(&report, 0, name), metric(&report, 1, name));
        assert!(
            lexical >= 0.9 || name == "recall_at_1",
            "lexical {name} {lexical}: the known items are no longer easy for bm25"
        );
        assert!(
            hybrid >= lexical,
            "hybrid {name} {hybrid} fell below lexical {lexical} on known items"
        );
    }
}

#[test]
fn compare_puts_two_plugins_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let other = crate::support::hybrid_plugin(dir.path());
    let questions = dir.path().join("q.jsonl");
    std::fs::write(
        &questions,
        "{\"q\": \"delete a directory tree\", \"expect\": [\"shutil.rmtree\"]}\n\n{\"q\": \"parse command line arguments\", \"expect\": [\"argparse\"]}\n",
    )
    .unwrap();
    let q = questions.to_str().unwrap();
    let out = eval(&[q, "--compare", other.to_str().unwrap(), "--limit", "5"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 questions"), "{text}");
    assert!(
        text.contains("[A]") && text.contains("[B]") && text.contains("B - A"),
        "{text}"
    );
    // The same component twice: no difference anywhere in quality.
    assert!(
        text.contains("B finds in its top 5 what A misses (0)"),
        "{text}"
    );
    assert!(text.contains("B misses what A finds (0)"), "{text}");
}

#[test]
fn a_bad_question_file_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("q.jsonl");
    std::fs::write(
        &questions,
        "{\"q\": \"a\", \"expect\": [\"b\"]}\n{\"q\": \"no expect\"}\n",
    )
    .unwrap();
    let out = eval(&[questions.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2"), "{stderr}");
    let out = eval(&[questions.to_str().unwrap(), "--limit", "21"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--limit"));
}

/// Every plugin we ship ranks the same whatever `limit` is: for each dev question, a `limit: k`
/// answer is the first k of the `limit: 20` answer.
#[test]
fn a_limit_k_answer_is_the_first_k_of_a_limit_20_answer() {
    use turnstile_corpus::{CorpusIndex, CorpusPool, read_corpus};
    use turnstile_host::{Plugin, PluginConfig, PluginSource, Provision};

    let questions = turnstile_author::eval::read_questions(std::path::Path::new(DEV_SET)).unwrap();
    let index = CorpusIndex::open_or_build(&read_corpus(None).unwrap(), &cache_dir().join("index"))
        .unwrap();
    let runtime = turnstile_author::eval::runtime(Some(cache_dir().join("plugins"))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lexical = crate::support::lexical_plugin(dir.path());
    let shipped = [PluginSource::Embedded, PluginSource::File(lexical)];
    for source in shipped {
        let pool = CorpusPool::new(&index, 4).unwrap();
        let plugin = Plugin::load(
            &runtime,
            &source,
            Provision::new(pool, PluginConfig::default()),
        )
        .unwrap();
        let ids = |q: &str, limit: u32| -> Vec<String> {
            plugin
                .retrieve(q, limit, 1)
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect()
        };
        for question in &questions {
            let full = ids(&question.q, 20);
            for k in [1u32, 2, 3, 5, 8, 10, 13, 19] {
                let short = ids(&question.q, k);
                let prefix = &full[..full.len().min(k as usize)];
                assert_eq!(short, prefix, "{source:?}, limit {k}: {:?}", question.q);
            }
        }
    }
}
