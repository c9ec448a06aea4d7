//! A frame that outgrew the frame buffer, read as it streams past: its
//! JSON syntax is checked (the verdict the reference gives first, with its
//! position), and a stand-in for it is written into the free frame buffer
//! ([`reduce`]) — the payload itself where it fits, the members no rule
//! reads emptied where it does not, its message histories and JSON Patches
//! read element by element ([`elements`]). The stand-in then goes through the
//! stages like any frame, so the verdict is the reference's; only where a
//! stand-in could change it (or what a rule reads did not fit) is the
//! frame a [`Capacity::FrameBuffer`](crate::Capacity::FrameBuffer) error.
//! Nothing but this small state and the buffer is used.

mod elements;
mod marks;
mod place;
mod reduce;
mod stand_ins;
mod utf16;

use elements::FILTER;
use marks::{EventRoot, Root};
pub(crate) use marks::{Found, Marks, REQUEST_FIELDS};
pub(crate) use reduce::Reduced;
use reduce::Reducer;
pub use stand_ins::StandIns;
use stand_ins::allowed;
use utf16::Utf16Count;

use crate::check::verify::Staged;
use crate::input::json::{ErrorKind as JsonErrorKind, Limits, ScanError, Scanner, V8Message};
use crate::input::sse::SpillSink;
use crate::protocol::dialect::Dialect;
use crate::protocol::schema::Obj;

/// The state of a spilling frame, or the message of the last JSON error:
/// the framer's spill sink (one or the other is needed at a time).
#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)] // the state of a stream, held inline (no heap)
pub(crate) enum JsonState {
    /// The last JSON syntax error, as V8 words it, and the dialect the
    /// next spilling frame is read in.
    Message(V8Message, Dialect),
    /// A frame is spilling.
    Spilling(Spilling),
}

impl JsonState {
    /// The dialect frames are read in.
    pub(crate) const fn dialect(&self) -> Dialect {
        match self {
            JsonState::Message(_, d) => *d,
            JsonState::Spilling(s) => match s.progress {
                Progress::Reading { stand_in, .. } => stand_in.dialect(),
                Progress::Failed { dialect, .. } => dialect,
            },
        }
    }
}

impl SpillSink for JsonState {
    fn begin(&mut self, offset: u64, buf: &mut [u8], held: usize) -> bool {
        let mut s = Spilling::new(offset, self.dialect());
        s.begin_held(buf, held);
        *self = JsonState::Spilling(s);
        true
    }

    fn bytes(&mut self, bytes: &[u8], buf: &mut [u8]) {
        if let JsonState::Spilling(s) = self {
            s.feed(bytes, buf);
        }
    }

