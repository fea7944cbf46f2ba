//! An HTML page's main content, as readability-style extractors find it (Mozilla
//! Readability's ideas, on the tree scraper already parsed): the region the page marks as its
//! main one (`<main>`, `[role=main]`, rustdoc's `#main-content`, a page's one `<article>`), else
//! the block with the most prose and fewest links, with those of its siblings that hold prose
//! too or head it. Inside what is read, navigation, page headers and footers, sidebars, cookie
//! banners, hidden elements, permalinks (`¶`) and blocks that are mostly links are left out.
//! A page where no block scores (a short one) is read whole, without that furniture.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use ego_tree::{NodeId, NodeRef};
use scraper::node::Element;
use scraper::{Html, Node};

use crate::html_depth::MAX_DEPTH;

/// Elements whose content is never text of the document.
pub(crate) const DROPPED: [&str; 8] = [
    "script", "style", "noscript", "template", "svg", "iframe", "object", "head",
];

/// Elements that are the page's furniture wherever they are.
const FURNITURE: [&str; 6] = ["nav", "aside", "dialog", "button", "select", "textarea"];

/// Roles of the page's furniture.
const FURNITURE_ROLES: [&str; 10] = [
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "search",
    "dialog",
    "alertdialog",
    "menu",
    "menubar",
    "toolbar",
];

/// Words of an `id` or `class` that say an element is furniture (as Readability's "unlikely
/// candidates"), matched as whole words: `site-nav` and `sphinxsidebar` are, `canvas` is not.
const UNLIKELY: [&str; 37] = [
    "nav",
    "navbar",
    "navheader",
    "navfooter",
    "navigation",
    "menu",
    "menubar",
    "sidebar",
    "sphinxsidebar",
    "sphinxsidebarwrapper",
    "toc",
    "breadcrumb",
    "breadcrumbs",
    "crumbs",
    "cookie",
    "cookies",
    "consent",
    "gdpr",
    "banner",
    "footer",
    "related",
    "share",
    "sharing",
    "social",
    "skip",
    "skiplink",
    "pagination",
    "pager",
    "masthead",
    "topbar",
    "toolbar",
    "linenos",
    "lineno",
    "linenodiv",
    "comments",
    "disqus",
    "popup",
];

/// Words that keep an element an unlikely word would drop (`wy-nav-content` is a page's body).
const MAYBE: [&str; 5] = ["article", "body", "content", "main", "column"];

/// Blocks left out when most of their text is links (a table of contents, a link list).
const LINK_BLOCKS: [&str; 6] = ["ul", "ol", "dl", "div", "table", "menu"];

/// Text that is a section's prose (Readability scores these).
const PROSE: [&str; 4] = ["p", "pre", "td", "blockquote"];

/// A map keyed by node: a node's id is an index into its tree, so it is its own hash (spread
/// by Fibonacci hashing), at a fraction of SipHash's cost on every element of a page.
type NodeMap<V> = HashMap<NodeId, V, BuildHasherDefault<IndexHasher>>;

#[derive(Default)]
struct IndexHasher(u64);

impl Hasher for IndexHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// What a subtree holds: characters of text, of them in links, commas, and whether it holds
/// a heading or a code block.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    text: usize,
    links: usize,
    commas: usize,
    heading: bool,
    code: bool,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.text += other.text;
        self.links += other.links;
        self.commas += other.commas;
        self.heading |= other.heading;
        self.code |= other.code;
    }

    fn link_density(&self) -> f64 {
        if self.text == 0 {
            0.0
        } else {
            self.links as f64 / self.text as f64
        }
    }
}

/// A page's main content: the subtrees to read, in document order, and what to leave out in
/// them.
pub(crate) struct Content<'a> {
    /// Subtrees to read, in document order.
    pub roots: Vec<NodeRef<'a, Node>>,
    counts: NodeMap<Counts>,
}

