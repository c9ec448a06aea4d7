//! JSON syntax: a non-recursive validator and cursors over validated values.
//!
//! [`validate`] checks one JSON text (RFC 8259, as `JSON.parse` accepts it)
//! in a single pass with an explicit bit stack, so nesting costs one bit per
//! level and never a call-stack frame. [`RawJson`] is a value that passed
//! that check; its [`members`](RawJson::members) and
//! [`elements`](RawJson::elements) iterators walk it without re-validating.
//!
//! Bytes ≥ 0x80 inside strings are accepted whatever they are: the reference
//! decodes the stream as UTF-8 with replacement, so an invalid sequence is a
//! U+FFFD in a string, not an error. Outside strings any such byte is a
//! syntax error, as it is for `JSON.parse`.

// Positions here are indices into a slice (at most `isize::MAX`), advanced
// by a handful of bytes past a byte just read, so `i + k` cannot overflow;
// depth is bounded by `MAX_DEPTH`.
#![allow(clippy::arithmetic_side_effects)]

use core::fmt;

use crate::capacity::saturate;
#[cfg(test)]
use crate::view::json::Tokens;
pub use crate::view::json::{Elements, JsonKind, Members, RawJson};
use crate::view::scan::{digits_end, is_ws, skip_ws, special_byte};

mod resume;
mod v8;

pub use resume::Validator;
pub(crate) use resume::{ScanError, Scanner};
pub(crate) use v8::V8Message;

/// The deepest nesting [`validate`] can track; [`Limits::max_depth`] may not
/// exceed it. Costs `MAX_DEPTH / 8` bytes of stack while validating.
pub const MAX_DEPTH: usize = 4096;

/// The default nesting limit: the reference accepts 1000 levels, so we do too.
pub const DEFAULT_MAX_DEPTH: usize = 1024;

/// Why a JSON text was rejected, and where (byte offset into the text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Error {
    /// What was wrong.
    pub kind: ErrorKind,
    /// Byte offset into the JSON text (saturating at `u32::MAX`, in a text
    /// over 4 GiB).
    pub offset: u32,
}

impl Error {
    /// `kind` at byte `offset`, saturating.
    pub(crate) fn new(kind: ErrorKind, offset: usize) -> Self {
        Error {
            kind,
            offset: saturate(offset),
        }
    }
}

/// The kinds of [`Error`]: V8's `JSON.parse` errors (Node 20), each
/// found where V8 finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// The text ended where a value or token was due (or was empty).
    UnexpectedEnd,
    /// A byte that cannot start or continue a value here (V8 shows it with
    /// the text around it; see [`Error`]'s `Display`).
    UnexpectedToken(u8),
    /// A number where none may be: after a value's leading `0`, or where a
    /// `:` was due after a later property name.
    UnexpectedNumber,
    /// A string where none may be (where a `:` was due after a later
    /// property name, or right after a literal).
    UnexpectedString,
    /// After `{`: neither a property name nor `}`.
    ExpectedPropertyNameOrBrace,
    /// After `,` in an object: no property name.
    ExpectedPropertyName,
    /// After an object's first property name: no `:`.
    ExpectedColon,
    /// After a property value: neither `,` nor `}`.
    ExpectedCommaOrBrace,
    /// After an array element: neither `,` nor `]`.
    ExpectedCommaOrBracket,
    /// A complete value followed by more than whitespace.
    TrailingCharacters,
    /// The text ended inside a string.
    UnterminatedString,
    /// A raw control character (U+0000–U+001F) inside a string.
    ControlCharacter,
    /// A backslash followed by something that is not a JSON escape.
    BadEscape,
    /// `\u` not followed by four hex digits.
    BadUnicodeEscape,
    /// `-` not followed by a digit.
    NoNumberAfterMinus,
    /// `.` not followed by a digit.
    UnterminatedFraction,
    /// `e` (and a sign) not followed by a digit.
    ExponentMissingNumber,
    /// Nesting deeper than the configured limit. A capacity limit, not a
    /// syntax error: the reference would accept the text.
    TooDeep {
        /// The limit in force (at most [`MAX_DEPTH`] for [`validate`], 65,535
        /// for a [`Validator`]).
        limit: u16,
    },
}

