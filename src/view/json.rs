//! Views of valid JSON: [`RawJson`], a value's exact bytes, with cursors
//! over an object's members and an array's elements, and a tokenizer the
//! writer re-emits opaque values with. They trust their input (the
//! validator in `input::json` made the value, or it is a constant), so
//! they never re-validate.

// Positions here are indices into a slice (at most `isize::MAX`), advanced
// by a handful of bytes past a byte just read, so `i + k` cannot overflow.
#![allow(clippy::arithmetic_side_effects)]

use core::fmt;

use crate::view::scan::{digits_end, is_ws, skip_ws, special_byte};
use crate::view::string::JsonStr;

/// The syntactic kind of a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum JsonKind {
    /// `null`
    Null,
    /// `true` / `false`
    Bool,
    /// a number
    Number,
    /// a string
    String,
    /// an array
    Array,
    /// an object
    Object,
}

impl JsonKind {
    /// The kind's name as the reference's messages spell it.
    pub const fn name(self) -> &'static str {
        match self {
            JsonKind::Null => "null",
            JsonKind::Bool => "boolean",
            JsonKind::Number => "number",
            JsonKind::String => "string",
            JsonKind::Array => "array",
            JsonKind::Object => "object",
        }
    }
}

/// A JSON value that has been validated: its exact bytes, without
/// surrounding whitespace, borrowed from wherever it was read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RawJson<'a> {
    bytes: &'a [u8],
}

impl fmt::Debug for RawJson<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match core::str::from_utf8(self.bytes) {
            Ok(s) => write!(f, "RawJson({s})"),
            Err(_) => write!(f, "RawJson({:?})", self.bytes),
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for RawJson<'_> {
    fn format(&self, f: defmt::Formatter) {
        defmt::write!(f, "RawJson({=[u8]})", self.bytes)
    }
}

impl<'a> RawJson<'a> {
    /// Wraps bytes already known to be one valid JSON value (trims whitespace).
    pub(crate) fn trusted(src: &'a [u8]) -> Self {
        let start = skip_ws(src, 0);
        let mut end = src.len();
        while end > start && src.get(end - 1).is_some_and(|&b| is_ws(b)) {
            end -= 1;
        }
        RawJson {
            bytes: src.get(start..end).unwrap_or_default(),
        }
    }

    /// Wraps the exact bytes of one valid JSON value (no surrounding
    /// whitespace): a member's value, or a constant (`"assistant"`, `[]`).
    pub(crate) const fn exact(bytes: &'a [u8]) -> Self {
        RawJson { bytes }
    }

    /// The value's bytes exactly as written.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The value's kind, from its first byte.
    pub fn kind(&self) -> JsonKind {
        match self.bytes.first() {
            Some(b'{') => JsonKind::Object,
            Some(b'[') => JsonKind::Array,
            Some(b'"') => JsonKind::String,
            Some(b't' | b'f') => JsonKind::Bool,
            Some(b'n') => JsonKind::Null,
            _ => JsonKind::Number,
        }
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        self.kind() == JsonKind::Null
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<JsonStr<'a>> {
        if self.kind() != JsonKind::String {
            return None;
        }
        let inner = self.bytes.get(1..self.bytes.len().saturating_sub(1))?;
        Some(JsonStr::from_escaped(inner))
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self.bytes.first() {
            Some(b't') => Some(true),
            Some(b'f') => Some(false),
            _ => None,
        }
    }

    /// The number as a double, rounded as `JSON.parse` rounds it (overflow
    /// gives ±infinity).
    pub fn as_f64(&self) -> Option<f64> {
        if self.kind() != JsonKind::Number {
            return None;
        }
        if let Some((negative, digits)) = self.short_int() {
            // Up to 15 digits are below 2^53: exact, as parsing would be.
            let n = digits
                .iter()
                .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
            let x = n as f64;
            return Some(if negative { -x } else { x });
        }
        core::str::from_utf8(self.bytes).ok()?.parse().ok()
    }

    /// A plain integer of at most 15 digits (timestamps are): whether it is
    /// negative, and its digits. Such a number is a safe integer.
    pub(crate) fn short_int(&self) -> Option<(bool, &'a [u8])> {
        let (negative, digits) = match self.bytes.strip_prefix(b"-") {
            Some(rest) => (true, rest),
            None => (false, self.bytes),
        };
        let short = (1..=15).contains(&digits.len()) && digits_end(digits, 0) == digits.len();
        short.then_some((negative, digits))
    }

