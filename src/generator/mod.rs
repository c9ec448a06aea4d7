//! A generator of AG-UI streams for fuzzers (feature `generator`): the fuzzer's
//! bytes drive it, and what it writes is a valid stream by construction,
//! in either dialect — a run's lifecycle with interleaved text messages,
//! tool calls and their argument JSON, steps, state and JSON Patches,
//! reasoning (V1) or thinking (V0), custom and raw events, several runs.
//! Byte mutation almost never gets that deep.
//!
//! As in wasm-smith, a configuration is drawn first ([`GenConfig`]: which
//! event families are on, and maximums only — swarm testing); then each
//! step chooses among the events legal now, given what is open. When the
//! bytes, the event budget or the output buffer run out, everything open
//! is closed and the run finished: every prefix of the input gives a
//! complete valid stream. The generator allocates nothing: it writes into
//! the caller's buffer.
//!
//! With [`generate_invalid`], the input may also choose **one violation**,
//! injected after a valid prefix (which rule, and where), and the verdict
//! the reference gives is recorded beside the stream ([`Expected`]), as
//! wasmtime records `KnownValid`: the frame, the stage and, for a
//! lifecycle rule, the [`Rule`].
//!
//! ```
//! use agui_stream::{Config, Event, FrameInfo, Pipeline, generator};
//! let mut out = [0u8; 8192];
//! let input = [7u8, 200, 13, 99, 1, 2, 3, 250, 17, 4, 5, 6, 7, 8, 9, 10];
//! let g = generator::generate(&input, &mut out);
//! let mut buf = [0u8; 4096];
//! let mut p = Pipeline::new(&mut buf, Config::new().dialect(g.dialect));
//! let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
//! p.push(&out[..g.len], &mut sink).unwrap();
//! let summary = p.finish(&mut sink).unwrap();
//! assert!(summary.is_complete());
//! ```

mod cursor;
mod write;

pub use cursor::Cursor;

use crate::check::verify::{Entity, Rule};
use crate::pipeline::error::Stage;
use crate::protocol::dialect::Dialect;
use write::Out;

/// Which event families a stream may have, and its maximums (drawn from
/// the input first, as wasm-smith's `Config`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GenConfig {
    /// The dialect the stream is valid in.
    pub dialect: Dialect,
    /// Text messages (START, CONTENT, END).
    pub text: bool,
    /// Tool calls (START, ARGS, END) and their results.
    pub tools: bool,
    /// Steps.
    pub steps: bool,
    /// State snapshots and JSON Patch deltas.
    pub state: bool,
    /// Reasoning (V1: `REASONING_*`) or thinking (V0: `THINKING_*`).
    pub reasoning: bool,
    /// `CUSTOM` and `RAW` events.
    pub custom: bool,
    /// More than one run.
    pub runs: bool,
    /// Most events in the stream (the closing ones come on top).
    pub max_events: u32,
    /// Most characters in a delta.
    pub max_delta: u32,
    /// Most entities of one kind open at once.
    pub max_open: u32,
    /// How events are framed.
    pub framing: Framing,
}

/// How a stream's events are framed (LF line ends; the reference reads CR
/// and CRLF differently in each dialect). Each option is used at some
/// frames, chosen by `seed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Framing {
    /// `data:` without the space after the colon.
    pub no_space: bool,
    /// `event:`, `id:` and `retry:` lines in a frame.
    pub fields: bool,
    /// Comment lines in a frame, and keep-alive blocks between frames.
    pub comments: bool,
    /// An event's JSON over several `data:` lines (split between members).
    pub split: bool,
    /// Picks the frames each option is used at.
    pub seed: u32,
}

impl Framing {
    /// `data: {json}` and a blank line, every frame.
    pub const PLAIN: Framing = Framing {
        no_space: false,
        fields: false,
        comments: false,
        split: false,
        seed: 0,
    };
}

