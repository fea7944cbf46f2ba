//! The project's chores.
//!
//! - `cargo xtask plugins [--out DIR]` builds every guest component of the workspace — the
//!   retrieval plugins in `plugins/` (Rust, Python, JavaScript) and the trusted fixtures in
//!   `fixtures/` — and copies each to `DIR/NAME.wasm` (default `target/plugins/`), the stable path
//!   operators, `turnstile drive`, the benchmarks and the docs use. Python and JavaScript need the
//!   pinned toolchains: `plugins/toolchains/install.sh`.
//! - `cargo xtask dist [--profile release|dev] [--out DIR]` builds the release a person installs:
//!   the tarball and the Debian package, into `DIR` (default `target/dist/`) ([`dist`]).
//! - `cargo xtask layout` checks the house rules the compiler does not: no import circle between
//!   files, no file over 600 lines before its unit tests, signposts (`lib.rs`, `mod.rs`) that only
//!   declare and re-export ([`layout`]).

mod deb;
mod dist;
mod exec;
mod graph;
mod layout;
mod licences;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::Value;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "turnstile's project chores")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Build every plugin and fixture component into DIR (default: target/plugins).
    Plugins {
        /// Where to put `NAME.wasm` (created if missing).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Build the release into DIR (default: target/dist): the tarball
    /// (turnstile-VERSION-TRIPLE.tar.gz) and the Debian package (turnstile_VERSION_ARCH.deb).
    Dist {
        /// The cargo profile of the binary: `dev` packages the tests' build (for CI's check of
        /// the package), `release` what is published.
        #[arg(long, value_enum, default_value = "release")]
        profile: dist::Profile,
        /// Where to write the archives (created if missing).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check the house rules: no import circles between files, no long files, signposts that
    /// only declare and re-export (exits non-zero when one is broken).
    Layout,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().task {
        Task::Plugins { out } => plugins(out),
        Task::Dist { profile, out } => dist::run(profile, out),
        Task::Layout => {
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .context("xtask/ is in the workspace")?
                .to_owned();
            let report = layout::check(&workspace, &layout::workspace_crates(&workspace)?)?;
            print!("{report}");
            anyhow::ensure!(report.is_clean(), "the house rules are broken (above)");
            println!("no import circles, no long files, signposts only declare");
            Ok(())
        }
    }
}

fn plugins(out: Option<PathBuf>) -> anyhow::Result<()> {
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let metadata = metadata(&cargo)?;
    let workspace = PathBuf::from(str_field(&metadata, "workspace_root")?);
    let target_dir = PathBuf::from(str_field(&metadata, "target_directory")?);
    let guests = guest_packages(&metadata, &workspace)?;
    anyhow::ensure!(
        !guests.is_empty(),
        "no guest crates found under plugins/ or fixtures/"
    );
    let names: Vec<&str> = guests.iter().map(String::as_str).collect();
    let built =
        turnstile_guest_build::build(&cargo, &workspace, &names, &target_dir.join("guests"))?;
    // The guests in other languages, by their pinned toolchains.
    let mut built = built;
    for guest in turnstile_guest_build::LANGUAGE_GUESTS {
        built.push(
            turnstile_guest_build::build_language(
                &workspace,
                guest,
                &target_dir.join("guests/lang"),
            )
            .with_context(|| format!("building {}", guest.name))?,
        );
    }
    let out = out.unwrap_or_else(|| target_dir.join("plugins"));
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    for guest in built {
        let dest = out.join(format!("{}.wasm", guest.name));
        std::fs::copy(&guest.path, &dest)
            .with_context(|| format!("copy {} to {}", guest.path.display(), dest.display()))?;
        println!("{}", dest.display());
    }
    Ok(())
}

fn metadata(cargo: &Path) -> anyhow::Result<Value> {
    let output = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1", "--locked"])
        .output()
        .context("run cargo metadata")?;
    anyhow::ensure!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}

fn str_field<'a>(value: &'a Value, key: &str) -> anyhow::Result<&'a str> {
    value[key]
        .as_str()
        .with_context(|| format!("cargo metadata has no {key}"))
}

/// Workspace packages under `plugins/` or `fixtures/` whose library is a `cdylib`: the guests.
fn guest_packages(metadata: &Value, workspace: &Path) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let manifest = PathBuf::from(str_field(package, "manifest_path")?);
        let under = |dir: &str| manifest.starts_with(workspace.join(dir));
        let cdylib = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| {
                t["crate_types"]
                    .as_array()
                    .is_some_and(|types| types.iter().any(|c| c == "cdylib"))
            });
        if (under("plugins") || under("fixtures")) && cdylib {
            names.push(str_field(package, "name")?.to_owned());
        }
    }
    names.sort();
    Ok(names)
}
