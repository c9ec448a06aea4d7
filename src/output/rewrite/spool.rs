//! The raw buffer: the original bytes of a block that spans pushes, kept
//! until the block is accounted for; a block that outgrows it streams
//! ahead of its verdict. And [`Window`], where a buffer's bytes lie in the
//! stream.

use super::RewriteError;

/// Bytes of a block that outgrew the raw buffer kept back until its
/// verdict, so that a block found bad at its end can still be cut.
pub(super) const WITHHELD: usize = 16;

/// What ends a block forwarded ahead of its verdict that turned out bad
/// (or was cut by the end of input): a data line whose control byte no JSON
/// can hold, so that the client's parse of the block fails visibly. It
/// starts a line: after the line the block stopped in (a LF ends it), or
/// right away where the block stopped at a line's end (a LF there would
/// end the block, and its lines so far could read as an event).
pub(super) const CUT: &[u8] = b"\ndata: \x01\n\n";

/// Bytes of a buffer that are the stream's from offset `start` on: stream
/// offsets in, slices of the buffer out, clamped to what it holds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Window<'a> {
    start: u64,
    bytes: &'a [u8],
}

impl<'a> Window<'a> {
    pub(super) const fn new(start: u64, bytes: &'a [u8]) -> Self {
        Window { start, bytes }
    }

    pub(super) const fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The stream offset just past the bytes.
    pub(super) const fn end(&self) -> u64 {
        self.start.saturating_add(self.bytes.len() as u64)
    }

    /// Whether stream bytes `a..b` are all here.
    #[inline(always)]
    pub(super) const fn holds(&self, a: u64, b: u64) -> bool {
        a >= self.start && b <= self.end()
    }

    /// `a..b` clamped to the bytes here.
    #[inline(always)]
    pub(super) fn clamp(&self, a: u64, b: u64) -> (u64, u64) {
        // `clamp` without its panic path (`start <= end` always).
        let end = self.end();
        (a.max(self.start).min(end), b.max(self.start).min(end))
    }

    /// The part of stream bytes `a..b` held here.
    #[inline(always)]
    pub(super) fn get(&self, a: u64, b: u64) -> &'a [u8] {
        let (a, b) = self.clamp(a, b);
        let index = |x: u64| x.saturating_sub(self.start) as usize;
        self.bytes.get(index(a)..index(b)).unwrap_or_default()
    }
}

/// How far the stream is accounted for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Marks {
    /// Input bytes fully accounted for in the output (written, re-written,
    /// replaced or dropped): the raw buffer holds the bytes from here on.
    pub(super) accounted: u64,
    /// The unfinished block outgrew the raw buffer: its bytes up to this
    /// stream offset are already out (0: none).
    pub(super) streamed: u64,
}

/// The raw buffer and what it holds.
#[derive(Debug)]
pub(super) struct Spool<'b> {
    buf: &'b mut [u8],
    /// `buf[..len]` are the input bytes from stream offset `accounted` on
    /// (as it was when they were kept), not yet part of a complete block.
    /// (A `u32`, beside `head`, keeps the rewriter's state small: a raw
    /// buffer is used up to 4 GiB.)
    len: u32,
    /// The unfinished block is a delta going out in pieces
    /// ([`split`](super::split)): its head's length, kept at the buffer's
    /// end (0: it is not).
    head: u16,
    pub(super) marks: Marks,
}

impl<'b> Spool<'b> {
    pub(super) fn new(buf: &'b mut [u8]) -> Self {
        Spool {
            buf,
            len: 0,
            head: 0,
            marks: Marks::default(),
        }
    }

