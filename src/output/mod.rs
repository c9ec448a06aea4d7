//! Output: events → JSON. One [`walk`] over the schema tables decides what
//! is written; [`encode`] writes it as JSON text and, with the `serde`
//! feature, `serde_impl` through a `serde::Serializer`. [`rewrite`], the
//! gateway's stream rewriter, writes what a client should see.

pub(crate) mod encode;
pub mod rewrite;
#[cfg(feature = "serde")]
mod serde_impl;
mod walk;
