//! The certificate authorities outbound HTTPS trusts beyond the Mozilla roots compiled in: an
//! operator's internal CA (`--outbound-ca-file`), so that a model server inside the network is
//! reached over TLS — nobody falls back to plain HTTP with a key on the wire. Read once, at start,
//! from PEM files the operator names; a plugin or a swap can neither choose nor widen them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, TrustAnchor};

/// Most CA certificates taken from the operator's files, together.
pub const MAX_TRUSTED_CAS: usize = 256;

/// Largest CA file read, in bytes.
pub const MAX_CA_FILE_BYTES: u64 = 4 << 20;

/// Extra roots of trust, shared by every plugin's client.
#[derive(Clone, Default)]
pub struct TrustedRoots {
    /// Parsed once, when loaded: every plugin's client adds these to its roots as they are.
    anchors: Arc<Vec<TrustAnchor<'static>>>,
    files: Arc<Vec<PathBuf>>,
}

/// Why a CA file could not be taken (its path, never its contents).
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file could not be read.
    #[error("{0}: could not be read: {1}")]
    Unreadable(PathBuf, #[source] std::io::Error),
    /// Over [`MAX_CA_FILE_BYTES`].
    #[error("{0}: over {MAX_CA_FILE_BYTES} bytes")]
    TooLarge(PathBuf),
    /// A PEM block that does not parse (what is wrong with it, in words).
    #[error("{0}: not a PEM file of certificates ({1})")]
    NotPem(PathBuf, String),
    /// No `CERTIFICATE` block in it.
    #[error("{0}: holds no certificate (PEM `-----BEGIN CERTIFICATE-----` blocks)")]
    Empty(PathBuf),
    /// A certificate (1-based) rustls does not take as a root, and why.
    #[error("{0}: certificate {1} cannot be a root of trust: {2}")]
    NotARoot(PathBuf, usize, String),
    /// Over [`MAX_TRUSTED_CAS`] certificates in all.
    #[error("more than {MAX_TRUSTED_CAS} CA certificates in all")]
    TooMany,
}

impl TrustedRoots {
    /// The CA certificates of each PEM file in `files` (each must hold at least one, and every
    /// one must be usable as a root).
    pub fn load(files: &[PathBuf]) -> Result<Self, TrustError> {
        let mut store = rustls::RootCertStore::empty();
        for path in files {
            let found = read(path)?;
            if store.len() + found.len() > MAX_TRUSTED_CAS {
                return Err(TrustError::TooMany);
            }
            for (index, certificate) in found.into_iter().enumerate() {
                store
                    .add(certificate)
                    .map_err(|e| TrustError::NotARoot(path.clone(), index + 1, e.to_string()))?;
            }
        }
        Ok(Self {
            anchors: Arc::new(store.roots),
            files: Arc::new(files.to_vec()),
        })
    }

    /// The roots, to add to a client's root store.
    pub fn anchors(&self) -> &[TrustAnchor<'static>] {
        &self.anchors
    }

    /// The files they came from (for `/state` and the start-up line: paths only).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.anchors.is_empty()
    }
}

fn read(path: &Path) -> Result<Vec<CertificateDer<'static>>, TrustError> {
    let unreadable = |source| TrustError::Unreadable(path.to_owned(), source);
    let metadata = std::fs::metadata(path).map_err(unreadable)?;
    if metadata.len() > MAX_CA_FILE_BYTES {
        return Err(TrustError::TooLarge(path.to_owned()));
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    let found: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        // The kind of error only: its text may quote the file.
        .map_err(|e| TrustError::NotPem(path.to_owned(), pem_error_kind(&e)))?;
    if found.is_empty() {
        return Err(TrustError::Empty(path.to_owned()));
    }
    Ok(found)
}

fn pem_error_kind(error: &rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match error {
        Error::MissingSectionEnd { .. } => "a section without its end".into(),
        Error::IllegalSectionStart { .. } => "a malformed section start".into(),
        Error::Base64Decode(_) => "bad base64".into(),
        _ => "unreadable PEM".into(),
    }
}

impl std::fmt::Debug for TrustedRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustedRoots")
            .field("anchors", &self.anchors.len())
            .field("files", &self.files)
            .finish()
    }
}

impl PartialEq for TrustedRoots {
    fn eq(&self, other: &Self) -> bool {
        self.anchors == other.anchors
    }
}

impl Eq for TrustedRoots {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_without_usable_certificates_are_refused_without_their_contents() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            vec![path]
        };
        let secretish = "sk-not-a-certificate-7f3a";
        for (files, expected) in [
            (vec![dir.path().join("missing.pem")], "could not be read"),
            (write("empty.pem", secretish), "holds no certificate"),
            (
                write(
                    "broken.pem",
                    &format!("-----BEGIN CERTIFICATE-----\n{secretish}!!\n"),
                ),
                "not a PEM file",
            ),
            (
                write(
                    "junk.pem",
                    "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                ),
                "cannot be a root",
            ),
        ] {
            let error = TrustedRoots::load(&files).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
            assert!(!error.contains(secretish), "{error}");
        }
        assert!(TrustedRoots::load(&[]).unwrap().is_empty());
    }
}
