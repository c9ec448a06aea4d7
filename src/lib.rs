//! Allocation-free reading, checking and rewriting of AG-UI event streams.
//!
//! AG-UI is the protocol an agent backend uses to stream a run to a
//! frontend, usually as Server-Sent Events. This crate turns such a byte
//! stream into validated, borrowed [`Event`] views with fixed memory and
//! linear time, under either dialect of the protocol ([`Dialect::V1`], the
//! 1.0 protocol, or [`Dialect::V0`], the pre-1.0 one), and writes events
//! back as JSON.
//!
//! The layers, each usable alone:
//! - [`sse`]: the WHATWG event-stream framer, zero-copy within a push;
//! - [`json`]: a non-recursive JSON validator and cursors over valid JSON;
//! - [`decode`](decode()): one payload → an [`Event`], checked against the
//!   reference schemas;
//! - [`encode`](encode()): an [`Event`] → JSON, stripped as the dialect says;
//! - [`Pipeline`]: the push API over all of them.
//!
//! ```
//! use agui_stream::{Config, Event, FrameInfo, Pipeline};
//!
//! let stream = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
//!                data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
//! let mut buf = [0u8; 4096];
//! let mut pipeline = Pipeline::new(&mut buf, Config::new());
//! let mut count = 0;
//! let mut sink = |ev: &Event<'_>, _: &FrameInfo| {
//!     assert!(ev.run_id().unwrap().eq_str("r"));
//!     count += 1;
//! };
//! pipeline.push(stream, &mut sink).unwrap();
//! pipeline.finish(&mut sink).unwrap();
//! assert_eq!(count, 2);
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![deny(missing_debug_implementations, unreachable_pub)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

#[cfg(feature = "std")]
extern crate std;

// The layers, each importing only from those above it
// (`scripts/check_layers.py` checks it): the leaves `capacity` and
// `testing`, then `protocol`, `view`, `store`, `input`, `check`,
// `pipeline`, `output` (with the rewriter).
mod capacity;
mod check;
#[cfg(feature = "generator")]
pub mod generator;
mod input;
mod output;
mod pipeline;
mod protocol;
mod store;
/// Test hooks (not API): the fast-path switch and the work counter
/// behind `tests/linear_time.rs` (feature `work-count`).
#[doc(hidden)]
pub mod testing;
mod view;

pub use check::{guard, legacy, normalize, request, verify};
pub use input::{json, sse};
pub use output::rewrite;

pub use capacity::Capacity;
pub use check::decode::{DecodeError, decode};
pub use check::legacy::Minting;
pub use check::request::{MemberPath, RequestChecker, RequestError, RequestErrorKind};
pub use check::schema::{ExpectedKind, SchemaError, SchemaProblem};
pub use check::spilled::StandIns;
pub use output::encode::{
    BufferFull, FmtWriter, SliceWriter, Write, encode, encode_str, encode_to_slice,
};
pub use pipeline::error::{Error, ErrorKind, Stage};
pub use pipeline::{
    Config, DEFAULT_ID_BYTES, DEFAULT_OPEN_IDS, DEFAULT_OWNERS, FrameInfo, OpenCounts, Pipeline,
    Policy, Sink, Skipped, Summary,
};
pub use protocol::dialect::{Dialect, UnknownName};
pub use protocol::event_type::{EventType, Key, Member};
pub use protocol::schema::SchemaObject;
pub use view::event::Event;
pub use view::string::{BufferTooSmall, CodePoints, JsonStr, Unescaped};

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
