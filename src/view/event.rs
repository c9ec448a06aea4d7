//! Borrowed event views.

use core::fmt;

use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key};
use crate::protocol::schema::{self, MAX_EVENT_FIELDS};
use crate::view::json::RawJson;
use crate::view::string::JsonStr;

/// One validated AG-UI event, borrowing its text from the input (or from a
/// buffer the caller owns). Cheap to copy; nothing is decoded until asked.
///
/// Only the members the event's schema names are reachable through
/// [`get`](Event::get) and the typed accessors, after the dialect's rules
/// (nulls that mean absence are gone, defaults are filled in, V1's
/// unrecognised union members are gone). The whole object as received is
/// [`object`](Event::object).
///
/// ```
/// use agui_stream::{decode, Dialect, EventType, json::Limits};
/// let ev = decode(br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hi\n"}"#,
///                 Dialect::V1, Limits::new()).unwrap().unwrap();
/// assert_eq!(ev.event_type(), EventType::TextMessageContent);
/// assert_eq!(ev.message_id().unwrap().as_str(), Some("m1"));
/// assert!(ev.delta().unwrap().eq_str("hi\n"));
/// ```
#[derive(Clone, Copy)]
pub struct Event<'a> {
    ty: EventType,
    dialect: Dialect,
    object: Option<RawJson<'a>>,
    /// The members the type's schema names, in the schema table's order
    /// (`schema::event_fields`); a table computed at compile time gives
    /// each key's slot (one load per lookup).
    slots: [Option<RawJson<'a>>; MAX_EVENT_FIELDS],
    /// V0: a `subagentRunId` member the event's schema does not describe,
    /// passed through as received (later stages still read it).
    passthrough_tag: Option<RawJson<'a>>,
}

