//! The HTML reader on pages shaped as sites and generators write them: only the main content
//! becomes passages (no navigation, header, footer, sidebar, cookie banner, `¶`), code blocks
//! stay whole with their language, tables become `Header: cell` rows.

use crate::emit::{Passage, document_passages};
use crate::files::Format;
use crate::outline::Outline;
use crate::passage::Cut;

const CUT: Cut = Cut {
    max_chars: 1000,
    max_tokens: crate::DEFAULT_MAX_TOKENS,
    overlap: crate::DEFAULT_OVERLAP,
};

fn outline(source: &str) -> Outline {
    crate::html::outline(source).expect("a page within the bound")
}

fn passages(source: &str) -> Vec<Passage> {
    let mut out = Vec::new();
    document_passages(
        source,
        Format::Html,
        "help/page.html",
        CUT,
        None,
        &mut |p| out.push(p),
    )
    .expect("a page read");
    out
}

/// Every section's headings and text, as one string: what must (not) be read.
fn all_text(outline: &Outline) -> String {
    outline
        .sections
        .iter()
        .map(|s| format!("{}\n{}\n", s.headings.join(" / "), s.text))
        .collect()
}

/// A page of a site built by hand, marking no main region: a site header with its menu, a
/// breadcrumb, a sidebar with the whole table of contents, a cookie banner, a footer; then a
/// short article. Only the article's text becomes passages.
#[test]
fn a_nav_heavy_page_yields_only_its_article() {
    let toc: String = (1..=40)
        .map(|i| format!("<li><a href=/docs/topic-{i}>Topic number {i}</a></li>"))
        .collect();
    let page = format!(
        "<!doctype html><html><head><title>Cancelling · Acme Help</title></head><body>\
         <div class=site-header><a href=/>Acme</a><ul class=main-menu><li><a href=/pricing>Pricing</a>\
         <li><a href=/blog>Blog</a><li><a href=/login>Sign in</a></ul></div>\
         <div class=breadcrumbs><a href=/>Home</a> › <a href=/docs>Docs</a> › Billing</div>\
         <div class=layout><div class=sidebar><p>On this site</p><ul>{toc}</ul></div>\
         <div class=page><h1 id=cancelling>Cancelling your plan</h1>\
         <p>You can cancel your plan at any time, from Settings, then Billing, then Cancel plan.</p>\
         <p>Your plan stays active until the end of the period you paid for, and you are not \
         charged again. Your data is kept for thirty days, should you change your mind.</p>\
         <h2 id=refunds>Refunds</h2><p>A plan cancelled within fourteen days of a payment is \
         refunded in full, to the card that paid, within five working days.</p></div></div>\
         <div id=cookie-consent class=cookie-banner><p>We use cookies to make this site work, \
         and to understand how it is used. <button>Accept all</button> <a href=/cookies>Settings</a></p></div>\
         <div class=footer><p>© 2026 Acme Inc. All rights reserved, everywhere and forever.</p>\
         <a href=/privacy>Privacy</a> <a href=/terms>Terms</a></div></body></html>"
    );
    let read = passages(&page);
    let ids: Vec<&str> = read.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "help/page.html#cancelling-your-plan",
            "help/page.html#refunds"
        ]
    );
    assert!(
        read[0]
            .text
            .starts_with("You can cancel your plan at any time")
    );
    assert!(read[0].text.ends_with("should you change your mind."));
    assert!(
        read[1]
            .text
            .starts_with("A plan cancelled within fourteen days")
    );
    let text: String = read
        .iter()
        .map(|p| format!("{} {}\n", p.title, p.text))
        .collect();
    for boilerplate in [
        "Pricing",
        "Sign in",
        "Home",
        "Topic number",
        "On this site",
        "cookies",
        "Accept all",
        "rights reserved",
        "Privacy",
    ] {
        assert!(!text.contains(boilerplate), "{boilerplate:?} in {text}");
    }
}

/// The same furniture marked as HTML marks it (`<header>`, `<nav>`, `<aside>`, `<footer>`,
/// roles, `hidden`), around an `<article>` with a header of its own, which is kept; in it, a
/// `javascript:` control and DocBook's `navfooter` go.
#[test]
fn marked_furniture_goes_and_an_articles_header_stays() {
    let page = "<body><header><a href=/>Acme</a><nav><a href=/docs>Docs</a></nav></header>\
        <div role=banner>Summer sale</div><aside><h3>Related</h3><p>Other plans</p></aside>\
        <article><header><h1>Plans</h1><p>Updated in May.</p></header>\
        <p>Three plans.</p><div hidden>Old plans</div><div aria-hidden=true>Decoration</div>\
        <div style=\"display: none\">Draft</div><a href=\"javascript:void(0)\">[−]</a>\
        <div class=navfooter><a href=prev.html>Prev</a> Chapter two, on the older plans and how to move off them <a href=next.html>Next</a></div>\
        <footer>Written by the billing team.</footer></article>\
        <div role=contentinfo>Contact us</div><footer>© Acme</footer></body>";
    let read = outline(page);
    assert_eq!(
        all_text(&read),
        "Plans\nUpdated in May.\n\nThree plans.\n\nWritten by the billing team.\n"
    );
}

