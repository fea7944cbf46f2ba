//! `turnstile new plugin --lang rust|python|js DIR`: a standalone plugin project outside this
//! workspace — the contract (`wit/`, at this host's version), a minimal lexical plugin that works,
//! the pinned build command, a README, and a script that runs `turnstile check` and `turnstile
//! eval` on the small question file it ships. The templates live in `kit/templates/` and are
//! compiled into the binary; `{{name}}` and `{{crate_name}}` become the project's name.

use std::path::{Path, PathBuf};

/// The contract, as this host serves it.
const WIT: &str = include_str!("../../wit/retrieval.wit");

/// A plugin project's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// Rust, built with cargo and wit-bindgen for `wasm32-wasip2`.
    Rust,
    /// Python, built with componentize-py.
    Python,
    /// JavaScript, built with componentize-js.
    Js,
}

const RUST: &[(&str, &str)] = &[
    (
        ".gitignore",
        include_str!("../../kit/templates/rust/.gitignore"),
    ),
    (
        "Cargo.lock",
        include_str!("../../kit/templates/rust/Cargo.lock"),
    ),
    (
        "Cargo.toml",
        include_str!("../../kit/templates/rust/Cargo.toml"),
    ),
    (
        "README.md",
        include_str!("../../kit/templates/rust/README.md"),
    ),
    (
        "build.sh",
        include_str!("../../kit/templates/rust/build.sh"),
    ),
    (
        "check.sh",
        include_str!("../../kit/templates/rust/check.sh"),
    ),
    (
        "questions.jsonl",
        include_str!("../../kit/templates/rust/questions.jsonl"),
    ),
    (
        "src/lib.rs",
        include_str!("../../kit/templates/rust/src/lib.rs"),
    ),
];

const PYTHON: &[(&str, &str)] = &[
    (
        ".gitignore",
        include_str!("../../kit/templates/python/.gitignore"),
    ),
    (
        "README.md",
        include_str!("../../kit/templates/python/README.md"),
    ),
    ("app.py", include_str!("../../kit/templates/python/app.py")),
    (
        "build.sh",
        include_str!("../../kit/templates/python/build.sh"),
    ),
    (
        "check.sh",
        include_str!("../../kit/templates/python/check.sh"),
    ),
    (
        "questions.jsonl",
        include_str!("../../kit/templates/python/questions.jsonl"),
    ),
    (
        "requirements.txt",
        include_str!("../../kit/templates/python/requirements.txt"),
    ),
];

const JS: &[(&str, &str)] = &[
    (
        ".gitignore",
        include_str!("../../kit/templates/js/.gitignore"),
    ),
    (
        "README.md",
        include_str!("../../kit/templates/js/README.md"),
    ),
    ("build.sh", include_str!("../../kit/templates/js/build.sh")),
    ("check.sh", include_str!("../../kit/templates/js/check.sh")),
    (
        "package-lock.json",
        include_str!("../../kit/templates/js/package-lock.json"),
    ),
    (
        "package.json",
        include_str!("../../kit/templates/js/package.json"),
    ),
    (
        "plugin.js",
        include_str!("../../kit/templates/js/plugin.js"),
    ),
    (
        "questions.jsonl",
        include_str!("../../kit/templates/js/questions.jsonl"),
    ),
];

/// Files made executable (the project's scripts).
const SCRIPTS: &[&str] = &["build.sh", "check.sh"];

/// Longest project name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// Why a project cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    /// The folder's name cannot name a plugin.
    #[error(
        "{name:?} cannot name a plugin: use 1 to {MAX_NAME_BYTES} lowercase letters, digits and `-`, \
         starting with a letter"
    )]
    BadName {
        /// The folder's name.
        name: String,
    },
    /// The folder exists and is not empty: nothing is overwritten.
    #[error("{}: exists and is not empty; nothing was written", .0.display())]
    NotEmpty(PathBuf),
    /// Writing failed.
    #[error("{}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Writes a `lang` plugin project into `dir` (created; it must not exist, or be empty) and
/// returns the files written, relative to `dir`.
pub fn new_plugin(lang: Lang, dir: &Path) -> Result<Vec<PathBuf>, KitError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(KitError::BadName { name });
    }
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(KitError::NotEmpty(dir.to_owned()));
    }
    let files = match lang {
        Lang::Rust => RUST,
        Lang::Python => PYTHON,
        Lang::Js => JS,
    };
    let crate_name = name.replace('-', "_");
    let mut written = Vec::new();
    let all = files
        .iter()
        .map(|(path, text)| {
            (
                *path,
                text.replace("{{name}}", &name)
                    .replace("{{crate_name}}", &crate_name),
            )
        })
        .chain(std::iter::once(("wit/retrieval.wit", WIT.to_owned())));
    for (relative, text) in all {
        let path = dir.join(relative);
        let write_error = |source| KitError::Write {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_error)?;
        }
        std::fs::write(&path, text).map_err(write_error)?;
        if SCRIPTS.contains(&relative) {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(write_error)?;
        }
        written.push(PathBuf::from(relative));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_is_filled_and_carries_the_contract() {
        for lang in [Lang::Rust, Lang::Python, Lang::Js] {
            let dir = tempfile::tempdir().unwrap();
            let project = dir.path().join("my-plugin");
            let written = new_plugin(lang, &project).unwrap();
            assert!(written.contains(&PathBuf::from("wit/retrieval.wit")));
            assert!(written.contains(&PathBuf::from("build.sh")));
            for file in &written {
                let text = std::fs::read_to_string(project.join(file)).unwrap();
                assert!(
                    !text.contains("{{"),
                    "{lang:?} {}: a placeholder is left",
                    file.display()
                );
            }
            assert_eq!(
                std::fs::read_to_string(project.join("wit/retrieval.wit")).unwrap(),
                WIT
            );
            // Nothing is overwritten.
            assert!(matches!(
                new_plugin(lang, &project),
                Err(KitError::NotEmpty(_))
            ));
        }
    }

    #[test]
    fn a_name_must_name_a_plugin() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["My-Plugin", "1st", "with space", "dots.too", ""] {
            let result = new_plugin(Lang::Rust, &dir.path().join(bad));
            assert!(matches!(result, Err(KitError::BadName { .. })), "{bad:?}");
        }
    }
}
