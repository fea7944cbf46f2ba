//! Host bindings generated from `wit/`. Every import is trappable: a host-side failure that is
//! not the guest's to handle (a missing resource, a broken invariant) traps the call.
#![allow(missing_docs)]

wasmtime::component::bindgen!({
    world: "retrieval-plugin",
    path: "../wit",
    imports: { default: trappable },
    with: {
        "turnstile:retrieval/corpus.session": turnstile_corpus::CorpusSession,
    },
});
