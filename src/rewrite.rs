//! The output side: a stream rewriter for gateways. Bytes in, bytes out,
//! in fixed memory.
//!
//! [`Rewriter`] runs the [`Pipeline`] and writes what a client should see:
//!
//! * every block that passes unchanged as its **original bytes** (its
//!   `event:`/`id:` lines, comments, keep-alives, blank lines), never
//!   re-encoded; a block with CR or CRLF line ends, or a bare `data` line,
//!   which the reference client cannot read, with LF line ends instead;
//! * events the pipeline synthesized (a chunk's START/CONTENT/END, V1's
//!   `REASONING_*` for `THINKING_*`) as `data: {json}\n\n`;
//! * on a violation, what [`OnViolation`] says; at the end of a stream cut
//!   mid-run, a `RUN_ERROR` with code `AGUI_STREAM_TRUNCATED` ([`Options::repair`]);
//!   and what the other [`Options`] and [`Rewriter::deny_tool`] ask for
//!   (closing what is open, a largest event, canonical form, no `RAW`).
//!
//! Output holds only complete blocks: a proxy forwards each push's output at
//! once, and the unfinished tail waits in the rewriter's raw buffer. Before
//! each block the rewriter makes sure the writer has room for the block's
//! worst case ([`Rewriter::frame_bound`]); if not, `push` returns how much it
//! read, and the caller drains the writer and pushes the rest — nothing is
//! lost.
//!
//! ```
//! use agui_stream::{Config, rewrite::{Options, Rewriter}};
//! let (mut frames, mut raw) = ([0u8; 256], [0u8; 256]);
//! let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
//! let mut out = Vec::new();
//! let input = b": ping\n\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
//!               data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"hi\"}\n\n";
//! let pushed = rewriter.push(input, &mut out)?;
//! assert_eq!(pushed.read, input.len());
//! rewriter.finish(&mut out)?; // the run never finished: repaired
//! let out = String::from_utf8(out).unwrap();
//! assert!(out.starts_with(": ping\n\ndata: {\"type\":\"RUN_STARTED\""));
//! assert!(out.contains("data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}\n\n"));
//! assert!(out.ends_with("\"code\":\"AGUI_STREAM_TRUNCATED\"}\n\n"));
//! # Ok::<(), agui_stream::rewrite::RewriteError>(())
//! ```

use core::fmt;
use core::ops::ControlFlow;

use crate::check::decode::decode;
use crate::check::spilled::StandIns;
use crate::check::verify::{Entity, Rule, RunPhase, Verifier};
use crate::input::json::Limits;
use crate::output::encode::{BufferFull, SliceWriter, Write, encode, write_str};
use crate::pipeline::error::{Error, ErrorKind, Stage};
use crate::pipeline::{
    Config, DEFAULT_ID_BYTES, DEFAULT_OPEN_IDS, DEFAULT_OWNERS, FrameInfo, LANE_BYTES, LANES,
    Pipeline, Policy, Sink, Skipped, Summary,
};
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key};
use crate::view::event::Event;
use crate::view::string::JsonStr;

/// What the rewriter does with an event that breaks a rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum OnViolation {
    /// Forward what came before, then a final `RUN_ERROR` (code
    /// `AGUI_STREAM_VIOLATION`, or `AGUI_STREAM_CAPACITY` where a fixed
    /// capacity was exceeded) with the error's message; nothing after it.
    #[default]
    Stop,
    /// Drop the offending event, count it, go on.
    Drop,
    /// Forward the offending frame unchanged, count it, go on (an event
    /// the pipeline synthesized has no bytes of its own: it is dropped).
    Pass,
}

impl core::str::FromStr for OnViolation {
    type Err = crate::protocol::dialect::UnknownName;

    /// `stop`, `drop` or `pass`.
    ///
    /// ```
    /// use agui_stream::rewrite::OnViolation;
    /// assert_eq!("drop".parse(), Ok(OnViolation::Drop));
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "stop" => Ok(OnViolation::Stop),
            "drop" => Ok(OnViolation::Drop),
            "pass" => Ok(OnViolation::Pass),
            _ => Err(crate::protocol::dialect::UnknownName {
                what: "violation policy",
                expected: "stop, drop or pass",
            }),
        }
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for OnViolation {
    /// From a string, as [`FromStr`](core::str::FromStr) reads it.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::protocol::dialect::deserialize_name(d)
    }
}

/// How a [`Rewriter`] rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Options {
    /// On a violation (default stop).
    pub on_violation: OnViolation,
    /// End a stream cut mid-run with `RUN_ERROR` (`AGUI_STREAM_TRUNCATED`),
    /// and terminate a cut last frame (default on). A last frame cut inside
    /// its JSON is dropped — or cut, if it was going out ahead of its
    /// verdict — as the truncation it is, whatever the buffers' size; a
    /// JSON error in the bytes that did arrive is a violation.
    pub repair: bool,
    /// Before a repair's or the stop policy's `RUN_ERROR`, close what is
    /// open — tool calls, text messages, reasoning messages and spans,
    /// V0's thinking, steps, innermost first — so that a stored replay
    /// stays readable (default off).
    pub close_open: bool,
    /// A block larger than this many bytes (its raw bytes, all its lines;
    /// 0 for no limit) ends the stream with a `RUN_ERROR` (code
    /// `AGUI_EVENT_TOO_LARGE`) instead of reaching a client that would
    /// throw on it (browsers do over 10 MiB).
    pub max_event_bytes: u64,
    /// Write every event re-encoded in the dialect's stripped form (unknown
    /// members removed; `event:`/`id:` lines and frames V1 ignores are not
    /// written), for strict clients.
    pub canonical: bool,
    /// Drop `RAW` events and the `rawEvent` member of every event (what an
    /// agent framework saw upstream, often larger than the answer).
    pub drop_raw: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl Options {
    /// Stop on violations, repair the end.
    pub const fn new() -> Self {
        Options {
            on_violation: OnViolation::Stop,
            repair: true,
            close_open: false,
            max_event_bytes: 0,
            canonical: false,
            drop_raw: false,
        }
    }

    /// The same options with another violation policy.
    pub const fn on_violation(mut self, on_violation: OnViolation) -> Self {
        self.on_violation = on_violation;
        self
    }

    /// The same options, repairing (or not) the end of the stream.
    pub const fn repair(mut self, repair: bool) -> Self {
        self.repair = repair;
        self
    }

    /// The same options, closing (or not) what is open before a final
    /// `RUN_ERROR`.
    pub const fn close_open(mut self, close_open: bool) -> Self {
        self.close_open = close_open;
        self
    }

    /// The same options with another largest block (0: no limit).
    pub const fn max_event_bytes(mut self, max: u64) -> Self {
        self.max_event_bytes = max;
        self
    }

    /// The same options, writing (or not) events in canonical form.
    pub const fn canonical(mut self, canonical: bool) -> Self {
        self.canonical = canonical;
        self
    }

    /// The same options, dropping (or not) `RAW` events and `rawEvent`s.
    pub const fn drop_raw(mut self, drop_raw: bool) -> Self {
        self.drop_raw = drop_raw;
        self
    }
}

/// What went through a [`Rewriter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Stats {
    /// Events the pipeline delivered, by type ([`EventType::index`]).
    pub events_in: [u64; EventType::COUNT],
    /// Events written, by type (forwarded, encoded or repairs).
    pub events_out: [u64; EventType::COUNT],
    /// Violations by the stage that found them ([`Stage::index`]).
    pub violations_by_stage: [u64; Stage::COUNT],
    /// Input bytes read.
    pub bytes_in: u64,
    /// Output bytes written.
    pub bytes_out: u64,
    /// Events the pipeline delivered.
    pub events: u64,
    /// Blocks forwarded as their original bytes (frames, keep-alives).
    pub forwarded: u64,
    /// Blocks forwarded with LF line ends instead of their own.
    pub relined: u64,
    /// Events written by the encoder (synthesized ones).
    pub encoded: u64,
    /// Violations seen.
    pub violations: u64,
    /// Events or frames dropped ([`OnViolation::Drop`], or a synthesized
    /// event under [`OnViolation::Pass`]).
    pub dropped: u64,
    /// Frames forwarded despite a violation ([`OnViolation::Pass`]).
    pub passed: u64,
    /// Repair events written (closing events, `RUN_ERROR`s, terminated
    /// last frames).
    pub repairs: u64,
    /// Second terminal events of a run (RUN_FINISHED after RUN_ERROR, a
    /// repeated RUN_FINISHED) dropped where the dialect rejects them.
    pub duplicate_terminals: u64,
    /// `RAW` events dropped, and events written without their `rawEvent`
    /// ([`Options::drop_raw`]).
    pub raw_dropped: u64,
    /// Blocks larger than [`Options::max_event_bytes`] (at most one: it
    /// ends the stream).
    pub too_large: u64,
    /// Keep-alive comments written ([`Rewriter::keep_alive`]).
    pub keep_alives: u64,
    /// Events of denied tool calls removed ([`Rewriter::deny_tool`]).
    pub tool_events_dropped: u64,
    /// Blocks larger than the raw buffer, forwarded piece by piece ahead
    /// of their verdict.
    pub streamed: u64,
    /// Blocks cut for the client: streamed ones found bad at their end or
    /// needing re-encoding, and events that outgrew the frame buffer
    /// (shown with stand-ins) but would have to be re-encoded.
    pub cut: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            events_in: [0; EventType::COUNT],
            events_out: [0; EventType::COUNT],
            violations_by_stage: [0; Stage::COUNT],
            bytes_in: 0,
            bytes_out: 0,
            events: 0,
            forwarded: 0,
            relined: 0,
            encoded: 0,
            violations: 0,
            dropped: 0,
            passed: 0,
            repairs: 0,
            duplicate_terminals: 0,
            raw_dropped: 0,
            too_large: 0,
            keep_alives: 0,
            tool_events_dropped: 0,
            streamed: 0,
            cut: 0,
        }
    }
}

