//! turnstile's tools: clients of a turnstile server, apart from the server itself. They talk to
//! it over HTTP (and start `turnstile serve` children) like any client, and need none of its
//! code.
//!
//! - [`drive`]: `turnstile drive`, the reference lab's scenario against real `serve` children,
//!   every observation checked;
//! - [`load`]: `turnstile load`, a closed-loop load generator with live progress, a summary and
//!   a chart.

pub mod drive;
pub mod load;
