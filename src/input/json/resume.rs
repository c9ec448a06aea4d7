//! The resumable validator: the same verdicts and error positions as
//! [`validate`](super::validate), fed in pieces of any size.
//!
//! The state is the container stack (one bit per level, `W` words) and
//! where the scanner stands inside the current token — an escape, a
//! literal, a number's part — never a copy of the token, so a string of a
//! gigabyte costs nothing more than one of a byte. Each piece is scanned
//! once; the one-shot validator stays the fast path for text that is
//! whole.

use super::{
    JsonError, JsonErrorKind, Limits, depth_limit, digits_end, is_ws, skip_ws, special_byte,
    unexpected,
};

/// A JSON text validated piece by piece (RFC 8259, as `JSON.parse` accepts
/// it): [`feed`](Self::feed) each piece, then [`finish`](Self::finish).
/// Nesting deeper than `64 × W` levels, or than the limits allow, is
/// [`JsonErrorKind::TooDeep`].
///
/// ```
/// use agui_stream::json::{Limits, Validator};
/// let mut v = Validator::<1>::new(Limits::new());
/// v.feed(br#"{"a":[1,"b\u00"#).unwrap();
/// v.feed(br#"e9"],"c":tr"#).unwrap();
/// assert!(!v.is_complete());
/// v.feed(b"ue}").unwrap();
/// assert!(v.finish().is_ok());
///
/// let mut v = Validator::<1>::new(Limits::new());
/// v.feed(b"[1,").unwrap();
/// let e = v.feed(b"]").unwrap_err();
/// assert_eq!(e.offset, 3); // as `validate(b"[1,]")` says
/// ```
#[derive(Clone, Debug)]
pub struct Validator<const W: usize = 16> {
    scan: Scanner<W>,
    failed: Option<JsonError>,
}

/// A syntax error at its exact offset in the whole text (a [`JsonError`]'s
/// saturates past 4 GiB, and a spilled frame may be longer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScanError {
    pub(crate) kind: JsonErrorKind,
    pub(crate) offset: usize,
}

impl ScanError {
    /// As a [`JsonError`] (its offset saturating).
    pub(crate) fn json(self) -> JsonError {
        JsonError::new(self.kind, self.offset)
    }
}

