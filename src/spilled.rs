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
    /// UTF-16 units of the bytes seen, as the reference decodes them.
    units: Utf16Count,
}

/// What a spilled frame's JSON came to.
pub(crate) enum Verdict {
    /// Well-formed: the frame is too large for the rest of the checks.
    TooLarge { overflow_at: u64 },
    /// A syntax error (or too deep), at this payload offset; on the first
    /// data line if `first_line`.
    Json { error: JsonError, first_line: bool },
}

/// UTF-16 units of bytes decoded as the WHATWG UTF-8 decoder decodes them
/// (each maximal invalid subpart is one U+FFFD), fed in pieces.
#[derive(Clone, Copy, Debug)]
struct Utf16Count {
    units: u32,
    /// Continuation bytes the current sequence still needs, and the range
    /// its next one must be in.
    needed: u8,
    lower: u8,
    upper: u8,
    /// The current sequence is four bytes long (two units).
    astral: bool,
}

impl Utf16Count {
    const fn new() -> Self {
        Utf16Count {
            units: 0,
            needed: 0,
            lower: 0x80,
            upper: 0xBF,
            astral: false,
        }
    }

    fn add(&mut self, units: u32) {
        self.units = self.units.saturating_add(units);
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.needed > 0 {
                if (self.lower..=self.upper).contains(&b) {
                    self.needed = self.needed.saturating_sub(1);
                    (self.lower, self.upper) = (0x80, 0xBF);
                    if self.needed == 0 {
                        self.add(if self.astral { 2 } else { 1 });
                    }
                    continue;
                }
                // The sequence is cut short: one U+FFFD, and `b` starts anew.
                self.add(1);
                *self = Utf16Count {
                    units: self.units,
                    ..Utf16Count::new()
                };
            }
            match b {
                0x00..=0x7F => self.add(1),
                0xC2..=0xDF => {
                    self.needed = 1;
                    self.astral = false;
                }
                0xE0..=0xEF => {
                    self.needed = 2;
                    self.astral = false;
                    self.lower = if b == 0xE0 { 0xA0 } else { 0x80 };
                    self.upper = if b == 0xED { 0x9F } else { 0xBF };
                }
                0xF0..=0xF4 => {
                    self.needed = 3;
                    self.astral = true;
                    self.lower = if b == 0xF0 { 0x90 } else { 0x80 };
                    self.upper = if b == 0xF4 { 0x8F } else { 0xBF };
                }
                _ => self.add(1),
            }
        }
    }

    /// Units before the next byte: an unfinished sequence there is cut
    /// short by it (a U+FFFD) unless it continues it, which an error byte
    /// of JSON text never does.
    fn before_next(&self) -> u32 {
        self.units.saturating_add(u32::from(self.needed > 0))
    }
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
            units: Utf16Count::new(),
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
            Ok(()) => self.units.feed(bytes),
            Err(e) => {
                let at = e.offset.saturating_sub(self.seen);
                self.units.feed(bytes.get(..at).unwrap_or_default());
                let byte = bytes.get(at).copied().unwrap_or(0);
                self.error = Some((e, self.units.before_next(), byte));
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
                Err(e) => (e, self.units.before_next(), 0),
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

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::vec::Vec;

    /// The count agrees with the standard library's lossy decoding (which
    /// replaces maximal subparts, as WHATWG does) however the bytes are cut.
    #[test]
    fn utf16_count_is_the_lossy_decoding_under_every_split() {
        let texts: [&[u8]; 6] = [
            "a\u{e9}\u{20ac}\u{1F600}z".as_bytes(),
            b"\xff\x80\xc3\xe2\x82\xf0\x9f\x98x",
            b"\xe0\x80\xed\xa0\x80\xf4\x90\x80\x80",
            b"\xc3\xa9\xc3",
            b"\xf0\x9f\x98\x80\xf0\x9f",
            b"",
        ];
        for text in texts {
            let lossy = std::string::String::from_utf8_lossy(text);
            let want = lossy.encode_utf16().count() as u32;
            for cut in 0..=text.len() {
                let mut c = Utf16Count::new();
                c.feed(&text[..cut]);
                c.feed(&text[cut..]);
                let ends_open = c.needed > 0;
                assert_eq!(
                    c.units + u32::from(ends_open),
                    want,
                    "{text:?} cut at {cut}"
                );
            }
            let ones: Vec<&[u8]> = text.chunks(1).collect();
            let mut c = Utf16Count::new();
            ones.iter().for_each(|b| c.feed(b));
            assert_eq!(c.before_next(), want);
        }
    }
}
