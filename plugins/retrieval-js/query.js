// What a retrieval plugin does with an untrusted question before the corpus sees it.
//
// A port of turnstile's `plugins/query` crate (`retrieval_query`): the question's terms (stop words
// dropped, bounded), an FTS5 expression in which every term is a quoted string -- so FTS5 syntax
// typed by a user (`AND`, `NEAR`, `*`, `"`, `:`...) is inert -- and how well a document id names
// the question's terms.
//
// It must give the Rust crate's answers exactly: the terms decide the bm25 pool and the id-match
// bonus, and so the ranking. Strings are walked by code point (`for...of`), never by UTF-16 unit,
// because Rust counts `char`s. No Unicode property escapes (`\p{...}`): the engine inside a
// componentize-js component has no ICU and rejects them; the sets come from unicode-tables.js.

import { ALNUM_ENDS, ALNUM_STARTS, DEBUG_ESCAPED_ENDS, DEBUG_ESCAPED_STARTS } from './unicode-tables.js';

/** Questions longer than this many terms are cut: a longer OR-expression only adds noise and cost. */
export const MAX_TERMS = 32;
/**
 * Terms longer than this many characters (code points) are cut: a run of 500 letters with no
 * separator, as in Japanese text, is one "word". With MAX_TERMS this bounds the expression to 6,332
 * bytes, within the host's 8 KiB and 64 terms.
 */
export const MAX_TERM_CHARS = 48;

/** English function words that carry no retrieval signal in a question (the crate's stop_words.rs). */
export const STOP_WORDS = new Set([
  'a', 'about', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'can', 'could', 'do', 'does',
  'for', 'from', 'get', 'how', 'i', 'if', 'in', 'into', 'is', 'it', 'its', 'me', 'my', 'of',
  'on', 'or', 'should', 'so', 'that', 'the', 'their', 'them', 'then', 'there', 'these', 'this',
  'to', 'use', 'using', 'was', 'way', 'we', 'what', 'when', 'where', 'which', 'who', 'why',
  'will', 'with', 'would', 'you', 'your',
]);

/** Whether code point `cp` is in one of the sorted ranges `starts[i]..=ends[i]`. */
export function inRanges(cp, starts, ends) {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (starts[mid] <= cp) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && cp <= ends[lo - 1];
}

/** Rust's `char::is_alphanumeric` (Unicode Alphabetic or Numeric) of the code point `cp`. */
export function isAlphanumeric(cp) {
  if (cp < 0x80) {
    return (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);
  }
  return inRanges(cp, ALNUM_STARTS, ALNUM_ENDS);
}

/** Whether Rust's `{:?}` of a string shows code point `cp` as `\u{...}` (see unicode-tables.js). */
export function isDebugEscaped(cp) {
  return inRanges(cp, DEBUG_ESCAPED_STARTS, DEBUG_ESCAPED_ENDS);
}

/**
 * A run of `_` and Rust alphanumerics (the ranges of `isAlphanumeric`) as one character class, so
 * that a question is split into words by the regular expression engine, not a loop over its
 * characters. Built here, at module level: componentize-js runs the module once, at build time,
 * and every call starts from that snapshot. (Explicit ranges need no ICU, unlike `\p{...}`.)
 */
const WORD = new RegExp(
  `[_${ALNUM_STARTS.map((start, i) => `\\u{${start.toString(16)}}-\\u{${ALNUM_ENDS[i].toString(16)}}`).join('')}]+`,
  'gu',
);

/** The maximal runs of alphanumerics and `_` in `question`, in order. */
export function words(question) {
  return question.match(WORD) ?? [];
}

/**
 * Lowercased alphanumeric terms of `question`, stop words dropped (unless nothing else is left),
 * deduplicated in order of appearance, at most MAX_TERMS.
 */
