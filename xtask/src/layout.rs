//! `cargo xtask layout`: the house rules a compiler does not check, read from the source.
//!
//! - **No import circles between files.** Every path a file names into its own crate (`use`
//!   lines and paths in code: `crate::…`, `super::…`, `self::…`, a child module, or a name a
//!   `use` bound) is resolved to the file that *defines* the item, following re-exports, so a
//!   `mod.rs` that only re-exports is a signpost, not a hub. The files and those edges form a
//!   graph per crate; any strongly connected component of more than one file is a circle. (Crates
//!   cannot form circles: cargo refuses them.) Unit tests (`#[cfg(test)]` items) are left out:
//!   a file's tests may use anything of their crate, as its users do.
//! - **No long files:** a non-test Rust file has at most [`MAX_LINES`] lines before its unit tests
//!   (the first `#[cfg(test)]` at the start of a line).
//! - **Signposts stay signposts:** a `lib.rs` or `mod.rs` that declares child modules holds only
//!   declarations (`mod`, `use`, `pub use`) and inner attributes; a one-file crate is exempt.
//!
//! The unit test at the bottom runs these rules on this workspace, so `cargo test --workspace`
//! fails on a new circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use syn::visit::Visit;

use crate::graph::{one_circle, strongly_connected};

/// Longest non-test Rust file, in lines before its unit tests.
pub const MAX_LINES: usize = 600;

/// What the rules found; empty when the house is in order.
#[derive(Debug, Default)]
pub struct Report {
    /// Each group of files that reach one another through imports (relative to the
    /// workspace): the group, and one circle through it.
    pub circles: Vec<(Vec<PathBuf>, Vec<PathBuf>)>,
    /// Files over [`MAX_LINES`], with their length before unit tests.
    pub long_files: Vec<(PathBuf, usize)>,
    /// `lib.rs`/`mod.rs` files with declarations other than modules and imports, with one item.
    pub busy_signposts: Vec<(PathBuf, String)>,
    /// Files read.
    pub files: usize,
    /// Edges between files found.
    pub edges: usize,
}

impl Report {
    /// Whether every rule holds.
    pub fn is_clean(&self) -> bool {
        self.circles.is_empty() && self.long_files.is_empty() && self.busy_signposts.is_empty()
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} files, {} import edges between files of one crate",
            self.files, self.edges
        )?;
        let shown = |files: &[PathBuf], separator: &str| {
            let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
            names.join(separator)
        };
        for (group, circle) in &self.circles {
            writeln!(
                f,
                "import circle among {} files ({}), e.g. {}",
                group.len(),
                shown(group, ", "),
                shown(circle, " -> ")
            )?;
        }
        for (file, lines) in &self.long_files {
            writeln!(
                f,
                "{}: {lines} lines before its unit tests (at most {MAX_LINES})",
                file.display()
            )?;
        }
        for (file, item) in &self.busy_signposts {
            writeln!(
                f,
                "{}: declares child modules, so it should only declare and re-export; it also has {item}",
                file.display()
            )?;
        }
        Ok(())
    }
}

/// Checks every crate root (`src/lib.rs`, `src/main.rs`) under `crate_dirs`; paths in the report
/// are relative to `workspace`.
pub fn check(workspace: &Path, crate_dirs: &[PathBuf]) -> anyhow::Result<Report> {
    let mut report = Report::default();
    for dir in crate_dirs {
        for root in ["src/lib.rs", "src/main.rs"] {
            let root = dir.join(root);
            if root.is_file() {
                check_crate(workspace, &root, &mut report)?;
            }
        }
    }
    Ok(report)
}

/// Every crate folder of the workspace (`cargo metadata`'s members: not the plugin project
/// templates in `kit/`, which are no members).
pub fn workspace_crates(workspace: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(workspace)
        .output()
        .context("run cargo metadata")?;
    anyhow::ensure!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let mut crates: Vec<PathBuf> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["manifest_path"].as_str())
        .filter_map(|manifest| Path::new(manifest).parent().map(Path::to_owned))
        .collect();
    crates.sort();
    Ok(crates)
}

/// One module of a crate.
#[derive(Debug, Default)]
struct Module {
    /// Index of the file that holds it.
    file: usize,
    parent: Option<usize>,
    children: BTreeMap<String, usize>,
    /// Names of items defined in the module itself.
    items: BTreeSet<String>,
    /// Names a `use` binds in the module, with the path they stand for (as written).
    aliases: BTreeMap<String, Vec<String>>,
    /// Paths named in the module (use lines and code), as written.
    references: Vec<Vec<String>>,
}

