//! turnstile's integration tests, one binary: every area is a module, sharing `support`. They run
//! real servers on loopback sockets (in process, or `turnstile serve` children) with the real
//! wasm components, and synchronize on observed state (the gate's `/state`, a log line), each
//! wait bounded by a deadline that fails the test with what was last seen.
#![allow(clippy::unwrap_used)] // test helpers fail loudly on purpose

mod support;

mod adaptive;
mod admin;
mod api;
mod cache;
mod chat;
mod check;
mod config;
mod confined;
mod corpus;
mod corpus_swap;
mod drive;
mod edge;
mod embeddings;
mod eval;
mod fixtures;
mod flows;
mod gate;
mod global;
mod global_restart;
mod hostile;
mod http;
mod kit;
mod languages;
mod links;
mod live;
mod load;
mod logging;
mod metrics;
mod newcomer;
mod outbound;
mod outbound_server;
mod outbound_tls;
mod rag_py;
mod settings;
mod swap;
mod traces;
mod valid_input;
