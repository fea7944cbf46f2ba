declare module 'turnstile:retrieval/answer@0.1.3' {
  /**
   * Attach `text` as this call's answer (calling again replaces it). Kept only if `retrieve`
   * returns its sources.
   */
  export function set(text: string): void;
  /**
   * Why an answer was refused. Never a trap.
   */
  export type AnswerError = AnswerErrorTooLong;
  /**
   * Longer than the bound (16,384 bytes); the payload is the bound.
   */
  export interface AnswerErrorTooLong {
    tag: 'too-long',
    val: number,
  }
}