/// The validator's state without its sticky error: what a caller keeps
/// per text when it has many (a tool call's arguments), copied to undo a
/// piece.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scanner<const W: usize> {
    /// Container kinds, one bit per level: set for an object.
    stack: [u64; W],
    depth: u16,
    max_depth: u16,
    state: State,
    /// Bytes fed before the current piece.
    offset: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A value starts here (the root, after `:`, after `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ArrayFirst,
    /// After `{`: a key or `}`.
    ObjectFirst,
    /// After `,` in an object: a key.
    Key,
    /// After a key (the object's first if `first`): `:`.
    Colon { first: bool },
    /// After a value inside a container: `,` or its closer.
    AfterValue,
    /// Inside a string: a value or a key.
    Str { of: StrOf, escape: Escape },
    /// Inside `true`, `false` or `null`, `matched` bytes in.
    Literal { word: Word, matched: u8 },
    /// Inside a number.
    Number(NumberPart),
    /// The root value is complete: only whitespace may follow.
    Done,
}

/// What a string is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StrOf {
    Value,
    FirstKey,
    LaterKey,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Escape {
    None,
    /// Just after a backslash.
    Backslash,
    /// After `\u` and this many hex digits.
    Hex(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Word {
    True,
    False,
    Null,
}

impl Word {
    const fn bytes(self) -> &'static [u8] {
        match self {
            Word::True => b"true",
            Word::False => b"false",
            Word::Null => b"null",
        }
    }
}

/// Where a number stands; the parts marked "may end" can be its last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NumberPart {
    /// After `-`.
    Minus,
    /// A leading `0` (may end).
    Zero,
    /// Integer digits (may end).
    Int,
    /// After `.`.
    Dot,
    /// Fraction digits (may end).
    Frac,
    /// After `e`.
    Exp,
    /// After `e+` or `e-`.
    ExpSign,
    /// Exponent digits (may end).
    ExpDigits,
}

impl NumberPart {
    const fn may_end(self) -> bool {
        matches!(
            self,
            NumberPart::Zero | NumberPart::Int | NumberPart::Frac | NumberPart::ExpDigits
        )
    }
}

impl<const W: usize> Validator<W> {
    /// A validator before the first byte.
    pub const fn new(limits: Limits) -> Self {
        Validator {
            scan: Scanner::new(limits),
            failed: None,
        }
    }

    /// Bytes fed so far.
    pub fn offset(&self) -> usize {
        self.scan.offset
    }

    /// Whether the text so far is one complete value (with at most
    /// whitespace after it), so that [`finish`](Self::finish) would succeed.
    pub fn is_complete(&self) -> bool {
        self.failed.is_none() && self.scan.is_complete()
    }

    /// Validates the next piece.
    ///
    /// # Errors
    ///
    /// The first syntax error, at its offset in the whole text (every
    /// later call returns it again).
    pub fn feed(&mut self, piece: &[u8]) -> Result<(), JsonError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        self.scan.feed(piece).map_err(|e| {
            let e = e.json();
            self.failed = Some(e);
            e
        })
    }

    /// Ends the text.
    ///
    /// # Errors
    ///
    /// The first error of the text, or [`JsonErrorKind::UnexpectedEnd`] at
    /// its end if it stopped inside a value.
    pub fn finish(&mut self) -> Result<(), JsonError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        self.scan.finish().map_err(|e| {
            let e = e.json();
            self.failed = Some(e);
            e
        })
    }
}

impl<const W: usize> Scanner<W> {
    pub(crate) const fn new(limits: Limits) -> Self {
        const { assert!(W <= 1024, "at most 65535 levels") };
        let max = if limits.max_depth < u16::MAX as usize {
            limits.max_depth
        } else {
            u16::MAX as usize
        };
        Scanner {
            stack: [0; W],
            depth: 0,
            max_depth: max as u16,
            state: State::Value,
            offset: 0,
        }
    }

    pub(crate) fn is_complete(&self) -> bool {
        match self.state {
            State::Done => true,
            State::Number(part) => self.depth == 0 && part.may_end(),
            _ => false,
        }
    }

    pub(crate) fn finish(&self) -> Result<(), ScanError> {
        self.finish_deep(&[])
    }

    /// [`finish`](Self::finish) of a text fed with [`feed_deep`](Self::feed_deep).
    pub(crate) fn finish_deep(&self, deep: &[u8]) -> Result<(), ScanError> {
        use JsonErrorKind as K;
        if self.is_complete() {
            return Ok(());
        }
        // What V8 says where the text ends.
        let kind = match self.state {
            State::ObjectFirst => K::ExpectedPropertyNameOrBrace,
            State::Key => K::ExpectedPropertyName,
            State::Colon { first: true } => K::ExpectedColon,
            State::AfterValue | State::Number(_) if self.depth > 0 => match self.state {
                State::Number(NumberPart::Minus) => K::NoNumberAfterMinus,
                State::Number(NumberPart::Dot) => K::UnterminatedFraction,
                State::Number(NumberPart::Exp | NumberPart::ExpSign) => K::ExponentMissingNumber,
                _ if self.top_is_object(deep) => K::ExpectedCommaOrBrace,
                _ => K::ExpectedCommaOrBracket,
            },
            State::Number(NumberPart::Minus) => K::NoNumberAfterMinus,
            State::Number(NumberPart::Dot) => K::UnterminatedFraction,
            State::Number(NumberPart::Exp | NumberPart::ExpSign) => K::ExponentMissingNumber,
            State::Str {
                escape: Escape::None,
                ..
            } => K::UnterminatedString,
            State::Str {
                escape: Escape::Hex(_),
                ..
            } => K::BadUnicodeEscape,
            _ => K::UnexpectedEnd,
        };
        Err(ScanError {
            kind,
            offset: self.offset,
        })
    }

    /// Bytes fed so far.
    pub(crate) const fn fed(&self) -> usize {
        self.offset
    }

    /// Validates the next piece; after an error the state is undefined
    /// (keep a copy to undo).
    pub(crate) fn feed(&mut self, piece: &[u8]) -> Result<(), ScanError> {
        self.feed_deep(piece, &mut [])
    }

    /// [`feed`](Self::feed), keeping the container kinds of the levels
    /// past `64 × W` in `deep` (a bit each): it nests `8 × deep.len()`
    /// levels deeper, within the limits. `deep` is the same bytes for
    /// every piece of a text, zeroed before the first.
    pub(crate) fn feed_deep(&mut self, piece: &[u8], deep: &mut [u8]) -> Result<(), ScanError> {
        let mut i = 0;
        while i < piece.len() {
            match self.step(piece, i, deep) {
                Ok(next) => i = next,
                Err((kind, at)) => {
                    let offset = self.offset.saturating_add(at);
                    return Err(ScanError { kind, offset });
                }
            }
        }
        crate::testing::count_work(piece.len());
        self.offset = self.offset.saturating_add(piece.len());
        Ok(())
    }

    /// The state after a value that just ended.
    fn after_value(&self) -> State {
        if self.depth == 0 {
            State::Done
        } else {
            State::AfterValue
        }
    }

    fn top_is_object(&self, deep: &[u8]) -> bool {
        let d = usize::from(self.depth.saturating_sub(1));
        match self.stack.get(d / 64) {
            Some(w) => w & (1 << (d % 64)) != 0,
            None => {
                let d = d.saturating_sub(W.saturating_mul(64));
                deep.get(d / 8).is_some_and(|b| b & (1 << (d % 8)) != 0)
            }
        }
    }

    /// Consumes what it can of `piece` from `i` in the current state;
    /// returns where it stopped (always past `i`, or at a byte the next
    /// state must read), or the error and its position.
    #[allow(clippy::arithmetic_side_effects)] // positions within `piece`
    fn step(
        &mut self,
        piece: &[u8],
        i: usize,
        deep: &mut [u8],
    ) -> Result<usize, (JsonErrorKind, usize)> {
        let Some(&b) = piece.get(i) else {
            return Ok(i);
        };
        match self.state {
            State::Value
            | State::ArrayFirst
            | State::ObjectFirst
            | State::Key
            | State::Colon { .. }
            | State::AfterValue
            | State::Done
                if is_ws(b) =>
            {
                return Ok(skip_ws(piece, i));
            }
            State::Value => self.state = self.value_start(b, i, deep)?,
            State::ArrayFirst => {
                if b == b']' {
                    self.depth -= 1;
                    self.state = self.after_value();
                } else {
                    // A value starts here: read it in that state.
                    self.state = State::Value;
                    return Ok(i);
                }
            }
            State::ObjectFirst | State::Key => {
                let first = self.state == State::ObjectFirst;
                match b {
                    b'}' if first => {
                        self.depth -= 1;
                        self.state = self.after_value();
                    }
                    b'"' => {
                        let of = if first {
                            StrOf::FirstKey
                        } else {
                            StrOf::LaterKey
                        };
                        self.state = State::Str {
                            of,
                            escape: Escape::None,
                        }
                    }
                    _ if first => return Err((JsonErrorKind::ExpectedPropertyNameOrBrace, i)),
                    _ => return Err((JsonErrorKind::ExpectedPropertyName, i)),
                }
            }
            State::Colon { .. } if b == b':' => self.state = State::Value,
            // V8 words the first key's missing colon, not a later one's.
            State::Colon { first: true } => return Err((JsonErrorKind::ExpectedColon, i)),
            State::Colon { first: false } => return Err((unexpected(Some(b)), i)),
            State::AfterValue => {
                let object = self.top_is_object(deep);
                match b {
                    b',' if object => self.state = State::Key,
                    b',' => self.state = State::Value,
                    b'}' if object => {
                        self.depth -= 1;
                        self.state = self.after_value();
                    }
                    b']' if !object => {
                        self.depth -= 1;
                        self.state = self.after_value();
                    }
                    _ if object => return Err((JsonErrorKind::ExpectedCommaOrBrace, i)),
                    _ => return Err((JsonErrorKind::ExpectedCommaOrBracket, i)),
                }
            }
            State::Done => return Err((JsonErrorKind::TrailingCharacters, i)),
            State::Str { of, escape } => return self.string(piece, i, of, escape),
            State::Literal { word, matched } => {
                let bytes = word.bytes();
                if bytes.get(usize::from(matched)) != Some(&b) {
                    return Err((unexpected(Some(b)), i));
                }
                let matched = matched + 1;
                self.state = if usize::from(matched) == bytes.len() {
                    self.after_value()
                } else {
                    State::Literal { word, matched }
                };
            }
            State::Number(part) => return self.number(piece, i, part),
        }
        Ok(i + 1)
    }

    /// The state a value starting with `b` (at `i`) puts the scanner in.
    fn value_start(
        &mut self,
        b: u8,
        i: usize,
        deep: &mut [u8],
    ) -> Result<State, (JsonErrorKind, usize)> {
        let literal = |word| State::Literal { word, matched: 1 };
        Ok(match b {
            b'{' | b'[' => {
                let levels = W.saturating_add(deep.len() / 8).saturating_mul(64);
                let limit = usize::from(self.max_depth).min(levels);
                if usize::from(self.depth) >= limit {
                    let limit = depth_limit(limit);
                    return Err((JsonErrorKind::TooDeep { limit }, i));
                }
                let depth = usize::from(self.depth);
                let object = b == b'{';
                if let Some(word) = self.stack.get_mut(depth / 64) {
                    let bit = depth % 64;
                    *word = (*word & !(1 << bit)) | (u64::from(object) << bit);
                } else {
                    let d = depth.saturating_sub(W.saturating_mul(64));
                    if let Some(byte) = deep.get_mut(d / 8) {
                        let bit = d % 8;
                        *byte = (*byte & !(1 << bit)) | (u8::from(object) << bit);
                    }
                }
                self.depth = self.depth.saturating_add(1);
                if b == b'{' {
                    State::ObjectFirst
                } else {
                    State::ArrayFirst
                }
            }
            b'"' => State::Str {
                of: StrOf::Value,
                escape: Escape::None,
            },
            b't' => literal(Word::True),
            b'f' => literal(Word::False),
            b'n' => literal(Word::Null),
            b'-' => State::Number(NumberPart::Minus),
            b'0' => State::Number(NumberPart::Zero),
            b'1'..=b'9' => State::Number(NumberPart::Int),
            _ => return Err((JsonErrorKind::UnexpectedToken(b), i)),
        })
    }

    #[allow(clippy::arithmetic_side_effects)] // positions within `piece`
    fn string(
        &mut self,
        piece: &[u8],
        i: usize,
        of: StrOf,
        escape: Escape,
    ) -> Result<usize, (JsonErrorKind, usize)> {
        let Some(&b) = piece.get(i) else {
            return Ok(i);
        };
        let escape = match escape {
            Escape::None => {
                // Jump to the next quote, backslash or control character.
                let j = special_byte(piece, i, true);
                match piece.get(j) {
                    None => return Ok(j),
                    Some(b'"') => {
                        self.state = match of {
                            StrOf::Value => self.after_value(),
                            StrOf::FirstKey => State::Colon { first: true },
                            StrOf::LaterKey => State::Colon { first: false },
                        };
                        return Ok(j + 1);
                    }
                    Some(b'\\') => {
                        self.state = State::Str {
                            of,
                            escape: Escape::Backslash,
                        };
                        return Ok(j + 1);
                    }
                    Some(_) => return Err((JsonErrorKind::ControlCharacter, j)),
                }
            }
            Escape::Backslash => match b {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Escape::None,
                b'u' => Escape::Hex(0),
                _ => return Err((JsonErrorKind::BadEscape, i)),
            },
            Escape::Hex(n) if b.is_ascii_hexdigit() => {
                if n == 3 {
                    Escape::None
                } else {
                    Escape::Hex(n + 1)
                }
            }
            Escape::Hex(_) => return Err((JsonErrorKind::BadUnicodeEscape, i)),
        };
        self.state = State::Str { of, escape };
        Ok(i + 1)
    }

    #[allow(clippy::arithmetic_side_effects)] // positions within `piece`
    fn number(
        &mut self,
        piece: &[u8],
        i: usize,
        part: NumberPart,
    ) -> Result<usize, (JsonErrorKind, usize)> {
        use NumberPart as P;
        let Some(&b) = piece.get(i) else {
            return Ok(i);
        };
        let digit = b.is_ascii_digit();
        let next = match (part, b) {
            (P::Zero, _) if digit => return Err((JsonErrorKind::UnexpectedNumber, i)),
            (P::Minus, b'0') => P::Zero,
            (P::Minus, b'1'..=b'9') => P::Int,
            (P::Int | P::Frac | P::ExpDigits, _) if digit => {
                // The rest of the run at once.
                return Ok(digits_end(piece, i));
            }
            (P::Zero | P::Int, b'.') => P::Dot,
            (P::Zero | P::Int | P::Frac, b'e' | b'E') => P::Exp,
            (P::Dot, _) if digit => P::Frac,
            (P::Exp, b'+' | b'-') => P::ExpSign,
            (P::Exp | P::ExpSign, _) if digit => P::ExpDigits,
            (part, _) if part.may_end() => {
                // The number ended before `b`, which the next state reads.
                self.state = self.after_value();
                return Ok(i);
            }
            (P::Minus, _) => return Err((JsonErrorKind::NoNumberAfterMinus, i)),
            (P::Dot, _) => return Err((JsonErrorKind::UnterminatedFraction, i)),
            _ => return Err((JsonErrorKind::ExponentMissingNumber, i)),
        };
        self.state = State::Number(next);
        Ok(i + 1)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::super::validate;
    use super::*;
    use std::vec::Vec;

    /// Texts that reach every state and every error.
    const TEXTS: &[&[u8]] = &[
        br#"{"type":"RUN_STARTED","threadId":"t","runId":"r","n":[1,-2.5e+3,0,true,false,null]}"#,
        br#" [ {"a" : {"b":[[],{}]}} , "x\"\\\/\b\f\n\r\t\u00e9" ] "#,
        b"12",
        b"-0.0e-1 ",
        b"0",
        b"",
        b"   ",
        b"[1,]",
        b"{\"a\" 1}",
        b"{\"a\":1,}",
        b"{,}",
        b"[1 2]",
        b"01",
        b"1.",
        b"1.e3",
        b"-",
        b"-a",
        b"1e",
        b"1e+",
        b"[1x]",
        b"1 x",
        b"tru",
        b"trux",
        b"nul",
        b"\"abc",
        b"\"a\\x\"",
        b"\"\\u12g4\"",
        b"\"\\u12",
        b"\"a\x01b\"",
        b"\"\xff\xfe\"",
        b"\xff",
        b"[[[[[[[[[[]]]]]]]]]]",
        b"[[[[[[[[[[[]]]]]]]]]]]",
        b"{\"a\":[}",
        b"[\"a\":1]",
        b"}",
    ];

    fn resumed(text: &[u8], splits: &[usize], depth: usize) -> Result<(), JsonError> {
        let mut v = Validator::<1>::new(Limits { max_depth: depth });
        let mut at = 0;
        for &s in splits.iter().chain([&text.len()]) {
            v.feed(&text[at..s])?;
            at = s;
        }
        v.finish()
    }

    #[test]
    fn every_split_gives_the_one_shot_verdict() {
        for &text in TEXTS {
            for depth in [0, 1, 10, 64] {
                let want = validate(text, Limits { max_depth: depth });
                assert_eq!(resumed(text, &[], depth), want, "{:?}", text.escape_ascii());
                for a in 0..=text.len() {
                    assert_eq!(
                        resumed(text, &[a], depth),
                        want,
                        "{:?} at {a}",
                        text.escape_ascii()
                    );
                    for b in a..=text.len().min(a + 3) {
                        assert_eq!(resumed(text, &[a, b], depth), want);
                    }
                }
                let ones: Vec<usize> = (1..text.len()).collect();
                assert_eq!(resumed(text, &ones, depth), want);
            }
        }
    }

    #[test]
    fn errors_are_sticky_and_completeness_is_known_early() {
        let mut v = Validator::<1>::new(Limits::new());
        v.feed(b"[1]").unwrap();
        assert!(v.is_complete());
        let e = v.feed(b" 2").unwrap_err();
        assert_eq!((e.kind, e.offset), (JsonErrorKind::TrailingCharacters, 4));
        assert_eq!(v.feed(b"").unwrap_err(), e);
        assert_eq!(v.finish().unwrap_err(), e);
        let mut v = Validator::<1>::new(Limits::new());
        v.feed(b"12").unwrap();
        assert!(v.is_complete(), "a number may end at the end of the text");
        v.feed(b".").unwrap();
        assert!(!v.is_complete());
    }
}
