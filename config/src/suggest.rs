//! The nearest known name to a misspelled one, as clap suggests a flag ("a similar argument
//! exists"): for file keys and `TURNSTILE_*` variables, which clap never sees. The invariant: a
//! suggestion is a real name, close enough to be a slip — at most a third of the name's
//! characters edited (at least two allowed), a swap of neighbours counting as one edit.

/// The candidate nearest to `name`, if one is close enough; the first of equals.
pub(crate) fn nearest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let allowed = (name.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|candidate| (distance(name, candidate), candidate))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, candidate)| candidate)
}

/// Edits from `a` to `b`: insertions, deletions, substitutions and swaps of neighbours (the
/// optimal string alignment distance), case-insensitive.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    // rows[i][j]: edits from a[..i] to b[..j]; three rows are enough for a swap.
    let mut before: Vec<usize> = Vec::new();
    let mut last: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (last[j] + 1).min(row[j - 1] + 1).min(last[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut last, row);
    }
    last[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_every_kind_of_slip() {
        assert_eq!(distance("max-waiting", "max-waiting"), 0);
        assert_eq!(distance("max-waitng", "max-waiting"), 1, "a deletion");
        assert_eq!(distance("max-wiating", "max-waiting"), 1, "a swap");
        assert_eq!(distance("max-waxting", "max-waiting"), 1, "a substitution");
        assert_eq!(distance("MAX_WAITING", "max_waiting"), 0, "any case");
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", ""), 3);
    }

    #[test]
    fn the_nearest_close_name_is_suggested_and_a_far_one_never() {
        let flags = ["max-active", "max-waiting", "wait-ms", "listen"];
        assert_eq!(nearest("max-waitng", flags), Some("max-waiting"));
        assert_eq!(nearest("max-actve", flags), Some("max-active"));
        assert_eq!(nearest("wait-m", flags), Some("wait-ms"));
        assert_eq!(nearest("listen-on", flags), Some("listen"));
        assert_eq!(nearest("corpus", flags), None);
        assert_eq!(nearest("x", flags), None);
    }
}