/// A depth limit as [`ErrorKind::TooDeep`] carries it (saturating; the
/// validators' limits fit).
pub(crate) fn depth_limit(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// V8's error for byte `b` where nothing it can start was due (`None`: the
/// end of the text).
pub(crate) const fn unexpected(b: Option<u8>) -> ErrorKind {
    match b {
        None => ErrorKind::UnexpectedEnd,
        Some(b'-' | b'0'..=b'9') => ErrorKind::UnexpectedNumber,
        Some(b'"') => ErrorKind::UnexpectedString,
        Some(b) => ErrorKind::UnexpectedToken(b),
    }
}

impl ErrorKind {
    /// V8's message for this kind, without the position (`None` for
    /// [`UnexpectedToken`](Self::UnexpectedToken), whose message quotes
    /// the text).
    pub const fn message(self) -> Option<&'static str> {
        use ErrorKind as K;
        Some(match self {
            K::UnexpectedEnd => "Unexpected end of JSON input",
            K::UnexpectedToken(_) | K::TooDeep { .. } => return None,
            K::UnexpectedNumber => "Unexpected number in JSON",
            K::UnexpectedString => "Unexpected string in JSON",
            K::ExpectedPropertyNameOrBrace => "Expected property name or '}' in JSON",
            K::ExpectedPropertyName => "Expected double-quoted property name in JSON",
            K::ExpectedColon => "Expected ':' after property name in JSON",
            K::ExpectedCommaOrBrace => "Expected ',' or '}' after property value in JSON",
            K::ExpectedCommaOrBracket => "Expected ',' or ']' after array element in JSON",
            K::TrailingCharacters => "Unexpected non-whitespace character after JSON",
            K::UnterminatedString => "Unterminated string in JSON",
            K::ControlCharacter => "Bad control character in string literal in JSON",
            K::BadEscape => "Bad escaped character in JSON",
            K::BadUnicodeEscape => "Bad Unicode escape in JSON",
            K::NoNumberAfterMinus => "No number after minus sign in JSON",
            K::UnterminatedFraction => "Unterminated fractional number in JSON",
            K::ExponentMissingNumber => "Exponent part is missing a number in JSON",
        })
    }
}

impl fmt::Display for Error {
    /// V8's message with a byte position (V8 counts UTF-16 units, and
    /// quotes the text around an unexpected token: the pipeline's
    /// `message` does both).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.offset;
        match self.kind {
            ErrorKind::UnexpectedEnd => f.write_str("Unexpected end of JSON input"),
            ErrorKind::UnexpectedToken(b) if b.is_ascii_graphic() => {
                write!(
                    f,
                    "Unexpected token '{}' in JSON at position {at}",
                    b as char
                )
            }
            ErrorKind::UnexpectedToken(b) => {
                write!(f, "Unexpected byte 0x{b:02x} in JSON at position {at}")
            }
            ErrorKind::TooDeep { limit } => write!(
                f,
                "JSON nesting deeper than the limit of {limit} levels at position {at}"
            ),
            kind => write!(f, "{} at position {at}", kind.message().unwrap_or_default()),
        }
    }
}

impl core::error::Error for Error {}

/// Limits applied while validating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Limits {
    /// Deepest allowed nesting of arrays and objects (clamped to [`MAX_DEPTH`]).
    pub max_depth: usize,
}

