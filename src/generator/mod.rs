//! A generator of AG-UI streams for fuzzers (feature `generator`): the
//! fuzzer's bytes drive it, and what it writes is a valid stream by
//! construction, in either dialect — a run's lifecycle with interleaved
//! text messages, tool calls and their argument JSON, chunk lanes, steps,
//! state snapshots and JSON Patches, reasoning (or legacy thinking),
//! activity, messages snapshots, subagents and their lanes, custom and raw
//! events, large values, several runs. Byte mutation almost never gets
//! that deep.
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
//! wasmtime records `KnownValid`: the frame, and the lifecycle [`Rule`],
//! the [`ChunkError`], or the stage (schema, JSON).
//!
//! Framing is a layer of its own ([`Framing`]): line ends, comments and
//! keep-alives, `event:`/`id:`/`retry:` fields, `data:` without a space,
//! an event split over several `data:` lines, a byte order mark. The cut points of pushes
//! are drawn apart ([`Generated::pieces`]). A stream ends with a
//! `: agui-gen <hex>` comment carrying the generator's input
//! ([`envelope`] reads it back), so a saved stream can be generated
//! again when the generator changes.
//!
//! ```
//! use agui_stream::{Config, Event, FrameInfo, Pipeline, generator};
//! let mut out = [0u8; 8192];
//! let input = [7u8, 200, 13, 99, 1, 2, 3, 250, 17, 4, 5, 6, 7, 8, 9, 10];
//! let g = generator::generate(&input, &mut out);
//! let stream = &out[..g.len];
//! let mut buf = [0u8; 4096];
//! let mut p = Pipeline::new(&mut buf, Config::new().dialect(g.dialect));
//! let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
//! for piece in g.pieces(stream) {
//!     p.push(piece, &mut sink).unwrap();
//! }
//! let summary = p.finish(&mut sink).unwrap();
//! assert!(summary.is_complete());
//! ```
//!
//! With the `arbitrary` feature (which needs `std`), a cargo-fuzz target
//! takes a generated case directly:
//!
//! ```ignore
//! fuzz_target!(|case: agui_stream::generator::GeneratedStream| {
//!     let verdict = my_consumer(case.pieces());
//!     assert_eq!(verdict.is_ok(), case.expected.is_valid());
//! });
//! ```

#[cfg(feature = "arbitrary")]
mod arbitrary;
mod cursor;
mod framing;
mod stream;
mod violation;
mod write;

#[cfg(feature = "arbitrary")]
pub use arbitrary::GeneratedStream;
pub use cursor::Cursor;
pub use framing::{Framing, LineEnds, Pieces, envelope};

use crate::check::normalize::ChunkError;
use crate::check::verify::Rule;
use crate::pipeline::error::{Error, ErrorKind, Stage};
use crate::protocol::dialect::Dialect;
use stream::Generator;
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
    /// Chunk lanes (`TEXT_MESSAGE_CHUNK`, `TOOL_CALL_CHUNK`, and in V1
    /// `REASONING_MESSAGE_CHUNK`).
    pub chunks: bool,
    /// Steps.
    pub steps: bool,
    /// State snapshots and JSON Patch deltas.
    pub state: bool,
    /// Reasoning: V1 `REASONING_*` (and legacy `THINKING_*`, which V1
    /// translates) and `REASONING_ENCRYPTED_VALUE`; V0 `THINKING_*`.
    pub reasoning: bool,
    /// `ACTIVITY_SNAPSHOT` and `ACTIVITY_DELTA`.
    pub activity: bool,
    /// `MESSAGES_SNAPSHOT`.
    pub snapshots: bool,
    /// Subagents (V1), and events and lanes attributed to them. A run
    /// with subagents ends after about 20 fresh ids (the next, if `runs`,
    /// starts anew), so that its owner records and subagents fit a
    /// [`Pipeline`](crate::Pipeline) of the default capacities.
    pub subagents: bool,
    /// `CUSTOM` and `RAW` events.
    pub custom: bool,
    /// More than one run (some ending in `RUN_ERROR`).
    pub runs: bool,
    /// Large values (state snapshots and tool results of up to
    /// `max_value` bytes).
    pub large: bool,
    /// Most events in the stream (the closing ones come on top).
    pub max_events: u32,
    /// Most characters in a delta.
    pub max_delta: u32,
    /// Most entities of one kind open at once.
    pub max_open: u32,
    /// Most bytes in a large value.
    pub max_value: u32,
    /// How events are framed.
    pub framing: Framing,
}

