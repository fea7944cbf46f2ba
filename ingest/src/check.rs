//! What the build checks once the corpus is written: the id of a line (to name a repeated one),
//! and the corpus's own loader over the whole output, a piece at a time.

use std::io::BufRead;
use std::path::Path;

use crate::error::BuildError;

/// The id of the `n`th (0-based) line of the corpus written to `path`.
pub(crate) fn id_at(path: &Path, n: u32) -> std::io::Result<String> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: String,
    }
    let mut file = std::io::BufReader::new(std::fs::File::open(path)?);
    let mut line = Vec::new();
    for _ in 0..=n {
        line.clear();
        file.read_until(b'\n', &mut line)?;
    }
    let id: Id = serde_json::from_slice(&line).map_err(std::io::Error::other)?;
    Ok(id.id)
}

/// Bytes of the written corpus checked at a time, at most (whole lines; a line may pass it).
/// The loader holds a piece's documents and ids besides its bytes: about three times as much.
const CHECKED_BYTES: usize = 16 << 20;

/// Lines of the written corpus checked at a time, at most: short lines cost more per byte in
/// the loader (each document and id allocated on its own).
const CHECKED_LINES: usize = 1 << 16;

/// The server's own loader, on the bytes written: what `serve --corpus` will accept. Read in
/// pieces of whole lines, so the check holds a piece, not the corpus (the writer has made sure
/// that no id comes twice across pieces); a refusal names the line of the whole file.
pub(crate) fn loads(path: &Path) -> Result<(), BuildError> {
    let error = |source| BuildError::Write {
        path: path.to_owned(),
        source,
    };
    let mut file = std::io::BufReader::new(std::fs::File::open(path).map_err(error)?);
    let mut piece = Vec::new();
    let mut lines_before = 0;
    loop {
        piece.clear();
        let mut lines = 0;
        while piece.len() < CHECKED_BYTES && lines < CHECKED_LINES {
            if file.read_until(b'\n', &mut piece).map_err(error)? == 0 {
                break;
            }
            lines += 1;
        }
        if piece.is_empty() {
            return Ok(());
        }
        turnstile_corpus::load_documents(&piece).map_err(|e| match e {
            turnstile_corpus::CorpusError::BadDocument { line, reason } => {
                turnstile_corpus::CorpusError::BadDocument {
                    line: line + lines_before,
                    reason,
                }
            }
            other => other,
        })?;
        lines_before += lines;
    }
}