impl<'a> Content<'a> {
    /// The main content of `document`.
    pub fn of(document: &'a Html) -> Self {
        let root = document.tree.root();
        let mut counts = NodeMap::default();
        count(root, false, &mut counts, 0);
        let mut content = Content {
            roots: Vec::new(),
            counts,
        };
        content.roots = match marked_main(root, &content.counts) {
            Some(main) => vec![main],
            None => content.best_block(root),
        };
        // No block scores (a short page): the whole page, still without its furniture.
        if content.roots.is_empty() {
            content.roots.push(root);
        }
        content
    }

    /// Whether `node` (an element under one of the roots) is left out: furniture, hidden, a
    /// permalink, or a block that is mostly links and holds no heading or code.
    pub fn skips(&self, node: NodeRef<'_, Node>) -> bool {
        let Some(element) = node.value().as_element() else {
            return false;
        };
        if is_furniture(node, element) {
            return true;
        }
        LINK_BLOCKS.contains(&element.name())
            && self
                .counts
                .get(&node.id())
                .is_some_and(|c| !c.heading && !c.code && c.text > 0 && c.link_density() > 0.5)
    }

    /// Whether the page is mostly links (a table of contents, a sitemap, an index): then, when
    /// no main content is found, it yields nothing rather than its links.
    pub fn mostly_links(&self, document: &Html) -> bool {
        let c = self.counts[&document.tree.root().id()];
        c.text == 0 || c.link_density() > 0.5
    }

    /// Readability's way, when the page marks no main region: each paragraph of 25 characters
    /// or more scores its parent (whole), grandparent (half) and three more ancestors (less);
    /// a block's score is cut by its share of link text; the best block is read with those of
    /// its siblings that score near it, hold prose with few links, or are headings.
    fn best_block(&self, root: NodeRef<'a, Node>) -> Vec<NodeRef<'a, Node>> {
        let mut scores: NodeMap<f64> = NodeMap::default();
        self.score(root, &mut scores, 0);
        let best = scores
            .iter()
            .filter_map(|(id, s)| {
                let node = root.tree().get(*id)?;
                let c = self.counts.get(id)?;
                Some((node, s * (1.0 - c.link_density())))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.id().cmp(&a.0.id())));
        let Some((mut best, top)) = best else {
            return Vec::new();
        };
        // A block alone in its parent: the parent is the block.
        while let Some(parent) = best.parent() {
            let elements = parent.children().filter(|n| n.value().is_element()).count();
            if elements != 1
                || parent
                    .value()
                    .as_element()
                    .is_none_or(|e| e.name() == "body")
            {
                break;
            }
            best = parent;
        }
        let Some(parent) = best.parent() else {
            return vec![best];
        };
        let threshold = (top * 0.2).max(10.0);
        parent
            .children()
            .filter(|sibling| {
                if sibling.id() == best.id() {
                    return true;
                }
                let Some(element) = sibling.value().as_element() else {
                    return false;
                };
                if is_furniture(*sibling, element) || DROPPED.contains(&element.name()) {
                    return false;
                }
                let c = self.counts.get(&sibling.id()).copied().unwrap_or_default();
                let score = scores.get(&sibling.id()).copied().unwrap_or(0.0);
                heading_level(element.name()).is_some()
                    || score * (1.0 - c.link_density()) >= threshold
                    || (c.text >= 80 && c.link_density() < 0.25)
            })
            .collect()
    }

    fn score(&self, node: NodeRef<'a, Node>, scores: &mut NodeMap<f64>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        for child in node.children() {
            let Some(element) = child.value().as_element() else {
                continue;
            };
            if DROPPED.contains(&element.name()) || is_furniture(child, element) {
                continue;
            }
            let c = self.counts.get(&child.id()).copied().unwrap_or_default();
            if PROSE.contains(&element.name()) && c.text >= 25 {
                let points = 1.0 + c.commas as f64 + (c.text as f64 / 100.0).min(3.0);
                for (level, ancestor) in child.ancestors().take(5).enumerate() {
                    let Some(e) = ancestor.value().as_element() else {
                        break;
                    };
                    let share = match level {
                        0 => 1.0,
                        1 => 0.5,
                        n => 1.0 / (n as f64 * 3.0),
                    };
                    *scores
                        .entry(ancestor.id())
                        .or_insert_with(|| initial_score(e)) += points * share;
                }
            }
            self.score(child, scores, depth + 1);
        }
    }
}