    pub(super) fn into_buffer(self) -> &'b mut [u8] {
        self.buf
    }

    /// Puts `buf` in place of the buffer and returns the old one; only
    /// where it holds nothing.
    pub(super) fn replace_buffer(&mut self, buf: &'b mut [u8]) -> &'b mut [u8] {
        core::mem::replace(&mut self.buf, buf)
    }

    /// Puts `buf` in place of the buffer, with the bytes held, and returns
    /// the old one; `buf` back if it is too short for them.
    pub(super) fn grow(&mut self, buf: &'b mut [u8]) -> Result<&'b mut [u8], &'b mut [u8]> {
        let len = self.len();
        if self.head != 0 {
            return Err(buf);
        }
        let (Some(dst), Some(src)) = (buf.get_mut(..len), self.buf.get(..len)) else {
            return Err(buf);
        };
        dst.copy_from_slice(src);
        Ok(core::mem::replace(&mut self.buf, buf))
    }

    /// Bytes held.
    pub(super) const fn len(&self) -> usize {
        self.len as usize
    }

    /// The buffer's length (up to 4 GiB), less a split's head kept at its
    /// end.
    pub(super) const fn capacity(&self) -> usize {
        let len = if self.buf.len() > u32::MAX as usize {
            u32::MAX as usize
        } else {
            self.buf.len()
        };
        len.saturating_sub(self.head as usize)
    }

    /// Whether a split's head is kept.
    pub(super) const fn splitting(&self) -> bool {
        self.head != 0
    }

    /// The held bytes, which end where the pipeline reads next (`base`),
    /// a split's head, and the marks, for a sink.
    pub(super) fn split(&mut self, base: u64) -> (Window<'_>, &[u8], &mut Marks) {
        let held = self.buf.get(..self.len()).unwrap_or_default();
        let at = self.buf.len().saturating_sub(self.head as usize);
        let head = self.buf.get(at..).unwrap_or_default();
        let start = base.saturating_sub(self.len as u64);
        (Window::new(start, held), head, &mut self.marks)
    }

    /// Keeps `head` at the buffer's end, for the pieces of a split delta;
    /// false (nothing done) where the buffer has no room for it beside
    /// the held bytes.
    pub(super) fn keep_head(&mut self, head: &[u8]) -> bool {
        let held = self.len();
        let Some(at) = self.buf.len().checked_sub(head.len()) else {
            return false;
        };
        let (Ok(len), Some(dst)) = (u16::try_from(head.len()), self.buf.get_mut(at..)) else {
            return false;
        };
        if held > at || head.is_empty() {
            return false;
        }
        dst.copy_from_slice(head);
        self.head = len;
        true
    }

    /// After a chunk ran: a split whose block went out whole (nothing of
    /// it is out ahead any more) keeps no head.
    pub(super) fn settle(&mut self) {
        if self.marks.streamed == 0 {
            self.head = 0;
        }
    }

    /// Where a block that has outgrown the buffer, now that the stream
    /// has reached `end`, goes out to ahead of its verdict: all but its
    /// last [`WITHHELD`] bytes (`None` if it still fits, or the buffer is
    /// too small to withhold them).
    pub(super) fn ahead(&self, end: u64) -> Option<u64> {
        let accounted = self.marks.accounted;
        let outgrown = end.saturating_sub(accounted) > self.capacity() as u64;
        (outgrown && self.capacity() >= WITHHELD)
            .then(|| end.saturating_sub(WITHHELD as u64).max(accounted))
    }

    /// After `chunk` ran, keeps the bytes not yet accounted for: the
    /// buffer then covers `accounted..` up to the chunk's end. `was` is
    /// where the held bytes started before.
    pub(super) fn keep(&mut self, was: u64, chunk: super::Window<'_>) -> Result<(), RewriteError> {
        let accounted = self.marks.accounted;
        let held = self.len();
        let drop = (accounted.saturating_sub(was) as usize).min(held);
        self.buf.copy_within(drop..held, 0);
        let kept = held.saturating_sub(drop);
        let add = chunk.get(accounted, chunk.end());
        let len = kept.saturating_add(add.len());
        let capacity = self.capacity();
        let Some(dst) = self.buf.get_mut(kept..len).filter(|_| len <= capacity) else {
            return Err(RewriteError::RawBuffer { capacity });
        };
        dst.copy_from_slice(add);
        // `len <= capacity`, at most `u32::MAX`.
        self.len = len as u32;
        Ok(())
    }
}