impl Limits {
    /// The defaults: [`DEFAULT_MAX_DEPTH`].
    pub const fn new() -> Self {
        Limits {
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::new()
    }
}

/// A fixed-capacity stack of container kinds, one bit per level, in `W`
/// words.
struct BitStack<const W: usize> {
    words: [u64; W],
    depth: usize,
}

/// Levels the small stack holds; deeper text is validated again with the
/// full stack (so the common case does not clear `MAX_DEPTH / 8` bytes per
/// value).
const SMALL_DEPTH: usize = 64;

impl<const W: usize> BitStack<W> {
    /// Pushes `is_object`; false if full.
    fn push(&mut self, is_object: bool) -> bool {
        let (w, b) = (self.depth / 64, self.depth % 64);
        let Some(word) = self.words.get_mut(w) else {
            return false;
        };
        if is_object {
            *word |= 1 << b;
        } else {
            *word &= !(1 << b);
        }
        self.depth += 1;
        true
    }

    /// The kind on top: Some(true) object, Some(false) array, None empty.
    fn top(&self) -> Option<bool> {
        let d = self.depth.checked_sub(1)?;
        let word = self.words.get(d / 64)?;
        Some(word & (1 << (d % 64)) != 0)
    }

    fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// Validates that `src` is exactly one JSON value surrounded by optional
/// whitespace. Linear time, constant memory, no recursion.
///
/// ```
/// use agui_stream::json::{validate, Limits};
/// assert!(validate(br#" {"a":[1,2,{"b":null}]} "#, Limits::new()).is_ok());
/// assert!(validate(br#"{"a":01}"#, Limits::new()).is_err());
/// ```
///
/// # Errors
///
/// The first syntax error as V8 finds it, or [`ErrorKind::TooDeep`]
/// past `limits`.
pub fn validate(src: &[u8], limits: Limits) -> Result<(), Error> {
    validate_members(src, limits, &mut |_, _| {})
}

/// Validates like [`validate`] and calls `member(key, value)` with the
/// byte ranges of each member of a root object (the key's escaped bytes
/// inside the quotes, and the value), in order. For an invalid text, some
/// members before the error may have been reported.
pub(crate) fn validate_members(
    src: &[u8],
    limits: Limits,
    member: &mut impl FnMut((usize, usize), (usize, usize)),
) -> Result<(), Error> {
    let max_depth = limits.max_depth.min(MAX_DEPTH);
    // Every valid object passes the fast path, so the general loop below
    // never needs to report members.
    if root_object(src, max_depth, member).is_some() {
        return Ok(());
    }
    // Not an object, or not valid: the general loop says which, precisely.
    let end = skip_ws(src, value_end(src, skip_ws(src, 0), max_depth)?);
    if end < src.len() {
        return Err(Error::new(ErrorKind::TrailingCharacters, end));
    }
    Ok(())
}

/// The fast path for what nearly every payload is: an object whose members
/// are mostly strings and numbers. Its members are read here in a flat
/// loop (no container stack); nested values go through [`value_end`].
/// `None` if the text is not a valid object (the caller then runs the
/// general loop, which reports the error precisely).
#[inline(always)]
fn root_object(
    src: &[u8],
    max_depth: usize,
    member: &mut impl FnMut((usize, usize), (usize, usize)),
) -> Option<()> {
    let mut i = skip_ws(src, 0);
    if src.get(i) != Some(&b'{') || max_depth == 0 {
        return None;
    }
    crate::testing::count_work(src.len());
    i = skip_ws(src, i + 1);
    if src.get(i) == Some(&b'}') {
        return (skip_ws(src, i + 1) == src.len()).then_some(());
    }
    loop {
        if src.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(src, i).ok()?;
        let key = (i + 1, key_end - 1);
        i = skip_ws(src, key_end);
        if src.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(src, i + 1);
        let end = match *src.get(start)? {
            b'"' => string_end(src, start).ok()?,
            b'-' | b'0'..=b'9' => number_end(src, start).ok()?,
            b't' => literal(src, start, b"true").ok()?,
            b'f' => literal(src, start, b"false").ok()?,
            b'n' => literal(src, start, b"null").ok()?,
            b'{' | b'[' => value_end(src, start, max_depth - 1).ok()?,
            _ => return None,
        };
        member(key, (start, end));
        i = skip_ws(src, end);
        match *src.get(i)? {
            b',' => i = skip_ws(src, i + 1),
            b'}' => return (skip_ws(src, i + 1) == src.len()).then_some(()),
            _ => return None,
        }
    }
}

/// Validates the one value starting at `start` with the general loop,
/// first with a 64-level stack, then (only if that is too shallow and the
/// limit allows more) with the full one. Returns the position after the
/// value.
fn value_end(src: &[u8], start: usize, max_depth: usize) -> Result<usize, Error> {
    let small = BitStack::<{ SMALL_DEPTH / 64 }> {
        words: [0],
        depth: 0,
    };
    match validate_with(src, start, max_depth.min(SMALL_DEPTH), small) {
        Err(Error {
            kind: ErrorKind::TooDeep { .. },
            ..
        }) if max_depth > SMALL_DEPTH => {
            let full = BitStack::<{ MAX_DEPTH / 64 }> {
                words: [0; MAX_DEPTH / 64],
                depth: 0,
            };
            validate_with(src, start, max_depth, full)
        }
        other => other,
    }
}

/// [`value_end`] with a stack of `W` words.
fn validate_with<const W: usize>(
    src: &[u8],
    start: usize,
    max_depth: usize,
    mut stack: BitStack<W>,
) -> Result<usize, Error> {
    let err = |kind, offset| Err(Error::new(kind, offset));
    let mut i = start;
    'value: loop {
        // A value starts at `i`.
        let Some(&b) = src.get(i) else {
            return err(ErrorKind::UnexpectedEnd, i);
        };
        match b {
            b'{' | b'[' => {
                if stack.depth >= max_depth || !stack.push(b == b'{') {
                    return err(
                        ErrorKind::TooDeep {
                            limit: depth_limit(max_depth),
                        },
                        i,
                    );
                }
                i = skip_ws(src, i + 1);
                let close = if b == b'{' { b'}' } else { b']' };
                if src.get(i) == Some(&close) {
                    stack.pop();
                    i += 1;
                } else if b == b'{' {
                    i = object_key(src, i, true)?;
                    continue 'value;
                } else {
                    continue 'value;
                }
            }
            b'"' => i = string_end(src, i)?,
            b't' => i = literal(src, i, b"true")?,
            b'f' => i = literal(src, i, b"false")?,
            b'n' => i = literal(src, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number_end(src, i)?,
            other => return err(ErrorKind::UnexpectedToken(other), i),
        }
        // After a complete value (ending at `i`): close containers or move
        // to the next value.
        loop {
            let Some(in_object) = stack.top() else {
                break 'value;
            };
            i = skip_ws(src, i);
            match src.get(i) {
                Some(b',') => {
                    i = skip_ws(src, i + 1);
                    if in_object {
                        i = object_key(src, i, false)?;
                    }
                    continue 'value;
                }
                Some(b'}') if in_object => {
                    stack.pop();
                    i += 1;
                }
                Some(b']') if !in_object => {
                    stack.pop();
                    i += 1;
                }
                _ if in_object => return err(ErrorKind::ExpectedCommaOrBrace, i),
                _ => return err(ErrorKind::ExpectedCommaOrBracket, i),
            }
        }
    }
    crate::testing::count_work(i - start);
    Ok(i)
}

/// Parses `"key"` `:` at `i` (the object's `first` key, or one after a
/// comma); returns the position of the value after the colon.
#[inline(always)]
fn object_key(src: &[u8], i: usize, first: bool) -> Result<usize, Error> {
    if src.get(i) != Some(&b'"') {
        let kind = if first {
            ErrorKind::ExpectedPropertyNameOrBrace
        } else {
            ErrorKind::ExpectedPropertyName
        };
        return Err(Error::new(kind, i));
    }
    let end = string_end(src, i)?;
    let i = skip_ws(src, end);
    match src.get(i) {
        Some(b':') => Ok(skip_ws(src, i + 1)),
        // V8 words the first key's missing colon, not a later one's.
        _ if first => Err(Error::new(ErrorKind::ExpectedColon, i)),
        b => Err(Error::new(unexpected(b.copied()), i)),
    }
}

fn literal(src: &[u8], i: usize, word: &[u8]) -> Result<usize, Error> {
    for (k, &w) in word.iter().enumerate() {
        match src.get(i + k) {
            Some(&b) if b == w => {}
            b => {
                return Err(Error::new(unexpected(b.copied()), i + k));
            }
        }
    }
    Ok(i + word.len())
}

/// Validates the string starting at the quote at `i`; returns the position
/// after its closing quote.
#[inline(always)]
pub(crate) fn string_end(src: &[u8], i: usize) -> Result<usize, Error> {
    // Most strings hold no escape: one scan finds the closing quote.
    let j = special_byte(src, i + 1, true);
    if src.get(j) == Some(&b'"') {
        return Ok(j + 1);
    }
    string_end_from(src, j)
}

/// [`string_end`] from `j`, at or before the first escape, control
/// character or end of text.
#[inline(never)]
fn string_end_from(src: &[u8], mut j: usize) -> Result<usize, Error> {
    loop {
        // Jump to the next quote, backslash or control character.
        j = special_byte(src, j, true);
        match src.get(j) {
            None => {
                return Err(Error::new(ErrorKind::UnterminatedString, src.len()));
            }
            Some(&b) if b < 0x20 => {
                return Err(Error::new(ErrorKind::ControlCharacter, j));
            }
            _ => {}
        }
        if src.get(j) == Some(&b'"') {
            return Ok(j + 1);
        }
        // A backslash.
        match src.get(j + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
            Some(b'u') => {
                for h in 0..4 {
                    match src.get(j + 2 + h) {
                        Some(b) if b.is_ascii_hexdigit() => {}
                        None => {
                            return Err(Error::new(ErrorKind::BadUnicodeEscape, src.len()));
                        }
                        Some(_) => {
                            return Err(Error::new(ErrorKind::BadUnicodeEscape, j + 2 + h));
                        }
                    }
                }
                j += 6;
            }
            Some(_) => {
                return Err(Error::new(ErrorKind::BadEscape, j + 1));
            }
            None => {
                return Err(Error::new(ErrorKind::UnexpectedEnd, src.len()));
            }
        }
    }
}

/// Validates the number starting at `i`; returns the position after it.
fn number_end(src: &[u8], start: usize) -> Result<usize, Error> {
    let bad = |kind, offset| Err(Error::new(kind, offset));
    let mut i = start;
    if src.get(i) == Some(&b'-') {
        i += 1;
    }
    match src.get(i) {
        Some(b'0') => {
            i += 1;
            if src.get(i).is_some_and(u8::is_ascii_digit) {
                return bad(ErrorKind::UnexpectedNumber, i);
            }
        }
        Some(b'1'..=b'9') => i = digits_end(src, i + 1),
        _ => return bad(ErrorKind::NoNumberAfterMinus, i),
    }
    if src.get(i) == Some(&b'.') {
        let j = digits_end(src, i + 1);
        if j == i + 1 {
            return bad(ErrorKind::UnterminatedFraction, j);
        }
        i = j;
    }
    if matches!(src.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(src.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let j = digits_end(src, i);
        if j == i {
            return bad(ErrorKind::ExponentMissingNumber, j);
        }
        i = j;
    }
    Ok(i)
}

impl<'a> RawJson<'a> {
    /// Validates `src` (one JSON value, surrounding whitespace allowed).
    ///
    /// ```
    /// use agui_stream::json::{JsonKind, Limits, RawJson};
    /// let v = RawJson::parse(b" [1, true] ", Limits::new()).unwrap();
    /// assert_eq!(v.kind(), JsonKind::Array);
    /// assert_eq!(v.as_bytes(), b"[1, true]");
    /// ```
    ///
    /// # Errors
    ///
    /// As [`validate`].
    pub fn parse(src: &'a [u8], limits: Limits) -> Result<Self, Error> {
        validate(src, limits)?;
        Ok(Self::trusted(src))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::string::String;
    use std::vec::Vec;

    fn ok(s: &str) -> bool {
        validate(s.as_bytes(), Limits::new()).is_ok()
    }

    #[test]
    fn accepts_valid_json() {
        for s in [
            "0",
            "-0",
            "1.5e+10",
            "-12.25E-3",
            "\"\"",
            "\"a\\n\\u00e9\\ud83d\"",
            "true",
            "false",
            "null",
            "[]",
            "{}",
            " [ 1 , [ ] , { } ] ",
            r#"{"a":{"b":[1,{"c":"d"}]},"e":null}"#,
            "\"\u{7f}\u{2028}é\"",
        ] {
            assert!(ok(s), "{s}");
        }
        // Invalid UTF-8 inside a string is a replacement character, not an error.
        assert!(validate(b"\"a\xffb\"", Limits::new()).is_ok());
    }

    #[test]
    fn rejects_invalid_json() {
        for s in [
            "",
            " ",
            "01",
            "-",
            "1.",
            "1e",
            "1e+",
            ".5",
            "+1",
            "NaN",
            "tru",
            "nul",
            "[1,]",
            "{\"a\":1,}",
            "{a:1}",
            "{'a':1}",
            "[1 2]",
            "{\"a\" 1}",
            "\"\\x\"",
            "\"\\u12g4\"",
            "\"a\tb\"",
            "[",
            "{\"a\":",
            "\"abc",
            "1 2",
            "{} x",
            "/* c */ 1",
            "[}",
            "{]",
        ] {
            assert!(!ok(s), "{s:?}");
        }
        assert!(validate(b"\xef\xbb\xbf1", Limits::new()).is_err());
    }

    #[test]
    fn error_kinds_and_offsets() {
        let e = validate(br#"{"a":"x"} y"#, Limits::new()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::TrailingCharacters);
        assert_eq!(e.offset, 10);
        let e = validate(b"\"a\tb\"", Limits::new()).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::ControlCharacter, 2));
        let e = validate(b"", Limits::new()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnexpectedEnd);
        let e = validate(b"[01]", Limits::new()).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::UnexpectedNumber, 2));
    }