/// Readability's starting score of a candidate block: by its tag and its class words.
fn initial_score(element: &Element) -> f64 {
    let by_tag = match element.name() {
        "div" | "article" | "section" | "main" => 5.0,
        "pre" | "td" | "blockquote" => 3.0,
        "ol" | "ul" | "dl" | "dd" | "dt" | "li" | "form" | "address" => -3.0,
        "th" => -5.0,
        name if heading_level(name).is_some() => -5.0,
        _ => 0.0,
    };
    let words = || {
        ["class", "id"]
            .into_iter()
            .filter_map(|a| element.attr(a))
            .flat_map(words)
    };
    let by_class = if words().any(|w| MAYBE.contains(&w.as_str())) {
        25.0
    } else if words().any(|w| UNLIKELY.contains(&w.as_str())) {
        -25.0
    } else {
        0.0
    };
    by_tag + by_class
}

/// The region the page marks as its main content: the outermost `<main>`, `[role=main]` or
/// `#main-content` with the most text, or, within it, the innermost one that holds at least
/// half its text; else the page's one `<article>`. `None` when it marks none, or when what it
/// marks holds no text.
fn marked_main<'a>(root: NodeRef<'a, Node>, counts: &NodeMap<Counts>) -> Option<NodeRef<'a, Node>> {
    let text = |n: &NodeRef<'_, Node>| counts.get(&n.id()).map_or(0, |c| c.text);
    let visible = |n: &NodeRef<'_, Node>| {
        !n.ancestors()
            .chain(std::iter::once(*n))
            .any(|a| a.value().as_element().is_some_and(is_hidden))
    };
    let marked: Vec<NodeRef<'a, Node>> = root
        .descendants()
        .filter(|n| {
            n.value().as_element().is_some_and(|e| {
                e.name() == "main"
                    || e.attr("role")
                        .is_some_and(|r| r.eq_ignore_ascii_case("main"))
                    || e.attr("id") == Some("main-content")
            })
        })
        .filter(visible)
        .collect();
    // A set, not a scan of the list: a page of a million marked elements (16 MiB of
    // `<i role=main>`) is answered in one pass over them, each looking at its ancestors (at most
    // `MAX_DEPTH`).
    let marked_ids: std::collections::HashSet<NodeId, BuildHasherDefault<IndexHasher>> =
        marked.iter().map(NodeRef::id).collect();
    let is_marked = |n: &NodeRef<'_, Node>| marked_ids.contains(&n.id());
    let outermost = marked
        .iter()
        .filter(|m| !m.ancestors().any(|a| is_marked(&a)))
        .max_by_key(|m| text(m));
    if let Some(outer) = outermost {
        let whole = text(outer);
        let inner = marked
            .iter()
            .rfind(|m| m.ancestors().any(|a| a.id() == outer.id()) && 2 * text(m) >= whole);
        let main = *inner.unwrap_or(outer);
        return (text(&main) > 0).then_some(main);
    }
    let mut articles = root
        .descendants()
        .filter(|n| {
            n.value()
                .as_element()
                .is_some_and(|e| e.name() == "article")
        })
        .filter(visible);
    match (articles.next(), articles.next()) {
        (Some(article), None) if text(&article) > 0 => Some(article),
        _ => None,
    }
}

/// Counts every element's subtree (text in `DROPPED` elements is not text).
fn count(
    node: NodeRef<'_, Node>,
    in_link: bool,
    counts: &mut NodeMap<Counts>,
    depth: usize,
) -> Counts {
    let mut total = Counts::default();
    if depth > MAX_DEPTH {
        return total;
    }
    for child in node.children() {
        match child.value() {
            Node::Text(text) => {
                // Characters of its words and one space between each: as a reader sees it.
                let (words, chars) = text
                    .split_whitespace()
                    .fold((0usize, 0usize), |(w, c), word| {
                        (w + 1, c + word.chars().count())
                    });
                let len = chars + words.saturating_sub(1);
                total.text += len;
                if in_link {
                    total.links += len;
                }
                total.commas += text.matches(',').count();
            }
            Node::Element(e) if !DROPPED.contains(&e.name()) => {
                let link = in_link || (e.name() == "a" && e.attr("href").is_some());
                let mut c = count(child, link, counts, depth + 1);
                c.heading |= heading_level(e.name()).is_some();
                c.code |= e.name() == "pre";
                total.add(c);
            }
            _ => {}
        }
    }
    counts.insert(node.id(), total);
    total
}

