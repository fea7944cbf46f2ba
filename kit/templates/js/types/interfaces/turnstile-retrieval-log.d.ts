declare module 'turnstile:retrieval/log@0.1.4' {
  /**
   * Write one message (at most 4 KiB is kept; longer messages are cut).
   */
  export function write(level: Level, message: string): void;
  /**
   * How serious a message is.
   * # Variants
   * 
   * ## `"debug"`
   * 
   * ## `"info"`
   * 
   * ## `"warn"`
   * 
   * ## `"error"`
   */
  export type Level = 'debug' | 'info' | 'warn' | 'error';
}
