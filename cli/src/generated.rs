//! What is generated from the command tree itself, so it never drifts from the parser: shell
//! completions (`turnstile completions SHELL`) and man pages (`turnstile man [--out DIR]`). The
//! release packages ship both (`cargo xtask dist`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Arg, Command};
use clap_complete::Shell;

/// `turnstile completions SHELL`.
pub fn completions_command() -> Command {
    Command::new("completions")
        .about(
            "Print a completion script for SHELL (bash, zsh, fish, elvish, powershell): e.g. \
             `turnstile completions bash > /etc/bash_completion.d/turnstile`",
        )
        .arg(
            Arg::new("shell")
                .value_name("SHELL")
                .required(true)
                .value_parser(clap::value_parser!(Shell))
                .help("The shell to complete for"),
        )
}

/// `turnstile man [--out DIR]`.
pub fn man_command() -> Command {
    Command::new("man")
        .about(
            "Print the man page turnstile(1) in roff; with --out DIR, write it and one page per \
             command (turnstile-serve(1), turnstile-corpus-build(1), …) into DIR",
        )
        .arg(
            Arg::new("out")
                .long("out")
                .value_name("DIR")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Write every page into DIR (created if missing) instead of printing one"),
        )
}

/// The completion script of `command` (the whole tree) for `shell`, written to `out`.
pub fn completions(mut command: Command, shell: Shell, out: &mut dyn Write) {
    clap_complete::generate(shell, &mut command, "turnstile", out);
}

/// The man page of `command` (the whole tree: turnstile(1)) written to `out`.
pub fn man_page(command: Command, out: &mut dyn Write) -> anyhow::Result<()> {
    clap_mangen::Man::new(command)
        .render(out)
        .context("writing the man page")
}

/// Every page of `command` (turnstile(1) and one per command) written into `dir`; the files
/// written.
pub fn man_pages(command: Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(command, dir)
        .with_context(|| format!("writing man pages into {}", dir.display()))?;
    let mut written: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "1"))
        .collect();
    written.sort();
    Ok(written)
}
