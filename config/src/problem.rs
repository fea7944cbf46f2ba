//! What can be wrong with a command's settings, and where each wrong value came from. The
//! invariant: a problem names its setting the way its origin spells it — the file's key at its
//! line, the variable, the flag — exactly once, and its message never repeats that name (nor
//! echoes a secret's value, see `value`).

use std::path::PathBuf;

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A line of the `--config` file.
    File {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
    },
    /// A `TURNSTILE_*` environment variable (its name).
    Env(String),
    /// The command line.
    Flag,
    /// The flag's default (a problem only another setting's value can make).
    Default,
    /// Nowhere: a required setting no layer gives.
    Unset,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File { path, line } => write!(f, "{}:{line}", path.display()),
            Self::Env(name) => write!(f, "environment {name}"),
            Self::Flag => f.write_str("command line"),
            Self::Default => f.write_str("default"),
            Self::Unset => f.write_str("not set"),
        }
    }
}

/// One setting refused: where it came from, which setting, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where the value came from.
    pub origin: Origin,
    /// The setting: its flag's name without `--`, or the file's key or the variable's name as
    /// written when it is no setting.
    pub flag: String,
    /// What is wrong and what is accepted, without the setting's name.
    pub message: String,
}

impl std::fmt::Display for Problem {
    /// `FILE:LINE: key: …`, `TURNSTILE_NAME: …`, `--flag: …`, `--flag (default): …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            origin,
            flag,
            message,
        } = self;
        match origin {
            Origin::File { .. } => write!(f, "{origin}: {flag}: {message}"),
            Origin::Env(name) => write!(f, "{name}: {message}"),
            Origin::Flag if flag.starts_with('<') => write!(f, "{flag}: {message}"),
            Origin::Flag => write!(f, "--{flag}: {message}"),
            Origin::Default | Origin::Unset => write!(f, "--{flag} ({origin}): {message}"),
        }
    }
}

/// Why a command's settings cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A command line clap cannot read: an unknown flag, a flag without its value, `--help`.
    #[error("{0}")]
    Flags(clap::Error),
    /// The config file cannot be read.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file is not TOML.
    #[error("{}:{line}: {message}", .path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Settings refused, every one of them, in order: the file's (by line), the environment's
    /// (by name), the command line's (as typed), then those of defaults and missing settings.
    #[error("{}", lines(.0))]
    Settings(Vec<Problem>),
}

fn lines(problems: &[Problem]) -> String {
    let lines: Vec<String> = problems.iter().map(Problem::to_string).collect();
    lines.join("\n")
}

impl ResolveError {
    /// Prints the error and exits like clap does (status 2 for usage errors, and for settings).
    pub fn exit(self) -> ! {
        match self {
            Self::Flags(e) => e.exit(),
            Self::Settings(problems) => {
                for problem in problems {
                    eprintln!("error: {problem}");
                }
                std::process::exit(2)
            }
            other => {
                eprintln!("error: {other}");
                std::process::exit(2)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_origin_names_its_setting_once() {
        let problem = |origin, flag: &str| {
            Problem {
                origin,
                flag: flag.to_owned(),
                message: "0 is not in 1..=1024".to_owned(),
            }
            .to_string()
        };
        let file = Origin::File {
            path: "t.toml".into(),
            line: 3,
        };
        assert_eq!(
            problem(file, "max-active"),
            "t.toml:3: max-active: 0 is not in 1..=1024"
        );
        assert_eq!(
            problem(Origin::Env("TURNSTILE_MAX_ACTIVE".into()), "max-active"),
            "TURNSTILE_MAX_ACTIVE: 0 is not in 1..=1024"
        );
        assert_eq!(
            problem(Origin::Flag, "max-active"),
            "--max-active: 0 is not in 1..=1024"
        );
        assert_eq!(
            problem(Origin::Default, "max-active"),
            "--max-active (default): 0 is not in 1..=1024"
        );
    }
}
