//! Plain text into an outline: one section, blocks at blank lines.

use crate::outline::{Outline, OutlineBuilder};

/// The outline of a plain text file (its title comes from the file name).
pub(crate) fn outline(source: &str) -> Outline {
    let mut b = OutlineBuilder::default();
    for block in source.split("\n\n") {
        b.text(block);
        b.end_block();
    }
    b.finish()
}
