//! Lifecycle verification: the order rules of the reference's
//! `verifyEvents`, with fixed capacity.
//!
//! The state is what the reference keeps, held in fixed tables that share
//! one pool of id bytes: the ids of open text messages, tool calls,
//! reasoning spans and reasoning messages, the open steps (per owner), the
//! active and finished subagents, and who owns each message, tool call,
//! activity and reasoning message seen in the run — the newest of those,
//! with the rest forgotten (see `owners`). What must be held and does not
//! fit, or a rule that needs a forgotten owner, is
//! [`VerifyError::Capacity`], never a wrong verdict.

use crate::capacity::{Capacity, saturate};
use crate::input::json::{
    Error as JsonError, ErrorKind as JsonErrorKind, Limits, ScanError, Scanner,
};
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key};
use crate::store::{Entry, Full, IdTable, Kept, Pool, Span};
use crate::view::event::Event;
use crate::view::json::{JsonKind, RawJson};
use crate::view::shaped::is_message_role;
use crate::view::string::JsonStr;

mod describe;
mod owners;

pub use describe::Describe;

use owners::{Lost, Owned, OwnerOf, Owners};
pub(crate) use owners::{STAGED_BYTES, Staged};

/// Something that can be open at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Entity {
    /// A text message (TEXT_MESSAGE_START … END).
    TextMessage,
    /// A tool call (TOOL_CALL_START … END).
    ToolCall,
    /// A reasoning span (REASONING_START … END).
    ReasoningSpan,
    /// A reasoning message (REASONING_MESSAGE_START … END).
    ReasoningMessage,
    /// A step (STEP_STARTED … FINISHED), per owner.
    Step,
    /// A subagent (SUBAGENT_STARTED … FINISHED/ERROR).
    Subagent,
}

impl Entity {
    /// How the reference's RUN_FINISHED message names them.
    const fn plural(self) -> &'static str {
        match self {
            Entity::TextMessage => "text messages",
            Entity::ToolCall => "tool calls",
            Entity::ReasoningSpan => "reasoning spans",
            Entity::ReasoningMessage => "reasoning messages",
            Entity::Step => "steps",
            Entity::Subagent => "subagents",
        }
    }
}

/// What the open-entity table holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Open {
    Entity(Entity),
    /// A subagent that finished in this run (its id may not be reused).
    FinishedSubagent,
}

/// The rule an event broke. [`Verifier::describe`] renders the reference's
/// exact message, ids included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Rule {
    /// `First event must be 'RUN_STARTED'`.
    FirstEvent,
    /// Anything but RUN_STARTED after RUN_ERROR.
    AfterRunError,
    /// Anything but RUN_STARTED/RUN_ERROR after RUN_FINISHED.
    AfterRunFinished,
    /// RUN_STARTED while a run is active.
    RunStillActive,
    /// A `subagentRunId: null` the schema let through (V0 passthrough).
    NullSubagentRunId,
    /// START for an id already open.
    AlreadyOpen(Entity),
    /// CONTENT/ARGS/END for an id not open.
    NotOpen(Entity),
    /// STEP_FINISHED for a step open under another owner.
    StepOwnedElsewhere,
    /// RUN_FINISHED while something is open.
    OpenAtRunFinished(Entity),
    /// An event attributed to a subagent other than the entity's opener's.
    OwnerMismatch,
    /// TOOL_CALL_START attributed other than its parent message.
    ParentOwnerMismatch,
    /// TOOL_CALL_START whose tool call and parent message have other owners.
    ToolCallParentConflict,
    /// SUBAGENT_STARTED for an active subagent.
    SubagentActive,
    /// SUBAGENT_STARTED for a subagent finished in this run.
    SubagentReused,
    /// SUBAGENT_STARTED naming a parent never started in this run.
    UnknownParentSubagent,
    /// SUBAGENT_FINISHED/ERROR for a subagent not active.
    SubagentNotActive,
    /// THINKING_START while a thinking step is open (V0).
    ThinkingStepActive,
    /// THINKING_END or THINKING_TEXT_MESSAGE_START with no thinking step (V0).
    NoThinkingStep,
    /// THINKING_TEXT_MESSAGE_START while a thinking message is open (V0).
    ThinkingMessageActive,
    /// THINKING_TEXT_MESSAGE_CONTENT/END with no thinking message (V0).
    NoThinkingMessage,
    /// A tool call's arguments (its TOOL_CALL_ARGS deltas, concatenated)
    /// are not one JSON value by its TOOL_CALL_END (checked only with
    /// [`Verifier::check_tool_args`]; the reference does not check).
    ToolCallArgs,
}

/// Why the verifier stopped an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum VerifyError {
    /// The event breaks a lifecycle rule.
    Violation {
        /// The rejected event's type.
        event: EventType,
        /// The rule.
        rule: Rule,
    },
    /// A fixed table is full, the id storage cannot hold the open ids, or
    /// a rule needs an owner record that was forgotten.
    Capacity(Capacity),
}

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RunPhase {
    /// No event yet.
    NotStarted,
    /// RUN_STARTED seen, no RUN_FINISHED/RUN_ERROR yet.
    Active,
    /// The last run finished.
    Finished,
    /// The last run errored.
    Errored,
}

const PARENT: &str = "(the parent agent)";

/// Bytes kept for the strings of the last violation's message.
const DETAIL_BYTES: usize = 128;

/// The strings an error message needs, copied while the event exists.
#[derive(Clone, Debug)]
struct Detail {
    label: &'static str,
    strs: Kept<DETAIL_BYTES, 4>,
    /// The JSON error of [`Rule::ToolCallArgs`].
    json: Option<JsonError>,
}

impl Detail {
    /// The violation of `rule`, whose message needs no id.
    fn reject(&mut self, event: &Event<'_>, rule: Rule) -> VResult {
        self.reject_with(event, rule, "", [None; 4])
    }

    /// The violation of `rule`, whose message names `id`.
    fn reject_id(&mut self, event: &Event<'_>, rule: Rule, id: JsonStr<'_>) -> VResult {
        self.reject_with(event, rule, "", [Some(id), None, None, None])
    }

    /// The violation of `rule`; keeps `label` and `strs` (the ids the
    /// rule's message shows, in the order [`Describe`] reads them).
    fn reject_with(
        &mut self,
        event: &Event<'_>,
        rule: Rule,
        label: &'static str,
        strs: [Option<JsonStr<'_>>; 4],
    ) -> VResult {
        self.label = label;
        self.strs.keep(strs);
        Err(VerifyError::Violation {
            event: event.event_type(),
            rule,
        })
    }

    fn text(&self, i: usize) -> Option<JsonStr<'_>> {
        self.strs.get(i)
    }
}

