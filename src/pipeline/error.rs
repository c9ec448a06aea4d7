//! The pipeline's error: what went wrong, in which stage, frame and byte;
//! and every conversion of a stage's error into it.

use core::fmt;

use crate::capacity::Capacity;
use crate::capacity::saturate;
use crate::check::decode::DecodeError;
use crate::check::normalize::ChunkError;
use crate::check::schema::SchemaError;
use crate::check::verify::{Rule, VerifyError};
use crate::input::json::{JsonError, JsonErrorKind, ScanError};
use crate::input::sse;
use crate::protocol::event_type::EventType;

/// A pipeline failure. Small and `Copy`: it names the rule, frame and byte,
/// not the ids involved — [`crate::Pipeline::message`] renders those, in the
/// reference's words, from the pipeline's fixed storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The stage that failed.
    pub stage: Stage,
    /// Index of the input frame being processed (0-based, as the reference
    /// counts them): for a synthesized event, the frame that caused it.
    pub frame: u64,
    /// Byte offset in the stream: for a JSON error within the frame's first
    /// `data` line, the offending byte; otherwise (or past the first 4 GiB
    /// of a frame held whole in the buffer) the frame's first byte.
    pub offset: u64,
}

/// The kinds of [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// The frame's payload is not JSON (the reference's `sse` stage).
    Json(JsonError),
    /// The JSON is not an acceptable event (`schema`).
    Schema(SchemaError),
    /// A chunk could not be normalized (`chunks`).
    Chunk(ChunkError),
    /// An event breaks a lifecycle rule (`verify`).
    Verify {
        /// The rejected event's type.
        event: EventType,
        /// The rule.
        rule: Rule,
    },
    /// The stream ended incomplete and the configuration is strict.
    Incomplete,
    /// A fixed capacity was exceeded. Not a protocol violation: the input
    /// may be valid, but this configuration cannot hold it.
    Capacity(Capacity),
}

/// The pipeline stage an error comes from (plus `End` for a strict
/// end-of-stream check). [`reference_name`](Stage::reference_name) names
/// it as the reference does, which reports JSON syntax errors in its `sse`
/// stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Stage {
    /// Framing.
    Sse,
    /// JSON parsing.
    Json,
    /// Event validation.
    Schema,
    /// Chunk normalization.
    Chunks,
    /// Lifecycle verification.
    Verify,
    /// The end-of-stream check of a strict pipeline.
    End,
}

impl Stage {
    /// The number of stages.
    pub const COUNT: usize = 6;

    /// Every stage, in [`index`](Stage::index) order.
    pub const ALL: [Stage; Stage::COUNT] = [
        Stage::Sse,
        Stage::Json,
        Stage::Schema,
        Stage::Chunks,
        Stage::Verify,
        Stage::End,
    ];

    /// The stage's place in [`Stage::COUNT`]-long tables, in declaration
    /// order.
    pub const fn index(self) -> usize {
        match self {
            Stage::Sse => 0,
            Stage::Json => 1,
            Stage::Schema => 2,
            Stage::Chunks => 3,
            Stage::Verify => 4,
            Stage::End => 5,
        }
    }

    /// The stage's own name (`"sse"`, `"json"`, `"schema"`, `"chunks"`,
    /// `"verify"` or `"end"`), as [`Display`](fmt::Display) writes it and
    /// statistics count it.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Sse => "sse",
            Stage::Json => "json",
            Stage::Schema => "schema",
            Stage::Chunks => "chunks",
            Stage::Verify => "verify",
            Stage::End => "end",
        }
    }

    /// The reference's name for the stage: as [`name`](Stage::name), but
    /// `"sse"` for JSON parsing, which the reference does in its SSE stage.
    /// The result lines of `agui check` use it.
    pub const fn reference_name(self) -> &'static str {
        match self {
            Stage::Json => "sse",
            other => other.name(),
        }
    }
}

