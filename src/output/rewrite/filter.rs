//! The tool-call filter ([`Rewriter::deny_tools`](super::Rewriter::deny_tools)):
//! denied tool names, and the ids of this run's calls to them (whose ARGS,
//! END and RESULT follow), in the crate's id pools and tables
//! ([`ToolTables`], the caller's: a rewriter that denies no tool keeps
//! none).

use core::fmt;

use crate::protocol::event_type::EventType;
use crate::store::{Entry, IdTable, Pool};
use crate::view::event::Event;
use crate::view::string::JsonStr;

use super::RewriteError;
use super::repair::{Escaped, RUN_ERROR_BYTES};

/// Denied tool names at most ([`ToolTables::deny`]).
pub const DENIED_TOOLS: usize = 16;
/// Bytes for the denied tool names, as JSON text (a name with characters
/// JSON escapes takes more than its UTF-8).
pub const DENIED_TOOL_BYTES: usize = 256;
/// Calls to denied tools held in one run at most (one more ends the
/// stream with `AGUI_STREAM_CAPACITY`; closing what is open then leaves
/// tool calls open, as the filter cannot tell which the client saw).
pub const DENIED_CALLS: usize = 32;
/// Bytes for the ids of the denied calls held in one run.
pub const DENIED_CALL_ID_BYTES: usize = 1024;

/// What the filter says of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Filtered {
    Keep,
    Drop,
    /// A denied call that the filter cannot hold.
    Full,
}

/// The tables of a rewriter that removes the calls to denied tools: the
/// denied names, and the ids of the run's calls to them. 1,832 bytes,
/// which a rewriter that denies no tool does without: it borrows them
/// ([`Rewriter::deny_tools`](super::Rewriter::deny_tools)).
///
/// ```
/// use agui_stream::{Config, rewrite::{Options, Rewriter, ToolTables}};
/// let mut tables = ToolTables::new();
/// tables.deny("get_weather")?;
/// let (mut frames, mut raw) = ([0u8; 1024], [0u8; 1024]);
/// let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
/// rewriter.deny_tools(&mut tables);
/// let mut out = Vec::new();
/// rewriter.push(b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
///                 data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c\",\"toolCallName\":\"get_weather\"}\n\n", &mut out)?;
/// assert!(!String::from_utf8(out).unwrap().contains("get_weather"));
/// # Ok::<(), agui_stream::rewrite::RewriteError>(())
/// ```
#[derive(Debug)]
pub struct ToolTables {
    name_bytes: Pool<DENIED_TOOL_BYTES>,
    names: IdTable<(), DENIED_TOOLS>,
    id_bytes: Pool<DENIED_CALL_ID_BYTES>,
    ids: IdTable<(), DENIED_CALLS>,
    /// A denied call did not fit ([`Filtered::Full`]): which open call the
    /// client never saw is unknown, so no call event passes any more (the
    /// stream ends there; closing what is open leaves its calls open).
    overflowed: bool,
}

/// Every entry is of the one kind, owned by no subagent.
const ENTRY: Entry<()> = Entry {
    kind: (),
    owner: None,
};

impl Default for ToolTables {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolTables {
    /// Tables that deny no tool.
    pub const fn new() -> Self {
        ToolTables {
            name_bytes: Pool::new(),
            names: IdTable::new(),
            id_bytes: Pool::new(),
            ids: IdTable::new(),
            overflowed: false,
        }
    }

    /// Denies the tool `name`: at most [`DENIED_TOOLS`] names
    /// ([`DENIED_TOOL_BYTES`] bytes as JSON text). A run's calls to them
    /// are held ([`DENIED_CALLS`] calls, [`DENIED_CALL_ID_BYTES`] bytes of
    /// ids) until the next run: one more ends the stream with a
    /// `RUN_ERROR` (`AGUI_STREAM_CAPACITY`).
    ///
    /// # Errors
    ///
    /// [`RewriteError::DeniedTools`] if the names do not fit.
    pub fn deny(&mut self, name: &str) -> Result<(), RewriteError> {
        // Stored as JSON text, as the ids it is compared with are.
        let mut buf = [0u8; DENIED_TOOL_BYTES];
        let mut w = Escaped::new(&mut buf);
        fmt::Write::write_str(&mut w, name).map_err(|_| RewriteError::DeniedTools)?;
        let len = w.len();
        let text = buf.get(..len).unwrap_or_default();
        let name = JsonStr::from_escaped(text);
        self.names
            .push(&mut self.name_bytes, name, ENTRY)
            .map(|_| ())
            .map_err(|_| RewriteError::DeniedTools)
    }