/// The lifecycle verifier: `OPEN` open ids (and subagents), `OWNERS` owner records
/// kept exactly, and `ID_BYTES` bytes of id storage that they share.
///
/// Open ids and subagent names must fit (else [`Capacity::OpenIds`],
/// [`Capacity::Subagents`] or [`Capacity::IdBytes`]); owner records take
/// what is left and are forgotten oldest first, so a run may have any
/// number of them (see [`Capacity::Owners`] for when one is missed).
///
/// ```
/// use agui_stream::{Dialect, decode, verify::Verifier, json::Limits};
/// let mut verifier = Verifier::<8, 8, 256>::new(Dialect::V1);
/// for json in [
///     r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
///     r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
/// ] {
///     let event = decode(json.as_bytes(), Dialect::V1, Limits::new()).unwrap().unwrap();
///     if let Err(e) = verifier.check(&event) {
///         assert!(verifier.describe(e).to_string().contains("No active text message"));
///     }
/// }
/// ```
#[derive(Clone, Debug)]
pub struct Verifier<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize> {
    dialect: Dialect,
    /// The bytes of every id below.
    pool: Pool<ID_BYTES>,
    open: IdTable<Open, OPEN>,
    owners: Owners<OWNERS>,
    /// Subagent ids owners and steps point at; indices stay valid for the
    /// run. Each records its rank among step owners (see `touch_step_owner`).
    names: IdTable<Option<u16>, OPEN>,
    /// The parent agent's rank among step owners.
    parent_step_rank: Option<u16>,
    /// Step owners ranked so far in this run.
    step_owners: u16,
    first_event: bool,
    phase: RunPhase,
    thinking_step: bool,
    thinking_message: bool,
    detail: Detail,
    /// Check each tool call's arguments ([`Verifier::check_tool_args`]).
    check_args: bool,
    /// The argument check of each open tool call, by its id's place in
    /// the pool.
    args: heapless::Vec<(Span, Scanner<1>), ARGS_CHECKED>,
    /// Where the last CONTENT/ARGS/END found its entity in `open`: looked
    /// at first, since a run streams its deltas to one entity in a row.
    /// Checked on every use (kind and id), so it needs no upkeep; an
    /// entity's id is open at most once (a START of an open one is
    /// rejected), so it finds what the search finds.
    last_continued: usize,
}

/// An event that closes something open ([`Verifier::closing_events`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Closing<'a> {
    /// The closing event's type.
    pub(crate) event_type: EventType,
    /// The member that names what it closes, and its id (`None` for V0's
    /// thinking ends).
    pub(crate) id: Option<(Key, JsonStr<'a>)>,
    /// The subagent that owns it (`None`: the parent agent).
    pub(crate) owner: Option<JsonStr<'a>>,
}

/// What closes before a final `RUN_ERROR`, innermost first: the entity,
/// the event that closes it, and the member naming it.
const CLOSE_ORDER: [(Entity, EventType, Key); 5] = [
    (Entity::ToolCall, EventType::ToolCallEnd, Key::ToolCallId),
    (
        Entity::TextMessage,
        EventType::TextMessageEnd,
        Key::MessageId,
    ),
    (
        Entity::ReasoningMessage,
        EventType::ReasoningMessageEnd,
        Key::MessageId,
    ),
    (
        Entity::ReasoningSpan,
        EventType::ReasoningEnd,
        Key::MessageId,
    ),
    (Entity::Step, EventType::StepFinished, Key::StepName),
];

/// Tool calls whose arguments can be checked at once.
pub(crate) const ARGS_CHECKED: usize = 8;

/// How deep a tool call's arguments may nest.
const ARGS_DEPTH: usize = 64;

type VResult = Result<(), VerifyError>;

const fn capacity(c: Capacity) -> VerifyError {
    VerifyError::Capacity(c)
}

/// The id of subagent `owner` (`None` for the parent agent).
fn name_in<'p, const OPEN: usize, const ID_BYTES: usize>(
    names: &IdTable<Option<u16>, OPEN>,
    pool: &'p Pool<ID_BYTES>,
    owner: Option<u16>,
) -> Option<JsonStr<'p>> {
    names
        .get(usize::from(owner?))
        .map(|(span, _)| pool.text(span))
}

/// Whether `id` of `kind` is open in `open` (its owner record must be kept).
fn holds_open<const OPEN: usize, const ID_BYTES: usize>(
    open: &IdTable<Open, OPEN>,
    pool: &Pool<ID_BYTES>,
    kind: Owned,
    id: JsonStr<'_>,
) -> bool {
    let is_open = |e: Entity| open.find(pool, Open::Entity(e), id).is_some();
    match kind {
        Owned::Message => is_open(Entity::TextMessage),
        Owned::ToolCall => is_open(Entity::ToolCall),
        Owned::Reasoning => is_open(Entity::ReasoningSpan) || is_open(Entity::ReasoningMessage),
        Owned::Activity => false,
    }
}

