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

/// A template's files, each `(path in the project, text)`, read from `kit/templates/LANG/`.
macro_rules! template {
    ($lang:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../kit/templates/", $lang, "/", $path)))),*]
    };
}

const RUST: &[(&str, &str)] = template!("rust":
    ".gitignore",
    "Cargo.lock",
    "Cargo.toml",
    "README.md",
    "build.sh",
    "check.sh",
    "questions.jsonl",
    "src/lib.rs",
);

/// `typings/` are the stubs `kit/stubs.sh` generates from the contract (for an editor).
/// `wit/outbound.wit` and `wit/deps/` are the WIT a Python plugin needs for `wasi:http` beside
/// the contract (componentize-py generates bindings only for what a world names).
const PYTHON: &[(&str, &str)] = template!("python":
    ".gitignore",
    "README.md",
    "app.py",
    "build.sh",
    "check.sh",
    "questions.jsonl",
    "requirements.txt",
    "wit/outbound.wit",
    "wit/deps/clocks.wit",
    "wit/deps/http.wit",
    "wit/deps/io.wit",
    "typings/componentize_py_types.pyi",
    "typings/wit_world/__init__.pyi",
    "typings/wit_world/imports/__init__.pyi",
    "typings/wit_world/imports/answer.pyi",
    "typings/wit_world/imports/config.pyi",
    "typings/wit_world/imports/conversation.pyi",
    "typings/wit_world/imports/corpus.pyi",
    "typings/wit_world/imports/embeddings.pyi",
    "typings/wit_world/imports/error.pyi",
    "typings/wit_world/imports/log.pyi",
    "typings/wit_world/imports/monotonic_clock.pyi",
    "typings/wit_world/imports/outgoing_handler.pyi",
    "typings/wit_world/imports/poll.pyi",
    "typings/wit_world/imports/streams.pyi",
    "typings/wit_world/imports/types.pyi",
);

/// `types/` are the stubs `kit/stubs.sh` generates from the contract (for an editor, with
/// `jsconfig.json`).
const JS: &[(&str, &str)] = template!("js":
    ".gitignore",
    "README.md",
    "build.sh",
    "check.sh",
    "jsconfig.json",
    "package-lock.json",
    "package.json",
    "plugin.js",
    "questions.jsonl",
    "types/retrieval-plugin.d.ts",
    "types/interfaces/turnstile-retrieval-answer.d.ts",
    "types/interfaces/turnstile-retrieval-config.d.ts",
    "types/interfaces/turnstile-retrieval-conversation.d.ts",
    "types/interfaces/turnstile-retrieval-corpus.d.ts",
    "types/interfaces/turnstile-retrieval-embeddings.d.ts",
    "types/interfaces/turnstile-retrieval-log.d.ts",
);

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

    /// Every file under `kit/templates/LANG/` is written (a new stub from `kit/stubs.sh`
    /// included), and nothing else.
    #[test]
    fn every_file_of_a_template_is_written() {
        fn walk(root: &Path, dir: &Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(root, &path, found);
                } else {
                    let relative = path.strip_prefix(root).unwrap();
                    found.push(relative.to_string_lossy().into_owned());
                }
            }
        }
        let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kit/templates");
        for (lang, files) in [("rust", RUST), ("python", PYTHON), ("js", JS)] {
            let mut found = Vec::new();
            walk(&templates.join(lang), &templates.join(lang), &mut found);
            found.sort();
            let mut listed: Vec<String> = files.iter().map(|(path, _)| path.to_string()).collect();
            listed.sort();
            assert_eq!(
                listed, found,
                "{lang}: kit/templates/{lang} and the list in kit.rs"
            );
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
