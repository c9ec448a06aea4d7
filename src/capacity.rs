//! What a fixed capacity is called when an input exceeds it: a leaf every
//! stage imports (it imports nothing of the crate).

use core::fmt;

/// Which fixed capacity an input exceeded. Sizes and counts are `u32`
/// (saturating at `u32::MAX`), which keeps [`crate::Error`] small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Capacity {
    /// A frame spanning pushes is larger than the framer's buffer.
    FrameBuffer {
        /// The buffer's size in bytes.
        capacity: u32,
    },
    /// A request body's members a rule reads (ids, roles, tags, with the
    /// structure around them) do not fit a
    /// [`RequestChecker`](crate::RequestChecker)'s buffer.
    RequestBuffer {
        /// The buffer's size in bytes.
        capacity: u32,
    },
    /// JSON nested deeper than [`Limits::max_depth`](crate::json::Limits::max_depth).
    JsonDepth {
        /// The limit in force.
        limit: u32,
    },
    /// A content array whose legacy binary parts would need more sibling
    /// comparisons than the budget allows (V1's upgrade of legacy parts).
    LegacyParts {
        /// Comparisons allowed per array.
        budget: u32,
    },
    /// More chunk lanes open at once than the normalizer holds.
    Lanes,
    /// More ids open at once than the verifier's open-id table holds.
    OpenIds,
    /// A rule needs the owner of an id whose record was forgotten (the
    /// verifier keeps the newest owner records and those of open entities;
    /// a run may have any number of them).
    Owners,
    /// More distinct subagents in one run than the verifier holds.
    Subagents,
    /// More tool calls open at once than the arguments check holds
    /// ([`crate::Config::check_tool_args`]).
    ToolArgs {
        /// Tool calls checked at once.
        capacity: u32,
    },
    /// The ids that must be held at once (open ids, subagent ids, a chunk
    /// lane's strings) need more bytes than the id storage has.
    IdBytes {
        /// The storage's size in bytes.
        capacity: u32,
    },
}

impl fmt::Display for Capacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capacity::FrameBuffer { capacity } => {
                write!(f, "frame larger than the {capacity}-byte frame buffer")
            }
            Capacity::RequestBuffer { capacity } => write!(
                f,
                "request body's checked members need more than the {capacity}-byte buffer"
            ),
            Capacity::JsonDepth { limit } => {
                write!(f, "JSON nested deeper than the limit of {limit} levels")
            }
            Capacity::LegacyParts { budget } => write!(
                f,
                "legacy binary content parts need more than {budget} comparisons to upgrade"
            ),
            Capacity::Lanes => {
                f.write_str("more chunk lanes open at once than the normalizer holds")
            }
            Capacity::OpenIds => f.write_str("more ids open at once than the verifier holds"),
            Capacity::Owners => f.write_str(
                "the owner of an id this event refers to was forgotten (too many owner records in one run)",
            ),
            Capacity::Subagents => f.write_str("more subagents in one run than the verifier holds"),
            Capacity::ToolArgs { capacity } => write!(
                f,
                "more than {capacity} tool calls open at once to check the arguments of"
            ),
            Capacity::IdBytes { capacity } => {
                write!(f, "ids held at once need more than the {capacity}-byte id storage")
            }
        }
    }
}

impl core::error::Error for Capacity {}

/// `n` as a `u32`, saturating: the sizes and counts errors carry.
pub(crate) fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
