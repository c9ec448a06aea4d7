//! A JSON error as V8's `JSON.parse` words it, which needs the text: V8
//! counts positions in UTF-16 code units of the text decoded as the
//! reference decodes the stream (UTF-8, invalid bytes as U+FFFD), and
//! quotes the ten units on each side of an unexpected token.

use core::fmt;

use super::{Error, ErrorKind};

/// Bytes for the quoted text: twenty-one UTF-16 units of at most three
/// bytes each, but for the rare text of many three-byte characters, which
/// loses its last.
const SNIPPET: usize = 60;
/// Units quoted on each side of the token.
const AROUND: usize = 10;
/// A text this short is quoted whole.
const WHOLE: usize = 2 * AROUND + 1;

/// V8's message for a [`Error`] in a given text, kept without the text.
#[derive(Clone, Copy, Debug)]
pub(crate) struct V8Message {
    kind: ErrorKind,
    /// The error's position in UTF-16 units (saturating).
    position: u32,
    /// The character at the position.
    token: char,
    snippet: [u8; SNIPPET],
    len: u8,
    /// The quoted text starts after the text's start / ends before its end.
    cut_before: bool,
    cut_after: bool,
}

impl V8Message {
    pub(crate) const EMPTY: Self = V8Message {
        kind: ErrorKind::UnexpectedEnd,
        position: 0,
        token: ' ',
        snippet: [0; SNIPPET],
        len: 0,
        cut_before: false,
        cut_after: false,
    };

    /// The message of an error at UTF-16 position `position` of a text
    /// that is not kept whole: `before` holds at least the bytes of the
    /// ten units before the error (or the text from its start), `rest` the
    /// text from the error on (at least the bytes of ten units, or to its
    /// end if `ends`). Quoted as [`new`](Self::new) quotes the whole text.
    pub(crate) fn around(
        kind: ErrorKind,
        position: usize,
        before: &[u8],
        rest: &[u8],
        ends: bool,
    ) -> Self {
        let mut m = V8Message {
            kind,
            position: u32::try_from(position).unwrap_or(u32::MAX),
            ..Self::EMPTY
        };
        let units = |text: &[u8]| decoded(text).map(|(c, _)| c.len_utf16()).sum::<usize>();
        // The units of `before` that are within ten of the error.
        let mut skip = units(before).saturating_sub(AROUND);
        m.cut_before = position > AROUND;
        let mut n = 0usize;
        let mut push = |c: char, m: &mut V8Message| {
            let mut buf = [0u8; 4];
            let s = c.encode_utf8(&mut buf);
            if let Some(dst) = m.snippet.get_mut(n..n.saturating_add(s.len())) {
                dst.copy_from_slice(s.as_bytes());
                n = n.saturating_add(s.len());
            }
        };
        for (c, _) in decoded(before) {
            if skip == 0 {
                push(c, &mut m);
            } else {
                skip = skip.saturating_sub(c.len_utf16());
            }
        }
        let mut after = 0usize;
        for (i, (c, _)) in decoded(rest).enumerate() {
            if i == 0 {
                m.token = c;
            }
            if after < AROUND {
                push(c, &mut m);
            }
            after = after.saturating_add(c.len_utf16());
        }
        m.cut_after = !ends || after > AROUND;
        m.len = u8::try_from(n).unwrap_or(0);
        if kind == ErrorKind::BadEscape && m.token.len_utf16() == 2 {
            m.kind = ErrorKind::UnexpectedToken(0);
            m.token = char::REPLACEMENT_CHARACTER;
        }
        m
    }

