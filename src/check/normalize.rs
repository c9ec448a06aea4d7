//! Chunk normalization: `*_CHUNK` shorthand → START / CONTENT / END, as the
//! reference's `transformChunks` does.
//!
//! A chunk opens a *lane* or continues the open one. Lanes are keyed by
//! owner (the parent agent or a subagent's `subagentRunId`); each holds at
//! most one open text message, tool call or reasoning message. One input
//! event yields up to three output events: the END of the lane's previous
//! stream, a START, and a CONTENT (ARGS for tool calls). Synthesized events
//! borrow their ids from the lane storage, so later stages treat them like
//! decoded ones.

use core::fmt;

use crate::capacity::{Capacity, saturate};
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key};
use crate::protocol::roles::{REASONING_ROLE, TEXT_ROLE_VALUES, TEXT_ROLES};
use crate::store::{Kept, Pool, Span};
use crate::view::event::Event;
use crate::view::json::RawJson;
use crate::view::string::JsonStr;

/// What a lane streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LaneKind {
    /// TEXT_MESSAGE_CHUNK
    Text,
    /// TOOL_CALL_CHUNK
    Tool,
    /// REASONING_MESSAGE_CHUNK
    Reasoning,
}

impl LaneKind {
    const ALL: [LaneKind; 3] = [LaneKind::Text, LaneKind::Tool, LaneKind::Reasoning];

    /// The lane a chunk type streams.
    pub(crate) fn of_chunk(ty: EventType) -> Option<LaneKind> {
        LaneKind::ALL.into_iter().find(|k| k.chunk() == ty)
    }

    /// The lane whose CONTENT (ARGS) type `ty` is.
    pub(crate) fn of_content(ty: EventType) -> Option<LaneKind> {
        LaneKind::ALL.into_iter().find(|k| k.expansion()[1] == ty)
    }

    const fn chunk(self) -> EventType {
        match self {
            LaneKind::Text => EventType::TextMessageChunk,
            LaneKind::Tool => EventType::ToolCallChunk,
            LaneKind::Reasoning => EventType::ReasoningMessageChunk,
        }
    }

    /// The START, CONTENT and END events a chunk of this kind stands for.
    pub(crate) const fn expansion(self) -> [EventType; 3] {
        use EventType as T;
        match self {
            LaneKind::Text => [
                T::TextMessageStart,
                T::TextMessageContent,
                T::TextMessageEnd,
            ],
            LaneKind::Tool => [T::ToolCallStart, T::ToolCallArgs, T::ToolCallEnd],
            LaneKind::Reasoning => [
                T::ReasoningMessageStart,
                T::ReasoningMessageContent,
                T::ReasoningMessageEnd,
            ],
        }
    }

    const fn entity(self) -> &'static str {
        match self {
            LaneKind::Text => "text message",
            LaneKind::Tool => "tool call",
            LaneKind::Reasoning => "reasoning message",
        }
    }

    pub(crate) const fn id_key(self) -> Key {
        match self {
            LaneKind::Tool => Key::ToolCallId,
            _ => Key::MessageId,
        }
    }
}

/// Why a chunk could not be normalized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ChunkError {
    /// A chunk that opens a lane has no id (`First … must have a messageId`).
    MissingId(LaneKind),
    /// A TOOL_CALL_CHUNK that opens a lane has no `toolCallName`.
    MissingToolCallName,
    /// A continuation repeats an opener field with another value (V1).
    Mismatch {
        /// What the lane streams.
        kind: LaneKind,
        /// The field ([`Key::Role`], [`Key::Name`], [`Key::ToolCallName`] or
        /// [`Key::ParentMessageId`]).
        field: Key,
    },
    /// A chunk names an id open in another subagent's lane.
    SubagentMismatch(LaneKind),
    /// A chunk with neither id nor subagentRunId while several lanes of its
    /// kind are open.
    Ambiguous {
        /// What the lanes stream.
        kind: LaneKind,
        /// How many are open.
        lanes: u32,
    },
    /// More lanes than the normalizer holds ([`Capacity::Lanes`]), or
    /// lanes whose strings need more bytes than its storage
    /// ([`Capacity::IdBytes`]).
    Capacity(Capacity),
}

