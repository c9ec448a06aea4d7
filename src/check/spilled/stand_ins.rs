//! Which members of a spilled frame are stand-ins, and whether the
//! stand-ins decided before the event's type was read leave its verdict
//! the reference's.

use core::fmt;

use crate::protocol::event_type::{EventType, Key};
use crate::view::json::RawJson;

/// The top-level members of a spilled frame whose values are, or hold,
/// stand-ins (see [`FrameInfo::stand_ins`](crate::FrameInfo::stand_ins)):
/// at any depth, a value only its kind is read of shows as the empty value
/// of its kind (`""`, `{}`, `[]`; a string whose truthiness a rule reads,
/// in a binary content part, as `" "`), and an array read element by
/// element (a message history, content parts, a JSON Patch, …) lacks the
/// elements that passed their check and were let go.
///
/// ```
/// use agui_stream::{Config, Event, FrameInfo, Key, Pipeline};
/// let delta = "x".repeat(10_000);
/// let stream = format!(
///     "data: {{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}}\n\n\
///      data: {{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}}\n\n\
///      data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"{delta}\"}}\n\n"
/// );
/// let mut buf = [0u8; 256]; // far smaller than the last frame
/// let mut pipeline = Pipeline::new(&mut buf, Config::new());
/// let mut last = None;
/// let mut sink = |ev: &Event<'_>, f: &FrameInfo| last = Some((ev.delta().map(|d| d.raw().len()), *f));
/// for piece in stream.as_bytes().chunks(1460) {
///     pipeline.push(piece, &mut sink).unwrap();
/// }
/// let (delta_len, frame) = last.unwrap();
/// assert!(frame.spilled && frame.stand_ins.contains(Key::Delta));
/// assert_eq!(delta_len, Some(0)); // the delta's 10,000 bytes are in the stream, at frame.start..frame.end
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StandIns(u64);

/// The bit of members whose name is no [`Key`] (V1 strips them; V0 passes
/// them through).
pub(super) const UNLISTED: u8 = 63;
/// The bit of a root value that is not an object (a schema error whatever
/// it holds).
pub(super) const ROOT: u8 = 62;
/// A name with escapes (never cut).
pub(super) const ESCAPED: u8 = 61;
const _: () = assert!(crate::protocol::event_type::Key::COUNT < ESCAPED as usize);

impl StandIns {
    pub(super) const fn none() -> Self {
        StandIns(0)
    }

    /// No member was replaced: the event's views are the whole event.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// `key`'s value is a stand-in.
    pub const fn contains(self, key: Key) -> bool {
        self.has(key as u8)
    }

    /// The value of a member whose name is no [`Key`] (an unknown member,
    /// which V0 passes through) is a stand-in. One bit holds them all: with
    /// several such members, each is its value or a stand-in.
    pub const fn unlisted(self) -> bool {
        self.has(UNLISTED)
    }

    /// The member called `name` is a stand-in (by its [`Key`]), or may be
    /// one (an unlisted member, see [`unlisted`](Self::unlisted)).
    pub fn covers(self, name: &str) -> bool {
        match Key::from_bytes(name.as_bytes()) {
            Some(k) => self.contains(k),
            None => self.unlisted(),
        }
    }

    /// The keys whose values are stand-ins.
    pub fn keys(self) -> impl Iterator<Item = Key> {
        Key::ALL.iter().copied().filter(move |&k| self.contains(k))
    }

    const fn has(self, bit: u8) -> bool {
        bit < 64 && self.0 & (1u64 << bit) != 0
    }

    pub(super) fn add(&mut self, bit: u8) {
        if bit < 64 {
            self.0 |= 1u64 << bit;
        }
    }
}

impl fmt::Debug for StandIns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_set();
        list.entries(self.keys());
        if self.unlisted() {
            list.entry(&"(unlisted)");
        }
        list.finish()
    }
}

/// Whether the stand-ins of `payload` (a stand-in the reducer wrote) leave
/// its verdict the reference's: every reduction keeps it, but a tool
/// call's `delta` is read whole when its arguments are checked.
pub(crate) fn allowed(stand_ins: StandIns, payload: &[u8], check_tool_args: bool) -> bool {
    if !check_tool_args || !stand_ins.contains(Key::Delta) {
        return true;
    }
    let ty = RawJson::trusted(payload)
        .get("type")
        .and_then(|t| t.as_str())
        .and_then(|t| t.as_str())
        .and_then(|t| EventType::from_bytes(t.as_bytes()));
    !matches!(ty, Some(EventType::ToolCallArgs | EventType::ToolCallChunk))
}
