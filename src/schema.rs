//! What each event may carry, per dialect, as static tables — and the one
//! walker that checks a decoded object against them.
//!
//! The tables transcribe the reference validators: `@ag-ui/core@1.0.0`'s
//! generated zod v4 schemas (behind `@ag-ui/client@1.0.0`'s compatibility
//! boundary and enforcement stage) for [`Dialect::V1`], and
//! `@ag-ui/core@0.0.59`'s zod v3 `EventSchemas` for [`Dialect::V0`]. The
//! encoder walks the same tables, so what is validated and what is written
//! cannot drift apart.
//!
//! Recursion here follows the *schema* (at most six levels: an event, its
//! messages, their content parts, a part's source), never the JSON nesting:
//! opaque values (`snapshot`, `rawEvent`, …) are not descended into.

use core::fmt;

use crate::event_type::{EventType, Key};
use crate::json::{JsonKind, RawJson};
use crate::string::JsonStr;

/// Which version of the protocol to accept and emit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Dialect {
    /// Protocol 1.0 (`@ag-ui/core@1.0.0`): unknown members are stripped at
    /// every depth, unknown event types dropped, integers checked.
    #[default]
    V1,
    /// Pre-1.0 (`@ag-ui/core@0.0.59`): unknown top-level members pass
    /// through, unknown event types are rejected, `THINKING_*` is native.
    V0,
}

/// What a member's value must be.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    /// Any JSON value, `null` included.
    Any,
    /// Any JSON value but `null`.
    NonNull,
    Str,
    Bool,
    /// Any number (V0 `z.number()`; overflow to infinity is accepted).
    Number,
    /// An integer within ±(2^53−1) (V1 `z.int()`).
    SafeInt,
    /// A non-negative integer within 2^53−1 (V1 token counts).
    Count,
    /// A non-negative integer of any size (V0 `z.number().int().nonnegative()`).
    NonNegInt,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A JSON Pointer (RFC 6901): `^(/([^/~]|~[01])*)*$`.
    Pointer,
    /// A plain object with any members (not an array, not null): V1's
    /// `z.custom` objects.
    Record,
    /// A plain object with any members, read as zod v3's `z.record` reads
    /// it: an own `__proto__` member is skipped (V0).
    Dict,
    Object(&'static Obj),
    Array(&'static Shape),
    /// An array with at least one element.
    NonEmptyArray(&'static Shape),
    Union(&'static Union),
    /// A string, or else a value of the inner shape.
    StrOr(&'static Shape),
}

/// When a member may be absent or null.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Presence {
    Required,
    /// Absent is fine; `null` must match the shape (usually it does not).
    Optional,
    /// Absent is fine and `null` means absent.
    NullAbsent,
    /// Absent (not null) means this value.
    Default(RawJson<'static>),
}

/// What to do with members a shape does not name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extra {
    /// Keep them (V0 events, JSON Patch operations).
    Keep,
    /// Drop them silently (V1 everywhere, V0 nested objects).
    Strip,
    /// Reject the object (V0 outcomes, `.strict()`).
    Reject,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub(crate) name: &'static str,
    pub(crate) shape: Shape,
    pub(crate) presence: Presence,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Obj {
    pub(crate) name: &'static str,
    pub(crate) fields: &'static [Field],
    pub(crate) extra: Extra,
    pub(crate) special: Special,
}

/// Rules an object shape has beyond its members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    /// V0 binary content: at least one of id/url/data is a non-empty string.
    BinaryPayload,
    /// V1: a legacy `binary` content part, which the 1.0 compatibility
    /// boundary upgrades to a media part (see [`LegacyBinary`]).
    LegacyBinary,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Union {
    pub(crate) tag: &'static str,
    pub(crate) variants: &'static [(&'static str, &'static Obj)],
    /// V1 drops an element whose tag it does not know; V0 rejects it.
    pub(crate) drop_unknown: bool,
}

/// A top-level member of an event.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventField {
    pub(crate) key: Key,
    pub(crate) shape: Shape,
    pub(crate) presence: Presence,
}

/// Why an event failed validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SchemaError {
    /// The event type, once known.
    pub event: Option<EventType>,
    /// The object the problem is in: `"event"` or a nested shape's name
    /// (`"Message"`, `"TokenUsage"`, …).
    pub object: &'static str,
    /// The member concerned (empty when the problem is the whole value).
    pub field: &'static str,
    /// What is wrong.
    pub problem: SchemaProblem,
}

/// The rule a [`SchemaError`] broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SchemaProblem {
    /// The frame's JSON is not an object.
    NotAnObject,
    /// `type` is missing, empty or not a string.
    MissingType,
    /// `type` names no event (V0 only; V1 drops such events).
    UnknownType,
    /// A required member is absent.
    Missing,
    /// A member is `null` where null is not allowed.
    Null,
    /// A member has the wrong JSON kind.
    WrongKind {
        /// What was expected (`"string"`, `"array"`, …).
        expected: &'static str,
        /// What was found.
        found: JsonKind,
    },
    /// A number that must be an integer is not one.
    NotInteger,
    /// An integer outside ±(2^53−1).
    NotSafeInteger,
    /// A count below zero.
    Negative,
    /// A string outside the allowed values.
    NotAllowed,
    /// A string that is not a JSON Pointer.
    BadPointer,
    /// A member a strict object does not allow.
    UnknownMember,
    /// An array that must not be empty is.
    Empty,
    /// A discriminated union's tag names no variant (V0).
    UnknownVariant,
    /// A V0 binary content part with none of id, url or data.
    BinaryPayload,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.event {
            Some(t) => write!(f, "Invalid {t} event: ")?,
            // The reference's transport check words it this way.
            None => f.write_str("Invalid event: ")?,
        }
        let field = self.field;
        let object = self.object;
        match self.problem {
            SchemaProblem::NotAnObject => f.write_str("the frame is not a JSON object."),
            SchemaProblem::MissingType => f.write_str("the frame carries no event type."),
            SchemaProblem::UnknownType => f.write_str("unknown event type"),
            SchemaProblem::Missing => write!(f, "{object}.{field} is required"),
            SchemaProblem::Null => write!(f, "{object}.{field} must not be null"),
            SchemaProblem::WrongKind { expected, found } => write!(
                f,
                "{object}.{field}: expected {expected}, received {}",
                found.name()
            ),
            SchemaProblem::NotInteger => write!(f, "{object}.{field}: expected an integer"),
            SchemaProblem::NotSafeInteger => {
                write!(f, "{object}.{field}: integer outside the safe range")
            }
            SchemaProblem::Negative => write!(f, "{object}.{field}: must be >= 0"),
            SchemaProblem::NotAllowed => write!(f, "{object}.{field}: value not allowed"),
            SchemaProblem::BadPointer => {
                write!(f, "{object}.{field}: not a JSON Pointer (RFC 6901)")
            }
            SchemaProblem::UnknownMember => write!(f, "{object}: unrecognized member"),
            SchemaProblem::Empty => write!(f, "{object}.{field}: must not be empty"),
            SchemaProblem::UnknownVariant => {
                write!(f, "{object}.{field}: invalid discriminator value")
            }
            SchemaProblem::BinaryPayload => write!(
                f,
                "{object}: BinaryInputContent requires at least one of id, url, or data"
            ),
        }
    }
}

// ------------------------------------------------------------------ builders

const fn req(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::Required,
    }
}
const fn opt(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::Optional,
    }
}
const fn nul(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::NullAbsent,
    }
}
const fn dflt(name: &'static str, shape: Shape, value: &'static [u8]) -> Field {
    Field {
        name,
        shape,
        presence: Presence::Default(RawJson::exact(value)),
    }
}
const fn obj(name: &'static str, extra: Extra, fields: &'static [Field]) -> Obj {
    Obj {
        name,
        fields,
        extra,
        special: Special::None,
    }
}
const fn ereq(key: Key, shape: Shape) -> EventField {
    EventField {
        key,
        shape,
        presence: Presence::Required,
    }
}
const fn eopt(key: Key, shape: Shape) -> EventField {
    EventField {
        key,
        shape,
        presence: Presence::Optional,
    }
}
const fn enul(key: Key, shape: Shape) -> EventField {
    EventField {
        key,
        shape,
        presence: Presence::NullAbsent,
    }
}
const fn edflt(key: Key, shape: Shape, value: &'static [u8]) -> EventField {
    EventField {
        key,
        shape,
        presence: Presence::Default(RawJson::exact(value)),
    }
}

