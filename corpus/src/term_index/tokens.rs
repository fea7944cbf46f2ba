//! Tokens as the index numbers them: a query's phrases, where a phrase occurs in a document's
//! tokens, and where unicode61's tokens are in a text.

/// A query's phrase as the index numbers its tokens: `None` when one of its tokens is in no
/// document (the phrase then matches nothing, as in FTS5).
pub(crate) type Phrase = Option<Box<[u32]>>;

/// Where `phrase` starts in `tokens`: every position, overlapping occurrences too.
pub(super) fn starts<'a>(tokens: &'a [u32], phrase: &'a [u32]) -> impl Iterator<Item = usize> + 'a {
    tokens
        .windows(phrase.len())
        .enumerate()
        .filter(move |(_, w)| *w == phrase)
        .map(|(at, _)| at)
}

/// Byte ranges of the runs of ASCII letters and digits in `text`: unicode61's tokens of an ASCII
/// text.
pub(super) fn ascii_tokens(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_alphanumeric() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            tokens.push((start, i));
        } else {
            i += 1;
        }
    }
    tokens
}

/// Byte ranges of unicode61's tokens in `text`: [`ascii_tokens`] for ASCII text; otherwise runs
/// that start with a letter or digit and go on with letters, digits and unicode61's diacritics.
pub(super) fn token_spans(text: &str) -> Vec<(usize, usize)> {
    if text.is_ascii() {
        return ascii_tokens(text);
    }
    let mut tokens = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match start {
            Some(_) if c.is_alphanumeric() || is_unicode61_diacritic(c) => {}
            Some(from) => {
                tokens.push((from, at));
                start = None;
            }
            None if c.is_alphanumeric() => start = Some(at),
            None => {}
        }
    }
    if let Some(from) = start {
        tokens.push((from, text.len()));
    }
    tokens
}

/// SQLite's `sqlite3Fts5UnicodeIsdiacritic`: the combining marks in U+0300..=U+0331 that
/// unicode61 keeps inside a token (and folds away).
pub(super) fn is_unicode61_diacritic(c: char) -> bool {
    const FIRST: u32 = 0x0300;
    const MASK_LOW: u32 = 0x0802_9FDF;
    const MASK_HIGH: u32 = 0x0003_61F8;
    match u32::from(c) {
        c @ FIRST..=0x031F => MASK_LOW & (1 << (c - FIRST)) != 0,
        c @ 0x0320..=0x0331 => MASK_HIGH & (1 << (c - 0x0320)) != 0,
        _ => false,
    }
}
