//! Markdown (CommonMark with tables, as pulldown-cmark reads it) into an outline: headings make
//! the sections; paragraphs, items and quotes are blocks; a code block is one fenced block with
//! the language its info string names; a table is one block of `Header: cell` rows; links and
//! images keep their text; raw HTML keeps its text (its tags go, and scripts and styles whole:
//! a block is read as HTML is, [`crate::html::raw_block`]); a heading's `{#id}` is its anchor;
//! front matter is handed back whole ([`crate::front_matter`] reads it); footnote markers are
//! dropped.

use pulldown_cmark::{CodeBlockKind, Event, MetadataBlockKind, Options, Parser, Tag, TagEnd};

use crate::front_matter::Style;
use crate::outline::{Outline, OutlineBuilder, collapse};

/// A Markdown document read: its outline and its front matter's text, if it has some.
pub(crate) struct Document {
    pub outline: Outline,
    pub front_matter: Option<(Style, String)>,
}

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

/// The outline of a Markdown document (its front matter left out).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn outline(source: &str) -> Outline {
    read(source).outline
}

/// Elements of inline HTML whose content is never text.
const INLINE_DROPPED: [&str; 2] = ["script", "style"];

/// The name of the element an inline HTML tag opens (`kbd` of `<kbd class="x">`) or closes
/// (`/kbd`), lowercase; empty for a comment or anything else.
fn tag_name(tag: &str) -> String {
    let inner = tag.trim().trim_start_matches('<');
    let (close, inner) = match inner.strip_prefix('/') {
        Some(rest) => ("/", rest),
        None => ("", inner),
    };
    let name: String = inner
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    if name.is_empty() {
        return name;
    }
    format!("{close}{}", name.to_ascii_lowercase())
}

/// A Markdown document's outline and front matter.
pub(crate) fn read(source: &str) -> Document {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_HEADING_ATTRIBUTES;
    let mut b = OutlineBuilder::default();
    // Inside a heading, its text is gathered apart (and its `{#id}` kept); inside metadata,
    // the front matter's text.
    let mut heading: Option<(u8, String, Option<String>)> = None;
    let mut metadata: Option<(Style, String)> = None;
    let mut front_matter = None;
    // Inside a block of raw HTML: its text so far; inside an inline `<script>` or `<style>`:
    // the tag that ends it.
    let mut html: Option<String> = None;
    let mut dropped: Option<String> = None;
    // Inside a code block: its language and its text; inside a table: what it holds so far.
    let mut code: Option<(String, String)> = None;
    let mut table: Option<Table> = None;
    for event in Parser::new_ext(source, options) {
        match event {
            Event::Start(Tag::Heading { level, id, .. }) => {
                heading = Some((level as u8, String::new(), id.map(|id| id.to_string())))
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text, id)) = heading.take() {
                    b.heading(level, &text);
                    if let Some(id) = id {
                        b.anchor(&id);
                    }
                }
            }
            Event::Start(Tag::MetadataBlock(kind)) => {
                let style = match kind {
                    MetadataBlockKind::YamlStyle => Style::Yaml,
                    MetadataBlockKind::PlusesStyle => Style::Toml,
                };
                metadata = Some((style, String::new()));
            }
            Event::End(TagEnd::MetadataBlock(_)) => front_matter = metadata.take(),
            Event::Text(text) if metadata.is_some() => {
                if let Some((_, gathered)) = &mut metadata {
                    gathered.push_str(&text);
                }
            }
            Event::Start(Tag::HtmlBlock) => html = Some(String::new()),
            Event::Html(text) => {
                if let Some(gathered) = &mut html {
                    gathered.push_str(&text);
                }
            }
            Event::End(TagEnd::HtmlBlock) => {
                if let Some(gathered) = html.take() {
                    crate::html::raw_block(&gathered, &mut b);
                }
            }
            Event::InlineHtml(tag) => {
                let name = tag_name(&tag);
                match &dropped {
                    Some(end) if *end == name => dropped = None,
                    Some(_) => {}
                    None if INLINE_DROPPED.contains(&name.as_str()) => {
                        dropped = Some(format!("/{name}"))
                    }
                    None if name == "br" && heading.is_none() && table.is_none() => b.line_break(),
                    None => {}
                }
            }
            Event::Text(_) | Event::Code(_) if dropped.is_some() => {}
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
            | Event::DisplayMath(text) => match (&mut heading, &mut code, &mut table) {
                (Some((_, gathered, _)), _, _) => gathered.push_str(&text),
                (None, Some((_, gathered)), _) => gathered.push_str(&text),
                (None, None, Some(t)) => t.cell.push_str(&text),
                (None, None, None) => b.text(&text),
            },
            Event::SoftBreak | Event::HardBreak if table.is_some() => {
                if let Some(t) = &mut table {
                    t.cell.push(' ');
                }
            }
            Event::SoftBreak => match &mut heading {
                Some((_, gathered, _)) => gathered.push(' '),
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
            | Event::Rule => {
                // An inline `<script>` left open ends with its paragraph.
                dropped = None;
                b.end_block()
            }
            _ => {}
        }
    }
    Document {
        outline: b.finish(),
        front_matter,
    }
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
        assert_eq!(texts[1].1, "Pay monthly\n\nOr yearly\n\nraw html");
        assert_eq!(texts[2].0, ["Help center", "Billing", "Cancel your plan"]);
        assert_eq!(
            texts[2].1,
            "Go to Settings. Then Cancel.\n\n```sh\nturnstile cancel\n\n  --now\n```\n\n\
             ```\nindented()\n```\n\nPlan: Seedling; Price: free\nPrice: $9"
        );
    }

    #[test]
    fn raw_html_keeps_its_text_and_scripts_go_whole() {
        let read = read(
            "# Keys\n\nPress <kbd>Ctrl</kbd>+<kbd>C</kbd>, not <script>alert(1)</script> this.\n\n\
             <div class=\"note\">A <b>raw</b> note &amp; more</div>\n\n\
             <details><summary>Advanced</summary>\n\nHidden text.\n\n</details>\n\n\
             <script>\nvar gone = 1;\n</script>\n\n<style>p { color: red }</style>\n\n\
             <!-- a comment -->\nLine<br>break\n",
        );
        let section = &read.outline.sections[0];
        assert_eq!(
            section.text,
            "Press Ctrl+C, not this.\n\nA raw note & more\n\nAdvanced\n\nHidden text.\n\n\
             Line\nbreak"
        );
        assert_eq!(read.front_matter, None);
    }

    #[test]
    fn a_headings_id_is_its_anchor_and_front_matter_is_handed_back() {
        let read = read(
            "---\ntitle: Cancelling\n---\n# Billing help {#billing}\n\nText.\n\n## Refunds\n\nMore.\n",
        );
        assert_eq!(
            read.front_matter,
            Some((Style::Yaml, "title: Cancelling\n".to_owned()))
        );
        let anchors: Vec<(&str, Option<&str>)> = read
            .outline
            .sections
            .iter()
            .map(|s| (&*s.headings[s.headings.len() - 1], s.anchor.as_deref()))
            .collect();
        assert_eq!(
            anchors,
            [("Billing help", Some("billing")), ("Refunds", None)]
        );
        let toml = self::read("+++\ntitle = \"T\"\n+++\nText.\n");
        assert_eq!(toml.front_matter.map(|(style, _)| style), Some(Style::Toml));
    }
}