use Extra::{Keep, Reject, Strip};
use Shape::{Any, Bool, Count, NonNull, Pointer, Record, SafeInt, Str};

// ------------------------------------------------------------ V1 (1.0.0)

mod v1 {
    use super::*;

    const STR_ARRAY: Shape = Shape::Array(&Str);

    // Content parts. Inside messages the compatibility boundary turns a
    // media part's `metadata: null` into absence; in TOOL_CALL_RESULT it
    // does not, so there are two copies of the media parts.
    const TEXT_PART: Obj = obj(
        "TextPart",
        Strip,
        &[opt("id", Str), req("text", Str), opt("metadata", NonNull)],
    );
    const DATA_SOURCE: Obj = obj(
        "DataSource",
        Strip,
        &[req("value", Str), req("mimeType", Str)],
    );
    const URL_SOURCE: Obj = obj(
        "UrlSource",
        Strip,
        &[req("value", Str), opt("mimeType", Str)],
    );
    const FILE_SOURCE: Obj = obj(
        "FileSource",
        Strip,
        &[
            req("value", Str),
            opt("provider", Str),
            opt("mimeType", Str),
        ],
    );
    const SOURCE: Union = Union {
        tag: "type",
        variants: &[
            ("data", &DATA_SOURCE),
            ("url", &URL_SOURCE),
            ("file", &FILE_SOURCE),
        ],
        drop_unknown: true,
    };
    const MEDIA_FIELDS_IN_MESSAGE: &[Field] = &[
        opt("id", Str),
        req("source", Shape::Union(&SOURCE)),
        nul("metadata", NonNull),
    ];
    const MEDIA_FIELDS_IN_RESULT: &[Field] = &[
        opt("id", Str),
        req("source", Shape::Union(&SOURCE)),
        opt("metadata", NonNull),
    ];
    const IMAGE_M: Obj = obj("ImagePart", Strip, MEDIA_FIELDS_IN_MESSAGE);
    const AUDIO_M: Obj = obj("AudioPart", Strip, MEDIA_FIELDS_IN_MESSAGE);
    const VIDEO_M: Obj = obj("VideoPart", Strip, MEDIA_FIELDS_IN_MESSAGE);
    const DOCUMENT_M: Obj = obj("DocumentPart", Strip, MEDIA_FIELDS_IN_MESSAGE);
    const IMAGE_R: Obj = obj("ImagePart", Strip, MEDIA_FIELDS_IN_RESULT);
    const AUDIO_R: Obj = obj("AudioPart", Strip, MEDIA_FIELDS_IN_RESULT);
    const VIDEO_R: Obj = obj("VideoPart", Strip, MEDIA_FIELDS_IN_RESULT);
    const DOCUMENT_R: Obj = obj("DocumentPart", Strip, MEDIA_FIELDS_IN_RESULT);
    const LEGACY_BINARY: Obj = Obj {
        name: "BinaryInputContent",
        fields: &[],
        extra: Strip,
        special: Special::LegacyBinary,
    };
    pub(super) const PART_IN_MESSAGE: Union = Union {
        tag: "type",
        variants: &[
            ("text", &TEXT_PART),
            ("image", &IMAGE_M),
            ("audio", &AUDIO_M),
            ("video", &VIDEO_M),
            ("document", &DOCUMENT_M),
            ("binary", &LEGACY_BINARY),
        ],
        drop_unknown: true,
    };
    const PART_IN_RESULT: Union = Union {
        tag: "type",
        variants: &[
            ("text", &TEXT_PART),
            ("image", &IMAGE_R),
            ("audio", &AUDIO_R),
            ("video", &VIDEO_R),
            ("document", &DOCUMENT_R),
        ],
        drop_unknown: true,
    };
    const MESSAGE_CONTENT: Shape = Shape::StrOr(&Shape::Array(&Shape::Union(&PART_IN_MESSAGE)));
    pub(super) const RESULT_CONTENT: Shape =
        Shape::StrOr(&Shape::Array(&Shape::Union(&PART_IN_RESULT)));

    const FUNCTION_CALL: Obj = obj(
        "FunctionCall",
        Strip,
        &[req("name", Str), req("arguments", Str)],
    );
    const TOOL_CALL: Obj = obj(
        "ToolCall",
        Strip,
        &[
            req("id", Str),
            req("type", Shape::OneOf(&["function"])),
            req("function", Shape::Object(&FUNCTION_CALL)),
            opt("encryptedValue", Str),
            opt("metadata", Record),
        ],
    );
    const DEVELOPER: Obj = obj(
        "DeveloperMessage",
        Strip,
        &[
            opt("subagentRunId", Str),
            req("id", Str),
            opt("name", Str),
            opt("encryptedValue", Str),
            opt("metadata", Record),
            req("content", Str),
        ],
    );
    const SYSTEM: Obj = obj("SystemMessage", Strip, DEVELOPER.fields);
    const ASSISTANT: Obj = obj(
        "AssistantMessage",
        Strip,
        &[
            opt("subagentRunId", Str),
            req("id", Str),
            opt("name", Str),
            opt("encryptedValue", Str),
            opt("metadata", Record),
            opt("content", Str),
            opt("toolCalls", Shape::Array(&Shape::Object(&TOOL_CALL))),
        ],
    );
    const USER: Obj = obj(
        "UserMessage",
        Strip,
        &[
            opt("subagentRunId", Str),
            req("id", Str),
            opt("name", Str),
            opt("encryptedValue", Str),
            opt("metadata", Record),
            req("content", MESSAGE_CONTENT),
        ],
    );
    const TOOL: Obj = obj(
        "ToolMessage",
        Strip,
        &[
            opt("subagentRunId", Str),
            req("id", Str),
            req("content", MESSAGE_CONTENT),
            req("toolCallId", Str),
            opt("error", Str),
            opt("encryptedValue", Str),
            opt("metadata", Record),
        ],
    );
    const ACTIVITY: Obj = obj(
        "ActivityMessage",
        Strip,
        &[
            opt("subagentRunId", Str),
            req("id", Str),
            req("activityType", Str),
            req("content", Record),
            opt("metadata", Record),
        ],
    );
    const REASONING: Obj = obj(
        "ReasoningMessage",
        Strip,
        &[
            opt("subagentRunId", Str),
            req("id", Str),
            req("content", Str),
            opt("encryptedValue", Str),
            opt("metadata", Record),
        ],
    );
    const MESSAGE: Union = Union {
        tag: "role",
        variants: &[
            ("developer", &DEVELOPER),
            ("system", &SYSTEM),
            ("assistant", &ASSISTANT),
            ("user", &USER),
            ("tool", &TOOL),
            ("activity", &ACTIVITY),
            ("reasoning", &REASONING),
        ],
        drop_unknown: true,
    };
    pub(super) const MESSAGES: Shape = Shape::Array(&Shape::Union(&MESSAGE));

    const TOOL_DEF: Obj = obj(
        "Tool",
        Strip,
        &[
            req("name", Str),
            req("description", Str),
            nul("parameters", NonNull),
            opt("metadata", Record),
        ],
    );
    const CONTEXT: Obj = obj(
        "Context",
        Strip,
        &[req("description", Str), req("value", Str)],
    );
    const RESUME: Obj = obj(
        "ResumeEntry",
        Strip,
        &[
            req("interruptId", Str),
            req("status", Shape::OneOf(&["resolved", "cancelled"])),
            nul("payload", NonNull),
            opt("metadata", Record),
        ],
    );
    pub(super) const RUN_AGENT_INPUT: Obj = obj(
        "RunAgentInput",
        Strip,
        &[
            req("threadId", Str),
            req("runId", Str),
            opt("protocolVersion", Str),
            opt("parentRunId", Str),
            nul("state", Any),
            req("messages", MESSAGES),
            dflt("tools", Shape::Array(&Shape::Object(&TOOL_DEF)), b"[]"),
            dflt("context", Shape::Array(&Shape::Object(&CONTEXT)), b"[]"),
            nul("forwardedProps", NonNull),
            opt("resume", Shape::Array(&Shape::Object(&RESUME))),
        ],
    );

