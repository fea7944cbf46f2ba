//! A section's (or a row's) text into passages that respect it, sized in the embedding model's
//! tokens and in characters. The text is blocks separated by a blank line: prose (a list item,
//! a table of one `Column: value` line per row) and fenced code (a "```LANG" line, its lines,
//! a "```" line; blank lines inside kept). Whole blocks are packed into passages; a block is cut
//! only when it alone is over the bounds: prose and tables at sentences (a row is a line, and a
//! line ends a sentence), then words, then characters; code between its lines (then words,
//! then characters), with its fence and language repeated on each part. The next passage of
//! the same text starts with the end of the one before, in whole sentences where they fit (else
//! whole words), up to the overlap; never with code.

use std::ops::Range;

use crate::blocks::{Block, FENCE, blocks, line_ranges};
use crate::sentences::{sentences, words};
use crate::sizer::{Size, Sizer};

/// Characters a passage holds at most, by default: the corpus's bound, so that by default
/// passages are sized by tokens and this bound only holds text of very short tokens.
pub const DEFAULT_MAX_CHARS: usize = 2000;
/// The embedding model's tokens a passage holds at most, by default: the length the shipped
/// static model's document targets were cut to when it was distilled (its teacher,
/// all-mpnet-base-v2, was trained on 128 and reads at most 384).
pub const DEFAULT_MAX_TOKENS: usize = 256;
/// Tokens of the end of one passage that the next repeats, by default (about one sentence).
pub const DEFAULT_OVERLAP: usize = 32;

/// How text is cut into passages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// At most this many characters in a passage.
    pub max_chars: usize,
    /// At most this many of the embedding model's tokens in a passage.
    pub max_tokens: usize,
    /// The next passage of the same text repeats at most this many tokens of the end of the one
    /// before (whole sentences, else whole words).
    pub overlap: usize,
}

/// `text` cut into passages, each within `cut`'s bounds (see the module's documentation).
pub(crate) fn split(text: &str, cut: Cut) -> Vec<String> {
    let whole = text.trim();
    if whole.is_empty() {
        return Vec::new();
    }
    let mut sizer = Sizer::new(Size {
        tokens: cut.max_tokens,
        chars: cut.max_chars,
    });
    if sizer.fits_whole(whole) {
        return vec![whole.to_owned()];
    }
    let mut packer = Packer {
        text,
        cut,
        sizer,
        current: Vec::new(),
        size: Size::default(),
        passages: Vec::new(),
    };
    for block in blocks(text) {
        packer.block(block);
    }
    packer.flush();
    packer.passages
}

/// How a piece over the bounds is cut: at lines (code), sentences (prose), then words.
#[derive(Debug, Clone, Copy)]
enum Level {
    Lines,
    Sentences,
    Words,
}

/// A piece of the text that goes into a passage whole: a block, or part of one.
#[derive(Debug, Clone)]
struct Unit {
    range: Range<usize>,
    /// A part of a code block: the fence that opens it (the block's own, or a bare one when
    /// that is long), and a bare fence closes it.
    fence: Option<String>,
    size: Size,
}

/// Passages as they are packed.
struct Packer<'t> {
    text: &'t str,
    cut: Cut,
    sizer: Sizer,
    current: Vec<Unit>,
    size: Size,
    passages: Vec<String>,
}

impl<'t> Packer<'t> {
    fn bound(&self) -> Size {
        self.sizer.bound
    }

