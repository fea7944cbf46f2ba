//! Where a text may be cut: its sentences (Unicode's sentence boundaries, UAX #29, which keep
//! "e.g. the", "v1.2", "3.14" and "wait... then" whole, and common abbreviations before a
//! capital, "e.g. Rust" and "Dr. Smith", which those rules alone would end a sentence at) and
//! its words.

use std::ops::Range;

use unicode_segmentation::UnicodeSegmentation;

/// Abbreviations (lowercase, with their final `.`) after which a sentence does not end even
/// before a capital. "etc." is not one: before a capital it ends a sentence more often than not
/// ("… and so on, etc. The next"); before a lowercase word Unicode's rules already keep it.
const ABBREVIATIONS: &[&str] = &[
    "e.g.", "i.e.", "eg.", "ie.", "cf.", "vs.", "viz.", "approx.", "dr.", "mr.", "mrs.", "ms.",
    "prof.", "st.", "jr.", "sr.", "no.", "nos.", "vol.", "fig.", "figs.", "eq.", "ch.", "sec.",
    "pp.", "al.", "inc.", "ltd.", "corp.", "dept.",
];

/// The sentences of `text`, as byte ranges in order, each without the whitespace around it
/// (a line break ends a sentence, as in Unicode's rules). Whitespace-only text has none.
pub(crate) fn sentences(text: &str) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut glue = false;
    for (start, piece) in text.split_sentence_bound_indices() {
        let Some(range) = trimmed(text, start..start + piece.len()) else {
            continue;
        };
        let ends_in_abbreviation = ends_in_abbreviation(&text[range.clone()]);
        // A line break ends a sentence whatever came before it.
        let after_line_break = text[..range.start]
            .rfind(|c: char| !c.is_whitespace())
            .is_some_and(|end| text[end..range.start].contains('\n'));
        match out.last_mut() {
            // After an abbreviation, or with no space between ("see foo.Bar"): the same sentence.
            Some(last) if (glue && !after_line_break) || last.end == range.start => {
                last.end = range.end;
            }
            _ => out.push(range),
        }
        glue = ends_in_abbreviation;
    }
    out
}

/// The words of `text` (runs of non-whitespace), as byte ranges in order (one at a time: a
/// sentence may be megabytes long).
pub(crate) fn words(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    text.split_whitespace().map(move |word| {
        let start = word.as_ptr() as usize - text.as_ptr() as usize;
        start..start + word.len()
    })
}

/// `range` of `text` without its leading and trailing whitespace; `None` when nothing is left.
fn trimmed(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let piece = &text[range.clone()];
    let start = range.start + (piece.len() - piece.trim_start().len());
    let end = range.end - (piece.len() - piece.trim_end().len());
    (start < end).then_some(start..end)
}

/// Whether `sentence` ends with a known abbreviation (its last word, lowercased).
fn ends_in_abbreviation(sentence: &str) -> bool {
    let last = sentence
        .rsplit(char::is_whitespace)
        .next()
        .unwrap_or(sentence)
        .trim_start_matches(['(', '[', '"', '\'', '“', '‘']);
    last.len() <= 8 && ABBREVIATIONS.contains(&last.to_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(text: &str) -> Vec<&str> {
        sentences(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn unicode_rules_alone_end_a_sentence_at_an_abbreviation_before_a_capital() {
        // Why the abbreviations are handled here: UAX #29 breaks "e.g. Rust" and "Dr. Smith".
        let text = "Use a language, e.g. Rust. Ask Dr. Smith.";
        let bare: Vec<&str> = text.split_sentence_bounds().collect();
        assert!(bare.len() > 2, "{bare:?}");
        assert_eq!(said(text), ["Use a language, e.g. Rust.", "Ask Dr. Smith."]);
    }

    #[test]
    fn abbreviations_numbers_and_ellipses_do_not_end_a_sentence() {
        for one in [
            "Pick a plan, e.g. the largest one, and pay.",
            "Pick a plan, e.g. Rust or Go, and pay.",
            "That is, i.e. Monthly billing, as said.",
            "Ask Dr. Smith or Mr. Jones about it.",
            "Upgrade to v1.2 before Friday.",
            "It costs 3.50 euros a month.",
            "Wait... then try again.",
            "Fruit, vegetables, etc. and more.",
            "Call foo.Bar() first.",
            "See Fig. 3 for the steps.",
        ] {
            assert_eq!(said(one), [one]);
        }
    }

    #[test]
    fn sentences_end_where_a_reader_ends_them() {
        assert_eq!(
            said("First one. Second one? Third!  \nA line. "),
            ["First one.", "Second one?", "Third!", "A line."]
        );
        // A line break ends a sentence even after an abbreviation (a table's rows).
        assert_eq!(
            said("Plan: Seedling; Note: e.g.\nPlan: Tree; Note: big"),
            ["Plan: Seedling; Note: e.g.", "Plan: Tree; Note: big"]
        );
        assert!(said(" \n\n ").is_empty());
    }

    #[test]
    fn words_are_runs_without_whitespace() {
        let text = " one  two\nthree ";
        let got: Vec<&str> = words(text).map(|r| &text[r]).collect();
        assert_eq!(got, ["one", "two", "three"]);
        assert!(words("  ").next().is_none());
    }
}
