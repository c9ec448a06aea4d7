//! Input: bytes → frames ([`sse`]) and JSON text checked for syntax
//! ([`json`]).

pub mod json;
pub mod sse;