/// Whether an element is the page's furniture, hidden, or a permalink (see the module's doc).
pub(crate) fn is_furniture(node: NodeRef<'_, Node>, element: &Element) -> bool {
    let name = element.name();
    if FURNITURE.contains(&name) || is_hidden(element) {
        return true;
    }
    if element
        .attr("role")
        .is_some_and(|r| FURNITURE_ROLES.iter().any(|f| r.eq_ignore_ascii_case(f)))
    {
        return true;
    }
    // A page's header and footer, not an article's or a section's (HTML's banner and
    // contentinfo).
    if (name == "header" || name == "footer")
        && !node.ancestors().any(|a| {
            a.value().as_element().is_some_and(|e| {
                matches!(e.name(), "article" | "aside" | "main" | "nav" | "section")
                    || e.attr("role")
                        .is_some_and(|r| r.eq_ignore_ascii_case("main"))
            })
        })
    {
        return true;
    }
    if name == "a" {
        // Links are read for their text wherever they are (as Readability does), but for
        // permalinks and controls (`javascript:` links: rustdoc's `[−]`).
        return is_permalink(node, element)
            || element.attr("href").is_some_and(|h| {
                h.trim_start()
                    .get(..11)
                    .is_some_and(|s| s.eq_ignore_ascii_case("javascript:"))
            });
    }
    if matches!(name, "body" | "html" | "main" | "article") {
        return false;
    }
    // An id that names the section a heading opens is the heading's slug, not a role.
    let opens_heading = node
        .children()
        .find_map(|n| n.value().as_element().map(|e| heading_level(e.name())))
        .flatten()
        .is_some();
    let mut class_words: Vec<String> = element.attr("class").map(words).unwrap_or_default();
    if !opens_heading {
        class_words.extend(element.attr("id").map(words).unwrap_or_default());
    }
    class_words.iter().any(|w| UNLIKELY.contains(&w.as_str()))
        && !class_words.iter().any(|w| MAYBE.contains(&w.as_str()))
}

/// A link to the element it sits in, shown as a sign (`¶`, `§`, `#`, `🔗`): Sphinx's
/// `headerlink`, rustdoc's `anchor`, the permalinks generators put in headings.
pub(crate) fn is_permalink(node: NodeRef<'_, Node>, element: &Element) -> bool {
    if element.has_class("headerlink", scraper::CaseSensitivity::AsciiCaseInsensitive) {
        return true;
    }
    if !element.attr("href").is_some_and(|h| h.starts_with('#')) {
        return false;
    }
    let mut chars = 0;
    for n in node.descendants() {
        if let Node::Text(t) = n.value() {
            for c in t.chars().filter(|c| !c.is_whitespace()) {
                if c.is_alphanumeric() {
                    return false;
                }
                chars += 1;
            }
        }
    }
    chars <= 2
}

/// Hidden from readers: `hidden`, `aria-hidden=true`, or a style of `display: none` or
/// `visibility: hidden`.
fn is_hidden(element: &Element) -> bool {
    if element.attr("hidden").is_some()
        || element
            .attr("aria-hidden")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return true;
    }
    element.attr("style").is_some_and(|style| {
        let style: String = style
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        style.contains("display:none") || style.contains("visibility:hidden")
    })
}

/// The words of an `id` or `class` value, lowercase, split at anything not a letter or digit.
fn words(value: &str) -> Vec<String> {
    value
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

pub(crate) fn heading_level(name: &str) -> Option<u8> {
    match name.as_bytes() {
        [b'h', d @ b'1'..=b'6'] => Some(d - b'0'),
        _ => None,
    }
}
