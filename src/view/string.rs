//! Escaped string views: a JSON string as it was written, decoded on demand.
//!
//! A [`JsonStr`] borrows the bytes between the quotes. Most AG-UI strings
//! (ids, deltas) need no decoding at all; [`JsonStr::as_str`] hands those out
//! for free. The rest decode through [`JsonStr::chars`], which yields Unicode
//! scalar values, except that a lone surrogate escape (`\ud83d` with no low
//! half, which `JSON.parse` accepts) comes out as its own value in
//! 0xD800..=0xDFFF instead of being lost. Invalid UTF-8 decodes to U+FFFD,
//! one per maximal invalid subsequence, exactly as the WHATWG decoder the
//! reference uses.

use core::fmt;

/// A JSON string's contents in escaped form (without the quotes).
///
/// Equality compares the decoded text: `"\u0041"` equals `"A"`.
///
/// ```
/// use agui_stream::json::{Limits, RawJson};
/// let v = RawJson::parse(br#""caf\u00e9 \ud83d\ude00""#, Limits::new()).unwrap();
/// let s = v.as_str().unwrap();
/// assert!(s.eq_str("café 😀"));
/// assert!(s.as_str().is_none()); // it has escapes
/// let mut buf = [0u8; 32];
/// assert_eq!(s.unescape_into(&mut buf).unwrap().as_str(), Some("café 😀"));
/// ```
#[derive(Clone, Copy)]
pub struct JsonStr<'a> {
    raw: &'a [u8],
}

impl<'a> JsonStr<'a> {
    /// Wraps the escaped bytes of a string (what lies between the quotes).
    /// Malformed escapes decode as literal text rather than failing.
    pub const fn from_escaped(raw: &'a [u8]) -> Self {
        JsonStr { raw }
    }

    /// The escaped bytes, exactly as written between the quotes.
    pub const fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// True if the string has no escapes and is valid UTF-8, i.e. its
    /// decoded text is its raw bytes.
    pub fn is_plain(&self) -> bool {
        memchr::memchr(b'\\', self.raw).is_none() && core::str::from_utf8(self.raw).is_ok()
    }

    /// The text without copying, when no decoding is needed.
    pub fn as_str(&self) -> Option<&'a str> {
        if memchr::memchr(b'\\', self.raw).is_some() {
            return None;
        }
        core::str::from_utf8(self.raw).ok()
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Decodes the string: Unicode scalar values, lone surrogates as
    /// themselves, U+FFFD for invalid UTF-8.
    pub fn code_points(&self) -> CodePoints<'a> {
        CodePoints {
            raw: self.raw,
            pos: 0,
        }
    }

    /// Compares the decoded text with `s`, without allocating.
    pub fn eq_str(&self, s: &str) -> bool {
        if self.raw == s.as_bytes() {
            return true;
        }
        // ASCII without escapes is its own decoding (a member's name, most
        // often): it differs. Else plain UTF-8 is.
        if !self.raw.iter().any(|&b| b == b'\\' || b >= 0x80) || self.is_plain() {
            return false;
        }
        self.code_points().eq(s.chars().map(u32::from))
    }

    /// Length of the decoded text in UTF-16 code units (JavaScript's
    /// `string.length`).
    pub fn utf16_len(&self) -> usize {
        self.code_points()
            .map(|c| if c > 0xFFFF { 2 } else { 1 })
            .sum()
    }

    /// Decodes into `buf` as WTF-8 (UTF-8 that can also hold lone surrogates)
    /// and returns the written part. Fails with the needed length if `buf` is
    /// too small.
    ///
    /// # Errors
    ///
    /// [`BufferTooSmall`] with the length needed.
    pub fn unescape_into<'b>(&self, buf: &'b mut [u8]) -> Result<Unescaped<'b>, BufferTooSmall> {
        if let Some(plain) = self.as_str() {
            let dst = buf.get_mut(..plain.len()).ok_or(BufferTooSmall {
                needed: plain.len(),
            })?;
            dst.copy_from_slice(plain.as_bytes());
            return Ok(Unescaped {
                bytes: dst,
                lone_surrogates: false,
            });
        }
        let mut n = 0usize;
        let mut lone = false;
        let mut fits = true;
        for c in self.code_points() {
            let mut tmp = [0u8; 4];
            let enc = encode_wtf8(c, &mut tmp);
            lone |= (0xD800..=0xDFFF).contains(&c);
            let end = n.saturating_add(enc.len());
            match buf.get_mut(n..end) {
                Some(dst) if fits => dst.copy_from_slice(enc),
                _ => fits = false,
            }
            n = end;
        }
        if !fits {
            return Err(BufferTooSmall { needed: n });
        }
        Ok(Unescaped {
            bytes: buf.get(..n).unwrap_or_default(),
            lone_surrogates: lone,
        })
    }
}