    const INTERRUPT: Obj = obj(
        "Interrupt",
        Strip,
        &[
            opt("subagentRunId", Str),
            req("id", Str),
            req("reason", Str),
            opt("message", Str),
            opt("toolCallId", Str),
            opt("responseSchema", Record),
            opt("expiresAt", Str),
            opt("metadata", Record),
        ],
    );
    const SUCCESS: Obj = obj(
        "SuccessOutcome",
        Strip,
        &[opt("pendingToolCallIds", STR_ARRAY)],
    );
    const INTERRUPTED: Obj = obj(
        "InterruptOutcome",
        Strip,
        &[req(
            "interrupts",
            Shape::NonEmptyArray(&Shape::Object(&INTERRUPT)),
        )],
    );
    const CANCELLED: Obj = obj("CancelledOutcome", Strip, &[]);
    pub(super) const RUN_OUTCOME: Union = Union {
        tag: "type",
        variants: &[
            ("success", &SUCCESS),
            ("interrupt", &INTERRUPTED),
            ("cancelled", &CANCELLED),
        ],
        drop_unknown: true,
    };
    const SUB_SUCCESS: Obj = obj("SuccessOutcome", Strip, &[]);
    const SUSPENDED: Obj = obj("SuspendedOutcome", Strip, &[opt("interruptIds", STR_ARRAY)]);
    pub(super) const SUBAGENT_OUTCOME: Union = Union {
        tag: "type",
        variants: &[("success", &SUB_SUCCESS), ("suspended", &SUSPENDED)],
        drop_unknown: true,
    };
    const TOKEN_USAGE: Obj = obj(
        "TokenUsage",
        Strip,
        &[
            opt("provider", Str),
            opt("model", Str),
            opt("inputTokens", Count),
            opt("outputTokens", Count),
            opt("totalTokens", Count),
            opt("reasoningTokens", Count),
            opt("cachedInputTokens", Count),
            opt("cacheWriteInputTokens", Count),
        ],
    );
    pub(super) const USAGE: Shape = Shape::Array(&Shape::Object(&TOKEN_USAGE));

    // RFC 6902 operations are open: extra members stay.
    pub(super) const ADD: Obj = obj(
        "AddOperation",
        Keep,
        &[req("path", Pointer), req("value", Any)],
    );
    const REMOVE: Obj = obj("RemoveOperation", Keep, &[req("path", Pointer)]);
    const REPLACE: Obj = obj(
        "ReplaceOperation",
        Keep,
        &[req("path", Pointer), req("value", Any)],
    );
    const MOVE: Obj = obj(
        "MoveOperation",
        Keep,
        &[req("from", Pointer), req("path", Pointer)],
    );
    const COPY: Obj = obj(
        "CopyOperation",
        Keep,
        &[req("from", Pointer), req("path", Pointer)],
    );
    const TEST: Obj = obj(
        "TestOperation",
        Keep,
        &[req("path", Pointer), req("value", Any)],
    );
    const OPERATION: Union = Union {
        tag: "op",
        variants: &[
            ("add", &ADD),
            ("remove", &REMOVE),
            ("replace", &REPLACE),
            ("move", &MOVE),
            ("copy", &COPY),
            ("test", &TEST),
        ],
        drop_unknown: true,
    };
    pub(super) const PATCH: Shape = Shape::Array(&Shape::Union(&OPERATION));
}

// ------------------------------------------------------------ V0 (0.0.59)

mod v0 {
    use super::*;

    const NON_NEG: Shape = Shape::NonNegInt;

    const DATA_SOURCE: Obj = obj(
        "InputContentDataSource",
        Strip,
        &[req("value", Str), req("mimeType", Str)],
    );
    const URL_SOURCE: Obj = obj(
        "InputContentUrlSource",
        Strip,
        &[req("value", Str), opt("mimeType", Str)],
    );
    const SOURCE: Union = Union {
        tag: "type",
        variants: &[("data", &DATA_SOURCE), ("url", &URL_SOURCE)],
        drop_unknown: false,
    };
    const TEXT: Obj = obj("TextInputContent", Strip, &[req("text", Str)]);
    const MEDIA_FIELDS: &[Field] = &[req("source", Shape::Union(&SOURCE)), opt("metadata", Any)];
    const IMAGE: Obj = obj("ImageInputContent", Strip, MEDIA_FIELDS);
    const AUDIO: Obj = obj("AudioInputContent", Strip, MEDIA_FIELDS);
    const VIDEO: Obj = obj("VideoInputContent", Strip, MEDIA_FIELDS);
    const DOCUMENT: Obj = obj("DocumentInputContent", Strip, MEDIA_FIELDS);
    const BINARY: Obj = Obj {
        name: "BinaryInputContent",
        fields: &[
            req("mimeType", Str),
            opt("id", Str),
            opt("url", Str),
            opt("data", Str),
            opt("filename", Str),
        ],
        extra: Strip,
        special: Special::BinaryPayload,
    };
    const INPUT_CONTENT: Union = Union {
        tag: "type",
        variants: &[
            ("text", &TEXT),
            ("image", &IMAGE),
            ("audio", &AUDIO),
            ("video", &VIDEO),
            ("document", &DOCUMENT),
            ("binary", &BINARY),
        ],
        drop_unknown: false,
    };

    const FUNCTION_CALL: Obj = obj(
        "FunctionCall",
        Strip,
        &[req("name", Str), req("arguments", Str)],
    );
    const TOOL_CALL: Obj = obj(
        "ToolCall",
        Strip,
        &[
            req("id", Str),
            req("type", Shape::OneOf(&["function"])),
            req("function", Shape::Object(&FUNCTION_CALL)),
            opt("encryptedValue", Str),
            opt("metadata", Shape::Dict),
        ],
    );
    const DEVELOPER: Obj = obj(
        "DeveloperMessage",
        Strip,
        &[
            req("id", Str),
            req("content", Str),
            opt("name", Str),
            opt("encryptedValue", Str),
            opt("subagentRunId", Str),
            opt("metadata", Shape::Dict),
        ],
    );
    const SYSTEM: Obj = obj("SystemMessage", Strip, DEVELOPER.fields);
    const ASSISTANT: Obj = obj(
        "AssistantMessage",
        Strip,
        &[
            req("id", Str),
            opt("content", Str),
            opt("name", Str),
            opt("encryptedValue", Str),
            opt("subagentRunId", Str),
            opt("metadata", Shape::Dict),
            opt("toolCalls", Shape::Array(&Shape::Object(&TOOL_CALL))),
        ],
    );
    const USER: Obj = obj(
        "UserMessage",
        Strip,
        &[
            req("id", Str),
            req(
                "content",
                Shape::StrOr(&Shape::Array(&Shape::Union(&INPUT_CONTENT))),
            ),
            opt("name", Str),
            opt("encryptedValue", Str),
            opt("subagentRunId", Str),
            opt("metadata", Shape::Dict),
        ],
    );
    const TOOL: Obj = obj(
        "ToolMessage",
        Strip,
        &[
            req("id", Str),
            req("content", Str),
            req("toolCallId", Str),
            opt("error", Str),
            opt("encryptedValue", Str),
            opt("subagentRunId", Str),
            opt("metadata", Shape::Dict),
        ],
    );
    const ACTIVITY: Obj = obj(
        "ActivityMessage",
        Strip,
        &[
            req("id", Str),
            req("activityType", Str),
            req("content", Shape::Dict),
            opt("subagentRunId", Str),
            opt("metadata", Shape::Dict),
        ],
    );
    const REASONING: Obj = obj(
        "ReasoningMessage",
        Strip,
        &[
            req("id", Str),
            req("content", Str),
            opt("encryptedValue", Str),
            opt("subagentRunId", Str),
            opt("metadata", Shape::Dict),
        ],
    );
    const MESSAGE: Union = Union {
        tag: "role",
        variants: &[
            ("developer", &DEVELOPER),
            ("system", &SYSTEM),
            ("assistant", &ASSISTANT),
            ("user", &USER),
            ("tool", &TOOL),
            ("activity", &ACTIVITY),
            ("reasoning", &REASONING),
        ],
        drop_unknown: false,
    };
    pub(super) const MESSAGES: Shape = Shape::Array(&Shape::Union(&MESSAGE));

