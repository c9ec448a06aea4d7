//! Emission: the bytes that go out while one chunk runs. Blocks forwarded
//! as they are join one write ([`Coalesce`]); the rest go through the
//! re-lining where the reference client needs it, and a byte order mark
//! is never forwarded where it would read as one.

use crate::output::encode::{BufferFull, Write, encode};
use crate::pipeline::FrameInfo;
use crate::view::event::Event;

use super::forward::Forward;
use super::relines::{self, Progress};
use super::spool::Window;

/// The most bytes [`Coalesce`] gathers for one write: enough to make a
/// write per block a write per dozen blocks, and below where `memcpy`
/// switches to string moves (which cost more per byte on short copies
/// than they save).
const COALESCE: u64 = 2048;

/// How the output's last line stands, kept from one push to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Lines {
    /// The last block written ended in CR: a leading LF is its CRLF's.
    pub(super) after_cr: bool,
    /// How far the input line written last is a bare `data` (a block that
    /// goes out ahead of its verdict may stop mid-line).
    pub(super) line: Progress,
}

impl Lines {
    pub(super) const fn new() -> Self {
        Lines {
            after_cr: false,
            line: relines::LINE_START,
        }
    }

    /// Nothing carried over: the next bytes start a line of their own.
    pub(super) fn settled(&self) -> bool {
        !self.after_cr && self.line == relines::LINE_START
    }
}

/// The write strategy for blocks forwarded as they are: stream bytes
/// `start..end` of the chunk, gathered but not yet written. Consecutive
/// blocks go out in one write of up to [`COALESCE`] bytes; every other
/// write flushes them first, so the output is the same bytes in the same
/// order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Coalesce {
    start: u64,
    end: u64,
}

/// The writer while one chunk runs, with the input it forwards from: the
/// raw buffer's bytes and the chunk's, each where it lies in the stream.
pub(super) struct Emitter<'a, W: ?Sized> {
    out: &'a mut W,
    /// The raw buffer's bytes.
    raw: Window<'a>,
    /// The bytes pushed now.
    chunk: Window<'a>,
    /// `chunk` has no CR and no bare `data` line ([`relines::plain`]): see
    /// [`Emitter::forward`]'s fast path. `None` until a block needs it
    /// (most blocks are plain frames that [`Forward::forwarded_as_is`]
    /// takes: the chunk is then never looked at).
    chunk_plain: Option<bool>,
    lines: &'a mut Lines,
    pending: Coalesce,
    /// Output bytes so far (the rewriter's `Stats::bytes_out`, counted
    /// here while the chunk runs).
    pub(super) bytes_out: u64,
    pub(super) failed: bool,
}

impl<'a, W: Write + ?Sized> Emitter<'a, W> {
    pub(super) fn new(
        out: &'a mut W,
        raw: Window<'a>,
        chunk: Window<'a>,
        chunk_plain: Option<bool>,
        lines: &'a mut Lines,
        bytes_out: u64,
    ) -> Self {
        Emitter {
            out,
            raw,
            chunk,
            chunk_plain,
            lines,
            pending: Coalesce::default(),
            bytes_out,
            failed: false,
        }
    }

    /// The line state kept between pushes.
    pub(super) fn lines(&mut self) -> &mut Lines {
        self.lines
    }

    /// Whether `chunk` is plain (see the field), looked at once.
    fn chunk_plain(&mut self) -> bool {
        let chunk = self.chunk.bytes();
        *self
            .chunk_plain
            .get_or_insert_with(|| relines::plain(chunk))
    }

    /// Fast path for blocks forwarded as they are: the chunk's bytes
    /// `a..b` (clamped to it) join the pending ones if they follow them,
    /// so a push's unchanged blocks go out in one write instead of one
    /// each ([`Coalesce`]). `bytes_out` counts them now, as a write would.
    /// `tests::gateway_fast_paths_match_general_path` compares it with
    /// writing each block.
    #[inline(always)]
    pub(super) fn write_chunk(&mut self, a: u64, b: u64) {
        let (a, b) = self.chunk.clamp(a, b);
        if self.failed || a >= b {
            return;
        }
        if !crate::testing::fast_paths() {
            let bytes = self.chunk.get(a, b);
            self.write(bytes);
            return;
        }
        if self.pending.end != a || b.saturating_sub(self.pending.start) > COALESCE {
            self.flush();
            self.pending = Coalesce { start: a, end: a };
        }
        self.pending.end = b;
        self.bytes_out = self.bytes_out.saturating_add(b.saturating_sub(a));
    }

    /// Writes the pending bytes (see [`Emitter::write_chunk`]).
    #[inline(never)]
    pub(super) fn flush(&mut self) {
        let Coalesce { start, end } = core::mem::take(&mut self.pending);
        if start >= end || self.failed {
            return;
        }
        let bytes = self.chunk.get(start, end);
        if self.out.write_bytes(bytes).is_err() {
            self.failed = true;
        }
    }

    /// Stream bytes `a..b`: the part in the raw buffer, then the part in
    /// the chunk.
    pub(super) fn parts(&self, a: u64, b: u64) -> [&'a [u8]; 2] {
        [self.raw.get(a, b), self.chunk.get(a, b)]
    }

    pub(super) fn write(&mut self, bytes: &[u8]) {
        self.flush();
        if self.failed || bytes.is_empty() {
            return;
        }
        match self.out.write_bytes(bytes) {
            Ok(()) => self.bytes_out = self.bytes_out.saturating_add(bytes.len() as u64),
            Err(BufferFull) => self.failed = true,
        }
    }