impl Stats {
    /// The names of the scalar counters, in [`counters`](Stats::counters)
    /// order.
    pub const COUNTER_NAMES: [&'static str; 17] = [
        "bytes_in",
        "bytes_out",
        "events",
        "forwarded",
        "relined",
        "encoded",
        "violations",
        "dropped",
        "passed",
        "repairs",
        "duplicate_terminals",
        "raw_dropped",
        "too_large",
        "keep_alives",
        "tool_events_dropped",
        "streamed",
        "cut",
    ];

    /// The scalar counters with their names (the tables `events_in`,
    /// `events_out` and `violations_by_stage` aside): what a front end logs
    /// or exports as metrics, in one order everywhere.
    ///
    /// ```
    /// use agui_stream::rewrite::Stats;
    /// let stats = Stats::default();
    /// assert_eq!(stats.counters().next(), Some(("bytes_in", 0)));
    /// assert_eq!(stats.counters().count(), Stats::COUNTER_NAMES.len());
    /// ```
    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> + use<> {
        let values = [
            self.bytes_in,
            self.bytes_out,
            self.events,
            self.forwarded,
            self.relined,
            self.encoded,
            self.violations,
            self.dropped,
            self.passed,
            self.repairs,
            self.duplicate_terminals,
            self.raw_dropped,
            self.too_large,
            self.keep_alives,
            self.tool_events_dropped,
            self.streamed,
            self.cut,
        ];
        Self::COUNTER_NAMES.into_iter().zip(values)
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Stats {
    /// The counters as fields (the `agui gateway` line's), the tables as
    /// maps of what is not zero, by type and stage name.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeStruct};
        struct Named<'a>(&'a [u64], &'a [&'static str]);
        impl serde::Serialize for Named<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(None)?;
                for (name, n) in self.1.iter().zip(self.0).filter(|(_, n)| **n > 0) {
                    map.serialize_entry(name, n)?;
                }
                map.end()
            }
        }
        let mut types = [""; EventType::COUNT];
        for (slot, ty) in types.iter_mut().zip(EventType::ALL) {
            *slot = ty.as_str();
        }
        let stages = Stage::ALL.map(Stage::name);
        let fields = Self::COUNTER_NAMES.len().saturating_add(3);
        let mut st = s.serialize_struct("Stats", fields)?;
        for (name, n) in self.counters() {
            st.serialize_field(name, &n)?;
        }
        st.serialize_field("events_in", &Named(&self.events_in, &types))?;
        st.serialize_field("events_out", &Named(&self.events_out, &types))?;
        st.serialize_field("violations_by_stage", &Named(&self.violations_by_stage, &stages))?;
        st.end()
    }
}

/// Adds one to the count of `index` in `counts`.
fn count_in(counts: &mut [u64], index: usize) {
    if let Some(n) = counts.get_mut(index) {
        *n = n.saturating_add(1);
    }
}

/// What [`Rewriter::push`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Pushed {
    /// Bytes of the input read: all of them, unless the writer had no room
    /// for the next block (drain it and push the rest) or the stream ended.
    pub read: usize,
    /// The stream has ended (stopped on a violation): nothing more will be
    /// written; later input is read and ignored.
    pub ended: bool,
}

/// Why a [`Rewriter`] could not go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RewriteError {
    /// The writer has room for less than the next block may need; nothing
    /// was read. Drain it (or give a larger one) and push again.
    OutputFull {
        /// The room the next block needs.
        needed: usize,
    },
    /// The writer failed although it said it had room.
    Write,
    /// A block outgrew a raw buffer too small (under 16 bytes) to hold
    /// back the end of a block that goes out ahead of its verdict.
    RawBuffer {
        /// The raw buffer's length.
        capacity: usize,
    },
    /// More denied tool names than [`Rewriter::deny_tool`] holds.
    DeniedTools,
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteError::OutputFull { needed } => {
                write!(
                    f,
                    "the output has room for less than the {needed} bytes the next block may need"
                )
            }
            RewriteError::Write => f.write_str("the output failed"),
            RewriteError::RawBuffer { capacity } => {
                write!(
                    f,
                    "a block outgrew the {capacity}-byte raw buffer (16 bytes at least are needed)"
                )
            }
            RewriteError::DeniedTools => {
                f.write_str("more denied tool names than the filter holds")
            }
        }
    }
}

impl core::error::Error for RewriteError {}

impl From<BufferFull> for RewriteError {
    fn from(_: BufferFull) -> Self {
        RewriteError::Write
    }
}

/// Room a synthesized event may need beyond its share of the frame's
/// bytes: its members and ids (at most [`LANE_BYTES`] of them across a
/// frame's events), for each of up to `LANES + 3` events of one frame, and
/// a final `RUN_ERROR` with its message.
const FRAME_SLACK: usize = (LANES + 3) * 192 + 3 * LANE_BYTES + RUN_ERROR_BYTES;

/// Bytes of a block that outgrew the raw buffer kept back until its
/// verdict, so that a block found bad at its end can still be cut.
const WITHHELD: usize = 16;

/// What ends a block forwarded ahead of its verdict that turned out bad
/// (or was cut by the end of input): a data line whose control byte no JSON
/// can hold, so that the client's parse of the block fails visibly. It
/// starts a line: after the line the block stopped in (a LF ends it), or
/// right away where the block stopped at a line's end (a LF there would
/// end the block, and its lines so far could read as an event).
const CUT: &[u8] = b"\ndata: \x01\n\n";

/// The most one closing event takes besides its ids.
const CLOSE_EVENT_BYTES: usize = 96;

/// The most a repair `RUN_ERROR` takes (its message is cut to fit).
const RUN_ERROR_BYTES: usize = 1024;

/// Bytes for the names of denied tools.
const DENIED_NAME_BYTES: usize = 256;
/// Denied tools at most.
const DENIED_NAMES: usize = 16;
/// Bytes for the ids of denied calls in this run.
const DENIED_ID_BYTES: usize = 1024;
/// Denied calls in one run at most.
const DENIED_CALLS: usize = 32;

/// The tool-call filter: denied tool names, and the ids of this run's calls
/// to them (whose ARGS, END and RESULT follow).
#[derive(Debug, Default)]
struct ToolFilter {
    names: heapless::Vec<u8, DENIED_NAME_BYTES>,
    name_ends: heapless::Vec<u16, DENIED_NAMES>,
    ids: heapless::Vec<u8, DENIED_ID_BYTES>,
    id_ends: heapless::Vec<u16, DENIED_CALLS>,
}

/// Strings stored end to end.
fn stored<'s>(bytes: &'s [u8], ends: &'s [u16]) -> impl Iterator<Item = &'s [u8]> {
    let mut start = 0usize;
    ends.iter().map(move |&end| {
        let end = usize::from(end);
        let s = bytes.get(start..end).unwrap_or_default();
        start = end;
        s
    })
}

/// Appends `s` to `bytes`/`ends`; false if it does not fit.
fn store<const B: usize, const N: usize>(
    bytes: &mut heapless::Vec<u8, B>,
    ends: &mut heapless::Vec<u16, N>,
    s: &[u8],
) -> bool {
    let Ok(end) = u16::try_from(bytes.len().saturating_add(s.len())) else {
        return false;
    };
    if ends.is_full() || bytes.extend_from_slice(s).is_err() {
        return false;
    }
    ends.push(end).is_ok()
}

/// What the filter says of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Filtered {
    Keep,
    Drop,
    /// A denied call that the filter cannot hold.
    Full,
}

impl ToolFilter {
    fn is_empty(&self) -> bool {
        self.name_ends.is_empty()
    }

    fn denies(&self, name: JsonStr<'_>) -> bool {
        stored(&self.names, &self.name_ends)
            .any(|n| core::str::from_utf8(n).is_ok_and(|n| name.eq_str(n)))
    }

    fn holds(&self, id: JsonStr<'_>) -> bool {
        stored(&self.ids, &self.id_ends).any(|s| JsonStr::from_escaped(s) == id)
    }

    /// Whether [`check`](Self::check) keeps `event`, asked before it is
    /// checked (changes nothing).
    fn keeps(&self, event: &Event<'_>) -> bool {
        use EventType as T;
        let id = || event.tool_call_id().unwrap_or(JsonStr::from_escaped(b""));
        match event.event_type() {
            T::ToolCallStart => !event.tool_call_name().is_some_and(|n| self.denies(n)),
            T::ToolCallArgs | T::ToolCallEnd | T::ToolCallResult => !self.holds(id()),
            _ => true,
        }
    }

    fn check(&mut self, event: &Event<'_>) -> Filtered {
        if event.event_type() == EventType::RunStarted {
            self.ids.clear();
            self.id_ends.clear();
            return Filtered::Keep;
        }
        if self.keeps(event) {
            return Filtered::Keep;
        }
        if event.event_type() != EventType::ToolCallStart {
            return Filtered::Drop;
        }
        let id = event.tool_call_id().unwrap_or(JsonStr::from_escaped(b""));
        if store(&mut self.ids, &mut self.id_ends, id.raw()) {
            Filtered::Drop
        } else {
            Filtered::Full
        }
    }
}

/// Where the rewriter stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    /// Stopped by the policy, or finished.
    Ended,
}

/// The most bytes [`Forward::write_chunk`] gathers for one write: enough
/// to make a write per block a write per dozen blocks, and below where
/// `memcpy` switches to string moves (which cost more per byte on short
/// copies than they save).
const COALESCE: u64 = 2048;

/// No bare `data` line starts in `chunk` after a LF or at its start (one
/// at the start of a forwarded part is checked there, see
/// [`Forward::forward`]).
///
/// Fast path: it used to search for `data` + LF, but `data` starts nearly
/// every block, and a search for it (or for LF + `data` + LF) stops at
/// every block; `a` + LF is rare in JSON lines (which end in `}`), and each
/// one is then checked for a bare `data` line before it: at the start of
/// `chunk` or after a LF (the only places, besides a part's start, where
/// one can start in bytes without CR). `tests::plain_chunks_need_no_relining`
/// compares it with `relines::check` on every part of its chunks.
fn no_bare_data(chunk: &[u8]) -> bool {
    if !crate::testing::fast_paths() {
        return memchr::memmem::find(chunk, b"data\n").is_none();
    }
    no_bare_data_after_lf(chunk)
}

