//! Sections and rows into passages (cut by [`crate::pack`]): ids from the file and the heading
//! (`path#heading-slug`), titles from the document and the heading path.

use std::collections::HashMap;

/// Longest title, in bytes (the corpus's bound); a longer one is cut with `…`.
pub(crate) const MAX_TITLE_BYTES: usize = 1024;
/// Between the parts of a title.
pub(crate) const TITLE_SEPARATOR: &str = " › ";

pub(crate) use crate::pack::{Cut, split};

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
