//! The documentation a release carries beside README.md, at the paths it has in the repository
//! (so README's links and the docs' links to one another and to their images work where they are
//! installed): every `docs/*.md`, the API's description (`docs/openapi.json`), the example
//! configuration (`docs/turnstile.example.toml`), each shipped plugin's README
//! (`plugins/rag/README.md`), and every file under `docs/` one of those, or README.md, links to
//! by a relative path (the images). A relative link to a file under `docs/` or a shipped plugin's
//! folder that does not exist stops the build: the release would carry a broken link. Links out
//! of those folders (`../wit/retrieval.wit`, the sources) are left as they are.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use anyhow::Context;

/// The documents shipped whatever links to them (relative to the workspace).
const ALWAYS: [&str; 2] = ["docs/openapi.json", "docs/turnstile.example.toml"];

/// The files to ship, relative to `workspace`, in path order. `plugin_dirs` are the shipped
/// plugins' source folders (relative).
pub fn shipped(workspace: &Path, plugin_dirs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: BTreeSet<PathBuf> = ALWAYS.iter().map(PathBuf::from).collect();
    let docs = workspace.join("docs");
    for entry in std::fs::read_dir(&docs).with_context(|| format!("reading {}", docs.display()))? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "md") {
            files.insert(path.strip_prefix(workspace)?.to_owned());
        }
    }
    for dir in plugin_dirs {
        let readme = dir.join("README.md");
        if workspace.join(&readme).is_file() {
            files.insert(readme);
        }
    }
    let mut linked = BTreeSet::new();
    let pages = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "md"))
        .cloned()
        .chain([PathBuf::from("README.md")]);
    for page in pages {
        let text = std::fs::read_to_string(workspace.join(&page))
            .with_context(|| format!("reading {}", page.display()))?;
        let base = page.parent().unwrap_or(Path::new(""));
        for target in links(&text) {
            let Some(path) = resolve(base, &target) else {
                continue;
            };
            let ours = path.starts_with("docs") || plugin_dirs.iter().any(|d| path.starts_with(d));
            if !ours {
                continue;
            }
            anyhow::ensure!(
                workspace.join(&path).is_file(),
                "{} links {target}, and {} is no file: the release would carry a broken link",
                page.display(),
                path.display()
            );
            linked.insert(path);
        }
    }
    files.extend(linked);
    for file in &files {
        anyhow::ensure!(
            workspace.join(file).is_file(),
            "{} is missing: the release ships it",
            file.display()
        );
    }
    Ok(files.into_iter().collect())
}

/// The targets of a Markdown page's links and images (`[text](target)`, `![alt](target "title")`)
/// and of HTML `src="…"` attributes, as written; not in code (fenced blocks, `spans`).
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Outside code spans: the even pieces between backticks.
        let prose: Vec<&str> = line.split('`').step_by(2).collect();
        for piece in prose {
            for (marker, end) in [("](", ')'), ("src=\"", '"')] {
                let mut rest = piece;
                while let Some(at) = rest.find(marker) {
                    rest = &rest[at + marker.len()..];
                    let target = rest[..rest.find(end).unwrap_or(rest.len())].trim();
                    // `(target "title")`, `(<target>)`
                    let target = target.split_whitespace().next().unwrap_or("");
                    found.push(
                        target
                            .trim_start_matches('<')
                            .trim_end_matches('>')
                            .to_owned(),
                    );
                }
            }
        }
    }
    found
}

/// A relative link's file, relative to the workspace (`base`: the linking page's folder); none
/// for an absolute URL, an anchor in the same page, or a path out of the workspace.
fn resolve(base: &Path, target: &str) -> Option<PathBuf> {
    let file = target.split(['#', '?']).next()?;
    if file.is_empty() || target.contains(':') || file.starts_with('/') {
        return None;
    }
    let mut path = PathBuf::new();
    for component in base.join(file).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::ParentDir => {
                if !path.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_read_and_resolved_from_their_page() {
        let text = "See [the gate](GATE.md#queue), ![a plot](admission/a.svg \"title\"), \
                    [the contract](../wit/retrieval.wit), [out](https://example.com/x.md), \
                    [here](#top), <img src=\"dashboard.png\" alt=\"\">, not `f[0](x)`.\n\
                    ```python\nhandlers[name](request)\n```\n";
        let found: Vec<Option<PathBuf>> = links(text)
            .iter()
            .map(|t| resolve(Path::new("docs"), t))
            .collect();
        assert_eq!(
            found,
            [
                Some(PathBuf::from("docs/GATE.md")),
                Some(PathBuf::from("docs/admission/a.svg")),
                Some(PathBuf::from("wit/retrieval.wit")),
                None,
                None,
                Some(PathBuf::from("docs/dashboard.png")),
            ]
        );
        assert_eq!(resolve(Path::new(""), "../outside"), None);
    }

    /// The workspace's docs ship with their images, and every link into them resolves.
    #[test]
    fn the_workspace_docs_ship_whole() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let files = shipped(workspace, &[PathBuf::from("plugins/rag")]).unwrap();
        for expected in [
            "docs/OUTBOUND.md",
            "docs/openapi.json",
            "docs/turnstile.example.toml",
            "docs/dashboard.png",
            "docs/outbound/one-replica.svg",
            "plugins/rag/README.md",
        ] {
            assert!(files.contains(&PathBuf::from(expected)), "{files:?}");
        }
        assert!(files.iter().all(|f| !f.starts_with("wit")), "{files:?}");
    }
}
