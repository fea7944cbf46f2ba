// turnstile's hybrid retrieval plugin, in JavaScript (contract turnstile:retrieval@0.1.4).
//
// A port of `plugins/retrieval-hybrid` for componentize-js: two candidate pools, each of a fixed size
// whatever `limit` is -- the bm25 pool of the question's terms (`session.rank`, re-ranked by how
// well each id names the terms), and the pool of documents whose vectors are nearest the question's
// embedding (`embeddings.embed`, `session.nearest`) -- fused by score (hybrid.js `fuse`). A question
// the model knows nothing of, or with no searchable term, is answered by the other pool alone.
//
// Operator settings (`--plugin-config`): `lexical_weight`, the lexical score's weight in the fusion,
// 0..=1 (default 0.15); 0 is semantic only, 1 lexical only.
//
// How componentize-js maps results (its generated bindings, 0.23):
// * an import's `err` is thrown as a `ComponentError` whose own `payload` is the WIT value
//   (`{ tag: 'bad-expression', val: '...' }`);
// * the export's `err` is whatever `retrieve` throws: the thrown value's own `payload` if it has one,
//   else the value itself if it is not an Error. An Error without `payload` is re-thrown: a trap.
//   So `RetrieveError` below carries its WIT value as `payload`, and an import's `ComponentError`
//   must never escape unconverted (its payload is not a `retrieve-error`: the lowering would throw).

import { get as configGet } from 'turnstile:retrieval/config@0.1.4';
import { Session } from 'turnstile:retrieval/corpus@0.1.4';
import { embed } from 'turnstile:retrieval/embeddings@0.1.4';

import { ID_WEIGHT, LEXICAL_WEIGHT, POOL, debugVariant, fuse, lexicalWeight, textSnippet } from './hybrid.js';
import { foldedTerms, ftsExpression, idMatches, terms } from './query.js';

// The bindings release a resource on `Symbol.dispose`, or on `Symbol.for('dispose')` where the
// engine has no `Symbol.dispose`.
const dispose = Symbol.dispose || Symbol.for('dispose');

/** A `retrieve-error` to return: componentize-js lowers the thrown value's `payload`. */
class RetrieveError extends Error {
  constructor(tag, message) {
    super(message);
    this.name = 'RetrieveError';
    this.payload = { tag, val: message };
  }
}

/** Whether `error` is an import's `err` (a componentize-js `ComponentError`). */
function isComponentError(error) {
  return error !== null && typeof error === 'object' && Object.hasOwn(error, 'payload');
}

/**
 * `call()`, a corpus call, with its CorpusError as the plugin's `corpus` error; the message is the
 * variant as the Rust plugin's `format!("{error:?}")` writes it.
 */
function corpus(call) {
  try {
    return call();
  } catch (error) {
    if (isComponentError(error)) throw new RetrieveError('corpus', debugVariant('CorpusError', error.payload));
    throw error;
  }
}

/** The lexical pool's scores: bm25 (negated: higher is better) moved by how well each id names the terms. */
function lexicalPool(hits, queryTerms) {
  const ids = new Array(hits.length);
  for (let i = 0; i < hits.length; i++) ids[i] = hits[i].id;
  const matches = idMatches(ids, foldedTerms(queryTerms));
  const scores = new Array(hits.length);
  for (let i = 0; i < hits.length; i++) scores[i] = -hits[i].rank * (1 + ID_WEIGHT * matches[i]);
  return scores;
}

/** The component's export: answer one question with at most `limit` sources, best first. */
export function retrieve(question, limit) {
  const setting = configGet('lexical_weight');
  let weight = LEXICAL_WEIGHT;
  if (setting !== undefined) {
    try {
      weight = lexicalWeight(setting);
    } catch (error) {
      throw new RetrieveError('config', error.message);
    }
  }
  const queryTerms = terms(question);
  const expression = ftsExpression(queryTerms);

  const session = corpus(() => Session.open());
  try {
    // The pools are the host's records as they came, their scores in arrays beside them.
    let lexical = [];
    let lexicalScores = [];
    if (expression !== null) {
      lexical = corpus(() => session.rank(expression, POOL));
      lexicalScores = lexicalPool(lexical, queryTerms);
    }

    let semantic = [];
    let vectors;
    try {
      vectors = embed([question]);
    } catch (error) {
      if (isComponentError(error)) throw new RetrieveError('internal', debugVariant('EmbedError', error.payload));
      throw error;
    }
    if (vectors.length > 0) semantic = corpus(() => session.nearest(vectors[0], POOL));
    const semanticScores = new Array(semantic.length);
    for (let i = 0; i < semantic.length; i++) semanticScores[i] = semantic[i].similarity;

    return fuse(lexical, lexicalScores, semantic, semanticScores, weight, limit).map(([score, hit, inLexical]) => {
      // Only a document of the lexical pool matches the expression: asking a snippet of another
      // would cost a full-text match for nothing.
      let snippet;
      if (expression !== null && inLexical) snippet = corpus(() => session.snippet(expression, hit.doc));
      if (snippet === undefined) {
        const document = corpus(() => session.get(hit.id));
        snippet = document !== undefined ? textSnippet(document.text) : '';
      }
      return { id: hit.id, title: hit.title, snippet, score };
    });
  } finally {
    // Release the host's connection now, as Rust's drop does, rather than at some later GC.
    session[dispose]();
  }
}

// componentize-js runs this module once, at build time, and every call starts from a snapshot of
// the engine taken after it. SpiderMonkey compiles a function's bytecode, and a regular
// expression's, the first time it runs: run the ranking code once here, on made-up pools, so
// that is in the snapshot rather than redone by every call.
{
  const hits = [];
  for (let i = 0; i < 4; i++) hits.push({ id: `topic:warm_Up.${i}`, title: '', doc: BigInt(i), rank: -i, similarity: i / 4 });
  const queryTerms = terms('Warm up the ranking code, once: café');
  ftsExpression(queryTerms);
  idMatches(['Émile.zola', 'x\ny'], foldedTerms(queryTerms));
  const scores = lexicalPool(hits, queryTerms);
  fuse(hits.slice(0, 3), scores.slice(0, 3), hits.slice(1), [0.5, -0, NaN], LEXICAL_WEIGHT, 2);
  textSnippet(` ${'warm up '.repeat(50)}`);
  lexicalWeight(' 0.5 ');
  debugVariant('CorpusError', { tag: 'bad-expression', val: 'warm up' });
}
