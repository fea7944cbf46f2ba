// The host-independent part of the hybrid retrieval plugin: fusion, settings, snippets, messages.
//
// A port of `plugins/retrieval-hybrid/src/lib.rs` (everything outside its `guest` module), free of
// the component's imports so that it runs natively under `node --test` (hybrid.test.js).
//
// Two candidate pools -- the bm25 pool of the question's terms, re-ranked by how well each id names
// the terms, and the pool of documents nearest the question's embedding -- are fused by score: a
// weighted sum of the pool-normalised lexical score and the cosine similarity (docs/RETRIEVAL.md).

import { isDebugEscaped } from './query.js';
import { WHITE_SPACE } from './unicode-tables.js';

/**
 * Candidates taken from each pool, whatever `limit` is (the host's most): the fused ranking does
 * not depend on `limit`, so a `limit: k` answer is the first k of a `limit: 20` answer.
 */
export const POOL = 50;
/** How much naming the object (segments of its id) moves a lexical candidate, relative to bm25. */
export const ID_WEIGHT = 0.2;
/** The lexical score's weight in the fusion; the Rust plugin's default (docs/RETRIEVAL.md's sweep). */
export const LEXICAL_WEIGHT = 0.15;
/** Longest snippet, in UTF-8 bytes, made from a document's text when the question's terms do not occur in it. */
export const TEXT_SNIPPET_BYTES = 300;

const ELLIPSIS = '\u2026';
// What Rust's `str::parse::<f64>` accepts, less `inf`/`nan` (outside 0..=1 anyway). JS's `Number`
// alone would also take '', '0x1', ' 1 ' with other white space, and 'Infinity'.
const FLOAT = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

/**
 * A document one pool found, with that pool's score (higher is better). `doc` is the host's
 * handle, a u64: a BigInt in JS (compared by value, also as a Map key).
 */
export function candidate(id, title, doc, score, lexical = false) {
  return { id, title, doc, score, lexical };
}

/** Rust's `str::trim`: strips Unicode White_Space (JS's `trim` also strips U+FEFF, not U+0085). */
export function rustTrim(text) {
  const chars = Array.from(text);
  let start = 0;
  let end = chars.length;
  while (start < end && WHITE_SPACE.has(chars[start].codePointAt(0))) start++;
  while (end > start && WHITE_SPACE.has(chars[end - 1].codePointAt(0))) end--;
  return chars.slice(start, end).join('');
}

/** The `lexical_weight` setting: a number in 0..=1; throws a RangeError with the operator's message otherwise. */
export function lexicalWeight(value) {
  const text = rustTrim(value);
  if (FLOAT.test(text)) {
    const weight = Number(text);
    if (weight >= 0 && weight <= 1) return weight;
  }
  throw new RangeError(`lexical_weight must be a number in 0..=1, not ${debugStr(value)}`);
}

const bitsView = new DataView(new ArrayBuffer(8));

/**
 * The key of Rust's `f64::total_cmp`: -0.0 sorts below +0.0 and NaN above +Infinity. Rust sorts the
 * fused list with it, so ties between 0 and -0 (weight 1: `0 × -0.3`) go as in Rust.
 */
function totalOrder(x) {
  bitsView.setFloat64(0, x);
  const bits = bitsView.getBigInt64(0);
  return bits < 0n ? bits ^ 0x7fffffffffffffffn : bits;
}

/**
 * Rust's `String` order: by code point (UTF-8 byte order). JS's `<` compares UTF-16 units, which
 * puts U+10000.. before U+E000..U+FFFF.
 */
