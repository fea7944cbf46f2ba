//! `turnstile load` smoke tests (being written).
