//! Output: events → JSON ([`encode`]; with the `serde` feature, also
//! through `serde::Serialize`).

pub(crate) mod encode;
#[cfg(feature = "serde")]
mod serde_impl;
