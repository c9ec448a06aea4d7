//! Output: events → JSON. One [`walk`] over the schema tables decides what
//! is written; [`encode`] writes it as JSON text and, with the `serde`
//! feature, `serde_impl` through a `serde::Serializer`.

pub(crate) mod encode;
#[cfg(feature = "serde")]
mod serde_impl;
mod walk;