impl GenConfig {
    /// A configuration drawn from `c`.
    pub fn draw(c: &mut Cursor<'_>) -> Self {
        let dialect = if c.bool() { Dialect::V0 } else { Dialect::V1 };
        let families = c.int_in_range(0, 127);
        let bit = |i: u32| families & (1 << i) != 0;
        GenConfig {
            dialect,
            text: !bit(0),
            tools: !bit(1),
            steps: bit(2),
            state: bit(3),
            reasoning: bit(4),
            custom: bit(5),
            runs: bit(6),
            max_events: c.int_in_range(1, 200),
            max_delta: c.int_in_range(1, 48),
            max_open: c.int_in_range(1, MAX_OPEN as u32),
            framing: {
                let f = c.int_in_range(0, 15);
                Framing {
                    no_space: f & 1 != 0,
                    fields: f & 2 != 0,
                    comments: f & 4 != 0,
                    split: f & 8 != 0,
                    seed: c.int_in_range(0, u32::MAX),
                }
            },
        }
        .sanitized()
    }

    /// The same, narrowed to what the limits allow.
    pub fn sanitized(mut self) -> Self {
        self.max_open = self.max_open.clamp(1, MAX_OPEN as u32);
        self.max_delta = self.max_delta.clamp(1, MAX_DELTA as u32);
        self
    }
}

/// Most entities of one kind open at once (the pipeline holds more).
pub const MAX_OPEN: usize = 4;
/// Most characters in a generated delta.
pub const MAX_DELTA: usize = 48;

/// The verdict a generated stream must get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Expected {
    /// Valid, its last run finished.
    Valid,
    /// The frame at this index (from 0) breaks a rule of this stage
    /// (`rule`: the lifecycle rule, for [`Stage::Verify`]).
    Violation {
        /// The frame's index.
        frame: u64,
        /// The stage that rejects it.
        stage: Stage,
        /// The lifecycle rule it breaks.
        rule: Option<Rule>,
    },
}

/// What [`generate`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generated {
    /// Bytes written to the output.
    pub len: usize,
    /// The dialect the stream is valid in.
    pub dialect: Dialect,
    /// The configuration drawn.
    pub config: GenConfig,
    /// Events written.
    pub events: u32,
    /// The verdict the stream must get.
    pub expected: Expected,
}

/// Writes into `out` the stream `input` drives: valid in
/// [`Generated::dialect`], complete (its last run finished). The
/// generator keeps room to close what may be open: an output buffer under
/// about 4 KiB gets nothing (`len` 0); 16 KiB holds a long run.
pub fn generate(input: &[u8], out: &mut [u8]) -> Generated {
    generate_with(input, out, GenOptions::new())
}

/// As [`generate`], but the input may choose one violation, injected
/// after a valid prefix; [`Generated::expected`] says which. The stream
/// ends with the violating frame.
pub fn generate_invalid(input: &[u8], out: &mut [u8]) -> Generated {
    generate_with(input, out, GenOptions::new().violations(true))
}

/// What the caller fixes of a generated stream; the input draws the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GenOptions {
    dialect: Option<Dialect>,
    framing: Option<Framing>,
    violations: bool,
}

impl GenOptions {
    /// Nothing fixed: the input draws the dialect and the framing; no
    /// violation.
    pub const fn new() -> Self {
        GenOptions {
            dialect: None,
            framing: None,
            violations: false,
        }
    }

    /// The dialect, instead of drawing it.
    pub const fn dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = Some(dialect);
        self
    }

    /// The framing, instead of drawing it ([`Framing::PLAIN`]: `data:
    /// {json}` and a blank line).
    pub const fn framing(mut self, framing: Framing) -> Self {
        self.framing = Some(framing);
        self
    }

    /// Whether the input may choose a violation ([`generate_invalid`]).
    pub const fn violations(mut self, on: bool) -> Self {
        self.violations = on;
        self
    }
}

