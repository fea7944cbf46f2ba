//! FTS5's `snippet()` of a document's `text` column, made from the document's text and tokens by
//! FTS5's own algorithm (`fts5SnippetFunction`, `fts5HighlightCb`).

use super::tokens::{Phrase, starts, token_spans};

/// The session's `snippet(docs, 3, '[', ']', '…', 24)`: marks around matches, the ellipsis, and
/// the most tokens shown.
pub(super) const SNIPPET_OPEN: &str = "[";
pub(super) const SNIPPET_CLOSE: &str = "]";
pub(super) const SNIPPET_ELLIPSIS: &str = "…";
pub(super) const SNIPPET_TOKENS: usize = 24;

/// A document's `text` column as the snippet needs it: the text, and its tokens' numbers in order.
pub(super) struct DocText<'a> {
    pub(super) text: &'a str,
    pub(super) tokens: &'a [u32],
}

impl DocText<'_> {
    /// Whether a text's snippet can be made here: without NUL, with as many tokens by
    /// [`token_spans`] as FTS5 has.
    pub(super) fn snippets_here(text: &str, tokens: &[u32]) -> bool {
        !text.contains('\0') && token_spans(text).len() == tokens.len()
    }

    /// `fts5SnippetFunction` for column `text`.
    pub(super) fn snippet(&self, phrases: &[Phrase]) -> String {
        let n_token = SNIPPET_TOKENS as i64;
        let spans = token_spans(self.text);
        let size = self.tokens.len() as i64;
        // xInst for this column: (phrase, offset, phrase size), by offset, then phrase.
        let mut instances: Vec<(usize, i64, i64)> = Vec::new();
        for (phrase, tokens) in phrases.iter().enumerate() {
            for at in tokens.iter().flat_map(|t| starts(self.tokens, t)) {
                let size = tokens.as_ref().map_or(1, |t| t.len()) as i64;
                instances.push((phrase, at as i64, size));
            }
        }
        instances.sort_unstable_by_key(|&(phrase, offset, _)| (offset, phrase));
        // fts5SentenceFinderCb: the first token of each sentence.
        let bytes = self.text.as_bytes();
        let mut first: Vec<i64> = Vec::new();
        for (pos, &(start, _)) in spans.iter().enumerate() {
            if pos == 0 {
                first.push(0);
                continue;
            }
            let mut i = start as i64 - 1;
            let mut c = 0u8;
            while i >= 0 {
                c = bytes[i as usize];
                if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                i -= 1;
            }
            if i != start as i64 - 1 && (c == b'.' || c == b':') {
                first.push(pos as i64);
            }
        }
        // fts5SnippetScore: 1000 for each phrase's first instance in the window, 1 for others.
        let score = |at: i64| -> (i64, i64) {
            let mut seen = vec![false; phrases.len()];
            let (mut total, mut first_at, mut last) = (0i64, -1i64, 0i64);
            for &(phrase, offset, phrase_size) in &instances {
                if offset >= at && offset < at + n_token {
                    total += if seen[phrase] { 1 } else { 1000 };
                    seen[phrase] = true;
                    if first_at < 0 {
                        first_at = offset;
                    }
                    last = offset + phrase_size;
                }
            }
            let mut adjusted = first_at - (n_token - (last - first_at)) / 2;
            if adjusted + n_token > size {
                adjusted = size - n_token;
            }
            (total, adjusted.max(0))
        };
        let (mut best_score, mut best_start) = (0i64, 0i64);
        for &(_, offset, _) in &instances {
            let (s, adjusted) = score(offset);
            if s > best_score {
                best_score = s;
                best_start = adjusted;
            }
            if !first.is_empty() && size > n_token {
                let mut jj = 0;
                while jj + 1 < first.len() && first[jj + 1] <= offset {
                    jj += 1;
                }
                if first[jj] < offset {
                    let s = score(first[jj]).0 + if first[jj] == 0 { 120 } else { 100 };
                    if s > best_score {
                        best_score = s;
                        best_start = first[jj];
                    }
                }
            }
        }
        self.highlight(
            &spans,
            &instances,
            best_start,
            best_start + n_token - 1,
            size,
        )
    }

    /// `fts5HighlightCb` over tokens `range_start..=range_end`, then the snippet's ends.
    fn highlight(
        &self,
        spans: &[(usize, usize)],
        instances: &[(usize, i64, i64)],
        range_start: i64,
        range_end: i64,
        size: i64,
    ) -> String {
        let text = self.text;
        let mut out = String::new();
        // fts5HighlightAppend of `n` bytes from `from` (a negative `n`: to the end).
        let append = |out: &mut String, from: i64, n: i64| {
            let from = from as usize;
            if n < 0 {
                out.push_str(&text[from..]);
            } else {
                out.push_str(&text[from..from + n as usize]);
            }
        };
        // fts5CInstIterNext: the next run of overlapping instances, (first token, last token).
        let mut next_instance = 0;
        let mut next_run = || -> (i64, i64) {
            let (mut start, mut end) = (-1i64, -1i64);
            while let Some(&(_, offset, phrase_size)) = instances.get(next_instance) {
                // FTS5: iEnd = io - 1 + xPhraseSize.
                let last = offset - 1 + phrase_size;
                if start < 0 {
                    (start, end) = (offset, last);
                } else if offset <= end {
                    end = end.max(last);
                } else {
                    break;
                }
                next_instance += 1;
            }
            (start, end)
        };
        let mut run = next_run();
        if range_start > 0 {
            out.push_str(SNIPPET_ELLIPSIS);
        }
        while run.0 >= 0 && run.0 < range_start {
            run = next_run();
        }
        let (mut copied, mut open) = (0i64, false);
        for (pos, &(start, end)) in spans.iter().enumerate() {
            let (pos, start, end) = (pos as i64, start as i64, end as i64);
            if pos < range_start || pos > range_end {
                continue;
            }
            if range_start != 0 && pos == range_start {
                copied = start;
            }
            if open && (pos <= run.0 || run.0 < 0) && start > copied {
                out.push_str(SNIPPET_CLOSE);
                open = false;
            }
            if pos == run.0 && !open {
                append(&mut out, copied, start - copied);
                out.push_str(SNIPPET_OPEN);
                copied = start;
                open = true;
            }
            if pos == run.1 {
                if !open {
                    out.push_str(SNIPPET_OPEN);
                    open = true;
                }
                append(&mut out, copied, end - copied);
                copied = end;
                run = next_run();
            }
            if pos == range_end {
                if open {
                    if run.0 >= 0 && pos >= run.0 {
                        append(&mut out, copied, end - copied);
                        copied = end;
                    }
                    out.push_str(SNIPPET_CLOSE);
                    open = false;
                }
                append(&mut out, copied, end - copied);
                copied = end;
            }
        }
        if open {
            out.push_str(SNIPPET_CLOSE);
        }
        if range_end >= size - 1 {
            append(&mut out, copied, text.len() as i64 - copied);
        } else {
            out.push_str(SNIPPET_ELLIPSIS);
        }
        out
    }
}
