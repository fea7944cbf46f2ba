//! What the corpus benchmarks share: the plugins' expressions for questions, and the question mix.

// The plugins' own stop-word list, so the expressions here are exactly the plugins'.
include!("../../../plugins/query/src/stop_words.rs");

/// The expression the plugins build: lowercased terms, stop words dropped, deduplicated, each
/// quoted, joined with ` OR `.
pub fn expression(question: &str) -> String {
    let mut terms: Vec<String> = Vec::new();
    for word in question
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if !STOP_WORDS.contains(&word.as_str()) && !terms.contains(&word) {
            terms.push(word);
        }
    }
    terms
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// The expressions of the question mix (`bench/mix.jsonl`: one JSON body per line, 150 dev
/// questions).
pub fn mix() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/mix.jsonl"))
        .expect("bench/mix.jsonl");
    text.lines()
        .map(|line| {
            let body: serde_json::Value = serde_json::from_str(line).expect("a JSON body");
            expression(body["question"].as_str().expect("a question"))
        })
        .collect()
}
