//! HTML (as a browser parses it: html5ever, through scraper) into an outline of its main
//! content ([`crate::main_content`]): `<h1>`–`<h6>` make the sections, `<title>` names the
//! document, block elements end blocks, `<pre>` is a code block (with the language its classes
//! name), a `<table>` is one block of `Header: cell` rows; scripts, styles, templates, SVG and
//! the head's other elements are dropped. A document nested deeper than browsers nest
//! ([`MAX_DEPTH`]) is refused ([`crate::html_depth`]).

use ego_tree::NodeRef;
use scraper::{Html, Node};

use crate::html_depth::{MAX_DEPTH, parse_within_depth};
use crate::main_content::{Content, DROPPED, heading_level, is_furniture, is_permalink};
use crate::outline::{Outline, OutlineBuilder, collapse};

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

/// Class prefixes that name a code block's language (`language-python`, `lang-rust`, Sphinx's
/// `highlight-python` on the block's `div`).
const LANGUAGE_PREFIXES: [&str; 3] = ["language-", "lang-", "highlight-"];

/// The outline of an HTML document; `Err` (why) for one nested deeper than [`MAX_DEPTH`].
pub(crate) fn outline(source: &str) -> Result<Outline, String> {
    let document = parse_within_depth(source)
        .ok_or_else(|| format!("elements nested over {MAX_DEPTH} deep"))?;
    Ok(outline_of(&document))
}

/// The main content's outline; when it holds no text, the whole page's (today's reading),
/// unless the page is mostly links (a table of contents, an index): then none.
fn outline_of(document: &Html) -> Outline {
    let content = Content::of(document);
    let read = |content: Option<&Content<'_>>, roots: &[NodeRef<'_, Node>]| {
        let mut b = OutlineBuilder::default();
        if let Some(title) = document
            .root_element()
            .descendants()
            .find(|n| n.value().as_element().is_some_and(|e| e.name() == "title"))
        {
            b.title(&text_of(title));
        }
        let mut walk = Walk { content, b: &mut b };
        for root in roots {
            walk.node(*root, 0);
        }
        b.finish()
    };
    let main = read(Some(&content), &content.roots);
    if !main.sections.is_empty() || content.mostly_links(document) {
        return main;
    }
    read(None, &[*document.root_element()])
}

/// A block of raw HTML inside a Markdown document, read into its outline as a page is (its
/// text kept, its tags gone, scripts and styles left out whole), a block of its own. A block
/// nested deeper than [`MAX_DEPTH`] gives nothing.
pub(crate) fn raw_block(source: &str, b: &mut OutlineBuilder) {
    b.end_block();
    if let Some(document) = parse_within_depth(source) {
        let mut walk = Walk { content: None, b };
        walk.node(*document.root_element(), 0);
    }
    b.end_block();
}

/// A walk over the part of a page that is read, into an outline.
struct Walk<'c, 'a, 'b> {
    /// What to leave out; `None` reads everything.
    content: Option<&'c Content<'a>>,
    b: &'b mut OutlineBuilder,
}

impl Walk<'_, '_, '_> {
    /// `node` and what it holds. Recursive, so bounded by [`MAX_DEPTH`] (which the parse
    /// guarantees: this is a second guard).
    fn node(&mut self, node: NodeRef<'_, Node>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match node.value() {
            Node::Text(text) => self.b.text(text),
            Node::Element(element) => {
                let name = element.name();
                if DROPPED.contains(&name) || self.content.is_some_and(|c| c.skips(node)) {
                    return;
                }
                if let Some(level) = heading_level(name) {
                    self.b.heading(level, &text_of(node));
                    if let Some(id) = anchor_of(node) {
                        self.b.anchor(id);
                    }
                    return;
                }
                match name {
                    "br" => self.b.line_break(),
                    "pre" => self.b.code(&language_of(node), &code_of(node)),
                    "table" if is_data_table(node) => {
                        let (header, rows) = table_of(node);
                        self.b.table(&header, &rows);
                    }
                    "td" | "th" => {
                        self.children(node, depth);
                        self.b.text(" ");
                    }
                    _ if BLOCKS.contains(&name) => {
                        self.b.end_block();
                        self.children(node, depth);
                        self.b.end_block();
                    }
                    _ => self.children(node, depth),
                }
            }
            Node::Document | Node::Fragment => self.children(node, depth),
            _ => {}
        }
    }

    fn children(&mut self, node: NodeRef<'_, Node>, depth: usize) {
        for child in node.children() {
            self.node(child, depth + 1);
        }
    }
}

/// A code block's text, as written: its lines, `<br>` as a line end (line numbers, buttons
/// and what is never text left out).
fn code_of(pre: NodeRef<'_, Node>) -> String {
    fn gather(node: NodeRef<'_, Node>, out: &mut String, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        for child in node.children() {
            match child.value() {
                Node::Text(text) => out.push_str(text),
                Node::Element(e) if e.name() == "br" => out.push('\n'),
                Node::Element(e) if !DROPPED.contains(&e.name()) && !is_furniture(child, e) => {
                    // A second `<code>` in one block (Node's docs: one for each module
                    // system) starts on a line of its own.
                    if e.name() == "code" && !out.is_empty() && !out.ends_with('\n') {
                        out.push('\n');
                    }
                    gather(child, out, depth + 1)
                }
                _ => {}
            }
        }
    }
    let mut out = String::new();
    gather(pre, &mut out, 0);
    out
}