impl fmt::Display for LaneKind {
    /// The chunk type: `TEXT_MESSAGE_CHUNK`, `TOOL_CALL_CHUNK`,
    /// `REASONING_MESSAGE_CHUNK`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.chunk().fmt(f)
    }
}

impl fmt::Display for ChunkError {
    /// What is wrong, without the ids ([`Normalizer::describe`] has them,
    /// in the reference's words).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ChunkError::MissingId(kind) => write!(f, "a {kind} that opens a stream has no id"),
            ChunkError::MissingToolCallName => {
                f.write_str("a TOOL_CALL_CHUNK that opens a stream has no toolCallName")
            }
            ChunkError::Mismatch { kind, field } => {
                write!(f, "a {kind} changes its stream's {field}")
            }
            ChunkError::SubagentMismatch(kind) => {
                write!(f, "a {kind} names a stream open for another subagent")
            }
            ChunkError::Ambiguous { kind, lanes } => write!(
                f,
                "a {kind} with neither id nor subagentRunId while {lanes} of its streams are open"
            ),
            ChunkError::Capacity(c) => c.fmt(f),
        }
    }
}

impl core::error::Error for ChunkError {}

/// The default role's index in [`TEXT_ROLES`] (a lane keeps an index).
const ASSISTANT: u8 = 2;
const EMPTY_DELTA: RawJson<'static> = RawJson::exact(b"\"\"");

/// One open chunk stream. Its strings lie back to back in one block of
/// the normalizer's pool, as JSON (quotes included): the id, then the
/// owner, name and parent that are present.
#[derive(Clone, Copy, Debug)]
struct Lane {
    kind: LaneKind,
    /// Text: index into `TEXT_ROLES`.
    role: u8,
    /// Where each string starts in the pool, and its length (0 for an
    /// absent one: a present one has its quotes). The pool is smaller than
    /// 256 bytes.
    starts: [u16; 4],
    lens: [u8; 4],
}

/// The strings of a [`Lane`], in block order.
#[derive(Clone, Copy)]
enum Part {
    Id,
    /// The lane's key, and the opener's `subagentRunId`.
    Owner,
    /// Text: `name`; tool: `toolCallName`.
    Name,
    /// Tool: `parentMessageId`.
    Parent,
}

impl Lane {
    fn has(&self, part: Part) -> bool {
        self.lens.get(part as usize).is_some_and(|&l| l != 0)
    }

    /// Where string `part` lies in the pool.
    fn stored(&self, part: Part) -> Option<Span> {
        let k = part as usize;
        let len = *self.lens.get(k).filter(|&&l| l != 0)?;
        Some(Span::new(*self.starts.get(k)?, u16::from(len)))
    }

    /// The lane's whole block.
    fn block(&self) -> Span {
        let len = self
            .lens
            .iter()
            .fold(0u16, |a, &l| a.saturating_add(u16::from(l)));
        Span::new(self.starts.first().copied().unwrap_or(0), len)
    }

    /// String `part` as JSON.
    fn json<'p, const LANE_BYTES: usize>(
        &self,
        pool: &'p Pool<LANE_BYTES>,
        part: Part,
    ) -> Option<RawJson<'p>> {
        Some(RawJson::trusted(pool.bytes(self.stored(part)?)))
    }

    fn text<'p, const LANE_BYTES: usize>(
        &self,
        pool: &'p Pool<LANE_BYTES>,
        part: Part,
    ) -> Option<JsonStr<'p>> {
        let quoted = pool.bytes(self.stored(part)?);
        let inner = quoted.get(1..quoted.len().saturating_sub(1))?;
        Some(JsonStr::from_escaped(inner))
    }

    /// Follows the pool's compaction after `freed` was released.
    fn shift(&mut self, freed: Span) {
        for start in &mut self.starts {
            *start = Span::new(*start, 0).shifted(freed).start();
        }
    }
}

/// Whose lane a chunk belongs to.
#[derive(Clone, Copy, Debug)]
enum LaneOwner {
    /// The owner the chunk names (its `subagentRunId`, or the parent
    /// agent without one).
    Tag,
    /// The owner of lane `i`.
    OfLane(usize),
}

/// Bytes kept for the strings of the last chunk error's message.
const DETAIL_BYTES: usize = 96;

/// Either the normalizer's own error or the downstream consumer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessError<E> {
    /// The chunk could not be normalized.
    Chunk(ChunkError),
    /// The consumer of the output refused an event.
    Downstream(E),
}