impl<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize>
    Verifier<OPEN, OWNERS, ID_BYTES>
{
    /// A verifier for `dialect`, before any event.
    pub const fn new(dialect: Dialect) -> Self {
        Verifier {
            dialect,
            pool: Pool::new(),
            open: IdTable::new(),
            owners: Owners::new(),
            names: IdTable::new(),
            parent_step_rank: None,
            step_owners: 0,
            first_event: false,
            phase: RunPhase::NotStarted,
            thinking_step: false,
            thinking_message: false,
            detail: Detail {
                label: "",
                strs: Kept::new(),
                json: None,
            },
            check_args: false,
            args: heapless::Vec::new(),
            last_continued: 0,
        }
    }

    /// The same verifier, checking (or not) that each tool call's
    /// arguments — its TOOL_CALL_ARGS deltas, concatenated — are one
    /// complete JSON value by its TOOL_CALL_END ([`Rule::ToolCallArgs`]).
    /// The reference does not check this. Arguments are validated as they
    /// stream, in 24 bytes per open tool call (at most 8 at
    /// once, nested at most 64 deep), without buffering them.
    pub const fn check_tool_args(mut self, check: bool) -> Self {
        self.check_args = check;
        self
    }

    /// Where the run stands.
    pub fn phase(&self) -> RunPhase {
        self.phase
    }

    /// How many entities of `kind` are open.
    pub fn open_count(&self, kind: Entity) -> usize {
        self.open_ids(kind).count()
    }

    /// The ids of the open entities of `kind` in opening order (step names
    /// for [`Entity::Step`]).
    pub fn open_ids(&self, kind: Entity) -> impl Iterator<Item = JsonStr<'_>> {
        self.open
            .iter()
            .filter(move |(_, e)| e.kind == Open::Entity(kind))
            .map(|(s, _)| self.pool.text(s))
    }

    /// The open entities of `kind`, newest first, each with the subagent
    /// that owns it: `Some(None)` for the parent agent, `None` where the
    /// owner record was forgotten (what closing them would need to name).
    pub fn open_owned(
        &self,
        kind: Entity,
    ) -> impl Iterator<Item = (JsonStr<'_>, Option<Option<JsonStr<'_>>>)> {
        let owned = match kind {
            Entity::TextMessage => Some(Owned::Message),
            Entity::ToolCall => Some(Owned::ToolCall),
            Entity::ReasoningSpan | Entity::ReasoningMessage => Some(Owned::Reasoning),
            _ => None,
        };
        self.open
            .iter()
            .rev()
            .filter(move |(_, e)| e.kind == Open::Entity(kind))
            .map(move |(s, e)| {
                let id = self.pool.text(s);
                let owner = match owned {
                    // Steps and subagents keep their owner in the table.
                    None => Some(e.owner),
                    Some(owned) => match self.owner_of(owned, id) {
                        OwnerOf::Known(owner) => Some(owner),
                        OwnerOf::Unknown => Some(None),
                        OwnerOf::Forgotten | OwnerOf::Uncertain => None,
                    },
                };
                (id, owner.map(|o| self.name(o)))
            })
    }

    /// True while a V0 thinking step or thinking message is open.
    pub fn thinking_open(&self) -> bool {
        self.thinking_step || self.thinking_message
    }

    /// The events that would close what is open, innermost first: tool
    /// calls, text messages, reasoning messages, reasoning spans, steps
    /// (each newest first), then V0's thinking message and thinking step.
    /// What a forgotten owner owns cannot be named: it is left out. The
    /// gateway's repair writes them before a final `RUN_ERROR`, each one
    /// that a copy of this verifier still accepts.
    pub(crate) fn closing_events(&self) -> impl Iterator<Item = Closing<'_>> {
        let owned = CLOSE_ORDER
            .into_iter()
            .flat_map(move |(kind, event_type, key)| {
                self.open_owned(kind).filter_map(move |(id, owner)| {
                    Some(Closing {
                        event_type,
                        id: Some((key, id)),
                        owner: owner?,
                    })
                })
            });
        let thinking = self.dialect == Dialect::V0 && self.thinking_open();
        let thinking_ends = [EventType::ThinkingTextMessageEnd, EventType::ThinkingEnd]
            .into_iter()
            .filter(move |_| thinking)
            .map(|event_type| Closing {
                event_type,
                id: None,
                owner: None,
            });
        owned.chain(thinking_ends)
    }

    /// Bytes of id storage in use (open ids, subagent ids, owner records).
    pub fn id_bytes(&self) -> usize {
        ID_BYTES.saturating_sub(self.pool.free())
    }

    fn reset_run(&mut self) {
        self.args.clear();
        self.pool.clear();
        self.open.clear();
        self.owners.clear();
        self.names.clear();
        self.parent_step_rank = None;
        self.step_owners = 0;
        self.phase = RunPhase::Active;
        self.thinking_step = false;
        self.thinking_message = false;
    }

    // ------------------------------------------------------------ storage

    /// Releases `span` from the pool; every table follows the compaction.
    fn release(&mut self, span: Span) {
        self.pool.release(span);
        for (s, _) in &mut self.args {
            *s = s.shifted(span);
        }
        self.open.shift(span);
        self.names.shift(span);
        self.owners.shift(span);
    }

    /// Frees `bytes` bytes of the pool (and an owner record's entry, if
    /// `entry`) by forgetting the oldest owner records: first those of
    /// entities that are not open, then, if `all`, any. False if that is
    /// not enough.
    fn make_room(&mut self, bytes: usize, entry: bool, all: bool) -> bool {
        let mut keep_open = true;
        loop {
            if self.pool.free() >= bytes && (!entry || self.owners.len() < OWNERS) {
                return true;
            }
            let (open, pool) = (&self.open, &self.pool);
            let evicted = self.owners.evict(pool, |kind, id| {
                keep_open && holds_open(open, pool, kind, id)
            });
            match evicted {
                Some(span) => self.release(span),
                None if keep_open && all => keep_open = false,
                None => return false,
            }
        }
    }

    /// Records `owner` for `id` (see [`Owners::record`]); forgets it if
    /// even forgetting others leaves no room. Never fails.
    fn record_owner(&mut self, kind: Owned, id: JsonStr<'_>, owner: Option<u16>, overwrite: bool) {
        loop {
            let need = match self
                .owners
                .record(&mut self.pool, kind, id, owner, overwrite)
            {
                Ok(()) => return,
                Err(Full::Bytes) => (id.raw().len(), false),
                Err(Full::Entries) => (0, true),
            };
            if !self.make_room(need.0, need.1, false) {
                self.owners.forget(kind, id, &[owner]);
                return;
            }
        }
    }

    fn owner_of(&self, kind: Owned, id: JsonStr<'_>) -> OwnerOf {
        self.owners.owner_of(&self.pool, kind, id)
    }

    /// Every forgotten record was owned by whoever `tag` names.
    fn lost_only(&self, tag: Option<JsonStr<'_>>) -> bool {
        let lost = self.owners.lost();
        match tag {
            None => lost.only(None),
            Some(t) => match self.names.find_where(&self.pool, t, |_| true) {
                Some(i) => u16::try_from(i).is_ok_and(|i| lost.only(Some(i))),
                // Named by no record, kept or forgotten.
                None => lost == Lost::default(),
            },
        }
    }

    /// Checks that opening `id` fits, so that a START either happens whole
    /// or changes nothing (forgetting old owner records aside).
    fn room(&mut self, id: JsonStr<'_>) -> VResult {
        if self.open.is_full() {
            return Err(capacity(Capacity::OpenIds));
        }
        // An open id outranks any owner record, even its own.
        if !self.make_room(id.raw().len(), false, true) {
            return Err(capacity(Capacity::IdBytes {
                capacity: saturate(ID_BYTES),
            }));
        }
        Ok(())
    }

    fn push_open(&mut self, kind: Open, id: JsonStr<'_>, owner: Option<u16>) -> VResult {
        self.room(id)?;
        match self.open.push(&mut self.pool, id, Entry { kind, owner }) {
            Ok(_) => Ok(()),
            Err(Full::Entries) => Err(capacity(Capacity::OpenIds)),
            Err(Full::Bytes) => Err(capacity(Capacity::IdBytes {
                capacity: saturate(ID_BYTES),
            })),
        }
    }

    fn remove_open(&mut self, i: usize) {
        if let Some(span) = self.open.remove(i) {
            self.args.retain(|(s, _)| *s != span);
            self.release(span);
        }
    }

    /// Checks a tool call's arguments as TOOL_CALL_ARGS (`closes` false:
    /// its delta continues them) or TOOL_CALL_END (they must be complete)
    /// of the tool call open at `i`; the state changes only if it passes.
    fn tool_args(&mut self, event: &Event<'_>, i: usize, id: JsonStr<'_>, closes: bool) -> VResult {
        let Some((span, _)) = self.open.get(i) else {
            return Ok(());
        };
        let Some((_, state)) = self.args.iter_mut().find(|(s, _)| *s == span) else {
            return Ok(());
        };
        let mut scan = *state;
        let result = if closes {
            scan.finish()
        } else {
            feed_text(&mut scan, event.delta().unwrap_or(EMPTY))
        };
        match result {
            Ok(()) => {
                *state = scan;
                Ok(())
            }
            Err(e) => {
                self.detail.json = Some(e.json());
                let rule = Rule::ToolCallArgs;
                self.detail.reject_id(event, rule, id)
            }
        }
    }

    /// The index naming subagent `tag`, interning it.
    fn intern(&mut self, tag: Option<JsonStr<'_>>) -> Result<Option<u16>, VerifyError> {
        let Some(tag) = tag else { return Ok(None) };
        let i = match self.names.find_where(&self.pool, tag, |_| true) {
            Some(i) => i,
            None => {
                if self.names.is_full() {
                    return Err(capacity(Capacity::Subagents));
                }
                if !self.make_room(tag.raw().len(), false, true) {
                    return Err(capacity(Capacity::IdBytes {
                        capacity: saturate(ID_BYTES),
                    }));
                }
                let entry = Entry {
                    kind: None,
                    owner: None,
                };
                self.names
                    .push(&mut self.pool, tag, entry)
                    .map_err(|_| capacity(Capacity::Subagents))?
            }
        };
        const { assert!(OPEN <= u16::MAX as usize, "subagent indices are u16") };
        Ok(u16::try_from(i).ok())
    }

    fn name(&self, owner: Option<u16>) -> Option<JsonStr<'_>> {
        name_in(&self.names, &self.pool, owner)
    }

    fn same_owner(&self, owner: Option<u16>, tag: Option<JsonStr<'_>>) -> bool {
        match (self.name(owner), tag) {
            (None, None) => true,
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    // -------------------------------------------------------------- rules

    /// The reference's `subagentTagError`: an event attributed to `tag`
    /// must match the recorded owner of what it refers to. A forgotten
    /// owner passes only if every possible one would.
    fn check_owner(
        &mut self,
        event: &Event<'_>,
        tag: Option<JsonStr<'_>>,
        owner: OwnerOf,
        label: &'static str,
        id: JsonStr<'_>,
    ) -> VResult {
        let Some(tag) = tag else { return Ok(()) };
        let owner = match owner {
            OwnerOf::Unknown => return Ok(()),
            OwnerOf::Forgotten if self.lost_only(Some(tag)) => return Ok(()),
            OwnerOf::Forgotten | OwnerOf::Uncertain => {
                return Err(capacity(Capacity::Owners));
            }
            OwnerOf::Known(o) => o,
        };
        if self.same_owner(owner, Some(tag)) {
            return Ok(());
        }
        let owner_name = name_in(&self.names, &self.pool, owner);
        self.detail.reject_with(
            event,
            Rule::OwnerMismatch,
            label,
            [Some(tag), Some(id), owner_name, None],
        )
    }

    /// CONTENT/ARGS/END of an open entity: it must be open, an attributed
    /// event must match its owner, and an END closes it.
    fn continue_open(
        &mut self,
        event: &Event<'_>,
        tag: Option<JsonStr<'_>>,
        kind: Entity,
        owned: Owned,
        id: JsonStr<'_>,
        closes: bool,
    ) -> VResult {
        let Some(i) = self.find_continued(kind, id) else {
            return self.detail.reject_id(event, Rule::NotOpen(kind), id);
        };
        if tag.is_some() {
            let owner = self.owner_of(owned, id);
            self.check_owner(event, tag, owner, owned.label(), id)?;
        }
        if kind == Entity::ToolCall && self.check_args {
            self.tool_args(event, i, id, closes)?;
        }
        if closes {
            self.remove_open(i);
        }
        Ok(())
    }

    fn find_open(&self, kind: Entity, id: JsonStr<'_>) -> Option<usize> {
        self.open.find(&self.pool, Open::Entity(kind), id)
    }

    /// [`find_open`](Self::find_open), trying where the last continued
    /// entity was first.
    #[inline]
    fn find_continued(&mut self, kind: Entity, id: JsonStr<'_>) -> Option<usize> {
        let last = self.last_continued;
        if crate::testing::fast_paths()
            && let Some((span, entry)) = self.open.get(last)
            && entry.kind == Open::Entity(kind)
            && crate::view::scan::same_bytes(self.pool.bytes(span), id.raw())
        {
            return Some(last);
        }
        let i = self.find_open(kind, id)?;
        self.last_continued = i;
        Some(i)
    }

    /// The reference keeps open steps per owner, in the order owners were
    /// first asked about in the run; its messages list them in that order.
    fn touch_step_owner(&mut self, owner: Option<u16>) {
        let rank = Some(self.step_owners);
        match owner {
            None if self.parent_step_rank.is_none() => self.parent_step_rank = rank,
            Some(i)
                if self
                    .names
                    .get(usize::from(i))
                    .is_some_and(|(_, e)| e.kind.is_none()) =>
            {
                self.names.set_entry(
                    usize::from(i),
                    Entry {
                        kind: rank,
                        owner: None,
                    },
                );
            }
            _ => return,
        }
        self.step_owners = self.step_owners.saturating_add(1);
    }

    /// Step owners in the reference's order.
    fn step_owners(&self) -> impl Iterator<Item = Option<u16>> + '_ {
        (0..self.step_owners).filter_map(move |rank| {
            if self.parent_step_rank == Some(rank) {
                return Some(None);
            }
            let i = self.names.iter().position(|(_, e)| e.kind == Some(rank))?;
            Some(u16::try_from(i).ok())
        })
    }

    /// The open steps in the reference's order: by owner, then by start.
    fn open_steps(&self) -> impl Iterator<Item = (JsonStr<'_>, Option<u16>)> + '_ {
        self.step_owners().flat_map(move |owner| {
            self.open
                .iter()
                .filter(move |(_, e)| e.kind == Open::Entity(Entity::Step) && e.owner == owner)
                .map(|(s, e)| (self.pool.text(s), e.owner))
        })
    }

    /// Position of the open step `name` owned by `tag`.
    fn find_step(&self, name: JsonStr<'_>, tag: Option<JsonStr<'_>>) -> Option<usize> {
        self.open.iter().position(|(s, e)| {
            e.kind == Open::Entity(Entity::Step)
                && self.pool.text(s) == name
                && self.same_owner(e.owner, tag)
        })
    }

    /// Verifies one event (after chunk normalization) and updates the state.
    ///
    /// # Errors
    ///
    /// [`VerifyError::Violation`] for an event that breaks a rule (nothing
    /// is then opened, closed or given an owner; like the reference, the
    /// verifier may still have noted a subagent's name or the order in
    /// which owners touched steps), [`VerifyError::Capacity`] when the
    /// verdict needs more than the tables hold.
    pub fn check(&mut self, event: &Event<'_>) -> VResult {
        self.check_staged(event, None)
    }

    /// [`check`](Self::check) for a spilled MESSAGES_SNAPSHOT or
    /// RUN_STARTED whose messages were read one by one and let go
    /// (`staged`): what their
    /// records would have been is remembered as forgotten, before the
    /// messages still in the event are recorded.
    pub(crate) fn check_staged(
        &mut self,
        event: &Event<'_>,
        staged: Option<Staged<'_>>,
    ) -> VResult {
        // A rejected event leaves the state as it was (a monitoring
        // pipeline checks the next one against it): the first event is
        // only seen once one passes.
        let result = self.check_event(event, staged);
        if result.is_ok() {
            self.first_event = true;
        }
        result
    }

    fn check_event(&mut self, event: &Event<'_>, staged: Option<Staged<'_>>) -> VResult {
        use EventType as T;
        let ty = event.event_type();
        match self.phase {
            RunPhase::Errored if ty != T::RunStarted => {
                return self.detail.reject(event, Rule::AfterRunError);
            }
            RunPhase::Finished if ty != T::RunError && ty != T::RunStarted => {
                return self.detail.reject(event, Rule::AfterRunFinished);
            }
            _ => {}
        }
        if !self.first_event && ty != T::RunStarted && ty != T::RunError {
            return self.detail.reject(event, Rule::FirstEvent);
        }
        let starts_run = ty == T::RunStarted && self.first_event;
        if starts_run && self.phase == RunPhase::Active {
            return self.detail.reject(event, Rule::RunStillActive);
        }
        // V0 passes unknown members through, so a `subagentRunId: null` the
        // schema does not describe reaches this stage. (The reference's
        // other null checks here cannot fire: the schemas reject those
        // nulls first.)
        if event.passthrough_tag().is_some_and(|v| v.is_null()) {
            return self.detail.reject(event, Rule::NullSubagentRunId);
        }
        // Only an accepted RUN_STARTED starts a new run.
        if starts_run && matches!(self.phase, RunPhase::Finished | RunPhase::Errored) {
            self.reset_run();
        }
        let tag = event.subagent_run_id();
        let v1 = self.dialect == Dialect::V1;
        match ty {
            T::TextMessageStart => {
                let id = event.message_id().unwrap_or(EMPTY);
                self.start(event, tag, Entity::TextMessage, Owned::Message, id)?;
            }
            T::TextMessageContent | T::TextMessageEnd => {
                let id = event.message_id().unwrap_or(EMPTY);
                let closes = ty == T::TextMessageEnd;
                self.continue_open(event, tag, Entity::TextMessage, Owned::Message, id, closes)?;
            }
            T::ToolCallStart => self.tool_call_start(event, tag)?,
            T::ToolCallArgs | T::ToolCallEnd => {
                let id = event.tool_call_id().unwrap_or(EMPTY);
                let closes = ty == T::ToolCallEnd;
                self.continue_open(event, tag, Entity::ToolCall, Owned::ToolCall, id, closes)?;
            }
            T::StepStarted => {
                let name = event.step_name().unwrap_or(EMPTY);
                let owner = self.intern(tag)?;
                self.touch_step_owner(owner);
                if self.find_step(name, tag).is_some() {
                    let rule = Rule::AlreadyOpen(Entity::Step);
                    return self
                        .detail
                        .reject_with(event, rule, "", [Some(name), tag, None, None]);
                }
                self.push_open(Open::Entity(Entity::Step), name, owner)?;
            }
            T::StepFinished => {
                let name = event.step_name().unwrap_or(EMPTY);
                let owner = self.intern(tag)?;
                self.touch_step_owner(owner);
                let Some(i) = self.find_step(name, tag) else {
                    let other = self
                        .open_steps()
                        .find(|&(s, o)| s == name && !self.same_owner(o, tag))
                        .map(|(_, o)| o);
                    let (rule, strs) = match other {
                        Some(o) => (
                            Rule::StepOwnedElsewhere,
                            [Some(name), tag, name_in(&self.names, &self.pool, o), None],
                        ),
                        None => (Rule::NotOpen(Entity::Step), [Some(name), None, None, None]),
                    };
                    return self.detail.reject_with(event, rule, "", strs);
                };
                self.remove_open(i);
            }
            T::ActivitySnapshot => {
                let id = event.message_id().unwrap_or(EMPTY);
                let replace = event.replace() != Some(false);
                // Without `replace`, a recorded owner stays.
                let kept = matches!(self.owner_of(Owned::Activity, id), OwnerOf::Known(_));
                if replace || !kept {
                    let owner = self.intern(tag)?;
                    self.record_owner(Owned::Activity, id, owner, replace);
                }
            }
            T::ActivityDelta => {
                let id = event.message_id().unwrap_or(EMPTY);
                let owner = self.owner_of(Owned::Activity, id);
                self.check_owner(event, tag, owner, Owned::Activity.label(), id)?;
            }
            T::ToolCallResult => {
                let id = event.message_id().unwrap_or(EMPTY);
                let owner = self.intern(tag)?;
                self.record_owner(Owned::Message, id, owner, true);
            }
            T::ReasoningStart | T::ReasoningMessageStart => {
                let id = event.message_id().unwrap_or(EMPTY);
                let kind = if ty == T::ReasoningStart {
                    Entity::ReasoningSpan
                } else {
                    Entity::ReasoningMessage
                };
                if v1 {
                    self.start(event, tag, kind, Owned::Reasoning, id)?;
                } else {
                    // V0 records reasoning's owners but never checks open ones.
                    let existing = self.owner_of(Owned::Reasoning, id);
                    self.check_owner(event, tag, existing, Owned::Reasoning.label(), id)?;
                    let owner = self.intern(tag)?;
                    self.record_owner(Owned::Reasoning, id, owner, false);
                }
            }
            T::ReasoningMessageContent | T::ReasoningMessageEnd | T::ReasoningEnd => {
                let id = event.message_id().unwrap_or(EMPTY);
                let kind = if ty == T::ReasoningEnd {
                    Entity::ReasoningSpan
                } else {
                    Entity::ReasoningMessage
                };
                let closes = ty != T::ReasoningMessageContent;
                // V0 neither tracks nor checks open reasoning.
                if v1 {
                    self.continue_open(event, tag, kind, Owned::Reasoning, id, closes)?;
                } else if tag.is_some() {
                    let owner = self.owner_of(Owned::Reasoning, id);
                    self.check_owner(event, tag, owner, Owned::Reasoning.label(), id)?;
                }
            }
            T::ReasoningEncryptedValue if tag.is_some() => {
                let id = event.entity_id().unwrap_or(EMPTY);
                let subtype = event.subtype();
                if subtype.is_some_and(|s| s.eq_str("tool-call")) {
                    let owner = self.owner_of(Owned::ToolCall, id);
                    self.check_owner(event, tag, owner, "tool call", id)?;
                } else {
                    // A message's owner, else a reasoning message's.
                    let owner = match self.owner_of(Owned::Message, id) {
                        OwnerOf::Unknown => self.owner_of(Owned::Reasoning, id),
                        OwnerOf::Forgotten => match self.owner_of(Owned::Reasoning, id) {
                            OwnerOf::Known(o) if !self.owners.lost().only(o) => OwnerOf::Uncertain,
                            OwnerOf::Known(o) => OwnerOf::Known(o),
                            _ => OwnerOf::Forgotten,
                        },
                        known => known,
                    };
                    self.check_owner(event, tag, owner, "message", id)?;
                }
            }
            T::SubagentStarted => {
                let id = tag.unwrap_or(EMPTY);
                let rule = if self.find_open(Entity::Subagent, id).is_some() {
                    Some((Rule::SubagentActive, id))
                } else if self
                    .open
                    .find(&self.pool, Open::FinishedSubagent, id)
                    .is_some()
                {
                    Some((Rule::SubagentReused, id))
                } else {
                    event
                        .parent_subagent_run_id()
                        .filter(|&parent| {
                            let known = self.open.find_where(&self.pool, parent, |k| {
                                matches!(k, Open::Entity(Entity::Subagent) | Open::FinishedSubagent)
                            });
                            known.is_none()
                        })
                        .map(|parent| (Rule::UnknownParentSubagent, parent))
                };
                if let Some((rule, s)) = rule {
                    return self.detail.reject_id(event, rule, s);
                }
                self.push_open(Open::Entity(Entity::Subagent), id, None)?;
            }
            T::SubagentFinished | T::SubagentError => {
                let id = tag.unwrap_or(EMPTY);
                let Some(i) = self.find_open(Entity::Subagent, id) else {
                    let rule = Rule::SubagentNotActive;
                    return self.detail.reject_id(event, rule, id);
                };
                let finished = Entry {
                    kind: Open::FinishedSubagent,
                    owner: None,
                };
                self.open.set_entry(i, finished);
            }
            T::MessagesSnapshot => {
                if let Some(staged) = staged {
                    self.merge(staged);
                }
                if let Some(messages) = event.messages() {
                    self.seed_owners(messages, true)?;
                }
            }
            T::RunStarted => {
                self.phase = RunPhase::Active;
                if let Some(staged) = staged {
                    self.merge(staged);
                }
                if let Some(messages) = event.input().and_then(|i| i.get("messages")) {
                    self.seed_owners(messages, false)?;
                }
            }
            T::RunFinished => {
                // The reference's order of checks (V0 never opens reasoning).
                let order = [
                    Entity::Step,
                    Entity::TextMessage,
                    Entity::ReasoningMessage,
                    Entity::ReasoningSpan,
                    Entity::ToolCall,
                    Entity::Subagent,
                ];
                if let Some(&kind) = order.iter().find(|&&k| self.open_count(k) > 0) {
                    let rule = Rule::OpenAtRunFinished(kind);
                    return self.detail.reject(event, rule);
                }
                self.phase = RunPhase::Finished;
            }
            T::RunError => self.phase = RunPhase::Errored,
            T::ThinkingStart | T::ThinkingEnd => {
                let opens = ty == T::ThinkingStart;
                if self.thinking_step == opens {
                    let rule = if opens {
                        Rule::ThinkingStepActive
                    } else {
                        Rule::NoThinkingStep
                    };
                    return self.detail.reject(event, rule);
                }
                self.thinking_step = opens;
            }
            T::ThinkingTextMessageStart => {
                let rule = if !self.thinking_step {
                    Rule::NoThinkingStep
                } else if self.thinking_message {
                    Rule::ThinkingMessageActive
                } else {
                    self.thinking_message = true;
                    return Ok(());
                };
                return self.detail.reject(event, rule);
            }
            T::ThinkingTextMessageContent | T::ThinkingTextMessageEnd => {
                if !self.thinking_message {
                    return self.detail.reject(event, Rule::NoThinkingMessage);
                }
                if ty == T::ThinkingTextMessageEnd {
                    self.thinking_message = false;
                }
            }
            T::ReasoningEncryptedValue
            | T::StateSnapshot
            | T::StateDelta
            | T::Raw
            | T::Custom
            | T::TextMessageChunk
            | T::ToolCallChunk
            | T::ReasoningMessageChunk => {}
        }
        Ok(())
    }

    /// TEXT_MESSAGE_START, or V1's REASONING_START/REASONING_MESSAGE_START:
    /// the id must not be open, an attributed event must match the id's
    /// recorded owner, and a new id records its opener as owner.
    fn start(
        &mut self,
        event: &Event<'_>,
        tag: Option<JsonStr<'_>>,
        kind: Entity,
        owned: Owned,
        id: JsonStr<'_>,
    ) -> VResult {
        if self.find_open(kind, id).is_some() {
            let rule = Rule::AlreadyOpen(kind);
            return self.detail.reject_id(event, rule, id);
        }
        let existing = self.owner_of(owned, id);
        self.check_owner(event, tag, existing, owned.label(), id)?;
        let owner = self.intern(tag)?;
        self.push_open(Open::Entity(kind), id, None)?;
        self.record_owner(owned, id, owner, false);
        Ok(())
    }

    fn tool_call_start(&mut self, event: &Event<'_>, tag: Option<JsonStr<'_>>) -> VResult {
        let id = event.tool_call_id().unwrap_or(EMPTY);
        if self.find_open(Entity::ToolCall, id).is_some() {
            let rule = Rule::AlreadyOpen(Entity::ToolCall);
            return self.detail.reject_id(event, rule, id);
        }
        let parent = event.parent_message_id();
        // A tool call belongs to the message that carries it.
        let inherited = match parent {
            Some(p) => self.owner_of(Owned::Message, p),
            None => OwnerOf::Unknown,
        };
        let lost = self.owners.lost();
        if let (Some(p), Some(t)) = (parent, tag) {
            match inherited {
                OwnerOf::Known(po) if !self.same_owner(po, Some(t)) => {
                    let po_name = name_in(&self.names, &self.pool, po);
                    let rule = Rule::ParentOwnerMismatch;
                    return self.detail.reject_with(
                        event,
                        rule,
                        "",
                        [Some(t), Some(p), po_name, None],
                    );
                }
                OwnerOf::Forgotten if !self.lost_only(Some(t)) => {
                    return Err(capacity(Capacity::Owners));
                }
                _ => {}
            }
        }
        let existing = self.owner_of(Owned::ToolCall, id);
        self.check_owner(event, tag, existing, Owned::ToolCall.label(), id)?;
        if tag.is_none() {
            // Both recorded, with different owners (names are interned
            // once: same index, same name).
            match (existing, inherited) {
                (OwnerOf::Known(eo), OwnerOf::Known(io)) if io != eo => {
                    let eo_name = name_in(&self.names, &self.pool, eo);
                    let io_name = name_in(&self.names, &self.pool, io);
                    let rule = Rule::ToolCallParentConflict;
                    return self.detail.reject_with(
                        event,
                        rule,
                        "",
                        [Some(id), eo_name, parent, io_name],
                    );
                }
                (OwnerOf::Known(o), OwnerOf::Forgotten)
                | (OwnerOf::Forgotten, OwnerOf::Known(o))
                    if !lost.only(o) =>
                {
                    return Err(capacity(Capacity::Owners));
                }
                (OwnerOf::Forgotten, OwnerOf::Forgotten) if lost.single().is_none() => {
                    return Err(capacity(Capacity::Owners));
                }
                _ => {}
            }
        }
        // The new owner: the attribution, else the parent message's owner
        // (`None` when a forgotten parent leaves it open).
        let owner = match (tag, inherited) {
            (Some(_), _) => Some(self.intern(tag)?),
            (None, OwnerOf::Known(io)) => Some(io),
            (None, OwnerOf::Forgotten) if !lost.only(None) => None,
            (None, _) => Some(None),
        };
        if self.check_args && self.args.is_full() {
            return Err(capacity(Capacity::ToolArgs {
                capacity: saturate(ARGS_CHECKED),
            }));
        }
        self.push_open(Open::Entity(Entity::ToolCall), id, None)?;
        if self.check_args {
            let opened = self.find_open(Entity::ToolCall, id);
            if let Some((span, _)) = opened.and_then(|i| self.open.get(i)) {
                let scan = Scanner::new(Limits {
                    max_depth: ARGS_DEPTH,
                });
                let _ = self.args.push((span, scan));
            }
        }
        match owner {
            Some(owner) => self.record_owner(Owned::ToolCall, id, owner, false),
            None if !matches!(existing, OwnerOf::Known(_)) => {
                self.owners.forget(Owned::ToolCall, id, &[None]);
            }
            None => {}
        }
        Ok(())
    }

    /// Records the owners of the messages (and their tool calls) in a
    /// MESSAGES_SNAPSHOT (authoritative) or a RUN_STARTED input (only ids
    /// not yet known). Subagent ids are interned first, so that running
    /// out of room for them changes no owner.
    fn seed_owners(&mut self, messages: RawJson<'_>, authoritative: bool) -> VResult {
        for (_, tag, _) in owned_messages(messages) {
            self.intern(tag)?;
        }
        for (msg, tag, bucket) in owned_messages(messages) {
            let owner = self.intern(tag)?;
            for_each_record(msg, bucket, |kind, id| {
                self.record_owner(kind, id, owner, authoritative);
            });
        }
        Ok(())
    }

    /// Forgets the records `staged` may replace, and remembers its
    /// records as forgotten.
    fn merge(&mut self, staged: Staged<'_>) {
        loop {
            let pool = &self.pool;
            let evicted = self
                .owners
                .evict(pool, |kind, id| !staged.may_hold(kind, id));
            match evicted {
                Some(span) => self.release(span),
                None => break,
            }
        }
        self.owners.merge(&staged);
    }

    /// The reference's message for `error` (valid until the next event).
    pub fn describe(&self, error: VerifyError) -> Describe<'_, OPEN, OWNERS, ID_BYTES> {
        Describe {
            verifier: self,
            error,
        }
    }
}

