//! A measure, not a check (`#[ignore]`d: it reads a documentation set installed on the
//! machine): the HTML reader over every page of a real Sphinx site, the time it takes and the
//! sections and characters each page yields.
//!
//! ```sh
//! TURNSTILE_HTML_DIR=/work/data/debdoc/python-flask-doc/usr/share/doc/python-flask-doc/html \
//!     cargo test -p turnstile-ingest --lib html_measured -- --ignored --nocapture
//! ```
//!
//! With `TURNSTILE_HTML_SHOW=quickstart.html` (a page's path under the folder), that page's
//! sections are printed whole (`*`: every page's); with `TURNSTILE_HTML_PASSAGES=1`, every
//! passage, one a line.

use std::time::{Duration, Instant};

#[test]
#[ignore = "reads a documentation set named by TURNSTILE_HTML_DIR"]
fn read_every_page_of_a_site() {
    let Ok(dir) = std::env::var("TURNSTILE_HTML_DIR") else {
        eprintln!("TURNSTILE_HTML_DIR is not set");
        return;
    };
    let mut pages: Vec<_> = walkdir::WalkDir::new(&dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "html"))
        .map(|e| e.into_path())
        .collect();
    pages.sort();
    let (mut spent, mut sections, mut chars, mut passages) = (Duration::ZERO, 0, 0, 0);
    let cut = crate::passage::Cut {
        max_chars: crate::DEFAULT_MAX_CHARS,
        max_tokens: crate::DEFAULT_MAX_TOKENS,
        overlap: crate::DEFAULT_OVERLAP,
    };
    for page in &pages {
        let source = std::fs::read_to_string(page).expect("a readable page");
        let started = Instant::now();
        let outline = crate::html::outline(&source).expect("a page within the bound");
        spent += started.elapsed();
        let text: usize = outline
            .sections
            .iter()
            .map(|s| s.text.chars().count())
            .sum();
        if std::env::var_os("TURNSTILE_HTML_SHOW")
            .is_some_and(|show| show == "*" || page.ends_with(std::path::Path::new(&show)))
        {
            for s in &outline.sections {
                println!("## {:?} #{:?}\n{}\n", s.headings, s.anchor, s.text);
            }
        }
        sections += outline.sections.len();
        crate::emit::document_passages(
            &source,
            crate::files::Format::Html,
            "page",
            cut,
            None,
            &mut |p| {
                passages += 1;
                if std::env::var_os("TURNSTILE_HTML_PASSAGES").is_some() {
                    println!("@@ {} {}", p.id, p.text.replace('\n', " "));
                }
            },
        )
        .expect("a page read");
        chars += text;
        let first = outline.sections.first().map(|s| {
            s.text
                .chars()
                .take(60)
                .collect::<String>()
                .replace('\n', " ")
        });
        println!(
            "{:>4} sections {:>7} chars  {}  first: {:?}",
            outline.sections.len(),
            text,
            page.strip_prefix(&dir).unwrap_or(page).display(),
            first.unwrap_or_default()
        );
    }
    println!(
        "{} pages, {sections} sections, {passages} passages (of at most {} characters), \
         {chars} characters, read in {:.1} ms",
        pages.len(),
        cut.max_chars,
        spent.as_secs_f64() * 1e3
    );
}

/// The reader's time on a large page (14 MiB: 200,000 paragraphs, each in a list item with a
/// link), the kind of size a generated single-page manual reaches.
#[test]
#[ignore = "a measure: prints the time"]
fn read_a_large_page() {
    let mut page = String::from("<html><body><nav><ul>");
    page.push_str(&"<li><a href=#x>Chapter</a></li>".repeat(10_000));
    page.push_str("</ul></nav><div>");
    for i in 0..200_000 {
        page.push_str(&format!(
            "<p>Paragraph {i}, with some words, and a <a href=#p{i}>link</a>.</p>\n"
        ));
    }
    page.push_str("</div></body></html>");
    let started = Instant::now();
    let outline = crate::html::outline(&page).expect("a page within the bound");
    println!(
        "{} MiB page: {} sections, {} characters, read in {:.1} s",
        page.len() >> 20,
        outline.sections.len(),
        outline.sections.iter().map(|s| s.text.len()).sum::<usize>(),
        started.elapsed().as_secs_f64()
    );
}