/// Encodes a code point (or lone surrogate) as UTF-8 / WTF-8.
pub(crate) fn encode_wtf8(c: u32, out: &mut [u8; 4]) -> &[u8] {
    let len = if c < 0x80 {
        out[0] = c as u8;
        1
    } else if c < 0x800 {
        out[0] = 0xC0 | (c >> 6) as u8;
        out[1] = 0x80 | (c & 0x3F) as u8;
        2
    } else if c < 0x10000 {
        out[0] = 0xE0 | (c >> 12) as u8;
        out[1] = 0x80 | ((c >> 6) & 0x3F) as u8;
        out[2] = 0x80 | (c & 0x3F) as u8;
        3
    } else {
        out[0] = 0xF0 | ((c >> 18) & 0x07) as u8;
        out[1] = 0x80 | ((c >> 12) & 0x3F) as u8;
        out[2] = 0x80 | ((c >> 6) & 0x3F) as u8;
        out[3] = 0x80 | (c & 0x3F) as u8;
        4
    };
    out.get(..len).unwrap_or_default()
}

/// Decoded text written by [`JsonStr::unescape_into`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unescaped<'b> {
    bytes: &'b [u8],
    lone_surrogates: bool,
}

impl<'b> Unescaped<'b> {
    /// The decoded bytes (WTF-8: valid UTF-8 unless the text has lone surrogates).
    pub fn as_bytes(&self) -> &'b [u8] {
        self.bytes
    }

    /// The text, unless it holds lone surrogates (which `str` cannot).
    pub fn as_str(&self) -> Option<&'b str> {
        if self.lone_surrogates {
            None
        } else {
            core::str::from_utf8(self.bytes).ok()
        }
    }

    /// True if the text holds a lone surrogate.
    pub fn has_lone_surrogates(&self) -> bool {
        self.lone_surrogates
    }
}

/// The caller's buffer cannot hold the decoded text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferTooSmall {
    /// Bytes the decoded text needs.
    pub needed: usize,
}

impl fmt::Display for BufferTooSmall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "buffer too small: {} bytes needed", self.needed)
    }
}

impl core::error::Error for BufferTooSmall {}

/// True if the raw bytes are the decoded text and decoding could not map
/// two different spellings to one text (no escapes, no invalid UTF-8).
pub(crate) fn is_plain_ascii(raw: &[u8]) -> bool {
    crate::view::scan::plain_ascii(raw)
}