impl Error {
    /// True if a fixed capacity, not the input, is the cause.
    pub fn is_capacity(&self) -> bool {
        matches!(self.kind, ErrorKind::Capacity(_))
    }

    pub(crate) fn from_decode(
        e: DecodeError,
        payload: &[u8],
        frame: u64,
        frame_start: u64,
        payload_offset: u64,
    ) -> Self {
        let at_frame = |kind, stage| Error {
            kind,
            stage,
            frame,
            offset: frame_start,
        };
        match e {
            DecodeError::Json(j) => Error {
                kind: ErrorKind::from_json(j),
                stage: Stage::Json,
                frame,
                offset: stream_offset(payload, j.offset, payload_offset, frame_start),
            },
            DecodeError::Schema(s) => at_frame(ErrorKind::Schema(s), Stage::Schema),
            DecodeError::Capacity(c) => at_frame(ErrorKind::Capacity(c), Stage::Schema),
        }
    }

    /// A spilled frame's JSON error as the pipeline reports it: at the
    /// error if it is on the first data line, else at the frame's start.
    pub(crate) fn from_spilled_json(
        error: ScanError,
        first_line: bool,
        frame: u64,
        frame_start: u64,
        payload_offset: u64,
    ) -> Self {
        Error {
            kind: ErrorKind::from_json(error.json()),
            stage: Stage::Json,
            frame,
            offset: if first_line {
                payload_offset.saturating_add(error.offset as u64)
            } else {
                frame_start
            },
        }
    }

    /// The framer's error as the pipeline reports it (its offset is the
    /// first byte that did not fit).
    pub(crate) fn from_sse(e: sse::Error, frame: u64) -> Self {
        match e {
            sse::Error::FrameTooLarge {
                offset: at,
                capacity,
            } => Error {
                kind: ErrorKind::Capacity(Capacity::FrameBuffer {
                    capacity: saturate(capacity),
                }),
                stage: Stage::Sse,
                frame,
                offset: at,
            },
        }
    }

    pub(crate) fn from_chunk(e: ChunkError, frame: u64, offset: u64) -> Self {
        let kind = match e {
            ChunkError::Capacity(c) => ErrorKind::Capacity(c),
            e => ErrorKind::Chunk(e),
        };
        Error {
            kind,
            stage: Stage::Chunks,
            frame,
            offset,
        }
    }

    pub(crate) fn from_verify(e: VerifyError, frame: u64, offset: u64) -> Self {
        let kind = match e {
            VerifyError::Violation { event, rule } => ErrorKind::Verify { event, rule },
            VerifyError::Capacity(c) => ErrorKind::Capacity(c),
        };
        Error {
            kind,
            stage: Stage::Verify,
            frame,
            offset,
        }
    }
}

impl ErrorKind {
    /// A JSON error's kind: too deep is a capacity, not a syntax error (the
    /// one place that says so, for frames held whole and spilled alike).
    fn from_json(e: JsonError) -> Self {
        match e.kind {
            JsonErrorKind::TooDeep { limit } => ErrorKind::Capacity(Capacity::JsonDepth {
                limit: u32::from(limit),
            }),
            _ => ErrorKind::Json(e),
        }
    }
}

/// The stream offset of byte `at` of a frame's payload: exact within the
/// first `data` line (whose value the payload starts with), else the frame's
/// first byte. A data value holds no line break, so the payload's first LF
/// is where the second line's value begins. An offset that saturated (a
/// payload over 4 GiB) is not exact either.
fn stream_offset(payload: &[u8], at: u32, payload_offset: u64, frame_start: u64) -> u64 {
    let saturated = at == u32::MAX && u32::try_from(payload.len()).is_err();
    let first_line = memchr::memchr(b'\n', payload).unwrap_or(payload.len());
    match usize::try_from(at) {
        Ok(i) if i <= first_line && !saturated => payload_offset.saturating_add(u64::from(at)),
        _ => frame_start,
    }
}