/// A page as Sphinx's classic theme writes it: related links above and below, the body in
/// `div.body[role=main]` with sections, `¶` header links, a highlighted code block and a table;
/// a sidebar with the page's table of contents, related topics and a search box.
#[test]
fn a_sphinx_page() {
    let related = "<div class=related role=navigation aria-label=\"related navigation\">\
        <h3>Navigation</h3><ul><li class=right><a href=genindex.html>index</a></li>\
        <li class=right><a href=next.html>next</a> |</li>\
        <li class=\"nav-item nav-item-0\"><a href=index.html>Plantly Documentation</a> »</li></ul></div>";
    let page = format!(
        "<!DOCTYPE html><html><head><title>Watering — Plantly Documentation</title></head><body>\
        {related}<div class=document><div class=documentwrapper><div class=bodywrapper>\
        <div class=body role=main><section id=watering>\
        <h1>Watering<a class=headerlink href=#watering title=\"Permalink to this heading\">¶</a></h1>\
        <p>Plants are watered on a schedule.</p>\
        <section id=related-settings><h2>Related settings<a class=headerlink href=#related-settings>¶</a></h2>\
        <p>Set the schedule in code:</p>\
        <div class=\"highlight-python notranslate\"><div class=highlight><pre><span></span>\
        <span class=kn>from</span> <span class=nn>plantly</span> <span class=kn>import</span> <span class=n>schedule</span>\n\
        \n\
        <span class=n>schedule</span><span class=p>(</span><span class=s2>\"daily\"</span><span class=p>)</span>   \n\
        </pre></div></div>\
        <table class=\"docutils align-default\"><thead><tr class=row-odd><th class=head><p>Plan</p></th>\
        <th class=head><p>Price</p></th><th class=head><p>Plants</p></th></tr></thead>\
        <tbody><tr class=row-even><td><p>Seedling</p></td><td><p>free</p></td><td><p>5</p></td></tr>\
        <tr class=row-odd><td><p>Grove</p></td><td><p></p></td><td><p>50</p></td></tr></tbody></table>\
        </section></section></div></div></div>\
        <div class=sphinxsidebar role=navigation aria-label=\"main navigation\"><div class=sphinxsidebarwrapper>\
        <h3><a href=index.html>Table of Contents</a></h3><ul><li><a class=\"reference internal\" href=#>Watering</a>\
        <ul><li><a class=\"reference internal\" href=#related-settings>Related settings</a></li></ul></li></ul>\
        <h3>Related Topics</h3><ul><li><a href=index.html>Documentation overview</a></li></ul>\
        <div id=searchbox role=search><h3 id=searchlabel>Quick search</h3><form class=search action=search.html>\
        <input type=text name=q><input type=submit value=Go></form></div></div></div>\
        <div class=clearer></div></div>{related}<div class=footer role=contentinfo>© Copyright 2026, Plantly.</div>\
        </body></html>"
    );
    let read = outline(&page);
    assert_eq!(
        read.title.as_deref(),
        Some("Watering — Plantly Documentation")
    );
    let sections: Vec<(Vec<&str>, Option<&str>, &str)> = read
        .sections
        .iter()
        .map(|s| {
            (
                s.headings.iter().map(|h| &**h).collect(),
                s.anchor.as_deref(),
                s.text.as_str(),
            )
        })
        .collect();
    assert_eq!(
        sections,
        [
            (
                vec!["Watering"],
                Some("watering"),
                "Plants are watered on a schedule."
            ),
            (
                vec!["Watering", "Related settings"],
                Some("related-settings"),
                "Set the schedule in code:\n\n\
                 ```python\nfrom plantly import schedule\n\nschedule(\"daily\")\n```\n\n\
                 Plan: Seedling; Price: free; Plants: 5\nPlan: Grove; Plants: 50"
            ),
        ]
    );
}

