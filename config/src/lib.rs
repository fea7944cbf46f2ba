//! Where a `turnstile` command's settings come from — the same story for every command (`serve`,
//! `check`, `eval`, `load`, `drive`, `corpus build`), in rising precedence: the flag's default,
//! the `--config` file, the environment (`TURNSTILE_*`), the command line.
//!
//! A command is its clap [`Args`](clap::Args) struct and a [`Layered`] marker (its name and its
//! checks across settings). [`resolve`] reads the command line's *shape* only ([`shape`]: which
//! flags, with which raw values), reads the file and the environment, checks every value through
//! its flag's own parser and bounds, builds the struct, and runs the command's
//! [`Layered::validate`]. The invariant: **a value is only ever judged by its flag's parser**,
//! wherever it came from, and **every problem is reported at once** ([`Problem`], each with its
//! [`Origin`], in a fixed order), never only the first; only a command line clap cannot read
//! (an unknown flag, a flag without its value, `--help`) or a file that cannot be read or parsed
//! as TOML stops first.
//!
//! May depend on: clap (the flags are the settings' one definition), toml and thiserror.
//! Nothing of turnstile: every command's crate, and the binary, can use it.

mod env;
mod file;
mod layered;
mod problem;
mod resolve;
mod shape;
mod suggest;
mod value;

pub use env::{Env, NOT_SETTINGS, PREFIX, variable};
pub use layered::{Invalid, Layered, command};
pub use problem::{Origin, Problem, ResolveError};
pub use resolve::{check_file, resolve, resolve_matches};
pub use shape::{Required, parse_shape, shape};