/// True if `raw` (a JSON string's content as received, already
/// validated) is what `JSON.stringify` writes for its text, so it can be
/// copied as it is: valid UTF-8 between escapes, and only the escapes
/// stringify writes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx`
/// in lower case for the other control characters). One pass; `false`
/// means "decode and re-encode", never a wrong copy.
pub(crate) fn is_stringify_form(raw: &[u8]) -> bool {
    if is_plain_ascii(raw) {
        return true;
    }
    let mut rest = raw;
    loop {
        let Some(at) = memchr::memchr(b'\\', rest) else {
            return core::str::from_utf8(rest).is_ok();
        };
        // A backslash is ASCII: never inside a UTF-8 sequence.
        let Some((text, escape)) = rest.split_at_checked(at) else {
            return false;
        };
        if core::str::from_utf8(text).is_err() {
            return false;
        }
        let len = match escape.get(1) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
            Some(b'u') => match escape.get(2..6) {
                // A control character stringify writes as \u00xx: not one
                // of the five with a short form.
                Some([b'0', b'0', b'0', b'0'..=b'7' | b'b' | b'e' | b'f'])
                | Some([b'0', b'0', b'1', b'0'..=b'9' | b'a'..=b'f']) => 6,
                _ => return false,
            },
            _ => return false,
        };
        rest = escape.get(len..).unwrap_or_default();
    }
}

impl JsonStr<'_> {
    /// A hash of the decoded text: equal texts, however spelled, hash
    /// equal. For quick rejection in id tables.
    ///
    /// The text is hashed as a byte stream (ASCII code points as
    /// themselves, others as `0xFF` and four bytes), eight bytes per step.
    /// A plain ASCII id is that stream already: its raw words are hashed as
    /// they are read, and the first word holding a non-ASCII byte or a
    /// backslash sends the whole id to the decoding path instead.
    pub(crate) fn text_hash(&self) -> u32 {
        const HIGH: u64 = 0x8080_8080_8080_8080;
        const ONES: u64 = 0x0101_0101_0101_0101;
        let mut hash = WordHash::default();
        let mut words = self.raw.chunks_exact(8);
        for word in &mut words {
            let w = u64::from_le_bytes(<[u8; 8]>::try_from(word).unwrap_or([0; 8]));
            let backslash = w ^ (ONES * u64::from(b'\\'));
            if (w | (backslash.wrapping_sub(ONES) & !backslash)) & HIGH != 0 {
                return self.decoded_hash();
            }
            hash.word(w);
        }
        for &b in words.remainder() {
            if b >= 0x80 || b == b'\\' {
                return self.decoded_hash();
            }
            hash.byte(b);
        }
        hash.finish()
    }

    /// [`text_hash`](Self::text_hash) of a text that needs decoding.
    #[cold]
    fn decoded_hash(&self) -> u32 {
        let mut hash = WordHash::default();
        for c in self.code_points() {
            match u8::try_from(c) {
                Ok(b) if b < 0x80 => hash.byte(b),
                _ => {
                    hash.byte(0xFF);
                    c.to_le_bytes().into_iter().for_each(|b| hash.byte(b));
                }
            }
        }
        hash.finish()
    }
}

/// A multiply-rotate hash of a byte stream, fed whole little-endian words
/// or single bytes (both give the same result for the same stream).
#[derive(Default)]
struct WordHash {
    state: u64,
    /// Bytes of an incomplete word, and how many.
    pending: u64,
    pending_len: u32,
    len: u64,
}

impl WordHash {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    fn word(&mut self, w: u64) {
        self.state = (self.state ^ w).wrapping_mul(Self::K).rotate_left(29);
        self.len = self.len.wrapping_add(8);
    }

    fn byte(&mut self, b: u8) {
        self.pending |= u64::from(b) << (self.pending_len.wrapping_mul(8) % 64);
        self.pending_len = self.pending_len.wrapping_add(1);
        if self.pending_len == 8 {
            self.word(self.pending);
            self.pending = 0;
            self.pending_len = 0;
        }
    }

    fn finish(mut self) -> u32 {
        let len = self.len.wrapping_add(u64::from(self.pending_len));
        self.state = (self.state ^ self.pending).wrapping_mul(Self::K);
        // Multiplication only carries differences upwards: fold the high
        // bits down (MurmurHash3's finalizer) so that every bit counts.
        let mut h = self.state ^ len;
        h ^= h >> 33;
        h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 33;
        h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        h ^= h >> 33;
        h as u32
    }
}

