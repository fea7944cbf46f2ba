declare module 'turnstile:retrieval/answer@0.1.4' {
  /**
   * Attach `text` as this call's answer (calling again replaces it). Kept only if `retrieve`
   * returns its sources. On a stream, what `set` adds past the text already streamed is sent
   * at once; text already streamed cannot be recalled.
   */
  export function set(text: string): void;
  /**
   * Append `delta` to this call's answer: a streaming client receives it now, as one content
   * delta. Empty deltas are ignored. Since 0.1.4.
   */
  export function append(delta: string): void;
  /**
   * Tell the client the sources the answer will be built on, before its first token (a chat
   * UI shows the citations while the model writes), checked as `retrieve`'s result is. The
   * sources `retrieve` returns are the call's: a client told other ones here is told again
   * at the end. Since 0.1.4.
   */
  export function cite(sources: Array<Cited>): void;
  /**
   * Say how the answer ended and, if the model said, what it cost; the last call counts.
   * Without it an answer ended with `stop`. Since 0.1.4.
   */
  export function finish(reason: FinishReason, usage: Usage | undefined): void;
  /**
   * Why an answer was refused. Never a trap.
   */
  export type AnswerError = AnswerErrorTooLong;
  /**
   * Longer than the bound (65,536 bytes); the payload is the bound.
   */
  export interface AnswerErrorTooLong {
    tag: 'too-long',
    val: number,
  }
  /**
   * Why a streamed part was refused. Never a trap. Since 0.1.4.
   */
  export type StreamError = StreamErrorClientGone | StreamErrorTooLong | StreamErrorInvalidArgument;
  /**
   * The client that asked is gone (it closed its connection): nobody reads this answer.
   * Stop and return; the host has cancelled the call's outbound requests.
   */
  export interface StreamErrorClientGone {
    tag: 'client-gone',
  }
  /**
   * The whole answer would be longer than the bound (65,536 bytes; the payload): this
   * part is not kept.
   */
  export interface StreamErrorTooLong {
    tag: 'too-long',
    val: number,
  }
  /**
   * An argument outside its bound (more sources than `limit`, an id the corpus does
   * not hold, a title or snippet too long, a score not finite or not best first); the
   * payload says which.
   */
  export interface StreamErrorInvalidArgument {
    tag: 'invalid-argument',
    val: string,
  }
  /**
   * One source an answer is built on (the world's `source`, told early). Since 0.1.4.
   */
  export interface Cited {
    /**
     * The corpus document id (must exist in the corpus).
     */
    id: string,
    /**
     * The document's title (at most 512 bytes).
     */
    title: string,
    /**
     * A short extract (at most 1,024 bytes).
     */
    snippet: string,
    /**
     * Finite, higher is better; best first.
     */
    score: number,
  }
  /**
   * How an answer ended. Since 0.1.4.
   * # Variants
   * 
   * ## `"stop"`
   * 
   * The model finished its answer.
   * ## `"length"`
   * 
   * The answer was cut at the token bound.
   * ## `"content-filter"`
   * 
   * The model's filter withheld (part of) the answer.
   * ## `"failed"`
   * 
   * No answer could be had (the model refused, failed or could not be reached): the
   * sources are still returned, and the host answers with the error the backend's
   * signal names (e.g. 502 `upstream_auth_failed`, 503 `upstream_rate_limited`).
   */
  export type FinishReason = 'stop' | 'length' | 'content-filter' | 'failed';
  /**
   * The model's own token counts for this answer (its `usage`). Since 0.1.4.
   */
  export interface Usage {
    /**
     * Tokens of the prompt the model read.
     */
    promptTokens: number,
    /**
     * Tokens the model wrote.
     */
    completionTokens: number,
  }
}