    /// Forgets every name and call, to deny others for another stream.
    pub fn clear(&mut self) {
        *self = Self::new();
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.names.iter().next().is_none()
    }

    pub(super) fn denies(&self, name: JsonStr<'_>) -> bool {
        self.names.find(&self.name_bytes, (), name).is_some()
    }

    fn holds(&self, id: JsonStr<'_>) -> bool {
        self.ids.find(&self.id_bytes, (), id).is_some()
    }

    /// Whether `message` (a `RUN_ERROR`'s message, escaped as
    /// [`Escaped`] writes it) shows the id of one of this run's denied
    /// calls, which the client must not learn of.
    pub(super) fn named_in(&self, message: &[u8]) -> bool {
        self.ids.iter().any(|(span, _)| {
            let id = self.id_bytes.text(span);
            let mut buf = [0u8; RUN_ERROR_BYTES];
            let mut w = Escaped::new(&mut buf);
            // An id longer than any message cannot be in one.
            if id.is_empty() || fmt::write(&mut w, format_args!("{id}")).is_err() {
                return false;
            }
            let len = w.len();
            buf.get(..len)
                .is_some_and(|id| memchr::memmem::find(message, id).is_some())
        })
    }

    /// Whether [`check`](Self::check) keeps `event`, asked before it is
    /// checked (changes nothing).
    pub(super) fn keeps(&self, event: &Event<'_>) -> bool {
        use EventType as T;
        let id = || event.tool_call_id().unwrap_or(JsonStr::from_escaped(b""));
        match event.event_type() {
            T::ToolCallStart => !event.tool_call_name().is_some_and(|n| self.denies(n)),
            T::ToolCallArgs | T::ToolCallEnd | T::ToolCallResult => {
                !self.overflowed && !self.holds(id())
            }
            _ => true,
        }
    }

    pub(super) fn check(&mut self, event: &Event<'_>) -> Filtered {
        if event.event_type() == EventType::RunStarted {
            self.ids.clear();
            self.id_bytes.clear();
            self.overflowed = false;
            return Filtered::Keep;
        }
        if self.keeps(event) {
            return Filtered::Keep;
        }
        if event.event_type() != EventType::ToolCallStart {
            return Filtered::Drop;
        }
        let id = event.tool_call_id().unwrap_or(JsonStr::from_escaped(b""));
        match self.ids.push(&mut self.id_bytes, id, ENTRY) {
            Ok(_) => Filtered::Drop,
            Err(_) => {
                self.overflowed = true;
                Filtered::Full
            }
        }
    }
}

/// The tables a rewriter borrowed, if any: without them every event is
/// kept.
#[derive(Debug)]
pub(super) struct Tools<'a>(pub(super) Option<&'a mut ToolTables>);

impl Tools<'_> {
    /// The same tables, borrowed for a shorter while.
    pub(super) fn reborrow(&mut self) -> Tools<'_> {
        Tools(self.0.as_deref_mut())
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|t| t.is_empty())
    }

    pub(super) fn named_in(&self, message: &[u8]) -> bool {
        self.0.as_ref().is_some_and(|t| t.named_in(message))
    }

    pub(super) fn keeps(&self, event: &Event<'_>) -> bool {
        self.0.as_ref().is_none_or(|t| t.keeps(event))
    }

    /// Whether a `ty` event for the entity `id` is kept (asked before the
    /// event is whole).
    pub(super) fn keeps_call(&self, ty: EventType, id: JsonStr<'_>) -> bool {
        ty != EventType::ToolCallArgs
            || self
                .0
                .as_ref()
                .is_none_or(|t| !t.overflowed && !t.holds(id))
    }

    pub(super) fn check(&mut self, event: &Event<'_>) -> Filtered {
        match &mut self.0 {
            Some(t) => t.check(event),
            None => Filtered::Keep,
        }
    }
}
