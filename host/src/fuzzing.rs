//! What the `plugin_result` fuzz target checks (`fuzz/`, run by `cargo fuzz`:
//! `fuzz/run.sh`): the host's checks of a plugin's answer at the WIT boundary, on arbitrary
//! source lists, against a plain statement of the contract; and the escaping of what a plugin
//! chose before it reaches a log line. `cargo test` runs the kept cases on stable
//! (`fuzz/seeds/plugin_result/`, `fuzz/regressions/plugin_result/`).

use std::collections::HashSet;

use arbitrary::{Result, Unstructured};
use turnstile_corpus::{CorpusPool, SessionLimits};

use crate::bindings::Source;
use crate::output::{MAX_LOGGED_TEXT, sanitize};
use crate::source_checks::check_sources;

/// The ids of the corpus the answers are checked against.
const IDS: [&str; 3] = ["json", "json.dumps", "os.path"];

/// A small corpus to check answers against; keep it for as many inputs as you like.
pub struct ResultCheck {
    pool: CorpusPool,
    _dir: tempfile::TempDir,
}

impl Default for ResultCheck {
    fn default() -> Self {
        Self::new()
    }
}

impl ResultCheck {
    /// A pool over [`IDS`].
    ///
    /// # Panics
    /// If the corpus cannot be built in a temporary directory.
    pub fn new() -> Self {
        let jsonl: Vec<String> = IDS
            .iter()
            .map(|id| format!(r#"{{"id":"{id}","kind":"module","title":"{id}","text":"{id}"}}"#))
            .collect();
        let (pool, dir) = turnstile_corpus::testing::pool_of(jsonl.join("\n").as_bytes(), 1);
        Self { pool, _dir: dir }
    }

    /// One answer made of `data`: the host accepts it exactly when the contract does, and what
    /// it says when it refuses fits on one log line.
    ///
    /// # Panics
    /// When the host's checks and the contract disagree, or a refusal is not log-safe.
    pub fn check(&self, data: &[u8]) {
        let mut input = Unstructured::new(data);
        let Ok((limit, sources)) = answer(&mut input) else {
            return;
        };
        let verdict = check_sources(&sources, limit, &self.pool);
        let expected = contract_allows(&sources, limit);
        assert_eq!(
            verdict.is_ok(),
            expected,
            "limit {limit}, {} sources: host says {verdict:?}",
            sources.len()
        );
        if let Err(violation) = verdict {
            let line = violation.to_string();
            assert!(!line.contains(['\n', '\r']), "{line:?}");
            assert!(
                line.len() <= 512 + 10 * MAX_LOGGED_TEXT,
                "{} bytes",
                line.len()
            );
        }
        if let Ok(text) = input.arbitrary::<String>() {
            let max = usize::from(input.arbitrary::<u16>().unwrap_or(64));
            let safe = sanitize(&text, max);
            assert!(!safe.chars().any(char::is_control), "{safe:?}");
            if text.len() <= max && !text.chars().any(char::is_control) {
                assert_eq!(safe, text);
            }
        }
    }
}

/// The contract (`wit/`), stated plainly: at most `limit` sources, each with an id of the
/// corpus, a finite score, a title of at most 512 bytes and a snippet of at most 1,024, best
/// first.
fn contract_allows(sources: &[Source], limit: u32) -> bool {
    let ids: HashSet<&str> = IDS.into_iter().collect();
    sources.len() <= limit as usize
        && sources.iter().all(|s| {
            (1..=SessionLimits::MAX_ID_BYTES).contains(&s.id.len())
                && ids.contains(s.id.as_str())
                && s.score.is_finite()
                && s.title.len() <= 512
                && s.snippet.len() <= 1024
        })
        && sources.windows(2).all(|w| w[1].score <= w[0].score)
}

/// A limit and a source list, with ids, scores and lengths near every bound more often than
/// chance would give them.
fn answer(input: &mut Unstructured<'_>) -> Result<(u32, Vec<Source>)> {
    let limit = input.int_in_range(0..=24)?;
    let count = input.int_in_range(0..=24)?;
    let mut sources = Vec::with_capacity(count);
    for _ in 0..count {
        sources.push(Source {
            id: match input.int_in_range(0..=3)? {
                0 | 1 => (*input.choose(&IDS)?).to_owned(),
                2 => input.arbitrary()?,
                _ => text_of_length(input, SessionLimits::MAX_ID_BYTES)?,
            },
            title: text_of_length(input, 512)?,
            snippet: text_of_length(input, 1024)?,
            score: match input.int_in_range(0..=4)? {
                0 => f64::NAN,
                1 => *input.choose(&[f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0])?,
                _ => input.arbitrary()?,
            },
        });
    }
    Ok((limit, sources))
}

/// Text of a length near `bound` (one under, at, one over, or anything up to twice it), of one
/// character that may take one to four bytes.
fn text_of_length(input: &mut Unstructured<'_>, bound: usize) -> Result<String> {
    let length = match input.int_in_range(0..=3)? {
        0 => bound.saturating_sub(1),
        1 => bound,
        2 => bound + 1,
        _ => input.int_in_range(0..=2 * bound)?,
    };
    let c: char = input.arbitrary()?;
    Ok(std::iter::repeat_n(c, length / c.len_utf8()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_result_cases() {
        let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        let check = ResultCheck::new();
        let mut ran = 0;
        for kind in ["seeds", "regressions"] {
            let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join("plugin_result")) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("a readable folder").path();
                let bytes = std::fs::read(&path).expect("a readable case");
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check.check(&bytes)));
                assert!(outcome.is_ok(), "plugin_result: {} failed", path.display());
                ran += 1;
            }
        }
        assert!(ran > 0, "no cases for plugin_result");
    }

    #[test]
    fn the_contract_check_refuses_what_it_should() {
        let source = |id: &str, score: f64| Source {
            id: id.to_owned(),
            title: "t".to_owned(),
            snippet: "s".to_owned(),
            score,
        };
        assert!(contract_allows(
            &[source("json", 2.0), source("os.path", 1.0)],
            2
        ));
        assert!(!contract_allows(
            &[source("json", 1.0), source("os.path", 2.0)],
            2
        ));
        assert!(!contract_allows(&[source("json", 1.0)], 0));
        assert!(!contract_allows(&[source("nope", 1.0)], 1));
        assert!(!contract_allows(&[source("json", f64::NAN)], 1));
    }
}
