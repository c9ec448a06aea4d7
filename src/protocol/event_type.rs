//! The event types and the member names the protocol defines.

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

            /// How many values there are: the length of a per-value table.
            pub const COUNT: usize = Self::ALL.len();

            /// This value's position in [`ALL`](Self::ALL), below
            /// [`COUNT`](Self::COUNT): an index into a per-value table.
            pub const fn index(self) -> usize {
                self as usize
            }

            /// The name as it appears on the wire.
            pub const fn as_str(self) -> &'static str {
                // Each name is converted once, at compile time.
                match self {
                    $($name::$variant => const {
                        match core::str::from_utf8($text) {
                            Ok(s) => s,
                            Err(_) => "",
                        }
                    },)*
                }
            }

            /// The name as JSON text: `pre`, the name, `post` (for a writer
            /// that writes it in one piece; each built once, at compile time).
            /// The encoder uses those of `Key` and `EventType`.
            #[allow(dead_code)]
            pub(crate) fn framed(self, framing: $crate::protocol::event_type::Framing) -> &'static [u8] {
                use $crate::protocol::event_type::{Framed, Framing};
                static FRAMED: [[Framed; Framing::COUNT]; $name::COUNT] = [
                    $([Framed::new($text, Framing::Member), Framed::new($text, Framing::TypeMember)],)*
                ];
                FRAMED
                    .get(self as usize)
                    .and_then(|f| f.get(framing as usize))
                    .map_or(&[], Framed::as_bytes)
            }

            /// Looks a wire name up (exact, case-sensitive).
            ///
            /// The name is matched as a `Packed` (integers), so the match
            /// compiles to a decision tree, not a comparison per name; a
            /// name longer than `Packed` holds whole is also compared whole.
            #[allow(non_upper_case_globals)] // a constant per name, named as it
            pub fn from_bytes(name: &[u8]) -> Option<Self> {
                use $crate::protocol::event_type::Packed;
                $(
                    const $variant: Packed = Packed::of($text);
                )*
                match Packed::of(name) {
                    $($variant if Packed::is_whole($text) || name == $text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use names;

/// How a writer frames a name ([`Framed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `,"name":` — a member after another.
    Member,
    /// `{"type":"name"` — an event's first member.
    TypeMember,
}

impl Framing {
    pub(crate) const COUNT: usize = 2;
}

/// A name framed as JSON text (at most 64 bytes: every name the protocol
/// defines is shorter).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Framed {
    bytes: [u8; 64],
    len: u8,
}

impl Framed {
    // Evaluated at compile time only: a name too long is a build error.
    #[allow(
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::cast_possible_truncation
    )]
    pub(crate) const fn new(name: &[u8], framing: Framing) -> Self {
        let (pre, post): (&[u8], &[u8]) = match framing {
            Framing::Member => (b",\"", b"\":"),
            Framing::TypeMember => (b"{\"type\":\"", b"\""),
        };
        let mut bytes = [0u8; 64];
        let mut len = 0;
        let parts = [pre, name, post];
        let mut p = 0;
        while p < parts.len() {
            let part = parts[p];
            let mut i = 0;
            while i < part.len() {
                bytes[len] = part[i];
                len += 1;
                i += 1;
            }
            p += 1;
        }
        Framed {
            bytes,
            len: len as u8,
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }
}

/// A name as integers: its length and its first and last eight bytes (four
/// for names of four to seven bytes, the bytes themselves below that).
/// Equal for two names of at most [`Packed::WHOLE`] bytes exactly when the
/// names are equal; for longer names, only if their ends are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packed {
    len: usize,
    head: u64,
    tail: u64,
}

impl Packed {
    /// The longest name a `Packed` holds whole.
    const WHOLE: usize = 16;

    /// `name` packed (also at compile time, for the names matched against).
    #[inline(always)]
    pub(crate) const fn of(name: &[u8]) -> Self {
        let len = name.len();
        let (head, tail) =
            if let (Some(h), Some(t)) = (name.first_chunk::<8>(), name.last_chunk::<8>()) {
                (u64::from_le_bytes(*h), u64::from_le_bytes(*t))
            } else if let (Some(h), Some(t)) = (name.first_chunk::<4>(), name.last_chunk::<4>()) {
                (u32::from_le_bytes(*h) as u64, u32::from_le_bytes(*t) as u64)
            } else {
                let mut head = 0u64;
                let mut rest = name;
                while let [b, more @ ..] = rest {
                    head = head << 8 | *b as u64;
                    rest = more;
                }
                (head, 0)
            };
        Packed { len, head, tail }
    }

