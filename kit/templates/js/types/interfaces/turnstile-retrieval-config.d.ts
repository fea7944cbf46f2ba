declare module 'turnstile:retrieval/config@0.1.4' {
  /**
   * The value configured for `key` (a setting, else a secret of that name), or `none` if the
   * operator set none.
   */
  export function get(key: string): string | undefined;
}
