declare module 'turnstile:retrieval/conversation@0.1.4' {
  /**
   * The turns before the question (the last user message), oldest first: at most 256.
   */
  export function history(): Array<Turn>;
  /**
   * What the client asked of the answer.
   */
  export function parameters(): AnswerParameters;
  /**
   * Who said a turn.
   * # Variants
   * 
   * ## `"system"`
   * 
   * Instructions (a `system` or `developer` message).
   * ## `"user"`
   * 
   * The user.
   * ## `"assistant"`
   * 
   * The assistant (an earlier answer).
   */
  export type Role = 'system' | 'user' | 'assistant';
  /**
   * One turn of the conversation.
   */
  export interface Turn {
    /**
     * Who said it.
     */
    role: Role,
    /**
     * What was said (its text parts joined; at most 32,768 bytes).
     */
    content: string,
  }
  /**
   * What the client asked of the answer. Each is the client's, checked for its type and
   * range only; a plugin decides what to pass on (an operator's bound comes first).
   */
  export interface AnswerParameters {
    /**
     * The most tokens the answer may have (`max_completion_tokens`, else `max_tokens`).
     */
    maxTokens?: number,
    /**
     * Sampling temperature, 0..=2.
     */
    temperature?: number,
    /**
     * Up to 4 stop sequences.
     */
    stop: Array<string>,
    /**
     * The client's end user, as it names them (at most 256 bytes).
     */
    user?: string,
  }
}
