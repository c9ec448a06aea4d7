//! Views: borrowed, read-only looks at valid input. [`JsonStr`](string)
//! (a JSON string, escapes undecoded), [`RawJson`](json) and its cursors,
//! the byte scanners they share with the validator ([`scan`], the one
//! SWAR seam), a value read through the schema tables ([`shaped`]), and
//! [`Event`](event), a decoded event. They import only `protocol`.

pub(crate) mod event;
pub(crate) mod json;
pub(crate) mod scan;
pub(crate) mod shaped;
pub(crate) mod string;
