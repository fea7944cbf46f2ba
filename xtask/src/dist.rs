//! `cargo xtask dist [--profile release|dev] [--out DIR]`: the release a person installs, built by
//! one command into `DIR` (default `target/dist/`):
//!
//! - `turnstile-VERSION-TRIPLE.tar.gz`: the binary, README, LICENSE, the third-party licence
//!   summary, the example configuration, the systemd unit, shell completions, man pages, the
//!   shipped plugins (`plugins/NAME.wasm`) and the docs (`docs/`, [`crate::docs`]);
//! - `turnstile_VERSION_ARCH.deb` ([`crate::deb`]): the same, where Debian puts them (the
//!   plugins in `/usr/share/turnstile/plugins/`, the docs in `/usr/share/doc/turnstile/`).
//!
//! The plugins are built here, as `cargo xtask plugins` builds them ([`crate::guests`]: those
//! under `plugins/`, no test fixture), so the command works on a fresh checkout.
//!
//! `--profile dev` packages the dev build (what CI's tests already compiled: a release build
//! costs CI minutes) and compresses fast; `release` (the default) is what is published.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use serde_json::Value;

use crate::{deb, docs, exec, guests, licences};

/// The cargo profile the binary is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// Optimised, without debug info: what is published.
    Release,
    /// The dev build the tests use (CI packages it to test the package, not to ship it).
    Dev,
}

impl Profile {
    fn name(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Dev => "dev",
        }
    }
}

/// The plugins the binary embeds (their crates' licences are in the binary too).
const EMBEDDED_PLUGINS: [&str; 2] = ["retrieval-hybrid", "retrieval"];

/// The line of the example configuration the package's copy sets, and what it becomes.
const CACHE_LINE: (&str, &str) = (
    "# cache-dir = \"/var/cache/turnstile\"",
    "cache-dir = \"/var/cache/turnstile\"",
);

/// What the package's `/etc/turnstile/turnstile.toml` says before the example configuration.
const CONFIG_HEADER: &str = "\
# /etc/turnstile/turnstile.toml: what turnstile.service serves with (`turnstile serve --config
# /etc/turnstile/turnstile.toml`). The package sets `cache-dir` below (the unit's
# CacheDirectory); everything else is the defaults. The plugins the package ships are in
# /usr/share/turnstile/plugins/ (plugin = \"/usr/share/turnstile/plugins/rag.wasm\"), its docs in
# /usr/share/doc/turnstile/; how to give the service a model key that no plugin holds:
# /usr/share/doc/turnstile/docs/OUTBOUND.md, \"A key for the service\".
#
";

