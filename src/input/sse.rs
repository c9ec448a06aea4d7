//! Incremental Server-Sent-Events framer (WHATWG `text/event-stream` parsing).
//!
//! [`Framer`] is fed the stream push by push (pull-style, like `httparse`) and hands out
//! one [`Frame`] per dispatched event. It never allocates: a frame that lies inside one
//! push is returned as a slice of that push (zero-copy); only a frame that spans pushes, or
//! one with several `data` lines to join, is copied into a buffer the caller provides.
//! Every input byte is examined a bounded number of times, whatever the push boundaries.

use core::fmt;

use memchr::{memchr, memchr2};

/// Below this many bytes [`line_end`] looks without `memchr2`, whose setup
/// (CPU dispatch, a vector-length check, then a byte loop anyway for short
/// slices) costs more than the look itself, and small pushes hand the framer
/// such slices over and over.
const SHORT_SCAN: usize = 16;

/// The first CR or LF in `bytes`: `memchr2(b'\n', b'\r', bytes)`.
///
/// Fast path: it assumes nothing about `bytes`. A slice shorter than
/// [`SHORT_SCAN`] is read as two words that overlap (8 bytes each for 8 to
/// 15 bytes, 4 for 4 to 7; a byte loop below that): when the first word has
/// no line end, the first one in the second is the first of the slice
/// (`tests::line_end_agrees_with_memchr2` compares it with `memchr2` at
/// every length and position).
#[inline(always)]
fn line_end(bytes: &[u8]) -> Option<usize> {
    let n = bytes.len();
    if n >= SHORT_SCAN {
        // On x86-64, memchr's SSE2 searcher (always there) directly: the
        // dispatch to the best one costs more than the search of a line.
        #[cfg(target_arch = "x86_64")]
        if n <= 512
            && let Some(two) = memchr::arch::x86_64::sse2::memchr::Two::new(b'\n', b'\r')
        {
            return two.find(bytes);
        }
        return memchr2(b'\n', b'\r', bytes);
    }
    if n >= 8 {
        let (a, b) = (word::<8>(bytes, 0), word::<8>(bytes, n.saturating_sub(8)));
        let a = eol_bytes(u64::from_le_bytes(a));
        if a != 0 {
            return Some(first_marked(a));
        }
        let b = eol_bytes(u64::from_le_bytes(b));
        return (b != 0).then(|| n.saturating_sub(8).saturating_add(first_marked(b)));
    }
    if n >= 4 {
        let (a, b) = (word::<4>(bytes, 0), word::<4>(bytes, n.saturating_sub(4)));
        let a = eol_bytes(u64::from(u32::from_le_bytes(a)) | HIGH_FILL);
        if a != 0 {
            return Some(first_marked(a));
        }
        let b = eol_bytes(u64::from(u32::from_le_bytes(b)) | HIGH_FILL);
        return (b != 0).then(|| n.saturating_sub(4).saturating_add(first_marked(b)));
    }
    bytes.iter().position(|&c| c == b'\n' || c == b'\r')
}

/// `dst.copy_from_slice(src)` (the lengths are equal).
///
/// Fast path: a copy shorter than [`SHORT_SCAN`] is done as two fixed-size
/// copies that overlap (8 bytes each for 8 to 15 bytes, 4 for 4 to 7; byte
/// by byte below that) instead of a call to `memcpy`, which small pushes
/// make over and over. It assumes the lengths are equal, as
/// `copy_from_slice` does (`tests::copy_agrees_with_copy_from_slice`).
#[inline(always)]
fn copy(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n >= SHORT_SCAN || dst.len() != n {
        dst.copy_from_slice(src);
    } else if n >= 8 {
        put::<8>(dst, 0, word(src, 0));
        put::<8>(dst, n.saturating_sub(8), word(src, n.saturating_sub(8)));
    } else if n >= 4 {
        put::<4>(dst, 0, word(src, 0));
        put::<4>(dst, n.saturating_sub(4), word(src, n.saturating_sub(4)));
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
    }
}

/// Writes `w` at `dst[at..at + N]` (nothing if out of range, which the
/// callers rule out).
#[inline(always)]
fn put<const N: usize>(dst: &mut [u8], at: usize, w: [u8; N]) {
    if let Some(d) = dst.get_mut(at..).and_then(|d| d.first_chunk_mut::<N>()) {
        *d = w;
    }
}

/// The byte index of the lowest high bit set in `marks` (not 0).
#[inline(always)]
const fn first_marked(marks: u64) -> usize {
    (marks.trailing_zeros() / 8) as usize
}

/// Fills the upper four bytes of a word read from four, with bytes that are
/// neither CR nor LF.
const HIGH_FILL: u64 = 0x2020_2020_0000_0000;

/// `bytes[at..at + N]` (zeros if out of range, which the callers rule out).
#[inline(always)]
fn word<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes
        .get(at..)
        .and_then(|b| b.first_chunk::<N>())
        .copied()
        .unwrap_or([0; N])
}

/// The high bit of each byte of `w` that is CR or LF, and possibly of bytes
/// above the first such one (borrows), never below it: the lowest bit set
/// marks the first.
#[inline(always)]
const fn eol_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let lf = w ^ 0x0a0a_0a0a_0a0a_0a0a;
    let cr = w ^ 0x0d0d_0d0d_0d0d_0d0d;
    (lf.wrapping_sub(ONES) & !lf | cr.wrapping_sub(ONES) & !cr) & HIGH
}

/// Capacity in bytes of the inline storage for `event` and `id` values; longer values are
/// reported as [`FieldValue::TooLong`].
pub const FIELD_CAPACITY: usize = 64;

/// The UTF-8 byte order mark, skipped once at the very start of a stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
/// `Framer::bom` value once the BOM has been skipped or ruled out.
const BOM_DONE: u8 = 3;

/// A field whose value is stored inline in the framer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValue<'a> {
    /// The field was not set.
    Absent,
    /// The field's value.
    Value(&'a [u8]),
    /// The value was longer than [`FIELD_CAPACITY`] bytes and was not kept.
    TooLong,
}

impl<'a> FieldValue<'a> {
    /// The value, if it was set and fitted.
    #[must_use]
    pub const fn value(self) -> Option<&'a [u8]> {
        match self {
            FieldValue::Value(v) => Some(v),
            FieldValue::Absent | FieldValue::TooLong => None,
        }
    }
}

/// Error returned by [`Framer::feed`] and [`Framer::finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A frame's payload (or its unfinished part) does not fit the buffer.
    FrameTooLarge {
        /// Stream offset where the payload stopped fitting.
        offset: u64,
        /// Length of the framer's buffer.
        capacity: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::FrameTooLarge { offset, capacity } => write!(
                f,
                "SSE frame too large: its payload exceeds the {capacity}-byte buffer at stream offset {offset}"
            ),
        }
    }
}

impl core::error::Error for Error {}

/// One dispatched event: a block of lines ended by a blank line, with at least one `data` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The `data` values joined with '\n' (WHATWG: each data line's value + "\n", and the final "\n" removed).
    pub payload: &'a [u8],
    /// 0-based index of this frame in the stream (frames = dispatched blocks that had at least one data line).
    pub index: u64,
    /// Stream byte offset of the first byte of the block's first line (after any blank lines / previous frame).
    /// Offsets count every input byte, BOM included.
    pub start: u64,
    /// Stream byte offset just past the line terminator that dispatched it (or the end of stream for an
    /// unterminated frame). `start..end` is the frame's byte range in the stream. When that terminator is
    /// CRLF, `end` is just past the CR (the LF is consumed afterwards), so that `end` does not depend on
    /// where pushes split.
    pub end: u64,
    /// Stream byte offset of the first byte of the first data line's value (so a byte offset inside a
    /// single-line payload maps to `payload_offset + i`).
    pub payload_offset: u64,
    /// `false` only for a frame dispatched by [`Framer::finish`] without its blank line.
    pub terminated: bool,
    /// Whether `payload` borrows the caller's input directly (zero-copy) or the framer's buffer.
    pub borrowed: bool,
    /// The payload did not fit the buffer and went, piece by piece, to the
    /// framer's [`SpillSink`] ([`Framer::with_spill`]); `payload` is the
    /// stand-in the sink left in the buffer (empty for a closure).
    pub spilled: bool,
    /// Value of the last `event:` field of this block.
    pub event: FieldValue<'a>,
    /// The last event ID (persists across frames until changed; an `id` value containing NUL is ignored).
    pub id: FieldValue<'a>,
    /// The gateway's re-lining hook, found while the block is scanned: no
    /// line of the block ended in CR and none was a bare `data` (a field
    /// without a colon), so its bytes read the same to the reference
    /// client, which splits lines only on LF and knows no bare `data`, and
    /// the rewriter ([`rewrite`](crate::rewrite)) forwards them without
    /// reading them again (`FrameInfo::plain` passes it on). Exact under
    /// any split of the input (`tests::plain_is_exact_under_any_split`).
    pub(crate) plain: bool,
}

/// What [`Framer::feed_block`] reads: a frame, or a block of lines that
/// dispatches nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block<'a> {
    /// A block with at least one `data` line.
    Frame(Frame<'a>),
    /// A block without `data` lines, ended by a blank line: comments (`:
    /// ping` keep-alives), `event:`, `id:`, `retry:` or unknown fields. It
    /// dispatches no event, but its `id:` still sets the last event ID.
    NoData {
        /// Stream offset of the block's first byte.
        start: u64,
        /// Stream offset just past its blank line (past the CR of a CRLF,
        /// as for [`Frame::end`]).
        end: u64,
    },
}

/// What a framer hands its [`SpillSink`] when a payload does
/// not fit the buffer: where it stopped fitting, then its bytes in order
/// (the data lines' values joined with `\n`), from its first byte on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spill<'a> {
    /// A payload starts spilling; it stopped fitting at this stream offset.
    Begin {
        /// Stream offset of the first byte that did not fit.
        offset: u64,
    },
    /// The next bytes of the spilling payload.
    Bytes(&'a [u8]),
}

/// Where a framer puts a payload that outgrows its buffer
/// ([`Framer::with_spill`]). While a payload spills, the framer's buffer
/// is free: the sink may use it, and what it leaves at the start of it
/// ([`end`](Self::end)) is the frame's [`payload`](Frame::payload), a
/// stand-in for the payload that did not fit. Implemented for every
/// `FnMut(Spill<'_>) -> bool` (which leaves no stand-in).
pub trait SpillSink {
    /// A payload stopped fitting at stream offset `offset`; its first
    /// bytes are `buf[..held]`. Returns false to refuse it (then the framer
    /// reports [`Error::FrameTooLarge`]).
    fn begin(&mut self, offset: u64, buf: &mut [u8], held: usize) -> bool;

