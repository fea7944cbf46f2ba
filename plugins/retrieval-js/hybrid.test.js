// Native unit tests of the plugin's host-independent code: the Rust crates' tests, ported.
// Run: `node --test` in this directory (no component build needed).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { TEXT_SNIPPET_BYTES, compareCodePoints, debugStr, debugVariant, fuse, lexicalWeight, textSnippet } from './hybrid.js';
import { MAX_TERMS, foldedTerms, ftsExpression, idMatch, idMatchFolded, idMatches, isAlphanumeric, terms, words } from './query.js';

// A hit as the host's records give it (`doc` a u64: a BigInt), with its score in its pool.
const c = (id, doc, score) => [{ id, title: id, doc: BigInt(doc) }, score];
// `fuse` of two pools given as [hit, score] pairs.
const fusePairs = (lexical, semantic, weight, limit) =>
  fuse(lexical.map(([h]) => h), lexical.map(([, s]) => s), semantic.map(([h]) => h), semantic.map(([, s]) => s), weight, limit);
const ids = (fused) => fused.map(([, x]) => x.id);
const utf8 = (s) => new TextEncoder().encode(s).length;

test('drops stop words and quotes terms', () => {
  assert.equal(ftsExpression(terms('How do I parse command line arguments?')), '"parse" OR "command" OR "line" OR "arguments"');
});

test('FTS syntax in the question is inert', () => {
  assert.equal(ftsExpression(terms('NEAR(a b) OR "x" * col:^y')), '"near" OR "b" OR "x" OR "col" OR "y"');
});

test('stop words only still searches', () => {
  assert.equal(ftsExpression(terms('how is it')), '"how" OR "is" OR "it"');
});

test('naming the object ranks it higher', () => {
  const t = terms('limit concurrency with an asyncio semaphore');
  assert.ok(idMatch('asyncio.Semaphore', t) > idMatch('asyncio.Semaphore.locked', t));
  assert.ok(idMatch('asyncio.Semaphore', t) > idMatch('asyncio.BoundedSemaphore', t));
});