    const TOOL_DEF: Obj = obj(
        "Tool",
        Strip,
        &[
            req("name", Str),
            req("description", Str),
            opt("parameters", Any),
            opt("metadata", Shape::Dict),
        ],
    );
    const CONTEXT: Obj = obj(
        "Context",
        Strip,
        &[req("description", Str), req("value", Str)],
    );
    const RESUME: Obj = obj(
        "ResumeEntry",
        Strip,
        &[
            req("interruptId", Str),
            req("status", Shape::OneOf(&["resolved", "cancelled"])),
            opt("payload", Any),
            opt("metadata", Shape::Dict),
        ],
    );
    pub(super) const RUN_AGENT_INPUT: Obj = obj(
        "RunAgentInput",
        Strip,
        &[
            req("threadId", Str),
            req("runId", Str),
            opt("parentRunId", Str),
            nul("state", Any),
            req("messages", MESSAGES),
            req("tools", Shape::Array(&Shape::Object(&TOOL_DEF))),
            req("context", Shape::Array(&Shape::Object(&CONTEXT))),
            opt("forwardedProps", Any),
            opt("resume", Shape::Array(&Shape::Object(&RESUME))),
        ],
    );
    const INTERRUPT: Obj = obj(
        "Interrupt",
        Strip,
        &[
            req("id", Str),
            req("reason", Str),
            opt("message", Str),
            opt("toolCallId", Str),
            opt("responseSchema", Shape::Dict),
            opt("expiresAt", Str),
            opt("metadata", Shape::Dict),
            opt("subagentRunId", Str),
        ],
    );
    const SUCCESS: Obj = obj("SuccessOutcome", Reject, &[]);
    const INTERRUPTED: Obj = obj(
        "InterruptOutcome",
        Reject,
        &[req(
            "interrupts",
            Shape::NonEmptyArray(&Shape::Object(&INTERRUPT)),
        )],
    );
    pub(super) const RUN_OUTCOME: Union = Union {
        tag: "type",
        variants: &[("success", &SUCCESS), ("interrupt", &INTERRUPTED)],
        drop_unknown: false,
    };
    const SUSPENDED: Obj = obj(
        "SuspendedOutcome",
        Reject,
        &[opt("interruptIds", Shape::Array(&Str))],
    );
    pub(super) const SUBAGENT_OUTCOME: Union = Union {
        tag: "type",
        variants: &[("success", &SUCCESS), ("suspended", &SUSPENDED)],
        drop_unknown: false,
    };
    const TOKEN_USAGE: Obj = obj(
        "TokenUsage",
        Strip,
        &[
            opt("provider", Str),
            opt("model", Str),
            opt("inputTokens", NON_NEG),
            opt("outputTokens", NON_NEG),
            opt("totalTokens", NON_NEG),
            opt("reasoningTokens", NON_NEG),
            opt("cachedInputTokens", NON_NEG),
        ],
    );
    pub(super) const USAGE: Shape = Shape::Array(&Shape::Object(&TOKEN_USAGE));
}

// ------------------------------------------------------------- event tables

const TEXT_ROLES: &[&str] = &["developer", "system", "assistant", "user"];

/// Base members on a V1 event that can be attributed to a subagent.
macro_rules! v1_event {
    ($($f:expr),* $(,)?) => {{
        const FIELDS: &[EventField] = &[
            eopt(Key::Timestamp, SafeInt),
            enul(Key::RawEvent, NonNull),
            eopt(Key::Metadata, Record),
            eopt(Key::SubagentRunId, Str),
            $($f,)*
        ];
        FIELDS
    }};
}
/// Base members on a V1 run-scoped event (no attribution).
macro_rules! v1_run_event {
    ($($f:expr),* $(,)?) => {{
        const FIELDS: &[EventField] = &[
            eopt(Key::Timestamp, SafeInt),
            enul(Key::RawEvent, NonNull),
            eopt(Key::Metadata, Record),
            $($f,)*
        ];
        FIELDS
    }};
}
/// Base members on every V0 event.
macro_rules! v0_event {
    ($($f:expr),* $(,)?) => {{
        const FIELDS: &[EventField] = &[
            eopt(Key::Timestamp, Shape::Number),
            eopt(Key::RawEvent, Any),
            eopt(Key::Metadata, Shape::Dict),
            $($f,)*
        ];
        FIELDS
    }};
}

/// The most members an event's schema names.
pub(crate) const MAX_EVENT_FIELDS: usize = 10;

