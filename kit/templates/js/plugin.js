// {{name}}: a lexical retrieval plugin for turnstile (world `retrieval-plugin` of
// `turnstile:retrieval@0.1.4`, in `wit/`), built with componentize-js.
//
// For each question it builds a safe FTS5 expression from the question's words, lets the host
// rank a pool of candidates by bm25 (`session.rank`), keeps the best `limit`, and asks a snippet
// for each hit it keeps (`session.snippet`). Make it yours in `score` (re-rank the pool) and
// `terms` (what is searched for). With the setting `upstream` (an OpenAI-compatible server's
// origin), it also asks that model to answer from the sources (`ask`): off by default.
//
// This module runs inside the component (StarlingMonkey, a SpiderMonkey build), not in Node: there
// is no `process`, `fs` or `require`, and no Intl/ICU (a `\p{...}` regular expression fails the
// build). Relative `import`s of other modules of the project work. The WIT interfaces are imported
// by name; componentize-js generates them from `wit/` at build time. How it maps WIT values:
// `option` is a value or `undefined`, `u64` a BigInt, a `result` error of an import is thrown as an
// Error whose own `payload` is the WIT value (`{ tag: 'bad-expression', val: '...' }`).

import { append } from 'turnstile:retrieval/answer@0.1.4';
import { get as setting } from 'turnstile:retrieval/config@0.1.4';
import { Session } from 'turnstile:retrieval/corpus@0.1.4';
import { write as log } from 'turnstile:retrieval/log@0.1.4';

// Candidates ranked per question, whatever `limit` is (the host asks for 1..=20). Ranking costs
// about the same for 50 as for 5 (SQLite scores every matching document anyway), and a wider pool
// leaves room for `score` to promote a hit bm25 placed lower.
const POOL = 50;
// At most this many terms: a longer OR-expression only adds noise and cost.
const MAX_TERMS = 32;
// Terms are cut to this many characters (a run of 500 letters with no separator, as in Japanese
// text, is one "word"). With MAX_TERMS this keeps the expression well within the host's bound.
const MAX_TERM_CHARS = 48;
// English function words that carry no retrieval signal in a question.
const STOP_WORDS = new Set(
  ('a an and are as at be by can do does for from how i in is it me my of on or the this to use ' +
    'what when which with you').split(' '),
);
// Code points beyond ASCII that separate words: Latin-1 punctuation and symbols, × and ÷, general
// punctuation to arrows and dingbats, CJK punctuation, variation selectors and small/fullwidth
// punctuation, emoji. A stand-in for `\p{L}\p{N}`, which this engine lacks; FTS5's tokenizer
// has the last word on what a term's characters are (a term of no letter, e.g. "🙂", matches
// nothing).
const SEPARATORS = [
  [0x80, 0xbf], [0xd7, 0xd7], [0xf7, 0xf7], [0x2000, 0x2bff], [0x2e00, 0x2e7f], [0x3000, 0x303f],
  [0xfe00, 0xfe6f], [0xff00, 0xff0f], [0xff1a, 0xff20], [0xff3b, 0xff40], [0xff5b, 0xff65],
  [0x1f000, 0x1faff],
];
// A word: a run of ASCII letters and digits, or of code points beyond ASCII that are neither white
// space nor in SEPARATORS. One regular expression, built here at the top level: componentize-js
// runs this module once, at build time, and every call starts from a snapshot taken after it.
const WORD = new RegExp(
  `[^\\0-/:-@[-\`{-\\x7f\\s${SEPARATORS.map(([lo, hi]) => `\\u{${lo.toString(16)}}-\\u{${hi.toString(16)}}`).join('')}]+`,
  'gu',
);

/**
 * The export's error. componentize-js returns the thrown value's own `payload` as the `err` of
 * `retrieve`'s result (`{ tag: 'corpus' | 'config' | 'internal', val: message }`).
 */
class RetrieveError extends Error {
  constructor(tag, message) {
    super(message);
    this.name = 'RetrieveError';
    this.payload = { tag, val: message };
  }
}

/**
 * The component's export: at most `limit` sources for `question`, best first. `async`, so it can
 * wait for `fetch`: componentize-js runs the event loop until the promise settles.
 */
export async function retrieve(question, limit) {
  // Anything else thrown out of `retrieve` (a TypeError, an import's error) is not an error
  // result: its lowering fails and the component traps, and the host sees no message. So every
  // failure becomes a `retrieve-error` here, whatever it is.
  try {
    const sources = search(question, limit);
    const upstream = setting('upstream');
    if (upstream !== undefined && sources.length > 0) await ask(upstream, question, sources);
    return sources;
  } catch (error) {
    if (error instanceof RetrieveError) throw error;
    if (error !== null && typeof error === 'object' && Object.hasOwn(error, 'payload')) {
      // An import's error, e.g. { tag: 'bad-expression', val: "fts5: syntax error near ..." }.
      const { tag, val } = error.payload;
      throw new RetrieveError('corpus', val === undefined ? tag : `${tag}: ${val}`);
    }
    throw new RetrieveError('internal', describe(error));
  }
}

