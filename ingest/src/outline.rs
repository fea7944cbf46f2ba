//! A document as sections under their heading path, with its text gathered without markup:
//! what the Markdown, HTML and text readers produce and what passages are cut from.

use std::rc::Rc;

/// One section: the headings above it (outermost first) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    /// The heading path, outermost first; empty for text before the first heading. Shared
    /// with the other sections under the same headings (a long heading over a million small
    /// sections is held once).
    pub headings: Vec<Rc<str>>,
    /// The id the document itself gives the innermost heading (HTML's `id` attribute, a
    /// Markdown `{#id}`), for links back to the section; `None` when it gives none.
    pub anchor: Option<Rc<str>>,
    /// Its text: blocks separated by a blank line; a prose block is words joined by single
    /// spaces (`\n` for a line break); a code block is fenced ("```LANG", its lines verbatim,
    /// blank ones kept, "```"); a table is one line a row, `Header: cell; Header: cell`.
    pub text: String,
}

/// A document: its title, if it names one, and its sections in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outline {
    /// The `<title>`, or the first level-1 heading.
    pub title: Option<String>,
    /// Sections with text, in document order.
    pub sections: Vec<Section>,
}

/// Builds an [`Outline`] as a reader walks a document: text, block ends and headings.
#[derive(Debug, Default)]
pub(crate) struct OutlineBuilder {
    outline: Outline,
    path: Vec<(u8, Rc<str>)>,
    /// The anchor of the innermost heading on the path, if the document gave it one.
    anchor: Option<Rc<str>>,
    text: TextBuf,
}

impl OutlineBuilder {
    /// Text in running prose: whitespace collapses.
    pub fn text(&mut self, text: &str) {
        self.text.push(text);
    }

    /// A code block in the language `language` names (empty when the document names none):
    /// one block, fenced (a line "```LANG", its lines with trailing spaces trimmed and blank
    /// lines kept, a line "```"); the blank lines before and after it are left out, and a
    /// block with no text is nothing.
    pub fn code(&mut self, language: &str, code: &str) {
        let lines: Vec<&str> = code.lines().map(str::trim_end).collect();
        let Some(first) = lines.iter().position(|l| !l.is_empty()) else {
            return;
        };
        let last = lines.iter().rposition(|l| !l.is_empty()).unwrap_or(first);
        let mut block = format!("```{language}\n");
        for line in &lines[first..=last] {
            block.push_str(line);
            block.push('\n');
        }
        block.push_str("```");
        self.text.push_block(&block);
    }

    /// A table, as one block of one line a row (see [`crate::table_text`]).
    pub fn table(&mut self, header: &[String], rows: &[Vec<String>]) {
        let block = crate::table_text::rows(header, rows);
        if !block.is_empty() {
            self.text.push_block(&block);
        }
    }

    /// A block (paragraph, item, cell row) ends: the next text starts a new block.
    pub fn end_block(&mut self) {
        self.text.end_block();
    }

    /// A line break inside a block.
    pub fn line_break(&mut self) {
        self.text.line_break();
    }

    /// A heading of `level` (1 outermost): the section before it ends, and the headings at its
    /// level or deeper leave the path.
    pub fn heading(&mut self, level: u8, text: &str) {
        self.flush();
        let text = collapse(text);
        if text.is_empty() {
            return;
        }
        if level == 1 && self.outline.title.is_none() {
            self.outline.title = Some(text.clone());
        }
        while self.path.last().is_some_and(|(l, _)| *l >= level) {
            self.path.pop();
        }
        self.path.push((level, text.into()));
        self.anchor = None;
    }

    /// The document's own id for the heading just read (see [`Section::anchor`]).
    pub fn anchor(&mut self, id: &str) {
        let id = id.trim();
        if !id.is_empty() {
            self.anchor = Some(id.into());
        }
    }

    /// Sets the document's title (HTML's `<title>`), which wins over a level-1 heading.
    pub fn title(&mut self, title: &str) {
        let title = collapse(title);
        if !title.is_empty() {
            self.outline.title = Some(title);
        }
    }

    /// The outline, with the last section.
    pub fn finish(mut self) -> Outline {
        self.flush();
        self.outline
    }

    fn flush(&mut self) {
        let text = self.text.take();
        if !text.is_empty() {
            self.outline.sections.push(Section {
                headings: self.path.iter().map(|(_, h)| Rc::clone(h)).collect(),
                anchor: self.anchor.clone(),
                text,
            });
        }
    }
}

/// Whitespace runs as one space, trimmed.
pub(crate) fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text being gathered: words joined by single spaces, blocks by a blank line, lines by `\n`.
#[derive(Debug, Default)]
struct TextBuf {
    out: String,
    space: bool,
    newline: bool,
    block: bool,
}

impl TextBuf {
    fn push(&mut self, text: &str) {
        if text.starts_with(char::is_whitespace) {
            self.space = true;
        }
        for (i, word) in text.split_whitespace().enumerate() {
            if i > 0 {
                self.space = true;
            }
            self.separate();
            self.out.push_str(word);
        }
        if text.ends_with(char::is_whitespace) {
            self.space = true;
        }
    }

    /// A block of its own, verbatim (a code block's lines, a table's rows).
    fn push_block(&mut self, block: &str) {
        self.block = true;
        self.separate();
        self.out.push_str(block);
        self.block = true;
    }

    fn separate(&mut self) {
        if !self.out.is_empty() {
            if self.block {
                self.out.push_str("\n\n");
            } else if self.newline {
                self.out.push('\n');
            } else if self.space {
                self.out.push(' ');
            }
        }
        self.space = false;
        self.newline = false;
        self.block = false;
    }

    fn end_block(&mut self) {
        self.block = true;
    }

    fn line_break(&mut self) {
        self.newline = true;
    }

    fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.out);
        *self = Self::default();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_follow_the_heading_path() {
        let mut b = OutlineBuilder::default();
        b.text("Intro  text.");
        b.heading(1, "Guide");
        b.heading(2, " Billing ");
        b.text("Pay\n monthly.");
        b.end_block();
        b.text("Or yearly.");
        b.heading(3, "Refunds");
        b.text("Ask.");
        b.heading(2, "Empty");
        b.heading(2, "Support");
        b.code("sh", "\n  code line  \n\n  second\n\n");
        b.text("After.");
        let outline = b.finish();
        assert_eq!(outline.title.as_deref(), Some("Guide"));
        let got: Vec<(Vec<&str>, &str)> = outline
            .sections
            .iter()
            .map(|s| (s.headings.iter().map(|h| &**h).collect(), s.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (vec![], "Intro text."),
                (vec!["Guide", "Billing"], "Pay monthly.\n\nOr yearly."),
                (vec!["Guide", "Billing", "Refunds"], "Ask."),
                (
                    vec!["Guide", "Support"],
                    "```sh\n  code line\n\n  second\n```\n\nAfter."
                ),
            ]
        );
    }
}