/// Feeds the decoded text of `s` to `scan`, a few bytes at a time.
fn feed_text(scan: &mut Scanner<1>, s: JsonStr<'_>) -> Result<(), ScanError> {
    if let Some(plain) = s.as_str() {
        return scan.feed(plain.as_bytes());
    }
    let mut buf = [0u8; 64];
    let mut n = 0usize;
    for c in s.code_points() {
        let mut tmp = [0u8; 4];
        let bytes = crate::view::string::encode_wtf8(c, &mut tmp);
        if n.saturating_add(bytes.len()) > buf.len() {
            scan.feed(buf.get(..n).unwrap_or_default())?;
            n = 0;
        }
        let end = n.saturating_add(bytes.len());
        if let Some(dst) = buf.get_mut(n..end) {
            dst.copy_from_slice(bytes);
            n = end;
        }
    }
    scan.feed(buf.get(..n).unwrap_or_default())
}

/// The messages of a snapshot or run input that own an id: each with its
/// `subagentRunId` and the kind of record its id makes. V1 strips messages
/// whose role it does not know.
fn owned_messages(
    messages: RawJson<'_>,
) -> impl Iterator<Item = (RawJson<'_>, Option<JsonStr<'_>>, Owned)> {
    messages.elements().filter_map(owned_message)
}

