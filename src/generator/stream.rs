//! The generator's state machine: what is open (a scope, as wasm-smith
//! keeps one), the events legal now, and closing up.

use super::cursor::Cursor;
use super::framing::Framer;
use super::write::Out;
use super::{Expected, GenConfig, MAX_OPEN};
use crate::protocol::dialect::Dialect;

/// Who sends an event: 0 for the parent agent, else a subagent's number
/// (its `subagentRunId` is `a` and the number).
pub(super) type Owner = u32;

/// What a chunk lane streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Lane {
    #[default]
    Text,
    Tool,
    Reasoning,
}

/// One open thing: a message, tool call, step, subagent (its owner is its
/// parent), activity, or chunk lane.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Item {
    pub(super) id: u32,
    pub(super) owner: Owner,
    /// A tool call's arguments: which text ([`args`]), and how much of it
    /// went out.
    pub(super) seed: u32,
    pub(super) sent: usize,
    pub(super) lane: Lane,
}

/// Open things of one kind.
#[derive(Clone, Copy, Debug)]
pub(super) struct Open {
    items: [Item; MAX_OPEN],
    len: usize,
}

impl Open {
    const fn new() -> Self {
        Open {
            items: [Item {
                id: 0,
                owner: 0,
                seed: 0,
                sent: 0,
                lane: Lane::Text,
            }; MAX_OPEN],
            len: 0,
        }
    }

    pub(super) fn as_slice(&self) -> &[Item] {
        self.items.get(..self.len).unwrap_or_default()
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn get(&self, i: usize) -> Option<Item> {
        self.as_slice().get(i).copied()
    }

    pub(super) fn first(&self) -> Option<Item> {
        self.get(0)
    }

    fn push(&mut self, item: Item) {
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = item;
            self.len = self.len.saturating_add(1);
        }
    }

    fn remove(&mut self, i: usize) -> Option<Item> {
        let item = self.get(i)?;
        let len = self.len;
        self.items.copy_within(i.saturating_add(1)..len, i);
        self.len = len.saturating_sub(1);
        Some(item)
    }

    fn clear(&mut self) {
        self.len = 0;
    }

    pub(super) fn owned_by(&self, owner: Owner) -> usize {
        self.as_slice().iter().filter(|i| i.owner == owner).count()
    }

    fn position(&self, f: impl Fn(&Item) -> bool) -> Option<usize> {
        self.as_slice().iter().position(f)
    }

    /// The `i`th of those `f` keeps.
    fn nth(&self, i: usize, f: impl Fn(&Item) -> bool) -> Option<Item> {
        self.as_slice().iter().filter(|x| f(x)).nth(i).copied()
    }
}

/// What a step can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    TextStart,
    TextContent,
    TextEnd,
    ToolStart,
    ToolArgs,
    ToolEnd,
    ChunkOpen,
    ChunkMore,
    StepStart,
    StepEnd,
    Snapshot,
    Delta,
    Large,
    ReasoningStart,
    ReasoningMessageStart,
    ReasoningContent,
    ReasoningMessageEnd,
    ReasoningEnd,
    Encrypted,
    ActivitySnapshot,
    ActivityDelta,
    MessagesSnapshot,
    SubagentStart,
    SubagentEnd,
    Custom,
    Raw,
    RunEnd,
}

const ACTIONS: usize = 27;

/// Most fresh ids a run with subagents mints before it ends (the action
/// then, a violation's set-ups and the closing events add at most 9 owner
/// records). So a valid stream never needs more of a verifier than the
/// default capacities hold: no owner record is forgotten
/// ([`DEFAULT_OWNERS`](crate::DEFAULT_OWNERS)), no more subagents than
/// [`DEFAULT_OPEN_IDS`](crate::DEFAULT_OPEN_IDS). Without subagents every
/// owner is the parent, and a forgotten record never matters.
const RUN_IDS: u32 = 20;

/// The most bytes one generated event's JSON takes (a 48-character delta
/// of 6-byte escapes, ids, names).
pub(super) const EVENT_MAX: usize = 512;
/// The most bytes its frame takes (fields, comments, split data lines).
pub(super) const FRAME_MAX: usize = EVENT_MAX + 256;

/// A reasoning span: V1 `REASONING_*` or legacy `THINKING_*` (which V1
/// translates), V0 `THINKING_*`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub(super) id: u32,
    pub(super) legacy: bool,
    /// Its message, if one is open.
    pub(super) message: Option<u32>,
}

