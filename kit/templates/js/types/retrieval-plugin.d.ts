/// <reference path="./interfaces/turnstile-retrieval-answer.d.ts" />
/// <reference path="./interfaces/turnstile-retrieval-config.d.ts" />
/// <reference path="./interfaces/turnstile-retrieval-conversation.d.ts" />
/// <reference path="./interfaces/turnstile-retrieval-corpus.d.ts" />
/// <reference path="./interfaces/turnstile-retrieval-embeddings.d.ts" />
/// <reference path="./interfaces/turnstile-retrieval-log.d.ts" />
declare module 'turnstile:retrieval/retrieval-plugin@0.1.4' {
  /**
  * One source the plugin found relevant.
  */
  /**
  * One source the plugin found relevant.
  */
  export interface Source {
    /**
    * The corpus document id (must exist in the corpus).
    */
    id: string,
    /**
    * The document's title (at most 512 bytes).
    */
    title: string,
    /**
    * A short extract supporting the source (at most 1,024 bytes).
    */
    snippet: string,
    /**
    * How relevant the source is: finite, higher is better; sources come best first.
    */
    score: number,
  }
  /**
  * Why retrieval failed. The host answers the request with HTTP 500 `internal_error` and
  * logs the message; the client never sees it.
  */
  /**
  * Why retrieval failed. The host answers the request with HTTP 500 `internal_error` and
  * logs the message; the client never sees it.
  */
  export type RetrieveError = RetrieveErrorCorpus | RetrieveErrorConfig | RetrieveErrorInternal;
  /**
  * The corpus could not be used.
  */
  export interface RetrieveErrorCorpus {
    tag: 'corpus',
    val: string,
  }
  /**
  * The plugin's own settings are wrong (e.g. a config value that does not parse).
  */
  export interface RetrieveErrorConfig {
    tag: 'config',
    val: string,
  }
  /**
  * Anything else.
  */
  export interface RetrieveErrorInternal {
    tag: 'internal',
    val: string,
  }
  export type * as TurnstileRetrievalAnswer014 from 'turnstile:retrieval/answer@0.1.4'; // import turnstile:retrieval/answer@0.1.4
  export type * as TurnstileRetrievalConfig014 from 'turnstile:retrieval/config@0.1.4'; // import turnstile:retrieval/config@0.1.4
  export type * as TurnstileRetrievalConversation014 from 'turnstile:retrieval/conversation@0.1.4'; // import turnstile:retrieval/conversation@0.1.4
  export type * as TurnstileRetrievalCorpus014 from 'turnstile:retrieval/corpus@0.1.4'; // import turnstile:retrieval/corpus@0.1.4
  export type * as TurnstileRetrievalEmbeddings014 from 'turnstile:retrieval/embeddings@0.1.4'; // import turnstile:retrieval/embeddings@0.1.4
  export type * as TurnstileRetrievalLog014 from 'turnstile:retrieval/log@0.1.4'; // import turnstile:retrieval/log@0.1.4
  /**
  * Answer one question with at most `limit` sources (the host passes 1..=20), best first.
  * `question` is 1..=500 characters of untrusted user text.
  */
  export function retrieve(question: string, limit: number): Array<Source>;
  export type Result<T, E> = { tag: 'ok', val: T } | { tag: 'err', val: E };
}
