//! `turnstile drive`: demonstrates the gate over real loopback HTTP against real `serve` child
//! processes, and checks every observation against what the gate promises.
//!
//! Ordering is established from the server's own `/state` before each next request is sent,
//! never from client submission order or sleeps.

mod args;
mod cases;
mod child;
mod command;
mod report;
mod settings;

pub use args::DriveArgs;
pub use child::ServerChild;
pub use command::run;
pub use report::{CaseResult, ChildReport, DriveReport};
pub use settings::{OVERFLOW_ATTEMPTS, SETTINGS, Settings};
