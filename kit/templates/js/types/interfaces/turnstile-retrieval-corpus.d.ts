declare module 'turnstile:retrieval/corpus@0.1.4' {
  /**
   * One search hit, ranked by the host.
   */
  export interface Candidate {
    /**
     * The document's unique id, e.g. `argparse.ArgumentParser` or `topic:assert`.
     */
    id: string,
    /**
     * The document's title: its id, " — ", and the first sentence of its text.
     */
    title: string,
    /**
     * An extract of the matching text with the matched terms in `[` `]`, at most 300 bytes.
     */
    snippet: string,
    /**
     * The FTS5 bm25 rank: lower (more negative) is better. Candidates come best first.
     */
    rank: number,
  }
  /**
   * One search hit without its snippet (see `session.rank`). Since 0.1.1.
   */
  export interface Ranked {
    /**
     * The document's unique id.
     */
    id: string,
    /**
     * The document's title.
     */
    title: string,
    /**
     * The FTS5 bm25 rank: lower (more negative) is better. Hits come best first.
     */
    rank: number,
    /**
     * The document's handle in this corpus, for `session.snippet`.
     */
    doc: bigint,
  }
  /**
   * One document near a vector (see `session.nearest`). Since 0.1.2.
   */
  export interface Neighbour {
    /**
     * The document's unique id.
     */
    id: string,
    /**
     * The document's title.
     */
    title: string,
    /**
     * Cosine similarity of the document's vector and the query's, in -1..=1: higher is nearer.
     * Neighbours come best first.
     */
    similarity: number,
    /**
     * The document's handle in this corpus, for `session.snippet`.
     */
    doc: bigint,
  }
  /**
   * One whole document.
   */
  export interface Document {
    /**
     * The document's unique id.
     */
    id: string,
    /**
     * What the document is, in the corpus's own words (1–64 bytes; `document` when its
     * line names none). The shipped corpus uses `module`, `class`, `function`, `method`,
     * `topic`.
     */
    kind: string,
    /**
     * The document's title.
     */
    title: string,
    /**
     * The document's text (at most 2,000 characters).
     */
    text: string,
  }
  /**
   * Why a corpus call failed. These are ordinary errors for the plugin to handle, never traps.
   */
  export type CorpusError = CorpusErrorBadExpression | CorpusErrorInvalidArgument | CorpusErrorTooManySessions | CorpusErrorClosed | CorpusErrorInternal;
  /**
   * The FTS5 MATCH expression could not be parsed; the payload is SQLite's message.
   */
  export interface CorpusErrorBadExpression {
    tag: 'bad-expression',
    val: string,
  }
  /**
   * An argument was outside its documented bound (e.g. an empty or over-long expression).
   */
  export interface CorpusErrorInvalidArgument {
    tag: 'invalid-argument',
    val: string,
  }
  /**
   * The plugin has reached the number of sessions it may hold open at once (see `session`).
   */
  export interface CorpusErrorTooManySessions {
    tag: 'too-many-sessions',
  }
  /**
   * The session was already closed by the host (the call that opened it has ended).
   */
  export interface CorpusErrorClosed {
    tag: 'closed',
  }
  /**
   * Anything else went wrong in the host; details are in the host's log.
   */
  export interface CorpusErrorInternal {
    tag: 'internal',
    val: string,
  }
  
  export class Session implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * Open a session. Fails with `too-many-sessions` past the per-call bound.
    */
    static open(): Session;
    /**
    * Full-text search: `expression` is an FTS5 MATCH expression (at most 8,192 bytes and 64
    * terms, else `invalid-argument`) over the title and text of every document; `limit` is
    * clamped to 1..=50. Returns the best candidates first (by bm25). A syntax error in
    * `expression` is `bad-expression`.
    */
    search(expression: string, limit: number): Array<Candidate>;
    /**
    * Like `search`, but without snippets: the cheap way to take a wide pool of candidates
    * and re-rank it. A snippet re-reads and re-tokenizes its document, which costs about as
    * much as ranking hundreds of matches; ask `snippet` only for the hits you keep.
    * Since 0.1.1.
    */
    rank(expression: string, limit: number): Array<Ranked>;
    /**
    * The extract of document `doc` (a `ranked.doc`) for `expression`, with the matched
    * terms in `[` `]`, at most 300 bytes — the same as `search` would have given it — or
    * `none` if that document does not match `expression`. Since 0.1.1.
    */
    snippet(expression: string, doc: bigint): string | undefined;
    /**
    * Semantic search: the `limit` documents (clamped to 1..=50) whose vectors are most similar
    * to `vector`, best first. Every document's vector was computed once, when the corpus was
    * indexed, by the model `embeddings.embed` uses, from its id, title and text. `vector`
    * must have `embeddings.dimensions()` finite values (else `invalid-argument`); the zero
    * vector is near nothing (an empty list). Since 0.1.2.
    */
    nearest(vector: Float32Array, limit: number): Array<Neighbour>;
    /**
    * The document with this id (at most 512 bytes), or `none` if there is no such document.
    */
    get(id: string): Document | undefined;
    /**
    * How many documents the corpus holds.
    */
    count(): bigint;
    [Symbol.dispose](): void;
  }
}
