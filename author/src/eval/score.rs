//! Scoring one answer against its acceptable ids, with the matching rule of the public dev set
//! (`../shared/eval/README.md`): a returned id counts if it equals an expected id or starts with
//! an expected id followed by `.` (`csv` accepts `csv.reader`; `csv.reader` does not accept
//! `csv`). For corpora built from files (`corpus build`: `PATH#section`, then `/2`, `/3`… for a
//! section's further passages), `#` and `/` end a prefix too: `guide.html` accepts any passage
//! of that page, `guide.html#setup` any passage of that section (not `guide.html#setup-1`).

use serde::Serialize;

/// Whether `id` is an acceptable answer for `expect`.
pub fn acceptable(id: &str, expect: &[String]) -> bool {
    expect.iter().any(|e| {
        id == e
            || (id.len() > e.len()
                && id.starts_with(e.as_str())
                && matches!(id.as_bytes()[e.len()], b'.' | b'#' | b'/'))
    })
}

/// The scores of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Scores {
    /// The 1-based rank of the first acceptable id, if any.
    pub first_hit: Option<usize>,
    /// The best answer is acceptable.
    pub recall_at_1: f64,
    /// An acceptable id in the top 5.
    pub recall_at_5: f64,
    /// 1 / the rank of the first acceptable id within the top 10, else 0.
    pub mrr_at_10: f64,
    /// Binary-gain nDCG over the top 10: each acceptable id gains 1 / log2(rank + 1); the ideal
    /// ranks `min(10, max(expected ids, acceptable ids returned))` acceptable ids first.
    pub ndcg_at_10: f64,
}

/// Scores `ids` (best first) against `expect`.
pub fn score(ids: &[String], expect: &[String]) -> Scores {
    let relevant: Vec<bool> = ids
        .iter()
        .take(10)
        .map(|id| acceptable(id, expect))
        .collect();
    let first_hit = ids
        .iter()
        .position(|id| acceptable(id, expect))
        .map(|i| i + 1);
    let gain = |rank: usize| 1.0 / ((rank + 1) as f64).log2();
    let dcg: f64 = relevant
        .iter()
        .enumerate()
        .filter(|(_, r)| **r)
        .map(|(i, _)| gain(i + 1))
        .sum();
    let ideal_count = expect
        .len()
        .max(relevant.iter().filter(|r| **r).count())
        .min(10);
    let idcg: f64 = (1..=ideal_count).map(gain).sum();
    Scores {
        first_hit,
        recall_at_1: f64::from(u8::from(first_hit == Some(1))),
        recall_at_5: f64::from(u8::from(first_hit.is_some_and(|r| r <= 5))),
        mrr_at_10: first_hit
            .filter(|r| *r <= 10)
            .map_or(0.0, |r| 1.0 / r as f64),
        ndcg_at_10: if idcg > 0.0 { dcg / idcg } else { 0.0 },
    }
}

/// Mean scores over a question set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Means {
    /// Mean recall@1.
    pub recall_at_1: f64,
    /// Mean recall@5.
    pub recall_at_5: f64,
    /// Mean reciprocal rank within the top 10.
    pub mrr_at_10: f64,
    /// Mean nDCG@10.
    pub ndcg_at_10: f64,
}

impl Means {
    /// The means of `all` (zeros when empty).
    pub fn of(all: &[Scores]) -> Self {
        if all.is_empty() {
            return Self::default();
        }
        let n = all.len() as f64;
        let mean = |f: fn(&Scores) -> f64| all.iter().map(f).sum::<f64>() / n;
        Self {
            recall_at_1: mean(|s| s.recall_at_1),
            recall_at_5: mean(|s| s.recall_at_5),
            mrr_at_10: mean(|s| s.mrr_at_10),
            ndcg_at_10: mean(|s| s.ndcg_at_10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_matching_rule_of_the_dev_set() {
        let expect = ids(&["csv", "shutil.rmtree"]);
        assert!(acceptable("csv", &expect));
        assert!(acceptable("csv.reader", &expect));
        assert!(!acceptable("csvkit", &expect), "a prefix must end at a dot");
        assert!(acceptable("shutil.rmtree", &expect));
        assert!(!acceptable("shutil", &expect), "a parent is not its child");
        assert!(!acceptable("os.remove", &expect));
    }

    #[test]
    fn a_page_or_a_section_of_a_built_corpus_accepts_its_passages() {
        let expect = ids(&["guide.html", "faq.html#setup"]);
        assert!(acceptable("guide.html#install", &expect));
        assert!(acceptable("guide.html#install/3", &expect));
        assert!(acceptable("faq.html#setup/2", &expect));
        assert!(!acceptable("faq.html#setup-1", &expect), "another section");
        assert!(!acceptable("faq.html#billing", &expect));
        assert!(!acceptable("guide.htmlx", &expect));
    }

    #[test]
    fn ranks_give_recall_mrr_and_ndcg() {
        let expect = ids(&["a"]);
        let first = score(&ids(&["a", "x", "y"]), &expect);
        assert_eq!(first.first_hit, Some(1));
        assert_eq!(
            (
                first.recall_at_1,
                first.recall_at_5,
                first.mrr_at_10,
                first.ndcg_at_10
            ),
            (1.0, 1.0, 1.0, 1.0)
        );
        let third = score(&ids(&["x", "y", "a.b"]), &expect);
        assert_eq!((third.recall_at_1, third.recall_at_5), (0.0, 1.0));
        assert!((third.mrr_at_10 - 1.0 / 3.0).abs() < 1e-12);
        assert!(
            (third.ndcg_at_10 - 0.5).abs() < 1e-12,
            "1/log2(4) over 1/log2(2)"
        );
        let seventh = score(&ids(&["1", "2", "3", "4", "5", "6", "a"]), &expect);
        assert_eq!((seventh.recall_at_5, seventh.first_hit), (0.0, Some(7)));
        let none = score(&ids(&["x"]), &expect);
        assert_eq!(
            (none.first_hit, none.mrr_at_10, none.ndcg_at_10),
            (None, 0.0, 0.0)
        );
        let means = Means::of(&[first, none]);
        assert_eq!((means.recall_at_1, means.mrr_at_10), (0.5, 0.5));
    }

    #[test]
    fn ndcg_never_exceeds_one_when_many_ids_are_acceptable() {
        let s = score(&ids(&["csv.a", "csv.b", "csv.c"]), &ids(&["csv"]));
        assert!((s.ndcg_at_10 - 1.0).abs() < 1e-12, "{s:?}");
    }
}