/// The chunk normalizer: at most `LANES` lanes, whose ids, owners, names
/// and parents share `LANE_BYTES` bytes (at most 255).
///
/// ```
/// use agui_stream::{Dialect, EventType, decode, normalize::Normalizer, json::Limits};
/// let mut normalizer = Normalizer::<8, 224>::new(Dialect::V1);
/// let chunk = br#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"hi"}"#;
/// let event = decode(chunk, Dialect::V1, Limits::new()).unwrap().unwrap();
/// let mut types = Vec::new();
/// normalizer
///     .process(&event, |e| Ok::<(), ()>(types.push(e.event_type())))
///     .unwrap();
/// assert_eq!(types, [EventType::TextMessageStart, EventType::TextMessageContent]);
/// ```
#[derive(Clone, Debug)]
pub struct Normalizer<const LANES: usize, const LANE_BYTES: usize> {
    dialect: Dialect,
    pool: Pool<LANE_BYTES>,
    lanes: heapless::Vec<Lane, LANES>,
    /// Strings for the last error's message: id, incoming, established.
    detail: Kept<DETAIL_BYTES, 3>,
}

impl<const LANES: usize, const LANE_BYTES: usize> Normalizer<LANES, LANE_BYTES> {
    /// A normalizer with no open lane.
    pub const fn new(dialect: Dialect) -> Self {
        const { assert!(LANE_BYTES < 256, "lane strings are indexed by u8 lengths") };
        Normalizer {
            dialect,
            pool: Pool::new(),
            lanes: heapless::Vec::new(),
            detail: Kept::new(),
        }
    }

    /// Number of open lanes (streams a chunk opened and nothing closed).
    pub fn open_lanes(&self) -> usize {
        self.lanes.len()
    }

    fn lane(&self, owner: Option<JsonStr<'_>>) -> Option<usize> {
        match owner {
            // The parent's lane, the usual case: no string to compare.
            None => self.lanes.iter().position(|l| !l.has(Part::Owner)),
            Some(_) => self
                .lanes
                .iter()
                .position(|l| l.text(&self.pool, Part::Owner) == owner),
        }
    }

