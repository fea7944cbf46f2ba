//! The guest components, found where the workspace declares them and built: the workspace's
//! crates under `plugins/` and `fixtures/` whose library is a `cdylib` (Rust, built by a nested
//! cargo) and the guests in other languages (`turnstile_guest_build::LANGUAGE_GUESTS`, by their
//! pinned toolchains). `cargo xtask plugins` builds them all; a release ships the plugins, those
//! whose source is under `plugins/` — never a test fixture (`fixtures/`: escape, fault, hostile,
//! fetch, delay, cpu, hostcalls…), which is there to misbehave.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

/// Which guests to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// Every plugin and fixture (`cargo xtask plugins`).
    All,
    /// The plugins a release ships: those under `plugins/`.
    Shipped,
}

/// The folder of the shipped plugins' sources (relative to the workspace).
const SHIPPED_DIR: &str = "plugins";

/// One built guest.
#[derive(Debug, Clone)]
pub struct Built {
    /// Its name: the component is shipped and served as `NAME.wasm`.
    pub name: String,
    /// The built component.
    pub path: PathBuf,
    /// Its source folder, relative to the workspace (`plugins/rag`).
    pub dir: PathBuf,
    /// Its language when it is not Rust (none: a crate of the workspace, whose dependencies'
    /// licences are in `cargo metadata`).
    pub language: Option<turnstile_guest_build::Language>,
}

/// Builds the guests `which` names; `metadata` is `cargo metadata`'s (with or without
/// dependencies) of the workspace at `workspace`, whose target directory is `target_dir`. In
/// name order.
pub fn build(
    cargo: &Path,
    metadata: &Value,
    workspace: &Path,
    target_dir: &Path,
    which: Which,
) -> anyhow::Result<Vec<Built>> {
    let (crates, languages) = select(metadata, workspace, which)?;
    anyhow::ensure!(
        !crates.is_empty(),
        "no guest crates found under plugins/ or fixtures/"
    );

    let names: Vec<&str> = crates.iter().map(|(name, _)| name.as_str()).collect();
    let mut built: Vec<Built> =
        turnstile_guest_build::build(cargo, workspace, &names, &target_dir.join("guests"))?
            .into_iter()
            .map(|guest| Built {
                dir: crates
                    .iter()
                    .find(|(name, _)| *name == guest.name)
                    .map(|(_, dir)| dir.clone())
                    .unwrap_or_default(),
                name: guest.name,
                path: guest.path,
                language: None,
            })
            .collect();
    for guest in languages {
        let component = turnstile_guest_build::build_language(
            workspace,
            guest,
            &target_dir.join("guests/lang"),
        )
        .with_context(|| format!("building {}", guest.name))?;
        built.push(Built {
            name: component.name,
            path: component.path,
            dir: PathBuf::from(guest.dir),
            language: Some(guest.language),
        });
    }
    built.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(built)
}

/// What `which` names: the Rust guests (name, folder) and the guests in other languages.
type Selected = (
    Vec<(String, PathBuf)>,
    Vec<&'static turnstile_guest_build::LanguageGuest>,
);

fn select(metadata: &Value, workspace: &Path, which: Which) -> anyhow::Result<Selected> {
    let wanted = |dir: &Path| match which {
        Which::All => dir.starts_with("plugins") || dir.starts_with("fixtures"),
        Which::Shipped => dir.starts_with(SHIPPED_DIR),
    };
    let crates = rust_guests(metadata, workspace)?
        .into_iter()
        .filter(|(_, dir)| wanted(dir))
        .collect();
    let languages = turnstile_guest_build::LANGUAGE_GUESTS
        .iter()
        .filter(|guest| wanted(Path::new(guest.dir)))
        .collect();
    Ok((crates, languages))
}

/// The workspace's packages under `plugins/` or `fixtures/` whose library is a `cdylib`: the
/// Rust guests, by name, each with its folder relative to the workspace. In name order.
fn rust_guests(metadata: &Value, workspace: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let members: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .context("cargo metadata has no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut guests = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        if !package["id"]
            .as_str()
            .is_some_and(|id| members.contains(&id))
        {
            continue;
        }
        let manifest = PathBuf::from(text(package, "manifest_path")?);
        let Some(dir) = manifest
            .parent()
            .and_then(|dir| dir.strip_prefix(workspace).ok())
        else {
            continue;
        };
        let cdylib = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| {
                t["crate_types"]
                    .as_array()
                    .is_some_and(|types| types.iter().any(|c| c == "cdylib"))
            });
        if (dir.starts_with("plugins") || dir.starts_with("fixtures")) && cdylib {
            guests.push((text(package, "name")?.to_owned(), dir.to_owned()));
        }
    }
    guests.sort();
    Ok(guests)
}

fn text<'a>(value: &'a Value, key: &str) -> anyhow::Result<&'a str> {
    value[key]
        .as_str()
        .with_context(|| format!("cargo metadata has no {key}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped plugins are the workspace's `plugins/` guests, and no fixture is among them.
    #[test]
    fn the_release_ships_the_plugins_and_no_fixture() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = std::process::Command::new(cargo)
            .args(["metadata", "--no-deps", "--format-version", "1"])
            .current_dir(workspace)
            .output()
            .unwrap();
        assert!(output.status.success());
        let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
        let names = |which| {
            let (crates, languages) = select(&metadata, workspace, which).unwrap();
            let mut names: Vec<String> = crates.into_iter().map(|(name, _)| name).collect();
            names.extend(languages.iter().map(|guest| guest.name.to_owned()));
            names
        };
        let shipped = names(Which::Shipped);
        let all = names(Which::All);
        for plugin in [
            "rag",
            "rag-py",
            "retrieval",
            "retrieval-hybrid",
            "retrieval-py",
            "retrieval-js",
        ] {
            assert!(shipped.iter().any(|n| n == plugin), "{shipped:?}");
        }
        for fixture in [
            "escape",
            "fault",
            "hostile",
            "fetch",
            "delay",
            "cpu",
            "hostcalls",
        ] {
            assert!(all.iter().any(|n| n == fixture), "{all:?}");
            assert!(
                !shipped.iter().any(|n| n.starts_with(fixture)),
                "{shipped:?}"
            );
        }
        // The library the plugins share is no guest.
        assert!(!all.iter().any(|n| n == "retrieval-query"), "{all:?}");
    }
}
