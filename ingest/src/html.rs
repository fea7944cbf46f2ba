//! HTML (as a browser parses it: html5ever, through scraper) into an outline: `<h1>`–`<h6>`
//! make the sections, `<title>` names the document, block elements end blocks, `<pre>` keeps
//! its lines; scripts, styles, templates, SVG and the head's other elements are dropped.

use ego_tree::NodeRef;
use scraper::{Html, Node};

use crate::outline::{Outline, OutlineBuilder, collapse};

/// Elements whose content is never text of the document.
const DROPPED: [&str; 8] = [
    "script", "style", "noscript", "template", "svg", "iframe", "object", "head",
];

/// Elements that end a block (the text after them starts a new one).
const BLOCKS: [&str; 25] = [
    "p",
    "div",
    "section",
    "article",
    "main",
    "aside",
    "header",
    "footer",
    "nav",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "blockquote",
    "table",
    "tr",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "details",
    "summary",
    "hr",
];

/// Deepest element nesting read: a document nested deeper is read to this depth (its deeper
/// text dropped), so that a hostile file cannot exhaust the stack.
const MAX_DEPTH: usize = 256;

/// The outline of an HTML document.
pub(crate) fn outline(source: &str) -> Outline {
    let document = Html::parse_document(source);
    let mut b = OutlineBuilder::default();
    if let Some(title) = document
        .root_element()
        .descendants()
        .find(|n| n.value().as_element().is_some_and(|e| e.name() == "title"))
    {
        b.title(&text_of(title));
    }
    walk(*document.root_element(), &mut b, false, 0);
    b.finish()
}

fn walk(node: NodeRef<'_, Node>, b: &mut OutlineBuilder, pre: bool, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    for child in node.children() {
        match child.value() {
            Node::Text(text) if pre => b.preformatted(text),
            Node::Text(text) => b.text(text),
            Node::Element(element) => {
                let name = element.name();
                if DROPPED.contains(&name) {
                    continue;
                }
                if let Some(level) = heading_level(name) {
                    b.heading(level, &text_of(child));
                    continue;
                }
                match name {
                    "br" => b.line_break(),
                    "pre" => {
                        b.end_block();
                        walk(child, b, true, depth + 1);
                        b.end_block();
                    }
                    "td" | "th" => {
                        walk(child, b, pre, depth + 1);
                        b.text(" ");
                    }
                    _ if BLOCKS.contains(&name) => {
                        b.end_block();
                        walk(child, b, pre, depth + 1);
                        b.end_block();
                    }
                    _ => walk(child, b, pre, depth + 1),
                }
            }
            _ => {}
        }
    }
}

fn heading_level(name: &str) -> Option<u8> {
    match name.as_bytes() {
        [b'h', d @ b'1'..=b'6'] => Some(d - b'0'),
        _ => None,
    }
}

/// An element's text, whitespace collapsed (scripts and styles inside it left out).
fn text_of(node: NodeRef<'_, Node>) -> String {
    fn gather(node: NodeRef<'_, Node>, out: &mut String, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        for child in node.children() {
            match child.value() {
                Node::Text(text) => {
                    out.push_str(text);
                    out.push(' ');
                }
                Node::Element(e) if !DROPPED.contains(&e.name()) => gather(child, out, depth + 1),
                _ => {}
            }
        }
    }
    let mut out = String::new();
    gather(node, &mut out, 0);
    collapse(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_go_and_headings_make_sections() {
        let outline = outline(
            "<!doctype html><html><head><title>Help &amp; support</title>\
             <style>p{color:red}</style></head><body>\
             <nav><a href=/>Home</a></nav>\
             <h1>Help</h1><p>Welcome to <b>our</b> help.</p>\
             <h2>Billing</h2><p>Pay monthly.</p><ul><li>Cards</li><li>Invoices</li></ul>\
             <script>var x = 1;</script>\
             <h3>Cancel <em>your</em> plan</h3><p>Go to<br>Settings.</p>\
             <pre>line one\n  line two</pre>\
             <table><tr><td>a</td><td>b</td></tr></table></body></html>",
        );
        assert_eq!(outline.title.as_deref(), Some("Help & support"));
        let texts: Vec<(&[String], &str)> = outline
            .sections
            .iter()
            .map(|s| (s.headings.as_slice(), s.text.as_str()))
            .collect();
        assert_eq!(texts[0], (&[][..], "Home"));
        assert_eq!(texts[1].1, "Welcome to our help.");
        assert_eq!(texts[2].0, ["Help", "Billing"]);
        assert_eq!(texts[2].1, "Pay monthly.\n\nCards\n\nInvoices");
        assert_eq!(texts[3].0, ["Help", "Billing", "Cancel your plan"]);
        assert_eq!(
            texts[3].1,
            "Go to\nSettings.\n\nline one\n  line two\n\na b"
        );
    }

    #[test]
    fn a_deeply_nested_document_is_read_to_its_depth_bound() {
        let source = format!(
            "{}shallow{}deep{}",
            "<div>".repeat(200),
            "<span>".repeat(5_000),
            "</span>".repeat(5_000) + &"</div>".repeat(200)
        );
        let outline = outline(&source);
        assert_eq!(outline.sections.len(), 1);
        assert_eq!(outline.sections[0].text, "shallow");
    }
}
