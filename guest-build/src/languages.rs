//! Guests in other languages: Python (componentize-py) and JavaScript (componentize-js), built by
//! the pinned toolchains that `plugins/toolchains/install.sh` puts in `target/toolchains/`.
//!
//! A build is skipped when its output is newer than every input (the sources, the WIT, the
//! toolchain's pins): neither tool builds reproducibly (the bytes differ run to run), so an
//! unneeded rebuild would also change the component's sha256 and miss the precompiled cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Guest, GuestBuildError};

/// A guest's language, and so the toolchain that builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// componentize-py: the folder's module `entry` defines `class WitWorld(wit_world.WitWorld)`.
    Python,
    /// componentize-js: the folder's ES module `entry` exports `retrieve`.
    JavaScript,
}

/// The WIT a Python guest is built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wit {
    /// The contract (`wit/retrieval.wit`), world `retrieval-plugin`.
    Contract,
    /// The contract and a folder of WIT (relative to the workspace) copied beside it: `world`, a
    /// world of the contract's package that includes `retrieval-plugin` and imports more
    /// (`wasi:http`), and in the folder's `deps/` the packages it names. The kit's Python
    /// template ships such a folder; a plugin built against it is built against what an author's
    /// project has.
    Beside {
        /// The folder.
        dir: &'static str,
        /// Its world.
        world: &'static str,
    },
}

/// One guest in another language.
#[derive(Debug, Clone)]
pub struct LanguageGuest {
    /// The component's name (`target/…/NAME.wasm`).
    pub name: &'static str,
    /// Its language.
    pub language: Language,
    /// Its folder, relative to the workspace (`plugins/retrieval-py`).
    pub dir: &'static str,
    /// The module (Python) or file (JavaScript) that exports `retrieve`.
    pub entry: &'static str,
    /// JavaScript only: componentize-js features left out (`http`, `fetch-event`, …).
    pub disable: &'static [&'static str],
    /// Python only: the WIT it is built against.
    pub wit: Wit,
    /// Python only: folders of more modules it imports (relative to the workspace), after its own.
    pub python_path: &'static [&'static str],
    /// Whether the tests use it (the fixtures' build makes those; `cargo xtask plugins` all).
    pub tested: bool,
}

/// Every guest in another language: the shipped plugins and the test fixtures. JavaScript keeps
/// stdio (console output reaches the server log), clocks and random, and leaves out its HTTP
/// client (`fetch` over `wasi:http`: these guests call nothing outside) and the HTTP server entry
/// point.
pub const LANGUAGE_GUESTS: &[LanguageGuest] = &[
    // The answering plugin in Python: `rag`'s behaviour, with `retrieval-py`'s ranking modules
    // (imported from that folder, not copied) and the kit's outbound WIT (`wasi:http`).
    LanguageGuest {
        name: "rag-py",
        language: Language::Python,
        dir: "plugins/rag-py",
        entry: "app",
        disable: &[],
        wit: Wit::Beside {
            dir: "kit/templates/python/wit",
            world: "retrieval-plugin-outbound",
        },
        python_path: &["plugins/retrieval-py"],
        tested: true,
    },
    LanguageGuest {
        name: "retrieval-py",
        language: Language::Python,
        dir: "plugins/retrieval-py",
        entry: "app",
        disable: &[],
        wit: Wit::Contract,
        python_path: &[],
        tested: true,
    },
    LanguageGuest {
        name: "retrieval-js",
        language: Language::JavaScript,
        dir: "plugins/retrieval-js",
        entry: "retrieval.js",
        disable: JS_NO_HTTP,
        wit: Wit::Contract,
        python_path: &[],
        tested: true,
    },
    LanguageGuest {
        name: "escape-py",
        language: Language::Python,
        dir: "fixtures/escape-py",
        entry: "app",
        disable: &[],
        wit: Wit::Contract,
        python_path: &[],
        tested: true,
    },
    LanguageGuest {
        name: "escape-js",
        language: Language::JavaScript,
        dir: "fixtures/escape-js",
        entry: "escape.js",
        disable: JS_NO_HTTP,
        wit: Wit::Contract,
        python_path: &[],
        tested: true,
    },
    LanguageGuest {
        name: "escape-js-http",
        language: Language::JavaScript,
        dir: "fixtures/escape-js",
        entry: "escape.js",
        disable: &["fetch-event"],
        wit: Wit::Contract,
        python_path: &[],
        tested: true,
    },
    LanguageGuest {
        name: "hostcalls-py",
        language: Language::Python,
        dir: "fixtures/hostcalls-py",
        entry: "app",
        disable: &[],
        wit: Wit::Contract,
        python_path: &[],
        tested: false,
    },
    LanguageGuest {
        name: "hostcalls-js",
        language: Language::JavaScript,
        dir: "fixtures/hostcalls-js",
        entry: "hostcalls.js",
        disable: JS_NO_HTTP,
        wit: Wit::Contract,
        python_path: &[],
        tested: false,
    },
];

/// The componentize-js features a JavaScript plugin leaves out.
pub const JS_NO_HTTP: &[&str] = &["http", "fetch-event"];

/// The command that installs the toolchains.
pub const INSTALL: &str = "plugins/toolchains/install.sh";