/// [`generate`] with `options` fixing what they fix.
pub fn generate_with(input: &[u8], out: &mut [u8], options: GenOptions) -> Generated {
    let mut c = Cursor::new(input);
    let mut config = GenConfig::draw(&mut c);
    if let Some(d) = options.dialect {
        config.dialect = d;
    }
    if let Some(f) = options.framing {
        config.framing = f;
    }
    // About half the inputs (when asked) ask for a violation; which and
    // where, the bytes decide as the stream goes.
    let violate = options.violations && c.ratio(1, 2);
    let mut g = Generator::new(config, Out::new(out));
    g.violate = violate;
    g.run(&mut c);
    Generated {
        len: g.out.len(),
        dialect: config.dialect,
        config,
        events: g.events,
        expected: g.expected,
    }
}

/// Ids of one kind open at once.
#[derive(Clone, Copy, Debug)]
struct Open {
    ids: [u32; MAX_OPEN],
    len: usize,
}

impl Open {
    const fn new() -> Self {
        Open {
            ids: [0; MAX_OPEN],
            len: 0,
        }
    }

    fn as_slice(&self) -> &[u32] {
        self.ids.get(..self.len).unwrap_or_default()
    }

    fn push(&mut self, id: u32) {
        if let Some(slot) = self.ids.get_mut(self.len) {
            *slot = id;
            self.len = self.len.saturating_add(1);
        }
    }

    /// Removes the `i`th; its id.
    fn remove(&mut self, i: usize) -> Option<u32> {
        let id = *self.as_slice().get(i)?;
        let len = self.len;
        self.ids.copy_within(i.saturating_add(1)..len, i);
        self.len = len.saturating_sub(1);
        Some(id)
    }
}

/// A tool call open: its id, and its arguments sent so far.
#[derive(Clone, Copy, Debug)]
struct Call {
    id: u32,
    /// How much of the argument text ([`args`]) went out.
    sent: usize,
    seed: u32,
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
    StepStart,
    StepEnd,
    Snapshot,
    Delta,
    ReasoningStart,
    ReasoningMessageStart,
    ReasoningContent,
    ReasoningMessageEnd,
    ReasoningEnd,
    Custom,
    Raw,
    RunEnd,
}

/// The most bytes one generated event's JSON takes (a 48-character delta
/// of 6-byte escapes, ids, names).
const EVENT_MAX: usize = 512;
/// The most bytes its frame takes (fields, comments, split data lines).
const FRAME_MAX: usize = EVENT_MAX + 256;

struct Generator<'b> {
    config: GenConfig,
    out: Out<'b>,
    events: u32,
    /// Counter for fresh ids.
    next: u32,
    run: Option<u32>,
    runs: u32,
    texts: Open,
    calls: [Call; MAX_OPEN],
    ncalls: usize,
    steps: Open,
    /// A state baseline exists (a snapshot), and its keys so far.
    baseline: bool,
    keys: u32,
    /// V1: a reasoning span and its message; V0: a thinking step and its
    /// message.
    span: Option<u32>,
    span_message: Option<u32>,
    /// A violation is to be injected; the verdict once it is.
    violate: bool,
    expected: Expected,
}

/// The violations [`Generator::inject`] knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Violation {
    RunStillActive,
    TextAlreadyOpen,
    TextNotOpen,
    ToolAlreadyOpen,
    ToolNotOpen,
    StepAlreadyOpen,
    StepNotOpen,
    OpenAtRunFinished,
    AfterRunFinished,
    AfterRunError,
    SchemaDelta,
    JsonSyntax,
}

impl<'b> Generator<'b> {
    fn new(config: GenConfig, out: Out<'b>) -> Self {
        Generator {
            config,
            out,
            events: 0,
            next: 0,
            run: None,
            runs: 0,
            texts: Open::new(),
            calls: [Call {
                id: 0,
                sent: 0,
                seed: 0,
            }; MAX_OPEN],
            ncalls: 0,
            steps: Open::new(),
            baseline: false,
            keys: 0,
            span: None,
            span_message: None,
            violate: false,
            expected: Expected::Valid,
        }
    }

    fn fresh(&mut self) -> u32 {
        self.next = self.next.saturating_add(1);
        self.next
    }

