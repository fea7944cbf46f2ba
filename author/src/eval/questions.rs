//! The question file: JSON Lines, one `{"q": "...", "expect": ["id", ...]}` per line (the public
//! dev set's format), bounded in questions; an error names the line.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Most questions in a file.
pub const MAX_QUESTIONS: usize = 100_000;

/// One question of the file.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Question {
    /// The question.
    pub q: String,
    /// Acceptable ids.
    pub expect: Vec<String>,
}

/// Reads a question file; an error names the line.
pub fn read_questions(path: &Path) -> anyhow::Result<Vec<Question>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut questions = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let question: Question = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{} line {}: expected {{\"q\": \"...\", \"expect\": [\"id\", ...]}}: {e}",
                path.display(),
                i + 1
            )
        })?;
        if question.expect.is_empty() {
            anyhow::bail!("{} line {}: \"expect\" is empty", path.display(), i + 1);
        }
        questions.push(question);
        if questions.len() > MAX_QUESTIONS {
            anyhow::bail!("{}: more than {MAX_QUESTIONS} questions", path.display());
        }
    }
    if questions.is_empty() {
        anyhow::bail!("{}: no question", path.display());
    }
    Ok(questions)
}