/// [`no_bare_data`]'s fast path.
fn no_bare_data_after_lf(chunk: &[u8]) -> bool {
    !memchr::memmem::find_iter(chunk, b"a\n").any(|i| {
        let end = i.saturating_add(1);
        let line = end.checked_sub(4).and_then(|start| {
            let before = start.checked_sub(1).and_then(|b| chunk.get(b));
            matches!(before, None | Some(b'\n')).then(|| chunk.get(start..end))?
        });
        line == Some(b"data")
    })
}

/// A block-end scanner that runs ahead of the framer: where the next blank
/// line is, so that the room a block needs is known before it is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct BlockEnd {
    /// The last byte seen ended a line (or nothing was seen).
    at_line_start: bool,
    /// The last byte seen was a CR (a following LF belongs to it).
    after_cr: bool,
}

impl BlockEnd {
    const fn new() -> Self {
        BlockEnd {
            at_line_start: true,
            after_cr: false,
        }
    }

    /// The length of `bytes`' prefix that ends the current block (at its
    /// blank line), or `None` if the block goes on past `bytes`. With
    /// `no_cr`, the caller knows `bytes` has no CR.
    fn next(&mut self, bytes: &[u8], no_cr: bool) -> Option<usize> {
        if no_cr && !self.after_cr {
            return self.next_lf(bytes);
        }
        let mut from = 0;
        loop {
            let rest = bytes.get(from..)?;
            let Some(k) = memchr::memchr2(b'\n', b'\r', rest) else {
                if !rest.is_empty() {
                    self.at_line_start = false;
                    self.after_cr = false;
                }
                return None;
            };
            let i = from.saturating_add(k);
            let c = rest.get(k).copied();
            if k == 0 && c == Some(b'\n') && self.after_cr {
                // The LF of a CRLF.
                self.after_cr = false;
                from = i.saturating_add(1);
                continue;
            }
            let blank = k == 0 && self.at_line_start;
            self.at_line_start = true;
            self.after_cr = c == Some(b'\r');
            from = i.saturating_add(1);
            if blank {
                return Some(from);
            }
        }
    }

    /// [`BlockEnd::next`] for bytes without CR (and not after one): one
    /// search for LF per line instead of one for LF or CR per line end.
    fn next_lf(&mut self, bytes: &[u8]) -> Option<usize> {
        if bytes.is_empty() {
            return None;
        }
        if self.at_line_start && bytes.first() == Some(&b'\n') {
            return Some(1);
        }
        let mut from = 0;
        loop {
            let Some(k) = bytes
                .get(from..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
            else {
                self.at_line_start = false;
                return None;
            };
            let i = from.saturating_add(k);
            self.at_line_start = true;
            from = i.saturating_add(1);
            match bytes.get(from) {
                Some(b'\n') => return Some(from.saturating_add(1)),
                Some(_) => {}
                None => return None,
            }
        }
    }
}

/// An SSE byte stream → the stream a client should see, in fixed memory:
/// the pipeline's frame buffer, and a raw buffer for the original bytes of
/// a block that spans pushes.
#[derive(Debug)]
pub struct Rewriter<
    'b,
    const OPEN: usize = DEFAULT_OPEN_IDS,
    const OWNERS: usize = DEFAULT_OWNERS,
    const ID_BYTES: usize = DEFAULT_ID_BYTES,
> {
    pipeline: Pipeline<'b, OPEN, OWNERS, ID_BYTES>,
    raw: &'b mut [u8],
    /// `raw[..raw_len]` are the input bytes from stream offset `accounted`
    /// on, not yet part of a complete block.
    raw_len: usize,
    accounted: u64,
    /// The last block written ended in CR: a leading LF is its CRLF's.
    after_cr: bool,
    /// How far the input line written last is a bare `data` (a block that
    /// goes out ahead of its verdict may stop mid-line).
    line: relines::Progress,
    scan: BlockEnd,
    options: Options,
    stats: Stats,
    state: State,
    filter: ToolFilter,
    /// The unfinished block outgrew the raw buffer: its bytes up to this
    /// stream offset are already out (0: none).
    streamed: u64,
}

impl<'b> Rewriter<'b> {
    /// A rewriter with the default capacities. `frame_buffer` is the
    /// pipeline's (see [`Pipeline::new`]); `raw_buffer` holds the original
    /// bytes of a block that spans pushes, so it bounds the blocks that can.
    /// The pipeline's policy is the rewriter's to set: `config.policy` is
    /// ignored.
    pub fn new(
        frame_buffer: &'b mut [u8],
        raw_buffer: &'b mut [u8],
        config: Config,
        options: Options,
    ) -> Self {
        Self::sized(frame_buffer, raw_buffer, config, options)
    }
}

impl<'b, const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize>
    Rewriter<'b, OPEN, OWNERS, ID_BYTES>
{
    /// A rewriter with the capacities of its type parameters (see
    /// [`Pipeline::sized`]).
    pub fn sized(
        frame_buffer: &'b mut [u8],
        raw_buffer: &'b mut [u8],
        config: Config,
        options: Options,
    ) -> Self {
        // The policies are the rewriter's: the pipeline reports every
        // violation, and the stop policy stops it.
        Rewriter {
            pipeline: Pipeline::sized(frame_buffer, config.policy(Policy::Monitor)),
            raw: raw_buffer,
            raw_len: 0,
            accounted: 0,
            after_cr: false,
            line: relines::LINE_START,
            scan: BlockEnd::new(),
            options,
            stats: Stats::default(),
            state: State::Open,
            filter: ToolFilter::default(),
            streamed: 0,
        }
    }

    /// Removes every event of calls to the tool `name` — TOOL_CALL_START,
    /// ARGS, END and RESULT — from the output. It works on normalized
    /// events, so chunk continuations without ids cannot leak. At most 16
    /// names (256 bytes); a run's calls to them are held (32 calls, 1 KiB of
    /// ids) until the next run: one more ends the stream with a `RUN_ERROR`
    /// (`AGUI_STREAM_CAPACITY`).
    ///
    /// # Errors
    ///
    /// [`RewriteError::DeniedTools`] if the names do not fit.
    pub fn deny_tool(&mut self, name: &str) -> Result<(), RewriteError> {
        let filter = &mut self.filter;
        if store(&mut filter.names, &mut filter.name_ends, name.as_bytes()) {
            Ok(())
        } else {
            Err(RewriteError::DeniedTools)
        }
    }

    /// The most output one block of `len` bytes (counting the bytes it
    /// had in the raw buffer) can give: three times its bytes (a string
    /// re-encoded as `JSON.stringify` writes it takes at most three times
    /// the bytes it had) plus a constant for the events the pipeline may
    /// synthesize and a final `RUN_ERROR` — with [`Options::close_open`],
    /// also the events that close what may be open (`OPEN` of them, their
    /// ids up to six times their `ID_BYTES` when escaped). A writer with
    /// room for this for the largest block of a stream never holds the
    /// stream up.
    pub const fn frame_bound(&self, len: usize) -> usize {
        let close = if self.options.close_open {
            OPEN.saturating_mul(CLOSE_EVENT_BYTES)
                .saturating_add(ID_BYTES.saturating_mul(12))
        } else {
            0
        };
        len.saturating_mul(3)
            .saturating_add(FRAME_SLACK)
            .saturating_add(close)
    }

    /// The most output a push of `len` bytes can give, whatever its blocks
    /// (each is at least one byte), counting the block the raw buffer
    /// holds.
    const fn push_bound(&self, len: usize) -> usize {
        let per_block = self.frame_bound(1);
        self.frame_bound(self.raw_len.saturating_add(len))
            .saturating_add(len.saturating_mul(per_block))
    }

    /// Ends the rewriter and gives its frame and raw buffers back, for the
    /// next stream, as a server does that keeps one pair per connection:
    ///
    /// ```
    /// use agui_stream::{Config, rewrite::{Options, Rewriter}};
    /// let (mut frames, mut raw) = ([0u8; 1024], [0u8; 1024]);
    /// let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    /// let mut out = heapless::Vec::<u8, 8192>::new();
    /// rewriter.push(b": first stream\n\n", &mut out)?;
    /// let (frames, raw) = rewriter.into_buffers();
    /// let next = Rewriter::new(frames, raw, Config::new(), Options::new());
    /// assert_eq!(next.stats().bytes_in, 0);
    /// # Ok::<(), agui_stream::rewrite::RewriteError>(())
    /// ```
    pub fn into_buffers(self) -> (&'b mut [u8], &'b mut [u8]) {
        (self.pipeline.into_buffer(), self.raw)
    }

    /// What went through so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The pipeline underneath (its verifier, offset and message renderer).
    pub fn pipeline(&self) -> &Pipeline<'b, OPEN, OWNERS, ID_BYTES> {
        &self.pipeline
    }

    /// Input bytes fully accounted for in the output so far (written,
    /// re-written, replaced or dropped); the rest waits in the raw buffer.
    pub fn accounted(&self) -> u64 {
        self.accounted
    }

