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

/** Rust's `str::trim`: strips Unicode White_Space (JS's `trim` also strips U+FEFF, not U+0085). */
export function rustTrim(text) {
  // By UTF-16 unit: every White_Space code point is one unit outside the surrogates, and no
  // surrogate is white space, so this stops where a walk by code point would.
  let start = 0;
  let end = text.length;
  while (start < end && WHITE_SPACE.has(text.charCodeAt(start))) start++;
  while (end > start && WHITE_SPACE.has(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
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
 * Rust's `String` order: by code point (UTF-8 byte order). JS's `<` compares UTF-16 units, which
 * puts U+10000.. (surrogate pairs, D800..DFFF) before U+E000..U+FFFF; so at the first unit that
 * differs, units from D800 up are moved (surrogates above E000..FFFF), which orders well-formed
 * strings by code point without splitting them into arrays.
 */
export function compareCodePoints(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        x += x >= 0xe000 ? -0x800 : 0x2000;
        y += y >= 0xe000 ? -0x800 : 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

/**
 * Both pools fused, best first (ties by id): `[score, hit, inLexical]` triples, the first `limit`
 * of them (all without one). Each pool is its hits (objects with `id` and `doc`, the host's
 * records as they came) and, beside them, their scores in that pool (higher is better).
 *
 * `weight × lexical + (1 - weight) × semantic`, where the lexical score is divided by the pool's
 * best (so the best lexical hit scores 1; a document outside the pool matched no term and scores
 * 0) and the semantic score is the cosine similarity (a document outside the semantic pool is at
 * most as similar as the pool's last, and gets that).
 */
export function fuse(lexical, lexicalScores, semantic, semanticScores, weight, limit = Infinity) {
  let best = 0;
  for (const s of lexicalScores) if (Number.isFinite(s)) best = Math.max(best, s);
  let floor = Infinity;
  for (const s of semanticScores) if (Number.isFinite(s)) floor = Math.min(floor, s);
  if (!Number.isFinite(floor)) floor = 0;
  const rest = 1 - weight;

  // The semantic score of the first semantic hit of each document (the Rust code's `find`):
  // set from the last to the first, so the first of a document is the one left. Documents are
  // u64 handles, BigInts: a Map compares them by value.
  const similarityByDoc = new Map();
  for (let i = semantic.length - 1; i >= 0; i--) similarityByDoc.set(semantic[i].doc, semanticScores[i]);
  const lexicalDocs = new Set();

  // Plain loops, no callbacks: inside the component each function call costs about a microsecond.
  const hits = [];
  const scores = [];
  for (let i = 0; i < lexical.length; i++) {
    const hit = lexical[i];
    const score = lexicalScores[i];
    lexicalDocs.add(hit.doc);
    const near = similarityByDoc.get(hit.doc);
    const similarity = near === undefined || !Number.isFinite(near) ? floor : near;
    const value = best > 0 && Number.isFinite(score) ? Math.max(score / best, 0) : 0;
    hits.push(hit);
    scores.push(weight * value + rest * similarity);
  }
  const lexicalCount = hits.length;
  for (let i = 0; i < semantic.length; i++) {
    const hit = semantic[i];
    if (lexicalDocs.has(hit.doc)) continue;
    const score = semanticScores[i];
    hits.push(hit);
    scores.push(rest * (Number.isFinite(score) ? score : floor));
  }

  // The key of Rust's `f64::total_cmp` (-0 below +0, NaN above +Infinity: ties between 0 and -0,
  // weight 1's `0 × -0.3`, go as in Rust), once per score, as two 32-bit halves of the bits with
  // a negative number's magnitude bits flipped: the high half compares signed, the low unsigned.
  const count = scores.length;
  const high = new Int32Array(count);
  const low = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    bitsView.setFloat64(0, scores[i]);
    const h = bitsView.getInt32(0);
    const l = bitsView.getUint32(4);
    high[i] = h < 0 ? h ^ 0x7fffffff : h;
    low[i] = h < 0 ? ~l : l;
  }
  // Whether the i-th goes before the j-th (i > j): a higher key, or the same and a lower id. Equal
  // keys and ids keep their order, as Rust's stable `sort_by` does.
  const ahead = (i, j) =>
    high[i] !== high[j]
      ? high[i] > high[j]
      : low[i] !== low[j]
        ? low[i] > low[j]
        : compareCodePoints(hits[i].id, hits[j].id) < 0;
  // The best `limit`, by insertion into a list that keeps at most that many: most scores are
  // compared once, with the last one kept (a full sort compares each about log2(count) times;
  // without a limit this is an insertion sort, quadratic, of pools that hold 100 hits at most).
  const keep = Math.min(limit, count);
  const kept = [];
  for (let i = 0; i < count; i++) {
    let at = kept.length;
    // Most scores are below the last kept one: that is seen here, without a call.
    if (at === keep && high[i] < high[kept[at - 1]]) continue;
    while (at > 0 && ahead(i, kept[at - 1])) at--;
    if (at < keep) {
      kept.splice(at, 0, i);
      if (kept.length > keep) kept.pop();
    }
  }
  const fused = new Array(kept.length);
  for (let k = 0; k < kept.length; k++) {
    const i = kept[k];
    fused[k] = [scores[i], hits[i], i < lexicalCount];
  }
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
  // The UTF-8 bytes of the first code points, up to the first that goes past the budget (walked
  // by code point: a lone surrogate counts 3 bytes, as one would in Array.from's split).
  const budget = TEXT_SNIPPET_BYTES - utf8Length(ELLIPSIS.codePointAt(0));
  let used = 0;
  let cut = -1;
  for (let i = 0; i < trimmed.length; ) {
    const cp = trimmed.codePointAt(i);
    used += utf8Length(cp);
    if (used > budget && cut < 0) cut = i;
    if (used > TEXT_SNIPPET_BYTES) return trimmed.slice(0, cut) + ELLIPSIS;
    i += cp > 0xffff ? 2 : 1;
  }
  return trimmed;
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
