//! The project's chores.
//!
//! - `cargo xtask plugins [--out DIR]` builds every guest component of the workspace — the
//!   retrieval plugins in `plugins/` (Rust, Python, JavaScript) and the trusted fixtures in
//!   `fixtures/` — and copies each to `DIR/NAME.wasm` (default `target/plugins/`), the stable path
//!   operators, `turnstile drive`, the benchmarks and the docs use. Python and JavaScript need the
//!   pinned toolchains: `plugins/toolchains/install.sh`.
//! - `cargo xtask dist [--profile release|dev] [--out DIR]` builds the release a person installs:
//!   the tarball and the Debian package, into `DIR` (default `target/dist/`), with the plugins
//!   under `plugins/` (built as `plugins` builds them, no fixture) and the docs ([`dist`]).
//! - `cargo xtask layout` checks the house rules the compiler does not: no import circle between
//!   files, no file over 600 lines before its unit tests, signposts (`lib.rs`, `mod.rs`) that only
//!   declare and re-export ([`layout`]).

mod deb;
mod dist;
mod docs;
mod exec;
mod graph;
mod guests;
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
    /// (turnstile-VERSION-TRIPLE.tar.gz) and the Debian package (turnstile_VERSION_ARCH.deb),
    /// each with the binary, the plugins of plugins/ (built here) and the docs.
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
    let built = guests::build(
        &cargo,
        &metadata,
        &workspace,
        &target_dir,
        guests::Which::All,
    )?;
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