impl fmt::Display for ErrorKind {
    /// What went wrong, without the ids of chunk and lifecycle errors
    /// ([`crate::Pipeline::message`] has them) and without the position.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Json(e) => e.fmt(f),
            ErrorKind::Schema(e) => e.fmt(f),
            ErrorKind::Chunk(e) => e.fmt(f),
            ErrorKind::Verify { event, rule } => write!(f, "{event}: {rule}"),
            ErrorKind::Incomplete => f.write_str("the stream ended incomplete"),
            ErrorKind::Capacity(c) => c.fmt(f),
        }
    }
}

impl fmt::Display for Error {
    /// The kind, then where: `… (frame 3, byte 120)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (frame {}, byte {})",
            self.kind, self.frame, self.offset
        )
    }
}

impl core::error::Error for Error {}

impl fmt::Display for Stage {
    /// As [`Stage::name`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::check::normalize::LaneKind;
    use crate::check::verify::{Entity, RunPhase};
    use std::string::ToString;

    fn is_error<E: core::error::Error>() {}

    /// An error is 32 bytes: the frame and the byte (`u64`s), the stage, and
    /// a 12-byte kind (names as one-byte enums, counts as `u32`s; a
    /// `ChunkError`'s 12 bytes leave room for `ErrorKind`'s tag).
    #[test]
    fn errors_are_small() {
        use core::mem::size_of;
        let sizes = [
            ("Error", size_of::<Error>()),
            ("ErrorKind", size_of::<ErrorKind>()),
            ("SchemaError", size_of::<SchemaError>()),
            ("JsonError", size_of::<JsonError>()),
            ("ChunkError", size_of::<ChunkError>()),
            ("Capacity", size_of::<Capacity>()),
            ("DecodeError", size_of::<DecodeError>()),
            ("VerifyError", size_of::<VerifyError>()),
        ];
        for (name, size) in sizes {
            std::println!("size_of::<{name}>() = {size}");
        }
        assert!(size_of::<Error>() <= 32);
    }

    /// Every error a user sees is a `core::error::Error` and says what went
    /// wrong in words, not as `Debug` prints it.
    #[test]
    fn errors_are_errors_and_speak_in_words() {
        is_error::<Error>();
        is_error::<Capacity>();
        is_error::<ChunkError>();
        is_error::<DecodeError>();
        is_error::<JsonError>();
        is_error::<SchemaError>();
        is_error::<VerifyError>();
        is_error::<crate::BufferFull>();
        is_error::<crate::BufferTooSmall>();
        is_error::<crate::sse::Error>();
        let kinds = [
            ErrorKind::Chunk(ChunkError::Mismatch {
                kind: LaneKind::Tool,
                field: crate::Key::ToolCallName,
            }),
            ErrorKind::Chunk(ChunkError::Ambiguous {
                kind: LaneKind::Text,
                lanes: 2,
            }),
            ErrorKind::Verify {
                event: EventType::StepStarted,
                rule: Rule::AlreadyOpen(Entity::Step),
            },
            ErrorKind::Verify {
                event: EventType::RunFinished,
                rule: Rule::OpenAtRunFinished(Entity::ToolCall),
            },
            ErrorKind::Incomplete,
        ];
        let words: std::vec::Vec<_> = kinds.iter().map(|k| k.to_string()).collect();
        assert_eq!(
            words,
            [
                "a TOOL_CALL_CHUNK changes its stream's toolCallName",
                "a TEXT_MESSAGE_CHUNK with neither id nor subagentRunId while 2 of its streams are open",
                "STEP_STARTED: the step is already open",
                "RUN_FINISHED: RUN_FINISHED while tool calls are open",
                "the stream ended incomplete",
            ]
        );
        assert_eq!(Stage::Verify.to_string(), "verify");
        assert_eq!(RunPhase::NotStarted.to_string(), "not started");
        let e = VerifyError::Capacity(Capacity::Owners);
        assert_eq!(e.to_string(), Capacity::Owners.to_string());
    }
}