/// A page as mdBook writes it: the chapter list in a sidebar, a menu bar with buttons and the
/// book's title, the chapter in `<main>`, previous/next links after it.
#[test]
fn an_mdbook_page() {
    let page = "<!DOCTYPE HTML><html lang=en class=\"light sidebar-visible\"><head>\
        <title>Getting started - The Plantly Book</title></head><body class=sidebar-visible>\
        <div id=body-container><nav id=sidebar class=sidebar aria-label=\"Table of contents\">\
        <div class=sidebar-scrollbox><ol class=chapter><li class=chapter-item><a href=intro.html>\
        <strong>1.</strong> Introduction</a></li><li class=chapter-item><a class=active href=start.html>\
        <strong>2.</strong> Getting started</a></li></ol></div></nav>\
        <div id=page-wrapper class=page-wrapper><div class=page><div id=menu-bar class=menu-bar>\
        <div class=left-buttons><button id=sidebar-toggle class=icon-button title=\"Toggle Table of Contents\">\
        <i class=\"fa fa-bars\"></i></button></div><h1 class=menu-title>The Plantly Book</h1>\
        <div class=right-buttons><a href=print.html title=\"Print this book\">Print</a></div></div>\
        <div id=content class=content><main><h1 id=getting-started>\
        <a class=header href=#getting-started>Getting started</a></h1>\
        <p>Install the command line tool first.</p>\
        <pre><code class=\"language-rust hljs\">fn main() {\n    plantly::water();\n\n    plantly::feed();\n}\n</code></pre>\
        </main><nav class=nav-wrapper aria-label=\"Page navigation\"><a rel=prev href=intro.html \
        class=\"mobile-nav-chapters previous\">←</a></nav></div></div>\
        <nav class=nav-wide-wrapper aria-label=\"Page navigation\"><a rel=next href=next.html>Next chapter</a></nav>\
        </div></div></body></html>";
    let read = outline(page);
    assert_eq!(
        all_text(&read),
        "Getting started\nInstall the command line tool first.\n\n\
         ```rust\nfn main() {\n    plantly::water();\n\n    plantly::feed();\n}\n```\n"
    );
    assert_eq!(read.sections[0].anchor.as_deref(), Some("getting-started"));
}

/// A page that is nothing but links (a site map, an index of pages) yields no passage.
#[test]
fn a_page_of_only_links_yields_nothing() {
    let links: String = (1..=30)
        .map(|i| format!("<li><a href=page-{i}.html>Page {i} of the site</a></li>"))
        .collect();
    let page = format!(
        "<html><head><title>Site map</title></head><body><h1>Site map</h1><ul>{links}</ul></body></html>"
    );
    assert!(outline(&page).sections.is_empty());
    assert!(passages(&page).is_empty());
}

/// A short page with no main region and no scored paragraph is read whole, but for its
/// furniture; a page whose only text is furniture is still read (never nothing from a page
/// that has text).
#[test]
fn a_short_page_is_read_and_never_emptied() {
    let short = "<body><nav><a href=/>Home</a></nav><h1>Hi</h1><p>Short.</p></body>";
    assert_eq!(all_text(&outline(short)), "Hi\nShort.\n");
    let only_furniture =
        "<body><div class=sidebar>Opening hours: nine to five, every day.</div></body>";
    assert_eq!(
        all_text(&outline(only_furniture)),
        "\nOpening hours: nine to five, every day.\n"
    );
}

/// Code languages from the classes HTML generators write; a table without a header row, a
/// table nested in a cell, and a table that lays a page out (it holds a heading) read as blocks.
#[test]
fn code_languages_and_tables() {
    let page = "<main><pre class=lang-sh>make</pre><pre data-lang=go>x := 1</pre>\
        <pre class=\"rust rust-example-rendered\"><code>let x = 1;</code></pre>\
        <pre><code class=\"language-js mjs\">import a from 'a';</code><code class=\"language-js cjs\">\
        const a = require('a');</code><button class=copy-button>copy</button></pre>\
        <div class=highlight-default><div class=highlight><pre>print(1)</pre></div></div>\
        <table><tr><td>a</td><td></td><td>b</td></tr><tr><td>c<table><tr><td>inner</td></tr></table></td></tr></table>\
        <table><tr><th>Name</th><th>Value</th></tr><tr><td>x</td><td>1</td></tr></table>\
        <table role=presentation><tr><td>left</td><td>right</td></tr></table>\
        <table><tr><td><h2>Laid out</h2><p>By a table.</p></td></tr></table></main>";
    let read = outline(page);
    assert_eq!(
        all_text(&read),
        "\n```sh\nmake\n```\n\n```go\nx := 1\n```\n\n```rust\nlet x = 1;\n```\n\n\
         ```js\nimport a from 'a';\nconst a = require('a');\n```\n\n```\nprint(1)\n```\n\n\
         a | b\nc inner\n\nName: x; Value: 1\n\nleft right\n\
         Laid out\nBy a table.\n"
    );
}