    /// Reads `input` and writes the output of every block it completes.
    ///
    /// # Errors
    ///
    /// [`RewriteError::OutputFull`] if `out` has no room for the next
    /// block's worst case and nothing could be read;
    /// [`RewriteError::RawBuffer`] if a block outgrew a raw buffer of under
    /// 16 bytes; [`RewriteError::Write`] if `out` failed.
    pub fn push<W: Write + ?Sized>(
        &mut self,
        input: &[u8],
        out: &mut W,
    ) -> Result<Pushed, RewriteError> {
        let mut pos = 0;
        while pos < input.len() {
            if self.state == State::Ended {
                self.stats.bytes_in = self
                    .stats
                    .bytes_in
                    .saturating_add(input.len().saturating_sub(pos) as u64);
                return Ok(Pushed {
                    read: input.len(),
                    ended: true,
                });
            }
            // The blocks that complete in the input and fit the room, and
            // after them the start of one that does not complete.
            let room = out.room();
            let mut scan = self.scan;
            let mut end = pos;
            let mut needed = 0usize;
            let mut carried = self.raw_len;
            // Stopped before a block `out` has no room for.
            let mut held_up = false;
            let rest = input.get(pos..).unwrap_or_default();
            if self.options.max_event_bytes == 0 && room >= self.push_bound(rest.len()) {
                // Fast path, where the block-by-block scan below would read
                // everything: room for the worst case of every block that
                // can be in the input, and no size cap. The scanner's state
                // after the input depends only on its last byte.
                if let Some(&last) = rest.last() {
                    self.scan = BlockEnd {
                        at_line_start: matches!(last, b'\n' | b'\r'),
                        after_cr: last == b'\r',
                    };
                }
                // Whether `rest` is plain is looked at only if a block
                // needs it (`Forward::chunk_plain`).
                self.run(rest, None, out)?;
                pos = input.len();
                continue;
            }
            let no_cr = memchr::memchr(b'\r', rest).is_none();
            let plain = no_cr && no_bare_data(rest);
            loop {
                let rest = input.get(end..).unwrap_or_default();
                if rest.is_empty() {
                    break;
                }
                let before = scan;
                let found = scan.next(rest, no_cr);
                let max = self.options.max_event_bytes;
                let len = found.unwrap_or(rest.len()).saturating_add(carried);
                if max > 0 && len as u64 > max {
                    if end > pos {
                        // The blocks before it first.
                        scan = before;
                        break;
                    }
                    return self.too_large(len, out).map(|()| Pushed {
                        read: input.len(),
                        ended: true,
                    });
                }
                match found {
                    Some(k) => {
                        let need = self.frame_bound(k.saturating_add(carried));
                        if needed.saturating_add(need) > room {
                            scan = before;
                            if end == pos && pos == 0 {
                                return Err(RewriteError::OutputFull { needed: need });
                            }
                            held_up = true;
                            break;
                        }
                        needed = needed.saturating_add(need);
                        carried = 0;
                        end = end.saturating_add(k);
                    }
                    None => {
                        // A block that outgrows the raw buffer goes out
                        // as it comes: room for it too.
                        if len > self.raw.len() {
                            let need = self.frame_bound(len);
                            if needed.saturating_add(need) > room {
                                scan = before;
                                if end == pos && pos == 0 {
                                    return Err(RewriteError::OutputFull { needed: need });
                                }
                                held_up = true;
                                break;
                            }
                        }
                        end = input.len();
                        break;
                    }
                }
            }
            if end == pos {
                return Ok(Pushed {
                    read: pos,
                    ended: false,
                });
            }
            self.scan = scan;
            let chunk = input.get(pos..end).unwrap_or_default();
            self.run(chunk, Some(plain), out)?;
            pos = end;
            if held_up && self.state == State::Open {
                return Ok(Pushed {
                    read: pos,
                    ended: false,
                });
            }
        }
        Ok(Pushed {
            read: pos,
            ended: self.state == State::Ended,
        })
    }

    /// Writes a `: ping` keep-alive comment (a proxy's idle timer calls it):
    /// the output holds only whole blocks, so any moment between pushes is
    /// between frames. Returns false once the stream has ended.
    ///
    /// # Errors
    ///
    /// [`RewriteError::OutputFull`] without room for it.
    pub fn keep_alive<W: Write + ?Sized>(&mut self, out: &mut W) -> Result<bool, RewriteError> {
        const PING: &[u8] = b": ping\n\n";
        if self.state == State::Ended {
            return Ok(false);
        }
        if out.room() < PING.len() {
            return Err(RewriteError::OutputFull { needed: PING.len() });
        }
        out.write_bytes(PING)?;
        self.stats.bytes_out = self.stats.bytes_out.saturating_add(PING.len() as u64);
        self.stats.keep_alives = self.stats.keep_alives.saturating_add(1);
        Ok(true)
    }

    /// A block of `len` bytes (or more) exceeds the limit: the run ends
    /// with `AGUI_EVENT_TOO_LARGE`, and the rest of the input is ignored.
    fn too_large<W: Write + ?Sized>(
        &mut self,
        len: usize,
        out: &mut W,
    ) -> Result<(), RewriteError> {
        let needed = self.frame_bound(0);
        if out.room() < needed {
            return Err(RewriteError::OutputFull { needed });
        }
        self.state = State::Ended;
        self.stats.too_large = self.stats.too_large.saturating_add(1);
        let max = self.options.max_event_bytes;
        let message = Limit { len, max };
        let mut buf = [0u8; RUN_ERROR_BYTES];
        match run_error_json(&mut buf, "AGUI_EVENT_TOO_LARGE", &message) {
            Some(json) => self.end_run(out, json),
            None => Ok(()),
        }
    }

    /// Ends the input: a cut last frame is terminated (dropped, or cut if
    /// it went out ahead of its verdict, where the input ended inside its
    /// JSON), and a run left open gets its `RUN_ERROR` (with
    /// [`Options::repair`]). Returns the
    /// pipeline's summary (`None` if the stream had already ended).
    ///
    /// # Errors
    ///
    /// [`RewriteError::OutputFull`] (nothing done: drain and call again),
    /// [`RewriteError::Write`].
    pub fn finish<W: Write + ?Sized>(
        &mut self,
        out: &mut W,
    ) -> Result<Option<Summary>, RewriteError> {
        if self.state == State::Ended {
            return Ok(None);
        }
        let needed = self.frame_bound(self.raw_len);
        if out.room() < needed {
            return Err(RewriteError::OutputFull { needed });
        }
        let base = self.pipeline.offset();
        let mut stop = Stop::new();
        let (result, failed) =
            self.with_forward(&[], Some(false), base, out, &mut stop, |pipeline, sink| {
                let result = pipeline.finish(sink);
                if result.is_ok() && !sink.stop.stopped() {
                    sink.rest(base);
                }
                result
            });
        self.state = State::Ended;
        if failed {
            return Err(RewriteError::Write);
        }
        if let Some(json) = stop.json() {
            self.end_run(out, json)?;
            return Ok(None);
        }
        let summary = match result {
            Ok(summary) => summary,
            Err(e) => {
                self.stop(e, out)?;
                return Ok(None);
            }
        };
        if self.options.repair && summary.run == RunPhase::Active {
            let mut buf = [0u8; RUN_ERROR_BYTES];
            let message = "the stream ended before the run finished";
            if let Some(json) = run_error_json(&mut buf, "AGUI_STREAM_TRUNCATED", &message) {
                self.end_run(out, json)?;
            }
        }
        Ok(Some(summary))
    }

    /// Runs `chunk` (whole blocks, or a last block that goes on) through the
    /// pipeline, and keeps what is not accounted for in the raw buffer.
    /// Pushes `chunk`; `plain` as [`Forward::chunk_plain`] (`None`: not
    /// known yet).
    fn run<W: Write + ?Sized>(
        &mut self,
        chunk: &[u8],
        plain: Option<bool>,
        out: &mut W,
    ) -> Result<(), RewriteError> {
        let base = self.pipeline.offset();
        let raw_start = self.accounted;
        let mut stop = Stop::new();
        let (result, failed) =
            self.with_forward(chunk, plain, base, out, &mut stop, |pipeline, sink| {
                let pushed = pipeline.push(chunk, sink)?;
                // A block that is going out ahead of its verdict is cut as
                // soon as its JSON is known bad, not at its end (which may
                // be far off, or never come): the same cut and error.
                if *sink.streamed != 0 && !sink.stop.stopped() {
                    pipeline.report_failed_spill(sink).transpose()?;
                }
                Ok(pushed)
            });
        self.stats.bytes_in = self.stats.bytes_in.saturating_add(chunk.len() as u64);
        if failed {
            self.state = State::Ended;
            return Err(RewriteError::Write);
        }
        if let Some(json) = stop.json() {
            self.state = State::Ended;
            return self.end_run(out, json);
        }
        if let Err(e) = result {
            return self.stop(e, out);
        }
        let end = base.saturating_add(chunk.len() as u64);
        if end.saturating_sub(self.accounted) > self.raw.len() as u64 && self.raw.len() >= WITHHELD
        {
            // The unfinished block outgrew the raw buffer: out it goes
            // ahead of its verdict, all but its last bytes.
            let upto = end.saturating_sub(WITHHELD as u64).max(self.accounted);
            if self.streamed == 0 {
                self.stats.streamed = self.stats.streamed.saturating_add(1);
            }
            let mut stop = Stop::new();
            let (_, failed) =
                self.with_forward(chunk, Some(false), base, out, &mut stop, |_, sink| {
                    let from = sink.gap_start();
                    sink.forward(from, upto);
                    *sink.accounted = upto;
                });
            self.streamed = upto;
            if failed {
                self.state = State::Ended;
                return Err(RewriteError::Write);
            }
        }
        // Keep the bytes not yet accounted for: the raw buffer covers
        // `accounted..` up to the pipeline's offset.
        let drop = (self.accounted.saturating_sub(raw_start) as usize).min(self.raw_len);
        self.raw.copy_within(drop..self.raw_len, 0);
        let kept = self.raw_len.saturating_sub(drop);
        let from = self.accounted.max(base).saturating_sub(base) as usize;
        let add = chunk.get(from..).unwrap_or_default();
        let len = kept.saturating_add(add.len());
        let Some(dst) = self.raw.get_mut(kept..len) else {
            self.state = State::Ended;
            return Err(RewriteError::RawBuffer {
                capacity: self.raw.len(),
            });
        };
        dst.copy_from_slice(add);
        self.raw_len = len;
        Ok(())
    }

    /// Runs `f` with the pipeline and a sink writing to `out`; `chunk` is
    /// what the pipeline reads from stream offset `base` on. Also returns
    /// whether `out` failed.
    fn with_forward<W: Write + ?Sized, T>(
        &mut self,
        chunk: &[u8],
        chunk_plain: Option<bool>,
        base: u64,
        out: &mut W,
        stop: &mut Stop,
        f: impl FnOnce(&mut Pipeline<'b, OPEN, OWNERS, ID_BYTES>, &mut Forward<'_, W>) -> T,
    ) -> (T, bool) {
        // The raw buffer holds what was not accounted for when the pushed
        // bytes came (`raw_start` below, if it has moved since).
        let raw_start = base.saturating_sub(self.raw_len as u64);
        let mut sink = Forward {
            out,
            raw: self.raw.get(..self.raw_len).unwrap_or_default(),
            raw_start,
            chunk,
            base,
            chunk_plain,
            accounted: &mut self.accounted,
            after_cr: &mut self.after_cr,
            line: &mut self.line,
            stats: &mut self.stats,
            options: self.options,
            frame: None,
            frame_written: false,
            failed: false,
            stop,
            filter: &mut self.filter,
            streamed: &mut self.streamed,
            frame_streamed: false,
            pending: (0, 0),
        };
        let result = f(&mut self.pipeline, &mut sink);
        sink.flush();
        (result, sink.failed)
    }

