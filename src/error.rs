//! The pipeline's error: what went wrong, in which frame, at which byte.

use core::fmt;

use crate::decode::DecodeError;
use crate::json::{JsonError, JsonErrorKind};
use crate::schema::SchemaError;

/// A pipeline failure. Small and `Copy`: it names the frame and byte, not
/// the bytes themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Index of the input frame being processed (0-based, as the reference
    /// counts them).
    pub frame: u64,
    /// Byte offset in the stream. For JSON errors in a single-`data`-line
    /// frame it is the offending byte; otherwise the frame's first byte.
    pub offset: u64,
}

/// The kinds of [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ErrorKind {
    /// The frame's payload is not JSON (the reference's `sse` stage).
    Json(JsonError),
    /// The JSON is not an acceptable event (`schema` stage).
    Schema(SchemaError),
    /// A fixed capacity was exceeded. Not a protocol violation: the input
    /// may be valid, but this configuration cannot hold it.
    Capacity(Capacity),
}

/// Which fixed capacity an input exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Capacity {
    /// A frame spanning pushes is larger than the framer's buffer.
    FrameBuffer {
        /// The buffer's size in bytes.
        capacity: usize,
    },
    /// JSON nested deeper than [`crate::Limits::max_depth`].
    JsonDepth {
        /// The limit in force.
        limit: usize,
    },
    /// A content array whose legacy binary parts would need more sibling
    /// comparisons than the budget allows (V1's upgrade of legacy parts).
    LegacyParts {
        /// Comparisons allowed per array.
        budget: usize,
    },
}

impl fmt::Display for Capacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capacity::FrameBuffer { capacity } => {
                write!(f, "frame larger than the {capacity}-byte frame buffer")
            }
            Capacity::JsonDepth { limit } => {
                write!(f, "JSON nested deeper than the limit of {limit} levels")
            }
            Capacity::LegacyParts { budget } => write!(
                f,
                "legacy binary content parts need more than {budget} comparisons to upgrade"
            ),
        }
    }
}

/// The pipeline stage an error comes from, named as the reference names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stage {
    /// Framing and JSON parsing.
    Sse,
    /// Event validation.
    Schema,
    /// Chunk normalization.
    Chunks,
    /// Lifecycle verification.
    Verify,
}

impl Stage {
    /// `"sse"`, `"schema"`, `"chunks"` or `"verify"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Sse => "sse",
            Stage::Schema => "schema",
            Stage::Chunks => "chunks",
            Stage::Verify => "verify",
        }
    }
}

impl Error {
    /// The stage that failed.
    pub fn stage(&self) -> Stage {
        match self.kind {
            ErrorKind::Json(_) | ErrorKind::Capacity(_) => Stage::Sse,
            ErrorKind::Schema(_) => Stage::Schema,
        }
    }

    /// True if a fixed capacity, not the input, is the cause.
    pub fn is_capacity(&self) -> bool {
        matches!(self.kind, ErrorKind::Capacity(_))
    }

    pub(crate) fn from_decode(
        e: DecodeError,
        frame: u64,
        frame_start: u64,
        payload_offset: u64,
    ) -> Self {
        let (kind, offset) = match e {
            DecodeError::Json(JsonError {
                kind: JsonErrorKind::TooDeep { limit },
                offset,
            }) => (ErrorKind::Capacity(Capacity::JsonDepth { limit }), offset),
            DecodeError::Json(j) => (ErrorKind::Json(j), j.offset),
            DecodeError::Schema(s) => {
                return Error {
                    kind: ErrorKind::Schema(s),
                    frame,
                    offset: frame_start,
                };
            }
            DecodeError::Capacity(c) => {
                return Error {
                    kind: ErrorKind::Capacity(c),
                    frame,
                    offset: frame_start,
                };
            }
        };
        Error {
            kind,
            frame,
            offset: payload_offset.saturating_add(offset as u64),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Json(e) => e.fmt(f)?,
            ErrorKind::Schema(e) => e.fmt(f)?,
            ErrorKind::Capacity(c) => c.fmt(f)?,
        }
        write!(f, " (frame {}, byte {})", self.frame, self.offset)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
