//! The generator's output: bytes into the caller's buffer, JSON pieces,
//! and text drawn from the input.

use super::cursor::Cursor;

/// Characters text is drawn from: plain ones, ones JSON escapes, and
/// multi-byte ones.
const ALPHABET: [&str; 16] = [
    "a", "b", "c", " ", "x", "1", ".", "\"", "\\", "\n", "\t", "é", "東", "😀", "\u{7f}", "\u{1}",
];

/// Bytes written into a buffer; a write that does not fit marks it failed
/// (and writes nothing of itself).
pub(super) struct Out<'b> {
    buf: &'b mut [u8],
    len: usize,
    failed: bool,
}

impl<'b> Out<'b> {
    pub(super) fn new(buf: &'b mut [u8]) -> Self {
        Out {
            buf,
            len: 0,
            failed: false,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn room(&self) -> usize {
        self.buf.len().saturating_sub(self.len)
    }

    pub(super) fn failed(&self) -> bool {
        self.failed
    }

    /// Back to `len` bytes, not failed.
    pub(super) fn reset(&mut self, len: usize) {
        self.len = len.min(self.len);
        self.failed = false;
    }

    pub(super) fn raw(&mut self, bytes: &[u8]) {
        let end = self.len.saturating_add(bytes.len());
        match self.buf.get_mut(self.len..end) {
            Some(dst) if !self.failed => {
                dst.copy_from_slice(bytes);
                self.len = end;
            }
            _ => self.failed = true,
        }
    }

    /// `{"type":"TYPE"`.
    pub(super) fn head(&mut self, ty: &str) {
        self.raw(br#"{"type":""#);
        self.raw(ty.as_bytes());
        self.raw(b"\"");
    }

    /// `,"KEY":"PREFIXn"`.
    pub(super) fn id(&mut self, key: &str, prefix: char, n: u32) {
        self.raw(b",\"");
        self.raw(key.as_bytes());
        self.raw(b"\":\"");
        let mut c = [0u8; 4];
        self.raw(prefix.encode_utf8(&mut c).as_bytes());
        self.number(n);
        self.raw(b"\"");
    }

    /// `,"subagentRunId":"aN"` for subagent `owner` (nothing for the
    /// parent agent, 0).
    pub(super) fn owner(&mut self, owner: u32) {
        if owner != 0 {
            self.id("subagentRunId", 'a', owner);
        }
    }

    pub(super) fn number(&mut self, n: u32) {
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        let mut n = n;
        loop {
            i = i.saturating_sub(1);
            if let Some(d) = digits.get_mut(i) {
                *d = b'0'.saturating_add(u8::try_from(n.checked_rem(10).unwrap_or(0)).unwrap_or(0));
            }
            n = n.checked_div(10).unwrap_or(0);
            if n == 0 || i == 0 {
                break;
            }
        }
        let (_, tail) = digits.split_at(i);
        let mut copy = [0u8; 10];
        let len = tail.len();
        if let Some(dst) = copy.get_mut(..len) {
            dst.copy_from_slice(tail);
        }
        self.raw(copy.get(..len).unwrap_or_default());
    }

    /// `s` as a JSON string.
    pub(super) fn string(&mut self, s: &str) {
        self.raw(b"\"");
        self.escaped(s);
        self.raw(b"\"");
    }

    /// ASCII bytes as a JSON string (quotes and backslashes escaped).
    pub(super) fn ascii_string(&mut self, bytes: &[u8]) {
        self.raw(b"\"");
        for &b in bytes {
            match b {
                b'"' => self.raw(b"\\\""),
                b'\\' => self.raw(b"\\\\"),
                _ => self.raw(&[b]),
            }
        }
        self.raw(b"\"");
    }

    fn escaped(&mut self, s: &str) {
        for ch in s.chars() {
            match ch {
                '"' => self.raw(b"\\\""),
                '\\' => self.raw(b"\\\\"),
                '\n' => self.raw(b"\\n"),
                '\t' => self.raw(b"\\t"),
                c if u32::from(c) < 0x20 => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    let v = u32::from(c) as usize;
                    let hi = HEX.get(v >> 4).copied().unwrap_or(b'0');
                    let lo = HEX.get(v & 15).copied().unwrap_or(b'0');
                    self.raw(&[b'\\', b'u', b'0', b'0', hi, lo]);
                }
                c => {
                    let mut b = [0u8; 4];
                    self.raw(c.encode_utf8(&mut b).as_bytes());
                }
            }
        }
    }

    /// `,"delta":"…"` of 1 to `max` characters drawn from `c`.
    pub(super) fn delta(&mut self, c: &mut Cursor<'_>, max: u32) {
        self.raw(br#","delta":"#);
        let n = c.int_in_range(1, max.max(1));
        self.drawn(c, n);
    }

    /// A JSON string of 0 to `max` characters drawn from `c`.
    pub(super) fn text(&mut self, c: &mut Cursor<'_>, max: u32) {
        let n = c.int_in_range(0, max);
        self.drawn(c, n);
    }

    fn drawn(&mut self, c: &mut Cursor<'_>, n: u32) {
        self.raw(b"\"");
        for _ in 0..n {
            let ch = ALPHABET
                .get(c.index(ALPHABET.len()))
                .copied()
                .unwrap_or("a");
            self.escaped(ch);
        }
        self.raw(b"\"");
    }
}