/// The members `ty` may carry in `dialect`. For V1's legacy `THINKING_*`
/// types: what survives their translation to `REASONING_*`.
pub(crate) const fn event_fields(dialect: Dialect, ty: EventType) -> &'static [EventField] {
    use EventType as T;
    use Key as K;
    match dialect {
        Dialect::V1 => match ty {
            T::TextMessageStart => v1_event![
                ereq(K::MessageId, Str),
                eopt(K::Role, Shape::OneOf(TEXT_ROLES)),
                eopt(K::Name, Str),
            ],
            T::TextMessageContent => v1_event![ereq(K::MessageId, Str), ereq(K::Delta, Str)],
            T::TextMessageEnd => v1_event![ereq(K::MessageId, Str)],
            T::TextMessageChunk => v1_event![
                eopt(K::MessageId, Str),
                eopt(K::Role, Shape::OneOf(TEXT_ROLES)),
                eopt(K::Delta, Str),
                eopt(K::Name, Str),
            ],
            T::ToolCallStart => v1_event![
                ereq(K::ToolCallId, Str),
                ereq(K::ToolCallName, Str),
                enul(K::ParentMessageId, Str),
            ],
            T::ToolCallArgs => v1_event![ereq(K::ToolCallId, Str), ereq(K::Delta, Str)],
            T::ToolCallEnd => v1_event![ereq(K::ToolCallId, Str)],
            T::ToolCallChunk => v1_event![
                eopt(K::ToolCallId, Str),
                eopt(K::ToolCallName, Str),
                enul(K::ParentMessageId, Str),
                eopt(K::Delta, Str),
            ],
            T::ToolCallResult => v1_event![
                ereq(K::MessageId, Str),
                ereq(K::ToolCallId, Str),
                ereq(K::Content, v1::RESULT_CONTENT),
                eopt(K::Role, Shape::OneOf(&["tool"])),
            ],
            T::ThinkingStart
            | T::ThinkingEnd
            | T::ThinkingTextMessageStart
            | T::ThinkingTextMessageEnd => v1_event![],
            T::ThinkingTextMessageContent => v1_event![ereq(K::Delta, Str)],
            T::StateSnapshot => v1_event![ereq(K::Snapshot, Any)],
            T::StateDelta => v1_event![ereq(K::Delta, v1::PATCH)],
            T::MessagesSnapshot => v1_run_event![ereq(K::Messages, v1::MESSAGES)],
            T::ActivitySnapshot => v1_event![
                ereq(K::MessageId, Str),
                ereq(K::ActivityType, Str),
                ereq(K::Content, Record),
                eopt(K::Replace, Bool),
            ],
            T::ActivityDelta => v1_event![
                ereq(K::MessageId, Str),
                ereq(K::ActivityType, Str),
                ereq(K::Patch, v1::PATCH),
            ],
            T::Raw => v1_event![ereq(K::Event, Any), eopt(K::Source, Str)],
            T::Custom => v1_event![ereq(K::Name, Str), ereq(K::Value, Any)],
            T::RunStarted => v1_run_event![
                ereq(K::ThreadId, Str),
                ereq(K::RunId, Str),
                eopt(K::ProtocolVersion, Str),
                eopt(K::ParentRunId, Str),
                eopt(K::Input, Shape::Object(&v1::RUN_AGENT_INPUT)),
            ],
            T::RunFinished => v1_run_event![
                ereq(K::ThreadId, Str),
                ereq(K::RunId, Str),
                enul(K::Result, NonNull),
                enul(K::Outcome, Shape::Union(&v1::RUN_OUTCOME)),
                eopt(K::Usage, v1::USAGE),
            ],
            T::RunError => v1_run_event![
                ereq(K::Message, Str),
                eopt(K::Code, Str),
                eopt(K::Usage, v1::USAGE),
            ],
            T::StepStarted | T::StepFinished => v1_event![ereq(K::StepName, Str)],
            T::ReasoningStart | T::ReasoningEnd | T::ReasoningMessageEnd => {
                v1_event![ereq(K::MessageId, Str)]
            }
            T::ReasoningMessageStart => v1_event![
                ereq(K::MessageId, Str),
                ereq(K::Role, Shape::OneOf(&["reasoning"])),
            ],
            T::ReasoningMessageContent => v1_event![ereq(K::MessageId, Str), ereq(K::Delta, Str)],
            T::ReasoningMessageChunk => v1_event![eopt(K::MessageId, Str), eopt(K::Delta, Str)],
            T::ReasoningEncryptedValue => v1_event![
                ereq(K::Subtype, Shape::OneOf(&["tool-call", "message"])),
                ereq(K::EntityId, Str),
                ereq(K::EncryptedValue, Str),
            ],
            T::SubagentStarted => v1_run_event![
                ereq(K::SubagentRunId, Str),
                ereq(K::Name, Str),
                eopt(K::Description, Str),
                eopt(K::ParentSubagentRunId, Str),
                eopt(K::ParentToolCallId, Str),
                eopt(K::ParentMessageId, Str),
            ],
            T::SubagentFinished => v1_run_event![
                ereq(K::SubagentRunId, Str),
                enul(K::Result, NonNull),
                eopt(K::Outcome, Shape::Union(&v1::SUBAGENT_OUTCOME)),
            ],
            T::SubagentError => v1_run_event![
                ereq(K::SubagentRunId, Str),
                ereq(K::Message, Str),
                eopt(K::Code, Str),
            ],
        },
        Dialect::V0 => match ty {
            T::TextMessageStart => v0_event![
                ereq(K::MessageId, Str),
                edflt(K::Role, Shape::OneOf(TEXT_ROLES), b"\"assistant\""),
                eopt(K::Name, Str),
                eopt(K::SubagentRunId, Str),
            ],
            T::TextMessageContent | T::ReasoningMessageContent => v0_event![
                ereq(K::MessageId, Str),
                ereq(K::Delta, Str),
                eopt(K::SubagentRunId, Str),
            ],
            T::TextMessageEnd | T::ReasoningStart | T::ReasoningEnd | T::ReasoningMessageEnd => {
                v0_event![ereq(K::MessageId, Str), eopt(K::SubagentRunId, Str)]
            }
            T::TextMessageChunk => v0_event![
                eopt(K::MessageId, Str),
                eopt(K::Role, Shape::OneOf(TEXT_ROLES)),
                eopt(K::Delta, Str),
                eopt(K::Name, Str),
                eopt(K::SubagentRunId, Str),
            ],
            T::ThinkingTextMessageStart | T::ThinkingTextMessageEnd | T::ThinkingEnd => {
                v0_event![]
            }
            T::ThinkingTextMessageContent => v0_event![ereq(K::Delta, Str)],
            T::ThinkingStart => v0_event![eopt(K::Title, Str)],
            T::ToolCallStart => v0_event![
                ereq(K::ToolCallId, Str),
                ereq(K::ToolCallName, Str),
                enul(K::ParentMessageId, Str),
                eopt(K::SubagentRunId, Str),
            ],
            T::ToolCallArgs => v0_event![
                ereq(K::ToolCallId, Str),
                ereq(K::Delta, Str),
                eopt(K::SubagentRunId, Str),
            ],
            T::ToolCallEnd => v0_event![ereq(K::ToolCallId, Str), eopt(K::SubagentRunId, Str)],
            T::ToolCallResult => v0_event![
                ereq(K::MessageId, Str),
                ereq(K::ToolCallId, Str),
                ereq(K::Content, Str),
                eopt(K::Role, Shape::OneOf(&["tool"])),
                eopt(K::SubagentRunId, Str),
            ],
            T::ToolCallChunk => v0_event![
                eopt(K::ToolCallId, Str),
                eopt(K::ToolCallName, Str),
                enul(K::ParentMessageId, Str),
                eopt(K::Delta, Str),
                eopt(K::SubagentRunId, Str),
            ],
            T::StateSnapshot => v0_event![eopt(K::Snapshot, Any), eopt(K::SubagentRunId, Str)],
            T::StateDelta => v0_event![
                ereq(K::Delta, Shape::Array(&Any)),
                eopt(K::SubagentRunId, Str),
            ],
            T::MessagesSnapshot => v0_event![ereq(K::Messages, v0::MESSAGES)],
            T::ActivitySnapshot => v0_event![
                ereq(K::MessageId, Str),
                ereq(K::ActivityType, Str),
                ereq(K::Content, Shape::Dict),
                edflt(K::Replace, Bool, b"true"),
                eopt(K::SubagentRunId, Str),
            ],
            T::ActivityDelta => v0_event![
                ereq(K::MessageId, Str),
                ereq(K::ActivityType, Str),
                ereq(K::Patch, Shape::Array(&Any)),
                eopt(K::SubagentRunId, Str),
            ],
            T::Raw => v0_event![
                eopt(K::Event, Any),
                eopt(K::Source, Str),
                eopt(K::SubagentRunId, Str),
            ],
            T::Custom => v0_event![
                ereq(K::Name, Str),
                eopt(K::Value, Any),
                eopt(K::SubagentRunId, Str),
            ],
            T::RunStarted => v0_event![
                ereq(K::ThreadId, Str),
                ereq(K::RunId, Str),
                eopt(K::ParentRunId, Str),
                eopt(K::Input, Shape::Object(&v0::RUN_AGENT_INPUT)),
            ],
            T::RunFinished => v0_event![
                ereq(K::ThreadId, Str),
                ereq(K::RunId, Str),
                eopt(K::Result, Any),
                enul(K::Outcome, Shape::Union(&v0::RUN_OUTCOME)),
                eopt(K::Usage, v0::USAGE),
            ],
            T::RunError => v0_event![
                ereq(K::Message, Str),
                eopt(K::Code, Str),
                eopt(K::Usage, v0::USAGE),
            ],
            T::StepStarted | T::StepFinished => {
                v0_event![ereq(K::StepName, Str), eopt(K::SubagentRunId, Str)]
            }
            T::ReasoningMessageStart => v0_event![
                ereq(K::MessageId, Str),
                ereq(K::Role, Shape::OneOf(&["reasoning"])),
                eopt(K::SubagentRunId, Str),
            ],
            T::ReasoningMessageChunk => v0_event![
                eopt(K::MessageId, Str),
                eopt(K::Delta, Str),
                eopt(K::SubagentRunId, Str),
            ],
            T::ReasoningEncryptedValue => v0_event![
                ereq(K::Subtype, Shape::OneOf(&["tool-call", "message"])),
                ereq(K::EntityId, Str),
                ereq(K::EncryptedValue, Str),
                eopt(K::SubagentRunId, Str),
            ],
            T::SubagentStarted => v0_event![
                ereq(K::SubagentRunId, Str),
                ereq(K::Name, Str),
                eopt(K::Description, Str),
                eopt(K::ParentSubagentRunId, Str),
                eopt(K::ParentToolCallId, Str),
                eopt(K::ParentMessageId, Str),
            ],
            T::SubagentFinished => v0_event![
                ereq(K::SubagentRunId, Str),
                eopt(K::Result, Any),
                eopt(K::Outcome, Shape::Union(&v0::SUBAGENT_OUTCOME)),
            ],
            T::SubagentError => v0_event![
                ereq(K::SubagentRunId, Str),
                ereq(K::Message, Str),
                eopt(K::Code, Str),
            ],
        },
    }
}

// ------------------------------------------------------------------ checking

/// Whether a value is kept or, under V1's stripping rules, dropped as an
/// unrecognised union member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Keep,
    Drop,
}

/// Where a problem is, for the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Site {
    pub(crate) object: &'static str,
    pub(crate) field: &'static str,
}

/// Why a check failed: the value breaks a rule, or checking it would
/// exceed a fixed budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    Schema(Site, SchemaProblem),
    /// More legacy-part comparisons than [`LEGACY_COMPARISON_BUDGET`].
    LegacyPartBudget,
}

pub(crate) type Check = Result<Verdict, Fault>;

fn fail(site: Site, problem: SchemaProblem) -> Check {
    Err(Fault::Schema(site, problem))
}

fn wrong(site: Site, expected: &'static str, v: RawJson<'_>) -> Check {
    fail(
        site,
        SchemaProblem::WrongKind {
            expected,
            found: v.kind(),
        },
    )
}

/// Applies a member's presence rule; `None` means "treat as absent".
/// Returns `Err` for a missing required member.
pub(crate) fn present<'a>(
    value: Option<RawJson<'a>>,
    presence: Presence,
    site: Site,
) -> Result<Option<RawJson<'a>>, Fault> {
    match (value, presence) {
        (Some(v), Presence::NullAbsent) if v.is_null() => Ok(None),
        (Some(v), _) => Ok(Some(v)),
        (None, Presence::Required) => Err(Fault::Schema(site, SchemaProblem::Missing)),
        (None, Presence::Default(d)) => Ok(Some(d)),
        (None, _) => Ok(None),
    }
}

const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

fn is_integral(x: f64) -> bool {
    x.is_finite() && (x.abs() >= 4_503_599_627_370_496.0 || (x as i64) as f64 == x)
}

