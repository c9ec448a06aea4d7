//! What each event may carry, per dialect, as static tables: the shapes
//! of its members and of the objects nested in them. The checker
//! (`check::schema`) and the writer (`output::walk`) read the same tables,
//! so what is validated and what is written cannot drift apart.
//!
//! The tables transcribe the reference validators: `@ag-ui/core@1.0.0`'s
//! generated zod v4 schemas (behind `@ag-ui/client@1.0.0`'s compatibility
//! boundary and enforcement stage) for [`Dialect::V1`], and
//! `@ag-ui/core@0.0.59`'s zod v3 `EventSchemas` for [`Dialect::V0`].

use core::fmt;

use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key, Member, names};

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
    /// Absent (not null) means this value (its exact JSON text).
    Default(&'static [u8]),
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
    pub(crate) name: Member,
    pub(crate) shape: Shape,
    pub(crate) presence: Presence,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Obj {
    pub(crate) name: SchemaObject,
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
    /// boundary upgrades to a media part (see `view::shaped::LegacyBinary`).
    LegacyBinary,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Union {
    /// What the reference calls the union (`MessageSchema`: `Message`).
    pub(crate) name: SchemaObject,
    pub(crate) tag: Member,
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

names! {
    /// The object a [`SchemaError`](crate::SchemaError) is in: the event itself, or a nested
    /// shape as the reference's schemas name it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    #[non_exhaustive]
    pub enum SchemaObject {
        /// The event's top level: `event`
        Event = b"event",
        /// `ActivityMessage`
        ActivityMessage = b"ActivityMessage",
        /// `AddOperation`
        AddOperation = b"AddOperation",
        /// `AssistantMessage`
        AssistantMessage = b"AssistantMessage",
        /// `AudioInputContent`
        AudioInputContent = b"AudioInputContent",
        /// `AudioPart`
        AudioPart = b"AudioPart",
        /// `BinaryInputContent`
        BinaryInputContent = b"BinaryInputContent",
        /// `CancelledOutcome`
        CancelledOutcome = b"CancelledOutcome",
        /// `ContentPart` (a content part of any type)
        ContentPart = b"ContentPart",
        /// `Context`
        Context = b"Context",
        /// `CopyOperation`
        CopyOperation = b"CopyOperation",
        /// `DataSource`
        DataSource = b"DataSource",
        /// `DeveloperMessage`
        DeveloperMessage = b"DeveloperMessage",
        /// `DocumentInputContent`
        DocumentInputContent = b"DocumentInputContent",
        /// `DocumentPart`
        DocumentPart = b"DocumentPart",
        /// `FileSource`
        FileSource = b"FileSource",
        /// `FunctionCall`
        FunctionCall = b"FunctionCall",
        /// `ImageInputContent`
        ImageInputContent = b"ImageInputContent",
        /// `ImagePart`
        ImagePart = b"ImagePart",
        /// `InputContent` (V0: a content part of any type)
        InputContent = b"InputContent",
        /// `InputContentDataSource`
        InputContentDataSource = b"InputContentDataSource",
        /// `InputContentSource` (V0: a part's source of any type)
        InputContentSource = b"InputContentSource",
        /// `InputContentUrlSource`
        InputContentUrlSource = b"InputContentUrlSource",
        /// `Interrupt`
        Interrupt = b"Interrupt",
        /// `InterruptOutcome`
        InterruptOutcome = b"InterruptOutcome",
        /// `JsonPatchOperation` (an operation of any kind)
        JsonPatchOperation = b"JsonPatchOperation",
        /// `Message` (a message of any role)
        Message = b"Message",
        /// `MoveOperation`
        MoveOperation = b"MoveOperation",
        /// `PartSource` (a part's source of any type)
        PartSource = b"PartSource",
        /// `ReasoningMessage`
        ReasoningMessage = b"ReasoningMessage",
        /// `RemoveOperation`
        RemoveOperation = b"RemoveOperation",
        /// `ReplaceOperation`
        ReplaceOperation = b"ReplaceOperation",
        /// `ResumeEntry`
        ResumeEntry = b"ResumeEntry",
        /// `RunAgentInput`
        RunAgentInput = b"RunAgentInput",
        /// `RunFinishedOutcome` (an outcome of any type)
        RunFinishedOutcome = b"RunFinishedOutcome",
        /// `SubagentFinishedOutcome` (an outcome of any type)
        SubagentFinishedOutcome = b"SubagentFinishedOutcome",
        /// `SuccessOutcome`
        SuccessOutcome = b"SuccessOutcome",
        /// `SuspendedOutcome`
        SuspendedOutcome = b"SuspendedOutcome",
        /// `SystemMessage`
        SystemMessage = b"SystemMessage",
        /// `TestOperation`
        TestOperation = b"TestOperation",
        /// `TextInputContent`
        TextInputContent = b"TextInputContent",
        /// `TextPart`
        TextPart = b"TextPart",
        /// `TokenUsage`
        TokenUsage = b"TokenUsage",
        /// `Tool`
        Tool = b"Tool",
        /// `ToolCall`
        ToolCall = b"ToolCall",
        /// `ToolMessage`
        ToolMessage = b"ToolMessage",
        /// `UrlSource`
        UrlSource = b"UrlSource",
        /// `UserMessage`
        UserMessage = b"UserMessage",
        /// `VideoInputContent`
        VideoInputContent = b"VideoInputContent",
        /// `VideoPart`
        VideoPart = b"VideoPart",
    }
}

// ------------------------------------------------------------------ builders

const fn req(name: Member, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::Required,
    }
}
const fn opt(name: Member, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::Optional,
    }
}
const fn nul(name: Member, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::NullAbsent,
    }
}
const fn dflt(name: Member, shape: Shape, value: &'static [u8]) -> Field {
    Field {
        name,
        shape,
        presence: Presence::Default(value),
    }
}
const fn obj(name: SchemaObject, extra: Extra, fields: &'static [Field]) -> Obj {
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
        presence: Presence::Default(value),
    }
}

use Extra::{Keep, Reject, Strip};
use Member as M;
use SchemaObject as O;
use Shape::{Any, Bool, Count, NonNull, Pointer, Record, SafeInt, Str};

/// What a request body (`RunAgentInput`) must be in `dialect`.
pub(crate) const fn request(dialect: Dialect) -> &'static Obj {
    match dialect {
        Dialect::V1 => &v1::REQUEST,
        Dialect::V0 => &v0::REQUEST,
    }
}

pub(crate) mod v0;
pub(crate) mod v1;

mod events;

pub(crate) use events::*;
