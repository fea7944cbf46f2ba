//! Markdown (CommonMark with tables, as pulldown-cmark reads it) into an outline: headings make
//! the sections; paragraphs, items, quotes, table rows and code blocks are blocks; links and
//! images keep their text; raw HTML, front matter and footnote markers are dropped.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::outline::{Outline, OutlineBuilder};

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
    let mut code = false;
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
            Event::Start(Tag::CodeBlock(_)) => {
                b.end_block();
                code = true;
            }
            Event::End(TagEnd::CodeBlock) => {
                code = false;
                b.end_block();
            }
            Event::Text(text)
            | Event::Code(text)
            | Event::InlineMath(text)
            | Event::DisplayMath(text)
                if !metadata =>
            {
                match &mut heading {
                    Some((_, gathered)) => gathered.push_str(&text),
                    None if code => b.preformatted(&text),
                    None => b.text(&text),
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
                | TagEnd::TableHead
                | TagEnd::TableRow
                | TagEnd::FootnoteDefinition
                | TagEnd::DefinitionListTitle
                | TagEnd::DefinitionListDefinition,
            )
            | Event::Rule => b.end_block(),
            Event::End(TagEnd::TableCell) => b.text(" "),
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
             ### Cancel your plan\n\nGo to Settings.\nThen Cancel.\n\n```sh\nturnstile cancel\n```\n\n\
             | a | b |\n|---|---|\n| 1 | 2 |\n",
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
            "Go to Settings. Then Cancel.\n\nturnstile cancel\n\na b\n\n1 2"
        );
    }
}
