//! The protocol, described without state: its dialects, event types and
//! member names, the schema tables of what each event may carry, and the
//! roles. The bottom layer: it imports nothing else of the crate, and the
//! views, stages and writers above read it.

pub(crate) mod dialect;
pub(crate) mod event_type;
pub(crate) mod roles;
pub(crate) mod schema;
