//! The live view of the gate: `GET /events`, a Server-Sent Events stream of gate events and
//! periodic snapshots (see [`hub`] for its bounds), and `GET /dashboard`, one self-contained page
//! that draws it. Both follow the access rule of `/state`.

pub mod hub;
pub mod page;
pub mod stream;

pub use page::dashboard;
pub use stream::{STREAM_SEND_BUFFER, events, snapshot};
