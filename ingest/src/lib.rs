//! `turnstile corpus build`: turns the documents a team has — a folder of Markdown, plain text
//! and HTML files, or JSON Lines and CSV with named columns — into a corpus file that `serve
//! --corpus` loads.
//!
//! Files are found and read in a fixed order ([`files`]); each format becomes an [`outline`] of
//! sections under their heading path ([`markdown`], [`html`], [`text`]) or rows ([`table`]);
//! each section or row becomes passages within a set number of the embedding model's tokens
//! and of characters, cut where the text allows ([`pack`]), with a set overlap, stable ids and
//! titles ([`passage`]); [`build`] writes them and checks the result with
//! the corpus's own loader. The same input always gives the same bytes.
//!
//! May depend on: the corpus (`turnstile-corpus`: its document bounds and loader), the embedding
//! model (`turnstile-embed`: its tokenizer sizes passages), parsers for the formats
//! (pulldown-cmark, scraper, csv), Unicode's sentence rules (unicode-segmentation) and general
//! libraries. Nothing of the server or
//! the plugin host.

mod blocks;
mod build;
mod check;
mod durable;
mod emit;
mod encoding;
mod error;
mod files;
mod front_matter;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod html;
mod html_depth;
#[cfg(test)]
mod html_extracted;
#[cfg(test)]
mod html_measured;
mod ids;
#[cfg(test)]
mod incremental_built;
mod main_content;
mod manifest;
mod markdown;
mod meta;
#[cfg(test)]
mod metadata_built;
mod outline;
mod pack;
mod passage;
#[cfg(test)]
mod pathological;
mod reuse;
#[cfg(test)]
mod rows_built;
mod sentences;
mod sizer;
mod summary;
mod table;
mod table_text;
mod text;

pub use build::{BuildArgs, BuildError, build};
pub use manifest::path_of as manifest_path;
pub use pack::{DEFAULT_MAX_CHARS, DEFAULT_MAX_TOKENS, DEFAULT_OVERLAP};
pub use summary::{BadRow, Changes, Summary};
