//! What [`Rewriter::push`](super::Rewriter::push) says: [`Pushed`], and
//! [`RewriteError`] when it cannot go on.

use core::fmt;

use crate::output::encode::BufferFull;

/// What [`Rewriter::push`](super::Rewriter::push) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Pushed {
    /// Bytes of the input read: all of them, unless the writer had no room
    /// for the next block (drain it and push the rest) or the stream ended.
    pub read: usize,
    /// The stream has ended (stopped on a violation): nothing more will be
    /// written; later input is read and ignored.
    pub ended: bool,
    /// With [`Options::hold`](super::Options::hold): it stopped where the
    /// block in flight outgrew the raw buffer. Give a larger one
    /// ([`Rewriter::grow_raw`](super::Rewriter::grow_raw)) or let the
    /// block go ahead ([`Rewriter::let_ahead`](super::Rewriter::let_ahead)),
    /// and push the rest.
    pub held: bool,
}

/// Why a [`Rewriter`](super::Rewriter) could not go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RewriteError {
    /// The writer has room for less than the next block may need; nothing
    /// was read. Drain it (or give a larger one) and push again.
    OutputFull {
        /// The room the next block needs.
        needed: usize,
    },
    /// The writer failed although it said it had room.
    Write,
    /// A block outgrew a raw buffer too small (under 16 bytes) to hold
    /// back the end of a block that goes out ahead of its verdict.
    RawBuffer {
        /// The raw buffer's length.
        capacity: usize,
    },
    /// More denied tool names than [`ToolTables::deny`](super::ToolTables::deny) holds.
    DeniedTools,
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteError::OutputFull { needed } => {
                write!(
                    f,
                    "the output has room for less than the {needed} bytes the next block may need"
                )
            }
            RewriteError::Write => f.write_str("the output failed"),
            RewriteError::RawBuffer { capacity } => {
                write!(
                    f,
                    "a block outgrew the {capacity}-byte raw buffer (16 bytes at least are needed)"
                )
            }
            RewriteError::DeniedTools => {
                f.write_str("more denied tool names than the filter holds")
            }
        }
    }
}

impl core::error::Error for RewriteError {}

impl From<BufferFull> for RewriteError {
    fn from(_: BufferFull) -> Self {
        RewriteError::Write
    }
}