    fn end(&mut self, _: &mut [u8]) -> usize {
        match self {
            JsonState::Spilling(s) => s.stand_in().map_or(0, |r| r.len),
            JsonState::Message(..) => 0,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Spilling<R: Root = EventRoot> {
    /// Stream offset of the first byte that did not fit.
    overflow_at: u64,
    /// Where the payload's first line ends (`usize::MAX` until it does).
    first_lf: usize,
    progress: Progress<R>,
}

/// How far a spilling payload has been read.
#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)] // held inline, in the state above
enum Progress<R: Root> {
    Reading {
        scan: Scanner<1>,
        /// UTF-16 units of the bytes seen, as the reference decodes them.
        units: Utf16Count,
        /// The last bytes seen.
        recent: Quote,
        stand_in: Reducer<R>,
    },
    /// The first syntax error, with the UTF-16 units before it and the
    /// bytes around it (for V8's message, which quotes them).
    Failed {
        error: ScanError,
        units: u32,
        before: Quote,
        /// From the error's byte on.
        rest: Quote,
        dialect: Dialect,
    },
}

/// Bytes that hold ten UTF-16 units (three bytes each at most, or four
/// for two), with room for a character cut at the start.
const QUOTE: usize = 40;

/// Up to [`QUOTE`] bytes of the payload: the last ones seen, or the first
/// from an error on.
#[derive(Clone, Copy, Debug)]
struct Quote {
    bytes: [u8; QUOTE],
    len: u8,
}

impl Quote {
    const fn new() -> Self {
        Quote {
            bytes: [0; QUOTE],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }

    fn is_full(&self) -> bool {
        usize::from(self.len) == QUOTE
    }

    /// Keeps the last [`QUOTE`] bytes of what it held and `bytes`.
    fn keep_last(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(QUOTE);
        let held = usize::from(self.len).min(QUOTE.saturating_sub(n));
        self.bytes.copy_within(
            usize::from(self.len).saturating_sub(held)..usize::from(self.len),
            0,
        );
        let tail = bytes
            .get(bytes.len().saturating_sub(n)..)
            .unwrap_or_default();
        if let Some(dst) = self.bytes.get_mut(held..held.saturating_add(n)) {
            dst.copy_from_slice(tail);
        }
        self.len = u8::try_from(held.saturating_add(n)).unwrap_or(0);
    }

    /// Adds the first of `bytes` while there is room.
    fn fill(&mut self, bytes: &[u8]) {
        let at = usize::from(self.len);
        let n = bytes.len().min(QUOTE.saturating_sub(at));
        if let (Some(dst), Some(src)) =
            (self.bytes.get_mut(at..at.saturating_add(n)), bytes.get(..n))
        {
            dst.copy_from_slice(src);
            self.len = u8::try_from(at.saturating_add(n)).unwrap_or(0);
        }
    }
}

/// What a spilled frame came to.
enum Verdict {
    /// Well-formed, and its stand-in is the frame's payload.
    StandIn(Reduced),
    /// Well-formed, but what a rule reads did not fit.
    TooLarge,
    /// A syntax error (or too deep), at this payload offset (exact, past
    /// 4 GiB too); on the first data line if `first_line`.
    Json { error: ScanError, first_line: bool },
}

impl Spilling {
    /// A frame that stopped fitting at stream offset `overflow_at`; its
    /// JSON is checked to the default limits (1024 levels, if the buffer's
    /// last bytes can hold the levels past 64; else 64).
    const fn new(overflow_at: u64, dialect: Dialect) -> Self {
        Spilling {
            overflow_at,
            first_lf: usize::MAX,
            progress: Progress::Reading {
                scan: Scanner::new(Limits::new()),
                units: Utf16Count::new(),
                recent: Quote::new(),
                stand_in: Reducer::new(dialect),
            },
        }
    }
}

impl Spilling<Marks> {
    /// A request body of shape `shape`, read from its first byte: its JSON
    /// checked to `limits`.
    pub(crate) const fn request(dialect: Dialect, shape: &'static Obj, limits: Limits) -> Self {
        Spilling {
            overflow_at: 0,
            first_lf: usize::MAX,
            progress: Progress::Reading {
                scan: Scanner::new(limits),
                units: Utf16Count::new(),
                recent: Quote::new(),
                stand_in: Reducer::with_root(dialect, Marks::new(shape)),
            },
        }
    }
}

impl<R: Root> Spilling<R> {
    /// Reads the payload's first `held` bytes, which are `buf`'s own: what
    /// the buffer's last [`FILTER`] bytes hold is read from a copy (an
    /// array read element by element may need them).
    pub(crate) fn begin_held(&mut self, buf: &mut [u8], held: usize) {
        let split = held.min(buf.len().saturating_sub(FILTER));
        let mut last = [0u8; FILTER];
        let n = held.saturating_sub(split).min(FILTER);
        if let (Some(dst), Some(src)) = (last.get_mut(..n), buf.get(split..held)) {
            dst.copy_from_slice(src);
        }
        self.feed_held(buf, split);
        self.feed(last.get(..n).unwrap_or_default(), buf);
    }

    /// The payload's first bytes, `buf[..held]` (clear of the buffer's
    /// last [`FILTER`] bytes).
    fn feed_held(&mut self, buf: &mut [u8], held: usize) {
        let len = buf.len();
        let (head, tail) = buf.split_at_mut(len.saturating_sub(FILTER));
        self.check(head.get(..held).unwrap_or_default(), tail, len);
        if let Progress::Reading { stand_in, .. } = &mut self.progress {
            stand_in.feed_held(buf, held);
        }
    }

    pub(crate) fn feed(&mut self, bytes: &[u8], buf: &mut [u8]) {
        let len = buf.len();
        let at = len.saturating_sub(FILTER);
        self.check(bytes, buf.get_mut(at..).unwrap_or_default(), len);
        if let Progress::Reading { stand_in, .. } = &mut self.progress {
            stand_in.feed(bytes, buf);
        }
    }

    /// Checks the syntax of the next bytes. Levels past 64 are kept in
    /// `tail`, the last bytes of a `len`-byte buffer, if the stand-in can
    /// spare them.
    fn check(&mut self, bytes: &[u8], tail: &mut [u8], len: usize) {
        let (scan, units, recent, stand_in) = match &mut self.progress {
            Progress::Reading {
                scan,
                units,
                recent,
                stand_in,
            } => (scan, units, recent, stand_in),
            Progress::Failed { rest, .. } => return rest.fill(bytes),
        };
        let seen = scan.fed();
        if self.first_lf == usize::MAX
            && let Some(k) = memchr::memchr(b'\n', bytes)
        {
            self.first_lf = seen.saturating_add(k);
        }
        let before = *scan;
        let mut result = match stand_in.deep() {
            true => scan.feed_deep(bytes, tail),
            false => scan.feed(bytes),
        };
        if let Err(e) = result
            && matches!(e.kind, JsonErrorKind::TooDeep { .. })
            && !stand_in.deep()
            && stand_in.claim_deep(len)
        {
            // Deeper than 64 levels: again, with the tail for the rest.
            tail.fill(0);
            *scan = before;
            result = scan.feed_deep(bytes, tail);
        }
        match result {
            Ok(()) => {
                units.feed(bytes);
                recent.keep_last(bytes);
            }
            Err(error) => {
                let at = error.offset.saturating_sub(seen);
                let head = bytes.get(..at).unwrap_or_default();
                units.feed(head);
                let mut before = *recent;
                before.keep_last(head);
                let mut rest = Quote::new();
                rest.fill(bytes.get(at..).unwrap_or_default());
                self.progress = Progress::Failed {
                    error,
                    units: units.before_next(),
                    before,
                    rest,
                    dialect: stand_in.dialect(),
                };
            }
        }
    }

    /// The stand-in, for well-formed JSON whose needed members fit.
    fn stand_in(&self) -> Option<Reduced> {
        match &self.progress {
            Progress::Reading { scan, stand_in, .. } if scan.is_complete() => stand_in.finish(),
            _ => None,
        }
    }

    /// Whether the JSON already failed, with all [`finish`](Self::finish)
    /// needs to word it (the text V8 quotes after an unexpected token or
    /// a bad escape): its verdict is then a JSON error however the frame
    /// goes on.
    pub(crate) fn failed(&self) -> bool {
        match self.progress {
            Progress::Failed { error, rest, .. } => {
                !matches!(
                    error.kind,
                    JsonErrorKind::BadEscape | JsonErrorKind::UnexpectedToken(_)
                ) || rest.is_full()
            }
            Progress::Reading { .. } => false,
        }
    }

    /// Whether no byte so far broke the JSON: a JSON error at
    /// [`finish`](Self::finish) is then where the bytes ended (a stream
    /// cut inside the frame), not in the bytes that arrived.
    fn unbroken(&self) -> bool {
        matches!(self.progress, Progress::Reading { .. })
    }

    /// The verdict at the frame's end, and V8's message for a JSON error.
    /// `buf` is the frame buffer.
    fn finish(&self, buf: &[u8]) -> (Verdict, Option<V8Message>) {
        let deep = buf
            .get(buf.len().saturating_sub(FILTER)..)
            .unwrap_or_default();
        let (error, units, before, rest) = match self.progress {
            Progress::Failed {
                error,
                units,
                before,
                rest,
                ..
            } => (error, units, before, rest),
            Progress::Reading {
                scan,
                units,
                recent,
                stand_in,
            } => match scan.finish_deep(if stand_in.deep() { deep } else { &[] }) {
                Ok(()) => {
                    let verdict = match self.stand_in() {
                        Some(reduced) => Verdict::StandIn(reduced),
                        None => Verdict::TooLarge,
                    };
                    return (verdict, None);
                }
                Err(e) => (e, units.before_next(), recent, Quote::new()),
            },
        };
        let first_line = error.offset <= self.first_lf;
        let message = match error.kind {
            JsonErrorKind::TooDeep { .. } => None,
            // What arrived of the rest of the frame is all of it, unless
            // the quote is full.
            kind => Some(V8Message::around(
                kind,
                units as usize,
                before.as_bytes(),
                rest.as_bytes(),
                !rest.is_full(),
            )),
        };
        (Verdict::Json { error, first_line }, message)
    }
}

/// A request body's verdict at its end, before its stand-in is checked.
pub(crate) enum RequestEnd<'a> {
    /// Well-formed: its stand-in (reduced where it did not fit, its
    /// arrays' passing elements let go) and what reading it marked.
    StandIn {
        stand_in: &'a [u8],
        marks: &'a Marks,
    },
    /// A syntax error (or too deep), with V8's message.
    Json(ScanError, Option<V8Message>),
    /// What a rule reads did not fit: at this text offset.
    TooLarge { at: u64 },
}

impl Spilling<Marks> {
    /// The verdict of a request body read whole into `buf` (the buffer it
    /// was fed with).
    pub(crate) fn request_end<'a>(&'a self, buf: &'a [u8]) -> RequestEnd<'a> {
        match self.finish(buf) {
            (Verdict::Json { error, .. }, message) => RequestEnd::Json(error, message),
            (verdict, _) => match (&self.progress, verdict) {
                (Progress::Reading { stand_in, .. }, Verdict::StandIn(reduced)) => {
                    match stand_in.marks() {
                        Some(marks) => RequestEnd::StandIn {
                            stand_in: buf.get(..reduced.len).unwrap_or_default(),
                            marks,
                        },
                        None => RequestEnd::TooLarge { at: 0 },
                    }
                }
                (Progress::Reading { stand_in, .. }, _) => RequestEnd::TooLarge {
                    at: stand_in.marks().map_or(0, |m| m.at),
                },
                _ => RequestEnd::TooLarge { at: 0 },
            },
        }
    }
}

/// A spilled frame's verdict at its end, as far as the spill sink holds
/// it. The pipeline turns it into events or an error.
pub(crate) enum Ending<'a> {
    /// Well-formed, and the stand-in may stand for it: the stand-in (the
    /// first bytes of the frame buffer) goes through the stages, with the
    /// records of the elements it let go.
    StandIn {
        payload: &'a [u8],
        stand_ins: StandIns,
        staged: Option<Staged<'a>>,
    },
    /// A syntax error (or too deep): the reference's verdict. On the
    /// first data line if `first_line`.
    Json { error: ScanError, first_line: bool },
    /// The verdict needs what did not fit: the frame buffer's capacity,
    /// exceeded at stream offset `overflow_at` (`None`: the frame never
    /// spilled into this state; its start).
    TooLarge { overflow_at: Option<u64> },
}

/// [`Ending`] with what goes with it.
pub(crate) struct Ended<'a> {
    pub(crate) ending: Ending<'a>,
    /// V8's message for a JSON error (kept for `Pipeline::message`).
    pub(crate) message: Option<V8Message>,
    /// No byte that arrived broke the JSON: a JSON error is where the bytes
    /// ended (a stream cut inside the frame).
    pub(crate) unbroken: bool,
}

impl JsonState {
    /// The verdict of the frame that spilled, whose stand-in is the first
    /// `len` bytes of `buf` (the frame buffer): a stand-in through the
    /// stages only where it cannot change the verdict
    /// ([`allowed`], with tool arguments checked if `check_tool_args`).
    pub(crate) fn end_spilled<'a>(
        &self,
        buf: &'a [u8],
        len: usize,
        check_tool_args: bool,
    ) -> Ended<'a> {
        let JsonState::Spilling(spilling) = self else {
            return Ended {
                ending: Ending::TooLarge { overflow_at: None },
                message: None,
                unbroken: false,
            };
        };
        let (verdict, message) = spilling.finish(buf);
        let overflow_at = Some(spilling.overflow_at);
        let ending = match verdict {
            Verdict::StandIn(reduced) => {
                let payload = buf.get(..len).unwrap_or_default();
                if allowed(reduced.stand_ins, payload, check_tool_args) {
                    Ending::StandIn {
                        payload,
                        stand_ins: reduced.stand_ins,
                        staged: staged(&reduced, buf),
                    }
                } else {
                    Ending::TooLarge { overflow_at }
                }
            }
            Verdict::Json { error, first_line } => Ending::Json { error, first_line },
            Verdict::TooLarge => Ending::TooLarge { overflow_at },
        };
        Ended {
            ending,
            message,
            unbroken: spilling.unbroken(),
        }
    }

    /// The JSON error of a frame still spilling, if its JSON already
    /// failed for good (see [`Spilling::failed`]): the error, whether it is
    /// on the first data line, and V8's message. `buf` is the frame buffer.
    pub(crate) fn failed_early(&self, buf: &[u8]) -> Option<(ScanError, bool, Option<V8Message>)> {
        let JsonState::Spilling(spilling) = self else {
            return None;
        };
        if !spilling.failed() {
            return None;
        }
        match spilling.finish(buf) {
            (Verdict::Json { error, first_line }, message) => Some((error, first_line, message)),
            _ => None,
        }
    }
}