pub(super) struct Generator<'b> {
    pub(super) config: GenConfig,
    pub(super) out: Out<'b>,
    framer: Framer,
    /// Event frames written.
    pub(super) events: u32,
    /// Counter for fresh ids.
    next: u32,
    /// Its value when the run started.
    run_base: u32,
    pub(super) run: Option<u32>,
    runs: u32,
    pub(super) texts: Open,
    pub(super) calls: Open,
    pub(super) steps: Open,
    /// Active subagents (`owner`: the parent subagent, 0 for none), and
    /// the latest finished in this run.
    pub(super) subs: Open,
    pub(super) finished: Open,
    /// Activities with a snapshot in this run, and their owners.
    pub(super) acts: Open,
    /// Open chunk lanes: one per owner at most.
    pub(super) lanes: Open,
    /// A state baseline exists (a snapshot), and its keys so far.
    baseline: bool,
    keys: u32,
    pub(super) span: Option<Span>,
    /// A violation is to be injected; the verdict once it is.
    pub(super) violate: bool,
    pub(super) expected: Expected,
}

impl<'b> Generator<'b> {
    pub(super) fn new(config: GenConfig, out: Out<'b>) -> Self {
        Generator {
            config,
            out,
            framer: Framer::new(config.framing),
            events: 0,
            next: 0,
            run_base: 0,
            run: None,
            runs: 0,
            texts: Open::new(),
            calls: Open::new(),
            steps: Open::new(),
            subs: Open::new(),
            finished: Open::new(),
            acts: Open::new(),
            lanes: Open::new(),
            baseline: false,
            keys: 0,
            span: None,
            violate: false,
            expected: Expected::Valid,
        }
    }

    pub(super) fn v1(&self) -> bool {
        self.config.dialect == Dialect::V1
    }

    pub(super) fn fresh(&mut self) -> u32 {
        self.next = self.next.saturating_add(1);
        self.next
    }

    /// Frames it takes to close what is open and finish the run (a call
    /// still owes the rest of its arguments, one ARGS, and its END).
    fn closing(&self) -> usize {
        self.texts
            .len()
            .saturating_add(self.calls.len().saturating_mul(2))
            .saturating_add(self.steps.len())
            .saturating_add(self.subs.len())
            .saturating_add(5)
    }

    /// Room for `bytes` more on top of what closing takes.
    pub(super) fn room_for(&self, bytes: usize) -> bool {
        let reserve = self.closing().saturating_mul(FRAME_MAX);
        self.out.room() >= reserve.saturating_add(bytes)
    }

    pub(super) fn room(&self) -> bool {
        self.room_for(FRAME_MAX)
    }

    pub(super) fn run(&mut self, c: &mut Cursor<'_>) {
        if !self.room() {
            return;
        }
        self.framer.start(&mut self.out);
        if self.violate && c.ratio(1, 16) {
            self.inject_first();
            return;
        }
        // Where the violation goes: drawn first, so that it can come late,
        // when much is open.
        let at = if self.violate {
            c.int_in_range(1, self.config.max_events)
        } else {
            u32::MAX
        };
        self.run_started();
        while !c.is_empty() && self.events < self.config.max_events && self.room() {
            if self.events >= at {
                self.inject(c);
                return;
            }
            let mut legal = [Action::RunEnd; ACTIONS];
            let n = if self.run_ids_spent() {
                1
            } else {
                self.legal(&mut legal)
            };
            let Some(&action) = legal.get(c.index(n)) else {
                break;
            };
            if action == Action::RunEnd {
                if self.config.runs {
                    if c.ratio(1, 3) {
                        self.run_error();
                    } else {
                        self.close_all();
                    }
                    self.run_started();
                    continue;
                }
                break;
            }
            self.act(action, c);
        }
        if self.violate && self.room() {
            self.inject(c);
            return;
        }
        self.close_all();
    }

    /// Whether the run has minted its [`RUN_IDS`] (with subagents on).
    fn run_ids_spent(&self) -> bool {
        self.config.subagents && self.next.saturating_sub(self.run_base) >= RUN_IDS
    }

