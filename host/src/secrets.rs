//! A plugin's secrets (`--plugin-secret NAME=env:VAR` or `NAME=file:PATH`): read once by the
//! operator's process, handed to the plugin through its `config` import as settings are, and
//! shown nowhere. A [`Secret`] prints as `[secret]`; every text a plugin writes that reaches the
//! log (its messages, stdout, stderr, errors) has each secret's value replaced by `[secret]`
//! ([`Secrets::redact`]); errors about a secret name it and where it was to come from, never
//! its value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most secrets one plugin may be given.
pub const MAX_SECRETS: usize = 16;
/// Largest secret, in bytes (a file holding more is refused).
pub const MAX_SECRET_BYTES: usize = 16 * 1024;
/// Shortest value that is redacted in plugin output: shorter ones would blank out ordinary
/// words (a real key is much longer).
const MIN_REDACTED_BYTES: usize = 6;

/// What replaces a secret's value wherever the host shows text.
pub const REDACTED: &str = "[secret]";

/// A secret's value. Its `Debug` and `Display` print [`REDACTED`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    /// The value, for the plugin's `config` import only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Where a secret comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// An environment variable of the operator's process.
    Env(String),
    /// A file (its content, one trailing newline dropped).
    File(PathBuf),
}

impl std::fmt::Display for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Env(var) => write!(f, "env:{var}"),
            Self::File(path) => write!(f, "file:{}", path.display()),
        }
    }
}

/// Why a secret is refused; it names the secret and its source, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// Not `NAME=env:VAR` or `NAME=file:PATH`.
    #[error("expected NAME=env:VAR or NAME=file:PATH (NAME: 1..=128 bytes of A-Z a-z 0-9 _ - .)")]
    Malformed,
    /// The variable is not set (or not UTF-8).
    #[error("secret {name}: {from} is not set")]
    Unset {
        /// The secret.
        name: String,
        /// Where it was to come from.
        from: SecretSource,
    },
    /// The file could not be read, or is no regular file of at most [`MAX_SECRET_BYTES`].
    #[error(
        "secret {name}: {from} is not a readable regular file of at most {MAX_SECRET_BYTES} bytes of UTF-8"
    )]
    Unreadable {
        /// The secret.
        name: String,
        /// Where it was to come from.
        from: SecretSource,
    },
    /// An empty value.
    #[error("secret {name}: {from} is empty")]
    Empty {
        /// The secret.
        name: String,
        /// Where it was to come from.
        from: SecretSource,
    },
    /// The same name twice.
    #[error("secret {0} is given twice")]
    Duplicate(String),
    /// More than [`MAX_SECRETS`].
    #[error("{0} secrets given; at most {MAX_SECRETS} are allowed")]
    TooMany(usize),
}