/// True if `v` certainly passes `shape` unchanged, decided cheaply: the
/// shapes of most members (strings, timestamps, anything). `false` means
/// "ask [`check`]".
#[inline]
pub(crate) fn passes_quickly(v: RawJson<'_>, shape: &Shape) -> bool {
    match shape {
        Shape::Any => true,
        Shape::Str => v.kind() == JsonKind::String,
        Shape::Number => v.kind() == JsonKind::Number,
        // A short non-negative integer is a safe one.
        Shape::SafeInt | Shape::Count | Shape::NonNegInt => {
            matches!(v.short_int(), Some((false, _)))
        }
        _ => false,
    }
}

/// Checks `v` against `shape`.
pub(crate) fn check(v: RawJson<'_>, shape: &Shape, site: Site) -> Check {
    let keep = Ok(Verdict::Keep);
    match *shape {
        Shape::Any => keep,
        Shape::NonNull if v.is_null() => fail(site, SchemaProblem::Null),
        Shape::NonNull => keep,
        Shape::Str => match v.kind() {
            JsonKind::String => keep,
            _ => wrong(site, "string", v),
        },
        Shape::Bool => match v.kind() {
            JsonKind::Bool => keep,
            _ => wrong(site, "boolean", v),
        },
        // A valid JSON number always reads as a double (1e400 as infinity).
        Shape::Number if v.kind() == JsonKind::Number => keep,
        Shape::Number | Shape::SafeInt | Shape::Count | Shape::NonNegInt => {
            let Some(x) = v.as_f64() else {
                return wrong(site, "number", v);
            };
            match *shape {
                Shape::Number => keep,
                Shape::NonNegInt if !is_integral(x) => fail(site, SchemaProblem::NotInteger),
                Shape::NonNegInt if x < 0.0 => fail(site, SchemaProblem::Negative),
                Shape::NonNegInt => keep,
                _ if !is_integral(x) => fail(site, SchemaProblem::NotInteger),
                _ if x.abs() > MAX_SAFE => fail(site, SchemaProblem::NotSafeInteger),
                Shape::Count if x < 0.0 => fail(site, SchemaProblem::Negative),
                _ => keep,
            }
        }
        Shape::OneOf(allowed) => match v.as_str() {
            Some(s) if allowed.iter().any(|a| s.eq_str(a)) => keep,
            Some(_) => fail(site, SchemaProblem::NotAllowed),
            None => wrong(site, "string", v),
        },
        Shape::Pointer => match v.as_str() {
            Some(s) if is_json_pointer(s.chars()) => keep,
            Some(_) => fail(site, SchemaProblem::BadPointer),
            None => wrong(site, "string", v),
        },
        Shape::Record | Shape::Dict => match v.kind() {
            JsonKind::Object => keep,
            _ => wrong(site, "object", v),
        },
        Shape::Object(o) => match v.kind() {
            JsonKind::Object => check_object(v, o),
            _ => wrong(site, "object", v),
        },
        Shape::Array(item) | Shape::NonEmptyArray(item) => {
            if v.kind() != JsonKind::Array {
                return wrong(site, "array", v);
            }
            let (mut kept, mut elements, mut legacy) = (0usize, 0usize, 0usize);
            for e in v.elements() {
                elements = elements.saturating_add(1);
                if check(e, item, site)? == Verdict::Keep {
                    kept = kept.saturating_add(1);
                    legacy = legacy.saturating_add(usize::from(is_legacy_binary(e, item)));
                }
            }
            if kept == 0 && matches!(shape, Shape::NonEmptyArray(_)) {
                return fail(site, SchemaProblem::Empty);
            }
            // Writing this array compares every upgraded legacy part with
            // every sibling (see `superseded`); keep that bounded.
            if legacy.saturating_mul(elements) > LEGACY_COMPARISON_BUDGET {
                return Err(Fault::LegacyPartBudget);
            }
            keep
        }
        Shape::Union(u) => {
            if v.kind() != JsonKind::Object {
                return wrong(site, "object", v);
            }
            match variant(v, u) {
                Some(o) => check_object(v, o),
                None if u.drop_unknown => Ok(Verdict::Drop),
                None => fail(
                    Site {
                        object: site.object,
                        field: u.tag,
                    },
                    SchemaProblem::UnknownVariant,
                ),
            }
        }
        Shape::StrOr(inner) => match v.kind() {
            JsonKind::String => keep,
            _ => match check(v, inner, site) {
                Err(Fault::Schema(s, SchemaProblem::WrongKind { .. })) => {
                    wrong(s, "string or array", v)
                }
                other => other,
            },
        },
    }
}

/// The variant a union value's tag selects (last tag member wins).
pub(crate) fn variant(v: RawJson<'_>, u: &Union) -> Option<&'static Obj> {
    let tag = v.get(u.tag)?.as_str()?;
    u.variants
        .iter()
        .find(|(name, _)| tag.eq_str(name))
        .map(|&(_, o)| o)
}

/// The members of `v` that are written for shape `o`, in the table's
/// order: the last value of each field, defaults filled in, with
/// null-means-absent members and dropped union members left out.
pub(crate) fn written_fields<'a>(
    v: RawJson<'a>,
    o: &'static Obj,
) -> impl Iterator<Item = (&'static Field, RawJson<'a>)> {
    let (slots, _) = collect(v, o);
    o.fields.iter().zip(slots).filter_map(move |(f, slot)| {
        let value = match (slot, f.presence) {
            (Some(s), Presence::NullAbsent) if s.is_null() => None,
            (None, Presence::Default(d)) => Some(d),
            (s, _) => s,
        }?;
        (!drops(value, &f.shape)).then_some((f, value))
    })
}

/// Whether a member named `name` of an open object (`Extra::Keep`) is
/// carried over as received: not a listed field, not the union's tag, and
/// not `__proto__` (which V1's stripper turns into the prototype, see
/// [`collect`]).
pub(crate) fn kept_unlisted(name: JsonStr<'_>, o: &Obj, tag: Option<&str>) -> bool {
    !(tag.is_some_and(|t| name.eq_str(t))
        || name.eq_str("__proto__")
        || o.fields.iter().any(|f| name.eq_str(f.name)))
}

/// Whether a top-level member of a V0 event passes through as received:
/// not `type`, not a member the schema names, and not `__proto__` (zod v3
/// copies passthrough members by assignment, so it sets the prototype).
pub(crate) fn passes_through(name: JsonStr<'_>, fields: &[EventField]) -> bool {
    !(name.eq_str(Key::Type.as_str())
        || name.eq_str("__proto__")
        || fields.iter().any(|f| name.eq_str(f.key.as_str())))
}

/// The most members a nested object shape names.
pub(crate) const MAX_OBJECT_FIELDS: usize = 12;

