//! Which members each event type carries, per dialect.

use super::*;
use crate::protocol::roles::TEXT_ROLES;

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
