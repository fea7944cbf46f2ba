//! Running the tools the chores drive (cargo, tar, dpkg-deb, …): a failure names the command
//! and carries what it printed.

use std::process::Command;

use anyhow::Context;

/// Runs `command`, its output captured; its stdout when it succeeds.
pub fn output(command: &mut Command) -> anyhow::Result<Vec<u8>> {
    let shown = format!("{command:?}");
    let output = command
        .output()
        .with_context(|| format!("cannot run {shown} (is it installed?)"))?;
    anyhow::ensure!(
        output.status.success(),
        "{shown} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(output.stdout)
}