    /// Writes stream bytes `a..b` as they are, or with LF line ends if the
    /// reference client could not read them (then returns true).
    pub(super) fn forward(&mut self, a: u64, b: u64) -> bool {
        if a >= b && !self.lines.after_cr {
            // Nothing to write (the gap before most blocks), and no CR
            // state to settle: what the fast path below answers.
            return false;
        }
        let parts = self.parts(a, b);
        let [x, y] = parts;
        let line = self.lines.line;
        if x.is_empty() && self.lines.settled() && (y.is_empty() || self.chunk_plain()) {
            // Fast path, the same answer as `relines::check`: bytes wholly
            // in a plain chunk have no CR, and a bare `data` line in them
            // would be at their start or after a LF in the chunk; ending
            // in LF, they leave the next line at its start.
            if y.is_empty() {
                return false;
            }
            if !y.starts_with(b"data\n")
                && y.last() == Some(&b'\n')
                && (self.bytes_out > 0 || !y.starts_with(BOM))
            {
                self.write_chunk(a, b);
                return false;
            }
        }
        if self.bytes_out == 0 && x.iter().chain(y).take(3).eq(BOM) {
            // Bytes that were a line's, not a BOM, would read as one at the
            // start of the output: a blank line keeps them a line's.
            self.write(b"\n");
        }
        self.flush();
        let skip_lf = core::mem::replace(&mut self.lines.after_cr, false);
        match relines::check(parts, skip_lf, line) {
            Ok(after) => {
                for part in parts {
                    self.write(part);
                }
                self.lines.line = after;
                false
            }
            Err(relines::Needed) => {
                let mut out = Counted {
                    out: &mut *self.out,
                    bytes: &mut self.bytes_out,
                };
                match relines::write(parts, skip_lf, line, &mut out) {
                    Ok(after) => self.lines.line = after,
                    Err(BufferFull) => self.failed = true,
                }
                self.lines.after_cr = parts.iter().rev().find_map(|p| p.last()) == Some(&b'\r');
                true
            }
        }
    }

    /// Writes `event` with the encoder, as `data: {json}`.
    pub(super) fn encoded(&mut self, event: &Event<'_>) {
        self.flush();
        let mut out = Counted {
            out: &mut *self.out,
            bytes: &mut self.bytes_out,
        };
        let written = out
            .write_bytes(b"data: ")
            .and_then(|()| encode(event, &mut out))
            .and_then(|()| out.write_bytes(b"\n\n"));
        if written.is_err() {
            self.failed = true;
        }
    }
}

/// Bytes kept back while they may be dropped.
const LAZY: usize = 2048;

/// Output kept back until it is known to be wanted: its first [`LAZY`]
/// bytes are kept, and written once [`commit`](Lazy::commit)ted, or as
/// soon as more come; dropped if neither happened.
pub(super) struct Lazy<'e, 'a, W: ?Sized> {
    emit: &'e mut Emitter<'a, W>,
    kept: heapless::Vec<u8, LAZY>,
    committed: bool,
}

impl<W: Write + ?Sized> Lazy<'_, '_, W> {
    /// Writes what was kept, and from now on what comes.
    pub(super) fn commit(&mut self) {
        if !core::mem::replace(&mut self.committed, true) {
            self.emit.write(&self.kept);
        }
    }

    /// Whether it was written (or is being).
    pub(super) fn committed(&self) -> bool {
        self.committed
    }
}

impl<W: Write + ?Sized> Write for Lazy<'_, '_, W> {
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), BufferFull> {
        if !self.committed {
            if self.kept.extend_from_slice(bytes).is_ok() {
                return Ok(());
            }
            self.commit();
        }
        self.emit.write(bytes);
        if self.emit.failed {
            return Err(BufferFull);
        }
        Ok(())
    }
}

impl<'a, W: Write + ?Sized> Emitter<'a, W> {
    /// A writer whose output is kept back until committed.
    pub(super) fn lazy(&mut self) -> Lazy<'_, 'a, W> {
        Lazy {
            emit: self,
            kept: heapless::Vec::new(),
            committed: false,
        }
    }
}

/// A UTF-8 byte order mark.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A writer that counts what it writes.
pub(super) struct Counted<'a, W: ?Sized> {
    pub(super) out: &'a mut W,
    pub(super) bytes: &'a mut u64,
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

impl<W: Write + ?Sized> Forward<'_, W> {
    /// Fast path for the event of an unchanged frame that follows the
    /// last one written, wholly in the chunk: what [`Forward::begin`] (no
    /// gap to forward) and [`Forward::frame_bytes`] (the bytes as they are)
    /// do for it, without their general checks; returns false, having done
    /// nothing, for anything else. It assumes (and checks) the first event
    /// of an original, terminated, not streamed frame that the framer found
    /// plain (`FrameInfo::plain`: no CR, no bare `data` line, so nothing to
    /// re-line, without looking at the chunk), no option that re-encodes or
    /// drops events, no CR before it and output already started (so no BOM
    /// question). `tests::gateway_fast_paths_match_general_path` compares
    /// the output and statistics with the general path's.
    #[inline(always)]
    pub(super) fn forwarded_as_is(&mut self, info: &FrameInfo) -> bool {
        let passthrough = !self.options.canonical
            && !self.options.drop_raw
            && self.filter.is_empty()
            && crate::testing::fast_paths();
        if !(passthrough
            && info.original
            && info.terminated
            && info.plain
            && self.emit.lines.settled()
            && self.emit.bytes_out > 0
            && self.frame.index != Some(info.index)
            && self.marks.accounted == info.start
            && self.marks.streamed <= info.start
            && self.emit.chunk.holds(info.start, info.end))
        {
            return false;
        }
        self.frame.index = Some(info.index);
        self.frame.written = true;
        self.frame.streamed = false;
        self.marks.accounted = info.end;
        self.emit.write_chunk(info.start, info.end);
        self.count(false);
        true
    }
}