    /// The pipeline failed: the policy's final `RUN_ERROR`, then nothing.
    fn stop<W: Write + ?Sized>(&mut self, e: Error, out: &mut W) -> Result<(), RewriteError> {
        self.state = State::Ended;
        self.stats.violations = self.stats.violations.saturating_add(1);
        count_in(&mut self.stats.violations_by_stage, e.stage.index());
        let mut buf = [0u8; RUN_ERROR_BYTES];
        let len =
            run_error_json(&mut buf, code_of(&e), &self.pipeline.message(&e)).map(<[u8]>::len);
        match len {
            Some(len) => self.end_run(out, buf.get(..len).unwrap_or_default()),
            None => Ok(()),
        }
    }

    /// Ends the run: closes what is open ([`Options::close_open`]), then the
    /// `RUN_ERROR` `json` — each event only if the verifier, as the client
    /// would, accepts it (no `RUN_ERROR` after another).
    fn end_run<W: Write + ?Sized>(&mut self, out: &mut W, json: &[u8]) -> Result<(), RewriteError> {
        let dialect = self.pipeline.config().dialect;
        let mut verifier = self.pipeline.verifier().clone();
        let mut out = Counted {
            out,
            bytes: &mut self.stats.bytes_out,
        };
        let repairs = &mut self.stats.repairs;
        let events_out = &mut self.stats.events_out;
        // Written by the encoder, so that a canonical second pass finds
        // them as they are.
        let mut emit = |json: &[u8], verifier: &mut Verifier<OPEN, OWNERS, ID_BYTES>| {
            if let Ok(Some(event)) = decode(json, dialect, Limits::new())
                && verifier.check(&event).is_ok()
            {
                out.write_bytes(b"data: ")?;
                encode(&event, &mut out)?;
                out.write_bytes(b"\n\n")?;
                *repairs = repairs.saturating_add(1);
                count_in(events_out, event.event_type().index());
            }
            Ok::<(), BufferFull>(())
        };
        if self.options.close_open {
            let open = self.pipeline.verifier();
            // An id too long to write here (2 KiB escaped) is left open.
            let mut buf = [0u8; 2048];
            for (kind, ty, key) in CLOSE_ORDER {
                for (id, owner) in open.open_owned(kind) {
                    // A forgotten owner cannot be named: left open.
                    let Some(owner) = owner else { continue };
                    if let Some(json) = close_json(&mut buf, ty, key, id, owner) {
                        emit(json, &mut verifier)?;
                    }
                }
            }
            if dialect == Dialect::V0 && open.thinking_open() {
                emit(br#"{"type":"THINKING_TEXT_MESSAGE_END"}"#, &mut verifier)?;
                emit(br#"{"type":"THINKING_END"}"#, &mut verifier)?;
            }
        }
        emit(json, &mut verifier)?;
        Ok(())
    }
}

/// What is closed before a final `RUN_ERROR`, innermost first: the entity,
/// the event that closes it, and the member naming it.
const CLOSE_ORDER: [(Entity, EventType, &str); 5] = [
    (Entity::ToolCall, EventType::ToolCallEnd, "toolCallId"),
    (Entity::TextMessage, EventType::TextMessageEnd, "messageId"),
    (
        Entity::ReasoningMessage,
        EventType::ReasoningMessageEnd,
        "messageId",
    ),
    (Entity::ReasoningSpan, EventType::ReasoningEnd, "messageId"),
    (Entity::Step, EventType::StepFinished, "stepName"),
];

/// `{"type":TY,KEY:ID[,"subagentRunId":OWNER]}` into `buf`.
fn close_json<'b>(
    buf: &'b mut [u8],
    ty: EventType,
    key: &str,
    id: JsonStr<'_>,
    owner: Option<JsonStr<'_>>,
) -> Option<&'b [u8]> {
    let mut w = SliceWriter::new(buf);
    let written = (|| {
        w.write_bytes(b"{\"type\":\"")?;
        w.write_bytes(ty.as_str().as_bytes())?;
        w.write_bytes(b"\",\"")?;
        w.write_bytes(key.as_bytes())?;
        w.write_bytes(b"\":")?;
        write_str(id, &mut w)?;
        if let Some(owner) = owner {
            w.write_bytes(b",\"subagentRunId\":")?;
            write_str(owner, &mut w)?;
        }
        w.write_bytes(b"}")
    })();
    let len = w.len();
    written.ok()?;
    buf.get(..len)
}

/// The message of `AGUI_EVENT_TOO_LARGE`.
struct Limit {
    len: usize,
    max: u64,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "an event of at least {} bytes is larger than the {}-byte limit",
            self.len, self.max
        )
    }
}

/// The final `RUN_ERROR`'s code for `e`.
fn code_of(e: &Error) -> &'static str {
    if e.is_capacity() {
        "AGUI_STREAM_CAPACITY"
    } else {
        "AGUI_STREAM_VIOLATION"
    }
}

/// The stop policy's decision, taken in the sink: the final `RUN_ERROR`.
struct Stop {
    json: [u8; RUN_ERROR_BYTES],
    len: Option<usize>,
}

impl Stop {
    const fn new() -> Self {
        Stop {
            json: [0; RUN_ERROR_BYTES],
            len: None,
        }
    }

    fn stopped(&self) -> bool {
        self.len.is_some()
    }

    fn set(&mut self, error: &Error, message: &dyn fmt::Display) {
        self.set_code(code_of(error), message);
    }

    fn set_code(&mut self, code: &str, message: &dyn fmt::Display) {
        let len = run_error_json(&mut self.json, code, message).map_or(0, <[u8]>::len);
        self.len = Some(len);
    }

    /// The `RUN_ERROR` to end with, once stopped.
    fn json(&self) -> Option<&[u8]> {
        self.json.get(..self.len?)
    }
}

/// `{"type":"RUN_ERROR","message":…,"code":…}` into `buf`; the message is
/// cut (at a character) to fit.
fn run_error_json<'b>(
    buf: &'b mut [u8],
    code: &str,
    message: &dyn fmt::Display,
) -> Option<&'b [u8]> {
    let tail_len = code.len().saturating_add(12);
    let mut w = Escaped {
        buf,
        len: 0,
        limit: RUN_ERROR_BYTES.saturating_sub(tail_len),
    };
    w.raw(b"{\"type\":\"RUN_ERROR\",\"message\":\"").ok()?;
    // A message that does not fit is cut.
    let _ = fmt::write(&mut w, format_args!("{message}"));
    w.limit = w.buf.len();
    w.raw(b"\",\"code\":\"").ok()?;
    w.raw(code.as_bytes()).ok()?;
    w.raw(b"\"}").ok()?;
    let len = w.len;
    buf.get(..len)
}

/// A JSON string's contents, escaped, into a slice.
struct Escaped<'a> {
    buf: &'a mut [u8],
    len: usize,
    limit: usize,
}

impl Escaped<'_> {
    fn raw(&mut self, bytes: &[u8]) -> Result<(), fmt::Error> {
        let end = self.len.checked_add(bytes.len()).ok_or(fmt::Error)?;
        if end > self.limit {
            return Err(fmt::Error);
        }
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }
}

impl fmt::Write for Escaped<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            let mut tmp = [0u8; 6];
            let bytes: &[u8] = match c {
                '"' => b"\\\"",
                '\\' => b"\\\\",
                '\n' => b"\\n",
                '\r' => b"\\r",
                '\t' => b"\\t",
                c if (c as u32) < 0x20 => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    let n = c as usize;
                    tmp = [
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX.get(n >> 4).copied().unwrap_or(b'0'),
                        HEX.get(n & 0xF).copied().unwrap_or(b'0'),
                    ];
                    &tmp
                }
                c => c.encode_utf8(&mut tmp).as_bytes(),
            };
            self.raw(bytes)?;
        }
        Ok(())
    }
}

/// A writer that counts what it writes.
struct Counted<'a, W: ?Sized> {
    out: &'a mut W,
    bytes: &'a mut u64,
}

impl<W: Write + ?Sized> Write for Counted<'_, W> {
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), BufferFull> {
        self.out.write_bytes(bytes)?;
        *self.bytes = self.bytes.saturating_add(bytes.len() as u64);
        Ok(())
    }

    fn room(&self) -> usize {
        self.out.room()
    }
}

/// The pipeline's sink while one chunk runs: writes each block's output.
struct Forward<'a, W: ?Sized> {
    out: &'a mut W,
    /// The raw buffer's bytes, from stream offset `raw_start`.
    raw: &'a [u8],
    raw_start: u64,
    /// The bytes pushed now, from stream offset `base`.
    chunk: &'a [u8],
    base: u64,
    /// `chunk` has no CR and no bare `data` line ([`no_bare_data`]): see
    /// [`Forward::forward`]'s fast path. `None` until a block needs it
    /// (most blocks are plain frames that [`Forward::forwarded_as_is`]
    /// takes: the chunk is then never looked at).
    chunk_plain: Option<bool>,
    accounted: &'a mut u64,
    after_cr: &'a mut bool,
    /// See [`Rewriter::line`].
    line: &'a mut relines::Progress,
    stats: &'a mut Stats,
    options: Options,
    /// The frame whose output is being written, and whether its bytes were.
    frame: Option<u64>,
    frame_written: bool,
    failed: bool,
    /// Set when the stop policy stops: nothing more is written.
    stop: &'a mut Stop,
    filter: &'a mut ToolFilter,
    /// See [`Rewriter::streamed`]; and whether the current frame's bytes
    /// went out so.
    streamed: &'a mut u64,
    frame_streamed: bool,
    /// Stream bytes `start..end` of `chunk` forwarded as they are but not
    /// yet written: consecutive blocks go out in one write (see
    /// [`Forward::write_chunk`]); [`Forward::flush`] writes them before
    /// anything else is written, and `with_forward` before it returns.
    pending: (u64, u64),
}

