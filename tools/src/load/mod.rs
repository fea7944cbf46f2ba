//! `turnstile load`: a closed-loop HTTP load generator, like Locust users with no wait time.
//!
//! `--users` users are started at `--spawn-rate` per second; each POSTs the JSON `--body` to
//! `--url`, waits for the whole response, records it, and at once sends the next, until
//! `--duration` (ramp-up included) has passed. Requests still in flight then are awaited (bounded
//! by `--timeout-s`) and counted. Progress is shown live on stderr; at the end a table is
//! printed and `DIR/summary.json`, `DIR/chart.svg` (and `DIR/chart.png` when a font is
//! available) are written. See `docs/LOAD.md`.
//!
//! - [`plan`]: the flags, validated;
//! - `user`: the closed loop;
//! - `chat`: `--chat`, OpenAI chat requests, and `--stream`, their answers read as server-sent
//!   events with the time to the first content delta;
//! - `stats`: bounded measurements (HDR histograms, 100 ms bins, per-second records);
//! - `progress`: the live display;
//! - [`summary`]: what a run produced; `report`: the table and the JSON file; `chart`: the chart.

mod args;
mod bounds;
mod chart;
mod chat;
pub mod plan;
mod progress;
mod report;
mod run;
mod stats;
pub mod summary;
mod user;

pub use args::LoadArgs;
pub use bounds::{DEFAULT_BODY, DEFAULT_QUESTION};
pub use chart::{PNG_FILE, SVG_FILE};
pub use plan::FlagError;
pub use report::{SUMMARY_FILE, table};
pub use run::{run, run_load, run_load_until};
pub use summary::Summary;
pub use user::REQUESTS_FILE;