    /// Bytes to keep free to close what is open and finish the run.
    fn reserve(&self) -> usize {
        let open = self
            .texts
            .len
            .saturating_add(self.ncalls)
            .saturating_add(self.steps.len)
            .saturating_add(4);
        // A call still owes the rest of its arguments (one ARGS) and END.
        open.saturating_add(self.ncalls).saturating_mul(FRAME_MAX)
    }

    fn room(&self) -> bool {
        self.out.room() >= self.reserve().saturating_add(FRAME_MAX)
    }

    fn run(&mut self, c: &mut Cursor<'_>) {
        if !self.room() {
            return;
        }
        if self.violate && c.ratio(1, 16) {
            // The first event is not RUN_STARTED.
            let frame = u64::from(self.events);
            self.event(|o| {
                o.head("STEP_STARTED");
                o.raw(br#","stepName":"s0"}"#);
            });
            self.violated(frame, Stage::Verify, Some(Rule::FirstEvent));
            return;
        }
        self.run_started();
        while !c.is_empty() && self.events < self.config.max_events && self.room() {
            if self.violate && c.ratio(1, 12) {
                self.inject(c);
                return;
            }
            let mut legal = [Action::RunEnd; 18];
            let n = self.legal(&mut legal);
            let Some(&action) = legal.get(c.index(n)) else {
                break;
            };
            if action == Action::RunEnd {
                if self.config.runs && self.room() {
                    self.close_all();
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

    fn violated(&mut self, frame: u64, stage: Stage, rule: Option<Rule>) {
        self.violate = false;
        self.expected = Expected::Violation { frame, stage, rule };
    }

    /// Writes one violation the state allows, chosen by `c`, as the
    /// stream's last frame.
    fn inject(&mut self, c: &mut Cursor<'_>) {
        use Violation as V;
        let mut options = [V::RunStillActive; 12];
        let mut n = 0usize;
        let open_kinds = usize::from(self.texts.len > 0)
            .saturating_add(usize::from(self.ncalls > 0))
            .saturating_add(usize::from(self.steps.len > 0))
            .saturating_add(usize::from(self.span.is_some()));
        for (v, ok) in [
            (V::RunStillActive, true),
            (V::TextAlreadyOpen, self.texts.len > 0),
            (V::TextNotOpen, true),
            (V::ToolAlreadyOpen, self.ncalls > 0),
            (V::ToolNotOpen, true),
            (V::StepAlreadyOpen, self.steps.len > 0),
            (V::StepNotOpen, true),
            (V::OpenAtRunFinished, open_kinds == 1 && self.span.is_none()),
            (V::AfterRunFinished, true),
            (V::AfterRunError, true),
            (V::SchemaDelta, true),
            (V::JsonSyntax, true),
        ] {
            if ok && let Some(slot) = options.get_mut(n) {
                *slot = v;
                n = n.saturating_add(1);
            }
        }
        let Some(&v) = options.get(c.index(n)) else {
            return;
        };
        let fresh = self.fresh().saturating_add(1000);
        let first_text = self.texts.as_slice().first().copied();
        let first_call = self
            .calls
            .get(..self.ncalls)
            .and_then(|c| c.first())
            .map(|c| c.id);
        let first_step = self.steps.as_slice().first().copied();
        let verify = |rule| (Stage::Verify, Some(rule));
        let (stage, rule) = match v {
            V::RunStillActive => {
                self.run_started();
                verify(Rule::RunStillActive)
            }
            V::TextAlreadyOpen => {
                let id = first_text.unwrap_or(0);
                self.event(|o| {
                    o.head("TEXT_MESSAGE_START");
                    o.id("messageId", 'm', id);
                    o.raw(br#","role":"assistant"}"#);
                });
                verify(Rule::AlreadyOpen(Entity::TextMessage))
            }
            V::TextNotOpen => {
                self.event(|o| {
                    o.head("TEXT_MESSAGE_CONTENT");
                    o.id("messageId", 'm', fresh);
                    o.raw(br#","delta":"x"}"#);
                });
                verify(Rule::NotOpen(Entity::TextMessage))
            }
            V::ToolAlreadyOpen => {
                let id = first_call.unwrap_or(0);
                self.event(|o| {
                    o.head("TOOL_CALL_START");
                    o.id("toolCallId", 'c', id);
                    o.raw(br#","toolCallName":"search"}"#);
                });
                verify(Rule::AlreadyOpen(Entity::ToolCall))
            }
            V::ToolNotOpen => {
                self.event(|o| {
                    o.head("TOOL_CALL_ARGS");
                    o.id("toolCallId", 'c', fresh);
                    o.raw(br#","delta":"{}"}"#);
                });
                verify(Rule::NotOpen(Entity::ToolCall))
            }
            V::StepAlreadyOpen => {
                let id = first_step.unwrap_or(0);
                self.event(|o| {
                    o.head("STEP_STARTED");
                    o.id("stepName", 's', id);
                    o.raw(b"}");
                });
                verify(Rule::AlreadyOpen(Entity::Step))
            }
            V::StepNotOpen => {
                self.step_end(fresh);
                verify(Rule::NotOpen(Entity::Step))
            }
            V::OpenAtRunFinished => {
                let entity = if first_text.is_some() {
                    Entity::TextMessage
                } else if first_call.is_some() {
                    Entity::ToolCall
                } else {
                    Entity::Step
                };
                let run = self.run.unwrap_or(0);
                self.event(|o| {
                    o.head("RUN_FINISHED");
                    o.raw(br#","threadId":"t1""#);
                    o.id("runId", 'u', run);
                    o.raw(b"}");
                });
                verify(Rule::OpenAtRunFinished(entity))
            }
            V::AfterRunFinished | V::AfterRunError => {
                if v == V::AfterRunFinished {
                    self.close_all();
                } else {
                    self.event(|o| {
                        o.head("RUN_ERROR");
                        o.raw(br#","message":"gen"}"#);
                    });
                }
                self.event(|o| {
                    o.head("STEP_STARTED");
                    o.id("stepName", 's', fresh);
                    o.raw(b"}");
                });
                let rule = if v == V::AfterRunFinished {
                    Rule::AfterRunFinished
                } else {
                    Rule::AfterRunError
                };
                let frame = u64::from(self.events.saturating_sub(1));
                return self.violated(frame, Stage::Verify, Some(rule));
            }
            V::SchemaDelta => {
                self.event(|o| {
                    o.head("TEXT_MESSAGE_CONTENT");
                    o.id("messageId", 'm', first_text.unwrap_or(fresh));
                    o.raw(br#","delta":7}"#);
                });
                (Stage::Schema, None)
            }
            V::JsonSyntax => {
                self.event(|o| {
                    o.head("CUSTOM");
                    o.raw(br#","name":"gen","value":[1,}"#);
                });
                (Stage::Json, None)
            }
        };
        let frame = u64::from(self.events.saturating_sub(1));
        self.violated(frame, stage, rule);
    }

    /// The actions legal now, into `into`; how many.
    fn legal(&self, into: &mut [Action; 18]) -> usize {
        let cfg = &self.config;
        let can_open = |n: usize| n < cfg.max_open as usize;
        let v1 = cfg.dialect == Dialect::V1;
        let candidates = [
            (Action::TextStart, cfg.text && can_open(self.texts.len)),
            (Action::TextContent, self.texts.len > 0),
            (Action::TextEnd, self.texts.len > 0),
            (Action::ToolStart, cfg.tools && can_open(self.ncalls)),
            (Action::ToolArgs, self.ncalls > 0),
            (Action::ToolEnd, self.ncalls > 0),
            (Action::StepStart, cfg.steps && can_open(self.steps.len)),
            (Action::StepEnd, self.steps.len > 0),
            (Action::Snapshot, cfg.state),
            (Action::Delta, cfg.state && self.baseline),
            (Action::ReasoningStart, cfg.reasoning && self.span.is_none()),
            (
                Action::ReasoningMessageStart,
                self.span.is_some() && self.span_message.is_none(),
            ),
            (Action::ReasoningContent, self.span_message.is_some()),
            (Action::ReasoningMessageEnd, self.span_message.is_some()),
            (
                Action::ReasoningEnd,
                self.span.is_some() && (v1 || self.span_message.is_none()),
            ),
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

    fn act(&mut self, action: Action, c: &mut Cursor<'_>) {
        let v1 = self.config.dialect == Dialect::V1;
        match action {
            Action::TextStart => {
                let id = self.fresh();
                self.texts.push(id);
                self.event(|o| {
                    o.head("TEXT_MESSAGE_START");
                    o.id("messageId", 'm', id);
                    o.raw(br#","role":"assistant"}"#);
                });
            }
            Action::TextContent => {
                let i = c.index(self.texts.len);
                let id = self.texts.as_slice().get(i).copied().unwrap_or(0);
                let max = self.config.max_delta;
                self.event(|o| {
                    o.head("TEXT_MESSAGE_CONTENT");
                    o.id("messageId", 'm', id);
                    o.delta(c, max);
                    o.raw(b"}");
                });
            }
            Action::TextEnd => {
                let i = c.index(self.texts.len);
                if let Some(id) = self.texts.remove(i) {
                    self.text_end(id);
                }
            }
            Action::ToolStart => {
                let id = self.fresh();
                let seed = c.int_in_range(0, 255);
                if let Some(slot) = self.calls.get_mut(self.ncalls) {
                    *slot = Call { id, sent: 0, seed };
                    self.ncalls = self.ncalls.saturating_add(1);
                }
                // A parent message, when one is open.
                let parent = match self.texts.len {
                    0 => None,
                    n => self.texts.as_slice().get(c.index(n)).copied(),
                };
                self.event(|o| {
                    o.head("TOOL_CALL_START");
                    o.id("toolCallId", 'c', id);
                    o.raw(br#","toolCallName":"#);
                    o.string(tool_name(seed));
                    if let Some(p) = parent {
                        o.id("parentMessageId", 'm', p);
                    }
                    o.raw(b"}");
                });
            }
            Action::ToolArgs => {
                let i = c.index(self.ncalls);
                let piece = c.int_in_range(1, 24) as usize;
                self.tool_args(i, piece);
            }
            Action::ToolEnd => {
                let i = c.index(self.ncalls);
                let result = c.bool();
                self.tool_end(i, result, c);
            }
            Action::StepStart => {
                let id = self.fresh();
                self.steps.push(id);
                self.event(|o| {
                    o.head("STEP_STARTED");
                    o.id("stepName", 's', id);
                    o.raw(b"}");
                });
            }
            Action::StepEnd => {
                let i = c.index(self.steps.len);
                if let Some(id) = self.steps.remove(i) {
                    self.step_end(id);
                }
            }
            Action::Snapshot => {
                let n = c.int_in_range(0, 3);
                self.baseline = true;
                self.keys = n;
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
                self.event(|o| {
                    o.head("STATE_DELTA");
                    o.raw(br#","delta":[{"op":"add","path":"/k"#);
                    o.number(key);
                    o.raw(br#"","value":"#);
                    o.number(value);
                    o.raw(b"}]}");
                });
            }
            Action::ReasoningStart => {
                let id = self.fresh();
                self.span = Some(id);
                self.event(|o| {
                    if v1 {
                        o.head("REASONING_START");
                        o.id("messageId", 'r', id);
                    } else {
                        o.head("THINKING_START");
                    }
                    o.raw(b"}");
                });
            }
            Action::ReasoningMessageStart => {
                let id = self.fresh();
                self.span_message = Some(id);
                self.event(|o| {
                    if v1 {
                        o.head("REASONING_MESSAGE_START");
                        o.id("messageId", 'q', id);
                        o.raw(br#","role":"reasoning""#);
                    } else {
                        o.head("THINKING_TEXT_MESSAGE_START");
                    }
                    o.raw(b"}");
                });
            }
            Action::ReasoningContent => {
                let id = self.span_message.unwrap_or(0);
                let max = self.config.max_delta;
                self.event(|o| {
                    if v1 {
                        o.head("REASONING_MESSAGE_CONTENT");
                        o.id("messageId", 'q', id);
                    } else {
                        o.head("THINKING_TEXT_MESSAGE_CONTENT");
                    }
                    o.delta(c, max);
                    o.raw(b"}");
                });
            }
            Action::ReasoningMessageEnd => self.reasoning_message_end(),
            Action::ReasoningEnd => self.reasoning_end(),
            Action::Custom => {
                let value = c.int_in_range(0, 99);
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

    /// Writes one event frame: what `body` writes between `data: ` and the
    /// blank line (the event's JSON), all or nothing.
    fn event(&mut self, body: impl FnOnce(&mut Out<'_>)) {
        let mut json = [0u8; EVENT_MAX];
        let mut o = Out::new(&mut json);
        body(&mut o);
        let (len, failed) = (o.len(), o.failed());
        let json = json.get(..len).unwrap_or_default();
        let mark = self.out.len();
        if !failed {
            self.frame(json);
        }
        if failed || self.out.failed() {
            self.out.reset(mark);
        } else {
            self.events = self.events.saturating_add(1);
        }
    }

    /// The next draw of the framing's own generator (xorshift32).
    fn framing_draw(&mut self) -> u32 {
        let mut x = self.config.framing.seed | 1;
        x ^= x.wrapping_shl(13);
        x ^= x.wrapping_shr(17);
        x ^= x.wrapping_shl(5);
        self.config.framing.seed = x;
        x
    }

    /// Writes one frame holding `json`, as the framing says.
    fn frame(&mut self, json: &[u8]) {
        let f = self.config.framing;
        if f.comments && self.framing_draw() & 3 == 0 {
            self.out.raw(b": keep-alive\n\n");
        }
        if f.fields && self.framing_draw() & 1 == 0 {
            self.out.raw(b"event: agui\nid: ");
            self.out.number(self.events);
            self.out.raw(b"\nretry: 1000\n");
        }
        if f.comments && self.framing_draw() & 3 == 0 {
            self.out.raw(b": a comment\n");
        }
        let prefix: &[u8] = if f.no_space { b"data:" } else { b"data: " };
        self.out.raw(prefix);
        let mut from = 0usize;
        if f.split {
            // After a comma outside strings, before a member's name.
            let (mut in_string, mut escape) = (false, false);
            for (i, w) in json.windows(2).enumerate() {
                let (Some(&b), Some(&next)) = (w.first(), w.get(1)) else {
                    continue;
                };
                if in_string {
                    match b {
                        _ if escape => escape = false,
                        b'\\' => escape = true,
                        b'"' => in_string = false,
                        _ => {}
                    }
                    continue;
                }
                if b == b'"' {
                    in_string = true;
                } else if b == b',' && next == b'"' && self.framing_draw() & 1 == 0 {
                    let at = i.saturating_add(1);
                    self.out.raw(json.get(from..at).unwrap_or_default());
                    self.out.raw(b"\n");
                    self.out.raw(prefix);
                    from = at;
                }
            }
        }
        self.out.raw(json.get(from..).unwrap_or_default());
        self.out.raw(b"\n\n");
    }

    fn run_started(&mut self) {
        self.runs = self.runs.saturating_add(1);
        let run = self.runs;
        self.run = Some(run);
        self.event(|o| {
            o.head("RUN_STARTED");
            o.raw(br#","threadId":"t1""#);
            o.id("runId", 'u', run);
            o.raw(b"}");
        });
    }

    fn text_end(&mut self, id: u32) {
        self.event(|o| {
            o.head("TEXT_MESSAGE_END");
            o.id("messageId", 'm', id);
            o.raw(b"}");
        });
    }

    fn step_end(&mut self, id: u32) {
        self.event(|o| {
            o.head("STEP_FINISHED");
            o.id("stepName", 's', id);
            o.raw(b"}");
        });
    }

    /// The next `piece` bytes of call `i`'s arguments.
    fn tool_args(&mut self, i: usize, piece: usize) {
        let Some(call) = self.calls.get(i).copied() else {
            return;
        };
        let mut text = [0u8; ARGS];
        let len = args(call.seed, &mut text);
        let end = call.sent.saturating_add(piece).min(len);
        let Some(delta) = text.get(call.sent..end).filter(|d| !d.is_empty()) else {
            return;
        };
        self.event(|o| {
            o.head("TOOL_CALL_ARGS");
            o.id("toolCallId", 'c', call.id);
            o.raw(br#","delta":"#);
            o.ascii_string(delta);
            o.raw(b"}");
        });
        if let Some(slot) = self.calls.get_mut(i) {
            slot.sent = end;
        }
    }

    /// Sends the rest of call `i`'s arguments, ends it and, if `result`,
    /// gives its result.
    fn tool_end(&mut self, i: usize, result: bool, c: &mut Cursor<'_>) {
        let Some(call) = self
            .calls
            .get(..self.ncalls)
            .and_then(|c| c.get(i))
            .copied()
        else {
            return;
        };
        self.tool_args(i, ARGS);
        self.event(|o| {
            o.head("TOOL_CALL_END");
            o.id("toolCallId", 'c', call.id);
            o.raw(b"}");
        });
        let len = self.ncalls;
        self.calls.copy_within(i.saturating_add(1)..len, i);
        self.ncalls = len.saturating_sub(1);
        if result {
            let id = self.fresh();
            let max = self.config.max_delta;
            self.event(|o| {
                o.head("TOOL_CALL_RESULT");
                o.id("messageId", 'x', id);
                o.id("toolCallId", 'c', call.id);
                o.raw(br#","content":"#);
                o.text(c, max);
                o.raw(b"}");
            });
        }
    }

    fn reasoning_message_end(&mut self) {
        let Some(id) = self.span_message.take() else {
            return;
        };
        let v1 = self.config.dialect == Dialect::V1;
        self.event(|o| {
            if v1 {
                o.head("REASONING_MESSAGE_END");
                o.id("messageId", 'q', id);
            } else {
                o.head("THINKING_TEXT_MESSAGE_END");
            }
            o.raw(b"}");
        });
    }

    fn reasoning_end(&mut self) {
        if self.config.dialect == Dialect::V0 {
            self.reasoning_message_end();
        }
        let Some(id) = self.span.take() else {
            return;
        };
        let v1 = self.config.dialect == Dialect::V1;
        self.event(|o| {
            if v1 {
                o.head("REASONING_END");
                o.id("messageId", 'r', id);
            } else {
                o.head("THINKING_END");
            }
            o.raw(b"}");
        });
    }

    /// Closes everything open and finishes the run.
    fn close_all(&mut self) {
        let Some(run) = self.run.take() else {
            return;
        };
        let mut empty = Cursor::new(&[]);
        while self.ncalls > 0 {
            self.tool_end(0, false, &mut empty);
        }
        while let Some(id) = self.texts.remove(0) {
            self.text_end(id);
        }
        while let Some(id) = self.steps.remove(0) {
            self.step_end(id);
        }
        self.reasoning_message_end();
        self.reasoning_end();
        self.event(|o| {
            o.head("RUN_FINISHED");
            o.raw(br#","threadId":"t1""#);
            o.id("runId", 'u', run);
            o.raw(b"}");
        });
        self.baseline = false;
    }
}

/// Tool names the calls take.
const TOOL_NAMES: [&str; 4] = ["search", "get_weather", "read_file", "calc"];

/// The name of the tool a call with `seed` calls.
fn tool_name(seed: u32) -> &'static str {
    let i = (seed as usize).checked_rem(TOOL_NAMES.len()).unwrap_or(0);
    TOOL_NAMES.get(i).copied().unwrap_or("f")
}

/// Bytes of a call's argument text at most.
const ARGS: usize = 96;

/// A call's argument text (one JSON object, ASCII), from its seed.
fn args(seed: u32, into: &mut [u8; ARGS]) -> usize {
    let mut o = write::Out::new(into);
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

#[cfg(test)]
mod tests;