impl<'a, W: Write + ?Sized> Forward<'a, W> {
    /// Whether `chunk` is plain (see the field), looked at once.
    fn chunk_plain(&mut self) -> bool {
        let chunk = self.chunk;
        *self
            .chunk_plain
            .get_or_insert_with(|| memchr::memchr(b'\r', chunk).is_none() && no_bare_data(chunk))
    }

    /// Fast path for blocks forwarded as they are: the chunk's bytes
    /// `a..b` (clamped to it, as [`Forward::parts`] does) join the pending
    /// ones if they follow them, so a push's unchanged blocks go out in one
    /// write instead of one each. The output is the same bytes in the same
    /// order: every other write flushes first. `bytes_out` counts them now,
    /// as a write would. `tests::gateway_fast_paths_match_general_path`
    /// compares it with writing each block.
    #[inline(always)]
    fn write_chunk(&mut self, a: u64, b: u64) {
        let end = self.base.saturating_add(self.chunk.len() as u64);
        // `clamp` without its panic path (`base <= end` always).
        let (a, b) = (a.max(self.base).min(end), b.max(self.base).min(end));
        if self.failed || a >= b {
            return;
        }
        if !crate::testing::fast_paths() {
            let at = |x: u64| x.saturating_sub(self.base) as usize;
            let chunk = self.chunk;
            self.write(chunk.get(at(a)..at(b)).unwrap_or_default());
            return;
        }
        if self.pending.1 != a || b.saturating_sub(self.pending.0) > COALESCE {
            self.flush();
            self.pending = (a, a);
        }
        self.pending.1 = b;
        self.stats.bytes_out = self.stats.bytes_out.saturating_add(b.saturating_sub(a));
    }

    /// Writes the pending bytes (see [`Forward::write_chunk`]).
    #[inline(never)]
    fn flush(&mut self) {
        let (a, b) = core::mem::take(&mut self.pending);
        if a >= b || self.failed {
            return;
        }
        let at = |x: u64| x.saturating_sub(self.base) as usize;
        let bytes = self.chunk.get(at(a)..at(b)).unwrap_or_default();
        if self.out.write_bytes(bytes).is_err() {
            self.failed = true;
        }
    }

    /// Stream bytes `a..b`: the part in the raw buffer, then the part in
    /// the chunk.
    fn parts(&self, a: u64, b: u64) -> [&'a [u8]; 2] {
        let (raw, chunk) = (self.raw, self.chunk);
        let slice = |bytes: &'a [u8], start: u64| {
            let end = start.saturating_add(bytes.len() as u64);
            // `clamp` without its panic path (`start <= end`).
            let at = |x: u64| x.max(start).min(end).saturating_sub(start) as usize;
            bytes.get(at(a)..at(b)).unwrap_or_default()
        };
        [slice(raw, self.raw_start), slice(chunk, self.base)]
    }

    fn write(&mut self, bytes: &[u8]) {
        self.flush();
        if self.failed || bytes.is_empty() {
            return;
        }
        match self.out.write_bytes(bytes) {
            Ok(()) => {
                self.stats.bytes_out = self.stats.bytes_out.saturating_add(bytes.len() as u64)
            }
            Err(BufferFull) => self.failed = true,
        }
    }

    /// Writes stream bytes `a..b` as they are, or with LF line ends if the
    /// reference client could not read them (then returns true).
    fn forward(&mut self, a: u64, b: u64) -> bool {
        if a >= b && !*self.after_cr {
            // Nothing to write (the gap before most blocks), and no CR
            // state to settle: what the fast path below answers.
            return false;
        }
        let parts = self.parts(a, b);
        let [x, y] = parts;
        let line = *self.line;
        if x.is_empty()
            && !*self.after_cr
            && line == relines::LINE_START
            && (y.is_empty() || self.chunk_plain())
        {
            // Fast path, the same answer as `relines::check`: bytes wholly
            // in a plain chunk have no CR, and a bare `data` line in them
            // would be at their start or after a LF in the chunk; ending
            // in LF, they leave the next line at its start.
            if y.is_empty() {
                return false;
            }
            if !y.starts_with(b"data\n")
                && y.last() == Some(&b'\n')
                && (self.stats.bytes_out > 0 || !y.starts_with(b"\xEF\xBB\xBF"))
            {
                self.write_chunk(a, b);
                return false;
            }
        }
        if self.stats.bytes_out == 0 && x.iter().chain(y).take(3).eq(b"\xEF\xBB\xBF") {
            // Bytes that were a line's, not a BOM, would read as one at the
            // start of the output: a blank line keeps them a line's.
            self.write(b"\n");
        }
        self.flush();
        let skip_lf = core::mem::replace(self.after_cr, false);
        match relines::check(parts, skip_lf, line) {
            Ok(after) => {
                for part in parts {
                    self.write(part);
                }
                *self.line = after;
                false
            }
            Err(relines::Needed) => {
                let mut out = Counted {
                    out: &mut *self.out,
                    bytes: &mut self.stats.bytes_out,
                };
                match relines::write(parts, skip_lf, line, &mut out) {
                    Ok(after) => *self.line = after,
                    Err(BufferFull) => self.failed = true,
                }
                *self.after_cr = parts.iter().rev().find_map(|p| p.last()) == Some(&b'\r');
                true
            }
        }
    }

    /// Counts a block written as it was, or re-lined.
    fn count(&mut self, relined: bool) {
        let n = if relined {
            &mut self.stats.relined
        } else {
            &mut self.stats.forwarded
        };
        *n = n.saturating_add(1);
    }

    /// Where the bytes before a block start: past a leading BOM, which is
    /// not forwarded (clients drop it; forwarding it would depend on what
    /// follows).
    fn gap_start(&self) -> u64 {
        let from = *self.accounted;
        if from == 0 {
            let [a, b] = self.parts(0, 3);
            if a.iter().chain(b).eq(b"\xEF\xBB\xBF") {
                return 3;
            }
        }
        from
    }

    /// Fast path for the event of an unchanged frame that follows the
    /// last one written, wholly in the chunk: what [`Forward::begin`] (no
    /// gap to forward) and [`Forward::frame_bytes`] (the bytes as they are)
    /// do for it, without their general checks; returns false, having done
    /// nothing, for anything else. It assumes (and checks) the first event
    /// of an original, terminated, not streamed frame that the framer found
    /// plain ([`FrameInfo::plain`]: no CR, no bare `data` line, so nothing to
    /// re-line, without looking at the chunk), no option that re-encodes or
    /// drops events, no CR before it and output already started (so no BOM
    /// question). `tests::gateway_fast_paths_match_general_path` compares
    /// the output and statistics with the general path's.
    #[inline(always)]
    fn forwarded_as_is(&mut self, info: &FrameInfo) -> bool {
        let chunk_end = self.base.saturating_add(self.chunk.len() as u64);
        let passthrough = !self.options.canonical
            && !self.options.drop_raw
            && self.filter.is_empty()
            && crate::testing::fast_paths();
        if !(passthrough
            && info.original
            && info.terminated
            && info.plain
            && !*self.after_cr
            && *self.line == relines::LINE_START
            && self.stats.bytes_out > 0
            && self.frame != Some(info.index)
            && *self.accounted == info.start
            && *self.streamed <= info.start
            && info.start >= self.base
            && info.end <= chunk_end)
        {
            return false;
        }
        self.frame = Some(info.index);
        self.frame_written = true;
        self.frame_streamed = false;
        *self.accounted = info.end;
        self.write_chunk(info.start, info.end);
        self.count(false);
        true
    }

    /// Before the first output of frame `info`: the bytes before it.
    fn begin(&mut self, info: &FrameInfo) {
        if self.frame == Some(info.index) {
            return;
        }
        self.frame = Some(info.index);
        self.frame_written = false;
        self.frame_streamed = *self.streamed > info.start;
        if !self.frame_streamed {
            let from = self.gap_start();
            self.forward(from, info.start.max(from));
        }
        *self.accounted = info.end.max(*self.accounted);
    }

    /// The current frame went out ahead of its verdict and cannot be what
    /// the client gets: it is cut (the client's parse fails) and the
    /// stream stops with `code` and `message`.
    fn cut(&mut self, code: &str, message: &dyn fmt::Display) -> ControlFlow<()> {
        self.end_streamed();
        self.stop.set_code(code, message);
        ControlFlow::Break(())
    }

    /// Ends what went out of the current frame ahead of its verdict with a
    /// data line no JSON can hold, so that the client's parse of it fails.
    fn end_streamed(&mut self) {
        let at_line_start = *self.line == relines::LINE_START;
        self.write(CUT.get(usize::from(at_line_start)..).unwrap_or_default());
        *self.line = relines::LINE_START;
        *self.streamed = 0;
        self.frame_streamed = false;
        self.stats.cut = self.stats.cut.saturating_add(1);
    }

    /// A streamed frame that must be re-encoded: its bytes are gone.
    fn cut_unencodable(&mut self) -> ControlFlow<()> {
        let message = "an event larger than the raw buffer cannot be re-encoded";
        self.cut("AGUI_STREAM_CAPACITY", &message)
    }

    /// At the end of input, the bytes no block took, up to `end`: blank
    /// lines, or a block without data that never ended (terminated, with
    /// the repair, as a cut frame is).
    fn rest(&mut self, end: u64) {
        let from = self.gap_start();
        if from >= end {
            return;
        }
        let parts = self.parts(from, end);
        let blank = parts
            .iter()
            .all(|p| p.iter().all(|&b| b == b'\n' || b == b'\r'));
        let last = parts.iter().rev().find_map(|p| p.last()).copied();
        self.forward(from, end);
        *self.accounted = end;
        *self.streamed = 0;
        if !blank && self.options.repair {
            self.write(if matches!(last, Some(b'\n' | b'\r')) {
                b"\n"
            } else {
                b"\n\n"
            });
            self.stats.repairs = self.stats.repairs.saturating_add(1);
        }
    }

    /// The frame's own bytes, once (terminated if the stream cut it).
    fn frame_bytes(&mut self, info: &FrameInfo) {
        if core::mem::replace(&mut self.frame_written, true) {
            return;
        }
        let from = if self.frame_streamed {
            core::mem::replace(self.streamed, 0)
        } else {
            info.start
        };
        let relined = self.forward(from, info.end);
        self.count(relined);
        if !info.terminated && self.options.repair {
            let parts = self.parts(info.start, info.end);
            let last = parts.iter().rev().find_map(|p| p.last()).copied();
            let end: &[u8] = if matches!(last, Some(b'\n' | b'\r')) {
                b"\n"
            } else {
                b"\n\n"
            };
            self.write(end);
            self.stats.repairs = self.stats.repairs.saturating_add(1);
        }
    }
}