    /// The spilling payload's next bytes.
    fn bytes(&mut self, bytes: &[u8], buf: &mut [u8]);

    /// The payload ended: the number of bytes at the start of `buf` that
    /// stand in for it as the frame's payload.
    fn end(&mut self, buf: &mut [u8]) -> usize {
        let _ = buf;
        0
    }
}

impl<F: FnMut(Spill<'_>) -> bool> SpillSink for F {
    fn begin(&mut self, offset: u64, buf: &mut [u8], held: usize) -> bool {
        if !self(Spill::Begin { offset }) {
            return false;
        }
        self(Spill::Bytes(buf.get(..held).unwrap_or_default()));
        true
    }

    fn bytes(&mut self, bytes: &[u8], _: &mut [u8]) {
        self(Spill::Bytes(bytes));
    }
}

/// The default [`SpillSink`]: refuses, so a payload larger than the buffer
/// is [`Error::FrameTooLarge`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Refuse;

impl SpillSink for Refuse {
    fn begin(&mut self, _: u64, _: &mut [u8], _: usize) -> bool {
        false
    }

    fn bytes(&mut self, _: &[u8], _: &mut [u8]) {}
}

/// A field the framer acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Data,
    Event,
    Id,
}

impl Field {
    const fn name(self) -> &'static [u8] {
        match self {
            Field::Data => b"data",
            Field::Event => b"event",
            Field::Id => b"id",
        }
    }
}

/// Where the scan is inside the current line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    /// No byte of the line seen yet.
    Start,
    /// Reading a field name that is so far `field.name()[..matched]`.
    Name { field: Field, matched: u8 },
    /// Just after the colon; the optional space is not seen yet.
    Space(Field),
    /// Inside the value (for `data`, the bytes so far are in the buffer, or the line is complete).
    Value(Field),
    /// A comment or an unknown field: ignored up to the end of the line.
    Skip,
}

/// Where the data lines of the current block are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// No data line yet.
    Empty,
    /// One complete data line, `input[start..end]` of the current push (only during `feed`).
    Borrowed { start: usize, end: usize },
    /// At least one data line, joined in `buf[..len]`.
    Buffered,
    /// The payload outgrew the buffer: its bytes went to the spill callback.
    Spilled,
}

/// An inline field value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    Absent,
    Len(u8),
    TooLong,
}

impl Stored {
    fn field(self, buf: &[u8; FIELD_CAPACITY]) -> FieldValue<'_> {
        match self {
            Stored::Absent => FieldValue::Absent,
            Stored::Len(n) => FieldValue::Value(buf.get(..usize::from(n)).unwrap_or_default()),
            Stored::TooLong => FieldValue::TooLong,
        }
    }

    /// Appends `bytes` to the value held in `buf`.
    fn append(self, buf: &mut [u8; FIELD_CAPACITY], bytes: &[u8]) -> Stored {
        let Stored::Len(n) = self else { return self };
        let n = usize::from(n);
        let Some(end) = n.checked_add(bytes.len()) else {
            return Stored::TooLong;
        };
        match (buf.get_mut(n..end), u8::try_from(end)) {
            (Some(dst), Ok(end)) => {
                dst.copy_from_slice(bytes);
                Stored::Len(end)
            }
            _ => Stored::TooLong,
        }
    }
}

/// Maps indices of the current push to stream offsets.
#[derive(Clone, Copy)]
struct Cursor {
    /// Stream offset of `input[start]`.
    base: u64,
    start: usize,
}

impl Cursor {
    fn at(self, i: usize) -> u64 {
        self.base
            .saturating_add(i.saturating_sub(self.start) as u64)
    }
}

/// Where a dispatched payload lives.
#[derive(Clone, Copy)]
enum Payload {
    Input {
        start: usize,
        end: usize,
    },
    Buffer(usize),
    /// Spilled; the sink's stand-in is `buf[..len]`.
    Spilled(usize),
}

/// A dispatched frame before it borrows anything.
#[derive(Clone, Copy)]
struct Dispatch {
    payload: Payload,
    index: u64,
    start: u64,
    end: u64,
    payload_offset: u64,
    terminated: bool,
    event: Stored,
    id: Stored,
    id_in_b: bool,
    /// [`Frame::plain`].
    plain: bool,
}

/// What the scan stopped at.
#[derive(Clone, Copy)]
enum Step {
    Frame(Dispatch),
    NoData { start: u64, end: u64 },
}

/// A frame the fast path dispatched and the input bytes it took.
struct FastBlock {
    dispatch: Dispatch,
    len: usize,
}

/// Incremental Server-Sent-Events framer; the unfinished tail of a frame that spans pushes
/// is kept in the caller's buffer.
///
/// ```
/// use agui_stream::sse::{FieldValue, Framer};
///
/// let mut buf = [0u8; 64];
/// let mut framer = Framer::new(&mut buf);
/// let pushes: [&[u8]; 3] = [
///     b": keep-alive\n\nevent: delta\nid: 7\ndata: {\"a\"",
///     b":1}\n\ndata: one\ndata: two\r\n\r\ndata: {\"b\":2}\n\n",
///     b"data: tail",
/// ];
/// for push in pushes {
///     let mut pos = 0;
///     while let Some(frame) = framer.feed(push, &mut pos)? {
///         match frame.index {
///             0 => {
///                 // Spanned two pushes: copied into `buf`.
///                 assert_eq!(frame.payload, b"{\"a\":1}");
///                 assert!(!frame.borrowed);
///                 assert_eq!(frame.event, FieldValue::Value(b"delta"));
///             }
///             // Two data lines, joined with '\n'.
///             1 => assert_eq!(frame.payload, b"one\ntwo"),
///             _ => {
///                 // Inside one push: zero-copy.
///                 assert_eq!(frame.payload, b"{\"b\":2}");
///                 assert!(frame.borrowed);
///                 assert_eq!(frame.event, FieldValue::Absent); // `event` is per block
///                 assert_eq!(frame.id, FieldValue::Value(b"7")); // `id` persists
///             }
///         }
///     }
/// }
/// // End of stream: the last block had no blank line.
/// let last = framer.finish()?.expect("pending frame");
/// assert_eq!((last.payload, last.index, last.terminated), (&b"tail"[..], 3, false));
/// # Ok::<(), agui_stream::sse::Error>(())
/// ```
#[derive(Debug)]
pub struct Framer<'b, S = Refuse> {
    buf: &'b mut [u8],
    /// Takes a payload that outgrows `buf`.
    spill: S,
    /// Bytes of `buf` in use (`Mode::Buffered`).
    len: usize,
    mode: Mode,
    offset: u64,
    frames: u64,
    /// Stream offset of the current block's first line.
    block_start: Option<u64>,
    /// Stream offset of the current block's first data value.
    payload_offset: u64,
    line: Line,
    /// BOM bytes matched so far, or `BOM_DONE`.
    bom: u8,
    /// The previous push ended in CR: a leading LF belongs to it.
    pending_cr: bool,
    /// No line since the last block was dispatched ended in CR, and none
    /// was a bare `data` (so the block's bytes read the same to a client
    /// that splits only on LF and knows no bare `data`: the gateway forwards
    /// such a frame without looking at it again). Whatever the splits,
    /// since every line end is found once, by whichever path.
    plain: bool,
    event: Stored,
    /// The committed last event ID, held in `id_b` if `id_in_b`, else in `id_a`.
    id: Stored,
    /// The `id` value being read, held in the other slot.
    id_pending: Stored,
    id_nul: bool,
    id_in_b: bool,
    event_buf: [u8; FIELD_CAPACITY],
    id_a: [u8; FIELD_CAPACITY],
    id_b: [u8; FIELD_CAPACITY],
}

impl<'b> Framer<'b> {
    /// Creates a framer. `buf` holds only a frame that spans pushes (its payload so far);
    /// its length is the largest payload that can span pushes.
    #[must_use]
    pub fn new(buf: &'b mut [u8]) -> Self {
        Self::with_spill(buf, Refuse)
    }
}

impl<'b, S: SpillSink> Framer<'b, S> {
    /// A framer that hands a payload larger than `buf` to `spill` as it
    /// arrives, instead of failing: first [`Spill::Begin`], then its bytes
    /// from the first one on; the frame is then dispatched with
    /// [`Frame::spilled`] set and an empty payload. The buffer stays a
    /// performance knob, not a limit.
    ///
    /// ```
    /// use agui_stream::sse::{Spill, Framer};
    /// let mut buf = [0u8; 4];
    /// let mut spilled = Vec::new();
    /// let sink = |s: Spill<'_>| {
    ///     if let Spill::Bytes(b) = s {
    ///         spilled.extend_from_slice(b);
    ///     }
    ///     true
    /// };
    /// let mut framer = Framer::with_spill(&mut buf, sink);
    /// let mut frames = 0;
    /// for push in [&b"data: {\"a\""[..], b":1}\ndata: 2\n\ndata: {}\n\n"] {
    ///     let mut pos = 0;
    ///     while let Some(f) = framer.feed(push, &mut pos)? {
    ///         assert_eq!(f.spilled, f.index == 0);
    ///         frames += 1;
    ///     }
    /// }
    /// drop(framer);
    /// assert_eq!(spilled, b"{\"a\":1}\n2");
    /// assert_eq!(frames, 2);
    /// # Ok::<(), agui_stream::sse::Error>(())
    /// ```
    #[must_use]
    pub fn with_spill(buf: &'b mut [u8], spill: S) -> Self {
        Framer {
            buf,
            spill,
            len: 0,
            mode: Mode::Empty,
            offset: 0,
            frames: 0,
            block_start: None,
            payload_offset: 0,
            line: Line::Start,
            bom: 0,
            pending_cr: false,
            plain: true,
            event: Stored::Absent,
            id: Stored::Absent,
            id_pending: Stored::Absent,
            id_nul: false,
            id_in_b: false,
            event_buf: [0; FIELD_CAPACITY],
            id_a: [0; FIELD_CAPACITY],
            id_b: [0; FIELD_CAPACITY],
        }
    }

    /// Length of the buffer, i.e. the largest payload that can span pushes.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The buffer (a spilled frame's stand-in is at its start until the
    /// next frame spans pushes).
    pub(crate) fn buffer(&self) -> &[u8] {
        self.buf
    }

