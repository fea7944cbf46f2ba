//! Markdown (CommonMark with tables, as pulldown-cmark reads it) into an outline: headings make
//! the sections; paragraphs, items and quotes are blocks; a code block is one fenced block with
//! the language its info string names; a table is one block of `Header: cell` rows; links and
//! images keep their text; raw HTML, front matter and footnote markers are dropped.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use crate::outline::{Outline, OutlineBuilder, collapse};

/// A table being read: its header, its rows, the row and the cell being read.
#[derive(Default)]
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
}

/// The language a fenced code block's info string names: its first word (`rust` of
/// `rust,ignore` or `rust title="x"`), lowercase; empty for an indented block.
fn language(kind: &CodeBlockKind<'_>) -> String {
    match kind {
        CodeBlockKind::Indented => String::new(),
        CodeBlockKind::Fenced(info) => info
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | '{' | '}'))
            .find(|w| !w.is_empty())
            .unwrap_or_default()
            .to_lowercase(),
    }
}

/// The outline of a Markdown document.
pub(crate) fn outline(source: &str) -> Outline {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS
        | Options::ENABLE_FOOTNOTES;
    let mut b = OutlineBuilder::default();
    // Inside a heading, its text is gathered apart; inside metadata, nothing is kept.
    let mut heading: Option<(u8, String)> = None;
    let mut metadata = false;
    // Inside a code block: its language and its text; inside a table: what it holds so far.
    let mut code: Option<(String, String)> = None;
    let mut table: Option<Table> = None;
    for event in Parser::new_ext(source, options) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some((level as u8, String::new()))
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text)) = heading.take() {
                    b.heading(level, &text);
                }
            }
            Event::Start(Tag::MetadataBlock(_)) => metadata = true,
            Event::End(TagEnd::MetadataBlock(_)) => metadata = false,
            Event::Start(Tag::CodeBlock(kind)) => code = Some((language(&kind), String::new())),
            Event::End(TagEnd::CodeBlock) => {
                if let Some((language, text)) = code.take() {
                    b.code(&language, &text);
                }
            }
            Event::Start(Tag::Table(_)) => table = Some(Table::default()),
            Event::End(TagEnd::Table) => {
                if let Some(t) = table.take() {
                    b.table(&t.header, &t.rows);
                }
            }
            Event::End(TagEnd::TableCell) => {
                if let Some(t) = &mut table {
                    let cell = collapse(&std::mem::take(&mut t.cell));
                    t.row.push(cell);
                }
            }
            Event::End(TagEnd::TableHead) => {
                if let Some(t) = &mut table {
                    t.header = std::mem::take(&mut t.row);
                }
            }
            Event::End(TagEnd::TableRow) => {
                if let Some(t) = &mut table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            Event::Text(text)
            | Event::Code(text)
            | Event::InlineMath(text)
            | Event::DisplayMath(text)
                if !metadata =>
            {
                match (&mut heading, &mut code, &mut table) {
                    (Some((_, gathered)), _, _) => gathered.push_str(&text),
                    (None, Some((_, gathered)), _) => gathered.push_str(&text),
                    (None, None, Some(t)) => t.cell.push_str(&text),
                    (None, None, None) => b.text(&text),
                }
            }
            Event::SoftBreak | Event::HardBreak if table.is_some() => {
                if let Some(t) = &mut table {
                    t.cell.push(' ');
                }
            }
            Event::SoftBreak => match &mut heading {
                Some((_, gathered)) => gathered.push(' '),
                None => b.text(" "),
            },
            Event::HardBreak => b.line_break(),
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::BlockQuote(_)
                | TagEnd::FootnoteDefinition
                | TagEnd::DefinitionListTitle
                | TagEnd::DefinitionListDefinition,
            )
            | Event::Rule => b.end_block(),
            _ => {}
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_goes_and_the_heading_path_stays() {
        let outline = outline(
            "---\ntitle: ignored\n---\n# Help center\n\nWelcome to **the** [help](https://x).\n\n\
             ## Billing\n\n- Pay *monthly*\n- Or `yearly`\n\n<div>raw html</div>\n\n\
             ### Cancel your plan\n\nGo to Settings.\nThen Cancel.\n\n\
             ```sh title=\"run\"\nturnstile cancel   \n\n  --now\n```\n\n    indented()\n\n\
             | Plan | Price |\n|---|---|\n| Seedling | *free* |\n| | $9 |\n",
        );
        assert_eq!(outline.title.as_deref(), Some("Help center"));
        let texts: Vec<(Vec<&str>, &str)> = outline
            .sections
            .iter()
            .map(|s| (s.headings.iter().map(|h| &**h).collect(), s.text.as_str()))
            .collect();
        assert_eq!(texts[0].1, "Welcome to the help.");
        assert_eq!(texts[1].0, ["Help center", "Billing"]);
        assert_eq!(texts[1].1, "Pay monthly\n\nOr yearly");
        assert_eq!(texts[2].0, ["Help center", "Billing", "Cancel your plan"]);
        assert_eq!(
            texts[2].1,
            "Go to Settings. Then Cancel.\n\n```sh\nturnstile cancel\n\n  --now\n```\n\n\
             ```\nindented()\n```\n\nPlan: Seedling; Price: free\nPrice: $9"
        );
    }
}
