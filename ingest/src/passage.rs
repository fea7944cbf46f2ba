//! Sections and rows into passages: text of at most a set number of characters, split at a
//! paragraph end, else a sentence end, else a space, with a set overlap; ids from the file and
//! the heading (`path#heading-slug`), titles from the document and the heading path.

use std::collections::HashMap;

/// Characters a passage holds at most, by default (the corpus allows 2,000).
pub const DEFAULT_MAX_CHARS: usize = 1000;
/// Characters of the end of one passage that the next repeats, by default.
pub const DEFAULT_OVERLAP: usize = 150;
/// Longest title, in bytes (the corpus's bound); a longer one is cut with `…`.
pub(crate) const MAX_TITLE_BYTES: usize = 1024;
/// Between the parts of a title.
pub(crate) const TITLE_SEPARATOR: &str = " › ";

/// How text is cut into passages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// At most this many characters in a passage.
    pub max_chars: usize,
    /// The next passage starts this many characters (at most, in whole words) before the end
    /// of the one before.
    pub overlap: usize,
}

/// `text` cut into passages of at most `cut.max_chars` characters. A passage ends at the last
/// paragraph end in the last third of its window, else the last sentence end there, else the
/// last space, else at the window's end (a word longer than the window is cut); the next one
/// starts at a word at most `cut.overlap` characters before that end.
pub(crate) fn split(text: &str, cut: Cut) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut passages = Vec::new();
    let mut start = skip_space(&chars, 0);
    while start < chars.len() {
        if chars.len() - start <= cut.max_chars {
            passages.push(trimmed(&chars[start..]));
            break;
        }
        let end = start + cut.max_chars;
        let earliest = start + cut.max_chars * 2 / 3;
        let window = earliest..=end;
        let at = |pred: &dyn Fn(usize) -> bool| window.clone().rev().find(|&i| pred(i));
        let stop = at(&|i| i >= 2 && chars[i - 1] == '\n' && chars[i - 2] == '\n')
            .or_else(|| {
                at(&|i| {
                    i >= 1
                        && i < chars.len()
                        && matches!(chars[i - 1], '.' | '?' | '!' | ':' | ';')
                        && chars[i].is_whitespace()
                })
            })
            .or_else(|| at(&|i| i < chars.len() && chars[i].is_whitespace()))
            .unwrap_or(end);
        passages.push(trimmed(&chars[start..stop]));
        // Back by the overlap, then forward to the start of a word.
        let mut next = stop.saturating_sub(cut.overlap).max(start + 1);
        if next < stop {
            while next < stop && !chars[next - 1].is_whitespace() {
                next += 1;
            }
        }
        start = skip_space(&chars, next);
    }
    passages.retain(|p| !p.is_empty());
    passages
}

fn skip_space(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    i
}

fn trimmed(chars: &[char]) -> String {
    chars.iter().collect::<String>().trim().to_owned()
}

/// A heading as an id's fragment, as GitHub writes them: lowercase letters and digits, `-` for
/// spaces and dashes, `_` kept, everything else dropped (`section` if nothing is left).
pub(crate) fn slug(heading: &str) -> String {
    let mut slug = String::with_capacity(heading.len());
    for c in heading.trim().chars() {
        if c.is_alphanumeric() || c == '_' {
            slug.extend(c.to_lowercase());
        } else if c == ' ' || c == '-' {
            slug.push('-');
        }
    }
    if slug.is_empty() {
        "section".to_owned()
    } else {
        slug
    }
}

/// The fragments of one file's sections: a slug seen before gets `-1`, `-2`… (as GitHub's
/// anchors), so every section of a file has its own id.
#[derive(Debug, Default)]
pub(crate) struct Fragments {
    seen: HashMap<String, usize>,
}

impl Fragments {
    /// The fragment for a section under `heading`.
    pub fn next(&mut self, heading: &str) -> String {
        let base = slug(heading);
        let mut n = *self.seen.get(&base).unwrap_or(&0);
        let mut fragment = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        // `a-1` may itself be a heading's slug: take the next number free.
        while n > 0 && self.seen.contains_key(&fragment) {
            n += 1;
            fragment = format!("{base}-{n}");
        }
        self.seen.insert(base, n + 1);
        self.seen.entry(fragment.clone()).or_insert(1);
        fragment
    }
}

/// Parts of a title joined by ` › `, repeated neighbours once, cut to the corpus's bound.
pub(crate) fn title(parts: &[&str]) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for part in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        if kept.last() != Some(&part) {
            kept.push(part);
        }
    }
    cut_bytes(&kept.join(TITLE_SEPARATOR), MAX_TITLE_BYTES)
}

/// `text` in at most `max` bytes: cut at a character boundary and marked `…` when cut.
pub(crate) fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUT: Cut = Cut {
        max_chars: 50,
        overlap: 15,
    };

    #[test]
    fn short_text_is_one_passage() {
        assert_eq!(split("  One sentence.  ", CUT), ["One sentence."]);
        assert!(split("   ", CUT).is_empty());
    }

    #[test]
    fn long_text_is_cut_at_the_best_place_with_overlap() {
        let text = "First paragraph has some words in it.\n\nSecond paragraph is here and it \
                    goes on. It has two sentences and more words than fit.";
        let parts = split(text, CUT);
        assert_eq!(parts[0], "First paragraph has some words in it.");
        for part in &parts {
            assert!(part.chars().count() <= CUT.max_chars, "{part:?}");
        }
        // Every word of the text is in some passage, in order, and passages overlap.
        let joined = parts.join(" ");
        for word in text.split_whitespace() {
            assert!(joined.contains(word), "{word}");
        }
        // The second starts with words the first ended with (at most 15 characters of them).
        assert_eq!(
            parts[1].split_whitespace().next(),
            Some("words"),
            "{parts:?}"
        );
        assert!(parts[1].starts_with("words in it.\n\nSecond"), "{parts:?}");
        assert!(parts.len() >= 3);
    }

    #[test]
    fn a_word_longer_than_a_passage_is_cut() {
        let word = "x".repeat(150);
        let parts = split(&word, CUT);
        assert!(parts.iter().all(|p| p.chars().count() <= CUT.max_chars));
        assert!(parts.len() >= 3);
    }

    #[test]
    fn slugs_and_repeats_are_as_github_writes_them() {
        assert_eq!(slug("Cancel your plan!"), "cancel-your-plan");
        assert_eq!(slug("Über  -  C++ & Rust_2"), "über-----c--rust_2");
        assert_eq!(slug("???"), "section");
        let mut f = Fragments::default();
        let got: Vec<String> = ["Setup", "Setup", "Setup 1", "Setup"]
            .iter()
            .map(|h| f.next(h))
            .collect();
        assert_eq!(got, ["setup", "setup-1", "setup-1-1", "setup-2"]);
    }

    #[test]
    fn titles_join_the_path_and_keep_the_bound() {
        assert_eq!(title(&["Help", "Help", "Billing", " "]), "Help › Billing");
        let long = "é".repeat(600);
        let t = title(&[&long]);
        assert!(t.len() <= MAX_TITLE_BYTES && t.ends_with('…'));
    }
}