struct Crate {
    files: Vec<PathBuf>,
    modules: Vec<Module>,
}

fn check_crate(workspace: &Path, root: &Path, report: &mut Report) -> anyhow::Result<()> {
    let mut krate = Crate {
        files: Vec::new(),
        modules: Vec::new(),
    };
    load_file(&mut krate, root, None, None, report)?;
    let mut edges: BTreeSet<(usize, usize)> = BTreeSet::new();
    for (index, module) in krate.modules.iter().enumerate() {
        for reference in &module.references {
            if let Some(target) = resolve(&krate, index, reference, 0)
                && target != module.file
            {
                edges.insert((module.file, target));
            }
        }
    }
    report.files += krate.files.len();
    report.edges += edges.len();
    let relative = |i: usize| {
        krate.files[i]
            .strip_prefix(workspace)
            .unwrap_or(&krate.files[i])
            .to_owned()
    };
    for component in strongly_connected(krate.files.len(), &edges) {
        if component.len() > 1 {
            let mut group: Vec<PathBuf> = component.iter().copied().map(relative).collect();
            group.sort();
            let circle = one_circle(&component, &edges)
                .into_iter()
                .map(relative)
                .collect();
            report.circles.push((group, circle));
        }
    }
    Ok(())
}

/// Reads `path` as module `parent`'s child `name` (the crate root when `parent` is `None`).
fn load_file(
    krate: &mut Crate,
    path: &Path,
    parent: Option<usize>,
    name: Option<&str>,
    report: &mut Report,
) -> anyhow::Result<usize> {
    let source =
        std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let before_tests = source
        .lines()
        .position(|l| l.starts_with("#[cfg(test)]"))
        .unwrap_or_else(|| source.lines().count());
    if before_tests > MAX_LINES {
        report.long_files.push((path.to_owned(), before_tests));
    }
    let parsed = syn::parse_file(&source).with_context(|| format!("parse {}", path.display()))?;
    let file = krate.files.len();
    krate.files.push(path.to_owned());
    let module = new_module(krate, file, parent, name);
    let is_signpost = matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some("lib.rs" | "mod.rs" | "main.rs")
    );
    let declares_files = parsed
        .items
        .iter()
        .any(|i| matches!(i, syn::Item::Mod(m) if m.content.is_none()));
    if is_signpost
        && declares_files
        && path.file_name().is_some_and(|n| n != "main.rs")
        && let Some(item) = parsed.items.iter().find(|i| !is_declaration(i))
    {
        report
            .busy_signposts
            .push((path.to_owned(), describe(item)));
    }
    // Where this file's `mod x;` children live: beside a lib.rs/mod.rs, else in a folder named
    // after the file.
    let dir = if is_signpost {
        path.parent().map(Path::to_owned).unwrap_or_default()
    } else {
        path.with_extension("")
    };
    load_items(krate, module, &parsed.items, &dir, report)?;
    Ok(module)
}

fn new_module(krate: &mut Crate, file: usize, parent: Option<usize>, name: Option<&str>) -> usize {
    let index = krate.modules.len();
    krate.modules.push(Module {
        file,
        parent,
        ..Module::default()
    });
    if let (Some(parent), Some(name)) = (parent, name) {
        krate.modules[parent]
            .children
            .insert(name.to_owned(), index);
    }
    index
}

fn load_items(
    krate: &mut Crate,
    module: usize,
    items: &[syn::Item],
    dir: &Path,
    report: &mut Report,
) -> anyhow::Result<()> {
    for item in items {
        if is_test_only(item) {
            continue;
        }
        match item {
            syn::Item::Mod(m) => {
                let name = m.ident.to_string();
                match &m.content {
                    Some((_, inner)) => {
                        let file = krate.modules[module].file;
                        let child = new_module(krate, file, Some(module), Some(&name));
                        load_items(krate, child, inner, &dir.join(&name), report)?;
                    }
                    None => {
                        let flat = dir.join(format!("{name}.rs"));
                        let nested = dir.join(&name).join("mod.rs");
                        let path = if flat.is_file() { flat } else { nested };
                        load_file(krate, &path, Some(module), Some(&name), report)?;
                    }
                }
            }
            syn::Item::Use(u) => {
                let mut prefix = Vec::new();
                collect_use(&u.tree, &mut prefix, &mut krate.modules[module]);
            }
            other => {
                if let Some(name) = item_name(other) {
                    krate.modules[module].items.insert(name);
                }
                let mut paths = PathCollector::default();
                paths.visit_item(other);
                for (alias, path) in paths.uses {
                    krate.modules[module].aliases.entry(alias).or_insert(path);
                }
                krate.modules[module].references.extend(paths.paths);
            }
        }
    }
    Ok(())
}