    /// Emits the END of lane `i` and removes it.
    fn close<E>(
        &mut self,
        i: usize,
        emit: &mut impl FnMut(&Event<'_>) -> Result<(), E>,
    ) -> Result<(), ProcessError<E>> {
        let Some(lane) = self.lanes.get(i).copied() else {
            return Ok(());
        };
        self.lanes.remove(i);
        let [_, _, ty] = lane.kind.expansion();
        let mut end = Event::empty(ty, self.dialect, None);
        end.set(lane.kind.id_key(), lane.json(&self.pool, Part::Id));
        end.set(Key::SubagentRunId, lane.json(&self.pool, Part::Owner));
        let emitted = emit(&end).map_err(ProcessError::Downstream);
        self.release(lane.block());
        emitted
    }

    /// Releases a lane's block; the blocks after it move down.
    fn release(&mut self, block: Span) {
        self.pool.release(block);
        for lane in &mut self.lanes {
            lane.shift(block);
        }
    }

    fn close_owner<E>(
        &mut self,
        owner: Option<JsonStr<'_>>,
        emit: &mut impl FnMut(&Event<'_>) -> Result<(), E>,
    ) -> Result<(), ProcessError<E>> {
        match self.lane(owner) {
            Some(i) => self.close(i, emit),
            None => Ok(()),
        }
    }

    /// Closes every lane (in opening order).
    fn close_all<E>(
        &mut self,
        emit: &mut impl FnMut(&Event<'_>) -> Result<(), E>,
    ) -> Result<(), ProcessError<E>> {
        while !self.lanes.is_empty() {
            self.close(0, emit)?;
        }
        Ok(())
    }

    /// Normalizes one event, passing the result (zero to three events) to
    /// `emit` in order.
    ///
    /// # Errors
    ///
    /// [`ProcessError::Chunk`] for a chunk that cannot be normalized (nothing is
    /// changed), [`ProcessError::Downstream`] with the first error `emit` returns.
    pub fn process<E>(
        &mut self,
        event: &Event<'_>,
        mut emit: impl FnMut(&Event<'_>) -> Result<(), E>,
    ) -> Result<(), ProcessError<E>> {
        use EventType as T;
        let emit = &mut emit;
        match event.event_type() {
            T::TextMessageChunk => return self.chunk(LaneKind::Text, event, emit),
            T::ToolCallChunk => return self.chunk(LaneKind::Tool, event, emit),
            T::ReasoningMessageChunk => return self.chunk(LaneKind::Reasoning, event, emit),
            T::RunStarted | T::RunFinished | T::RunError | T::MessagesSnapshot => {
                self.close_all(emit)?
            }
            T::Raw
            | T::ActivitySnapshot
            | T::ActivityDelta
            | T::ReasoningEncryptedValue
            | T::SubagentStarted => {}
            T::SubagentFinished | T::SubagentError => {
                if let Some(owner) = event.subagent_run_id() {
                    self.close_owner(Some(owner), emit)?;
                }
            }
            // Nothing to close: the usual case, decided without reading
            // the event.
            _ if self.lanes.is_empty() => {}
            _ => {
                // V0 passes unknown members through, so even events whose
                // schema has no subagentRunId close the lane it names: a
                // string names a lane, null the parent's, anything else none.
                match event.passthrough_tag() {
                    Some(tag) if tag.is_null() => self.close_owner(None, emit)?,
                    Some(tag) => {
                        if let Some(tag) = tag.as_str() {
                            self.close_owner(Some(tag), emit)?;
                        }
                    }
                    None => self.close_owner(event.subagent_run_id(), emit)?,
                }
            }
        }
        emit(event).map_err(ProcessError::Downstream)
    }

    /// The lane a chunk belongs to (the reference's `resolveLane`), as
    /// the owner that keys it.
    fn resolve(
        &mut self,
        kind: LaneKind,
        id: Option<JsonStr<'_>>,
        tag: Option<JsonStr<'_>>,
    ) -> Result<LaneOwner, ChunkError> {
        let pool = &self.pool;
        if let Some(id) = id {
            let holder = self
                .lanes
                .iter()
                .position(|l| l.kind == kind && l.text(pool, Part::Id) == Some(id));
            return match holder {
                Some(i) => {
                    let owner = self.lanes.get(i).and_then(|l| l.text(pool, Part::Owner));
                    if let Some(tag) = tag
                        && owner != Some(tag)
                    {
                        self.detail.keep([Some(id), Some(tag), owner]);
                        return Err(ChunkError::SubagentMismatch(kind));
                    }
                    Ok(LaneOwner::OfLane(i))
                }
                None => Ok(LaneOwner::Tag),
            };
        }
        if tag.is_some() {
            return Ok(LaneOwner::Tag);
        }
        if self
            .lanes
            .iter()
            .any(|l| !l.has(Part::Owner) && l.kind == kind)
        {
            return Ok(LaneOwner::Tag);
        }
        let mut candidates = self
            .lanes
            .iter()
            .enumerate()
            .filter(|(_, l)| l.kind == kind);
        match (candidates.next(), candidates.count()) {
            (Some((i, _)), 0) => Ok(LaneOwner::OfLane(i)),
            (Some(_), more) => {
                self.detail.keep([None; 3]);
                Err(ChunkError::Ambiguous {
                    kind,
                    lanes: saturate(more.saturating_add(1)),
                })
            }
            (None, _) => Ok(LaneOwner::Tag),
        }
    }

    /// The owner `resolve` found, as text.
    fn owner_text<'s>(&'s self, owner: LaneOwner, tag: Option<JsonStr<'s>>) -> Option<JsonStr<'s>> {
        match owner {
            LaneOwner::Tag => tag,
            LaneOwner::OfLane(i) => self
                .lanes
                .get(i)
                .and_then(|l| l.text(&self.pool, Part::Owner)),
        }
    }

    fn chunk<E>(
        &mut self,
        kind: LaneKind,
        chunk: &Event<'_>,
        emit: &mut impl FnMut(&Event<'_>) -> Result<(), E>,
    ) -> Result<(), ProcessError<E>> {
        let v1 = self.dialect == Dialect::V1;
        let id = chunk.str(kind.id_key());
        let tag = chunk.subagent_run_id();
        let resolved = self.resolve(kind, id, tag).map_err(ProcessError::Chunk)?;
        let at = self.lane(self.owner_text(resolved, tag));
        let continues = at.and_then(|i| self.lanes.get(i)).is_some_and(|l| {
            l.kind == kind && id.is_none_or(|id| l.text(&self.pool, Part::Id) == Some(id))
        });
        let lane_index = if continues {
            if v1 {
                self.agree(at, chunk).map_err(ProcessError::Chunk)?;
            }
            at
        } else {
            // Everything that can fail is checked before the previous lane's
            // END goes out: the reference emits nothing for a failing chunk.
            let Some(id) = id else {
                return Err(ProcessError::Chunk(ChunkError::MissingId(kind)));
            };
            let name = match kind {
                LaneKind::Text => chunk.name(),
                LaneKind::Tool => match chunk.tool_call_name() {
                    Some(n) => Some(n),
                    None => return Err(ProcessError::Chunk(ChunkError::MissingToolCallName)),
                },
                LaneKind::Reasoning => None,
            };
            let role = chunk
                .role()
                .and_then(|r| TEXT_ROLES.iter().position(|t| r.eq_str(t)))
                .and_then(|i| u8::try_from(i).ok())
                .unwrap_or(ASSISTANT);
            if at.is_none() && self.lanes.is_full() {
                return Err(ProcessError::Chunk(ChunkError::Capacity(Capacity::Lanes)));
            }
            // The new lane's strings, quoted, in block order. A lane keyed
            // by this owner is closed first (its bytes come back), so its
            // owner is copied out of the pool before that.
            let mut owner_copy = [0u8; LANE_BYTES];
            let owner: Option<&[u8]> = match resolved {
                LaneOwner::OfLane(i) => {
                    let stored = self.lanes.get(i).and_then(|l| l.stored(Part::Owner));
                    match stored.map(|s| self.pool.bytes(s)) {
                        Some(bytes) => {
                            let dst = owner_copy.get_mut(..bytes.len()).unwrap_or_default();
                            dst.copy_from_slice(bytes);
                            Some(&*dst)
                        }
                        None => None,
                    }
                }
                LaneOwner::Tag => None,
            };
            let quote: &[u8] = b"\"";
            // Three pieces (quote, text, quote) for each of the four strings.
            let mut parts = heapless::Vec::<&[u8], 12>::new();
            let mut lens = [0u8; 4];
            let strs = [
                Some(id.raw()),
                tag.map(|t| t.raw()).filter(|_| owner.is_none()),
                name.map(|s| s.raw()),
                chunk.parent_message_id().map(|s| s.raw()),
            ];
            for (k, (len, s)) in lens.iter_mut().zip(strs).enumerate() {
                let n = match (k, owner, s) {
                    (1, Some(quoted), _) => {
                        let _ = parts.push(quoted);
                        quoted.len()
                    }
                    (_, _, Some(raw)) => {
                        let _ = parts.extend_from_slice(&[quote, raw, quote]);
                        raw.len().saturating_add(2)
                    }
                    _ => continue,
                };
                *len = u8::try_from(n).unwrap_or(0);
            }
            let need: usize = parts.iter().map(|p| p.len()).sum();
            let freed = at
                .and_then(|i| self.lanes.get(i))
                .map_or(0, |l| l.block().len());
            if need > self.pool.free().saturating_add(freed) {
                let full = Capacity::IdBytes {
                    capacity: saturate(LANE_BYTES),
                };
                return Err(ProcessError::Chunk(ChunkError::Capacity(full)));
            }
            if let Some(i) = at {
                self.close(i, emit)?;
            }
            let full = ProcessError::Chunk(ChunkError::Capacity(Capacity::IdBytes {
                capacity: saturate(LANE_BYTES),
            }));
            let block = self.pool.alloc(&parts).map_err(|_| full)?;
            let mut starts = [0u16; 4];
            let mut at_byte = block.start();
            for (start, &len) in starts.iter_mut().zip(&lens) {
                *start = at_byte;
                at_byte = at_byte.saturating_add(u16::from(len));
            }
            let lane = Lane {
                kind,
                role,
                starts,
                lens,
            };
            self.lanes
                .push(lane)
                .map_err(|_| ProcessError::Chunk(ChunkError::Capacity(Capacity::Lanes)))?;
            emit(&self.start(kind, chunk, role)).map_err(ProcessError::Downstream)?;
            self.lanes.len().checked_sub(1)
        };
        let Some(lane) = lane_index.and_then(|i| self.lanes.get(i)) else {
            return Ok(());
        };
        let [_, content_type, _] = kind.expansion();
        let content_owner = chunk
            .get(Key::SubagentRunId)
            .or_else(|| lane.json(&self.pool, Part::Owner));
        let delta = chunk.get(Key::Delta);
        let raw_event = if v1 { chunk.raw_event() } else { None };
        // A continuation carrying only metadata still yields an (empty)
        // CONTENT so the metadata is not lost; an opener's rode the START.
        if delta.is_none() && raw_event.is_none() && !(continues && chunk.metadata().is_some()) {
            return Ok(());
        }
        let mut content = Event::empty(content_type, self.dialect, None);
        content.set(kind.id_key(), lane.json(&self.pool, Part::Id));
        content.set(Key::SubagentRunId, content_owner);
        content.set(Key::Metadata, chunk.metadata());
        content.set(Key::Delta, Some(delta.unwrap_or(EMPTY_DELTA)));
        content.set(Key::RawEvent, raw_event);
        emit(&content).map_err(ProcessError::Downstream)
    }

    /// V1: a continuation may repeat the opener's fields, but only with the
    /// same values.
    fn agree(&mut self, at: Option<usize>, chunk: &Event<'_>) -> Result<(), ChunkError> {
        let Some(lane) = at.and_then(|i| self.lanes.get(i)) else {
            return Ok(());
        };
        let pool = &self.pool;
        let checks: [(Key, Option<JsonStr<'_>>, Option<JsonStr<'_>>); 2] = match lane.kind {
            LaneKind::Text => {
                let role = TEXT_ROLE_VALUES
                    .get(usize::from(lane.role))
                    .and_then(|&r| RawJson::exact(r).as_str());
                [
                    (Key::Role, chunk.role(), role),
                    (Key::Name, chunk.name(), lane.text(pool, Part::Name)),
                ]
            }
            LaneKind::Tool => [
                (
                    Key::ToolCallName,
                    chunk.tool_call_name(),
                    lane.text(pool, Part::Name),
                ),
                (
                    Key::ParentMessageId,
                    chunk.parent_message_id(),
                    lane.text(pool, Part::Parent),
                ),
            ],
            LaneKind::Reasoning => return Ok(()),
        };
        for (field, incoming, established) in checks {
            if let Some(incoming) = incoming
                && Some(incoming) != established
            {
                let id = lane.text(pool, Part::Id);
                self.detail.keep([id, Some(incoming), established]);
                return Err(ChunkError::Mismatch {
                    kind: lane.kind,
                    field,
                });
            }
        }
        Ok(())
    }

    /// The START a chunk opening `lane` stands for.
    fn start<'e>(&self, kind: LaneKind, chunk: &Event<'e>, role: u8) -> Event<'e> {
        let [ty, _, _] = kind.expansion();
        let mut start = Event::empty(ty, self.dialect, None);
        start.set(kind.id_key(), chunk.get(kind.id_key()));
        start.set(Key::SubagentRunId, chunk.get(Key::SubagentRunId));
        start.set(Key::Metadata, chunk.metadata());
        match kind {
            LaneKind::Text => {
                let role = TEXT_ROLE_VALUES
                    .get(usize::from(role))
                    .map(|&r| RawJson::exact(r));
                start.set(Key::Role, chunk.get(Key::Role).or(role));
                start.set(Key::Name, chunk.get(Key::Name));
            }
            LaneKind::Tool => {
                start.set(Key::ToolCallName, chunk.get(Key::ToolCallName));
                start.set(Key::ParentMessageId, chunk.get(Key::ParentMessageId));
            }
            LaneKind::Reasoning => start.set(Key::Role, Some(RawJson::exact(REASONING_ROLE))),
        }
        start
    }

    /// The reference's message for `error` (valid until the next event).
    pub fn describe(&self, error: ChunkError) -> DescribeChunk<'_, LANES, LANE_BYTES> {
        DescribeChunk {
            normalizer: self,
            error,
        }
    }
}

/// Renders a [`ChunkError`] in the reference's words.
#[derive(Debug)]
pub struct DescribeChunk<'n, const LANES: usize, const LANE_BYTES: usize> {
    normalizer: &'n Normalizer<LANES, LANE_BYTES>,
    error: ChunkError,
}

impl<const LANES: usize, const LANE_BYTES: usize> fmt::Display
    for DescribeChunk<'_, LANES, LANE_BYTES>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |i: usize| self.normalizer.detail.get(i);
        let empty = JsonStr::from_escaped(b"");
        match self.error {
            ChunkError::MissingId(kind) => {
                write!(
                    f,
                    "First {} must have a {}",
                    kind.chunk(),
                    kind.id_key().as_str()
                )
            }
            ChunkError::MissingToolCallName => {
                f.write_str("First TOOL_CALL_CHUNK must have a toolCallName")
            }
            ChunkError::Mismatch { kind, field } => {
                write!(
                    f,
                    "Cannot continue {} '{}': chunk {field} '{}' does not match the open stream's {field} ",
                    kind.entity(),
                    d(0).unwrap_or(empty),
                    d(1).unwrap_or(empty)
                )?;
                match d(2) {
                    Some(s) => write!(f, "'{s}'."),
                    None => f.write_str("(absent)."),
                }
            }
            ChunkError::SubagentMismatch(kind) => {
                write!(
                    f,
                    "Cannot continue {} '{}': chunk subagentRunId '{}' does not match the open stream's subagent '",
                    kind.entity(),
                    d(0).unwrap_or(empty),
                    d(1).unwrap_or(empty)
                )?;
                match d(2) {
                    Some(s) => write!(f, "{s}'."),
                    None => f.write_str("(the parent agent)'."),
                }
            }
            ChunkError::Ambiguous { kind, lanes } => write!(
                f,
                "Ambiguous {}: it carries neither a {} nor a subagentRunId, but {lanes} lanes have an open {}. Attribute the chunk to the subagent it belongs to.",
                kind.chunk(),
                kind.id_key().as_str(),
                kind.entity()
            ),
            ChunkError::Capacity(c) => c.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode;
    use crate::input::json::Limits;
    extern crate std;
    use std::string::String;
    use std::vec::Vec;

    /// Runs `events` through a normalizer; returns "TYPE id delta" lines.
    fn expand(dialect: Dialect, events: &[&str]) -> Result<Vec<String>, ChunkError> {
        let mut n = Normalizer::<2, 16>::new(dialect);
        let mut out = Vec::new();
        for text in events {
            let ev = decode(text.as_bytes(), dialect, Limits::new())
                .unwrap()
                .unwrap();
            let r = n.process(&ev, |e: &Event<'_>| -> Result<(), ()> {
                let id = e
                    .message_id()
                    .or(e.tool_call_id())
                    .map(|s| std::format!("{s}"));
                let delta = e.delta().map(|s| std::format!("{s}"));
                out.push(std::format!(
                    "{} {} {}",
                    e.event_type(),
                    id.unwrap_or_default(),
                    delta.unwrap_or_default()
                ));
                Ok(())
            });
            match r {
                Ok(()) => {}
                Err(ProcessError::Chunk(e)) => return Err(e),
                Err(ProcessError::Downstream(())) => unreachable!(),
            }
        }
        Ok(out)
    }