test("the expression fits the host's bounds", () => {
  for (const question of [
    '文字列を分割する方法'.repeat(50),
    'é'.repeat(500),
    'a '.repeat(250),
    '𝔘'.repeat(500),
    Array.from({ length: 500 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(''),
  ]) {
    const t = terms(question);
    assert.ok(t.length <= MAX_TERMS);
    assert.ok(utf8(ftsExpression(t)) <= 8192);
  }
});

test('no terms at all', () => {
  assert.equal(ftsExpression(terms('?! 🙂 …')), null);
});

test("Rust's alphanumerics, by code point", () => {
  assert.deepEqual(terms('किताब'), ['किताब']);
  assert.deepEqual(terms('snake_case x'), ['snake_case', 'x']);
  assert.equal(terms('𝔘'.repeat(60))[0].length, 2 * 48); // 48 code points, 96 UTF-16 units
});

test('words are runs of Rust alphanumerics, at every code point', () => {
  // The regular expression that splits a question agrees with `isAlphanumeric` (the table Rust's
  // `char::is_alphanumeric` was generated into) on every code point.
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    const ch = String.fromCodePoint(cp);
    const expected = ch === '_' || isAlphanumeric(cp);
    const found = words(`.${ch}.`);
    if ((found.length === 1 && found[0] === ch) !== expected) assert.fail(`U+${cp.toString(16)}: expected ${expected}`);
  }
});

test('ids match ignoring ASCII case only', () => {
  assert.equal(idMatch('topic:Asyncio.Semaphore', ['asyncio', 'semaphore']), 2);
  assert.equal(idMatch('ÉTAT', ['état']), -0.5);
  assert.equal(idMatch('Émile_ZOLA.x', ['émile', 'zola']), 0);
  assert.equal(idMatch('a..b_', ['A', 'b']), 2);
});

test('ids scored together score as each alone', () => {
  const folded = foldedTerms(terms('asyncio semaphore TOPIC json Émile'));
  const ascii = ['asyncio.Semaphore', 'topic:Asyncio.Semaphore', 'TOPIC:json', 'topic:topic:json', 'a..b_', '', 'x_json.'];
  for (const ids of [ascii, [...ascii, 'Émile.x'], [...ascii, 'line\nfeed'], [...ascii, '\ntopic:json'], []]) {
    assert.deepEqual(idMatches(ids, folded), ids.map((id) => idMatchFolded(id, folded)), JSON.stringify(ids));
  }
});

test('a document in both pools beats one in either', () => {
  const fused = fusePairs([c('a', 1, 10), c('b', 2, 8)], [c('c', 3, 0.9), c('b', 2, 0.8), c('d', 4, 0.5)], 0.5);
  assert.deepEqual(ids(fused), ['b', 'a', 'c', 'd']);
  assert.ok(Math.abs(fused[0][0] - 0.8) < 1e-9);
  assert.ok(Math.abs(fused[1][0] - 0.75) < 1e-9);
});

test('a limit keeps the first of the full ranking and says which pool', () => {
  const lexical = [c('a', 1, 10), c('b', 2, 8)];
  const semantic = [c('c', 3, 0.9), c('b', 2, 0.8), c('d', 4, 0.5)];
  const full = fusePairs(lexical, semantic, 0.5);
  for (let limit = 0; limit < 6; limit++) assert.deepEqual(fusePairs(lexical, semantic, 0.5, limit), full.slice(0, limit));
  assert.deepEqual(full.map(([, , inLexical]) => inLexical), [true, true, false, false]);
});

test('the weight moves between lexical and semantic', () => {
  assert.equal(ids(fusePairs([c('lex', 1, 5)], [c('sem', 2, 0.9), c('lex', 1, 0.1)], 1))[0], 'lex');
  assert.equal(ids(fusePairs([c('lex', 1, 5)], [c('sem', 2, 0.9), c('lex', 1, 0.1)], 0))[0], 'sem');
});

test('either pool alone is ranked as it came', () => {
  assert.deepEqual(ids(fusePairs([], [c('x', 1, 0.7), c('y', 2, 0.9)], 0.3)), ['y', 'x']);
  assert.deepEqual(ids(fusePairs([c('x', 1, 2), c('y', 2, 3)], [], 0.3)), ['y', 'x']);
  assert.deepEqual(fusePairs([], [], 0.3), []);
});

test('ties are broken by id and non-finite scores sink', () => {
  assert.deepEqual(ids(fusePairs([], [c('b', 2, 0.5), c('a', 1, 0.5)], 0.3)), ['a', 'b']);
  const fused = fusePairs([c('nan', 1, NaN), c('ok', 2, 1)], [], 0.3);
  assert.deepEqual(ids(fused), ['ok', 'nan']);
  assert.ok(fused.every(([s]) => Number.isFinite(s)));
});

test("+0 beats -0, as in Rust's total_cmp", () => {
  assert.deepEqual(ids(fusePairs([], [c('a', 1, -0.2), c('b', 2, 0.1)], 1)), ['b', 'a']);
});

test('ids compare by code point, as Rust strings', () => {
  assert.ok(compareCodePoints('\u{E000}', '\u{10000}') < 0); // '<' on UTF-16 says the opposite
  const sign = (a, b) => Math.sign(compareCodePoints(a, b));
  const byCodePoint = (a, b) => {
    const [x, y] = [Array.from(a, (ch) => ch.codePointAt(0)), Array.from(b, (ch) => ch.codePointAt(0))];
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return Math.sign(x[i] - y[i]);
    return Math.sign(x.length - y.length);
  };
  const samples = ['', 'a', 'ab', 'b', '\u{7f}', '\u{d7ff}', '\u{e000}', '\u{ffff}', '\u{10000}', '\u{10ffff}', 'a\u{10000}', 'a\u{e000}'];
  for (const a of samples) for (const b of samples) assert.equal(sign(a, b), byCodePoint(a, b), `${a} ${b}`);
});

test('the weight setting is checked', () => {
  assert.equal(lexicalWeight(' 0.25 '), 0.25);
  assert.equal(lexicalWeight('1'), 1);
  assert.equal(lexicalWeight('.5'), 0.5);
  for (const bad of ['', 'x', '-0.1', '1.5', 'NaN', 'inf', 'Infinity', '0x1', '0_5']) {
    assert.throws(() => lexicalWeight(bad), RangeError, bad);
  }
  assert.throws(() => lexicalWeight('x"\n'), { message: 'lexical_weight must be a number in 0..=1, not "x\\"\\n"' });
});

test('text snippets are bounded on character boundaries', () => {
  assert.equal(textSnippet('  short text \n'), 'short text');
  const snippet = textSnippet('é'.repeat(400));
  assert.ok(utf8(snippet) <= TEXT_SNIPPET_BYTES);
  assert.ok(snippet.endsWith('…'));
  // Exactly the budget is kept whole; one byte more is cut to 297 bytes and the ellipsis.
  assert.equal(textSnippet(`\u{3000}${'a'.repeat(300)}\u{2029}`), 'a'.repeat(300));
  assert.equal(textSnippet('a'.repeat(301)), `${'a'.repeat(297)}…`);
  assert.equal(textSnippet(`${'a'.repeat(296)}𝔘b`), `${'a'.repeat(296)}…`);
});

test('debug formatting follows Rust', () => {
  assert.equal(debugStr('a "b"\t\u00e9\u0301'), '"a \\"b\\"\\t\u00e9\\u{301}"');
  assert.equal(debugVariant('CorpusError', { tag: 'bad-expression', val: 'x' }), 'CorpusError::BadExpression("x")');
  assert.equal(debugVariant('CorpusError', { tag: 'too-many-sessions' }), 'CorpusError::TooManySessions');
});