/// Records what a `use` tree binds and names.
fn collect_use(tree: &syn::UseTree, prefix: &mut Vec<String>, module: &mut Module) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            collect_use(&p.tree, prefix, module);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix.clone();
            if name != "self" {
                path.push(name.clone());
            }
            let bound = if name == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                name
            };
            module.aliases.insert(bound, path.clone());
            module.references.push(path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            module.aliases.insert(r.rename.to_string(), path.clone());
            module.references.push(path);
        }
        syn::UseTree::Glob(_) => {
            // `use super::*` (unit tests): the whole parent module is named.
            module.references.push(prefix.clone());
        }
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                collect_use(tree, prefix, module);
            }
        }
    }
}

/// Paths of two or more segments named in code, and `use` lines inside bodies.
#[derive(Default)]
struct PathCollector {
    paths: Vec<Vec<String>>,
    uses: Vec<(String, Vec<String>)>,
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            self.paths
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut module = Module::default();
        collect_use(&item.tree, &mut Vec::new(), &mut module);
        self.paths.extend(module.references);
        self.uses.extend(module.aliases);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Macro input is tokens, not syntax (`tracing::info!(…)`, `bindgen!`): take its paths.
        paths_in_tokens(mac.tokens.clone(), &mut self.paths);
        syn::visit::visit_macro(self, mac);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        // `#[openapi(paths(super::retrieve::retrieve))]` names handlers in an attribute.
        if let syn::Meta::List(list) = &attr.meta {
            paths_in_tokens(list.tokens.clone(), &mut self.paths);
        }
        syn::visit::visit_attribute(self, attr);
    }
}

/// Every `a::b(::c…)` run of identifiers in `tokens`, groups included.
fn paths_in_tokens(tokens: proc_macro2::TokenStream, paths: &mut Vec<Vec<String>>) {
    use proc_macro2::TokenTree;
    let mut current: Vec<String> = Vec::new();
    // Colons seen since the last identifier: two make a separator.
    let mut colons = 0;
    fn flush(current: &mut Vec<String>, paths: &mut Vec<Vec<String>>) {
        if current.len() > 1 {
            paths.push(std::mem::take(current));
        }
        current.clear();
    }
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => {
                if colons != 2 {
                    flush(&mut current, paths);
                }
                current.push(ident.to_string());
                colons = 0;
            }
            TokenTree::Punct(p) if p.as_char() == ':' && !current.is_empty() && colons < 2 => {
                colons += 1;
            }
            TokenTree::Group(group) => {
                flush(&mut current, paths);
                colons = 0;
                paths_in_tokens(group.stream(), paths);
            }
            TokenTree::Punct(_) | TokenTree::Literal(_) => {
                flush(&mut current, paths);
                colons = 0;
            }
        }
    }
    flush(&mut current, paths);
}

/// Whether `item` is compiled for unit tests only (`#[cfg(test)]`).
fn is_test_only(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        _ => return false,
    };
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|arg| arg == "test")
    })
}

fn item_name(item: &syn::Item) -> Option<String> {
    Some(match item {
        syn::Item::Const(i) => i.ident.to_string(),
        syn::Item::Enum(i) => i.ident.to_string(),
        syn::Item::Fn(i) => i.sig.ident.to_string(),
        syn::Item::Static(i) => i.ident.to_string(),
        syn::Item::Struct(i) => i.ident.to_string(),
        syn::Item::Trait(i) => i.ident.to_string(),
        syn::Item::Type(i) => i.ident.to_string(),
        syn::Item::Union(i) => i.ident.to_string(),
        syn::Item::Macro(i) => i.ident.as_ref()?.to_string(),
        _ => return None,
    })
}

fn is_declaration(item: &syn::Item) -> bool {
    matches!(
        item,
        syn::Item::Mod(m) if m.content.is_none()
    ) || matches!(item, syn::Item::Use(_) | syn::Item::ExternCrate(_))
}

fn describe(item: &syn::Item) -> String {
    match item_name(item) {
        Some(name) => format!("an item `{name}`"),
        None => "an item that is no declaration".to_owned(),
    }
}