/// The records a spilled frame's stand-in let go, in the buffer `buf`
/// whose first `reduced.len` bytes are the stand-in.
fn staged<'a>(reduced: &Reduced, buf: &'a [u8]) -> Option<Staged<'a>> {
    if !reduced.staged {
        return None;
    }
    Some(Staged {
        filter: buf.get(buf.len().checked_sub(FILTER)?..)?,
        parent: reduced.parent,
        subagents: reduced.subagents,
    })
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::string::ToString;

    /// V8's message for a payload that spilled, fed in `piece`-byte pieces.
    fn message(payload: &[u8], piece: usize) -> std::string::String {
        let mut s = Spilling::new(0, Dialect::V1);
        let mut buf = [0u8; 16];
        for p in payload.chunks(piece) {
            s.feed(p, &mut buf);
        }
        s.finish(&buf).1.map(|m| m.to_string()).unwrap_or_default()
    }

    #[test]
    fn a_backslash_before_an_astral_character_is_an_unexpected_token() {
        for piece in [1, 2, 100] {
            let astral = message("{\"a\":\"\\\u{1F600}\"}".as_bytes(), piece);
            assert!(astral.starts_with("Unexpected token"), "{astral}");
            // Invalid UTF-8 decodes to U+FFFD, one unit: a bad escape.
            let broken = message(b"{\"a\":\"\\\xf4\xf4\xf4\xf4\"}", piece);
            assert_eq!(
                broken, "Bad escaped character in JSON at position 7",
                "{piece}"
            );
        }
    }
}
