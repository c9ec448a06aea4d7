//! Elements of a spilling array let go: each is checked against the
//! array's item shape on its reduced form (the stand-in's bytes of it) and
//! dropped if it passes; the first that fails stays, so the stand-in fails
//! the same check at the same member as the whole frame. The records a
//! history's messages and their tool calls make are kept as forgotten ones
//! ([`verify::stage`]), in a filter in the buffer's last [`FILTER`] bytes.

use super::place::List;
use crate::check::schema::{self, Fault, Site, Verdict};
use crate::check::verify;
use crate::protocol::schema::{SchemaObject, Shape};
use crate::view::json::RawJson;
use crate::view::shaped::is_legacy_binary;

/// Bytes at the end of the frame buffer that hold the forgotten records'
/// filter once a history's elements are let go.
pub(super) const FILTER: usize = verify::STAGED_BYTES;

/// The smallest buffer a history is read element by element in.
pub(super) const MIN_BUFFER: usize = 512;

/// What checking one element came to.
pub(super) enum Element {
    /// It passes: kept by the schema (`true`) or dropped by V1's
    /// stripping (`false`).
    Passes(bool),
    /// It fails (or exceeds a budget of the check): it stays.
    Fails,
}

/// Checks `element` (one whole element of the stand-in, of items `item`).
pub(super) fn check(element: &[u8], item: &Shape) -> Element {
    let site = Site {
        object: SchemaObject::Event,
        field: None,
    };
    match schema::check(RawJson::trusted(element), item, site) {
        Ok(v) => Element::Passes(v == Verdict::Keep),
        Err(Fault::Schema(..) | Fault::LegacyPartBudget) => Element::Fails,
    }
}

/// Adds the records a passing element of a `list` makes to `filter`: a
/// message's owner (`Some(true)` for a subagent) or `None`.
pub(super) fn stage(element: &[u8], list: List, filter: &mut [u8]) -> Option<bool> {
    let v = RawJson::trusted(element);
    match list {
        List::History => verify::stage(v, filter),
        List::Calls => {
            verify::stage_tool_call(v, filter);
            None
        }
        List::Plain | List::NonEmpty => None,
    }
}

/// Whether `element` counts against the legacy-part budget of its array.
pub(super) fn legacy(element: &[u8], item: &Shape) -> bool {
    is_legacy_binary(RawJson::trusted(element), item)
}

/// The owner of a history message whose tool calls were let go:
/// `true` for a subagent.
pub(super) fn owned_by_subagent(message: &[u8]) -> bool {
    RawJson::trusted(message)
        .get("subagentRunId")
        .and_then(|v| v.as_str())
        .is_some()
}
