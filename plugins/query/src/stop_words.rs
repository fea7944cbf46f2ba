/// English function words that carry no retrieval signal in a question.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "do", "does",
    "for", "from", "get", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of",
    "on", "or", "should", "so", "that", "the", "their", "them", "then", "there", "these", "this",
    "to", "use", "using", "was", "way", "we", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your",
];
