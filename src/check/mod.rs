//! Checking: a frame's JSON → a validated event ([`decode`], with the
//! [`schema`] checker over `protocol::schema`'s tables, and a dedicated
//! path for the usual delta events), V1's translation
//! of legacy events ([`legacy`]), chunk expansion ([`normalize`]) and the
//! run's lifecycle ([`verify`]);
//! frames larger than the buffer are checked as they stream, and their
//! verdict given at their end ([`spilled`]).

pub(crate) mod decode;
mod delta;
pub mod guard;
pub mod legacy;
pub mod normalize;
pub mod request;
pub(crate) mod schema;
pub(crate) mod spilled;
pub mod verify;