    /// The message of `error` in `text`.
    pub(crate) fn new(text: &[u8], error: Error) -> Self {
        let mut m = V8Message {
            kind: error.kind,
            ..Self::EMPTY
        };
        // The text's characters with their UTF-16 positions.
        let mut units = 0usize;
        let chars = decoded(text);
        let offset = usize::try_from(error.offset).unwrap_or(usize::MAX);
        let mut at_byte = 0usize;
        let mut position = None;
        for (c, bytes) in chars.clone() {
            if at_byte >= offset && position.is_none() {
                position = Some(units);
                m.token = c;
            }
            at_byte = at_byte.saturating_add(bytes);
            units = units.saturating_add(c.len_utf16());
        }
        let position = position.unwrap_or(units);
        m.position = u32::try_from(position).unwrap_or(u32::MAX);
        // V8 reads an escape one UTF-16 unit at a time: after a backslash,
        // half of a surrogate pair is an unexpected token (shown here as
        // U+FFFD, which a Rust string holds in place of a lone surrogate).
        if error.kind == ErrorKind::BadEscape && m.token.len_utf16() == 2 {
            m.kind = ErrorKind::UnexpectedToken(0);
            m.token = char::REPLACEMENT_CHARACTER;
        }
        let (from, to) = if units <= WHOLE {
            (0, units)
        } else {
            (
                position.saturating_sub(AROUND),
                position.saturating_add(AROUND),
            )
        };
        m.cut_before = from > 0;
        m.cut_after = to < units;
        let mut unit = 0usize;
        let mut n = 0usize;
        for (c, _) in chars {
            if unit >= from && unit < to {
                let mut buf = [0u8; 4];
                let s = c.encode_utf8(&mut buf);
                if let Some(dst) = m.snippet.get_mut(n..n.saturating_add(s.len())) {
                    dst.copy_from_slice(s.as_bytes());
                    n = n.saturating_add(s.len());
                }
            }
            unit = unit.saturating_add(c.len_utf16());
        }
        m.len = u8::try_from(n).unwrap_or(0);
        m
    }
}

/// `text`'s characters as the reference decodes them (invalid UTF-8 as
/// U+FFFD), with their lengths in bytes.
fn decoded(text: &[u8]) -> impl Iterator<Item = (char, usize)> + Clone + '_ {
    text.utf8_chunks().flat_map(|chunk| {
        let valid = chunk.valid().chars().map(|c| (c, c.len_utf8()));
        let bad = chunk.invalid().len();
        valid.chain((bad > 0).then_some((char::REPLACEMENT_CHARACTER, bad)))
    })
}

impl fmt::Display for V8Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.position;
        match self.kind {
            ErrorKind::UnexpectedToken(_) => {
                let snippet = self
                    .snippet
                    .get(..usize::from(self.len))
                    .unwrap_or_default();
                let snippet = core::str::from_utf8(snippet).unwrap_or_default();
                let before = if self.cut_before { "..." } else { "" };
                let after = if self.cut_after { "..." } else { "" };
                write!(
                    f,
                    "Unexpected token '{}', {before}\"{snippet}\"{after} is not valid JSON",
                    self.token
                )
            }
            ErrorKind::UnexpectedEnd => f.write_str("Unexpected end of JSON input"),
            kind => match kind.message() {
                Some(message) => write!(f, "{message} at position {at}"),
                None => Error { kind, offset: at }.fmt(f),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::super::{Limits, validate};
    use super::*;
    use std::string::ToString;

    fn message(text: &str) -> std::string::String {
        let e = validate(text.as_bytes(), Limits::new()).unwrap_err();
        V8Message::new(text.as_bytes(), e).to_string()
    }

    /// As Node 20 prints them.
    #[test]
    fn quotes_and_positions_as_v8() {
        assert_eq!(
            message(r#"{"aaaaaaaa":xbbbbbbbbb}"#),
            r#"Unexpected token 'x', ..."aaaaaaaa":xbbbbbbbbb"... is not valid JSON"#
        );
        assert_eq!(
            message(r#"{"a":xb}"#),
            r#"Unexpected token 'x', "{"a":xb}" is not valid JSON"#
        );
        assert_eq!(
            message("[\u{e9}x]"),
            "Unexpected token '\u{e9}', \"[\u{e9}x]\" is not valid JSON"
        );
        assert_eq!(
            message("\"\u{e9}x"),
            "Unterminated string in JSON at position 3"
        );
        assert_eq!(
            message("{\"\u{1F600}\":1 x"),
            "Expected ',' or '}' after property value in JSON at position 8"
        );
    }
}