    /// The actions legal now, into `into`; how many.
    fn legal(&self, into: &mut [Action; ACTIONS]) -> usize {
        let cfg = &self.config;
        let can_open = |open: &Open| open.len() < cfg.max_open as usize;
        let v1 = self.v1();
        let span = self.span;
        let message = span.and_then(|s| s.message).is_some();
        // A subagent may finish once nothing explicit of its own is open.
        let finishable = self.subs.as_slice().iter().any(|s| self.owns_nothing(s.id));
        let candidates = [
            (Action::TextStart, cfg.text && can_open(&self.texts)),
            (Action::TextContent, !self.texts.is_empty()),
            (Action::TextEnd, !self.texts.is_empty()),
            (Action::ToolStart, cfg.tools && can_open(&self.calls)),
            (Action::ToolArgs, !self.calls.is_empty()),
            (Action::ToolEnd, !self.calls.is_empty()),
            (Action::ChunkOpen, cfg.chunks),
            (Action::ChunkMore, !self.lanes.is_empty()),
            (Action::StepStart, cfg.steps && can_open(&self.steps)),
            (Action::StepEnd, !self.steps.is_empty()),
            (Action::Snapshot, cfg.state),
            (Action::Delta, cfg.state && self.baseline),
            (Action::Large, cfg.large),
            (Action::ReasoningStart, cfg.reasoning && span.is_none()),
            (Action::ReasoningMessageStart, span.is_some() && !message),
            (Action::ReasoningContent, message),
            (Action::ReasoningMessageEnd, message),
            (Action::ReasoningEnd, span.is_some() && !message),
            (Action::Encrypted, cfg.reasoning && v1),
            (Action::ActivitySnapshot, cfg.activity),
            (Action::ActivityDelta, !self.acts.is_empty()),
            (Action::MessagesSnapshot, cfg.snapshots),
            (Action::SubagentStart, cfg.subagents && can_open(&self.subs)),
            (Action::SubagentEnd, finishable),
            (Action::Custom, cfg.custom),
            (Action::Raw, cfg.custom),
            (Action::RunEnd, true),
        ];
        let mut n = 0usize;
        for (action, ok) in candidates {
            if ok && let Some(slot) = into.get_mut(n) {
                *slot = action;
                n = n.saturating_add(1);
            }
        }
        n
    }

    /// Whether subagent `owner` has no open message, call or step.
    pub(super) fn owns_nothing(&self, owner: Owner) -> bool {
        self.texts.owned_by(owner) == 0
            && self.calls.owned_by(owner) == 0
            && self.steps.owned_by(owner) == 0
    }

    /// The parent agent or one of the active subagents.
    fn owner(&self, c: &mut Cursor<'_>) -> Owner {
        match c.index(self.subs.len().saturating_add(1)) {
            0 => 0,
            i => self.subs.get(i.saturating_sub(1)).map_or(0, |s| s.id),
        }
    }

    /// Bookkeeping for an explicit event from `owner` (`None`: a run
    /// event or messages snapshot, from everyone): the normalizer closes
    /// the sender's chunk lanes first.
    pub(super) fn explicit(&mut self, owner: Option<Owner>) {
        match owner {
            None => self.lanes.clear(),
            Some(o) => {
                while let Some(i) = self.lanes.position(|l| l.owner == o) {
                    self.lanes.remove(i);
                }
            }
        }
    }