impl GenConfig {
    /// A configuration drawn from `c` (about 16 bytes). An input that has
    /// run out draws the start of every range: an empty input is a V1
    /// stream of text messages and tool calls, plainly framed.
    ///
    /// ```
    /// use agui_stream::Dialect;
    /// use agui_stream::generator::{Cursor, GenConfig, LineEnds};
    /// let config = GenConfig::draw(&mut Cursor::new(&[]));
    /// assert_eq!(config.dialect, Dialect::V1);
    /// assert!(config.text && config.tools && !config.subagents);
    /// assert_eq!(config.framing.line_ends, LineEnds::Lf);
    /// ```
    pub fn draw(c: &mut Cursor<'_>) -> Self {
        let dialect = if c.bool() { Dialect::V0 } else { Dialect::V1 };
        let families = c.int_in_range(0, 0xfff);
        let bit = |i: u32| families & (1 << i) != 0;
        GenConfig {
            dialect,
            text: !bit(0),
            tools: !bit(1),
            chunks: bit(2),
            steps: bit(3),
            state: bit(4),
            reasoning: bit(5),
            activity: bit(6),
            snapshots: bit(7),
            subagents: bit(8),
            custom: bit(9),
            runs: bit(10),
            large: bit(11),
            max_events: c.int_in_range(1, 300),
            max_delta: c.int_in_range(1, MAX_DELTA as u32),
            max_open: c.int_in_range(1, MAX_OPEN as u32),
            max_value: c.int_in_range(1, 1 << 16),
            framing: {
                let f = c.int_in_range(0, 127);
                Framing {
                    line_ends: match (f >> 4) & 3 {
                        0 => LineEnds::Lf,
                        1 => LineEnds::CrLf,
                        2 => LineEnds::Cr,
                        _ => LineEnds::Mixed,
                    },
                    no_space: f & 1 != 0,
                    fields: f & 2 != 0,
                    comments: f & 4 != 0,
                    split: f & 8 != 0,
                    bom: f & 64 != 0,
                    seed: c.int_in_range(0, u32::MAX),
                }
            },
        }
        .sanitized()
    }

    /// `stream` cut at the points this configuration draws (from its
    /// framing's seed, apart from the framing's own draws).
    pub fn pieces<'s>(&self, stream: &'s [u8]) -> Pieces<'s> {
        Pieces::new(stream, self.framing.seed.rotate_left(16))
    }

    /// The same, narrowed to what the dialect has and the limits allow
    /// (V0 streams have no subagents: the V0 reference checks none of
    /// their rules).
    pub fn sanitized(mut self) -> Self {
        self.max_open = self.max_open.clamp(1, MAX_OPEN as u32);
        self.max_delta = self.max_delta.clamp(1, MAX_DELTA as u32);
        self.max_value = self.max_value.clamp(1, 1 << 16);
        if self.dialect == Dialect::V0 {
            self.subagents = false;
        }
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
    /// Valid, its last run finished (or errored).
    Valid,
    /// The frame at this index (from 0) is rejected, for this reason.
    Violation {
        /// The frame's index.
        frame: u64,
        /// Why.
        reason: Reason,
    },
}

impl Expected {
    /// Whether the stream is valid.
    pub const fn is_valid(&self) -> bool {
        matches!(self, Expected::Valid)
    }

    /// The stage that rejects the stream (`None`: valid).
    pub const fn stage(&self) -> Option<Stage> {
        match self {
            Expected::Valid => None,
            Expected::Violation { reason, .. } => Some(reason.stage()),
        }
    }

    /// Whether a pipeline's verdict (`None`: no error) is this one: the
    /// same frame, and the same rule, chunk error or stage.
    ///
    /// ```
    /// use agui_stream::{Config, Event, FrameInfo, Pipeline, generator};
    /// let mut out = [0u8; 16384];
    /// let g = generator::generate_invalid(&[1, 99, 7, 3, 250, 18, 42, 5, 77, 1, 2, 3], &mut out);
    /// let mut buf = [0u8; 4096];
    /// let mut p = Pipeline::new(&mut buf, Config::new().dialect(g.dialect));
    /// let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
    /// let verdict = p.push(&out[..g.len], &mut sink).and_then(|_| p.finish(&mut sink)).err();
    /// assert!(g.expected.matches(verdict.as_ref()));
    /// ```
    pub fn matches(&self, verdict: Option<&Error>) -> bool {
        match (self, verdict) {
            (Expected::Valid, None) => true,
            (Expected::Violation { frame, reason }, Some(e)) => {
                e.frame == *frame && reason.matches(&e.kind)
            }
            _ => false,
        }
    }
}

/// Why a generated violation is rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Reason {
    /// The frame's JSON does not parse.
    Json,
    /// The JSON is not an acceptable event.
    Schema,
    /// A chunk cannot be normalized.
    Chunk(ChunkError),
    /// A lifecycle rule.
    Rule(Rule),
}

impl Reason {
    /// Whether a pipeline error of this kind is this reason.
    pub fn matches(&self, kind: &ErrorKind) -> bool {
        match (self, kind) {
            (Reason::Json, ErrorKind::Json(_)) | (Reason::Schema, ErrorKind::Schema(_)) => true,
            (Reason::Chunk(want), ErrorKind::Chunk(got)) => want == got,
            (Reason::Rule(want), ErrorKind::Verify { rule, .. }) => want == rule,
            _ => false,
        }
    }