/// A message that owns an id, with its `subagentRunId` and the kind of
/// record its id makes.
fn owned_message(msg: RawJson<'_>) -> Option<(RawJson<'_>, Option<JsonStr<'_>>, Owned)> {
    msg.get("id").and_then(|v| v.as_str())?;
    let role = msg.get("role").and_then(|v| v.as_str())?;
    if !is_message_role(role) {
        return None;
    }
    let tag = msg.get("subagentRunId").and_then(|v| v.as_str());
    let bucket = if role.eq_str("reasoning") {
        Owned::Reasoning
    } else if role.eq_str("activity") {
        Owned::Activity
    } else {
        Owned::Message
    };
    Some((msg, tag, bucket))
}

/// The records one owned message makes: its own id, and an assistant's
/// tool calls (only the assistant schema has `toolCalls`; the others strip
/// it).
fn for_each_record<'a>(
    msg: RawJson<'a>,
    bucket: Owned,
    mut record: impl FnMut(Owned, JsonStr<'a>),
) {
    let Some(id) = msg.get("id").and_then(|v| v.as_str()) else {
        return;
    };
    record(bucket, id);
    if bucket != Owned::Message {
        return;
    }
    let assistant = msg
        .get("role")
        .and_then(|v| v.as_str())
        .is_some_and(|r| r.eq_str("assistant"));
    let calls = msg
        .get("toolCalls")
        .filter(|v| assistant && v.kind() == JsonKind::Array);
    for call in calls.iter().flat_map(RawJson::elements) {
        if let Some(call_id) = call.get("id").and_then(|v| v.as_str()) {
            record(Owned::ToolCall, call_id);
        }
    }
}