    #[test]
    fn one_chunk_can_yield_end_start_content() {
        let out = expand(
            Dialect::V1,
            &[
                r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"a","delta":"1"}"#,
                r#"{"type":"TEXT_MESSAGE_CHUNK","delta":"2"}"#,
                r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"b","delta":"3"}"#,
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            [
                "TEXT_MESSAGE_START a ",
                "TEXT_MESSAGE_CONTENT a 1",
                "TEXT_MESSAGE_CONTENT a 2",
                "TEXT_MESSAGE_END a ",
                "TEXT_MESSAGE_START b ",
                "TEXT_MESSAGE_CONTENT b 3",
            ]
        );
    }

    #[test]
    fn which_explicit_events_close_lanes() {
        let chunk = r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"c","toolCallName":"f"}"#;
        for (closer, closes) in [
            (r#"{"type":"CUSTOM","name":"n","value":1}"#, true),
            (r#"{"type":"STEP_STARTED","stepName":"s"}"#, true),
            (r#"{"type":"MESSAGES_SNAPSHOT","messages":[]}"#, true),
            (r#"{"type":"RAW","event":1}"#, false),
            (
                r#"{"type":"ACTIVITY_DELTA","messageId":"a","activityType":"t","patch":[]}"#,
                false,
            ),
            (
                r#"{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"n"}"#,
                false,
            ),
        ] {
            let out = expand(Dialect::V1, &[chunk, closer]).unwrap();
            assert_eq!(
                out.iter().any(|l| l.starts_with("TOOL_CALL_END")),
                closes,
                "{closer}"
            );
        }
    }

    #[test]
    fn opener_errors_and_exact_capacities() {
        assert_eq!(
            expand(
                Dialect::V0,
                &[r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"c"}"#]
            ),
            Err(ChunkError::MissingToolCallName)
        );
        let long = r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"0123456789abcdef"}"#;
        assert_eq!(
            expand(Dialect::V1, &[long]),
            Err(ChunkError::Capacity(Capacity::IdBytes { capacity: 16 }))
        );
        // Two lanes fit (parent and one subagent); a third does not.
        let lanes = [
            r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"a"}"#,
            r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"b","subagentRunId":"s1"}"#,
            r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","subagentRunId":"s2"}"#,
        ];
        assert!(expand(Dialect::V1, &lanes[..2]).is_ok());
        assert_eq!(
            expand(Dialect::V1, &lanes),
            Err(ChunkError::Capacity(Capacity::Lanes))
        );
    }

    /// Lanes give their bytes back: after many streams of every shape are
    /// opened, replaced and closed, the storage is empty again.
    #[test]
    fn lane_storage_is_returned() {
        let mut n = Normalizer::<8, 224>::new(Dialect::V1);
        let mut feed = |s: std::string::String| {
            let ev = decode(s.as_bytes(), Dialect::V1, Limits::new())
                .unwrap()
                .unwrap();
            n.process(&ev, |_| Ok::<(), ()>(())).unwrap();
        };
        for i in 0..100 {
            let tag = [
                "",
                r#","subagentRunId":"sub-a""#,
                r#","subagentRunId":"sub-bb""#,
            ][i % 3];
            feed(std::format!(
                r#"{{"type":"TOOL_CALL_CHUNK","toolCallId":"call-{i}","toolCallName":"f{i}","parentMessageId":"msg-{i}"{tag}}}"#
            ));
            feed(std::format!(
                r#"{{"type":"TEXT_MESSAGE_CHUNK","messageId":"m{i}","name":"n"{tag}}}"#
            ));
        }
        feed(r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#.into());
        assert_eq!(n.open_lanes(), 0);
        assert_eq!(n.pool.free(), 224);
    }

    /// A failing opener emits nothing, not even the END of the lane it
    /// would replace, and leaves that lane open.
    #[test]
    fn a_failing_opener_leaves_the_open_lane_alone() {
        let mut n = Normalizer::<2, 16>::new(Dialect::V1);
        let mut step = |text: &str| {
            let ev = decode(text.as_bytes(), Dialect::V1, Limits::new())
                .unwrap()
                .unwrap();
            let mut out = Vec::new();
            let r = n.process(&ev, |e: &Event<'_>| -> Result<(), ()> {
                out.push(e.event_type());
                Ok(())
            });
            (r.err(), out)
        };
        let (err, out) = step(r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"a","delta":"1"}"#);
        assert_eq!((err, out.len()), (None, 2));
        for opener in [
            // Too long for the lane storage.
            r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"0123456789abcdef","delta":"2"}"#,
            // A tool lane needs a name.
            r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"t","delta":"2"}"#,
        ] {
            let (err, out) = step(opener);
            assert!(err.is_some(), "{opener}");
            assert!(out.is_empty(), "{opener}: {out:?}");
        }
        // "a" is still open: an id-less chunk continues it.
        let (err, out) = step(r#"{"type":"TEXT_MESSAGE_CHUNK","delta":"3"}"#);
        assert_eq!((err, out), (None, [EventType::TextMessageContent].to_vec()));
    }

    #[test]
    fn continuation_consistency_is_v1_only() {
        let evs = [
            r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"a","delta":"1"}"#,
            r#"{"type":"TEXT_MESSAGE_CHUNK","role":"user","delta":"2"}"#,
        ];
        assert_eq!(
            expand(Dialect::V1, &evs),
            Err(ChunkError::Mismatch {
                kind: LaneKind::Text,
                field: Key::Role
            })
        );
        assert_eq!(expand(Dialect::V0, &evs).unwrap().len(), 3);
    }
}