/// Collects the last value of each named member of `v` into slots aligned
/// with `o.fields`; reports whether any other member exists.
///
/// For the open RFC 6902 operations, V1's stripper copies members onto a
/// fresh object by assignment, so an object-valued `__proto__` member
/// becomes that object's prototype and supplies the members it lacks.
pub(crate) fn collect<'a>(
    v: RawJson<'a>,
    o: &Obj,
) -> ([Option<RawJson<'a>>; MAX_OBJECT_FIELDS], bool) {
    let mut slots = [None; MAX_OBJECT_FIELDS];
    let mut extra = false;
    let mut proto = None;
    for (k, val) in v.members() {
        match o.fields.iter().position(|f| k.eq_str(f.name)) {
            Some(i) => {
                if let Some(s) = slots.get_mut(i) {
                    *s = Some(val);
                }
            }
            // A union's tag is a member its variants do not list.
            None => {
                extra = true;
                if o.extra == Extra::Keep && k.eq_str("__proto__") {
                    proto = Some(val);
                }
            }
        }
    }
    if let Some(proto) = proto.filter(|p| p.kind() == JsonKind::Object) {
        for (f, slot) in o.fields.iter().zip(slots.iter_mut()) {
            if slot.is_none() {
                *slot = proto.get(f.name);
            }
        }
    }
    (slots, extra)
}

/// Whether V1's stripper removes `v` whole: it is an unrecognised union
/// member, or a required member of it is. Stripping runs before validation,
/// so this wins over anything invalid beside it.
fn drops(v: RawJson<'_>, shape: &Shape) -> bool {
    if v.kind() != JsonKind::Object {
        return false;
    }
    let o = match *shape {
        Shape::Union(u) => match variant(v, u) {
            Some(o) => o,
            None => return u.drop_unknown,
        },
        Shape::Object(o) => o,
        _ => return false,
    };
    if o.special == Special::LegacyBinary {
        return LegacyBinary::read(v).is_none();
    }
    let (slots, _) = collect(v, o);
    required_member_drops(o, &slots)
}

/// True if a required member (of `o`, collected into `slots`) is dropped,
/// which drops the whole object.
fn required_member_drops(o: &Obj, slots: &[Option<RawJson<'_>>]) -> bool {
    o.fields.iter().zip(slots).any(|(f, slot)| {
        matches!(f.presence, Presence::Required) && slot.is_some_and(|x| drops(x, &f.shape))
    })
}

fn check_object(v: RawJson<'_>, o: &Obj) -> Check {
    if o.special == Special::LegacyBinary {
        return match LegacyBinary::read(v) {
            None => Ok(Verdict::Drop),
            Some(b) => check(
                b.value,
                &Str,
                Site {
                    object: b.source_name(),
                    field: "value",
                },
            ),
        };
    }
    let (slots, extra) = collect(v, o);
    if extra && o.extra == Extra::Reject && has_unlisted(v, o) {
        return fail(
            Site {
                object: o.name,
                field: "",
            },
            SchemaProblem::UnknownMember,
        );
    }
    if required_member_drops(o, &slots) {
        return Ok(Verdict::Drop);
    }
    for (f, slot) in o.fields.iter().zip(slots) {
        let site = Site {
            object: o.name,
            field: f.name,
        };
        if let Some(value) = present(slot, f.presence, site)? {
            check(value, &f.shape, site)?;
        }
    }
    if o.special == Special::BinaryPayload && !binary_payload(v) {
        return fail(
            Site {
                object: o.name,
                field: "",
            },
            SchemaProblem::BinaryPayload,
        );
    }
    Ok(Verdict::Keep)
}

/// A legacy `{"type":"binary", mimeType, data?, url?, filename?}` content
/// part as the 1.0 compatibility boundary upgrades it: to an image, audio,
/// video or document part (by mime type prefix) whose source is `data` if
/// truthy, else `url` if truthy, with `metadata.filename` if the filename
/// is truthy. Without a string `mimeType`, or with neither data nor url, it
/// stays a binary part, which nothing recognises, and is dropped.
///
/// The boundary also drops an upgraded part when an identical modern part
/// sits in the same array ([`superseded`]). That compares each upgraded part
/// with every sibling, so an array may hold at most
/// [`LEGACY_COMPARISON_BUDGET`] such comparisons; more is a capacity error.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LegacyBinary<'a> {
    pub(crate) part_type: &'static str,
    pub(crate) from_data: bool,
    pub(crate) value: RawJson<'a>,
    pub(crate) mime_type: RawJson<'a>,
    pub(crate) filename: Option<RawJson<'a>>,
}

impl<'a> LegacyBinary<'a> {
    pub(crate) fn read(v: RawJson<'a>) -> Option<Self> {
        let mime_type = v.get("mimeType")?;
        let mime = mime_type.as_str()?;
        let part_type = ["image", "audio", "video"]
            .into_iter()
            .find(|t| starts_with(mime, t) && mime.chars().nth(t.len()) == Some(u32::from('/')))
            .unwrap_or("document");
        let data = v.get("data").filter(|x| truthy(*x));
        let url = v.get("url").filter(|x| truthy(*x));
        let (from_data, value) = match (data, url) {
            (Some(d), _) => (true, d),
            (None, Some(u)) => (false, u),
            (None, None) => return None,
        };
        Some(LegacyBinary {
            part_type,
            from_data,
            value,
            mime_type,
            filename: v.get("filename").filter(|x| truthy(*x)),
        })
    }

    pub(crate) fn source_type(&self) -> &'static str {
        if self.from_data { "data" } else { "url" }
    }

    fn source_name(&self) -> &'static str {
        if self.from_data {
            "DataSource"
        } else {
            "UrlSource"
        }
    }
}

/// Most legacy-part-against-sibling comparisons one content array may
/// need (e.g. 64 legacy parts among 64 parts).
pub const LEGACY_COMPARISON_BUDGET: usize = 4096;

/// True if the writer leaves element `e` of `array` (whose items are `item`)
/// out: V1 strips it, or it is a legacy part a modern sibling supersedes.
pub(crate) fn omitted(e: RawJson<'_>, item: &Shape, array: RawJson<'_>) -> bool {
    drops(e, item)
        || (is_legacy_binary(e, item)
            && LegacyBinary::read(e).is_some_and(|b| superseded(&b, array)))
}

/// True if `e` is a legacy binary part the boundary upgrades.
fn is_legacy_binary(e: RawJson<'_>, item: &Shape) -> bool {
    match *item {
        // Only a union with a legacy variant (content parts) is worth
        // reading the element's tag for.
        Shape::Union(u)
            if u.variants
                .iter()
                .any(|(_, o)| o.special == Special::LegacyBinary) =>
        {
            variant(e, u).is_some_and(|o| {
                o.special == Special::LegacyBinary && LegacyBinary::read(e).is_some()
            })
        }
        _ => false,
    }
}

/// True if `siblings` (the part's own array) holds a modern part identical
/// to what `b` upgrades to: same part type, same source type, value and
/// mime type (`===`), and the same `metadata.filename` if `b` has one.
pub(crate) fn superseded(b: &LegacyBinary<'_>, siblings: RawJson<'_>) -> bool {
    siblings.elements().any(|part| {
        let same_type = part
            .get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| t.eq_str(b.part_type));
        let Some(source) = part.get("source").filter(|s| s.kind() == JsonKind::Object) else {
            return false;
        };
        let same_source = source
            .get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| t.eq_str(b.source_type()))
            && source.get("value").is_some_and(|x| strict_eq(x, b.value))
            && source
                .get("mimeType")
                .is_some_and(|x| strict_eq(x, b.mime_type));
        let same_name = match b.filename {
            None => true,
            Some(f) => part
                .get("metadata")
                .filter(|m| m.kind() == JsonKind::Object)
                .and_then(|m| m.get("filename"))
                .is_some_and(|x| strict_eq(x, f)),
        };
        same_type && same_source && same_name
    })
}

/// JavaScript's `===` on two JSON values (objects and arrays are never
/// identical: each parse makes a new one).
fn strict_eq(a: RawJson<'_>, b: RawJson<'_>) -> bool {
    match (a.kind(), b.kind()) {
        (JsonKind::String, JsonKind::String) => a.as_str() == b.as_str(),
        (JsonKind::Number, JsonKind::Number) => a.as_f64() == b.as_f64(),
        (JsonKind::Bool, JsonKind::Bool) => a.as_bool() == b.as_bool(),
        (JsonKind::Null, JsonKind::Null) => true,
        _ => false,
    }
}

fn starts_with(s: crate::string::JsonStr<'_>, prefix: &str) -> bool {
    let mut chars = s.chars();
    prefix.chars().all(|p| chars.next() == Some(u32::from(p)))
}

/// JavaScript truthiness of a JSON value.
fn truthy(v: RawJson<'_>) -> bool {
    match v.kind() {
        JsonKind::Null => false,
        JsonKind::Bool => v.as_bool() == Some(true),
        JsonKind::Number => v.as_f64().is_some_and(|x| x != 0.0),
        JsonKind::String => v.as_str().is_some_and(|s| !s.is_empty()),
        JsonKind::Array | JsonKind::Object => true,
    }
}

/// True if `v` has a member that is neither a listed field nor the `type` tag.
fn has_unlisted(v: RawJson<'_>, o: &Obj) -> bool {
    v.members()
        .any(|(k, _)| !k.eq_str("type") && !o.fields.iter().any(|f| k.eq_str(f.name)))
}

fn binary_payload(v: RawJson<'_>) -> bool {
    ["id", "url", "data"].iter().any(|k| {
        v.get(k)
            .and_then(|x| x.as_str())
            .is_some_and(|s| !s.is_empty())
    })
}