    #[test]
    #[cfg_attr(miri, ignore = "thousands of texts: too slow under miri")]
    fn root_fast_path_agrees_with_the_general_loop() {
        let seeds: [&[u8]; 4] = [
            br#"{"type":"A","n":-1.5e3,"o":{"x":[1,{"y":null}]},"t":true,"f":false,"z":null,"s":"a\"\u00e9"}"#,
            b" { \"a\" : 1 , \"b\" : [ ] , \"c\" : { } }\r\n",
            b"{}",
            br#"{"k":[[[]]],"d":12345678901234567}"#,
        ];
        let bytes = b"\",:}]{[ \\0-ex\x1f\x7f";
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for seed in seeds {
            texts.extend((0..=seed.len()).map(|n| seed[..n].to_vec()));
            for i in 0..seed.len() {
                for &b in bytes {
                    let mut t = seed.to_vec();
                    t[i] = b;
                    texts.push(t);
                }
            }
        }
        let mut accepted = 0;
        for text in &texts {
            for depth in [1, 2, 3, 1024] {
                let mut fast_members = Vec::new();
                let fast = root_object(text, depth, &mut |k, v| fast_members.push((k, v)));
                // The general loop alone.
                let end = value_end(text, skip_ws(text, 0), depth).map(|e| skip_ws(text, e));
                let whole = matches!(end, Ok(e) if e == text.len());
                let is_object = text.get(skip_ws(text, 0)) == Some(&b'{');
                // Both ways: the fast path takes exactly the valid objects.
                assert_eq!(
                    fast.is_some(),
                    whole && is_object,
                    "{:?} at depth {depth}",
                    String::from_utf8_lossy(text)
                );
                if fast.is_some() {
                    accepted += 1;
                    // Its members are the ones the member iterator finds.
                    let slice = |(a, b): (usize, usize)| &text[a..b];
                    let found: Vec<_> = fast_members
                        .iter()
                        .map(|&(k, v)| (slice(k), slice(v)))
                        .collect();
                    let walked: Vec<_> = RawJson::trusted(text)
                        .members()
                        .map(|(k, v)| (k.raw(), v.as_bytes()))
                        .collect();
                    assert_eq!(found, walked);
                }
                // `validate` is the fast path, then the general loop.
                let expected = match end {
                    Ok(e) if e < text.len() => Err(Error::new(ErrorKind::TrailingCharacters, e)),
                    other => other.map(|_| ()),
                };
                let limits = Limits { max_depth: depth };
                assert_eq!(
                    validate(text, limits),
                    expected,
                    "{:?}",
                    String::from_utf8_lossy(text)
                );
            }
        }
        assert!(accepted > 100, "only {accepted} texts took the fast path");
    }

