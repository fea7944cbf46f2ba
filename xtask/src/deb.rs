//! The Debian package: a staged tree (`/usr/bin/turnstile`, `/etc/turnstile/turnstile.toml` as a
//! conffile, the systemd unit, man pages, completions, the licences, the shipped plugins in
//! `/usr/share/turnstile/plugins/` (data: Debian's place for what is the same on every
//! architecture), README and the docs in `/usr/share/doc/turnstile/` at their paths in the
//! repository, uncompressed so that their links to one another and their images work), its
//! `DEBIAN/` control files
//! written here and the maintainer scripts from `packaging/debian/`, then
//! `dpkg-deb --build --root-owner-group` (every file root's, without fakeroot).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::exec;
use anyhow::Context;

/// What goes into the package.
pub struct Inputs<'a> {
    /// The package's version (the workspace's).
    pub version: &'a str,
    /// Debian's name of the architecture (`amd64`).
    pub arch: &'a str,
    /// The `turnstile` binary.
    pub binary: &'a Path,
    /// `/etc/turnstile/turnstile.toml`'s text.
    pub config: &'a str,
    /// The repository's `packaging/` folder (the unit, the maintainer scripts).
    pub packaging: &'a Path,
    /// README.md.
    pub readme: &'a Path,
    /// The docs: each one's path under `/usr/share/doc/turnstile/` (as in the repository:
    /// `docs/OUTBOUND.md`) and the file.
    pub docs: &'a [(PathBuf, PathBuf)],
    /// The shipped plugins' components (`NAME.wasm`), for `/usr/share/turnstile/plugins/`.
    pub plugins: &'a [PathBuf],
    /// The third-party licence summary's text.
    pub licences: &'a str,
    /// The man pages (`*.1`, uncompressed).
    pub man: &'a [PathBuf],
    /// The bash, zsh and fish completion scripts, in that order.
    pub completions: [&'a Path; 3],
    /// `dpkg-deb`'s compression flags.
    pub compression: &'a [&'a str],
    /// The archive's timestamps (`SOURCE_DATE_EPOCH`, which dpkg-deb honours).
    pub epoch: u64,
}

/// Stages the tree in `work` (emptied first) and builds `out/turnstile_VERSION_ARCH.deb`.
pub fn build(inputs: &Inputs, work: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    if work.exists() {
        fs::remove_dir_all(work).with_context(|| format!("removing {}", work.display()))?;
    }
    let put = |dest: &str, bytes: &[u8], mode: u32| -> anyhow::Result<()> {
        let path = work.join(dest.trim_start_matches('/'));
        fs::create_dir_all(path.parent().context("a file has a folder")?)?;
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        fs::set_permissions(&path, fs::Permissions::from_mode(mode))?;
        Ok(())
    };
    let read = |path: &Path| fs::read(path).with_context(|| format!("reading {}", path.display()));
    put("/usr/bin/turnstile", &read(inputs.binary)?, 0o755)?;
    put(
        "/etc/turnstile/turnstile.toml",
        inputs.config.as_bytes(),
        0o644,
    )?;
    put(
        "/usr/lib/systemd/system/turnstile.service",
        &read(&inputs.packaging.join("turnstile.service"))?,
        0o644,
    )?;
    let doc = "/usr/share/doc/turnstile";
    put(&format!("{doc}/README.md"), &read(inputs.readme)?, 0o644)?;
    put(
        &format!("{doc}/copyright"),
        copyright(inputs.licences).as_bytes(),
        0o644,
    )?;
    for (path, file) in inputs.docs {
        put(&format!("{doc}/{}", path.display()), &read(file)?, 0o644)?;
    }
    for plugin in inputs.plugins {
        let name = plugin.file_name().context("a plugin has a name")?;
        put(
            &format!("/usr/share/turnstile/plugins/{}", name.to_string_lossy()),
            &read(plugin)?,
            0o644,
        )?;
    }
    for page in inputs.man {
        let name = page.file_name().context("a man page has a name")?;
        let gz = gzip(&read(page)?)?;
        put(
            &format!("/usr/share/man/man1/{}.gz", name.to_string_lossy()),
            &gz,
            0o644,
        )?;
    }
    let [bash, zsh, fish] = inputs.completions;
    put(
        "/usr/share/bash-completion/completions/turnstile",
        &read(bash)?,
        0o644,
    )?;
    put(
        "/usr/share/zsh/vendor-completions/_turnstile",
        &read(zsh)?,
        0o644,
    )?;
    put(
        "/usr/share/fish/vendor_completions.d/turnstile.fish",
        &read(fish)?,
        0o644,
    )?;

    for script in ["postinst", "prerm", "postrm"] {
        put(
            &format!("/DEBIAN/{script}"),
            &read(&inputs.packaging.join("debian").join(script))?,
            0o755,
        )?;
    }
    put(
        "/DEBIAN/conffiles",
        b"/etc/turnstile/turnstile.toml\n",
        0o644,
    )?;
    put("/DEBIAN/md5sums", md5sums(work)?.as_bytes(), 0o644)?;
    let control = control(
        inputs,
        &depends(inputs.binary, &work.with_extension("shlibdeps"))?,
        installed_kib(work)?,
    );
    let _ = fs::remove_dir_all(work.with_extension("shlibdeps"));
    put("/DEBIAN/control", control.as_bytes(), 0o644)?;

    let deb = out.join(format!("turnstile_{}_{}.deb", inputs.version, inputs.arch));
    exec::output(
        Command::new("dpkg-deb")
            .arg("--build")
            .arg("--root-owner-group")
            .args(inputs.compression)
            .arg(work)
            .arg(&deb)
            .env("SOURCE_DATE_EPOCH", inputs.epoch.to_string()),
    )?;
    Ok(deb)
}