/// `^(/([^/~]|~[01])*)*$` over the decoded text.
fn is_json_pointer(mut chars: impl Iterator<Item = u32>) -> bool {
    let Some(first) = chars.next() else {
        return true;
    };
    if first != u32::from('/') {
        return false;
    }
    while let Some(c) = chars.next() {
        if c == u32::from('~') && !matches!(chars.next(), Some(0x30 | 0x31)) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Limits;
    use crate::string::JsonStr;

    fn raw(s: &str) -> RawJson<'_> {
        RawJson::parse(s.as_bytes(), Limits::new()).unwrap()
    }
    const SITE: Site = Site {
        object: "t",
        field: "f",
    };

    #[test]
    fn pointers() {
        for p in ["", "/", "/a", "/a/b", "/~0/~1", "/-", "//"] {
            assert!(
                is_json_pointer(JsonStr::from_escaped(p.as_bytes()).chars()),
                "{p}"
            );
        }
        for p in ["a", "/~", "/~2", "a/b", "/a~"] {
            assert!(
                !is_json_pointer(JsonStr::from_escaped(p.as_bytes()).chars()),
                "{p}"
            );
        }
    }

    #[test]
    fn integers() {
        assert!(check(raw("1e3"), &SafeInt, SITE).is_ok());
        assert!(check(raw("2.0"), &SafeInt, SITE).is_ok());
        assert!(check(raw("-0"), &Count, SITE).is_ok());
        assert!(check(raw("1.5"), &SafeInt, SITE).is_err());
        assert!(check(raw("9007199254740991"), &SafeInt, SITE).is_ok());
        assert!(check(raw("9007199254740993"), &SafeInt, SITE).is_err());
        assert!(check(raw("-1"), &Count, SITE).is_err());
        // Plain integers up to 15 digits take a fast path; 16 and more are parsed.
        assert!(check(raw("-999999999999999"), &SafeInt, SITE).is_ok());
        assert!(check(raw("-999999999999999"), &Count, SITE).is_err());
        assert!(check(raw("-0"), &Shape::NonNegInt, SITE).is_ok());
        assert!(check(raw("-9007199254740991"), &SafeInt, SITE).is_ok());
        assert!(check(raw("-9007199254740992"), &SafeInt, SITE).is_err());
        assert!(check(raw("0"), &Count, SITE).is_ok());
        assert!(check(raw("\"1\""), &SafeInt, SITE).is_err());
        assert!(check(raw("1e300"), &Shape::NonNegInt, SITE).is_ok());
        assert!(check(raw("1e400"), &Shape::NonNegInt, SITE).is_err());
        assert!(check(raw("1e400"), &Shape::Number, SITE).is_ok());
        assert!(check(raw("\"1\""), &Shape::Number, SITE).is_err());
    }

    #[test]
    fn unions_drop_or_reject() {
        let v1 = Shape::Array(&Shape::Union(&v1::RUN_OUTCOME));
        let _ = v1;
        assert_eq!(
            check(
                raw(r#"{"type":"paused"}"#),
                &Shape::Union(&v1::RUN_OUTCOME),
                SITE
            ),
            Ok(Verdict::Drop)
        );
        assert!(
            check(
                raw(r#"{"type":"paused"}"#),
                &Shape::Union(&v0::RUN_OUTCOME),
                SITE
            )
            .is_err()
        );
        assert!(
            check(
                raw(r#"{"type":"success","x":1}"#),
                &Shape::Union(&v0::RUN_OUTCOME),
                SITE
            )
            .is_err()
        );
        assert_eq!(
            check(
                raw(r#"{"type":"success","x":1}"#),
                &Shape::Union(&v1::RUN_OUTCOME),
                SITE
            ),
            Ok(Verdict::Keep)
        );
        assert!(check(raw("null"), &Shape::Union(&v1::RUN_OUTCOME), SITE).is_err());
        assert!(
            check(
                raw(r#"{"type":"interrupt","interrupts":[]}"#),
                &Shape::Union(&v1::RUN_OUTCOME),
                SITE
            )
            .is_err()
        );
    }

    #[test]
    fn messages_v1_drop_unknown_roles_v0_rejects() {
        let msgs = raw(
            r#"[{"id":"a","role":"function","content":"x"},{"id":"b","role":"user","content":"hi"}]"#,
        );
        assert_eq!(check(msgs, &v1::MESSAGES, SITE), Ok(Verdict::Keep));
        assert!(check(msgs, &v0::MESSAGES, SITE).is_err());
        assert!(check(raw("[null]"), &v1::MESSAGES, SITE).is_err());
        // A media part whose source kind is unknown is dropped whole.
        let parts = raw(
            r#"[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"s3","value":"x"}}]}]"#,
        );
        assert_eq!(check(parts, &v1::MESSAGES, SITE), Ok(Verdict::Keep));
    }

    #[test]
    fn binary_needs_payload_in_v0() {
        let ok = raw(
            r#"[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"a/b","url":"x"}]}]"#,
        );
        let bad = raw(
            r#"[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"a/b","id":""}]}]"#,
        );
        assert!(check(ok, &v0::MESSAGES, SITE).is_ok());
        assert_eq!(
            check(bad, &v0::MESSAGES, SITE).map_err(|f| match f {
                Fault::Schema(_, p) => Some(p),
                Fault::LegacyPartBudget => None,
            }),
            Err(Some(SchemaProblem::BinaryPayload))
        );
    }

    #[test]
    fn stripping_runs_before_validation_in_v1() {
        // The image part's source kind is unknown, so the part is dropped
        // whole; its invalid `id` is never looked at.
        let content = raw(r#"[{"type":"image","id":1,"source":{"type":"zzz","value":"v"}}]"#);
        assert_eq!(check(content, &v1::RESULT_CONTENT, SITE), Ok(Verdict::Keep));
        let content = raw(r#"[{"type":"image","id":1,"source":{"type":"url","value":"v"}}]"#);
        assert!(check(content, &v1::RESULT_CONTENT, SITE).is_err());
    }

    #[test]
    fn legacy_binary_parts_upgrade_in_v1_messages() {
        let b = |s| LegacyBinary::read(raw(s));
        let up =
            b(r#"{"type":"binary","mimeType":"audio/wav","url":"u","data":"","filename":"f"}"#)
                .unwrap();
        assert_eq!((up.part_type, up.source_type()), ("audio", "url"));
        assert!(up.filename.is_some());
        assert_eq!(
            b(r#"{"type":"binary","mimeType":"imagex/png","data":"d"}"#)
                .unwrap()
                .part_type,
            "document"
        );
        assert!(b(r#"{"type":"binary","mimeType":"image/png","id":"only-id"}"#).is_none());
        assert!(b(r#"{"type":"binary","mimeType":5,"data":"d"}"#).is_none());
        // A truthy non-string payload upgrades, then fails validation.
        let msgs = raw(
            r#"[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"a/b","data":1}]}]"#,
        );
        assert!(check(msgs, &v1::MESSAGES, SITE).is_err());
        // An identical modern sibling supersedes the upgraded part.
        let parts = raw(r#"[{"type":"binary","mimeType":"image/png","data":"d"},
                {"type":"image","source":{"type":"data","value":"d","mimeType":"image/png"}}]"#);
        let first = parts.elements().next().unwrap();
        assert!(superseded(&LegacyBinary::read(first).unwrap(), parts));
        let item = Shape::Union(&v1::PART_IN_MESSAGE);
        assert!(omitted(first, &item, parts));
    }

    #[test]
    fn legacy_comparisons_are_budgeted() {
        let mut text = heapless::String::<{ 80 * 70 + 2 }>::new();
        text.push('[').unwrap();
        for i in 0..70 {
            if i > 0 {
                text.push(',').unwrap();
            }
            text.push_str(r#"{"type":"binary","mimeType":"a/b","data":"d"}"#)
                .unwrap();
        }
        text.push(']').unwrap();
        let shape = Shape::Array(&Shape::Union(&v1::PART_IN_MESSAGE));
        assert_eq!(
            check(raw(&text), &shape, SITE),
            Err(Fault::LegacyPartBudget)
        );
    }

    #[test]
    fn patch_operation_proto_member_acts_as_prototype() {
        let op = raw(r#"{"op":"add","path":"/a","__proto__":{"value":5,"path":"/x"}}"#);
        let (slots, _) = collect(op, &v1::ADD);
        assert_eq!(slots[0].unwrap().as_bytes(), br#""/a""#);
        assert_eq!(slots[1].unwrap().as_bytes(), b"5");
    }

    #[test]
    fn every_type_has_a_table_in_both_dialects() {
        for &d in &[Dialect::V1, Dialect::V0] {
            for &t in EventType::ALL {
                let fields = event_fields(d, t);
                assert!(fields.len() >= 3, "{t}");
                assert!(fields.len() <= MAX_EVENT_FIELDS, "{t}");
            }
        }
    }
}