/// The file that defines what `path` (as written in `module`) names, if it is in this crate.
fn resolve(krate: &Crate, module: usize, path: &[String], depth: usize) -> Option<usize> {
    if depth > 16 || path.is_empty() {
        return None;
    }
    let mut current = module;
    let mut rest = path;
    match rest[0].as_str() {
        "crate" => {
            current = 0;
            rest = &rest[1..];
        }
        "self" => rest = &rest[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                current = krate.modules[current].parent?;
                rest = &rest[1..];
            }
        }
        first => {
            let here = &krate.modules[module];
            if let Some(&child) = here.children.get(first) {
                current = child;
                rest = &rest[1..];
            } else if let Some(alias) = here.aliases.get(first) {
                if alias.len() == 1 && alias[0] == first {
                    return None;
                }
                let mut expanded = alias.clone();
                expanded.extend_from_slice(&rest[1..]);
                return resolve(krate, module, &expanded, depth + 1);
            } else if path.len() > 1 && here.items.contains(first) {
                // `Type::method` or `Enum::Variant` of an item defined here.
                return Some(here.file);
            } else {
                // std, another crate, a generic, or a local name.
                return None;
            }
        }
    }
    walk(krate, current, rest, depth)
}

/// From module `current`, follow `rest` down to the file of the item it names.
fn walk(krate: &Crate, mut current: usize, rest: &[String], depth: usize) -> Option<usize> {
    for (i, segment) in rest.iter().enumerate() {
        let here = &krate.modules[current];
        if let Some(&child) = here.children.get(segment) {
            current = child;
            continue;
        }
        if here.items.contains(segment) {
            return Some(here.file);
        }
        if let Some(alias) = here.aliases.get(segment) {
            let mut expanded = alias.clone();
            expanded.extend_from_slice(&rest[i + 1..]);
            return resolve(krate, current, &expanded, depth + 1)
                .or(Some(here.file).filter(|_| is_external(alias)));
        }
        // Generated by a macro (bindings), a variant, or a glob: the module's own file.
        return Some(here.file);
    }
    // The path names a module (`use super::bindings;`, `use super::*`): its file, unless it is
    // a signpost that only re-exports (naming it then names nothing in particular).
    let here = &krate.modules[current];
    (!here.items.is_empty()).then_some(here.file)
}

/// Whether an alias points outside the crate (then the re-exporting file is the end of the road).
fn is_external(alias: &[String]) -> bool {
    !matches!(
        alias.first().map(String::as_str),
        Some("crate" | "self" | "super")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask/ is in the workspace")
            .to_owned()
    }

    /// The house rules hold on this workspace: no import circle, no long file, no busy signpost.
    #[test]
    fn the_workspace_keeps_the_house_rules() {
        let workspace = workspace();
        let report = check(&workspace, &workspace_crates(&workspace).unwrap()).unwrap();
        assert!(report.files > 100, "read too few files: {report}");
        assert!(report.is_clean(), "{report}");
    }

    /// The checker sees a circle through a re-export, and none where a signpost only re-exports.
    #[test]
    fn circles_are_found_through_re_exports() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("http")).unwrap();
        std::fs::write(src.join("lib.rs"), "mod http;\npub use http::App;\n").unwrap();
        std::fs::write(
            src.join("http/mod.rs"),
            "mod app;\nmod state;\npub use app::App;\npub use state::State;\n",
        )
        .unwrap();
        // state.rs -> app.rs (through mod.rs's re-export) and app.rs -> state.rs.
        std::fs::write(
            src.join("http/app.rs"),
            "use super::State;\npub struct App(State);\n",
        )
        .unwrap();
        std::fs::write(
            src.join("http/state.rs"),
            "pub struct State;\nfn f() -> super::App { todo!() }\n",
        )
        .unwrap();
        let report = check(dir.path(), &[dir.path().to_owned()]).unwrap();
        assert_eq!(report.circles.len(), 1, "{report}");
        let names: BTreeSet<String> = report.circles[0]
            .0
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, BTreeSet::from(["app.rs".into(), "state.rs".into()]));

        // Without the way back, no circle.
        std::fs::write(src.join("http/state.rs"), "pub struct State;\n").unwrap();
        let report = check(dir.path(), &[dir.path().to_owned()]).unwrap();
        assert!(report.is_clean(), "{report}");
        assert!(report.edges >= 1, "{report}");

        // A signpost with logic is reported.
        std::fs::write(
            src.join("http/mod.rs"),
            "mod app;\nmod state;\npub use app::App;\npub use state::State;\npub fn route() {}\n",
        )
        .unwrap();
        let report = check(dir.path(), &[dir.path().to_owned()]).unwrap();
        assert_eq!(report.busy_signposts.len(), 1, "{report}");
    }
}