fn control(inputs: &Inputs, depends: &str, installed_kib: u64) -> String {
    format!(
        "Package: turnstile\n\
         Version: {version}\n\
         Architecture: {arch}\n\
         Maintainer: turnstile developers <turnstile@localhost>\n\
         Installed-Size: {installed_kib}\n\
         Depends: {depends}, passwd\n\
         Section: net\n\
         Priority: optional\n\
         Description: FIFO admission gate in front of WebAssembly retrieval plugins\n \
         turnstile is an HTTP service for retrieval-augmented generation backends that\n \
         must not start every request at once: each POST /retrieve is validated, admitted\n \
         by a bounded first-in-first-out gate and answered by a WebAssembly component\n \
         plugin over a SQLite FTS5 corpus. The package runs it as a hardened systemd\n \
         service (turnstile.service, its own system user), configured in\n \
         /etc/turnstile/turnstile.toml, and ships the plugins (among them rag, which\n \
         answers with a model) in /usr/share/turnstile/plugins/.\n",
        version = inputs.version,
        arch = inputs.arch,
    )
}

/// The shared libraries' packages, as `dpkg-shlibdeps` (dpkg-dev) finds them from the binary's
/// dynamic section and the installed packages' symbols files.
/// `dir` is a scratch folder.
fn depends(binary: &Path, dir: &Path) -> anyhow::Result<String> {
    // dpkg-shlibdeps reads a source package's control file, whatever it holds.
    fs::create_dir_all(dir.join("debian"))?;
    fs::write(
        dir.join("debian/control"),
        "Source: turnstile\n\nPackage: turnstile\nArchitecture: any\n",
    )?;
    let binary = binary.canonicalize()?;
    let printed = exec::output(
        Command::new("dpkg-shlibdeps")
            .arg("-O")
            .arg("--warnings=0")
            .arg(&binary)
            .current_dir(dir),
    )
    .context(
        "finding the binary's library packages needs dpkg-shlibdeps (apt-get install dpkg-dev)",
    )?;
    let printed = String::from_utf8(printed)?;
    printed
        .lines()
        .find_map(|l| l.strip_prefix("shlibs:Depends="))
        .map(str::to_owned)
        .context("dpkg-shlibdeps printed no shlibs:Depends")
}

/// `/usr/share/doc/turnstile/copyright`: the project's licence (the text Debian keeps in
/// common-licenses) and the third-party summary.
fn copyright(licences: &str) -> String {
    format!(
        "turnstile is licensed under the Apache License, Version 2.0.\n\
         On Debian systems, its full text is in /usr/share/common-licenses/Apache-2.0.\n\n{licences}"
    )
}

/// `DEBIAN/md5sums`: every file under the tree but `DEBIAN/`, as dpkg verifies them
/// (`md5sum`'s own lines, paths relative to the root).
fn md5sums(root: &Path) -> anyhow::Result<String> {
    let mut files = Vec::new();
    walk(root, &mut files)?;
    let mut relative: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.strip_prefix(root).ok())
        .filter(|r| !r.starts_with("DEBIAN"))
        .map(Path::to_path_buf)
        .collect();
    relative.sort();
    let sums = exec::output(Command::new("md5sum").args(&relative).current_dir(root))?;
    Ok(String::from_utf8(sums)?)
}

/// The tree's size in KiB, as `Installed-Size` counts it (each file rounded up; `DEBIAN/` is
/// not installed).
fn installed_kib(root: &Path) -> anyhow::Result<u64> {
    let mut files = Vec::new();
    walk(root, &mut files)?;
    let mut kib = 0;
    for file in files.iter().filter(|f| !f.starts_with(root.join("DEBIAN"))) {
        kib += fs::metadata(file)?.len().div_ceil(1024);
    }
    Ok(kib)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

/// `gzip -9n`: man pages compressed as Debian's policy asks (no name, no timestamp).
fn gzip(bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    use std::io::Write;
    let mut child = Command::new("gzip")
        .args(["-9n", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("cannot run gzip")?;
    child
        .stdin
        .take()
        .context("gzip's stdin")?
        .write_all(bytes)?;
    let output = child.wait_with_output()?;
    anyhow::ensure!(output.status.success(), "gzip failed");
    Ok(output.stdout)
}
