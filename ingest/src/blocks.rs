//! A section's text as its blocks, as the readers write it (`crate::outline`): blocks
//! separated by a blank line; a fenced code block ("```LANG", its lines, "```") is one block
//! whatever blank lines it holds.

use std::ops::Range;

/// The fence that opens (with a language after it) and closes a code block.
pub(crate) const FENCE: &str = "```";

/// A block of the text: prose (or a table), or a fenced code block.
pub(crate) struct Block {
    pub range: Range<usize>,
    /// A code block's opening fence line ("```LANG") and its lines between the fences.
    pub code: Option<(Range<usize>, Range<usize>)>,
}

/// The blocks of `text`: runs of lines between blank lines, a fenced code block to its closing
/// fence (blank lines inside it do not end it) or the text's end.
pub(crate) fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = line_ranges(text).peekable();
    while let Some(first) = lines.next() {
        let line = &text[first.clone()];
        if line.trim().is_empty() {
            continue;
        }
        if line.trim_start().starts_with(FENCE) {
            let body_start = (first.end + 1).min(text.len());
            let mut body_end = body_start;
            let mut end = text.len();
            for next in lines.by_ref() {
                if text[next.clone()].trim() == FENCE {
                    end = next.end;
                    break;
                }
                body_end = next.end;
            }
            out.push(Block {
                range: first.start..end,
                code: Some((first, body_start..body_end.max(body_start))),
            });
            continue;
        }
        let mut end = first.end;
        while let Some(next) = lines.next_if(|r| !text[r.clone()].trim().is_empty()) {
            end = next.end;
        }
        out.push(Block {
            range: first.start..end,
            code: None,
        });
    }
    out
}

/// The byte ranges of `text`'s lines, without their `\n`.
pub(crate) fn line_ranges(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    text.split('\n').map(move |line| {
        let range = start..start + line.len();
        start = range.end + 1;
        range
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_end_blocks_except_inside_a_fence() {
        let text = "One\nline two\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n\nLast";
        let got: Vec<(&str, Option<(&str, &str)>)> = blocks(text)
            .into_iter()
            .map(|b| {
                (
                    &text[b.range],
                    b.code.map(|(f, body)| (&text[f], &text[body])),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("One\nline two", None),
                (
                    "```rust\nfn a() {}\n\nfn b() {}\n```",
                    Some(("```rust", "fn a() {}\n\nfn b() {}"))
                ),
                ("Last", None),
            ]
        );
        // A fence never closed runs to the end.
        let open = "```\ncode\n\nmore";
        let all = blocks(open);
        assert_eq!(all.len(), 1);
        assert_eq!(&open[all[0].range.clone()], open);
    }
}
