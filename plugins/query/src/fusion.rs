//! How the hybrid plugins fuse their two candidate pools: the bm25 pool of the question's terms
//! (re-ranked by how well each id names them) and the pool of documents whose vectors are
//! nearest the question's embedding, by a weighted sum of the pool-normalised lexical score and
//! the cosine similarity (`docs/RETRIEVAL.md`). Shared by the default plugin
//! (`plugins/retrieval-hybrid`) and the answering one (`plugins/rag`), so both find the same
//! sources.

/// Candidates taken from each pool, whatever `limit` is (the host's most): the fused ranking
/// does not depend on `limit`, so a `limit: k` answer is the first k of a `limit: 20` answer.
pub const POOL: u32 = 50;
/// How much naming the object (segments of its id) moves a lexical candidate, relative to bm25.
pub const ID_WEIGHT: f64 = 0.2;
/// The lexical score's weight in the fusion (the semantic score has the rest): the lowest weight
/// at which the default stays at or above the lexical plugin on the known-item set (questions in
/// the API's own words); lower weights score higher on the dev set's paraphrases but lose those.
/// docs/RETRIEVAL.md has the sweep.
pub const LEXICAL_WEIGHT: f64 = 0.15;
/// Longest snippet made from a document's text when the question's terms do not occur in it.
pub const TEXT_SNIPPET_BYTES: usize = 300;

/// A document one pool found, with that pool's score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The document's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its handle in the corpus.
    pub doc: u64,
    /// The pool's score (higher is better).
    pub score: f64,
    /// Whether the lexical pool has it (it matches the question's terms).
    pub lexical: bool,
}

impl Candidate {
    /// A candidate of a pool (the semantic one until marked lexical).
    pub fn new(id: String, title: String, doc: u64, score: f64) -> Self {
        Self {
            id,
            title,
            doc,
            score,
            lexical: false,
        }
    }
}

/// The `lexical_weight` setting: a number in 0..=1.
pub fn lexical_weight(value: &str) -> Result<f64, String> {
    match value.trim().parse::<f64>() {
        Ok(w) if (0.0..=1.0).contains(&w) => Ok(w),
        _ => Err(format!(
            "lexical_weight must be a number in 0..=1, not {value:?}"
        )),
    }
}

/// Both pools fused, best first (ties by id): `weight × lexical + (1 - weight) × semantic`, where
/// the lexical score is divided by the pool's best (so the best lexical hit scores 1; a document
/// outside the pool matched no term and scores 0) and the semantic score is the cosine similarity
/// (a document outside the semantic pool is at most as similar as the pool's last, and gets that).
pub fn fuse(
    lexical: Vec<Candidate>,
    semantic: Vec<Candidate>,
    weight: f64,
) -> Vec<(f64, Candidate)> {
    let best = lexical
        .iter()
        .map(|c| c.score)
        .filter(|s| s.is_finite())
        .fold(0.0_f64, f64::max);
    let floor = semantic
        .iter()
        .map(|c| c.score)
        .filter(|s| s.is_finite())
        .fold(f64::INFINITY, f64::min);
    let floor = if floor.is_finite() { floor } else { 0.0 };
    let lexical_score = |c: &Candidate| {
        if best > 0.0 && c.score.is_finite() {
            (c.score / best).max(0.0)
        } else {
            0.0
        }
    };
    let semantic_score = |c: &Candidate| if c.score.is_finite() { c.score } else { floor };

    let mut fused: Vec<(f64, Candidate)> = Vec::with_capacity(lexical.len() + semantic.len());
    for c in &lexical {
        let similarity = semantic
            .iter()
            .find(|s| s.doc == c.doc)
            .map_or(floor, semantic_score);
        fused.push((
            weight * lexical_score(c) + (1.0 - weight) * similarity,
            c.clone(),
        ));
    }
    for c in semantic {
        if lexical.iter().any(|l| l.doc == c.doc) {
            continue;
        }
        fused.push(((1.0 - weight) * semantic_score(&c), c));
    }
    fused.sort_by(|(a, x), (b, y)| b.total_cmp(a).then_with(|| x.id.cmp(&y.id)));
    fused
}

/// The start of a document's text, at most [`TEXT_SNIPPET_BYTES`], cut on a character boundary.
pub fn text_snippet(text: &str) -> String {
    let text = text.trim();
    if text.len() <= TEXT_SNIPPET_BYTES {
        return text.to_owned();
    }
    let mut end = TEXT_SNIPPET_BYTES - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str, doc: u64, score: f64) -> Candidate {
        Candidate::new(id.into(), id.into(), doc, score)
    }

    fn ids(fused: &[(f64, Candidate)]) -> Vec<&str> {
        fused.iter().map(|(_, c)| c.id.as_str()).collect()
    }

    #[test]
    fn a_document_in_both_pools_beats_one_in_either() {
        let lexical = vec![c("a", 1, 10.0), c("b", 2, 8.0)];
        let semantic = vec![c("c", 3, 0.9), c("b", 2, 0.8), c("d", 4, 0.5)];
        let fused = fuse(lexical, semantic, 0.5);
        assert_eq!(ids(&fused), ["b", "a", "c", "d"]);
        // b: 0.5 × 0.8 + 0.5 × 0.8; a: 0.5 × 1 + 0.5 × 0.5 (the semantic pool's floor).
        assert!((fused[0].0 - 0.8).abs() < 1e-9);
        assert!((fused[1].0 - 0.75).abs() < 1e-9);
    }

    #[test]
    fn the_weight_moves_between_lexical_and_semantic() {
        let lexical = || vec![c("lex", 1, 5.0)];
        let semantic = || vec![c("sem", 2, 0.9), c("lex", 1, 0.1)];
        assert_eq!(ids(&fuse(lexical(), semantic(), 1.0))[0], "lex");
        assert_eq!(ids(&fuse(lexical(), semantic(), 0.0))[0], "sem");
    }

    #[test]
    fn either_pool_alone_is_ranked_as_it_came() {
        let fused = fuse(vec![], vec![c("x", 1, 0.7), c("y", 2, 0.9)], 0.3);
        assert_eq!(ids(&fused), ["y", "x"]);
        let fused = fuse(vec![c("x", 1, 2.0), c("y", 2, 3.0)], vec![], 0.3);
        assert_eq!(ids(&fused), ["y", "x"]);
        assert!(fuse(vec![], vec![], 0.3).is_empty());
    }

    #[test]
    fn ties_are_broken_by_id_and_non_finite_scores_sink() {
        let fused = fuse(vec![], vec![c("b", 2, 0.5), c("a", 1, 0.5)], 0.3);
        assert_eq!(ids(&fused), ["a", "b"]);
        let fused = fuse(vec![c("nan", 1, f64::NAN), c("ok", 2, 1.0)], vec![], 0.3);
        assert_eq!(ids(&fused), ["ok", "nan"]);
        assert!(fused.iter().all(|(s, _)| s.is_finite()));
    }

    #[test]
    fn the_weight_setting_is_checked() {
        assert_eq!(lexical_weight(" 0.25 "), Ok(0.25));
        assert_eq!(lexical_weight("1"), Ok(1.0));
        for bad in ["", "x", "-0.1", "1.5", "NaN", "inf"] {
            assert!(lexical_weight(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn text_snippets_are_bounded_on_character_boundaries() {
        assert_eq!(text_snippet("  short text \n"), "short text");
        let long = "é".repeat(400);
        let snippet = text_snippet(&long);
        assert!(snippet.len() <= TEXT_SNIPPET_BYTES);
        assert!(snippet.ends_with('…'));
    }
}
