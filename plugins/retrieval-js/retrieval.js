// turnstile's hybrid retrieval plugin, in JavaScript (contract turnstile:retrieval@0.1.3).
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

import { get as configGet } from 'turnstile:retrieval/config@0.1.3';
import { Session } from 'turnstile:retrieval/corpus@0.1.3';
import { embed } from 'turnstile:retrieval/embeddings@0.1.3';

import { ID_WEIGHT, LEXICAL_WEIGHT, POOL, candidate, debugVariant, fuse, lexicalWeight, textSnippet } from './hybrid.js';
import { ftsExpression, idMatch, terms } from './query.js';

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
    const lexical = [];
    if (expression !== null) {
      for (const hit of corpus(() => session.rank(expression, POOL))) {
        const score = -hit.rank * (1 + ID_WEIGHT * idMatch(hit.id, queryTerms));
        lexical.push(candidate(hit.id, hit.title, hit.doc, score, true));
      }
    }

    const semantic = [];
    let vectors;
    try {
      vectors = embed([question]);
    } catch (error) {
      if (isComponentError(error)) throw new RetrieveError('internal', debugVariant('EmbedError', error.payload));
      throw error;
    }
    if (vectors.length > 0) {
      for (const near of corpus(() => session.nearest(vectors[0], POOL))) {
        semantic.push(candidate(near.id, near.title, near.doc, near.similarity));
      }
    }

    return fuse(lexical, semantic, weight)
      .slice(0, limit)
      .map(([score, c]) => {
        // Only a document of the lexical pool matches the expression: asking a snippet of
        // another would cost a full-text match for nothing.
        let snippet;
        if (expression !== null && c.lexical) snippet = corpus(() => session.snippet(expression, c.doc));
        if (snippet === undefined) {
          const document = corpus(() => session.get(c.id));
          snippet = document !== undefined ? textSnippet(document.text) : '';
        }
        return { id: c.id, title: c.title, snippet, score };
      });
  } finally {
    // Release the host's connection now, as Rust's drop does, rather than at some later GC.
    session[dispose]();
  }
}
