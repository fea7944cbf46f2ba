//! Builds guest components — crates of this workspace compiled to `wasm32-wasip2` — with a nested
//! `cargo build --release`, the way wasmtime builds its test programs. Used by the build scripts
//! that embed the default plugin (`host/build.rs`) or expose the test fixtures
//! (`fixtures/artifacts/build.rs`), and by `cargo xtask plugins`.
//!
//! Every caller builds into one directory, [`guest_target_dir`] (`target/guests`), whatever the
//! outer build's profile: each guest is compiled once per clean build, then found up to date.
//! (The nested build needs a directory apart from the outer build's: sharing its profile
//! directory would deadlock on cargo's build-directory lock. Two nested builds at once — the two
//! build scripts — wait for each other on this one's lock instead.)

mod error;
mod languages;
mod rust;

pub use error::{Guest, GuestBuildError};
pub use languages::{
    INSTALL, JS_NO_HTTP, LANGUAGE_GUESTS, Language, LanguageGuest, Wit, build_language, inputs,
    toolchain, toolchains_dir,
};
pub use rust::{TARGET, build, guest_target_dir, rerun_if_changed};