    fn act(&mut self, action: Action, c: &mut Cursor<'_>) {
        match action {
            Action::TextStart => {
                let owner = self.owner(c);
                let (role, name) = (c.ratio(3, 4), c.ratio(1, 4));
                self.text_start(owner, role, name);
            }
            Action::TextContent => {
                let Some(t) = self.texts.get(c.index(self.texts.len())) else {
                    return;
                };
                let max = self.config.max_delta;
                self.explicit(Some(t.owner));
                self.event(|o| {
                    o.head("TEXT_MESSAGE_CONTENT");
                    o.id("messageId", 'm', t.id);
                    o.delta(c, max);
                    o.owner(t.owner);
                    o.raw(b"}");
                });
            }
            Action::TextEnd => {
                if let Some(t) = self.texts.remove(c.index(self.texts.len())) {
                    self.text_end(t);
                }
            }
            Action::ToolStart => {
                let owner = self.owner(c);
                let id = self.fresh();
                let seed = c.int_in_range(0, 255);
                // A parent message of the same sender, if one is open.
                let parent = match self.texts.owned_by(owner) {
                    0 => None,
                    n => self.texts.nth(c.index(n), |t| t.owner == owner),
                };
                self.calls.push(Item {
                    id,
                    owner,
                    seed,
                    ..Item::default()
                });
                self.explicit(Some(owner));
                self.event(|o| {
                    o.head("TOOL_CALL_START");
                    o.id("toolCallId", 'c', id);
                    o.raw(br#","toolCallName":"#);
                    o.string(tool_name(seed));
                    if let Some(p) = parent {
                        o.id("parentMessageId", 'm', p.id);
                    }
                    o.owner(owner);
                    o.raw(b"}");
                });
            }
            Action::ToolArgs => {
                let i = c.index(self.calls.len());
                let piece = c.int_in_range(1, 24) as usize;
                self.tool_args(i, piece);
            }
            Action::ToolEnd => {
                let i = c.index(self.calls.len());
                let result = c.bool();
                self.tool_end(i, result, c);
            }
            Action::ChunkOpen => self.chunk_open(c),
            Action::ChunkMore => self.chunk_more(c),
            Action::StepStart => {
                let owner = self.owner(c);
                self.step_start(owner);
            }
            Action::StepEnd => {
                if let Some(s) = self.steps.remove(c.index(self.steps.len())) {
                    self.step_end(s);
                }
            }
            Action::Snapshot => {
                let n = c.int_in_range(0, 3);
                self.baseline = true;
                self.keys = n;
                self.explicit(Some(0));
                self.event(|o| {
                    o.head("STATE_SNAPSHOT");
                    o.raw(br#","snapshot":{"#);
                    for k in 0..n {
                        if k > 0 {
                            o.raw(b",");
                        }
                        o.raw(b"\"k");
                        o.number(k);
                        o.raw(b"\":");
                        o.number(k.saturating_mul(7));
                    }
                    o.raw(b"}}");
                });
            }
            Action::Delta => {
                let key = self.keys;
                self.keys = self.keys.saturating_add(1);
                let value = c.int_in_range(0, 1000);
                self.explicit(Some(0));
                self.event(|o| {
                    o.head("STATE_DELTA");
                    o.raw(br#","delta":[{"op":"add","path":"/k"#);
                    o.number(key);
                    o.raw(br#"","value":"#);
                    o.number(value);
                    o.raw(b"}]}");
                });
            }
            Action::Large => self.large(c),
            Action::ReasoningStart => {
                let id = self.fresh();
                // V1 reads legacy thinking too, and translates it.
                let legacy = !self.v1() || c.ratio(1, 3);
                let title = legacy && c.bool();
                self.span = Some(Span {
                    id,
                    legacy,
                    message: None,
                });
                self.explicit(Some(0));
                self.event(|o| {
                    if legacy {
                        o.head("THINKING_START");
                        if title {
                            o.raw(br#","title":"plan""#);
                        }
                    } else {
                        o.head("REASONING_START");
                        o.id("messageId", 'r', id);
                    }
                    o.raw(b"}");
                });
            }
            Action::ReasoningMessageStart => {
                let Some(mut span) = self.span else {
                    return;
                };
                let id = self.fresh();
                span.message = Some(id);
                self.span = Some(span);
                self.explicit(Some(0));
                self.event(|o| {
                    if span.legacy {
                        o.head("THINKING_TEXT_MESSAGE_START");
                    } else {
                        o.head("REASONING_MESSAGE_START");
                        o.id("messageId", 'q', id);
                        o.raw(br#","role":"reasoning""#);
                    }
                    o.raw(b"}");
                });
            }
            Action::ReasoningContent => {
                let Some(span) = self.span else {
                    return;
                };
                let id = span.message.unwrap_or(0);
                let max = self.config.max_delta;
                self.explicit(Some(0));
                self.event(|o| {
                    if span.legacy {
                        o.head("THINKING_TEXT_MESSAGE_CONTENT");
                    } else {
                        o.head("REASONING_MESSAGE_CONTENT");
                        o.id("messageId", 'q', id);
                    }
                    o.delta(c, max);
                    o.raw(b"}");
                });
            }
            Action::ReasoningMessageEnd => self.reasoning_message_end(),
            Action::ReasoningEnd => self.reasoning_end(),
            Action::Encrypted => {
                let tool = c.bool();
                let id = c.int_in_range(1, self.next.max(1));
                self.event(|o| {
                    o.head("REASONING_ENCRYPTED_VALUE");
                    if tool {
                        o.raw(br#","subtype":"tool-call""#);
                        o.id("entityId", 'c', id);
                    } else {
                        o.raw(br#","subtype":"message""#);
                        o.id("entityId", 'm', id);
                    }
                    o.raw(br#","encryptedValue":"ZW5jcnlwdGVk"}"#);
                });
            }
            Action::ActivitySnapshot => {
                let again = !self.acts.is_empty() && (self.acts.len() >= MAX_OPEN || c.bool());
                let (act, keep) = if again {
                    let Some(a) = self.acts.get(c.index(self.acts.len())) else {
                        return;
                    };
                    (a, c.bool())
                } else {
                    let owner = self.owner(c);
                    let act = Item {
                        id: self.fresh(),
                        owner,
                        ..Item::default()
                    };
                    self.acts.push(act);
                    (act, false)
                };
                let pct = c.int_in_range(0, 100);
                self.event(|o| {
                    o.head("ACTIVITY_SNAPSHOT");
                    o.id("messageId", 'v', act.id);
                    o.raw(br#","activityType":"progress","content":{"pct":"#);
                    o.number(pct);
                    o.raw(b"}");
                    if keep {
                        o.raw(br#","replace":false"#);
                    }
                    o.owner(act.owner);
                    o.raw(b"}");
                });
            }
            Action::ActivityDelta => {
                let Some(act) = self.acts.get(c.index(self.acts.len())) else {
                    return;
                };
                let pct = c.int_in_range(0, 100);
                self.event(|o| {
                    o.head("ACTIVITY_DELTA");
                    o.id("messageId", 'v', act.id);
                    o.raw(br#","activityType":"progress","patch":[{"op":"replace","path":"/pct","value":"#);
                    o.number(pct);
                    o.raw(b"}]");
                    o.owner(act.owner);
                    o.raw(b"}");
                });
            }
            Action::MessagesSnapshot => self.messages_snapshot(c),
            Action::SubagentStart => {
                // Its parent: an active or finished subagent, or none.
                let known = self.subs.len().saturating_add(self.finished.len());
                let parent = match c.index(known.saturating_add(1)) {
                    0 => 0,
                    i => {
                        let i = i.saturating_sub(1);
                        self.subs
                            .get(i)
                            .or_else(|| self.finished.get(i.saturating_sub(self.subs.len())))
                            .map_or(0, |s| s.id)
                    }
                };
                let described = c.bool();
                self.subagent_start(parent, described);
            }
            Action::SubagentEnd => {
                let n = self
                    .subs
                    .as_slice()
                    .iter()
                    .filter(|s| self.owns_nothing(s.id))
                    .count();
                let i = c.index(n);
                let Some(sub) = self.subs.nth(i, |s| self.owns_nothing(s.id)) else {
                    return;
                };
                let error = c.ratio(1, 4);
                self.subagent_end(sub, error);
            }
            Action::Custom => {
                let value = c.int_in_range(0, 99);
                self.explicit(Some(0));
                self.event(|o| {
                    o.head("CUSTOM");
                    o.raw(br#","name":"gen","value":{"n":"#);
                    o.number(value);
                    o.raw(b"}}");
                });
            }
            Action::Raw => {
                let value = c.int_in_range(0, 99);
                self.event(|o| {
                    o.head("RAW");
                    o.raw(br#","event":{"kind":"raw","n":"#);
                    o.number(value);
                    o.raw(b"}}");
                });
            }
            Action::RunEnd => {}
        }
    }

    /// A chunk that opens a lane (closing its sender's open one).
    fn chunk_open(&mut self, c: &mut Cursor<'_>) {
        let owner = self.owner(c);
        let kinds = if self.v1() { 3 } else { 2 };
        let lane = match c.index(kinds) {
            0 => Lane::Text,
            1 => Lane::Tool,
            _ => Lane::Reasoning,
        };
        self.lane_open(owner, lane, c);
    }

    /// A chunk from `owner` that opens a lane of kind `lane`.
    pub(super) fn lane_open(&mut self, owner: Owner, lane: Lane, c: &mut Cursor<'_>) -> Item {
        let id = self.fresh();
        let seed = c.int_in_range(0, 255);
        if let Some(i) = self.lanes.position(|l| l.owner == owner) {
            self.lanes.remove(i);
        }
        let parent = match (lane, self.texts.owned_by(owner)) {
            (Lane::Tool, n) if n > 0 => self.texts.nth(c.index(n), |t| t.owner == owner),
            _ => None,
        };
        let piece = c.int_in_range(0, 24) as usize;
        let max = self.config.max_delta;
        let mut text = [0u8; ARGS];
        let len = args(seed, &mut text);
        let first = text.get(..piece.min(len)).unwrap_or_default();
        let item = Item {
            id,
            owner,
            seed,
            sent: first.len(),
            lane,
        };
        self.lanes.push(item);
        let with_delta = c.ratio(3, 4);
        self.event(|o| {
            match lane {
                Lane::Text => {
                    o.head("TEXT_MESSAGE_CHUNK");
                    o.id("messageId", 'm', id);
                    o.raw(br#","role":"assistant""#);
                    if with_delta {
                        o.delta(c, max);
                    }
                }
                Lane::Tool => {
                    o.head("TOOL_CALL_CHUNK");
                    o.id("toolCallId", 'c', id);
                    o.raw(br#","toolCallName":"#);
                    o.string(tool_name(seed));
                    if let Some(p) = parent {
                        o.id("parentMessageId", 'm', p.id);
                    }
                    o.raw(br#","delta":"#);
                    o.ascii_string(first);
                }
                Lane::Reasoning => {
                    o.head("REASONING_MESSAGE_CHUNK");
                    o.id("messageId", 'q', id);
                    if with_delta {
                        o.delta(c, max);
                    }
                }
            }
            o.owner(owner);
            o.raw(b"}");
        });
        item
    }

    pub(super) fn text_start(&mut self, owner: Owner, role: bool, name: bool) -> Item {
        let text = Item {
            id: self.fresh(),
            owner,
            ..Item::default()
        };
        self.texts.push(text);
        self.explicit(Some(owner));
        self.event(|o| {
            o.head("TEXT_MESSAGE_START");
            o.id("messageId", 'm', text.id);
            if role {
                o.raw(br#","role":"assistant""#);
            }
            if name {
                o.raw(br#","name":"writer""#);
            }
            o.owner(owner);
            o.raw(b"}");
        });
        text
    }

    pub(super) fn step_start(&mut self, owner: Owner) -> Item {
        let step = Item {
            id: self.fresh(),
            owner,
            ..Item::default()
        };
        self.steps.push(step);
        self.explicit(Some(owner));
        self.event(|o| {
            o.head("STEP_STARTED");
            o.id("stepName", 's', step.id);
            o.owner(owner);
            o.raw(b"}");
        });
        step
    }

    /// A subagent of `parent` (0: of the parent agent) starts.
    pub(super) fn subagent_start(&mut self, parent: Owner, described: bool) -> Item {
        let sub = Item {
            id: self.fresh(),
            owner: parent,
            ..Item::default()
        };
        self.subs.push(sub);
        self.event(|o| {
            o.head("SUBAGENT_STARTED");
            o.id("subagentRunId", 'a', sub.id);
            o.raw(br#","name":"helper""#);
            if described {
                o.raw(br#","description":"looks things up""#);
            }
            if parent != 0 {
                o.id("parentSubagentRunId", 'a', parent);
            }
            o.raw(b"}");
        });
        sub
    }

    /// A chunk that continues an open lane: with no id, or its own.
    fn chunk_more(&mut self, c: &mut Cursor<'_>) {
        let i = c.index(self.lanes.len());
        let Some(lane) = self.lanes.get(i) else {
            return;
        };
        let with_id = c.bool();
        let repeat = self.v1() && c.bool();
        let max = self.config.max_delta;
        let mut text = [0u8; ARGS];
        let len = args(lane.seed, &mut text);
        let piece = c.int_in_range(1, 24) as usize;
        let end = lane.sent.saturating_add(piece).min(len);
        let next = text.get(lane.sent..end).unwrap_or_default();
        self.event(|o| {
            match lane.lane {
                Lane::Text => {
                    o.head("TEXT_MESSAGE_CHUNK");
                    if with_id {
                        o.id("messageId", 'm', lane.id);
                    }
                    if repeat {
                        o.raw(br#","role":"assistant""#);
                    }
                    o.delta(c, max);
                }
                Lane::Tool => {
                    o.head("TOOL_CALL_CHUNK");
                    if with_id {
                        o.id("toolCallId", 'c', lane.id);
                    }
                    if repeat {
                        o.raw(br#","toolCallName":"#);
                        o.string(tool_name(lane.seed));
                    }
                    o.raw(br#","delta":"#);
                    o.ascii_string(next);
                }
                Lane::Reasoning => {
                    o.head("REASONING_MESSAGE_CHUNK");
                    if with_id {
                        o.id("messageId", 'q', lane.id);
                    }
                    o.delta(c, max);
                }
            }
            o.owner(lane.owner);
            o.raw(b"}");
        });
        if let Some(l) = self.lanes.items.get_mut(i) {
            l.sent = end;
        }
    }

    /// A state snapshot or a tool result with a large string value.
    fn large(&mut self, c: &mut Cursor<'_>) {
        let want = c.int_in_range(1, self.config.max_value) as usize;
        let room = self
            .out
            .room()
            .saturating_sub(self.closing().saturating_mul(FRAME_MAX))
            .saturating_sub(FRAME_MAX);
        let n = want.min(room);
        if n == 0 {
            return;
        }
        let snapshot = c.bool();
        let (message, call) = (self.fresh(), self.fresh());
        let mark = self.out.len();
        self.explicit(Some(0));
        self.framer.open(&mut self.out, self.events);
        if snapshot {
            self.out.head("STATE_SNAPSHOT");
            self.out.raw(br#","snapshot":{"blob":""#);
        } else {
            self.out.head("TOOL_CALL_RESULT");
            self.out.id("messageId", 'x', message);
            self.out.id("toolCallId", 'c', call);
            self.out.raw(br#","content":""#);
        }
        // Whole pieces of a text with escapes and multi-byte characters,
        // then plain letters.
        let piece = LARGE_PIECE.as_bytes();
        let mut left = n;
        while left >= piece.len() && !self.out.failed() {
            self.out.raw(piece);
            left = left.saturating_sub(piece.len());
        }
        for _ in 0..left {
            self.out.raw(b"z");
        }
        self.out.raw(if snapshot { b"\"}}" } else { b"\"}" });
        self.framer.close(&mut self.out);
        if self.out.failed() {
            self.out.reset(mark);
        } else {
            self.events = self.events.saturating_add(1);
            if snapshot {
                self.baseline = true;
                self.keys = 0;
            }
        }
    }

    /// A messages snapshot: one to three messages of the roles both
    /// dialects know, with fresh ids.
    fn messages_snapshot(&mut self, c: &mut Cursor<'_>) {
        let n = c.int_in_range(1, 3);
        let mut roles = [0u32; 3];
        for r in roles.iter_mut().take(n as usize) {
            *r = c.int_in_range(0, 4);
        }
        let base = self.fresh();
        self.next = self.next.saturating_add(4);
        self.explicit(None);
        self.event(|o| {
            o.head("MESSAGES_SNAPSHOT");
            o.raw(br#","messages":["#);
            for (k, &role) in roles.iter().take(n as usize).enumerate() {
                if k > 0 {
                    o.raw(b",");
                }
                let id = base.saturating_add(k as u32);
                o.raw(b"{");
                o.raw(br#""id":"h"#);
                o.number(id);
                o.raw(b"\",");
                o.raw(match role {
                    0 => br#""role":"user","content":"hello""#.as_slice(),
                    1 => br#""role":"system","content":"be brief""#,
                    2 => br#""role":"developer","content":"use tools""#,
                    3 => br#""role":"tool","content":"42","toolCallId":"k1""#,
                    _ => br#""role":"assistant","content":"on it","toolCalls":[{"id":"k1","type":"function","function":{"name":"calc","arguments":"{}"}}]"#,
                });
                o.raw(b"}");
            }
            o.raw(b"]}");
        });
    }

    /// Writes one event frame whose JSON, `head` then `tail`, is split
    /// over two `data:` lines there, all or nothing.
    pub(super) fn event_split(&mut self, head: &[u8], tail: &[u8]) {
        let mark = self.out.len();
        self.framer.open(&mut self.out, self.events);
        self.out.raw(head);
        self.framer.next_data_line(&mut self.out);
        self.out.raw(tail);
        self.framer.close(&mut self.out);
        if self.out.failed() {
            self.out.reset(mark);
        } else {
            self.events = self.events.saturating_add(1);
        }
    }

    /// Writes one event frame: what `body` writes (the event's JSON),
    /// framed, all or nothing.
    pub(super) fn event(&mut self, body: impl FnOnce(&mut Out<'_>)) {
        let mut json = [0u8; EVENT_MAX];
        let mut o = Out::new(&mut json);
        body(&mut o);
        let (len, failed) = (o.len(), o.failed());
        let json = json.get(..len).unwrap_or_default();
        let mark = self.out.len();
        if !failed {
            self.framer.frame(&mut self.out, self.events, json);
        }
        if failed || self.out.failed() {
            self.out.reset(mark);
        } else {
            self.events = self.events.saturating_add(1);
        }
    }

    pub(super) fn run_started(&mut self) {
        self.runs = self.runs.saturating_add(1);
        let run = self.runs;
        self.run = Some(run);
        self.run_base = self.next;
        self.explicit(None);
        self.event(|o| {
            o.head("RUN_STARTED");
            o.raw(br#","threadId":"t1""#);
            o.id("runId", 'u', run);
            o.raw(b"}");
        });
    }

    /// `RUN_ERROR`: the run ends, whatever is open.
    pub(super) fn run_error(&mut self) {
        self.reset_run();
        self.event(|o| {
            o.head("RUN_ERROR");
            o.raw(br#","message":"gen","code":"E1"}"#);
        });
    }

    /// Forgets the run's state (a new run starts from nothing).
    fn reset_run(&mut self) {
        self.run = None;
        for open in [
            &mut self.texts,
            &mut self.calls,
            &mut self.steps,
            &mut self.subs,
            &mut self.finished,
            &mut self.acts,
            &mut self.lanes,
        ] {
            open.clear();
        }
        self.span = None;
        self.baseline = false;
    }

    pub(super) fn text_end(&mut self, t: Item) {
        self.explicit(Some(t.owner));
        self.event(|o| {
            o.head("TEXT_MESSAGE_END");
            o.id("messageId", 'm', t.id);
            o.owner(t.owner);
            o.raw(b"}");
        });
    }

    pub(super) fn step_end(&mut self, s: Item) {
        self.explicit(Some(s.owner));
        self.event(|o| {
            o.head("STEP_FINISHED");
            o.id("stepName", 's', s.id);
            o.owner(s.owner);
            o.raw(b"}");
        });
    }

    /// The next `piece` bytes of call `i`'s arguments.
    fn tool_args(&mut self, i: usize, piece: usize) {
        let Some(call) = self.calls.get(i) else {
            return;
        };
        let mut text = [0u8; ARGS];
        let len = args(call.seed, &mut text);
        let end = call.sent.saturating_add(piece).min(len);
        let Some(delta) = text.get(call.sent..end).filter(|d| !d.is_empty()) else {
            return;
        };
        self.explicit(Some(call.owner));
        self.event(|o| {
            o.head("TOOL_CALL_ARGS");
            o.id("toolCallId", 'c', call.id);
            o.raw(br#","delta":"#);
            o.ascii_string(delta);
            o.owner(call.owner);
            o.raw(b"}");
        });
        if let Some(slot) = self.calls.items.get_mut(i) {
            slot.sent = end;
        }
    }

    /// Sends the rest of call `i`'s arguments, ends it and, if `result`,
    /// gives its result.
    fn tool_end(&mut self, i: usize, result: bool, c: &mut Cursor<'_>) {
        self.tool_args(i, ARGS);
        let Some(call) = self.calls.remove(i) else {
            return;
        };
        self.explicit(Some(call.owner));
        self.event(|o| {
            o.head("TOOL_CALL_END");
            o.id("toolCallId", 'c', call.id);
            o.owner(call.owner);
            o.raw(b"}");
        });
        if result {
            let id = self.fresh();
            let max = self.config.max_delta;
            self.event(|o| {
                o.head("TOOL_CALL_RESULT");
                o.id("messageId", 'x', id);
                o.id("toolCallId", 'c', call.id);
                o.raw(br#","content":"#);
                o.text(c, max);
                o.owner(call.owner);
                o.raw(b"}");
            });
        }
    }

    fn reasoning_message_end(&mut self) {
        let Some(mut span) = self.span else {
            return;
        };
        let Some(id) = span.message.take() else {
            return;
        };
        self.span = Some(span);
        self.explicit(Some(0));
        self.event(|o| {
            if span.legacy {
                o.head("THINKING_TEXT_MESSAGE_END");
            } else {
                o.head("REASONING_MESSAGE_END");
                o.id("messageId", 'q', id);
            }
            o.raw(b"}");
        });
    }

    fn reasoning_end(&mut self) {
        if self.span.is_some_and(|s| s.legacy) {
            self.reasoning_message_end();
        }
        let Some(span) = self.span.take() else {
            return;
        };
        self.explicit(Some(0));
        self.event(|o| {
            if span.legacy {
                o.head("THINKING_END");
            } else {
                o.head("REASONING_END");
                o.id("messageId", 'r', span.id);
            }
            o.raw(b"}");
        });
    }

    pub(super) fn subagent_end(&mut self, sub: Item, error: bool) {
        if let Some(i) = self.subs.position(|s| s.id == sub.id) {
            self.subs.remove(i);
        }
        if self.finished.len() >= MAX_OPEN {
            self.finished.remove(0);
        }
        self.finished.push(sub);
        self.explicit(Some(sub.id));
        self.event(|o| {
            if error {
                o.head("SUBAGENT_ERROR");
                o.id("subagentRunId", 'a', sub.id);
                o.raw(br#","message":"gave up"}"#);
            } else {
                o.head("SUBAGENT_FINISHED");
                o.id("subagentRunId", 'a', sub.id);
                o.raw(br#","outcome":{"type":"success"}}"#);
            }
        });
    }

    /// Closes every message, call, step and reasoning span (not the
    /// subagents, nor the run).
    pub(super) fn close_explicit(&mut self) {
        let mut empty = Cursor::new(&[]);
        while !self.calls.is_empty() {
            self.tool_end(0, false, &mut empty);
        }
        while let Some(t) = self.texts.remove(0) {
            self.text_end(t);
        }
        while let Some(s) = self.steps.remove(0) {
            self.step_end(s);
        }
        if self.span.is_some_and(|s| !s.legacy) {
            self.reasoning_message_end();
        }
        self.reasoning_end();
    }

    /// Closes everything open and finishes the run.
    pub(super) fn close_all(&mut self) {
        let Some(run) = self.run else {
            return;
        };
        self.close_explicit();
        while let Some(sub) = self.subs.first() {
            self.subagent_end(sub, false);
        }
        self.reset_run();
        self.event(|o| {
            o.head("RUN_FINISHED");
            o.raw(br#","threadId":"t1""#);
            o.id("runId", 'u', run);
            o.raw(b"}");
        });
    }
}

/// A piece of large value: escapes and multi-byte characters.
const LARGE_PIECE: &str = r#"lorem ipsum \"dolor\" sit\namet, é 東 😀 \\ consectetur \u00e9 "#;

/// Tool names the calls take.
const TOOL_NAMES: [&str; 4] = ["search", "get_weather", "read_file", "calc"];

/// The name of the tool a call with `seed` calls.
pub(super) fn tool_name(seed: u32) -> &'static str {
    let i = (seed as usize).checked_rem(TOOL_NAMES.len()).unwrap_or(0);
    TOOL_NAMES.get(i).copied().unwrap_or("f")
}

/// Bytes of a call's argument text at most.
pub(super) const ARGS: usize = 96;

/// A call's argument text (one JSON object, ASCII), from its seed.
pub(super) fn args(seed: u32, into: &mut [u8; ARGS]) -> usize {
    let mut o = Out::new(into);
    o.raw(br#"{"q":"item "#);
    o.number(seed);
    o.raw(br#"","n":"#);
    o.number(seed.wrapping_mul(31).checked_rem(1000).unwrap_or(0));
    if seed & 1 == 1 {
        o.raw(br#","tags":["a","b"]"#);
    }
    o.raw(b"}");
    o.len()
}
