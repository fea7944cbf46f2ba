declare module 'turnstile:retrieval/embeddings@0.1.4' {
  /**
   * Dimensions of every vector `embed` returns (and `session.nearest` takes).
   */
  export function dimensions(): number;
  /**
   * One vector per text (at most 16 texts, each at most 4,096 bytes), in order: unit length,
   * or all zeros for a text with nothing the model knows (empty, or only symbols it drops).
   */
  export function embed(texts: Array<string>): Array<Float32Array>;
  /**
   * Why an embedding call failed: an argument outside its bound. Never a trap.
   */
  export type EmbedError = EmbedErrorInvalidArgument;
  /**
   * Too many texts, or a text too long; the payload says which bound.
   */
  export interface EmbedErrorInvalidArgument {
    tag: 'invalid-argument',
    val: string,
  }
}