impl<W: Write + ?Sized> Sink for Forward<'_, W> {
    /// The fast path ([`Forward::forwarded_as_is`]) inline, where the
    /// pipeline calls the sink; the rest out of line.
    #[inline(always)]
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
        if !self.stop.stopped() && self.forwarded_as_is(frame) {
            let ty = event.event_type().index();
            self.stats.events = self.stats.events.saturating_add(1);
            count_in(&mut self.stats.events_in, ty);
            count_in(&mut self.stats.events_out, ty);
            return ControlFlow::Continue(());
        }
        self.event_general(event, frame)
    }

    fn violation(
        &mut self,
        error: &Error,
        frame: &FrameInfo,
        message: &dyn fmt::Display,
    ) -> ControlFlow<()> {
        if self.stop.stopped() {
            return ControlFlow::Break(());
        }
        let policy = self.options.on_violation;
        self.begin(frame);
        if frame.cut_in_json && self.options.repair {
            // The stream was cut inside its last frame's JSON: that is the
            // truncation the repair reports, not a violation to stop on,
            // whether the frame fit the buffers or went out ahead of its
            // verdict (then what went out of it is cut, so that no client
            // reads it as an event).
            if self.frame_streamed {
                self.end_streamed();
            }
            self.stats.dropped = self.stats.dropped.saturating_add(1);
            return ControlFlow::Continue(());
        }
        if self.frame_streamed {
            self.stats.violations = self.stats.violations.saturating_add(1);
            count_in(&mut self.stats.violations_by_stage, error.stage.index());
            return self.cut(code_of(error), message);
        }
        if policy != OnViolation::Pass && second_terminal(error) {
            self.begin(frame);
            self.stats.duplicate_terminals = self.stats.duplicate_terminals.saturating_add(1);
            return ControlFlow::Continue(());
        }
        self.stats.violations = self.stats.violations.saturating_add(1);
        count_in(&mut self.stats.violations_by_stage, error.stage.index());
        match policy {
            OnViolation::Stop => {
                self.stop.set(error, message);
                return ControlFlow::Break(());
            }
            OnViolation::Pass if frame.original => {
                self.begin(frame);
                self.frame_bytes(frame);
                self.stats.passed = self.stats.passed.saturating_add(1);
                if let Some(ty) = frame.input_type {
                    count_in(&mut self.stats.events_out, ty.index());
                }
            }
            OnViolation::Pass | OnViolation::Drop => {
                self.begin(frame);
                self.stats.dropped = self.stats.dropped.saturating_add(1);
            }
        }
        ControlFlow::Continue(())
    }

    fn skipped(&mut self, skipped: &Skipped) -> ControlFlow<()> {
        if self.stop.stopped() {
            return ControlFlow::Break(());
        }
        match *skipped {
            Skipped::NoData { end, .. } => {
                self.frame = None;
                let from = self.gap_start();
                let relined = self.forward(from, end.max(from));
                *self.accounted = end.max(from);
                *self.streamed = 0;
                self.count(relined);
            }
            Skipped::Ignored(info) => {
                self.begin(&info);
                if self.frame_streamed && self.options.canonical {
                    return self.cut_unencodable();
                }
                if !self.options.canonical {
                    self.frame_bytes(&info);
                }
            }
            // Replaced by nothing: its stream goes on in later events.
            Skipped::Absorbed(info) => {
                self.begin(&info);
                if self.frame_streamed {
                    return self.cut_unencodable();
                }
            }
        }
        ControlFlow::Continue(())
    }
}

impl<W: Write + ?Sized> Forward<'_, W> {
    /// [`Sink::event`] past its fast path.
    #[inline(never)]
    fn event_general(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
        if self.stop.stopped() {
            return ControlFlow::Break(());
        }
        self.begin(frame);
        self.stats.events = self.stats.events.saturating_add(1);
        count_in(&mut self.stats.events_in, event.event_type().index());
        // Written by the encoder rather than as its bytes; or perhaps left
        // out (its bytes never written).
        let encoded = !frame.original
            || self.options.canonical
            || (self.options.drop_raw
                && event.event_type() != EventType::Raw
                && event.get(Key::RawEvent).is_some());
        // (The filter is asked here only for a streamed frame: `check`
        // below asks it again.)
        let left_out = || {
            !self.filter.keeps(event)
                || (self.options.drop_raw && event.event_type() == EventType::Raw)
        };
        if self.frame_streamed && (encoded || left_out()) {
            // Part of its bytes went out already.
            return self.cut_unencodable();
        }
        if encoded && frame.stand_ins != StandIns::default() {
            // The frame outgrew the frame buffer: its event shows members
            // that did not fit as stand-ins, and an encoder would write
            // those, not the real values. Nothing of it was written.
            self.stats.cut = self.stats.cut.saturating_add(1);
            let message = "an event larger than the frame buffer cannot be re-encoded";
            self.stop.set_code("AGUI_STREAM_CAPACITY", &message);
            return ControlFlow::Break(());
        }
        if !self.filter.is_empty() {
            match self.filter.check(event) {
                Filtered::Keep => {}
                Filtered::Drop => {
                    self.stats.tool_events_dropped =
                        self.stats.tool_events_dropped.saturating_add(1);
                    return ControlFlow::Continue(());
                }
                Filtered::Full => {
                    let message = "more calls to denied tools in this run than the filter holds";
                    self.stop.set_code("AGUI_STREAM_CAPACITY", &message);
                    return ControlFlow::Break(());
                }
            }
        }
        if self.options.drop_raw {
            if event.event_type() == EventType::Raw {
                self.stats.raw_dropped = self.stats.raw_dropped.saturating_add(1);
                return ControlFlow::Continue(());
            }
            if event.get(Key::RawEvent).is_some() {
                let mut event = *event;
                event.set(Key::RawEvent, None);
                self.stats.raw_dropped = self.stats.raw_dropped.saturating_add(1);
                count_in(&mut self.stats.events_out, event.event_type().index());
                // Re-encoded without it.
                return self.encoded(&event);
            }
        }
        count_in(&mut self.stats.events_out, event.event_type().index());
        if frame.original && !self.options.canonical {
            self.frame_bytes(frame);
            return ControlFlow::Continue(());
        }
        self.encoded(event)
    }
}

impl<W: Write + ?Sized> Forward<'_, W> {
    /// Writes `event` with the encoder, as `data: {json}`.
    fn encoded(&mut self, event: &Event<'_>) -> ControlFlow<()> {
        self.flush();
        let mut out = Counted {
            out: &mut *self.out,
            bytes: &mut self.stats.bytes_out,
        };
        let written = out
            .write_bytes(b"data: ")
            .and_then(|()| encode(event, &mut out))
            .and_then(|()| out.write_bytes(b"\n\n"));
        if written.is_err() {
            self.failed = true;
        }
        self.stats.encoded = self.stats.encoded.saturating_add(1);
        ControlFlow::Continue(())
    }
}

/// A RUN_FINISHED or RUN_ERROR the run's end already had.
fn second_terminal(error: &Error) -> bool {
    matches!(
        error.kind,
        ErrorKind::Verify {
            event: EventType::RunFinished | EventType::RunError,
            rule: Rule::AfterRunError | Rule::AfterRunFinished,
        }
    )
}

/// Re-lining a block the reference client cannot read: CR and CRLF line
/// ends become LF, and a bare `data` line (a field without a colon)
/// becomes `data:`. The block may come in two parts.
mod relines {
    use crate::output::encode::{BufferFull, Write};

    /// What [`walk`] sees.
    enum Piece<'a> {
        /// Bytes of a line.
        Line(&'a [u8]),
        /// A line end (a CRLF is one); the line was a bare `data`.
        End { bare_data: bool },
    }

    /// How far the line so far is a bare `data`: `Some(n)`, it is the
    /// first `n` bytes of `data`; `None`, it cannot be one.
    pub(super) type Progress = Option<usize>;

    /// A line not begun yet.
    pub(super) const LINE_START: Progress = Some(0);