/// Adds the records message `msg` of a MESSAGES_SNAPSHOT (or a run's
/// input) would make to a [`Staged`] filter (a spilled frame's messages are
/// read one at a time and let go; see [`Verifier::check_staged`]). Returns the owner: `None`
/// if it makes none, `Some(false)` for the parent, `Some(true)` for a
/// subagent.
pub(crate) fn stage(msg: RawJson<'_>, filter: &mut [u8]) -> Option<bool> {
    let (msg, tag, bucket) = owned_message(msg)?;
    for_each_record(msg, bucket, |kind, id| {
        owners::stage_record(filter, kind, id)
    });
    Some(tag.is_some())
}

/// Adds the record one tool call of an assistant message in a history
/// makes to a [`Staged`] filter (a message whose tool calls were let go
/// one by one before it closed).
pub(crate) fn stage_tool_call(call: RawJson<'_>, filter: &mut [u8]) {
    if let Some(id) = call.get("id").and_then(|v| v.as_str()) {
        owners::stage_record(filter, Owned::ToolCall, id);
    }
}

const EMPTY: JsonStr<'static> = JsonStr::from_escaped(b"");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode;
    use crate::input::json::Limits;
    extern crate std;
    use std::string::{String, ToString};

    /// Feeds `events`; returns the first violation's message, if any.
    fn verify(dialect: Dialect, events: &[&str]) -> Option<String> {
        let mut v = Verifier::<8, 8, 32>::new(dialect);
        for text in events {
            let ev = decode(text.as_bytes(), dialect, Limits::new())
                .unwrap()
                .unwrap();
            if let Err(e) = v.check(&ev) {
                return Some(v.describe(e).to_string());
            }
        }
        None
    }

    const RS: &str = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;
    const RF: &str = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#;

    #[test]
    fn run_boundaries() {
        assert_eq!(
            verify(Dialect::V1, &[r#"{"type":"CUSTOM","name":"n","value":1}"#]).as_deref(),
            Some("First event must be 'RUN_STARTED'")
        );
        assert_eq!(
            verify(
                Dialect::V1,
                &[r#"{"type":"RUN_ERROR","message":"m"}"#, RS, RF]
            ),
            None
        );
        assert!(
            verify(Dialect::V1, &[RS, RS])
                .unwrap()
                .starts_with("Cannot send 'RUN_STARTED' while")
        );
        assert!(
            verify(Dialect::V1, &[RS, RF, RF])
                .unwrap()
                .contains("already finished")
        );
        assert!(
            verify(
                Dialect::V1,
                &[RS, r#"{"type":"RUN_ERROR","message":"m"}"#, RF]
            )
            .unwrap()
            .contains("already errored")
        );
    }

    #[test]
    fn a_new_run_resets_state() {
        let start = r#"{"type":"TEXT_MESSAGE_START","messageId":"m"}"#;
        let err = r#"{"type":"RUN_ERROR","message":"x"}"#;
        // RUN_ERROR accepts open messages; the next run starts clean.
        assert_eq!(verify(Dialect::V1, &[RS, start, err, RS, start]), None);
    }

    #[test]
    fn reasoning_is_checked_in_v1_only() {
        let end = r#"{"type":"REASONING_END","messageId":"r"}"#;
        assert!(
            verify(Dialect::V1, &[RS, end])
                .unwrap()
                .contains("No active reasoning span")
        );
        assert_eq!(verify(Dialect::V0, &[RS, end, RF]), None);
    }

    #[test]
    fn capacity_is_reported_not_guessed() {
        let mut v = Verifier::<2, 8, 32>::new(Dialect::V1);
        let mut feed = |s: &str| {
            v.check(
                &decode(s.as_bytes(), Dialect::V1, Limits::new())
                    .unwrap()
                    .unwrap(),
            )
        };
        feed(RS).unwrap();
        feed(r#"{"type":"TOOL_CALL_START","toolCallId":"a","toolCallName":"f"}"#).unwrap();
        feed(r#"{"type":"STEP_STARTED","stepName":"s"}"#).unwrap();
        assert_eq!(
            feed(r#"{"type":"TEXT_MESSAGE_START","messageId":"m"}"#),
            Err(VerifyError::Capacity(Capacity::OpenIds))
        );
    }
}
