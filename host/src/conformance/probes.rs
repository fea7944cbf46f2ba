//! The fixed probe set, over the shipped corpus.

/// Ordinary questions: a plugin must answer each with a result (possibly empty), never an error.
pub const QUESTIONS: &[&str] = &[
    "How do I parse command line arguments?",
    "serialize an object to a JSON formatted string",
    "limit concurrency with an asyncio semaphore",
    "read rows from a CSV file",
    "run a subprocess and capture its output",
    "compute a sha256 hash of some bytes",
];

/// Adversarial questions: a result or a typed error is fine; a trap is not.
pub fn adversarial() -> Vec<(&'static str, String)> {
    vec![
        (
            "fts5-operators",
            "json AND dumps OR loads NOT pickle NEAR(a b) * \" ( ) : ^".to_owned(),
        ),
        ("column-filter", "title:json text:dumps".to_owned()),
        ("unbalanced-quotes", "\"json \"\" dumps".to_owned()),
        ("quotes-only", "\"\"\"\"".to_owned()),
        ("emoji", "🙂🚀 parse 🐍 arguments".to_owned()),
        (
            "non-ascii",
            "Übersetzung 日本語 العربية проверка".to_owned(),
        ),
        ("max-length", "parse ".repeat(83) + "ab"),
        ("stop-words-only", "how do I do it with the".to_owned()),
        ("punctuation-only", "?!.,;:-_()[]{}".to_owned()),
    ]
}