    /// Walks the lines of `parts`, the first of which is `line` so far
    /// (with `skip_lf`, a leading LF ends no line). Stops at the first
    /// `Err`; else returns how far the last line (unended) is a `data`.
    fn walk<E>(
        parts: [&[u8]; 2],
        skip_lf: bool,
        line: Progress,
        mut visit: impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<Progress, E> {
        let mut after_cr = skip_lf;
        let mut data = line;
        for part in parts {
            let mut rest = part;
            while !rest.is_empty() {
                let k = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
                let (line, tail) = rest.split_at(k);
                if !line.is_empty() {
                    after_cr = false;
                    data = data.and_then(|n| {
                        let m = n.checked_add(line.len())?;
                        (b"data".get(n..m) == Some(line)).then_some(m)
                    });
                    visit(Piece::Line(line))?;
                }
                let Some((&c, tail)) = tail.split_first() else {
                    break;
                };
                if !(c == b'\n' && after_cr) {
                    visit(Piece::End {
                        bare_data: data == Some(4),
                    })?;
                }
                after_cr = c == b'\r';
                data = LINE_START;
                rest = tail;
            }
        }
        Ok(data)
    }

    /// The bytes read differently to the reference client than to a
    /// WHATWG parser (or start with the LF of a CRLF already written).
    pub(super) struct Needed;

    /// `Ok` with how far the last line is a `data` if `parts` (after a
    /// line that is `line` so far) can go out as they are.
    pub(super) fn check(
        parts: [&[u8]; 2],
        skip_lf: bool,
        line: Progress,
    ) -> Result<Progress, Needed> {
        if parts.iter().any(|p| memchr::memchr(b'\r', p).is_some())
            || (skip_lf
                && parts.iter().find(|p| !p.is_empty()).and_then(|p| p.first()) == Some(&b'\n'))
        {
            return Err(Needed);
        }
        walk(parts, false, line, |piece| match piece {
            Piece::End { bare_data: true } => Err(Needed),
            _ => Ok(()),
        })
    }

    /// Writes `parts` (after a line that is `line` so far) with LF line
    /// ends and bare `data` lines as `data:`; returns how far the last
    /// line is a `data`.
    pub(super) fn write<W: Write + ?Sized>(
        parts: [&[u8]; 2],
        skip_lf: bool,
        line: Progress,
        out: &mut W,
    ) -> Result<Progress, BufferFull> {
        walk(parts, skip_lf, line, |piece| match piece {
            Piece::Line(line) => out.write_bytes(line),
            Piece::End { bare_data } => {
                if bare_data {
                    out.write_bytes(b":")?;
                }
                out.write_bytes(b"\n")
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state of a stream beside its buffers, as README says.
    #[test]
    fn state_is_fixed() {
        let size = core::mem::size_of::<Rewriter<'static>>();
        extern crate std;
        std::println!("size_of Rewriter: {size}");
        assert!(size <= 6912, "{size}");
    }

    /// Statistics serialize as `agui gateway` prints them.
    #[cfg(feature = "serde")]
    #[test]
    fn stats_serialize_with_names() {
        let mut stats = Stats {
            bytes_in: 7,
            ..Stats::default()
        };
        count_in(&mut stats.events_in, EventType::RunStarted.index());
        count_in(&mut stats.violations_by_stage, Stage::Verify.index());
        let json = serde_json::to_string(&stats).unwrap();
        assert!(
            json.starts_with(r#"{"bytes_in":7,"bytes_out":0,"#),
            "{json}"
        );
        assert!(
            json.ends_with(r#""events_in":{"RUN_STARTED":1},"events_out":{},"violations_by_stage":{"verify":1}}"#),
            "{json}"
        );
    }

    /// The bound README quotes.
    #[test]
    fn the_bound_is_three_times_the_block_and_a_constant() {
        let (mut frames, mut raw) = ([0u8; 64], [0u8; 64]);
        let r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
        assert_eq!(r.frame_bound(0), 3808);
        assert_eq!(r.frame_bound(100), 4108);
        let (mut frames, mut raw) = ([0u8; 64], [0u8; 64]);
        let options = Options::new().close_open(true);
        let r = Rewriter::new(&mut frames, &mut raw, Config::new(), options);
        assert_eq!(r.frame_bound(0), 3808 + 32 * 96 + 12 * 1152);
    }

    /// The look-ahead finds each block's end where the framer does, in any
    /// split.
    #[test]
    fn block_ends_are_found_in_any_split() {
        let s: &[u8] = b"data: a\n\n: c\r\n\r\ndata: b\r\rdata: x\ndata: y\n\r\n\n";
        let ends = |pieces: &[&[u8]], no_cr: bool| {
            let mut scan = BlockEnd::new();
            let (mut out, mut base) = (Vec::new(), 0);
            for p in pieces {
                let mut from = 0;
                while let Some(k) = scan.next(&p[from..], no_cr) {
                    from += k;
                    out.push(base + from);
                }
                base += p.len();
            }
            out
        };
        extern crate std;
        use std::vec::Vec;
        let want = ends(&[s], false);
        // After each blank line (a CRLF's LF comes later).
        assert_eq!(want, [9, 15, 25, 42, 44]);
        for cut in 0..=s.len() {
            assert_eq!(ends(&[&s[..cut], &s[cut..]], false), want, "cut at {cut}");
        }
        // Without CR, the LF-only search finds the same ends.
        let lf: &[u8] = b"data: a\n\n\n: c\n\ndata: b\nid: 2\n\n\n\ndata: x\n\n";
        let want = ends(&[lf], false);
        assert_eq!(want, [9, 10, 15, 30, 31, 32, 41]);
        for cut in 0..=lf.len() {
            for no_cr in [false, true] {
                assert_eq!(ends(&[&lf[..cut], &lf[cut..]], no_cr), want, "cut at {cut}");
            }
        }
    }

    /// `Forward::forward`'s fast path gives `relines::needed`'s answer: in
    /// a plain chunk, bytes that do not start with a bare `data` line
    /// need no re-lining, wherever they start and end.
    #[test]
    fn plain_chunks_need_no_relining() {
        let chunks: [&[u8]; 8] = [
            b"data: a\n\ndata\n\n",
            b"data\n\ndata: b\n\n",
            b"xdata\n\n: data\ndata:\n\n",
            b"data: a\r\n\r\n",
            b"id: 1\ndata\ndata: x\n\n",
            b"data: {\"a\":\"data\"}\n\n",
            b"data: {\"a\":\"\ndata\n\n",
            b": x\ndata\n\n",
        ];
        // What `Rewriter::push` finds.
        // The fast path's answer (whatever the switch of `crate::fast`).
        let plain = |chunk: &[u8]| !chunk.contains(&b'\r') && no_bare_data_after_lf(chunk);
        for chunk in chunks {
            let plain = plain(chunk);
            for a in 0..=chunk.len() {
                for b in a..=chunk.len() {
                    let y = &chunk[a..b];
                    if plain && !y.starts_with(b"data\n") {
                        let fine = relines::check([&[], y], false, relines::LINE_START).is_ok();
                        assert!(fine, "{chunk:?} {a}..{b}");
                    }
                }
            }
        }
        // `xdata` and `: data` are no bare `data` lines.
        assert!(plain(chunks[5]) && plain(chunks[2]));
        assert!(!plain(chunks[0]) && !plain(chunks[1]) && !plain(chunks[3]) && !plain(chunks[4]));
        assert!(!plain(chunks[6]) && !plain(chunks[7]));
    }

    /// The gateway's fast paths (a block forwarded as it is, writes
    /// gathered over consecutive blocks, the search for bare `data` lines)
    /// give the general path's output, statistics and results on every
    /// corpus stream, in both dialects, under each option, in pushes of
    /// several sizes, into a growing writer and into a small drained one.
    #[test]
    #[cfg_attr(miri, ignore = "the whole corpus")]
    fn gateway_fast_paths_match_general_path() {
        extern crate std;
        use crate::Dialect;
        use crate::output::encode::SliceWriter;
        use std::format;
        use std::string::String;
        use std::vec::Vec;

        fn run(
            stream: &[u8],
            config: Config,
            options: Options,
            deny: bool,
            piece: usize,
            room: Option<usize>,
        ) -> (Vec<u8>, String) {
            let (mut frames, mut raw) = ([0u8; 4096], [0u8; 4096]);
            let mut r = Rewriter::new(&mut frames, &mut raw, config, options);
            if deny {
                r.deny_tool("search").expect("room for a name");
            }
            let mut all = Vec::new();
            let mut log = String::new();
            let mut slice = std::vec![0u8; room.unwrap_or(0)];
            for chunk in stream.chunks(piece.max(1)) {
                let mut at = 0;
                while at < chunk.len() {
                    let rest = &chunk[at..];
                    let pushed = match room {
                        None => r.push(rest, &mut all),
                        Some(_) => {
                            let mut out = SliceWriter::new(&mut slice);
                            let pushed = r.push(rest, &mut out);
                            all.extend_from_slice(out.written());
                            pushed
                        }
                    };
                    log.push_str(&format!("{pushed:?};"));
                    match pushed {
                        Ok(p) if p.read > 0 => at += p.read,
                        _ => break,
                    }
                }
            }
            let finished = match room {
                None => r.finish(&mut all).map(|s| s.is_some()),
                Some(_) => {
                    let mut out = SliceWriter::new(&mut slice);
                    let f = r.finish(&mut out).map(|s| s.is_some());
                    all.extend_from_slice(out.written());
                    f
                }
            };
            log.push_str(&format!("{finished:?};{:?}", r.stats()));
            (all, log)
        }

        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        let mut files = Vec::new();
        for dir in ["conformance", "extra", "real"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            files.extend(
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "sse")),
            );
        }
        files.sort();
        assert!(files.len() > 100, "the corpus is there");
        let mut streams: Vec<Vec<u8>> =
            files.iter().filter_map(|f| std::fs::read(f).ok()).collect();
        // Shapes at the fast paths' edges: a bare `data` line after a LF
        // and at a chunk's start, `a` + LF in a value, CRs, a BOM.
        streams.push(b"data\n\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n: a\ndata\n\n".to_vec());
        streams.push(b"\xEF\xBB\xBFdata: {\"type\":\"RUN_STARTED\",\"threadId\":\"a\n\n\",\"runId\":\"r\"}\r\n\r\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n".to_vec());
        let options = [
            (Options::new(), false),
            (Options::new().on_violation(OnViolation::Pass), false),
            (
                Options::new()
                    .on_violation(OnViolation::Drop)
                    .close_open(true),
                false,
            ),
            (Options::new().canonical(true), false),
            (Options::new().drop_raw(true), false),
            (Options::new(), true),
        ];
        // Small pushes and one push into a growing writer, 1,460-byte ones
        // into a small writer; V0 with the default options only.
        let shapes = [(7, None), (usize::MAX, None), (1460, Some(8192))];
        for stream in &streams {
            for dialect in [Dialect::V1, Dialect::V0] {
                let config = Config::new().dialect(dialect);
                let options = match dialect {
                    Dialect::V1 => &options[..],
                    Dialect::V0 => &options[..1],
                };
                for &(opts, deny) in options {
                    for (piece, room) in shapes {
                        let fast = run(stream, config, opts, deny, piece, room);
                        let general = crate::testing::general_only(|| {
                            run(stream, config, opts, deny, piece, room)
                        });
                        assert!(
                            fast == general,
                            "{} {dialect:?} {opts:?} {piece} {room:?}",
                            String::from_utf8_lossy(&stream[..stream.len().min(200)])
                        );
                    }
                }
            }
        }
    }
}