/// Builds the tarball and the .deb; prints their paths.
pub fn run(profile: Profile, out: Option<PathBuf>) -> anyhow::Result<()> {
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let triple = host_triple()?;
    let arch = debian_arch(&triple)?;
    let metadata: Value = serde_json::from_slice(&exec::output(Command::new(&cargo).args([
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--filter-platform",
        &triple,
    ]))?)?;
    let workspace = PathBuf::from(text(&metadata, "workspace_root")?);
    let target_dir = PathBuf::from(text(&metadata, "target_directory")?);
    let version = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "turnstile-cli")
        .and_then(|p| p["version"].as_str())
        .context("cargo metadata has no turnstile-cli")?
        .to_owned();
    let binary = build(&cargo, profile)?;
    let plugins = guests::build(
        &cargo,
        &metadata,
        &workspace,
        &target_dir,
        guests::Which::Shipped,
    )?;
    let plugin_dirs: Vec<PathBuf> = plugins.iter().map(|p| p.dir.clone()).collect();
    let docs = docs::shipped(&workspace, &plugin_dirs)?;
    let out = out.unwrap_or_else(|| target_dir.join("dist"));
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let epoch = source_date_epoch(&workspace);

    let licences = licences_of(&cargo, &metadata, &plugins, &version)?;

    // The tarball's folder, which also holds what the .deb takes (completions, man pages).
    let name = format!("turnstile-{version}-{triple}");
    let stage = out.join(&name);
    if stage.exists() {
        fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    fs::create_dir_all(stage.join("systemd"))?;
    fs::create_dir_all(stage.join("completions"))?;
    let copy = |from: &Path, to: &Path| {
        fs::copy(from, to)
            .with_context(|| format!("copying {} to {}", from.display(), to.display()))
            .map(drop)
    };
    copy(&binary, &stage.join("turnstile"))?;
    copy(&workspace.join("README.md"), &stage.join("README.md"))?;
    copy(&workspace.join("LICENSE"), &stage.join("LICENSE"))?;
    fs::write(stage.join("THIRD-PARTY-LICENSES.md"), &licences)?;
    copy(
        &workspace.join("docs/turnstile.example.toml"),
        &stage.join("turnstile.example.toml"),
    )?;
    let packaging = workspace.join("packaging");
    copy(
        &packaging.join("turnstile.service"),
        &stage.join("systemd/turnstile.service"),
    )?;
    let completions = ["bash", "zsh", "fish"].map(|shell| {
        let file = match shell {
            "zsh" => "_turnstile".to_owned(),
            _ => format!("turnstile.{shell}"),
        };
        stage.join("completions").join(file)
    });
    for (shell, path) in ["bash", "zsh", "fish"].iter().zip(&completions) {
        let script = exec::output(Command::new(&binary).args(["completions", shell]))?;
        fs::write(path, script)?;
    }
    let mut staged_plugins = Vec::new();
    for plugin in &plugins {
        let to = stage.join("plugins").join(format!("{}.wasm", plugin.name));
        fs::create_dir_all(stage.join("plugins"))?;
        copy(&plugin.path, &to)?;
        staged_plugins.push(to);
    }
    for doc in &docs {
        let to = stage.join(doc);
        fs::create_dir_all(to.parent().context("a doc has a folder")?)?;
        copy(&workspace.join(doc), &to)?;
    }
    let man_dir = stage.join("man");
    let listed = exec::output(Command::new(&binary).arg("man").arg("--out").arg(&man_dir))?;
    let man: Vec<PathBuf> = String::from_utf8(listed)?
        .lines()
        .map(PathBuf::from)
        .collect();
    anyhow::ensure!(!man.is_empty(), "`turnstile man --out` wrote no page");

    let level = match profile {
        Profile::Release => "-9n",
        Profile::Dev => "-1n",
    };
    let tarball = out.join(format!("{name}.tar.gz"));
    exec::output(
        Command::new("tar")
            .arg("--sort=name")
            .args(["--owner=0", "--group=0", "--numeric-owner"])
            .arg(format!("--mtime=@{epoch}"))
            .arg(format!("--use-compress-program=gzip {level}"))
            .arg("-C")
            .arg(&out)
            .arg("-cf")
            .arg(&tarball)
            .arg(&name),
    )?;

    let config = fs::read_to_string(workspace.join("docs/turnstile.example.toml"))?;
    anyhow::ensure!(
        config.lines().any(|l| l == CACHE_LINE.0),
        "docs/turnstile.example.toml no longer has the line `{}` the package's configuration sets",
        CACHE_LINE.0
    );
    let config = format!(
        "{CONFIG_HEADER}{}",
        config.replace(CACHE_LINE.0, CACHE_LINE.1)
    );
    let compression: &[&str] = match profile {
        Profile::Release => &["-Zxz"],
        Profile::Dev => &["-Zgzip", "-z1"],
    };
    let deb = deb::build(
        &deb::Inputs {
            version: &version,
            arch,
            binary: &binary,
            config: &config,
            packaging: &packaging,
            readme: &workspace.join("README.md"),
            docs: &docs
                .iter()
                .map(|doc| (doc.clone(), stage.join(doc)))
                .collect::<Vec<_>>(),
            plugins: &staged_plugins,
            licences: &licences,
            man: &man,
            completions: [&completions[0], &completions[1], &completions[2]],
            compression,
            epoch,
        },
        &out.join("deb-root"),
        &out,
    )?;
    fs::remove_dir_all(out.join("deb-root"))?;
    for file in [&tarball, &deb] {
        let bytes = fs::metadata(file)?.len();
        println!("{} ({:.1} MB)", file.display(), bytes as f64 / 1e6);
    }
    Ok(())
}