    /// The separator between two units in a passage: a blank line between blocks, a line
    /// break or a space as the text has it inside one, nothing between parts of a word.
    fn gap(&self, before: &Unit, after: &Unit) -> &'static str {
        let between = &self.text[before.range.end..after.range.start];
        if !between.trim().is_empty() || between.contains("\n\n") {
            "\n\n"
        } else if between.contains('\n') {
            "\n"
        } else if between.is_empty() {
            ""
        } else {
            " "
        }
    }

    /// `unit` into the passage under way if it fits there; else that passage is done and the
    /// next starts with the end of it (the overlap) and `unit`.
    fn push(&mut self, unit: Unit) {
        if let Some(last) = self.current.last() {
            let gap = self.gap(last, &unit);
            let size = self.size.plus(unit.size).plus(Size {
                tokens: 0,
                chars: gap.len(),
            });
            // Two parts of one word are never joined (their tokens would not add up).
            if !gap.is_empty() && size.within(self.bound()) {
                self.current.push(unit);
                self.size = size;
                return;
            }
            let overlap = self.overlap(&unit);
            self.flush();
            if let Some(overlap) = overlap {
                self.size = overlap.size;
                self.current.push(overlap);
                let gap = self.gap(&self.current[0], &unit);
                self.size = self.size.plus(unit.size).plus(Size {
                    tokens: 0,
                    chars: gap.len(),
                });
            }
        }
        if self.current.is_empty() {
            self.size = unit.size;
        }
        self.current.push(unit);
    }

    /// The passage under way, written.
    fn flush(&mut self) {
        let mut passage = String::with_capacity(self.size.chars);
        let mut before: Option<&Unit> = None;
        for unit in &self.current {
            if let Some(before) = before {
                passage.push_str(self.gap(before, unit));
            }
            if let Some(fence) = &unit.fence {
                passage.push_str(fence);
                passage.push('\n');
            }
            passage.push_str(&self.text[unit.range.clone()]);
            if unit.fence.is_some() {
                passage.push('\n');
                passage.push_str(FENCE);
            }
            before = Some(unit);
        }
        self.current.clear();
        self.size = Size::default();
        if !passage.is_empty() {
            self.passages.push(passage);
        }
    }

    /// What the passage under way ends with that the next, starting with `next`, repeats: its
    /// last whole sentences (else its last whole words) within the overlap, never all of it,
    /// never code, and leaving room for `next`.
    fn overlap(&mut self, next: &Unit) -> Option<Unit> {
        let bound = self.bound();
        let room = Size {
            tokens: self
                .cut
                .overlap
                .min(bound.tokens.saturating_sub(next.size.tokens)),
            // A blank line between the overlap and `next`, at most.
            chars: (bound.chars / 2).min(bound.chars.saturating_sub(next.size.chars + 2)),
        };
        if room.tokens == 0 || room.chars == 0 {
            return None;
        }
        let text = self.text;
        let first = self.current.first()?.range.start;
        let end = self.current.last()?.range.end;
        if next.range.start == end {
            // `next` goes on the same word: no overlap ends inside a word.
            return None;
        }
        let mut start = end;
        let mut tokens = 0;
        let units: Vec<Range<usize>> = self
            .current
            .iter()
            .rev()
            .take_while(|u| u.fence.is_none() && !text[u.range.clone()].starts_with(FENCE))
            .map(|u| u.range.clone())
            .collect();
        'units: for unit in units {
            let at = unit.start;
            for sentence in sentences(&text[unit]).into_iter().rev() {
                let sentence = at + sentence.start..at + sentence.end;
                let taken =
                    sentence.start > first && self.take(sentence.clone(), end, room, &mut tokens);
                if !taken {
                    if start == end && sentence.end > first {
                        // Not one whole sentence fits: its last words.
                        let sentence_words: Vec<Range<usize>> = words(&text[sentence.clone()])
                            .map(|w| sentence.start + w.start..sentence.start + w.end)
                            .collect();
                        for word in sentence_words.into_iter().rev() {
                            if word.start <= first
                                || !self.take(word.clone(), end, room, &mut tokens)
                            {
                                break;
                            }
                            start = word.start;
                        }
                    }
                    break 'units;
                }
                start = sentence.start;
            }
        }
        (start < end).then(|| Unit {
            range: start..end,
            fence: None,
            size: Size {
                tokens,
                chars: text[start..end].chars().count(),
            },
        })
    }

    /// Whether `piece`, with what follows it up to `end`, is within `room` (adding its tokens
    /// to `tokens` when it is).
    fn take(&mut self, piece: Range<usize>, end: usize, room: Size, tokens: &mut usize) -> bool {
        let text = self.text;
        // Whole words only: never a piece that starts inside one.
        let word_start = text[..piece.start].ends_with(char::is_whitespace);
        if !word_start || text[piece.start..end].chars().count() > room.chars {
            return false;
        }
        match self.sizer.size_within(&text[piece], room) {
            Some(size) if *tokens + size.tokens <= room.tokens => {
                *tokens += size.tokens;
                true
            }
            _ => false,
        }
    }

    /// One block: whole when it fits, else cut.
    fn block(&mut self, block: Block) {
        let text = self.text;
        if let Some(size) = self
            .sizer
            .size_within(&text[block.range.clone()], self.bound())
        {
            return self.push(Unit {
                range: block.range,
                fence: None,
                size,
            });
        }
        match block.code {
            None => {
                let bound = self.bound();
                self.pieces(
                    block.range,
                    &[Level::Sentences, Level::Words],
                    bound,
                    &mut |p, u| p.push(u),
                );
            }
            Some((fence, body)) => self.code(fence, body),
        }
    }

    /// A code block over the bounds: its lines packed into parts, each within the bounds with
    /// its fences.
    fn code(&mut self, fence: Range<usize>, body: Range<usize>) {
        let bound = self.bound();
        let text = self.text;
        let fenced = |opening: &str, sizer: &Sizer| {
            let opening = opening.trim();
            let size = Size {
                tokens: sizer.unmemoized(opening) + sizer.unmemoized(FENCE),
                // "OPENING\n" and "\n```".
                chars: opening.chars().count() + 2 + FENCE.len(),
            };
            (opening.to_owned(), size)
        };
        let (mut opening, mut extra) = fenced(&text[fence], &self.sizer);
        // A language too long to repeat: a bare fence.
        if extra.tokens * 2 > bound.tokens || extra.chars * 2 > bound.chars {
            (opening, extra) = fenced(FENCE, &self.sizer);
        }
        let room = Size {
            tokens: bound.tokens - extra.tokens,
            chars: bound.chars - extra.chars,
        };
        let mut part: Option<Unit> = None;
        self.pieces(
            body,
            &[Level::Lines, Level::Words],
            room,
            &mut |p, piece| {
                if let Some(open) = part.as_mut() {
                    let gap = p.text[open.range.end..piece.range.start].chars().count();
                    let size = open.size.plus(piece.size);
                    let glued = open.range.end == piece.range.start;
                    if !glued
                        && (Size {
                            chars: size.chars + gap,
                            ..size
                        })
                        .within(room)
                    {
                        open.range.end = piece.range.end;
                        open.size = Size {
                            chars: size.chars + gap,
                            ..size
                        };
                        return;
                    }
                }
                if let Some(done) = part.replace(piece) {
                    p.push_part(done, &opening, extra);
                }
            },
        );
        if let Some(done) = part {
            self.push_part(done, &opening, extra);
        }
    }

    fn push_part(&mut self, part: Unit, opening: &str, extra: Size) {
        self.push(Unit {
            range: part.range,
            fence: Some(opening.to_owned()),
            size: part.size.plus(extra),
        });
    }

    /// `range` handed to `emit` in pieces within `bound`: whole if it fits, else cut at the
    /// first of `levels`, each part again at the next ones, and what is over the bounds at the
    /// last level cut between characters.
    fn pieces(
        &mut self,
        range: Range<usize>,
        levels: &[Level],
        bound: Size,
        emit: &mut dyn FnMut(&mut Self, Unit),
    ) {
        let text = self.text;
        let piece = &text[range.clone()];
        if let Some(size) = self.sizer.size_within(piece, bound) {
            return emit(
                self,
                Unit {
                    range,
                    fence: None,
                    size,
                },
            );
        }
        let at = range.start;
        let Some((level, finer)) = levels.split_first() else {
            return self.characters(range, bound, emit);
        };
        match level {
            Level::Lines => {
                let lines: Vec<Range<usize>> = line_ranges(piece)
                    .filter(|r| !piece[r.clone()].trim().is_empty())
                    .map(|r| at + r.start..at + r.start + piece[r].trim_end().len())
                    .collect();
                for line in lines {
                    self.pieces(line, finer, bound, emit);
                }
            }
            Level::Sentences => {
                for sentence in sentences(piece) {
                    self.pieces(at + sentence.start..at + sentence.end, finer, bound, emit);
                }
            }
            Level::Words => {
                for word in words(piece) {
                    self.pieces(at + word.start..at + word.end, finer, bound, emit);
                }
            }
        }
    }

    /// A piece without a boundary left (a word, or a line of code without spaces) cut between
    /// characters: each part the longest that fits.
    fn characters(
        &mut self,
        range: Range<usize>,
        bound: Size,
        emit: &mut dyn FnMut(&mut Self, Unit),
    ) {
        let text = self.text;
        let mut start = range.start;
        while start < range.end {
            let rest = &text[start..range.end];
            let ends: Vec<usize> = rest
                .char_indices()
                .skip(1)
                .map(|(i, _)| i)
                .chain([rest.len()])
                .take(bound.chars)
                .collect();
            // The longest prefix that fits (one character always does: the bounds are far
            // over one character's tokens).
            let (mut lo, mut hi) = (0, ends.len());
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if self.sizer.size_within(&rest[..ends[mid]], bound).is_some() {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let end = start + ends[lo];
            let size = self
                .sizer
                .size_within(&text[start..end], bound)
                .unwrap_or(Size {
                    tokens: bound.tokens,
                    chars: bound.chars,
                });
            emit(
                self,
                Unit {
                    range: start..end,
                    fence: None,
                    size,
                },
            );
            start = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnstile_embed::Embedder;

    const CUT: Cut = Cut {
        max_chars: 2000,
        max_tokens: 40,
        overlap: 12,
    };

    fn tokens(text: &str) -> usize {
        Embedder::shipped().unwrap().tokens(text).len()
    }

    /// Every passage within the bounds, measured whole; every word of `text` in some passage,
    /// in order (each passage goes on from where the last word found was).
    fn check(text: &str, cut: Cut) -> Vec<String> {
        let parts = split(text, cut);
        for part in &parts {
            assert!(
                tokens(part) <= cut.max_tokens,
                "{} tokens: {part:?}",
                tokens(part)
            );
            assert!(part.chars().count() <= cut.max_chars.min(2000), "{part:?}");
            assert_eq!(part.trim(), part, "{part:?}");
        }
        let mut at = 0;
        let mut found: Vec<(usize, usize)> = Vec::new();
        for word in text.split_whitespace().filter(|w| !w.starts_with(FENCE)) {
            let hit = (at..parts.len()).find_map(|i| {
                let from = if found.last().is_some_and(|&(p, _)| p == i) {
                    found.last().unwrap().1
                } else {
                    0
                };
                parts[i][from..]
                    .find(word)
                    .map(|o| (i, from + o + word.len()))
            });
            let Some(hit) = hit else {
                panic!("{word:?} is in no passage after passage {at}: {parts:#?}");
            };
            at = hit.0;
            found.push(hit);
        }
        parts
    }

    #[test]
    fn short_text_is_one_passage() {
        assert_eq!(split("  One sentence.  ", CUT), ["One sentence."]);
        assert!(split(" \n\n ", CUT).is_empty());
    }

    #[test]
    fn abbreviations_do_not_end_a_passage() {
        // Bounds that hold one sentence: a cut falls between sentences only.
        let cut = Cut {
            max_tokens: 32,
            overlap: 0,
            ..CUT
        };
        let text = "Pick a language you know well, e.g. the one your team writes. \
                    Pick a language you know well, e.g. Rust or Go or Python. \
                    Ask Dr. Smith which of them to use in version v1.2 of it.";
        let parts = check(text, cut);
        assert_eq!(
            parts,
            [
                "Pick a language you know well, e.g. the one your team writes.",
                "Pick a language you know well, e.g. Rust or Go or Python.",
                "Ask Dr. Smith which of them to use in version v1.2 of it."
            ]
        );
    }

    #[test]
    fn blocks_are_packed_whole() {
        let text = "First block has a few words.\n\nSecond block too.\n\n\
                    Third block is a longer one with more words in it than the others.";
        let parts = check(
            text,
            Cut {
                max_tokens: 20,
                ..CUT
            },
        );
        assert_eq!(parts.len(), 2, "{parts:#?}");
        assert_eq!(
            parts[0],
            "First block has a few words.\n\nSecond block too."
        );
        assert!(
            parts[1]
                .ends_with("Third block is a longer one with more words in it than the others.")
        );
    }

    #[test]
    fn a_code_block_under_the_bound_stays_whole() {
        let code = "```python\ndef cancel(plan):\n\n    plan.stop()\n```";
        let text = format!("Run this to cancel a plan of any kind.\n\n{code}\n\nThen wait.");
        let cut = Cut {
            max_tokens: 24,
            ..CUT
        };
        assert!(tokens(code) <= cut.max_tokens);
        let parts = check(&text, cut);
        assert!(parts.iter().any(|p| p.contains(code)), "{parts:#?}");
    }

    #[test]
    fn a_code_block_over_the_bound_is_cut_between_lines_with_its_fence() {
        let lines: Vec<String> = (0..30)
            .map(|i| format!("    total = total + price_{i}"))
            .collect();
        let body = lines.join("\n");
        let text = format!(
            "Add them up.\n\n```python\n{}\n\n{body}\n```\n\nDone.",
            "def sum():"
        );
        let parts = check(&text, CUT);
        let code: Vec<&String> = parts.iter().filter(|p| p.contains("price_")).collect();
        assert!(code.len() >= 3, "{parts:#?}");
        for part in &code {
            let inner = part
                .split_once("```python\n")
                .and_then(|(_, rest)| {
                    rest.strip_suffix("\n```")
                        .or_else(|| rest.split_once("\n```\n\n").map(|(c, _)| c))
                })
                .unwrap_or_else(|| panic!("a part without its fence: {part:?}"));
            // Whole lines only, indentation kept.
            for line in inner.lines().filter(|l| !l.is_empty()) {
                assert!(
                    line == "def sum():" || lines.iter().any(|l| l == line),
                    "{line:?}"
                );
            }
        }
        // Every line of code in exactly one part, in order.
        let mut at = 0;
        for line in &lines {
            let i = (at..parts.len())
                .find(|&i| parts[i].lines().any(|l| l == line))
                .unwrap_or_else(|| panic!("{line:?} lost"));
            at = i;
        }
    }

    #[test]
    fn a_table_over_the_bound_is_cut_between_rows() {
        let rows: Vec<String> = (0..20)
            .map(|i| format!("Plan: Tier {i}; Price: {i} euros; Plants: {}", i * 5))
            .collect();
        let text = rows.join("\n");
        let parts = check(&text, Cut { overlap: 0, ..CUT });
        assert!(parts.len() > 2);
        for part in &parts {
            for line in part.lines() {
                assert!(rows.iter().any(|r| r == line), "a row cut: {line:?}");
            }
        }
    }

    #[test]
    fn the_overlap_is_whole_sentences_then_whole_words() {
        let text = "Alpha one two three. Beta four five six. Gamma seven eight nine. \
                    Delta ten eleven twelve. Epsilon thirteen fourteen fifteen. \
                    Zeta sixteen seventeen eighteen. Eta nineteen twenty twentyone.";
        let parts = check(
            text,
            Cut {
                max_tokens: 32,
                overlap: 12,
                ..CUT
            },
        );
        assert!(parts.len() >= 2, "{parts:#?}");
        let sentences: Vec<&str> = sentences(text).into_iter().map(|r| &text[r]).collect();
        for pair in parts.windows(2) {
            // The next passage starts with a whole sentence of the one before.
            let first = sentences.iter().find(|s| pair[1].starts_with(**s));
            let first = first.unwrap_or_else(|| panic!("{pair:#?}"));
            assert!(pair[0].contains(first), "{pair:#?}");
        }
        // A sentence longer than the overlap: the next passage starts with its last words.
        let long = "word ".repeat(60);
        let parts = check(
            &long,
            Cut {
                max_tokens: 32,
                overlap: 5,
                ..CUT
            },
        );
        assert!(parts.len() >= 3);
        for pair in parts.windows(2) {
            assert!(pair[1].starts_with("word word word"), "{pair:?}");
            assert!(tokens(&pair[1]) > 5);
        }
    }

    #[test]
    fn no_passage_is_over_either_bound() {
        let word = "x".repeat(3000);
        for text in [
            word.clone(),
            format!("Some words first. {word} and after."),
            "짧은 한국어 문장입니다. ".repeat(200),
            format!("```{}\ncode line\n```", "l".repeat(500)),
            "a, ".repeat(2000),
        ] {
            for cut in [
                CUT,
                Cut {
                    max_chars: 100,
                    max_tokens: 1024,
                    overlap: 0,
                },
                Cut {
                    max_chars: 2000,
                    max_tokens: 32,
                    overlap: 16,
                },
            ] {
                let parts = split(&text, cut);
                assert!(!parts.is_empty());
                for part in &parts {
                    assert!(tokens(part) <= cut.max_tokens, "{part:?}");
                    assert!(part.chars().count() <= cut.max_chars, "{part:?}");
                }
            }
        }
    }

    #[test]
    fn ids_go_on_as_before() {
        let text = format!(
            "# Guide\n\n## Setup\n\n{}\n\n## Use\n\nShort.\n",
            "A sentence of words. ".repeat(60)
        );
        let mut ids = Vec::new();
        let columns = crate::table::Columns {
            id: "id".into(),
            title: "title".into(),
            text: "text".into(),
        };
        crate::emit::passages_from(
            &text,
            crate::files::Format::Markdown,
            "docs/guide.md",
            Cut {
                max_tokens: 64,
                overlap: 8,
                ..CUT
            },
            &columns,
            None,
            &mut |p| ids.push(p.id),
        )
        .unwrap();
        let n = ids.len() - 1;
        let mut want = vec!["docs/guide.md#setup".to_owned()];
        want.extend((2..=n).map(|i| format!("docs/guide.md#setup/{i}")));
        want.push("docs/guide.md#use".to_owned());
        assert!(n >= 3);
        assert_eq!(ids, want);
    }
}