    #[test]
    fn depth_limit_is_its_own_error() {
        let mut deep = [b'['; 2000];
        let limits = Limits { max_depth: 1000 };
        let e = validate(&deep, limits).unwrap_err();
        assert_eq!(e.kind, ErrorKind::TooDeep { limit: 1000 });
        assert_eq!(e.offset, 1000);
        // Exactly at the limit is fine.
        let mut text = [0u8; 2000];
        for (i, b) in text.iter_mut().enumerate() {
            *b = if i < 1000 { b'[' } else { b']' };
        }
        assert!(validate(&text, limits).is_ok());
        deep[0] = b'{';
        assert!(validate(&deep, limits).is_err());
    }

    #[test]
    fn members_and_elements() {
        let v = RawJson::parse(
            br#" { "a" : 1 , "b" : [ "x" , { "y" : "}" } ] , "a" : "\"" } "#,
            Limits::new(),
        )
        .unwrap();
        let keys: heapless::Vec<&[u8], 4> = v.members().map(|(k, _)| k.raw()).collect();
        assert_eq!(keys.as_slice(), [&b"a"[..], b"b", b"a"]);
        assert_eq!(v.get("a").unwrap().as_bytes(), br#""\"""#);
        let b = v.get("b").unwrap();
        let elems: heapless::Vec<&[u8], 4> = b.elements().map(|e| e.as_bytes()).collect();
        assert_eq!(elems.as_slice(), [&br#""x""#[..], br#"{ "y" : "}" }"#]);
        assert_eq!(b.len(), 2);
        assert!(RawJson::parse(b"[]", Limits::new()).unwrap().is_empty());
        assert_eq!(
            RawJson::parse(b"-1e3", Limits::new()).unwrap().as_f64(),
            Some(-1000.0)
        );
        assert_eq!(
            RawJson::parse(b"1e400", Limits::new()).unwrap().as_f64(),
            Some(f64::INFINITY)
        );
        // The integer fast path (up to 15 digits) agrees with parsing.
        for text in [
            "0",
            "-0",
            "7",
            "-42",
            "1700000000078",
            "999999999999999",
            "-999999999999999",
            "9999999999999999",
            "12345678901234567890",
        ] {
            let x = RawJson::parse(text.as_bytes(), Limits::new())
                .unwrap()
                .as_f64()
                .unwrap();
            let parsed: f64 = text.parse().unwrap();
            assert_eq!(x.to_bits(), parsed.to_bits(), "{text}");
        }
    }

    #[test]
    fn tokens_roundtrip_structure() {
        let v = RawJson::parse(br#"{"a": [1, true, "s"], "b": {}}"#, Limits::new()).unwrap();
        let n = Tokens::new(v).count();
        // { "a" : [ 1 , true , "s" ] , "b" : { } }
        assert_eq!(n, 16);
    }
}