    /// The pipeline stage that rejects it.
    pub const fn stage(&self) -> Stage {
        match self {
            Reason::Json => Stage::Json,
            Reason::Schema => Stage::Schema,
            Reason::Chunk(_) => Stage::Chunks,
            Reason::Rule(_) => Stage::Verify,
        }
    }
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
    /// Event frames written.
    pub events: u32,
    /// The verdict the stream must get.
    pub expected: Expected,
}

impl Generated {
    /// `stream` (what was written) cut into pushes at points drawn from
    /// the framing's seed: single bytes, short and long pieces, the rest.
    pub fn pieces<'s>(&self, stream: &'s [u8]) -> Pieces<'s> {
        self.config.pieces(stream)
    }
}

/// Writes into `out` the stream `input` drives: valid in
/// [`Generated::dialect`], complete (its last run finished). The
/// generator keeps room to close what may be open: an output buffer under
/// about 5 KiB gets nothing (`len` 0); 16 KiB holds a long run. The
/// envelope takes two bytes per input byte on top, when they fit.
pub fn generate(input: &[u8], out: &mut [u8]) -> Generated {
    generate_with(input, out, GenOptions::new())
}

/// As [`generate`], but the input may choose one violation, injected
/// after a valid prefix; [`Generated::expected`] says which. The stream
/// ends with the violating frame (and the envelope).
pub fn generate_invalid(input: &[u8], out: &mut [u8]) -> Generated {
    generate_with(input, out, GenOptions::new().violations(true))
}

/// What the caller fixes of a generated stream; the input draws the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenOptions {
    dialect: Option<Dialect>,
    framing: Option<Framing>,
    line_ends: Option<LineEnds>,
    violations: bool,
    envelope: bool,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions::new()
    }
}

impl GenOptions {
    /// Nothing fixed: the input draws the dialect and the framing; no
    /// violation; an envelope.
    pub const fn new() -> Self {
        GenOptions {
            dialect: None,
            framing: None,
            line_ends: None,
            violations: false,
            envelope: true,
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

    /// The line ends, instead of drawing them (the rest of the framing is
    /// drawn). [`LineEnds::Lf`] for streams the reference reads as this
    /// crate does.
    pub const fn line_ends(mut self, line_ends: LineEnds) -> Self {
        self.line_ends = Some(line_ends);
        self
    }

    /// Whether the input may choose a violation ([`generate_invalid`]).
    pub const fn violations(mut self, on: bool) -> Self {
        self.violations = on;
        self
    }

    /// Whether the stream ends with the `: agui-gen <hex>` envelope.
    pub const fn envelope(mut self, on: bool) -> Self {
        self.envelope = on;
        self
    }
}

/// The least output the generator writes anything into.
const MIN_OUT: usize = 4096;

/// [`generate`] with `options` fixing what they fix.
///
/// ```
/// use agui_stream::Dialect;
/// use agui_stream::generator::{GenOptions, LineEnds, generate_with};
/// // V0 streams the reference reads as this crate does (LF line ends),
/// // with violations, no envelope.
/// let options = GenOptions::new()
///     .dialect(Dialect::V0)
///     .line_ends(LineEnds::Lf)
///     .violations(true)
///     .envelope(false);
/// let mut out = vec![0u8; 64 * 1024];
/// let g = generate_with(b"any bytes a fuzzer gives", &mut out, options);
/// assert_eq!(g.dialect, Dialect::V0);
/// assert!(!out[..g.len].contains(&b'\r'));
/// ```
pub fn generate_with(input: &[u8], out: &mut [u8], options: GenOptions) -> Generated {
    let mut c = Cursor::new(input);
    let mut config = GenConfig::draw(&mut c);
    if let Some(d) = options.dialect {
        config.dialect = d;
        config = config.sanitized();
    }
    if let Some(f) = options.framing {
        config.framing = f;
    }
    if let Some(l) = options.line_ends {
        config.framing.line_ends = l;
    }
    // About half the inputs (when asked) ask for a violation; which and
    // where, the bytes decide as the stream goes.
    let violate = options.violations && c.ratio(1, 2);
    let envelope = framing::envelope_len(input.len());
    let envelope = options.envelope && out.len() >= envelope.saturating_add(MIN_OUT);
    let body = if envelope {
        out.len().saturating_sub(framing::envelope_len(input.len()))
    } else {
        out.len()
    };
    let (len, events, expected) = {
        let mut g = Generator::new(config, Out::new(out.get_mut(..body).unwrap_or_default()));
        g.violate = violate;
        g.run(&mut c);
        (g.out.len(), g.events, g.expected)
    };
    let mut len = len;
    if envelope && len > 0 {
        let mut o = Out::new(out.get_mut(len..).unwrap_or_default());
        framing::Framer::new(config.framing).envelope(&mut o, input);
        if !o.failed() {
            len = len.saturating_add(o.len());
        }
    }
    Generated {
        len,
        dialect: config.dialect,
        config,
        events,
        expected,
    }
}

#[cfg(test)]
mod tests;