/// Where the toolchains are: `$TURNSTILE_TOOLCHAINS`, else `target/toolchains` of the workspace.
pub fn toolchains_dir(workspace: &Path) -> PathBuf {
    std::env::var_os("TURNSTILE_TOOLCHAINS")
        .map_or_else(|| workspace.join("target/toolchains"), PathBuf::from)
}

/// The tool that builds `language`, or the one command that installs it.
pub fn toolchain(workspace: &Path, language: Language) -> Result<PathBuf, GuestBuildError> {
    let dir = toolchains_dir(workspace);
    let (tool, path) = match language {
        Language::Python => ("componentize-py", dir.join("py/bin/componentize-py")),
        Language::JavaScript => (
            "componentize-js",
            dir.join("js/node_modules/.bin/componentize-js"),
        ),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(GuestBuildError::ToolchainMissing {
            tool,
            path,
            install: INSTALL,
        })
    }
}

/// Builds `guest` into `out_dir/NAME.wasm`, unless that is newer than every input.
pub fn build_language(
    workspace: &Path,
    guest: &LanguageGuest,
    out_dir: &Path,
) -> Result<Guest, GuestBuildError> {
    let path = out_dir.join(format!("{}.wasm", guest.name));
    let inputs = inputs(workspace, guest);
    if up_to_date(&path, &inputs) {
        return Ok(Guest {
            name: guest.name.to_owned(),
            path,
        });
    }
    std::fs::create_dir_all(out_dir).map_err(GuestBuildError::Spawn)?;
    let tool = toolchain(workspace, guest.language)?;
    let dir = workspace.join(guest.dir);
    let mut command = Command::new(&tool);
    match guest.language {
        Language::Python => {
            let (wit, world) = match guest.wit {
                Wit::Contract => (workspace.join("wit"), "retrieval-plugin"),
                Wit::Beside { dir, world } => {
                    let beside = out_dir.join(format!("{}.wit", guest.name));
                    contract_beside(workspace, &workspace.join(dir), &beside)?;
                    (beside, world)
                }
            };
            command.current_dir(&dir).arg("-d").arg(&wit).args([
                "-w",
                world,
                "componentize",
                guest.entry,
                "-p",
                ".",
            ]);
            for folder in guest.python_path {
                command.arg("-p").arg(workspace.join(folder));
            }
            command.arg("-o").arg(&path);
        }
        Language::JavaScript => {
            // componentize-js reads the WIT and the sources through a filesystem rooted at its
            // working directory: run it from the workspace, with paths inside it.
            command
                .current_dir(workspace)
                .arg(Path::new(guest.dir).join(guest.entry))
                .args(["-w", "wit", "-n", "retrieval-plugin", "-o"])
                .arg(&path);
            if !guest.disable.is_empty() {
                command.arg("-d").args(guest.disable);
            }
        }
    }
    // A Python build writes no bytecode into the source folder.
    command.env("PYTHONDONTWRITEBYTECODE", "1");
    let status = command.status().map_err(GuestBuildError::Spawn)?;
    if !status.success() {
        return Err(GuestBuildError::Failed(status));
    }
    if !path.is_file() {
        return Err(GuestBuildError::Missing(path));
    }
    Ok(Guest {
        name: guest.name.to_owned(),
        path,
    })
}

/// A folder of WIT for `-d`: the contract (`wit/retrieval.wit`) and every file under `beside`,
/// written afresh into `into`.
fn contract_beside(workspace: &Path, beside: &Path, into: &Path) -> Result<(), GuestBuildError> {
    let wit_error = |source| GuestBuildError::Wit {
        path: into.to_owned(),
        source,
    };
    if into.exists() {
        std::fs::remove_dir_all(into).map_err(wit_error)?;
    }
    std::fs::create_dir_all(into).map_err(wit_error)?;
    std::fs::copy(
        workspace.join("wit/retrieval.wit"),
        into.join("retrieval.wit"),
    )
    .map_err(wit_error)?;
    for file in files_under(beside) {
        let to = into.join(file.strip_prefix(beside).unwrap_or(&file));
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(wit_error)?;
        }
        std::fs::copy(&file, &to).map_err(wit_error)?;
    }
    Ok(())
}

/// Every file under `dir`, in its folders too.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for path in std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
    {
        if path.is_dir() {
            files.extend(files_under(&path));
        } else if path.is_file() {
            files.push(path);
        }
    }
    files
}

/// The files directly in `dir`.
fn files_in(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
}

/// What a guest's build reads: its folder's files, the WIT, the toolchain pins, the folders of
/// modules it imports.
pub fn inputs(workspace: &Path, guest: &LanguageGuest) -> Vec<PathBuf> {
    let mut inputs = vec![
        workspace.join("wit/retrieval.wit"),
        workspace.join("plugins/toolchains/requirements.txt"),
        workspace.join("plugins/toolchains/package-lock.json"),
    ];
    inputs.extend(files_in(&workspace.join(guest.dir)));
    if let Wit::Beside { dir, .. } = guest.wit {
        inputs.extend(files_under(&workspace.join(dir)));
    }
    for folder in guest.python_path {
        inputs.extend(files_in(&workspace.join(folder)));
    }
    inputs.sort();
    inputs
}

fn up_to_date(output: &Path, inputs: &[PathBuf]) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(built) = modified(output) else {
        return false;
    };
    inputs
        .iter()
        .all(|input| modified(input).is_some_and(|m| m <= built))
}
