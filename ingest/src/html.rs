//! HTML (as a browser parses it: html5ever, through scraper) into an outline: `<h1>`–`<h6>`
//! make the sections, `<title>` names the document, block elements end blocks, `<pre>` keeps
//! its lines; scripts, styles, templates, SVG and the head's other elements are dropped. A
//! document nested deeper than browsers nest ([`MAX_DEPTH`]) is refused ([`crate::html_depth`]).

use ego_tree::NodeRef;
use scraper::{Html, Node};

use crate::html_depth::{MAX_DEPTH, parse_within_depth};
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

/// The outline of an HTML document; `Err` (why) for one nested deeper than [`MAX_DEPTH`].
pub(crate) fn outline(source: &str) -> Result<Outline, String> {
    let document = parse_within_depth(source)
        .ok_or_else(|| format!("elements nested over {MAX_DEPTH} deep"))?;
    Ok(outline_of(&document))
}

fn outline_of(document: &Html) -> Outline {
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

/// Recursive, so bounded by [`MAX_DEPTH`] (which the parse guarantees: this is a second guard).
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
                    if let Some(id) = anchor_of(child) {
                        b.anchor(id);
                    }
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

/// The id a document gives a heading, for links to it: its own `id`, else that of an `<a id>`
/// or `<a name>` inside it, else that of the element it opens (a `<section id>` or `<div id>`
/// whose first element it is, as Sphinx and others write them).
fn anchor_of(heading: NodeRef<'_, Node>) -> Option<&str> {
    let element = heading.value().as_element()?;
    if let Some(id) = element.attr("id") {
        return Some(id);
    }
    if let Some(id) = heading.descendants().find_map(|n| {
        let e = n.value().as_element()?;
        (e.name() == "a").then(|| e.attr("id").or_else(|| e.attr("name")))?
    }) {
        return Some(id);
    }
    let parent = heading.parent()?;
    let first = parent.children().find(|n| n.value().is_element())?;
    (first.id() == heading.id())
        .then(|| parent.value().as_element()?.attr("id"))
        .flatten()
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
             <h1 id=help>Help</h1><p>Welcome to <b>our</b> help.</p>\
             <section id=billing><h2>Billing</h2><p>Pay monthly.</p><ul><li>Cards</li><li>Invoices</li></ul>\
             <script>var x = 1;</script>\
             <h3><a name=cancel></a>Cancel <em>your</em> plan</h3><p>Go to<br>Settings.</p>\
             <pre>line one\n  line two</pre>\
             <table><tr><td>a</td><td>b</td></tr></table></section></body></html>",
        )
        .unwrap();
        assert_eq!(outline.title.as_deref(), Some("Help & support"));
        let texts: Vec<(Vec<&str>, &str)> = outline
            .sections
            .iter()
            .map(|s| (s.headings.iter().map(|h| &**h).collect(), s.text.as_str()))
            .collect();
        assert_eq!(texts[0], (vec![], "Home"));
        assert_eq!(texts[1].1, "Welcome to our help.");
        assert_eq!(texts[2].0, ["Help", "Billing"]);
        assert_eq!(texts[2].1, "Pay monthly.\n\nCards\n\nInvoices");
        assert_eq!(texts[3].0, ["Help", "Billing", "Cancel your plan"]);
        let anchors: Vec<Option<&str>> = outline
            .sections
            .iter()
            .map(|s| s.anchor.as_deref())
            .collect();
        assert_eq!(
            anchors,
            [None, Some("help"), Some("billing"), Some("cancel")]
        );
        assert_eq!(
            texts[3].1,
            "Go to\nSettings.\n\nline one\n  line two\n\na b"
        );
    }

    /// Nested within the bound, a document is read whole; nested past it (5,000 `<span>`s, or
    /// a `<div>` opened on every line and never closed), it is refused, not parsed on at a cost
    /// that grows with the square of its depth.
    #[test]
    fn a_document_nested_past_the_bound_is_refused() {
        let within = format!(
            "{}shallow {}deep{}",
            "<div>".repeat(200),
            "<span>".repeat(250),
            "</span>".repeat(250) + &"</div>".repeat(200)
        );
        let read = outline(&within).unwrap();
        assert_eq!(read.sections.len(), 1);
        assert_eq!(read.sections[0].text, "shallow deep");
        for past in [
            format!(
                "{}shallow{}deep{}",
                "<div>".repeat(200),
                "<span>".repeat(5_000),
                "</span>".repeat(5_000) + &"</div>".repeat(200)
            ),
            "<div>item\n".repeat(600),
        ] {
            assert_eq!(
                outline(&past).unwrap_err(),
                format!("elements nested over {MAX_DEPTH} deep")
            );
        }
    }
}