/// Parses `NAME=env:VAR` or `NAME=file:PATH` (the value of `--plugin-secret`).
pub fn parse_secret_arg(arg: &str) -> Result<(String, SecretSource), SecretError> {
    let (name, source) = arg.split_once('=').ok_or(SecretError::Malformed)?;
    let valid_name = (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !valid_name {
        return Err(SecretError::Malformed);
    }
    let source = if let Some(var) = source.strip_prefix("env:") {
        if var.is_empty() {
            return Err(SecretError::Malformed);
        }
        SecretSource::Env(var.to_owned())
    } else if let Some(path) = source.strip_prefix("file:") {
        if path.is_empty() {
            return Err(SecretError::Malformed);
        }
        SecretSource::File(PathBuf::from(path))
    } else {
        return Err(SecretError::Malformed);
    };
    Ok((name.to_owned(), source))
}

/// A plugin's secrets, by name.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(BTreeMap<String, Secret>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Secrets {
    /// None.
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads every secret from its source (`env` looks a variable up): all of them, or the first
    /// refusal.
    pub fn load(
        given: &[(String, SecretSource)],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, SecretError> {
        if given.len() > MAX_SECRETS {
            return Err(SecretError::TooMany(given.len()));
        }
        let mut secrets = BTreeMap::new();
        for (name, source) in given {
            let value = match source {
                SecretSource::Env(var) => env(var).ok_or_else(|| SecretError::Unset {
                    name: name.clone(),
                    from: source.clone(),
                })?,
                SecretSource::File(path) => {
                    read_file(path).ok_or_else(|| SecretError::Unreadable {
                        name: name.clone(),
                        from: source.clone(),
                    })?
                }
            };
            if value.is_empty() {
                return Err(SecretError::Empty {
                    name: name.clone(),
                    from: source.clone(),
                });
            }
            if value.len() > MAX_SECRET_BYTES {
                return Err(SecretError::Unreadable {
                    name: name.clone(),
                    from: source.clone(),
                });
            }
            if secrets.insert(name.clone(), Secret(value.into())).is_some() {
                return Err(SecretError::Duplicate(name.clone()));
            }
        }
        Ok(Self(secrets))
    }

    /// The secret called `name`.
    pub fn get(&self, name: &str) -> Option<&Secret> {
        self.0.get(name)
    }

    /// Their names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// These and `more` (values to redact that the plugin never reads: bound credentials).
    pub fn with_more(&self, more: impl Iterator<Item = (String, Secret)>) -> Self {
        let mut all = self.0.clone();
        all.extend(more);
        Self(all)
    }

    /// `text` with every secret's value (of at least 6 bytes) replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in self.0.values() {
            let value = secret.expose();
            if value.len() >= MIN_REDACTED_BYTES && text.contains(value) {
                text = text.replace(value, REDACTED);
            }
        }
        text
    }
}

/// A regular file's content (at most [`MAX_SECRET_BYTES`] + 1 bytes read), one trailing newline
/// dropped; `None` for anything else.
fn read_file(path: &Path) -> Option<String> {
    use std::io::Read;
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_SECRET_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let mut text = String::from_utf8(bytes).ok()?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints_its_value() {
        let env = |v: &str| (v == "KEY").then(|| "sk-canary-123456".to_owned());
        let secrets =
            Secrets::load(&[("api_key".into(), SecretSource::Env("KEY".into()))], &env).unwrap();
        let secret = secrets.get("api_key").unwrap();
        assert_eq!(secret.expose(), "sk-canary-123456");
        for shown in [
            format!("{secret}"),
            format!("{secret:?}"),
            format!("{secrets:?}"),
        ] {
            assert!(!shown.contains("canary"), "{shown}");
        }
        assert_eq!(
            secrets.redact("Bearer sk-canary-123456 failed"),
            "Bearer [secret] failed"
        );
    }

    #[test]
    fn bad_secrets_are_refused_by_name_without_their_value() {
        assert_eq!(parse_secret_arg("k"), Err(SecretError::Malformed));
        assert_eq!(parse_secret_arg("k=plain"), Err(SecretError::Malformed));
        assert_eq!(parse_secret_arg("k=env:"), Err(SecretError::Malformed));
        assert_eq!(
            parse_secret_arg("bad name=env:X"),
            Err(SecretError::Malformed)
        );
        let given = parse_secret_arg("k=env:NOPE").unwrap();
        let error = Secrets::load(&[given], &|_| None).unwrap_err();
        assert_eq!(error.to_string(), "secret k: env:NOPE is not set");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "file-secret-value\n").unwrap();
        let secrets = Secrets::load(&[("k".into(), SecretSource::File(file))], &|_| None).unwrap();
        assert_eq!(secrets.get("k").unwrap().expose(), "file-secret-value");
        let error = Secrets::load(
            &[("k".into(), SecretSource::File(dir.path().to_owned()))],
            &|_| None,
        )
        .unwrap_err();
        assert!(matches!(error, SecretError::Unreadable { .. }), "{error}");
        let twice = [
            ("k".into(), SecretSource::Env("A".into())),
            ("k".into(), SecretSource::Env("A".into())),
        ];
        let error = Secrets::load(&twice, &|_| Some("value-long".into())).unwrap_err();
        assert_eq!(error, SecretError::Duplicate("k".into()));
    }
}
