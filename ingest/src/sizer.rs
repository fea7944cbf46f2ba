//! Sizes in the shipped embedding model's tokens and in characters, for [`crate::pack`]: a
//! text's tokens are its words' (the tokenizer splits at whitespace before anything else), each
//! word tokenized once per thread.

use std::cell::RefCell;
use std::collections::HashMap;

use turnstile_embed::ShippedTokenizer;

/// Distinct words whose token counts are kept (each thread forgets them all when it has this
/// many: a few MiB).
const MAX_CACHED_WORDS: usize = 100_000;
/// Longer words are tokenized each time.
const MAX_CACHED_WORD_BYTES: usize = 64;

thread_local! {
    /// Words' token counts, as measured by the shipped model's tokenizer.
    static WORD_TOKENS: RefCell<HashMap<Box<str>, u32>> = RefCell::new(HashMap::new());
}

/// A length in the model's tokens and in characters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Size {
    pub tokens: usize,
    pub chars: usize,
}

impl Size {
    pub fn plus(self, other: Size) -> Size {
        Size {
            tokens: self.tokens + other.tokens,
            chars: self.chars + other.chars,
        }
    }

    pub fn within(self, bound: Size) -> bool {
        self.tokens <= bound.tokens && self.chars <= bound.chars
    }
}

/// Counts tokens with the shipped model's tokenizer.
pub(crate) struct Sizer {
    embedder: Option<&'static ShippedTokenizer>,
    pub bound: Size,
    /// The last piece measured (its address, length and bound) and what it measured.
    last: Option<((usize, usize, Size), Option<Size>)>,
}

impl Sizer {
    pub fn new(bound: Size) -> Self {
        Self {
            // The model is compiled into the binary and `build` checks that it loads before any
            // text is cut; were it not there, a character is counted as a token (ASCII text has
            // no more tokens than characters).
            embedder: ShippedTokenizer::get().ok(),
            bound,
            last: None,
        }
    }

    /// Tokens of `piece`, without the tokenizer's special tokens: the sum of its words'. The
    /// tokenizer splits at whitespace before anything else (its normalizer works a character at
    /// a time), so the tokens of pieces joined by whitespace add up, and a word's count is
    /// kept: words repeat across a corpus, and the tokenizer costs far more than a look-up.
    pub fn tokens(&mut self, piece: &str) -> usize {
        let Some(embedder) = self.embedder else {
            return piece.chars().filter(|c| !c.is_whitespace()).count();
        };
        piece
            .split_whitespace()
            .map(|word| word_tokens(embedder, word))
            .sum()
    }

    /// The size of `piece` when it is within `bound`: its characters counted first (a piece over
    /// the character bound is never tokenized, so the tokenizer reads at most that much).
    pub fn size_within(&mut self, piece: &str, bound: Size) -> Option<Size> {
        let key = (piece.as_ptr() as usize, piece.len(), bound);
        if let Some((last, size)) = self.last
            && last == key
        {
            return size;
        }
        let chars = piece.chars().count();
        let size = if chars > bound.chars || fewest_tokens(piece) > bound.tokens {
            None
        } else {
            let tokens = self.tokens(piece);
            (tokens <= bound.tokens).then_some(Size { tokens, chars })
        };
        // The same piece is asked about again as the whole text, its block and the first of
        // its pieces: measured once.
        self.last = Some((key, size));
        size
    }

    /// Whether `text` is one passage. ASCII text has at most one token per character that is
    /// not whitespace, so a short row needs no tokenizer.
    pub fn fits_whole(&mut self, text: &str) -> bool {
        if text.is_ascii() && text.len() <= self.bound.chars {
            let visible = text.bytes().filter(|b| !b.is_ascii_whitespace()).count();
            if visible <= self.bound.tokens {
                return true;
            }
        }
        self.size_within(text, self.bound).is_some()
    }
}

/// The tokens of `word` (no whitespace in it), from the thread's counts when it was seen.
fn word_tokens(embedder: &ShippedTokenizer, word: &str) -> usize {
    if word.len() > MAX_CACHED_WORD_BYTES {
        return embedder.count(word);
    }
    WORD_TOKENS.with_borrow_mut(|known| {
        if let Some(&n) = known.get(word) {
            return n as usize;
        }
        let n = embedder.count(word);
        if known.len() >= MAX_CACHED_WORDS {
            known.clear();
        }
        known.insert(word.into(), u32::try_from(n).unwrap_or(u32::MAX));
        n
    })
}

/// The fewest tokens ASCII `piece` can have (0 for other text): the tokenizer splits at
/// whitespace and around each punctuation character, and each run of letters and digits left is
/// at least one token.
fn fewest_tokens(piece: &str) -> usize {
    if !piece.is_ascii() {
        return 0;
    }
    let mut count = 0;
    let mut in_word = false;
    for b in piece.bytes() {
        match b {
            // What the tokenizer takes as whitespace; its other control characters are dropped
            // (the letters around one are one word).
            b' ' | b'\t' | b'\n' | b'\r' => in_word = false,
            _ if b.is_ascii_punctuation() => {
                count += 1;
                in_word = false;
            }
            _ if b.is_ascii_alphanumeric() => {
                count += usize::from(!in_word);
                in_word = true;
            }
            _ => {}
        }
    }
    count
}

impl Sizer {
    /// Tokens of text that is not part of the cut text (a fence), measured whole.
    pub fn unmemoized(&self, piece: &str) -> usize {
        match self.embedder {
            Some(embedder) => embedder.count(piece),
            None => piece.chars().filter(|c| !c.is_whitespace()).count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnstile_embed::Embedder;

    const BOUND: Size = Size {
        tokens: 40,
        chars: 2000,
    };

    fn tokens(text: &str) -> usize {
        Embedder::shipped().unwrap().tokens(text).len()
    }

    #[test]
    fn the_fewest_tokens_are_never_more_than_the_tokens() {
        for text in [
            "Plain words, with punctuation: e.g. this; v1.2!",
            "a\x0cb\x0bc\x7fd \t\r\n x",
            "snake_case and kebab-case, CamelCase 3.14159",
            "```python\ndef f(x): return x ** 2\n```",
            "",
        ] {
            assert!(fewest_tokens(text) <= tokens(text), "{text:?}");
        }
        assert_eq!(fewest_tokens("one, two"), 3);
        assert_eq!(fewest_tokens("é"), 0);
    }

    #[test]
    fn tokens_of_words_add_up_to_the_tokens_of_the_text() {
        let mut sizer = Sizer::new(BOUND);
        for text in [
            "Plain words, with punctuation: e.g. this; v1.2! (and more) \"quoted\"",
            "ΟΔΟΣ Σ σοφός — Ünïcödé façade naïve 東京は日本の首都です 한국어 문장",
            "a\u{0}b c\u{fffd}d e\u{7f}f \u{200b}zero-width\u{00a0}nbsp \u{301}mark",
            "```python\n    def f(x):\n        return x ** 2\n```",
            &"x".repeat(150),
        ] {
            let whole = Embedder::shipped().unwrap().tokens(text).len();
            assert_eq!(sizer.tokens(text), whole, "{text:?}");
        }
    }
}