impl PartialEq for JsonStr<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        if crate::view::scan::same_bytes(self.raw, other.raw) {
            return true;
        }
        // Most ids are plain ASCII: then differing bytes are differing text.
        if is_plain_ascii(self.raw) && is_plain_ascii(other.raw) {
            return false;
        }
        self.code_points().eq(other.code_points())
    }
}

impl Eq for JsonStr<'_> {}

impl fmt::Debug for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for c in self.code_points() {
            match char::from_u32(c) {
                Some(ch) => write!(f, "{}", ch.escape_debug())?,
                None => write!(f, "\\u{{{c:x}}}")?,
            }
        }
        f.write_str("\"")
    }
}

impl fmt::Display for JsonStr<'_> {
    /// The decoded text; a lone surrogate shows as U+FFFD.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.as_str() {
            return f.write_str(s);
        }
        for c in self.code_points() {
            let ch = char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
            fmt::Write::write_char(f, ch)?;
        }
        Ok(())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for JsonStr<'_> {
    fn format(&self, f: defmt::Formatter) {
        defmt::write!(f, "{=[u8]:a}", self.raw)
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for JsonStr<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Iterator over a [`JsonStr`]'s decoded code points (`u32`, because a JSON string may hold lone surrogates, which `char` cannot); see [`JsonStr::code_points`].
#[derive(Clone, Debug)]
pub struct CodePoints<'a> {
    raw: &'a [u8],
    pos: usize,
}

fn hex4(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &d in b.get(..4)? {
        v = (v << 4) | (d as char).to_digit(16)?;
    }
    Some(v)
}

impl Iterator for CodePoints<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let rest = self.raw.get(self.pos..)?;
        let &b = rest.first()?;
        if b == b'\\' {
            let (c, used) = match rest.get(1) {
                Some(b'u') => match rest.get(2..).and_then(hex4) {
                    Some(hi @ 0xD800..=0xDBFF) => {
                        let lo = (rest.get(6) == Some(&b'\\') && rest.get(7) == Some(&b'u'))
                            .then(|| rest.get(8..).and_then(hex4))
                            .flatten();
                        match lo {
                            Some(lo @ 0xDC00..=0xDFFF) => {
                                let offset = ((hi & 0x3FF) << 10) | (lo & 0x3FF);
                                (offset.saturating_add(0x10000), 12)
                            }
                            _ => (hi, 6),
                        }
                    }
                    Some(u) => (u, 6),
                    None => (u32::from(b'u'), 2),
                },
                Some(b'b') => (0x08, 2),
                Some(b'f') => (0x0C, 2),
                Some(b'n') => (0x0A, 2),
                Some(b'r') => (0x0D, 2),
                Some(b't') => (0x09, 2),
                Some(&other) => (u32::from(other), 2),
                None => (u32::from(b'\\'), 1),
            };
            self.pos = self.pos.saturating_add(used);
            return Some(c);
        }
        if b < 0x80 {
            self.pos = self.pos.saturating_add(1);
            return Some(u32::from(b));
        }
        let window = rest.get(..4).unwrap_or(rest);
        let (c, used) = match core::str::from_utf8(window) {
            Ok(s) => first_char(s),
            Err(e) if e.valid_up_to() > 0 => {
                first_char(core::str::from_utf8(window.get(..e.valid_up_to())?).ok()?)
            }
            Err(e) => (0xFFFD, e.error_len().unwrap_or(window.len()).max(1)),
        };
        self.pos = self.pos.saturating_add(used);
        Some(c)
    }
}