export function compareCodePoints(a, b) {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/**
 * Both pools fused, best first (ties by id): `weight × lexical + (1 - weight) × semantic`, where
 * the lexical score is divided by the pool's best (so the best lexical hit scores 1; a document
 * outside the pool matched no term and scores 0) and the semantic score is the cosine similarity
 * (a document outside the semantic pool is at most as similar as the pool's last, and gets that).
 * Returns `[score, candidate]` pairs.
 */
export function fuse(lexical, semantic, weight) {
  let best = 0;
  for (const c of lexical) if (Number.isFinite(c.score)) best = Math.max(best, c.score);
  let floor = Infinity;
  for (const c of semantic) if (Number.isFinite(c.score)) floor = Math.min(floor, c.score);
  if (!Number.isFinite(floor)) floor = 0;

  const lexicalScore = (c) => (best > 0 && Number.isFinite(c.score) ? Math.max(c.score / best, 0) : 0);
  const semanticScore = (c) => (Number.isFinite(c.score) ? c.score : floor);

  // The first semantic candidate of each document (the Rust code's `find`).
  const semanticByDoc = new Map();
  for (const c of semantic) if (!semanticByDoc.has(c.doc)) semanticByDoc.set(c.doc, c);
  const lexicalDocs = new Set(lexical.map((c) => c.doc));

  const fused = [];
  for (const c of lexical) {
    const near = semanticByDoc.get(c.doc);
    const similarity = near !== undefined ? semanticScore(near) : floor;
    fused.push([weight * lexicalScore(c) + (1 - weight) * similarity, c]);
  }
  for (const c of semantic) {
    if (!lexicalDocs.has(c.doc)) fused.push([(1 - weight) * semanticScore(c), c]);
  }
  // Array.prototype.sort is stable, as Rust's `sort_by`.
  fused.sort(([a, x], [b, y]) => {
    const ka = totalOrder(a);
    const kb = totalOrder(b);
    if (ka !== kb) return kb > ka ? 1 : -1;
    return compareCodePoints(x.id, y.id);
  });
  return fused;
}

/** UTF-8 length of code point `cp`. */
function utf8Length(cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/**
 * The start of a document's text, at most TEXT_SNIPPET_BYTES of UTF-8, cut on a character boundary
 * and marked with an ellipsis.
 */
export function textSnippet(text) {
  const trimmed = rustTrim(text);
  const chars = Array.from(trimmed);
  const bytes = chars.reduce((n, ch) => n + utf8Length(ch.codePointAt(0)), 0);
  if (bytes <= TEXT_SNIPPET_BYTES) return trimmed;
  const budget = TEXT_SNIPPET_BYTES - utf8Length(ELLIPSIS.codePointAt(0));
  let used = 0;
  let kept = '';
  for (const ch of chars) {
    const n = utf8Length(ch.codePointAt(0));
    if (used + n > budget) break;
    used += n;
    kept += ch;
  }
  return kept + ELLIPSIS;
}

const DEBUG_ESCAPES = { '\t': '\\t', '\r': '\\r', '\n': '\\n', '\\': '\\\\', '"': '\\"', '\0': '\\0' };

/** `text` quoted and escaped as Rust's `{:?}` shows a string, so messages read as the Rust plugin's do. */
export function debugStr(text) {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (ch in DEBUG_ESCAPES) out += DEBUG_ESCAPES[ch];
    else if (isDebugEscaped(cp)) out += `\\u{${cp.toString(16)}}`;
    else out += ch;
  }
  return `${out}"`;
}

/** `kebab-case` → `PascalCase`: a WIT case name as wit-bindgen names the Rust enum variant. */
function pascal(name) {
  return name.replace(/(^|-)([a-z0-9])/g, (_, _dash, c) => c.toUpperCase());
}

/**
 * A WIT variant value as componentize-js gives it (`{ tag: 'bad-expression', val: '...' }`) shown
 * as the Rust plugin's `{:?}` shows its wit-bindgen counterpart:
 * `debugVariant('CorpusError', e)` → `CorpusError::BadExpression("...")`.
 */
export function debugVariant(typeName, value) {
  const name = `${typeName}::${pascal(value.tag)}`;
  if (!('val' in value) || value.val === undefined) return name;
  return `${name}(${typeof value.val === 'string' ? debugStr(value.val) : String(value.val)})`;
}
