//! A frame that outgrew the frame buffer, checked as it streams past: its
//! JSON syntax — the verdict the reference gives first — and where it
//! stopped fitting. The rest of its verdict (schema, chunks, lifecycle)
//! needs the frame whole, so a well-formed one is a
//! [`Capacity::FrameBuffer`](crate::Capacity::FrameBuffer) error: the
//! frame is read to its end (a monitoring pipeline goes on after it), and
//! nothing but this small state is kept.

use crate::json::{JsonError, JsonErrorKind, Limits, Scanner, V8Message};
use crate::sse::{Spill, SpillSink};

/// The state of a spilling frame, or the message of the last JSON error:
/// the framer's spill sink (one or the other is needed at a time).
#[derive(Clone, Copy, Debug)]
pub(crate) enum JsonState {
    /// The last JSON syntax error, as V8 words it.
    Message(V8Message),
    /// A frame is spilling.
    Spilling(Spilling),
}

impl SpillSink for JsonState {
    fn spill(&mut self, spill: Spill<'_>) -> bool {
        match (spill, &mut *self) {
            (Spill::Begin { offset }, state) => *state = JsonState::Spilling(Spilling::new(offset)),
            (Spill::Bytes(bytes), JsonState::Spilling(s)) => s.feed(bytes),
            (Spill::Bytes(_), JsonState::Message(_)) => {}
        }
        true
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Spilling {
    /// Stream offset of the first byte that did not fit.
    pub(crate) overflow_at: u64,
    scan: Scanner<1>,
    /// The first syntax error, with the UTF-16 units before it and the
    /// byte there (for V8's message).
    error: Option<(JsonError, u32, u8)>,
    /// Payload bytes seen, and where the first line ends (`usize::MAX`
    /// until it does).
    seen: usize,
    first_lf: usize,
    /// UTF-16 units of the bytes seen (exact for valid UTF-8; saturating).
    units: u32,
}

/// What a spilled frame's JSON came to.
pub(crate) enum Verdict {
    /// Well-formed: the frame is too large for the rest of the checks.
    TooLarge { overflow_at: u64 },
    /// A syntax error (or too deep), at this payload offset; on the first
    /// data line if `first_line`.
    Json { error: JsonError, first_line: bool },
}

/// UTF-16 units of UTF-8 text: one per lead byte, two for a four-byte one.
fn utf16_units(bytes: &[u8]) -> u32 {
    let units: usize = bytes
        .iter()
        .map(|&b| match b {
            0x80..=0xBF => 0,
            0xF0..=0xFF => 2,
            _ => 1,
        })
        .sum();
    u32::try_from(units).unwrap_or(u32::MAX)
}

impl Spilling {
    /// A frame that stopped fitting at stream offset `overflow_at`; its
    /// JSON is checked 64 levels deep, whatever the limits.
    pub(crate) const fn new(overflow_at: u64) -> Self {
        Spilling {
            overflow_at,
            scan: Scanner::new(Limits::new()),
            error: None,
            seen: 0,
            first_lf: usize::MAX,
            units: 0,
        }
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if self.first_lf == usize::MAX
            && let Some(k) = memchr::memchr(b'\n', bytes)
        {
            self.first_lf = self.seen.saturating_add(k);
        }
        match self.scan.feed(bytes) {
            Ok(()) => self.units = self.units.saturating_add(utf16_units(bytes)),
            Err(e) => {
                let at = e.offset.saturating_sub(self.seen);
                let before = bytes.get(..at).unwrap_or_default();
                let units = self.units.saturating_add(utf16_units(before));
                let byte = bytes.get(at).copied().unwrap_or(0);
                self.error = Some((e, units, byte));
            }
        }
        self.seen = self.seen.saturating_add(bytes.len());
    }

    /// The verdict at the frame's end, and V8's message for a JSON error.
    pub(crate) fn finish(&self) -> (Verdict, Option<V8Message>) {
        let (error, units, byte) = match self.error {
            Some(e) => e,
            None => match self.scan.finish() {
                Ok(()) => {
                    let overflow_at = self.overflow_at;
                    return (Verdict::TooLarge { overflow_at }, None);
                }
                Err(e) => (e, self.units, 0),
            },
        };
        let first_line = error.offset <= self.first_lf;
        let message = match error.kind {
            JsonErrorKind::TooDeep { .. } => None,
            kind => Some(V8Message::at(kind, units as usize, byte)),
        };
        (Verdict::Json { error, first_line }, message)
    }
}