/** The best `limit` sources for `question`, best first. A corpus error is thrown. */
function search(question, limit) {
  const queryTerms = terms(question);
  const expression = ftsExpression(queryTerms);
  if (expression === null) {
    log('debug', 'the question has no searchable terms');
    return [];
  }
  // The session is the plugin's read-only handle on the corpus.
  const session = Session.open();
  try {
    const pool = session
      .rank(expression, POOL)
      .map((hit) => ({ hit, score: score(hit, queryTerms) }))
      // The host refuses a source whose score is not finite.
      .filter(({ score }) => Number.isFinite(score))
      // Best first; ties by id, so the same question always gets the same answer.
      .sort((a, b) => b.score - a.score || byId(a.hit, b.hit));
    // A snippet re-reads its document, so only the hits kept get one.
    return pool.slice(0, limit).map(({ hit, score }) => ({
      id: hit.id,
      title: hit.title,
      snippet: session.snippet(expression, hit.doc) ?? '',
      score,
    }));
  } finally {
    // Release the host's connection now rather than at some later garbage collection. (The
    // bindings use `Symbol.for('dispose')` where the engine has no `Symbol.dispose`.)
    session[Symbol.dispose ?? Symbol.for('dispose')]();
  }
}

/**
 * Asks the model at `upstream` (an OpenAI-compatible server's origin, `--plugin-config
 * upstream=http://127.0.0.1:8000`; `model` names the model, if it needs one) to answer from the
 * sources, and appends its answer to the response, beside them. `fetch` goes out over wasi:http,
 * only to an origin the operator granted (`turnstile serve --outbound-allow ORIGIN`); if the model
 * fails, the sources answer alone and the log says why; a request the host refuses (an origin
 * not granted; `turnstile check` and a swap's smoke checks grant none) rejects like any failure.
 */
async function ask(upstream, question, sources) {
  const passages = sources.map((s) => `id: ${s.id}\n${s.title}\n${s.snippet}`).join('\n\n');
  try {
    const response = await fetch(`${upstream}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: setting('model'), // left out when not set
        messages: [
          { role: 'system', content: `Answer from these sources only, citing their ids as [id].\n\n${passages}` },
          { role: 'user', content: question },
        ],
      }),
    });
    if (!response.ok) throw new Error(`the upstream answered ${response.status}`);
    const text = (await response.json())?.choices?.[0]?.message?.content;
    if (typeof text === 'string') append(text);
  } catch (error) {
    log('warn', `no answer from ${upstream}: ${error}`);
  }
}

/** Orders hits by id (code unit order: ids are ASCII). */
function byId(a, b) {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * How relevant `hit` is: higher is better. bm25's rank is lower-is-better, so negate it. This is
 * the place to re-rank the pool (e.g. favour a hit whose id names a term).
 */
function score(hit, queryTerms) {
  return -hit.rank;
}

/**
 * The question's words (runs of letters and digits), lowercased, deduplicated in order, stop words
 * dropped (unless nothing else is left), bounded.
 */
function terms(question) {
  const words = (question.match(WORD) ?? []).map((word) => {
    const lower = word.toLowerCase();
    // Cut to MAX_TERM_CHARS code points (not UTF-16 units: an emoji is one character, not two
    // halves); a word of at most that many units needs no cut.
    return lower.length <= MAX_TERM_CHARS ? lower : Array.from(lower).slice(0, MAX_TERM_CHARS).join('');
  });
  const all = [...new Set(words)];
  const content = all.filter((w) => !STOP_WORDS.has(w));
  return (content.length > 0 ? content : all).slice(0, MAX_TERMS);
}

/**
 * The terms as an FTS5 expression: each a quoted string, joined by ` OR `, or null without a term.
 * Quoting makes anything the user typed inert (`AND`, `NEAR`, `*`, `:`, `"`): the question is
 * untrusted text, and the host would answer FTS5 syntax errors with `bad-expression`.
 */
function ftsExpression(queryTerms) {
  if (queryTerms.length === 0) return null;
  // `""` is FTS5's escape for a quote inside a string (terms hold none, but stay safe).
  return queryTerms.map((t) => `"${t.replaceAll('"', '""')}"`).join(' OR ');
}

/** A thrown value as a message: its name, message and stack (`function@file:line:column`). */
function describe(error) {
  if (error instanceof Error) {
    // Innermost frame first; a runaway recursion is cut to its last 16 calls.
    const frames = (error.stack ?? '').trimEnd().split('\n');
    if (frames.length > 16) frames.splice(16, Infinity, `... ${frames.length - 16} more frames`);
    return `${error.name}: ${error.message}\n${frames.join('\n')}`;
  }
  try {
    return `thrown: ${String(error)}`;
  } catch {
    return 'thrown: a value that cannot be shown';
  }
}

// SpiderMonkey compiles a function, and a regular expression, the first time it runs: run the
// question's path once here, at build time, so that is in the snapshot, not redone by every call.
ftsExpression(terms('Warm up: once, at build time.'));
