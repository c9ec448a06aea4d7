//! The event types and the top-level member names the protocol defines.

use core::fmt;

macro_rules! names {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }
    ) => {
        $(#[$meta])*
        $vis enum $name { $($(#[$vmeta])* $variant,)* }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The name as it appears on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// Looks a wire name up (exact, case-sensitive).
            pub fn from_bytes(name: &[u8]) -> Option<Self> {
                match name { $(x if x == $text.as_bytes() => Some($name::$variant),)* _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

names! {
    /// An AG-UI event type (the `type` member). Includes the legacy
    /// `THINKING_*` types, which only the V0 dialect keeps as such.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    #[cfg_attr(feature = "serde", derive(serde::Serialize))]
    pub enum EventType {
        /// Opens a streamed text message.
        TextMessageStart = "TEXT_MESSAGE_START",
        /// Appends to a streamed text message.
        TextMessageContent = "TEXT_MESSAGE_CONTENT",
        /// Closes a streamed text message.
        TextMessageEnd = "TEXT_MESSAGE_END",
        /// Start/content/end shorthand for text.
        TextMessageChunk = "TEXT_MESSAGE_CHUNK",
        /// Opens a tool call.
        ToolCallStart = "TOOL_CALL_START",
        /// Appends a fragment of a tool call's arguments.
        ToolCallArgs = "TOOL_CALL_ARGS",
        /// Closes a tool call.
        ToolCallEnd = "TOOL_CALL_END",
        /// Start/args/end shorthand for tool calls.
        ToolCallChunk = "TOOL_CALL_CHUNK",
        /// A tool's result.
        ToolCallResult = "TOOL_CALL_RESULT",
        /// Legacy: opens a thinking step.
        ThinkingStart = "THINKING_START",
        /// Legacy: closes a thinking step.
        ThinkingEnd = "THINKING_END",
        /// Legacy: opens a thinking message.
        ThinkingTextMessageStart = "THINKING_TEXT_MESSAGE_START",
        /// Legacy: appends to a thinking message.
        ThinkingTextMessageContent = "THINKING_TEXT_MESSAGE_CONTENT",
        /// Legacy: closes a thinking message.
        ThinkingTextMessageEnd = "THINKING_TEXT_MESSAGE_END",
        /// Replaces the agent state.
        StateSnapshot = "STATE_SNAPSHOT",
        /// Patches the agent state (RFC 6902).
        StateDelta = "STATE_DELTA",
        /// The complete message list.
        MessagesSnapshot = "MESSAGES_SNAPSHOT",
        /// An activity message's content.
        ActivitySnapshot = "ACTIVITY_SNAPSHOT",
        /// Patches an activity message's content.
        ActivityDelta = "ACTIVITY_DELTA",
        /// A provider-native event, passed through.
        Raw = "RAW",
        /// An application-defined event.
        Custom = "CUSTOM",
        /// Opens a run.
        RunStarted = "RUN_STARTED",
        /// Closes a run that did not fail.
        RunFinished = "RUN_FINISHED",
        /// Ends a run that failed.
        RunError = "RUN_ERROR",
        /// Opens a named step.
        StepStarted = "STEP_STARTED",
        /// Closes a named step.
        StepFinished = "STEP_FINISHED",
        /// Opens a reasoning span.
        ReasoningStart = "REASONING_START",
        /// Opens a reasoning message.
        ReasoningMessageStart = "REASONING_MESSAGE_START",
        /// Appends to a reasoning message.
        ReasoningMessageContent = "REASONING_MESSAGE_CONTENT",
        /// Closes a reasoning message.
        ReasoningMessageEnd = "REASONING_MESSAGE_END",
        /// Start/content/end shorthand for reasoning messages.
        ReasoningMessageChunk = "REASONING_MESSAGE_CHUNK",
        /// Closes a reasoning span.
        ReasoningEnd = "REASONING_END",
        /// An opaque encrypted reasoning artefact.
        ReasoningEncryptedValue = "REASONING_ENCRYPTED_VALUE",
        /// A subagent invocation began.
        SubagentStarted = "SUBAGENT_STARTED",
        /// A subagent invocation's segment ended.
        SubagentFinished = "SUBAGENT_FINISHED",
        /// A subagent invocation failed.
        SubagentError = "SUBAGENT_ERROR",
    }
}

impl EventType {
    /// True for the `*_CHUNK` shorthand types.
    pub const fn is_chunk(self) -> bool {
        matches!(
            self,
            EventType::TextMessageChunk
                | EventType::ToolCallChunk
                | EventType::ReasoningMessageChunk
        )
    }

    /// True for the legacy `THINKING_*` types.
    pub const fn is_thinking(self) -> bool {
        matches!(
            self,
            EventType::ThinkingStart
                | EventType::ThinkingEnd
                | EventType::ThinkingTextMessageStart
                | EventType::ThinkingTextMessageContent
                | EventType::ThinkingTextMessageEnd
        )
    }
}

names! {
    /// A top-level member an event may carry. [`crate::Event::get`] takes one.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub enum Key {
        /// `type`
        Type = "type",
        /// `timestamp`
        Timestamp = "timestamp",
        /// `rawEvent`
        RawEvent = "rawEvent",
        /// `metadata`
        Metadata = "metadata",
        /// `subagentRunId`
        SubagentRunId = "subagentRunId",
        /// `threadId`
        ThreadId = "threadId",
        /// `runId`
        RunId = "runId",
        /// `parentRunId`
        ParentRunId = "parentRunId",
        /// `protocolVersion`
        ProtocolVersion = "protocolVersion",
        /// `input`
        Input = "input",
        /// `result`
        Result = "result",
        /// `outcome`
        Outcome = "outcome",
        /// `usage`
        Usage = "usage",
        /// `message`
        Message = "message",
        /// `code`
        Code = "code",
        /// `stepName`
        StepName = "stepName",
        /// `messageId`
        MessageId = "messageId",
        /// `role`
        Role = "role",
        /// `name`
        Name = "name",
        /// `delta`
        Delta = "delta",
        /// `toolCallId`
        ToolCallId = "toolCallId",
        /// `toolCallName`
        ToolCallName = "toolCallName",
        /// `parentMessageId`
        ParentMessageId = "parentMessageId",
        /// `content`
        Content = "content",
        /// `snapshot`
        Snapshot = "snapshot",
        /// `messages`
        Messages = "messages",
        /// `activityType`
        ActivityType = "activityType",
        /// `replace`
        Replace = "replace",
        /// `patch`
        Patch = "patch",
        /// `event`
        Event = "event",
        /// `source`
        Source = "source",
        /// `value`
        Value = "value",
        /// `subtype`
        Subtype = "subtype",
        /// `entityId`
        EntityId = "entityId",
        /// `encryptedValue`
        EncryptedValue = "encryptedValue",
        /// `description`
        Description = "description",
        /// `parentSubagentRunId`
        ParentSubagentRunId = "parentSubagentRunId",
        /// `parentToolCallId`
        ParentToolCallId = "parentToolCallId",
        /// `title`
        Title = "title",
    }
}

/// Number of [`Key`] values.
pub const KEY_COUNT: usize = Key::ALL.len();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &t in EventType::ALL {
            assert_eq!(EventType::from_bytes(t.as_str().as_bytes()), Some(t));
        }
        for &k in Key::ALL {
            assert_eq!(Key::from_bytes(k.as_str().as_bytes()), Some(k));
        }
        assert_eq!(EventType::ALL.len(), 36);
        assert_eq!(EventType::from_bytes(b"custom"), None);
        assert_eq!(Key::from_bytes(b"Type"), None);
    }
}