    /// Iterates an object's members in order (duplicates included).
    pub fn members(&self) -> Members<'a> {
        Members {
            src: if self.kind() == JsonKind::Object {
                self.bytes
            } else {
                &[]
            },
            pos: 1,
        }
    }

    /// Iterates an array's elements in order.
    pub fn elements(&self) -> Elements<'a> {
        Elements {
            src: if self.kind() == JsonKind::Array {
                self.bytes
            } else {
                &[]
            },
            pos: 1,
        }
    }

    /// The last member named `key` (last one wins, as in `JSON.parse`).
    pub fn get(&self, key: &str) -> Option<RawJson<'a>> {
        self.members()
            .filter(|(k, _)| k.eq_str(key))
            .last()
            .map(|(_, v)| v)
    }

    /// Number of elements of an array or members of an object (0 otherwise).
    pub fn len(&self) -> usize {
        match self.kind() {
            JsonKind::Array => self.elements().count(),
            JsonKind::Object => self.members().count(),
            _ => 0,
        }
    }

    /// True if `len() == 0`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Position after the string whose opening quote is at `i` (validated input).
fn skip_string(src: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    let end = loop {
        j = special_byte(src, j, false);
        match src.get(j) {
            None => break src.len(),
            Some(b'"') => break j + 1,
            Some(_) => j += 2,
        }
    };
    crate::testing::count_work(end.saturating_sub(i));
    end
}

/// Position after the value starting at `i` (validated input).
pub(crate) fn skip_value(src: &[u8], i: usize) -> usize {
    match src.get(i) {
        Some(b'"') => skip_string(src, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while let Some(&b) = src.get(j) {
                match b {
                    b'"' => {
                        j = skip_string(src, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            crate::testing::count_work(j + 1 - i);
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            src.len()
        }
        Some(_) => {
            let mut j = i;
            while src
                .get(j)
                .is_some_and(|&b| !matches!(b, b',' | b'}' | b']') && !is_ws(b))
            {
                j += 1;
            }
            j
        }
        None => i,
    }
}

/// Iterator over an object's members; see [`RawJson::members`].
#[derive(Clone, Debug)]
pub struct Members<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (JsonStr<'a>, RawJson<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let src = self.src;
        let mut i = skip_ws(src, self.pos);
        if src.get(i) == Some(&b',') {
            i = skip_ws(src, i + 1);
        }
        if src.get(i) != Some(&b'"') {
            self.pos = src.len();
            return None;
        }
        let key_end = skip_string(src, i);
        let key = JsonStr::from_escaped(src.get(i + 1..key_end.saturating_sub(1))?);
        let mut v = skip_ws(src, key_end);
        if src.get(v) == Some(&b':') {
            v = skip_ws(src, v + 1);
        }
        let end = skip_value(src, v);
        self.pos = end;
        Some((key, RawJson::trusted(src.get(v..end)?)))
    }
}

/// Iterator over an array's elements; see [`RawJson::elements`].
#[derive(Clone, Debug)]
pub struct Elements<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = RawJson<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        let src = self.src;
        let mut i = skip_ws(src, self.pos);
        if src.get(i) == Some(&b',') {
            i = skip_ws(src, i + 1);
        }
        if matches!(src.get(i), None | Some(b']')) {
            self.pos = src.len();
            return None;
        }
        let end = skip_value(src, i);
        self.pos = end;
        Some(RawJson::trusted(src.get(i..end)?))
    }
}

/// Visits every token of a validated value in order, without recursion.
/// Used by the encoder to re-emit opaque values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    Open(u8),
    Close(u8),
    Comma,
    Colon,
    Str(JsonStr<'a>),
    /// A number or literal, verbatim.
    Scalar(&'a [u8]),
}

/// Tokenizer over a validated value.
pub(crate) struct Tokens<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Tokens<'a> {
    pub(crate) fn new(v: RawJson<'a>) -> Self {
        Tokens {
            src: v.bytes,
            pos: 0,
        }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let src = self.src;
        let i = skip_ws(src, self.pos);
        let b = *src.get(i)?;
        let (tok, end) = match b {
            b'{' | b'[' => (Token::Open(b), i + 1),
            b'}' | b']' => (Token::Close(b), i + 1),
            b',' => (Token::Comma, i + 1),
            b':' => (Token::Colon, i + 1),
            b'"' => {
                let end = skip_string(src, i);
                (
                    Token::Str(JsonStr::from_escaped(
                        src.get(i + 1..end.saturating_sub(1)).unwrap_or_default(),
                    )),
                    end,
                )
            }
            _ => {
                let end = skip_value(src, i);
                (Token::Scalar(src.get(i..end).unwrap_or_default()), end)
            }
        };
        self.pos = end;
        Some(tok)
    }
}