/// The language a code block's classes name: `language-x`, `lang-x` or `highlight-x` on the
/// `<pre>`, on a `<code>` in it, or on one of its three nearest ancestors (Sphinx's
/// `div.highlight-python`), or a `data-lang`, or rustdoc's bare `rust`; empty when none does
/// (or Sphinx's `default`).
fn language_of(pre: NodeRef<'_, Node>) -> String {
    let code = pre
        .children()
        .find(|n| n.value().as_element().is_some_and(|e| e.name() == "code"));
    let named = code
        .into_iter()
        .chain(std::iter::once(pre))
        .chain(pre.ancestors().take(3))
        .filter_map(|n| n.value().as_element())
        .find_map(|e| {
            e.classes()
                .find_map(|c| {
                    LANGUAGE_PREFIXES.iter().find_map(|p| {
                        c.get(..p.len())
                            .filter(|h| h.eq_ignore_ascii_case(p))
                            .map(|_| &c[p.len()..])
                    })
                })
                .or_else(|| e.attr("data-lang"))
        })
        .or_else(|| {
            // rustdoc's `<pre class="rust">`, with no prefix.
            let e = pre.value().as_element()?;
            e.has_class("rust", scraper::CaseSensitivity::AsciiCaseInsensitive)
                .then_some("rust")
        })
        .unwrap_or_default();
    let language: String = named
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '+' | '#' | '-' | '_' | '.'))
        .collect::<String>()
        .to_lowercase();
    match language.as_str() {
        "default" | "none" => String::new(),
        _ => language,
    }
}

/// Whether a table holds data (rows of cells) rather than lays out a page: one that holds a
/// heading or a code block, or says it is for presentation, is read as blocks.
fn is_data_table(table: NodeRef<'_, Node>) -> bool {
    let presentation = table.value().as_element().is_some_and(|e| {
        e.attr("role").is_some_and(|r| {
            r.eq_ignore_ascii_case("presentation") || r.eq_ignore_ascii_case("none")
        })
    });
    !presentation
        && !table.descendants().any(|n| {
            n.value()
                .as_element()
                .is_some_and(|e| e.name() == "pre" || heading_level(e.name()).is_some())
        })
}

/// A table's header (its `<thead>`'s first row, else its first row when that is all `<th>`;
/// empty when it has none) and its other rows, each cell's text collapsed (a table in a cell:
/// its text joins the cell's).
fn table_of(table: NodeRef<'_, Node>) -> (Vec<String>, Vec<Vec<String>>) {
    let element = |n: &NodeRef<'_, Node>, name: &str| {
        n.value().as_element().is_some_and(|e| e.name() == name)
    };
    let mut header = Vec::new();
    let mut rows = Vec::new();
    for part in table.children() {
        let (in_head, trs): (bool, Vec<NodeRef<'_, Node>>) = if element(&part, "tr") {
            (false, vec![part])
        } else if ["thead", "tbody", "tfoot"]
            .iter()
            .any(|n| element(&part, n))
        {
            (
                element(&part, "thead"),
                part.children().filter(|n| element(n, "tr")).collect(),
            )
        } else {
            continue;
        };
        for tr in trs {
            let cells: Vec<NodeRef<'_, Node>> = tr
                .children()
                .filter(|n| element(n, "td") || element(n, "th"))
                .collect();
            let texts: Vec<String> = cells.iter().map(|c| text_of(*c)).collect();
            let all_th = !cells.is_empty() && cells.iter().all(|c| element(c, "th"));
            if header.is_empty() && rows.is_empty() && (in_head || all_th) {
                header = texts;
            } else if !in_head {
                rows.push(texts);
            }
        }
    }
    (header, rows)
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

/// An element's text, whitespace collapsed (scripts and styles inside it, and permalinks such
/// as Sphinx's `¶`, left out).
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
                Node::Element(e) if !left_out(child, e) => gather(child, out, depth + 1),
                _ => {}
            }
        }
    }
    fn left_out(node: NodeRef<'_, Node>, e: &scraper::node::Element) -> bool {
        DROPPED.contains(&e.name()) || (e.name() == "a" && is_permalink(node, e))
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
        // The nav's "Home" was a passage before main-content extraction: no more.
        assert_eq!(texts[0], (vec!["Help"], "Welcome to our help."));
        assert_eq!(texts[1].0, ["Help", "Billing"]);
        assert_eq!(texts[1].1, "Pay monthly.\n\nCards\n\nInvoices");
        assert_eq!(texts[2].0, ["Help", "Billing", "Cancel your plan"]);
        let anchors: Vec<Option<&str>> = outline
            .sections
            .iter()
            .map(|s| s.anchor.as_deref())
            .collect();
        assert_eq!(anchors, [Some("help"), Some("billing"), Some("cancel")]);
        assert_eq!(
            texts[2].1,
            "Go to\nSettings.\n\n```\nline one\n  line two\n```\n\na | b"
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