fn first_char(s: &str) -> (u32, usize) {
    s.chars()
        .next()
        .map_or((0xFFFD, 1), |c| (u32::from(c), c.len_utf8()))
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn chars(raw: &[u8]) -> Vec<u32> {
        JsonStr::from_escaped(raw).code_points().collect()
    }

    #[test]
    fn decodes_escapes() {
        assert_eq!(
            chars(br#"a\"\\\/\b\f\n\r\t\u00e9"#),
            [
                'a' as u32,
                '"' as u32,
                '\\' as u32,
                '/' as u32,
                8,
                12,
                10,
                13,
                9,
                0xE9
            ]
        );
        assert_eq!(chars(br"\ud83d\ude00"), [0x1F600]);
        assert_eq!(chars(br"\ud840\udc00"), [0x20000]);
        assert_eq!(chars(br"\udbff\udfff"), [0x10FFFF]);
        assert_eq!(chars(br"\ud800\udc00"), [0x10000]);
        assert_eq!(chars("😀".as_bytes()), [0x1F600]);
    }

    #[test]
    fn keeps_lone_surrogates() {
        assert_eq!(chars(br"\ud83d"), [0xD83D]);
        assert_eq!(chars(br"\ude00\ud83d"), [0xDE00, 0xD83D]);
        assert_eq!(chars(br"\ud83dx"), [0xD83D, 'x' as u32]);
        assert_eq!(chars(br"\ud83d\u0041"), [0xD83D, 0x41]);
        let s = JsonStr::from_escaped(br"a\ud83d");
        let mut buf = [0u8; 8];
        let u = s.unescape_into(&mut buf).unwrap();
        assert!(u.has_lone_surrogates());
        assert_eq!(u.as_str(), None);
        assert_eq!(u.as_bytes(), b"a\xed\xa0\xbd");
        assert!(!s.eq_str("a\u{FFFD}"));
    }

    #[test]
    fn invalid_utf8_becomes_replacement_per_maximal_subpart() {
        // Same answers as WHATWG / String::from_utf8_lossy.
        for raw in [
            &b"a\xffb"[..],
            b"\xe2\x82A",
            b"\xf0\x9f\x98",
            b"\xed\xa0\x80",
            b"\xc0\xaf",
            b"x\xf4\x90\x80\x80y",
        ] {
            let ours: Vec<u32> = chars(raw);
            let std: Vec<u32> = std::string::String::from_utf8_lossy(raw)
                .chars()
                .map(u32::from)
                .collect();
            assert_eq!(ours, std, "{raw:?}");
        }
    }

    #[test]
    fn equality_is_on_decoded_text() {
        let a = JsonStr::from_escaped(br"\u0041b");
        let b = JsonStr::from_escaped(b"Ab");
        assert_eq!(a, b);
        assert!(a.eq_str("Ab"));
        assert!(!a.eq_str("Abc"));
        assert_ne!(a, JsonStr::from_escaped(b"AB"));
        assert_eq!(JsonStr::from_escaped(br"\ud83d\ude00").utf16_len(), 2);
    }

    #[test]
    fn equal_texts_hash_equal() {
        let h = |raw: &[u8]| JsonStr::from_escaped(raw).text_hash();
        assert_eq!(h(br"\u0041b"), h(b"Ab"));
        assert_eq!(h("\u{e9}\u{1F600}".as_bytes()), h(br"\u00e9\ud83d\ude00"));
        assert_ne!(h(b"ab"), h(b"ba"));
        // Whole words hashed as read agree with a text decoded byte by byte.
        assert_eq!(h(br"abcdefgh\u0069jklmnopq"), h(b"abcdefghijklmnopq"));
        assert_eq!(h(br"\u0061bcdefgh"), h(b"abcdefgh"));
        assert_ne!(h(b"abcdefgh"), h(b"abcdefgh\0"));
        assert_ne!(h(b""), h(b"\0"));
    }

    #[test]
    fn unescape_reports_needed_length() {
        let s = JsonStr::from_escaped(br"caf\u00e9");
        let mut small = [0u8; 3];
        assert_eq!(
            s.unescape_into(&mut small),
            Err(BufferTooSmall { needed: 5 })
        );
        let mut buf = [0u8; 5];
        assert_eq!(s.unescape_into(&mut buf).unwrap().as_str(), Some("café"));
    }
}