macro_rules! str_accessors {
    ($($(#[$m:meta])* $name:ident => $key:ident,)*) => {
        $(
            $(#[$m])*
            pub fn $name(&self) -> Option<JsonStr<'a>> {
                self.str(Key::$key)
            }
        )*
    };
}

macro_rules! raw_accessors {
    ($($(#[$m:meta])* $name:ident => $key:ident,)*) => {
        $(
            $(#[$m])*
            pub fn $name(&self) -> Option<RawJson<'a>> {
                self.get(Key::$key)
            }
        )*
    };
}

impl<'a> Event<'a> {
    /// An event of type `ty` with no members yet (for events a stage
    /// synthesizes).
    pub(crate) fn empty(ty: EventType, dialect: Dialect, object: Option<RawJson<'a>>) -> Self {
        Event {
            ty,
            dialect,
            object,
            slots: [None; MAX_EVENT_FIELDS],
            passthrough_tag: None,
        }
    }

    pub(crate) fn set_passthrough_tag(&mut self, tag: Option<RawJson<'a>>) {
        self.passthrough_tag = tag;
    }

    /// V0: the `subagentRunId` member of an event whose schema lacks one
    /// (RUN_*, MESSAGES_SNAPSHOT, THINKING_*), as received, any JSON.
    pub(crate) fn passthrough_tag(&self) -> Option<RawJson<'a>> {
        self.passthrough_tag
    }

    /// The slot of `key`, if the event's schema names it.
    #[inline]
    fn slot(&self, key: Key) -> Option<usize> {
        let slots = match self.dialect {
            Dialect::V1 => &SLOTS_V1,
            Dialect::V0 => &SLOTS_V0,
        };
        let slot = *slots.get(self.ty as usize)?.get(key as usize)?;
        (slot != NO_SLOT).then_some(usize::from(slot))
    }

    /// Whether the event's schema names `key`.
    pub(crate) fn names(&self, key: Key) -> bool {
        self.slot(key).is_some()
    }

    /// Sets a member the schema names (others have nowhere to go).
    #[inline]
    pub(crate) fn set(&mut self, key: Key, value: Option<RawJson<'a>>) {
        let Some(i) = self.slot(key) else { return };
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = value;
        }
    }

    /// The event's type.
    pub fn event_type(&self) -> EventType {
        self.ty
    }

    /// The dialect it was validated under.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The whole JSON object as received (unknown members included), or
    /// `None` for an event a stage synthesized.
    pub fn object(&self) -> Option<RawJson<'a>> {
        self.object
    }

    /// The members the schema names, in the schema table's order, each
    /// with its value (`None`: absent).
    #[inline]
    pub(crate) fn fields(
        &self,
    ) -> impl Iterator<Item = (&'static schema::EventField, Option<RawJson<'a>>)> + Clone + '_ {
        let fields = schema::event_fields(self.dialect, self.ty);
        fields.iter().zip(self.slots.iter().copied())
    }

    /// A member the schema names, after the dialect's rules.
    pub fn get(&self, key: Key) -> Option<RawJson<'a>> {
        self.slot(key)
            .and_then(|i| self.slots.get(i))
            .copied()
            .flatten()
    }

    /// A string member.
    pub fn str(&self, key: Key) -> Option<JsonStr<'a>> {
        self.get(key).and_then(|v| v.as_str())
    }

    /// `timestamp` as a double.
    pub fn timestamp(&self) -> Option<f64> {
        self.get(Key::Timestamp).and_then(|v| v.as_f64())
    }

    /// `replace` (ACTIVITY_SNAPSHOT).
    pub fn replace(&self) -> Option<bool> {
        self.get(Key::Replace).and_then(|v| v.as_bool())
    }

    str_accessors! {
        /// `threadId` (RUN_STARTED, RUN_FINISHED).
        thread_id => ThreadId,
        /// `runId` (RUN_STARTED, RUN_FINISHED).
        run_id => RunId,
        /// `parentRunId` (RUN_STARTED).
        parent_run_id => ParentRunId,
        /// `protocolVersion` (RUN_STARTED, V1).
        protocol_version => ProtocolVersion,
        /// `message` (RUN_ERROR, SUBAGENT_ERROR).
        message => Message,
        /// `code` (RUN_ERROR, SUBAGENT_ERROR).
        code => Code,
        /// `stepName` (STEP_*).
        step_name => StepName,
        /// `messageId` (text, reasoning, activity, TOOL_CALL_RESULT).
        message_id => MessageId,
        /// `role`.
        role => Role,
        /// `name` (TEXT_MESSAGE_START/CHUNK, CUSTOM, SUBAGENT_STARTED).
        name => Name,
        /// `delta` as a string (content, args and chunk events); STATE_DELTA's
        /// patch is [`patch`](Event::patch).
        delta => Delta,
        /// `toolCallId`.
        tool_call_id => ToolCallId,
        /// `toolCallName`.
        tool_call_name => ToolCallName,
        /// `parentMessageId`.
        parent_message_id => ParentMessageId,
        /// `activityType` (ACTIVITY_*).
        activity_type => ActivityType,
        /// `source` (RAW).
        source => Source,
        /// `subtype` (REASONING_ENCRYPTED_VALUE).
        subtype => Subtype,
        /// `entityId` (REASONING_ENCRYPTED_VALUE).
        entity_id => EntityId,
        /// `encryptedValue` (REASONING_ENCRYPTED_VALUE).
        encrypted_value => EncryptedValue,
        /// `subagentRunId`: the subagent an event is attributed to, or the one
        /// a SUBAGENT_* event is about.
        subagent_run_id => SubagentRunId,
        /// `description` (SUBAGENT_STARTED).
        description => Description,
        /// `parentSubagentRunId` (SUBAGENT_STARTED).
        parent_subagent_run_id => ParentSubagentRunId,
        /// `parentToolCallId` (SUBAGENT_STARTED).
        parent_tool_call_id => ParentToolCallId,
        /// `title` (V0 THINKING_START).
        title => Title,
    }

    raw_accessors! {
        /// `rawEvent`: any JSON.
        raw_event => RawEvent,
        /// `metadata`: an object.
        metadata => Metadata,
        /// `input` (RUN_STARTED): a RunAgentInput object.
        input => Input,
        /// `result` (RUN_FINISHED, SUBAGENT_FINISHED): any JSON.
        result => Result,
        /// `outcome` (RUN_FINISHED, SUBAGENT_FINISHED): an object.
        outcome => Outcome,
        /// `usage` (RUN_FINISHED, RUN_ERROR): an array of TokenUsage.
        usage => Usage,
        /// `content`: a string (TOOL_CALL_RESULT), parts array (V1
        /// TOOL_CALL_RESULT) or object (ACTIVITY_SNAPSHOT).
        content => Content,
        /// `snapshot` (STATE_SNAPSHOT): any JSON.
        snapshot => Snapshot,
        /// `messages` (MESSAGES_SNAPSHOT): an array of messages.
        messages => Messages,
        /// `event` (RAW): the event it wraps, any JSON.
        wrapped_event => Event,
        /// `value` (CUSTOM): any JSON.
        value => Value,
    }

    /// The JSON Patch of STATE_DELTA (`delta`) or ACTIVITY_DELTA (`patch`).
    pub fn patch(&self) -> Option<RawJson<'a>> {
        match self.ty {
            EventType::StateDelta => self.get(Key::Delta),
            _ => self.get(Key::Patch),
        }
    }
}

/// A key the event's schema does not name.
const NO_SLOT: u8 = u8::MAX;

/// Each key's slot in each event type's view: its position in the type's
/// schema table, computed at compile time (an over-long table or a
/// repeated key fails the build).
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)] // const evaluation: an error is a build error
const fn slot_tables(dialect: Dialect) -> [[u8; Key::COUNT]; EventType::COUNT] {
    let mut tables = [[NO_SLOT; Key::COUNT]; EventType::COUNT];
    let mut t = 0;
    while t < EventType::COUNT {
        let ty = EventType::ALL[t];
        assert!(ty as usize == t);
        let fields = schema::event_fields(dialect, ty);
        assert!(fields.len() <= MAX_EVENT_FIELDS);
        let mut f = 0;
        while f < fields.len() {
            let k = fields[f].key as usize;
            assert!(tables[t][k] == NO_SLOT);
            tables[t][k] = f as u8;
            f += 1;
        }
        t += 1;
    }
    tables
}

static SLOTS_V1: [[u8; Key::COUNT]; EventType::COUNT] = slot_tables(Dialect::V1);
static SLOTS_V0: [[u8; Key::COUNT]; EventType::COUNT] = slot_tables(Dialect::V0);

impl fmt::Debug for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct(self.ty.as_str());
        for &k in Key::ALL {
            if let Some(v) = self.get(k) {
                s.field(k.as_str(), &v);
            }
        }
        s.finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Event<'_> {
    fn format(&self, f: defmt::Formatter) {
        defmt::write!(f, "Event({=str})", self.ty.as_str())
    }
}