    /// Whether `name` is held whole (no need to compare it as bytes too).
    pub(crate) const fn is_whole(name: &[u8]) -> bool {
        name.len() <= Self::WHOLE
    }
}

names! {
    /// An AG-UI event type (the `type` member). Includes the legacy
    /// `THINKING_*` types, which only the V0 dialect keeps as such.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    #[cfg_attr(feature = "serde", derive(serde::Serialize))]
    #[non_exhaustive]
    pub enum EventType {
        /// Opens a streamed text message.
        TextMessageStart = b"TEXT_MESSAGE_START",
        /// Appends to a streamed text message.
        TextMessageContent = b"TEXT_MESSAGE_CONTENT",
        /// Closes a streamed text message.
        TextMessageEnd = b"TEXT_MESSAGE_END",
        /// Start/content/end shorthand for text.
        TextMessageChunk = b"TEXT_MESSAGE_CHUNK",
        /// Opens a tool call.
        ToolCallStart = b"TOOL_CALL_START",
        /// Appends a fragment of a tool call's arguments.
        ToolCallArgs = b"TOOL_CALL_ARGS",
        /// Closes a tool call.
        ToolCallEnd = b"TOOL_CALL_END",
        /// Start/args/end shorthand for tool calls.
        ToolCallChunk = b"TOOL_CALL_CHUNK",
        /// A tool's result.
        ToolCallResult = b"TOOL_CALL_RESULT",
        /// Legacy: opens a thinking step.
        ThinkingStart = b"THINKING_START",
        /// Legacy: closes a thinking step.
        ThinkingEnd = b"THINKING_END",
        /// Legacy: opens a thinking message.
        ThinkingTextMessageStart = b"THINKING_TEXT_MESSAGE_START",
        /// Legacy: appends to a thinking message.
        ThinkingTextMessageContent = b"THINKING_TEXT_MESSAGE_CONTENT",
        /// Legacy: closes a thinking message.
        ThinkingTextMessageEnd = b"THINKING_TEXT_MESSAGE_END",
        /// Replaces the agent state.
        StateSnapshot = b"STATE_SNAPSHOT",
        /// Patches the agent state (RFC 6902).
        StateDelta = b"STATE_DELTA",
        /// The complete message list.
        MessagesSnapshot = b"MESSAGES_SNAPSHOT",
        /// An activity message's content.
        ActivitySnapshot = b"ACTIVITY_SNAPSHOT",
        /// Patches an activity message's content.
        ActivityDelta = b"ACTIVITY_DELTA",
        /// A provider-native event, passed through.
        Raw = b"RAW",
        /// An application-defined event.
        Custom = b"CUSTOM",
        /// Opens a run.
        RunStarted = b"RUN_STARTED",
        /// Closes a run that did not fail.
        RunFinished = b"RUN_FINISHED",
        /// Ends a run that failed.
        RunError = b"RUN_ERROR",
        /// Opens a named step.
        StepStarted = b"STEP_STARTED",
        /// Closes a named step.
        StepFinished = b"STEP_FINISHED",
        /// Opens a reasoning span.
        ReasoningStart = b"REASONING_START",
        /// Opens a reasoning message.
        ReasoningMessageStart = b"REASONING_MESSAGE_START",
        /// Appends to a reasoning message.
        ReasoningMessageContent = b"REASONING_MESSAGE_CONTENT",
        /// Closes a reasoning message.
        ReasoningMessageEnd = b"REASONING_MESSAGE_END",
        /// Start/content/end shorthand for reasoning messages.
        ReasoningMessageChunk = b"REASONING_MESSAGE_CHUNK",
        /// Closes a reasoning span.
        ReasoningEnd = b"REASONING_END",
        /// An opaque encrypted reasoning artefact.
        ReasoningEncryptedValue = b"REASONING_ENCRYPTED_VALUE",
        /// A subagent invocation began.
        SubagentStarted = b"SUBAGENT_STARTED",
        /// A subagent invocation's segment ended.
        SubagentFinished = b"SUBAGENT_FINISHED",
        /// A subagent invocation failed.
        SubagentError = b"SUBAGENT_ERROR",
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

/// Defines [`Key`] (the top-level members) and [`Member`] (those, then the
/// members of nested objects) from one list, with `Member::from(Key)`.
macro_rules! members {
    (
        keys { $($(#[$kmeta:meta])* $key:ident = $ktext:literal,)* }
        nested { $($(#[$nmeta:meta])* $nested:ident = $ntext:literal,)* }
    ) => {
        names! {
            /// A top-level member an event may carry. [`crate::Event::get`] takes one.
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub enum Key { $($(#[$kmeta])* $key = $ktext,)* }
        }

        names! {
            /// A member name the schemas check, at any depth: every [`Key`],
            /// then the members of nested objects. A
            /// [`SchemaError`](crate::SchemaError) names one.
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            #[non_exhaustive]
            pub enum Member {
                $($(#[$kmeta])* $key = $ktext,)*
                $($(#[$nmeta])* $nested = $ntext,)*
            }
        }

        impl From<Key> for Member {
            fn from(key: Key) -> Self {
                match key {
                    $(Key::$key => Member::$key,)*
                }
            }
        }
    };
}

members! {
    keys {
        /// `type`
        Type = b"type",
        /// `timestamp`
        Timestamp = b"timestamp",
        /// `rawEvent`
        RawEvent = b"rawEvent",
        /// `metadata`
        Metadata = b"metadata",
        /// `subagentRunId`
        SubagentRunId = b"subagentRunId",
        /// `threadId`
        ThreadId = b"threadId",
        /// `runId`
        RunId = b"runId",
        /// `parentRunId`
        ParentRunId = b"parentRunId",
        /// `protocolVersion`
        ProtocolVersion = b"protocolVersion",
        /// `input`
        Input = b"input",
        /// `result`
        Result = b"result",
        /// `outcome`
        Outcome = b"outcome",
        /// `usage`
        Usage = b"usage",
        /// `message`
        Message = b"message",
        /// `code`
        Code = b"code",
        /// `stepName`
        StepName = b"stepName",
        /// `messageId`
        MessageId = b"messageId",
        /// `role`
        Role = b"role",
        /// `name`
        Name = b"name",
        /// `delta`
        Delta = b"delta",
        /// `toolCallId`
        ToolCallId = b"toolCallId",
        /// `toolCallName`
        ToolCallName = b"toolCallName",
        /// `parentMessageId`
        ParentMessageId = b"parentMessageId",
        /// `content`
        Content = b"content",
        /// `snapshot`
        Snapshot = b"snapshot",
        /// `messages`
        Messages = b"messages",
        /// `activityType`
        ActivityType = b"activityType",
        /// `replace`
        Replace = b"replace",
        /// `patch`
        Patch = b"patch",
        /// `event`
        Event = b"event",
        /// `source`
        Source = b"source",
        /// `value`
        Value = b"value",
        /// `subtype`
        Subtype = b"subtype",
        /// `entityId`
        EntityId = b"entityId",
        /// `encryptedValue`
        EncryptedValue = b"encryptedValue",
        /// `description`
        Description = b"description",
        /// `parentSubagentRunId`
        ParentSubagentRunId = b"parentSubagentRunId",
        /// `parentToolCallId`
        ParentToolCallId = b"parentToolCallId",
        /// `title`
        Title = b"title",
    }
    nested {
        /// `arguments`
        Arguments = b"arguments",
        /// `cacheWriteInputTokens`
        CacheWriteInputTokens = b"cacheWriteInputTokens",
        /// `cachedInputTokens`
        CachedInputTokens = b"cachedInputTokens",
        /// `context`
        Context = b"context",
        /// `data`
        Data = b"data",
        /// `error`
        Error = b"error",
        /// `expiresAt`
        ExpiresAt = b"expiresAt",
        /// `filename`
        Filename = b"filename",
        /// `forwardedProps`
        ForwardedProps = b"forwardedProps",
        /// `from`
        From = b"from",
        /// `function`
        Function = b"function",
        /// `id`
        Id = b"id",
        /// `inputTokens`
        InputTokens = b"inputTokens",
        /// `interruptId`
        InterruptId = b"interruptId",
        /// `interruptIds`
        InterruptIds = b"interruptIds",
        /// `interrupts`
        Interrupts = b"interrupts",
        /// `mimeType`
        MimeType = b"mimeType",
        /// `model`
        Model = b"model",
        /// `op`
        Op = b"op",
        /// `outputTokens`
        OutputTokens = b"outputTokens",
        /// `parameters`
        Parameters = b"parameters",
        /// `path`
        Path = b"path",
        /// `payload`
        Payload = b"payload",
        /// `pendingToolCallIds`
        PendingToolCallIds = b"pendingToolCallIds",
        /// `provider`
        Provider = b"provider",
        /// `reason`
        Reason = b"reason",
        /// `reasoningTokens`
        ReasoningTokens = b"reasoningTokens",
        /// `responseSchema`
        ResponseSchema = b"responseSchema",
        /// `resume`
        Resume = b"resume",
        /// `state`
        State = b"state",
        /// `status`
        Status = b"status",
        /// `text`
        Text = b"text",
        /// `toolCalls`
        ToolCalls = b"toolCalls",
        /// `tools`
        Tools = b"tools",
        /// `totalTokens`
        TotalTokens = b"totalTokens",
        /// `url`
        Url = b"url",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (i, t) in EventType::ALL.iter().enumerate() {
            assert_eq!(t.index(), i);
        }
        for (i, k) in Key::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
        }
        assert_eq!(EventType::COUNT, EventType::ALL.len());
        for &t in EventType::ALL {
            assert_eq!(EventType::from_bytes(t.as_str().as_bytes()), Some(t));
        }
        for &k in Key::ALL {
            assert_eq!(Key::from_bytes(k.as_str().as_bytes()), Some(k));
            assert_eq!(Member::from(k).as_str(), k.as_str());
            assert_eq!(Member::from(k).index(), k.index());
        }
        for &m in Member::ALL {
            assert_eq!(Member::from_bytes(m.as_str().as_bytes()), Some(m));
        }
        assert_eq!(EventType::ALL.len(), 36);
        assert_eq!(EventType::from_bytes(b"custom"), None);
        assert_eq!(Key::from_bytes(b"Type"), None);
    }

    /// `from_bytes` (a match on packed integers) finds exactly what a
    /// search of the names finds, for every name and every near miss:
    /// each byte changed (in a long name, a middle byte that the packed
    /// ends do not hold), one byte more or less, and every prefix.
    #[test]
    #[cfg_attr(miri, ignore = "tens of thousands of lookups: too slow under miri")]
    fn lookup_agrees_with_a_search() {
        extern crate std;
        use std::vec::Vec;
        fn check<T: Copy + PartialEq + fmt::Debug>(
            all: &[T],
            name: fn(T) -> &'static str,
            lookup: fn(&[u8]) -> Option<T>,
        ) {
            let search = |s: &[u8]| all.iter().copied().find(|&t| name(t).as_bytes() == s);
            for &t in all {
                let n = name(t).as_bytes();
                let mut tries: Vec<Vec<u8>> = (0..=n.len()).map(|k| n[..k].to_vec()).collect();
                for i in 0..n.len() {
                    for b in [n[i] ^ 0x20, n[i] ^ 0x01, b'_', 0] {
                        let mut v = n.to_vec();
                        v[i] = b;
                        tries.push(v);
                    }
                }
                tries.push([n, b"s"].concat());
                tries.push([b"x", n].concat());
                for v in tries {
                    assert_eq!(
                        lookup(&v),
                        search(&v),
                        "{:?}",
                        std::string::String::from_utf8_lossy(&v)
                    );
                }
            }
        }
        check(EventType::ALL, EventType::as_str, EventType::from_bytes);
        check(Key::ALL, Key::as_str, Key::from_bytes);
        check(Member::ALL, Member::as_str, Member::from_bytes);
    }
}