/// The third-party licence summary of the binary (its crates for the machine's platform) and of
/// the shipped plugins (the Rust ones' crates for `wasm32-wasip2`, the others' runtimes).
fn licences_of(
    cargo: &Path,
    host: &Value,
    plugins: &[guests::Built],
    version: &str,
) -> anyhow::Result<String> {
    let guest: Value = serde_json::from_slice(&exec::output(Command::new(cargo).args([
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--filter-platform",
        turnstile_guest_build::TARGET,
    ]))?)?;
    let named = |language: Option<turnstile_guest_build::Language>| -> Vec<&str> {
        plugins
            .iter()
            .filter(|p| p.language == language)
            .map(|p| p.name.as_str())
            .collect()
    };
    let rust = named(None);
    let mut guest_roots = rust.clone();
    for embedded in EMBEDDED_PLUGINS {
        if !guest_roots.contains(&embedded) {
            guest_roots.push(embedded);
        }
    }
    licences::summary(
        &[
            licences::Build {
                metadata: host,
                roots: &["turnstile-cli"],
            },
            licences::Build {
                metadata: &guest,
                roots: &guest_roots,
            },
        ],
        &licences::Plugins {
            embedded: &EMBEDDED_PLUGINS,
            rust: &rust,
            python: &named(Some(turnstile_guest_build::Language::Python)),
            javascript: &named(Some(turnstile_guest_build::Language::JavaScript)),
        },
        version,
    )
}

/// `cargo build` of the `turnstile` binary with `profile`, features resolved as for the whole
/// workspace; its path. The dev build is of every target, as CI's lint step and the tests build
/// them: dev-dependencies change some features, and so the binary, and a dev package is for
/// checking the binary the tests checked (in CI, this build finds everything built).
fn build(cargo: &Path, profile: Profile) -> anyhow::Result<PathBuf> {
    let targets: &[&str] = match profile {
        Profile::Release => &["--bin", "turnstile"],
        Profile::Dev => &["--all-targets"],
    };
    let mut child = Command::new(cargo)
        .args(["build", "--workspace", "--locked"])
        .args(targets)
        .args(["--profile", profile.name()])
        .arg("--message-format=json-render-diagnostics")
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run cargo build")?;
    let mut executable = None;
    for line in BufReader::new(child.stdout.take().context("cargo's stdout")?).lines() {
        let message: Value = serde_json::from_str(&line?)?;
        // The binary, not the test harness of its unit tests (`--all-targets` builds both).
        if message["reason"] == "compiler-artifact"
            && message["target"]["name"] == "turnstile"
            && message["target"]["kind"] == serde_json::json!(["bin"])
            && message["profile"]["test"] == false
            && let Some(path) = message["executable"].as_str()
        {
            executable = Some(PathBuf::from(path));
        }
    }
    let status = child.wait()?;
    anyhow::ensure!(status.success(), "cargo build failed ({status})");
    executable.context("cargo build named no turnstile executable")
}

/// The target triple of the machine (rustc's host): the binary is built for it.
fn host_triple() -> anyhow::Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = String::from_utf8(exec::output(Command::new(rustc).arg("-vV"))?)?;
    version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("rustc -vV names no host")
}

/// Debian's name of the triple's architecture.
fn debian_arch(triple: &str) -> anyhow::Result<&'static str> {
    match triple.split('-').next() {
        Some("x86_64") => Ok("amd64"),
        Some("aarch64") => Ok("arm64"),
        _ => anyhow::bail!("no Debian architecture known for {triple}"),
    }
}

/// The time every file in the archives carries: `SOURCE_DATE_EPOCH` when set, else the last
/// commit's (the same sources give the same archives' timestamps), else now.
fn source_date_epoch(workspace: &Path) -> u64 {
    let given = std::env::var("SOURCE_DATE_EPOCH").ok();
    let committed = || {
        let out = Command::new("git")
            .args(["log", "-1", "--format=%ct"])
            .current_dir(workspace)
            .output()
            .ok()?;
        String::from_utf8(out.stdout).ok()
    };
    given
        .or_else(committed)
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
}

fn text<'a>(value: &'a Value, key: &str) -> anyhow::Result<&'a str> {
    value[key]
        .as_str()
        .with_context(|| format!("cargo metadata has no {key}"))
}