export function terms(question) {
  const all = [];
  for (const word of words(question)) {
    // Lowercase first, then cut to MAX_TERM_CHARS code points, as the crate does (`İ` lowercases
    // to two code points). `toLowerCase` is locale-independent and applies the final-sigma rule,
    // as Rust's `to_lowercase` does.
    // (A word of at most MAX_TERM_CHARS UTF-16 units has at most as many code points: no cut.)
    const lower = word.toLowerCase();
    const term = lower.length <= MAX_TERM_CHARS ? lower : Array.from(lower).slice(0, MAX_TERM_CHARS).join('');
    if (!all.includes(term)) all.push(term);
  }
  const content = all.filter((w) => !STOP_WORDS.has(w));
  return (content.length > 0 ? content : all).slice(0, MAX_TERMS);
}

const NON_ASCII = /[^\0-\x7f]/;
const ID_SEPARATORS = /[._]/;
const ASCII_UPPER = /[A-Z]/g;

/**
 * ASCII letters lowercased, nothing else: the folding of Rust's `eq_ignore_ascii_case`
 * (`toLowerCase` where that is the same: an ASCII string).
 */
function asciiLower(text) {
  if (!NON_ASCII.test(text)) return text.toLowerCase();
  return text.replace(ASCII_UPPER, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}

/** The question's terms as `idMatchFolded` compares them, ASCII case folded: once per question. */
export function foldedTerms(queryTerms) {
  return new Set(queryTerms.map(asciiLower));
}

/** `idMatch` against terms already folded by `foldedTerms`. */
export function idMatchFolded(id, folded) {
  const bare = id.startsWith('topic:') ? id.slice('topic:'.length) : id;
  // Folding the id once, before it is split, folds each segment: `.` and `_` are not letters.
  return segmentsMatch(asciiLower(bare).split(ID_SEPARATORS), folded);
}

/** +1 for each non-empty segment in `folded`, -0.5 for each other. */
function segmentsMatch(segments, folded) {
  let score = 0;
  for (let i = 0; i < segments.length; i++) {
    if (segments[i]) score += folded.has(segments[i]) ? 1 : -0.5;
  }
  return score;
}

/**
 * `idMatchFolded` of each of `ids`, by a few string operations over all of them at once. Inside
 * the component every call, even of a built-in, costs about a microsecond in SpiderMonkey's
 * interpreter, and the per-id way makes five of them per id: here it is one `split` per id. When
 * an id holds something the joined form cannot carry (a line feed, a non-ASCII character), each id
 * is scored alone.
 */
export function idMatches(ids, folded) {
  // A line feed before each id: `\ntopic:` is the prefix to drop, and the separator to split on.
  const joined = `\n${ids.join('\n')}`;
  if (!NON_ASCII.test(joined)) {
    // ASCII only: `toLowerCase` folds exactly the ASCII letters, and `_` is made a `.`.
    const bare = joined.replaceAll('\ntopic:', '\n').toLowerCase().replaceAll('_', '.').split('\n');
    if (bare.length === ids.length + 1) {
      const scores = new Array(ids.length);
      for (let i = 0; i < ids.length; i++) scores[i] = segmentsMatch(bare[i + 1].split('.'), folded);
      return scores;
    }
  }
  return ids.map((id) => idMatchFolded(id, folded));
}

/**
 * How well a document id matches the question's terms: +1 for each id segment (split on `.` and
 * `_`) that is a term, ignoring ASCII case, -0.5 for each that is not. `asyncio.Semaphore` matches
 * "asyncio semaphore" better than `asyncio.Semaphore.locked` or `asyncio.BoundedSemaphore`. To
 * score many ids against one question, fold its terms once (`foldedTerms`) and call
 * `idMatchFolded`.
 */
export function idMatch(id, queryTerms) {
  return idMatchFolded(id, foldedTerms(queryTerms));
}

/** An FTS5 expression that ORs every term as a quoted string, or `null` when there is no term. */
export function ftsExpression(queryTerms) {
  if (queryTerms.length === 0) return null;
  // Terms hold only alphanumerics and `_`, but double any quote anyway: that is FTS5's escape
  // inside a string, so the expression stays inert whatever the tokenizer does.
  return queryTerms.map((t) => `"${t.replaceAll('"', '""')}"`).join(' OR ');
}