    /// Ends the framer and gives its buffer back (to start another stream
    /// with it).
    #[must_use]
    pub fn into_buffer(self) -> &'b mut [u8] {
        self.buf
    }

    /// Whether the buffer holds part of the stream: a payload that spans
    /// pushes, or one spilling past it. Between payloads it holds nothing
    /// the framer will read again (a spilled frame's stand-in is read only
    /// while its frame is dispatched).
    pub(crate) fn holds_payload(&self) -> bool {
        !matches!(self.mode, Mode::Empty) || self.len != 0
    }

    /// Puts `buf` in place of the buffer and returns the old one; only
    /// where [`holds_payload`](Self::holds_payload) is false.
    pub(crate) fn replace_buffer(&mut self, buf: &'b mut [u8]) -> &'b mut [u8] {
        core::mem::replace(&mut self.buf, buf)
    }

    /// The spill sink.
    pub fn spill_sink(&self) -> &S {
        &self.spill
    }

    /// The spill sink, to change.
    pub fn spill_sink_mut(&mut self) -> &mut S {
        &mut self.spill
    }

    /// Scans `input[*pos..]`. Returns `Ok(Some(frame))` as soon as one frame is dispatched (a blank
    /// line after at least one `data` line), with `*pos` set just past the bytes consumed; call again
    /// with the same `input` and `pos` for the next one.
    ///
    /// Returns `Ok(None)` when `input` is exhausted (`*pos == input.len()`), after saving whatever
    /// belongs to an unfinished frame into the buffer. The caller then calls `feed` again with the
    /// next push (a new `input`, `*pos = 0`).
    ///
    /// # Errors
    ///
    /// [`Error::FrameTooLarge`] if a payload that must be copied does not fit the buffer (and
    /// the [`SpillSink`] refuses it); the framer should not be used afterwards (except through
    /// [`finish`](Self::finish), which resets it).
    pub fn feed<'s>(
        &'s mut self,
        input: &'s [u8],
        pos: &mut usize,
    ) -> Result<Option<Frame<'s>>, Error> {
        loop {
            match self.step(input, pos)? {
                Some(Step::Frame(d)) => return Ok(Some(self.frame(input, d))),
                Some(Step::NoData { .. }) => {}
                None => return Ok(None),
            }
        }
    }

    /// As [`feed`](Self::feed), but also stops at each block that
    /// dispatches nothing ([`Block::NoData`]), so that a gateway can forward
    /// keep-alive comments and `id:` blocks.
    ///
    /// ```
    /// use agui_stream::sse::{Block, Framer};
    /// let mut buf = [0u8; 0];
    /// let mut framer = Framer::new(&mut buf);
    /// let input = b": ping\n\ndata: {}\n\n";
    /// let mut pos = 0;
    /// let Some(Block::NoData { start: 0, end: 8 }) = framer.feed_block(input, &mut pos)? else { panic!() };
    /// let Some(Block::Frame(frame)) = framer.feed_block(input, &mut pos)? else { panic!() };
    /// assert_eq!((frame.index, frame.start, frame.end), (0, 8, 18));
    /// assert!(framer.feed_block(input, &mut pos)?.is_none());
    /// # Ok::<(), agui_stream::sse::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed).
    pub fn feed_block<'s>(
        &'s mut self,
        input: &'s [u8],
        pos: &mut usize,
    ) -> Result<Option<Block<'s>>, Error> {
        Ok(match self.step(input, pos)? {
            Some(Step::Frame(d)) => Some(Block::Frame(self.frame(input, d))),
            Some(Step::NoData { start, end }) => Some(Block::NoData { start, end }),
            None => None,
        })
    }

    fn step(&mut self, input: &[u8], pos: &mut usize) -> Result<Option<Step>, Error> {
        let start = (*pos).min(input.len());
        let cur = Cursor {
            base: self.offset,
            start,
        };
        let mut i = start;
        let out = self.run(input, &mut i, cur);
        *pos = i;
        self.offset = cur.at(i);
        out
    }

    /// Ends the stream: a pending partial line is treated as complete, and a block that has data
    /// but no terminating blank line is dispatched with `terminated == false`. Returns `None` if
    /// nothing is pending. Afterwards the framer is back in its initial state (offsets and frame
    /// count restart at 0, the last event ID is cleared, a BOM is skipped again): a new stream may follow.
    ///
    /// # Errors
    ///
    /// [`Error::FrameTooLarge`] if completing the pending data line overflows the buffer.
    pub fn finish(&mut self) -> Result<Option<Frame<'_>>, Error> {
        let out = self.finish_inner();
        self.reset();
        match out? {
            Some(d) => Ok(Some(self.frame(&[], d))),
            None => Ok(None),
        }
    }

    /// The frame being read, if its payload outgrew the buffer and is
    /// going to the spill sink: its index and the stream offsets of its
    /// block's start and of its payload (as its [`Frame`] will give them).
    pub(crate) fn spilling(&self) -> Option<(u64, u64, u64)> {
        matches!(self.mode, Mode::Spilled).then(|| {
            let start = self.block_start.unwrap_or(self.payload_offset);
            (self.frames, start, self.payload_offset)
        })
    }

    /// Total bytes consumed so far (stream offset of the next byte).
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Number of frames dispatched so far.
    #[must_use]
    pub fn frames(&self) -> u64 {
        self.frames
    }

    fn run(&mut self, input: &[u8], i: &mut usize, cur: Cursor) -> Result<Option<Step>, Error> {
        loop {
            let at = *i;
            let rest = input.get(at..).unwrap_or_default();
            let Some(&first) = rest.first() else {
                if let Mode::Borrowed { start, end } = self.mode {
                    self.unborrow(input, start, end, cur)?;
                }
                return Ok(None);
            };
            let took = self.continue_value(rest, cur.at(at))?;
            if took > 0 {
                *i = at.saturating_add(took);
                continue;
            }
            if self.bom < BOM_DONE {
                if BOM.get(usize::from(self.bom)) == Some(&first) {
                    self.bom = self.bom.saturating_add(1);
                    *i = at.saturating_add(1);
                    continue;
                }
                if self.bom > 0 {
                    // The partial BOM is an ordinary line start (an unknown field name).
                    self.line = Line::Skip;
                    self.block_start = Some(0);
                }
                self.bom = BOM_DONE;
            }
            if self.pending_cr {
                self.pending_cr = false;
                if first == b'\n' {
                    *i = at.saturating_add(1);
                    continue;
                }
            }
            if first == b'\n'
                && self.line == Line::Start
                && self.mode == Mode::Buffered
                && crate::testing::fast_paths()
            {
                // Fast path: the blank line that ends a spanning frame. What
                // `scan` (nothing, at a line start) and `end_line` (dispatch
                // a block with data) would do; no CR is pending here (handled
                // just above). `tests::value_fast_path_matches_general_path`.
                crate::testing::count_work(1);
                let e = at.saturating_add(1);
                *i = e;
                return Ok(Some(Step::Frame(self.take(cur.at(e), true))));
            }
            let found = line_end(rest);
            if let Some(d) = found.and_then(|k| self.whole_data_block(rest, k, at, cur)) {
                *i = at.saturating_add(d.len);
                return Ok(Some(Step::Frame(d.dispatch)));
            }
            crate::testing::count_work(found.map_or(rest.len(), |k| k.saturating_add(1)));
            match found {
                Some(k) => {
                    let e = at.saturating_add(k);
                    self.scan(input, at, e, true, cur)?;
                    self.pending_cr = input.get(e) == Some(&b'\r');
                    if self.pending_cr {
                        self.plain = false;
                    }
                    *i = e.saturating_add(1);
                    if let Some(d) = self.end_line(input, e, cur)? {
                        return Ok(Some(d));
                    }
                }
                None => {
                    if !self.open_data_piece(rest, at, cur)? {
                        self.scan(input, at, input.len(), false, cur)?;
                    }
                    *i = input.len();
                }
            }
        }
    }

    /// Fast path inside a data value the buffer holds (a frame that spans
    /// pushes): takes `rest` up to and including its first line end (all of
    /// it if it has none) and returns how many bytes it took, or 0 (nothing
    /// done) in any other state or for an empty `rest`. `at` is the stream
    /// offset of `rest[0]`. It assumes what that state implies: the BOM is
    /// settled and no CR is pending (both only matter at a line start), so
    /// the value's bytes go straight to the buffer, as `scan` →
    /// `append_value` → `push_buf` would put them, and the line end does what
    /// `end_line` does for a data line (nothing but starting a line).
    /// `tests::value_fast_path_matches_general_path` compares it with the
    /// general path.
    #[inline(always)]
    fn continue_value(&mut self, rest: &[u8], at: u64) -> Result<usize, Error> {
        if self.line != Line::Value(Field::Data)
            || self.mode != Mode::Buffered
            || rest.is_empty()
            || !crate::testing::fast_paths()
        {
            return Ok(0);
        }
        let found = line_end(rest);
        crate::testing::count_work(found.map_or(rest.len(), |k| k.saturating_add(1)));
        let Some(k) = found else {
            self.push_buf(rest, at)?;
            return Ok(rest.len());
        };
        self.push_buf(rest.get(..k).unwrap_or_default(), at)?;
        self.line = Line::Start;
        self.pending_cr = rest.get(k) == Some(&b'\r');
        if self.pending_cr {
            self.plain = false;
        }
        Ok(k.saturating_add(1))
    }

    /// Fast path for a push that ends inside a block's first data line:
    /// at a line start with no data yet in the block, `rest` (which has no
    /// CR or LF; the BOM and a pending CR are settled) is `data:` and at
    /// least one byte more. The value so far goes to the buffer, with
    /// the state `scan` (`Name` → `Space` → `begin_value` → `open_data`)
    /// would leave; returns false, having done nothing, for anything else.
    /// `tests::value_fast_path_matches_general_path` compares it with the
    /// general path.
    fn open_data_piece(&mut self, rest: &[u8], at: usize, cur: Cursor) -> Result<bool, Error> {
        if self.line != Line::Start || self.mode != Mode::Empty || !crate::testing::fast_paths() {
            return Ok(false);
        }
        let Some(value) = rest.strip_prefix(b"data:").filter(|v| !v.is_empty()) else {
            return Ok(false);
        };
        let skip = usize::from(value.first() == Some(&b' '));
        let a = at.saturating_add(5).saturating_add(skip);
        if self.block_start.is_none() {
            self.block_start = Some(cur.at(at));
        }
        self.line = Line::Value(Field::Data);
        self.payload_offset = cur.at(a);
        self.len = 0;
        self.mode = Mode::Buffered;
        self.push_buf(value.get(skip..).unwrap_or_default(), cur.at(a))?;
        Ok(true)
    }

    /// [`continue_value`](Self::continue_value) at the start of a push, before
    /// any other work: a push that lies wholly inside a spanning frame's data
    /// value is taken here (the return value is then `input.len()`); else
    /// the rest of `input` goes to [`feed_block`](Self::feed_block) from the
    /// returned position.
    #[inline(always)]
    pub(crate) fn absorb(&mut self, input: &[u8]) -> Result<usize, Error> {
        let took = self.continue_value(input, self.offset)?;
        self.offset = self.offset.saturating_add(took as u64);
        Ok(took)
    }

    /// At the start of a block, with nothing of it read (no line, no
    /// field, no CR pending, the BOM settled) and every line since the last
    /// frame plain: where a caller that recognizes a whole `data: …\n\n`
    /// block itself may take it ([`took_block`](Self::took_block)).
    #[inline]
    pub(crate) fn at_clean_block_start(&self) -> bool {
        self.line == Line::Start
            && self.mode == Mode::Empty
            && self.block_start.is_none()
            && self.bom == BOM_DONE
            && !self.pending_cr
            && self.plain
            && self.event == Stored::Absent
    }

    /// Counts a block of `len` bytes the caller took whole at a clean block
    /// start (one `data: ` line, LF, LF): what dispatching it would have
    /// done. Returns its frame index and its stream offsets (start, end).
    #[inline]
    pub(crate) fn took_block(&mut self, len: usize) -> (u64, u64, u64) {
        let start = self.offset;
        let index = self.frames;
        self.frames = self.frames.saturating_add(1);
        self.offset = self.offset.saturating_add(len as u64);
        self.payload_offset = start.saturating_add(6);
        (index, start, self.offset)
    }

    /// Fast path for the shape nearly every frame has: at the start of a line, with no data
    /// line yet in the block, `rest` begins with a `data:` line that ends (at `rest[eol]`,
    /// the first CR or LF) in LF and a blank line, LF too. The frame is dispatched straight
    /// from the input, with exactly the outcome the line state machine would reach; anything
    /// else (CR, a split, a second data line) is `None` and takes the general path.
    fn whole_data_block(
        &mut self,
        rest: &[u8],
        eol: usize,
        at: usize,
        cur: Cursor,
    ) -> Option<FastBlock> {
        if self.line != Line::Start || self.mode != Mode::Empty {
            return None;
        }
        let value = rest.get(..eol)?.strip_prefix(b"data:")?;
        if rest.get(eol..eol.checked_add(2)?)? != b"\n\n" {
            return None;
        }
        let skip = usize::from(value.first() == Some(&b' '));
        // The line and the blank line.
        let len = eol.checked_add(2)?;
        crate::testing::count_work(len);
        let a = at.saturating_add(5).saturating_add(skip);
        let b = at.saturating_add(eol);
        if self.block_start.is_none() {
            self.block_start = Some(cur.at(at));
        }
        self.payload_offset = cur.at(a);
        self.mode = Mode::Borrowed { start: a, end: b };
        let dispatch = self.take(cur.at(at.saturating_add(len)), true);
        Some(FastBlock { dispatch, len })
    }

    /// Processes line bytes `input[a..b]` (no CR/LF among them); `eol` if the line ends at `b`.
    fn scan(
        &mut self,
        input: &[u8],
        mut a: usize,
        b: usize,
        eol: bool,
        cur: Cursor,
    ) -> Result<(), Error> {
        loop {
            match self.line {
                Line::Start => {
                    let Some(&c) = input.get(a).filter(|_| a < b) else {
                        return Ok(());
                    };
                    if self.block_start.is_none() {
                        self.block_start = Some(cur.at(a));
                    }
                    let field = match c {
                        b'd' => Field::Data,
                        b'e' => Field::Event,
                        b'i' => Field::Id,
                        // A comment (':') or an unknown field.
                        _ => {
                            self.line = Line::Skip;
                            return Ok(());
                        }
                    };
                    self.line = Line::Name { field, matched: 0 };
                }
                Line::Name { field, mut matched } => {
                    let name = field.name();
                    let mut colon = None;
                    // At most `name.len() + 1` bytes are looked at.
                    for (k, &c) in input.get(a..b).unwrap_or_default().iter().enumerate() {
                        if c == b':' {
                            colon = Some(k);
                            break;
                        }
                        if name.get(usize::from(matched)) != Some(&c) {
                            self.line = Line::Skip;
                            return Ok(());
                        }
                        matched = matched.saturating_add(1);
                    }
                    let Some(k) = colon else {
                        self.line = Line::Name { field, matched };
                        return Ok(());
                    };
                    if usize::from(matched) != name.len() {
                        self.line = Line::Skip;
                        return Ok(());
                    }
                    self.line = Line::Space(field);
                    a = a.saturating_add(k).saturating_add(1);
                }
                Line::Space(field) => {
                    if a >= b {
                        return Ok(());
                    }
                    if input.get(a) == Some(&b' ') {
                        a = a.saturating_add(1);
                    }
                    return self.begin_value(field, input, a, b, eol, cur);
                }
                Line::Value(field) => return self.append_value(field, input, a, b, cur),
                Line::Skip => return Ok(()),
            }
        }
    }

    /// A value starts at `input[a]`; `input[a..b]` is its first part (all of it if `eol`).
    fn begin_value(
        &mut self,
        field: Field,
        input: &[u8],
        a: usize,
        b: usize,
        eol: bool,
        cur: Cursor,
    ) -> Result<(), Error> {
        self.line = Line::Value(field);
        match field {
            Field::Data if eol => return self.data_line(input, a, b, cur),
            Field::Data => self.open_data(input, cur.at(a), cur)?,
            Field::Event => self.event = Stored::Len(0),
            Field::Id => {
                self.id_pending = Stored::Len(0);
                self.id_nul = false;
            }
        }
        self.append_value(field, input, a, b, cur)
    }

    #[inline(always)]
    fn append_value(
        &mut self,
        field: Field,
        input: &[u8],
        a: usize,
        b: usize,
        cur: Cursor,
    ) -> Result<(), Error> {
        let bytes = input.get(a..b).unwrap_or_default();
        match field {
            Field::Data => self.push_buf(bytes, cur.at(a)),
            Field::Event => {
                self.event = self.event.append(&mut self.event_buf, bytes);
                Ok(())
            }
            Field::Id => {
                if !self.id_nul && memchr(0, bytes).is_some() {
                    self.id_nul = true;
                }
                let slot = if self.id_in_b {
                    &mut self.id_a
                } else {
                    &mut self.id_b
                };
                self.id_pending = self.id_pending.append(slot, bytes);
                Ok(())
            }
        }
    }

    /// A complete data line whose value is `input[a..b]`.
    fn data_line(&mut self, input: &[u8], a: usize, b: usize, cur: Cursor) -> Result<(), Error> {
        if self.mode == Mode::Empty {
            self.payload_offset = cur.at(a);
            self.mode = Mode::Borrowed { start: a, end: b };
            return Ok(());
        }
        self.open_data(input, cur.at(a), cur)?;
        self.push_buf(input.get(a..b).unwrap_or_default(), cur.at(a))
    }

    /// Starts a data line whose value goes to the buffer; its value starts at stream offset `at`.
    fn open_data(&mut self, input: &[u8], at: u64, cur: Cursor) -> Result<(), Error> {
        match self.mode {
            Mode::Empty => {
                self.payload_offset = at;
                self.len = 0;
                self.mode = Mode::Buffered;
                Ok(())
            }
            Mode::Borrowed { start, end } => {
                self.unborrow(input, start, end, cur)?;
                self.push_buf(b"\n", at)
            }
            Mode::Buffered | Mode::Spilled => self.push_buf(b"\n", at),
        }
    }

    /// Copies the borrowed first data line into the buffer.
    fn unborrow(
        &mut self,
        input: &[u8],
        start: usize,
        end: usize,
        cur: Cursor,
    ) -> Result<(), Error> {
        self.len = 0;
        self.mode = Mode::Buffered;
        self.push_buf(input.get(start..end).unwrap_or_default(), cur.at(start))
    }

    /// Appends `bytes`, which start at stream offset `at`, to the payload:
    /// to the buffer while it fits, then to the spill sink.
    #[inline(always)]
    fn push_buf(&mut self, bytes: &[u8], at: u64) -> Result<(), Error> {
        let len = self.len;
        if !matches!(self.mode, Mode::Spilled)
            && let Some(end) = len.checked_add(bytes.len())
            && let Some(dst) = self.buf.get_mut(len..end)
        {
            crate::testing::count_work(bytes.len());
            copy(dst, bytes);
            self.len = end;
            return Ok(());
        }
        self.overflow(bytes, at)
    }

    /// [`push_buf`](Self::push_buf) past the buffer.
    #[cold]
    #[inline(never)]
    fn overflow(&mut self, bytes: &[u8], at: u64) -> Result<(), Error> {
        if matches!(self.mode, Mode::Spilled) {
            self.spill.bytes(bytes, self.buf);
            return Ok(());
        }
        let len = self.len;
        let capacity = self.buf.len();
        let offset = at.saturating_add(capacity.saturating_sub(len) as u64);
        if !self.spill.begin(offset, self.buf, len) {
            return Err(Error::FrameTooLarge { offset, capacity });
        }
        self.spill.bytes(bytes, self.buf);
        self.len = 0;
        self.mode = Mode::Spilled;
        Ok(())
    }

    /// The line ends at `input[e]` (the CR or LF); dispatches on a blank line.
    fn end_line(&mut self, input: &[u8], e: usize, cur: Cursor) -> Result<Option<Step>, Error> {
        match core::mem::replace(&mut self.line, Line::Start) {
            Line::Start => {
                let end = cur.at(e.saturating_add(1));
                if self.mode == Mode::Empty {
                    self.event = Stored::Absent;
                    self.plain = true;
                    return Ok(self
                        .block_start
                        .take()
                        .map(|start| Step::NoData { start, end }));
                }
                return Ok(Some(Step::Frame(self.take(end, true))));
            }
            Line::Name { field, matched } if usize::from(matched) == field.name().len() => {
                if field == Field::Data {
                    self.plain = false;
                }
                self.empty_value(field, input, e, cur)?;
            }
            Line::Space(field) => self.empty_value(field, input, e, cur)?,
            Line::Value(Field::Id) => self.commit_id(),
            Line::Name { .. } | Line::Value(_) | Line::Skip => {}
        }
        Ok(None)
    }

    /// A line `field` or `field:` with an empty value ending at `input[e]`.
    fn empty_value(
        &mut self,
        field: Field,
        input: &[u8],
        e: usize,
        cur: Cursor,
    ) -> Result<(), Error> {
        match field {
            Field::Data => return self.data_line(input, e, e, cur),
            Field::Event => self.event = Stored::Len(0),
            Field::Id => {
                self.id_pending = Stored::Len(0);
                self.id_nul = false;
                self.commit_id();
            }
        }
        Ok(())
    }

    fn commit_id(&mut self) {
        if !self.id_nul {
            self.id = self.id_pending;
            self.id_in_b = !self.id_in_b;
        }
    }

    /// Takes the current block as a frame and starts a new block.
    fn take(&mut self, end: u64, terminated: bool) -> Dispatch {
        let payload = match self.mode {
            Mode::Borrowed { start, end } => Payload::Input { start, end },
            Mode::Empty | Mode::Buffered => Payload::Buffer(self.len),
            Mode::Spilled => Payload::Spilled(self.spill.end(self.buf)),
        };
        let d = Dispatch {
            payload,
            index: self.frames,
            start: self.block_start.unwrap_or(self.payload_offset),
            end,
            payload_offset: self.payload_offset,
            terminated,
            event: self.event,
            id: self.id,
            id_in_b: self.id_in_b,
            plain: self.plain,
        };
        self.plain = true;
        self.frames = self.frames.saturating_add(1);
        self.mode = Mode::Empty;
        self.len = 0;
        self.event = Stored::Absent;
        self.block_start = None;
        d
    }

    fn finish_inner(&mut self) -> Result<Option<Dispatch>, Error> {
        if self.bom > 0 && self.bom < BOM_DONE {
            // A partial BOM alone is a line with an unknown field name.
            self.line = Line::Skip;
        }
        if self.line != Line::Start {
            let cur = Cursor {
                base: self.offset,
                start: 0,
            };
            // Not a blank line, so this never dispatches.
            self.end_line(&[], 0, cur)?;
        }
        match self.mode {
            Mode::Empty => return Ok(None),
            // Only an empty data line just completed at end of stream: nothing to borrow.
            Mode::Borrowed { .. } => {
                self.mode = Mode::Buffered;
                self.len = 0;
            }
            Mode::Buffered | Mode::Spilled => {}
        }
        Ok(Some(self.take(self.offset, false)))
    }

    /// Back to the initial state; the inline arrays keep their bytes (a returned frame may borrow them).
    fn reset(&mut self) {
        self.len = 0;
        self.mode = Mode::Empty;
        self.offset = 0;
        self.frames = 0;
        self.block_start = None;
        self.payload_offset = 0;
        self.line = Line::Start;
        self.bom = 0;
        self.pending_cr = false;
        self.plain = true;
        self.event = Stored::Absent;
        self.id = Stored::Absent;
        self.id_pending = Stored::Absent;
        self.id_nul = false;
    }

    fn frame<'s>(&'s self, input: &'s [u8], d: Dispatch) -> Frame<'s> {
        let (payload, borrowed) = match d.payload {
            Payload::Input { start, end } => (input.get(start..end).unwrap_or_default(), true),
            Payload::Buffer(len) => (self.buf.get(..len).unwrap_or_default(), false),
            Payload::Spilled(len) => (self.buf.get(..len).unwrap_or_default(), false),
        };
        let id_buf = if d.id_in_b { &self.id_b } else { &self.id_a };
        Frame {
            payload,
            index: d.index,
            start: d.start,
            end: d.end,
            payload_offset: d.payload_offset,
            terminated: d.terminated,
            borrowed,
            spilled: matches!(d.payload, Payload::Spilled(_)),
            event: d.event.field(&self.event_buf),
            id: d.id.field(id_buf),
            plain: d.plain,
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[derive(Clone, Debug, PartialEq, Eq)]
    enum F {
        Absent,
        V(Vec<u8>),
        TooLong,
    }

    fn own(f: FieldValue<'_>) -> F {
        match f {
            FieldValue::Absent => F::Absent,
            FieldValue::Value(v) => F::V(v.to_vec()),
            FieldValue::TooLong => F::TooLong,
        }
    }

    fn v(s: &[u8]) -> F {
        F::V(s.to_vec())
    }

    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Rec {
        payload: Vec<u8>,
        index: u64,
        start: u64,
        end: u64,
        payload_offset: u64,
        terminated: bool,
        borrowed: bool,
        event: F,
        id: F,
    }

    fn rec(f: &Frame<'_>) -> Rec {
        Rec {
            payload: f.payload.to_vec(),
            index: f.index,
            start: f.start,
            end: f.end,
            payload_offset: f.payload_offset,
            terminated: f.terminated,
            borrowed: f.borrowed,
            event: own(f.event),
            id: own(f.id),
        }
    }

    fn run_pushes(pushes: &[&[u8]], cap: usize) -> Result<Vec<Rec>, Error> {
        let mut buf = vec![0u8; cap];
        let mut fr = Framer::new(&mut buf);
        let mut out = Vec::new();
        let mut total = 0u64;
        for p in pushes {
            let mut pos = 0;
            while let Some(f) = fr.feed(p, &mut pos)? {
                let r = rec(&f);
                assert!(pos <= p.len());
                assert_eq!(fr.offset(), r.end);
                assert_eq!(fr.frames(), r.index + 1);
                out.push(r);
            }
            assert_eq!(pos, p.len());
            total += p.len() as u64;
            assert_eq!(fr.offset(), total);
        }
        if let Some(f) = fr.finish()? {
            out.push(rec(&f));
        }
        assert_eq!((fr.offset(), fr.frames()), (0, 0));
        Ok(out)
    }

    fn run1(s: &[u8]) -> Vec<Rec> {
        run_pushes(&[s], 4096).unwrap()
    }

    /// `run_pushes` with a spilling framer: a spilled frame's payload is
    /// what its callback received.
    fn run_spilling(pushes: &[&[u8]], cap: usize) -> Vec<Rec> {
        use std::cell::{Cell, RefCell};
        let mut buf = vec![0u8; cap];
        let mut out = Vec::new();
        let spilled = RefCell::new(Vec::new());
        let begun = Cell::new(false);
        let spill = |s: Spill<'_>| {
            match s {
                Spill::Begin { .. } => {
                    assert!(!begun.replace(true), "one Begin per frame");
                    spilled.borrow_mut().clear();
                }
                Spill::Bytes(b) => {
                    assert!(begun.get());
                    spilled.borrow_mut().extend_from_slice(b);
                }
            }
            true
        };
        let take = |f: &Frame<'_>| {
            let mut r = rec(f);
            if f.spilled {
                r.payload = spilled.take();
                assert!(begun.replace(false));
            }
            r
        };
        let mut fr = Framer::with_spill(&mut buf, spill);
        for p in pushes {
            let mut pos = 0;
            while let Some(f) = fr.feed(p, &mut pos).unwrap() {
                out.push(take(&f));
            }
        }
        if let Some(f) = fr.finish().unwrap() {
            out.push(take(&f));
        }
        out
    }

    /// Blocks without data are reported with their ranges, whatever the
    /// split; with frames they cover every byte but a BOM, stray blank
    /// lines, the LF of a CRLF and an unterminated last block.
    #[test]
    fn blocks_without_data_are_reported_in_any_split() {
        let s: &[u8] = b"\xEF\xBB\xBF: ping\n\n\nid: 5\r\n\r\ndata: a\n: mid\n\nretry: 9\revent: e\r\rdata: b\n\n: tail";
        let blocks = |pushes: &[&[u8]]| {
            let mut buf = [0u8; 64];
            let mut fr = Framer::new(&mut buf);
            let mut out = Vec::new();
            for p in pushes {
                let mut pos = 0;
                while let Some(b) = fr.feed_block(p, &mut pos).unwrap() {
                    out.push(match b {
                        Block::Frame(f) => (f.start, f.end, Some(f.payload.to_vec())),
                        Block::NoData { start, end } => (start, end, None),
                    });
                }
            }
            out
        };
        let want = blocks(&[s]);
        let text = |a: u64, b: u64| &s[a as usize..b as usize];
        let got: Vec<_> = want
            .iter()
            .map(|&(a, b, ref p)| (text(a, b), p.is_some()))
            .collect();
        assert_eq!(
            got,
            [
                // The BOM belongs to no block.
                (&b": ping\n\n"[..], false),
                (b"id: 5\r\n\r", false),
                (b"data: a\n: mid\n\n", true),
                (b"retry: 9\revent: e\r\r", false),
                (b"data: b\n\n", true),
            ]
        );
        for cut in 0..=s.len() {
            assert_eq!(blocks(&[&s[..cut], &s[cut..]]), want, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(blocks(&bytes), want);
    }

    fn payloads(r: &[Rec]) -> Vec<Vec<u8>> {
        r.iter().map(|r| r.payload.clone()).collect()
    }

    fn p(items: &[&[u8]]) -> Vec<Vec<u8>> {
        items.iter().map(|s| s.to_vec()).collect()
    }

    /// Everything except `borrowed`, which legitimately depends on the split.
    fn key(r: &[Rec]) -> Vec<Rec> {
        r.iter()
            .map(|r| Rec {
                borrowed: false,
                ..r.clone()
            })
            .collect()
    }

    #[test]
    fn multi_line_data() {
        let r = run1(b"data: a\ndata: b\ndata: c\n\n");
        assert_eq!(payloads(&r), p(&[b"a\nb\nc"]));
        assert!(!r[0].borrowed);
        assert!(r[0].terminated);
    }

    #[test]
    fn comments_ignored() {
        let r = run1(b": hello\n:\ndata: x\n: mid\n\n: only a comment\n\n");
        assert_eq!(payloads(&r), p(&[b"x"]));
        assert!(r[0].borrowed);
        assert_eq!(r[0].start, 0);
    }

    #[test]
    fn event_id_retry() {
        let r = run1(b"event: ev\nid: 42\nretry: 1000\ndata: d\n\n");
        assert_eq!(payloads(&r), p(&[b"d"]));
        assert_eq!(r[0].event, v(b"ev"));
        assert_eq!(r[0].id, v(b"42"));
    }

    #[test]
    fn unknown_fields_ignored() {
        let r =
            run1(b"foo: bar\ndat: no\ndatax: no\ndata : no\nbaz\ndata: d\nevents: no\nidx: no\n\n");
        assert_eq!(payloads(&r), p(&[b"d"]));
        assert_eq!(r[0].event, F::Absent);
        assert_eq!(r[0].id, F::Absent);
    }

    #[test]
    fn empty_and_bare_data() {
        let r = run1(b"data:\n\ndata\n\ndata\ndata\n\ndata:\ndata: x\n\n");
        assert_eq!(payloads(&r), p(&[b"", b"", b"\n", b"\nx"]));
        assert_eq!(r.len(), 4);
        assert!(r[0].borrowed && r[1].borrowed);
        // The empty value of `data:` sits where the value would start.
        assert_eq!(r[0].payload_offset, 5);
    }

    #[test]
    fn only_one_space_removed() {
        let r = run1(b"data:  x\ndata:y\ndata: \n\n");
        assert_eq!(payloads(&r), p(&[b" x\ny\n"]));
    }

    #[test]
    fn no_final_blank_line() {
        let r = run1(b"data: a\n\ndata: x\n");
        assert_eq!(payloads(&r), p(&[b"a", b"x"]));
        assert!(r[0].terminated);
        assert!(!r[1].terminated);
        assert_eq!((r[1].start, r[1].end, r[1].index), (9, 17, 1));
    }

    #[test]
    fn no_final_newline() {
        let r = run1(b"data: x");
        assert_eq!(payloads(&r), p(&[b"x"]));
        assert_eq!((r[0].end, r[0].terminated), (7, false));
        let r = run1(b"data: x\ndata");
        assert_eq!(payloads(&r), p(&[b"x\n"]));
        let r = run1(b"data:");
        assert_eq!(payloads(&r), p(&[b""]));
        assert_eq!(r[0].payload_offset, 5);
        let r = run1(b"event: e\nid: 1\nretry");
        assert!(r.is_empty());
        assert!(run1(b"").is_empty());
        assert!(run1(b"\n\n\r\n").is_empty());
    }

    #[test]
    fn cr_only() {
        let r = run1(b"data: a\r\rdata: b\rdata: c\r\r");
        assert_eq!(payloads(&r), p(&[b"a", b"b\nc"]));
        assert_eq!((r[0].end, r[1].start), (9, 9));
    }

    #[test]
    fn crlf() {
        let r = run1(b"data: a\r\n\r\nevent: e\r\ndata: b\r\ndata: c\r\n\r\n");
        assert_eq!(payloads(&r), p(&[b"a", b"b\nc"]));
        assert_eq!(r[1].event, v(b"e"));
        // `end` is just past the CR of the dispatching CRLF.
        assert_eq!((r[0].end, r[1].start), (10, 11));
    }

    #[test]
    fn mixed_line_endings() {
        let r = run1(b"data: a\r\ndata: b\n\r\ndata: c\r\n\ndata: d\r\r\n\n");
        assert_eq!(payloads(&r), p(&[b"a\nb", b"c", b"d"]));
    }

    #[test]
    fn bom() {
        let r = run1(b"\xEF\xBB\xBFdata: x\n\n");
        assert_eq!(payloads(&r), p(&[b"x"]));
        assert_eq!((r[0].start, r[0].payload_offset, r[0].end), (3, 9, 12));
        // Only at the very start of the stream.
        let r = run1(b"data: x\n\n\xEF\xBB\xBFdata: y\n\n");
        assert_eq!(payloads(&r), p(&[b"x"]));
        assert!(run1(b"\xEF\xBB\xBF").is_empty());
        // A second BOM is line bytes.
        assert!(run1(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: y\n\n").is_empty());
    }

    #[test]
    fn bom_split() {
        let whole = run1(b"\xEF\xBB\xBFdata: x\n\n");
        for pushes in [
            &[&b"\xEF"[..], &b"\xBB\xBFdata: x\n\n"[..]][..],
            &[&b"\xEF\xBB"[..], &b"\xBFdata: x\n\n"[..]][..],
            &[
                &b"\xEF"[..],
                &b""[..],
                &b"\xBB"[..],
                &b"\xBF"[..],
                &b"data: x\n\n"[..],
            ][..],
        ] {
            assert_eq!(key(&run_pushes(pushes, 16).unwrap()), key(&whole));
        }
    }

    #[test]
    fn partial_bom_not_lost() {
        // "\xEF\xBB" is a (non-blank, unknown-field) line, so the block starts at 0.
        let r = run1(b"\xEF\xBB\ndata: x\n\n");
        assert_eq!(payloads(&r), p(&[b"x"]));
        assert_eq!(r[0].start, 0);
        let split = run_pushes(&[b"\xEF\xBB", b"\ndata: x\n\n"], 16).unwrap();
        assert_eq!(key(&split), key(&r));
        // The partial BOM is part of the field name: "\xEFdata" is unknown.
        assert!(run1(b"\xEFdata: x\n\n").is_empty());
        assert!(
            run_pushes(&[b"\xEF", b"data: x\n\n"], 16)
                .unwrap()
                .is_empty()
        );
        assert!(run1(b"\xEF\xBB\xBEdata: x\n\n").is_empty());
        // Alone at end of stream it dispatches nothing.
        assert!(run1(b"\xEF\xBB").is_empty());
        // A non-BOM first byte is ordinary.
        let r = run1(b"\xBB\ndata: y\n\n");
        assert_eq!((payloads(&r), r[0].start), (p(&[b"y"]), 0));
    }

    #[test]
    fn id_persistence() {
        let r = run1(
            b"id: 1\ndata: a\n\ndata: b\n\nid: 2\n\ndata: c\n\nid: x\0y\ndata: d\n\nid\ndata: e\n\nid: 3\ndata: f\n\n",
        );
        assert_eq!(payloads(&r), p(&[b"a", b"b", b"c", b"d", b"e", b"f"]));
        let ids: Vec<F> = r.iter().map(|r| r.id.clone()).collect();
        assert_eq!(
            ids,
            vec![v(b"1"), v(b"1"), v(b"2"), v(b"2"), v(b""), v(b"3")]
        );
    }

    #[test]
    fn event_is_per_block() {
        let r = run1(b"event: e\ndata: a\n\ndata: b\n\nevent: x\n\ndata: c\n\nevent: 1\nevent: 2\ndata: d\n\nevent\ndata: e\n\n");
        let evs: Vec<F> = r.iter().map(|r| r.event.clone()).collect();
        assert_eq!(evs, vec![v(b"e"), F::Absent, F::Absent, v(b"2"), v(b"")]);
    }

    #[test]
    fn too_long_fields() {
        let mut s = Vec::new();
        s.extend_from_slice(b"event: ");
        s.extend_from_slice(&[b'a'; FIELD_CAPACITY]);
        s.extend_from_slice(b"\nid: ");
        s.extend_from_slice(&[b'1'; FIELD_CAPACITY]);
        s.extend_from_slice(b"\ndata: x\n\nevent: ");
        s.extend_from_slice(&[b'b'; FIELD_CAPACITY + 1]);
        s.extend_from_slice(b"\nid: ");
        s.extend_from_slice(&[b'2'; FIELD_CAPACITY + 1]);
        s.extend_from_slice(b"\ndata: y\n\nid: ");
        s.extend_from_slice(&[b'3'; FIELD_CAPACITY + 1]);
        s.extend_from_slice(b"\0\ndata: z\n\n");
        let r = run1(&s);
        assert_eq!(payloads(&r), p(&[b"x", b"y", b"z"]));
        assert_eq!(r[0].event, v(&[b'a'; FIELD_CAPACITY]));
        assert_eq!(r[0].id, v(&[b'1'; FIELD_CAPACITY]));
        assert_eq!(
            (r[1].event.clone(), r[1].id.clone()),
            (F::TooLong, F::TooLong)
        );
        // A too-long id with a NUL is ignored: the previous id stays.
        assert_eq!(
            (r[2].event.clone(), r[2].id.clone()),
            (F::Absent, F::TooLong)
        );
        for k in 0..=s.len() {
            let split = run_pushes(&[&s[..k], &s[k..]], 64).unwrap();
            assert_eq!(key(&split), key(&r), "split at {k}");
        }
    }

    #[test]
    fn zero_copy_single_push() {
        let s = b": hi\nevent: a\ndata: one\n\nid: 5\ndata: two\r\n\r\ndata\n\ndata: {\"x\":1}\rdata: more\r\r: c\ndata: three\n\n";
        let mut buf = [0u8; 64];
        let mut fr = Framer::new(&mut buf);
        let mut pos = 0;
        let mut got = Vec::new();
        while let Some(f) = fr.feed(s, &mut pos).unwrap() {
            got.push((f.payload.to_vec(), f.borrowed));
            if f.borrowed {
                // The payload is a subslice of the input at payload_offset.
                let off = f.payload_offset as usize;
                assert_eq!(f.payload.as_ptr(), s[off..].as_ptr());
            }
        }
        assert!(fr.finish().unwrap().is_none());
        assert_eq!(
            got,
            vec![
                (b"one".to_vec(), true),
                (b"two".to_vec(), true),
                (b"".to_vec(), true),
                (b"{\"x\":1}\nmore".to_vec(), false),
                (b"three".to_vec(), true),
            ]
        );
    }

    #[test]
    fn byte_offsets() {
        let s = b": hi\nevent: e\ndata: ab\ndata: c\n\ndata: x\r\n\r\n\n:z\nid: 1\ndata: q";
        // ": hi\n" 0..5, "event: e\n" 5..14, "data: ab\n" 14..23 (value at 20),
        // "data: c\n" 23..31, "\n" 31..32; "data: x\r\n" 32..41 (value at 38),
        // "\r\n" 41..43 (CR at 41), "\n" 43..44, ":z\n" 44..47, "id: 1\n" 47..53,
        // "data: q" 53..60 (value at 59).
        let r = run1(s);
        assert_eq!(s.len(), 60);
        assert_eq!(payloads(&r), p(&[b"ab\nc", b"x", b"q"]));
        assert_eq!(
            r.iter()
                .map(|r| (r.index, r.start, r.end, r.payload_offset, r.terminated))
                .collect::<Vec<_>>(),
            vec![
                (0, 0, 32, 20, true),
                (1, 32, 42, 38, true),
                (2, 44, 60, 59, false)
            ]
        );
        assert_eq!(&s[32..42], b"data: x\r\n\r");
        assert_eq!(r[2].id, v(b"1"));
    }

    const SAMPLES: &[&[u8]] = &[
        b"\xEF\xBB\xBFdata: a\r\ndata: b\r\n\r\n: comment\revent: e\rid: 7\rdata:x\r\r\ndata: last",
        b"data\n\ndata:\n\nevent:zz\n\n:c\nid:1\x002\ndata:  two\n\n\n\ndata: y\r\n",
        b"\xEF\xBB\nid: 9\ndata: q\r\n\r\ndata: r\n",
        b"\xEF\xBB\xBF\r\n\r\ndata: a\r",
        b"retry: 10\nfoo: bar\nda\ndata\ndata: multi\ndata: line\r\ndata: here\n\nevent\nid\ndata:\r\r",
        b"\xEFdata: x\n\n:\xEF\xBB\xBF\ndata: {\"k\":\"\xff\xfe\"}\n\nevent: ev\r\nid: 12\r\ndata:a:b\r\n\r\n",
        b"data: one\ndata: two\ndata: three\ndata",
        b"\r\r\n\n\r\ndata:\r\ndata:\r\n",
        b"e\nev\nevent\nevent:\nevent: \nid:\nid: \ni\nid\x00\ndata: z\n\n",
        // Shapes at the edge of the one-line fast path: no space, empty
        // values, a field line before the data line, two data lines, CR
        // endings, a blank line with CR, and a last block cut short.
        b"data: a\n\ndata:b\n\ndata: \n\ndata:\n\nevent: e\ndata: c\n\nid: 5\ndata: d\n\n\
          data: e\ndata: f\n\ndata: g\r\n\ndata: h\n\r\ndata:  i\n\n: x\n\ndata: j\n",
    ];

    #[test]
    #[cfg_attr(miri, ignore = "thousands of streams: too slow under miri")]
    fn split_invariance() {
        for (n, s) in SAMPLES.iter().enumerate() {
            let whole = run1(s);
            assert!(!whole.is_empty(), "sample {n}");
            let whole = key(&whole);
            for k in 0..=s.len() {
                let split = run_pushes(&[&s[..k], &s[k..]], 256).unwrap();
                assert_eq!(key(&split), whole, "sample {n} split at {k}");
            }
            for size in 1..=3 {
                let pushes: Vec<&[u8]> = s.chunks(size).collect();
                let split = run_pushes(&pushes, 256).unwrap();
                assert_eq!(key(&split), whole, "sample {n} chunks of {size}");
            }
            // Empty pushes in between change nothing.
            let mut pushes: Vec<&[u8]> = Vec::new();
            for c in s.chunks(2) {
                pushes.push(b"");
                pushes.push(c);
            }
            assert_eq!(key(&run_pushes(&pushes, 256).unwrap()), whole, "sample {n}");
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "every sample under many buffers and splits")]
    fn spilling_gives_the_same_frames_under_any_buffer() {
        for (n, s) in SAMPLES.iter().enumerate() {
            let whole = key(&run1(s));
            for cap in [0, 1, 3, 8] {
                for size in [1, 2, 5, s.len().max(1)] {
                    let pushes: Vec<&[u8]> = s.chunks(size).collect();
                    let got = key(&run_spilling(&pushes, cap));
                    assert_eq!(got, whole, "sample {n}, buffer {cap}, pushes of {size}");
                }
            }
        }
    }

    /// A direct transcription of the WHATWG algorithm over the whole stream (plus the
    /// end-of-stream dispatch of an unterminated block).
    fn reference(s: &[u8]) -> Vec<Rec> {
        let field = |v: &[u8]| {
            if v.len() > FIELD_CAPACITY {
                F::TooLong
            } else {
                F::V(v.to_vec())
            }
        };
        let mut i = if s.starts_with(&BOM) { 3 } else { 0 };
        let mut lines = Vec::new();
        while i < s.len() {
            let st = i;
            while i < s.len() && s[i] != b'\n' && s[i] != b'\r' {
                i += 1;
            }
            if i == s.len() {
                lines.push((st, i, None));
                break;
            }
            let ce = i;
            i += 1;
            lines.push((st, ce, Some(i)));
            if s[ce] == b'\r' && s.get(i) == Some(&b'\n') {
                i += 1;
            }
        }
        let mut out = Vec::new();
        let (mut data, mut has_data, mut payload_offset) = (Vec::new(), false, 0);
        let (mut event, mut id, mut block_start) = (F::Absent, F::Absent, None);
        let mut dispatch = |data: &mut Vec<u8>, event: &mut F, id: &F, st, po, end, t| {
            out.push(Rec {
                payload: core::mem::take(data),
                index: out.len() as u64,
                start: st,
                end,
                payload_offset: po,
                terminated: t,
                borrowed: false,
                event: core::mem::replace(event, F::Absent),
                id: id.clone(),
            });
        };
        for (st, ce, te) in lines {
            let line = &s[st..ce];
            if line.is_empty() {
                if has_data {
                    let end = te.unwrap() as u64;
                    dispatch(
                        &mut data,
                        &mut event,
                        &id,
                        block_start.unwrap(),
                        payload_offset,
                        end,
                        true,
                    );
                }
                (has_data, event, block_start) = (false, F::Absent, None);
                continue;
            }
            block_start.get_or_insert(st as u64);
            if line[0] == b':' {
                continue;
            }
            let (name, value, vstart) = match line.iter().position(|&c| c == b':') {
                Some(c) => {
                    let v = if line.get(c + 1) == Some(&b' ') {
                        c + 2
                    } else {
                        c + 1
                    };
                    (&line[..c], &line[v..], st + v)
                }
                None => (line, &[][..], ce),
            };
            match name {
                b"data" => {
                    if has_data {
                        data.push(b'\n');
                    } else {
                        payload_offset = vstart as u64;
                    }
                    data.extend_from_slice(value);
                    has_data = true;
                }
                b"event" => event = field(value),
                b"id" if !value.contains(&0) => id = field(value),
                _ => {}
            }
        }
        if has_data {
            let st = block_start.unwrap();
            dispatch(
                &mut data,
                &mut event,
                &id,
                st,
                payload_offset,
                s.len() as u64,
                false,
            );
        }
        out
    }

    #[test]
    #[cfg_attr(miri, ignore = "thousands of streams: too slow under miri")]
    fn matches_reference_on_generated_streams() {
        const TOKENS: &[&[u8]] = &[
            b"data",
            b"data:",
            b"data: ",
            b"event",
            b"event:",
            b"event: ",
            b"id",
            b"id:",
            b"id: ",
            b":",
            b" ",
            b"x",
            b"yz",
            b"\r",
            b"\n",
            b"\r\n",
            b"\n\n",
            b"\r\n\r\n",
            b"\0",
            b"\xEF",
            b"\xEF\xBB",
            b"\xEF\xBB\xBF",
            b"retry: 5",
            b"da",
            b"ta",
            b"e",
            b"i",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for round in 0..3000 {
            let mut s = Vec::new();
            for _ in 0..rand(24) {
                s.extend_from_slice(TOKENS[rand(TOKENS.len())]);
            }
            let want = key(&reference(&s));
            assert_eq!(key(&run1(&s)), want, "round {round}: {s:?}");
            let mut pushes: Vec<&[u8]> = Vec::new();
            let mut rest = &s[..];
            while !rest.is_empty() {
                let (a, b) = rest.split_at(rand(rest.len() + 1).min(rest.len()).max(rand(2)));
                pushes.push(a);
                rest = b;
            }
            let got = run_pushes(&pushes, 256).unwrap();
            assert_eq!(key(&got), want, "round {round}: {pushes:?}");
        }
    }

    #[test]
    fn overflow_spanning_frame() {
        // "data: " 0..6: "hello" starts at 6; 4 bytes fit, byte 10 does not.
        let err = run_pushes(&[b"data: hello", b" world\n\n"], 4).unwrap_err();
        assert_eq!(
            err,
            Error::FrameTooLarge {
                offset: 10,
                capacity: 4
            }
        );
        // A complete borrowed line copied when the push ends.
        let err = run_pushes(&[b"data: hello\n", b"\n"], 4).unwrap_err();
        assert_eq!(
            err,
            Error::FrameTooLarge {
                offset: 10,
                capacity: 4
            }
        );
        // Several data lines must be joined in the buffer.
        assert!(run_pushes(&[b"data: abc\ndata: def\n\n"], 4).is_err());
        // Exactly fitting is fine.
        let r = run_pushes(&[b"data: ab", b"cd\n\n"], 4).unwrap();
        assert_eq!(payloads(&r), p(&[b"abcd"]));
        let r = run_pushes(&[b"data: ab\ndata", b": c\n\n"], 4).unwrap();
        assert_eq!(payloads(&r), p(&[b"ab\nc"]));
        // The separator itself may not fit.
        let err = run_pushes(&[b"data: abcd\ndata", b": e\n\n"], 4).unwrap_err();
        assert_eq!(
            err,
            Error::FrameTooLarge {
                offset: 17,
                capacity: 4
            }
        );
        // finish completing a data line can overflow too.
        let mut buf = [0u8; 2];
        let mut fr = Framer::new(&mut buf);
        let mut pos = 0;
        assert!(fr.feed(b"data: ab\ndata", &mut pos).unwrap().is_none());
        assert!(fr.finish().is_err());
        // ... and the framer is reset afterwards.
        let mut pos = 0;
        let f = fr.feed(b"data: z\n\n", &mut pos).unwrap().unwrap();
        assert_eq!((f.payload, f.index, f.start), (&b"z"[..], 0, 0));
    }

    #[test]
    fn big_frame_in_one_push_with_tiny_buffer() {
        let mut s = Vec::new();
        s.extend_from_slice(b"event: big\ndata: ");
        s.extend_from_slice(&[b'x'; 10_000]);
        s.extend_from_slice(b"\n\ndata: y\n\n");
        let r = run_pushes(&[&s], 0).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].payload.len(), 10_000);
        assert!(r[0].borrowed && r[1].borrowed);
        // The name may even be split off: the value is still in one push.
        let r = run_pushes(&[b"da", b"ta: hello\n\n"], 0).unwrap();
        assert_eq!(payloads(&r), p(&[b"hello"]));
        assert!(r[0].borrowed);
        assert_eq!(r[0].start, 0);
    }

    #[test]
    fn finish_resets_for_a_new_stream() {
        let mut buf = [0u8; 32];
        let mut fr = Framer::new(&mut buf);
        let mut pos = 0;
        assert!(
            fr.feed(b"id: 1\nevent: e\ndata: a", &mut pos)
                .unwrap()
                .is_none()
        );
        let f = fr.finish().unwrap().unwrap();
        assert_eq!((f.payload, f.terminated, f.end), (&b"a"[..], false, 22));
        assert_eq!(
            (f.event, f.id),
            (FieldValue::Value(b"e"), FieldValue::Value(b"1"))
        );
        assert_eq!((fr.offset(), fr.frames()), (0, 0));
        let mut pos = 0;
        let f = fr
            .feed(b"\xEF\xBB\xBFdata: b\n\n", &mut pos)
            .unwrap()
            .unwrap();
        assert_eq!((f.payload, f.index, f.start), (&b"b"[..], 0, 3));
        assert_eq!((f.event, f.id), (FieldValue::Absent, FieldValue::Absent));
        assert!(fr.finish().unwrap().is_none());
    }

    #[test]
    fn pos_past_end_and_resume() {
        let mut buf = [0u8; 8];
        let mut fr = Framer::new(&mut buf);
        let mut pos = 99;
        assert!(fr.feed(b"data: x\n\n", &mut pos).unwrap().is_none());
        assert_eq!((pos, fr.offset()), (9, 0));
        let s = b"data: 1\n\ndata: 2\n\n";
        let mut pos = 0;
        let f = fr.feed(s, &mut pos).unwrap().unwrap();
        assert_eq!((f.payload, pos), (&b"1"[..], 9));
        let f = fr.feed(s, &mut pos).unwrap().unwrap();
        assert_eq!((f.payload, pos), (&b"2"[..], 18));
        assert!(fr.feed(s, &mut pos).unwrap().is_none());
        assert_eq!(fr.frames(), 2);
    }

    #[test]
    fn field_value_helper_and_display() {
        assert_eq!(FieldValue::Value(b"a").value(), Some(&b"a"[..]));
        assert_eq!(FieldValue::TooLong.value(), None);
        let e = Error::FrameTooLarge {
            offset: 7,
            capacity: 4,
        };
        let s = std::format!("{e}");
        assert!(s.contains("4-byte") && s.contains("offset 7"), "{s}");
    }

    /// The one-line fast path takes the usual shape and nothing else (that
    /// it gives the general path's result is `split_invariance`'s job).
    #[test]
    fn fast_path_takes_one_line_lf_blocks_only() {
        let takes = |block: &[u8]| {
            let mut buf = [0u8; 64];
            let mut framer = Framer::new(&mut buf);
            let cur = Cursor { base: 0, start: 0 };
            let eol = memchr2(b'\n', b'\r', block).unwrap_or(block.len());
            framer
                .whole_data_block(block, eol, 0, cur)
                .map(|d| (d.len, d.dispatch.payload_offset))
        };
        assert_eq!(takes(b"data: {}\n\n"), Some((10, 6)));
        assert_eq!(takes(b"data:{}\n\nmore"), Some((9, 5)));
        assert_eq!(takes(b"data:\n\n"), Some((7, 5)));
        for other in [
            &b"data: {}\r\n\r\n"[..],
            b"data: {}\n",
            b"data: {}\ndata: {}\n\n",
            b"event: e\n\n",
            b": data\n\n",
            b"dat\n\n",
        ] {
            assert_eq!(takes(other), None, "{other:?}");
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "hundreds of thousands of cases: too slow under miri")]
    fn line_end_agrees_with_memchr2() {
        // Bytes next to CR and LF in value, and ones whose high bit is set,
        // which a word-at-a-time test could mistake.
        let fill = [
            b'a', 0x0b, 0x0c, 0x09, 0x0e, 0x8a, 0x8d, 0x00, 0xff, 0x80, b' ',
        ];
        for n in 0..40 {
            for (f, &c) in fill.iter().enumerate() {
                let mut bytes: Vec<u8> = (0..n).map(|i| fill[(i + f) % fill.len()]).collect();
                bytes.iter_mut().step_by(3).for_each(|b| *b = c);
                assert_eq!(line_end(&bytes), memchr2(b'\n', b'\r', &bytes), "{bytes:?}");
                for at in 0..n {
                    for eol in [b'\n', b'\r'] {
                        let mut with = bytes.clone();
                        with[at] = eol;
                        assert_eq!(line_end(&with), memchr2(b'\n', b'\r', &with), "{with:?}");
                        // A second line end after the first.
                        for later in at + 1..n {
                            let mut two = with.clone();
                            two[later] = b'\n' + b'\r' - eol;
                            assert_eq!(line_end(&two), Some(at), "{two:?}");
                        }
                    }
                }
            }
        }
        // Around the longest slice searched without `memchr2`'s dispatch.
        for n in (40..100).chain(500..530) {
            let bytes = vec![b'a'; n];
            assert_eq!(line_end(&bytes), None);
            for at in [0, 1, 15, 16, 17, 31, 32, 63, 64, 65, 511, 512, 513, n - 1] {
                for eol in [b'\n', b'\r'] {
                    let mut with = bytes.clone();
                    if let Some(b) = with.get_mut(at) {
                        *b = eol;
                        assert_eq!(line_end(&with), Some(at), "{n} {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn copy_agrees_with_copy_from_slice() {
        for n in 0..40 {
            let src: Vec<u8> = (0..n as u8)
                .map(|i| i.wrapping_mul(37).wrapping_add(1))
                .collect();
            let (mut a, mut b) = (vec![0xAAu8; n], vec![0xAAu8; n]);
            copy(&mut a, &src);
            b.copy_from_slice(&src);
            assert_eq!(a, b, "{n}");
        }
    }

    /// The framer's fast paths (a value continued, a blank line ending a
    /// spanning frame, a first data line cut by the push, and `absorb` at a
    /// push's start) give what the general path gives, frame for frame,
    /// under every split of every sample and of frames of many sizes.
    #[test]
    #[cfg_attr(miri, ignore = "every sample under many splits")]
    fn value_fast_path_matches_general_path() {
        // `absorb` first, as the pipeline calls it, then `feed`.
        fn absorbing(pushes: &[&[u8]], cap: usize) -> Result<Vec<Rec>, Error> {
            let mut buf = vec![0u8; cap];
            let mut fr = Framer::new(&mut buf);
            let mut out = Vec::new();
            let mut total = 0u64;
            for p in pushes {
                let before = fr.offset();
                let mut pos = fr.absorb(p)?;
                assert_eq!(fr.offset(), before + pos as u64);
                while let Some(f) = fr.feed(p, &mut pos)? {
                    out.push(rec(&f));
                }
                total += p.len() as u64;
                assert_eq!(fr.offset(), total);
            }
            if let Some(f) = fr.finish()? {
                out.push(rec(&f));
            }
            Ok(out)
        }
        let mut streams: Vec<Vec<u8>> = SAMPLES.iter().map(|s| s.to_vec()).collect();
        let mut long = Vec::new();
        for n in [0, 1, 5, 6, 7, 15, 16, 17, 40, 70] {
            long.extend_from_slice(b"data: ");
            long.extend(core::iter::repeat_n(b'x', n));
            long.extend_from_slice(b"\n\n: ping\n\ndata:");
            long.extend(core::iter::repeat_n(b'y', n));
            long.extend_from_slice(b"\ndata: z\r\n\r\nevent: e\nid: 1\ndata: ");
            long.extend(core::iter::repeat_n(b'w', n));
            long.extend_from_slice(b"\r\r\n");
        }
        streams.push(long);
        for s in &streams {
            let mut splits: Vec<Vec<&[u8]>> = Vec::new();
            for size in (1..=18).chain([31, 64, 200]) {
                splits.push(s.chunks(size).collect());
            }
            for k in 0..=s.len() {
                splits.push(vec![&s[..k], &s[k..]]);
            }
            for pushes in &splits {
                for cap in [4, 16, 256] {
                    let fast = run_pushes(pushes, cap).ok();
                    let general = crate::testing::general_only(|| run_pushes(pushes, cap).ok());
                    assert_eq!(fast, general, "{pushes:?} cap {cap}");
                    let fast = absorbing(pushes, cap).ok();
                    let general = crate::testing::general_only(|| absorbing(pushes, cap).ok());
                    assert_eq!(fast, general, "{pushes:?} cap {cap}");
                    let fast = run_spilling(pushes, cap);
                    let general = crate::testing::general_only(|| run_spilling(pushes, cap));
                    assert_eq!(fast, general, "{pushes:?} cap {cap}");
                }
            }
        }
    }

    /// `Frame::plain` says exactly whether the block's bytes hold no CR and
    /// no bare `data` line, under every split, fast paths on or off.
    #[test]
    #[cfg_attr(miri, ignore = "every sample under many splits")]
    fn plain_is_exact_under_any_split() {
        fn plains(s: &[u8], pushes: &[&[u8]]) -> Vec<(u64, bool)> {
            let mut buf = vec![0u8; 256];
            let mut fr = Framer::new(&mut buf);
            let mut out = Vec::new();
            for p in pushes {
                let mut pos = fr.absorb(p).unwrap();
                while let Some(f) = fr.feed(p, &mut pos).unwrap() {
                    let block = &s[f.start as usize..f.end as usize];
                    let bare = block.split(|&c| c == b'\n').any(|l| l == b"data");
                    assert_eq!(f.plain, !block.contains(&b'\r') && !bare, "{block:?}");
                    out.push((f.index, f.plain));
                }
            }
            out
        }
        let mut streams: Vec<&[u8]> = SAMPLES.to_vec();
        streams.push(
            b"data: a\n\n\r\ndata: b\n\ndata\ndata: c\n\n: x\r\n\r\ndata: d\r\n\r\ndata: e\n\n",
        );
        streams
            .push(b"id: 1\ndata: a\nevent: e\n\ndata:\n\ndata\n\ndata: x\ndata\n\n\r\rdata: y\n\n");
        for s in streams {
            let whole = plains(s, &[s]);
            for k in 0..=s.len() {
                assert_eq!(plains(s, &[&s[..k], &s[k..]]), whole, "{s:?} at {k}");
            }
            for size in 1..=9 {
                let pushes: Vec<&[u8]> = s.chunks(size).collect();
                assert_eq!(plains(s, &pushes), whole);
                let general = crate::testing::general_only(|| plains(s, &pushes));
                assert_eq!(general, whole);
            }
        }
    }

    #[test]
    fn framer_is_small() {
        let size = core::mem::size_of::<Framer<'_>>();
        assert!(size <= 200 + 3 * FIELD_CAPACITY, "{size}");
    }
}
