//! Splitting: a delta event that outgrows the raw buffer and cannot be
//! held goes out as several complete events of its lane
//! ([`Options::split`](super::Options::split)) instead of as part of one
//! event ahead of its verdict. Each piece is the event's head — `data:
//! {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"`, kept at the
//! end of the raw buffer — a part of its delta that ends at a character,
//! and `"}`; the last piece is the head and the event's own rest (its
//! delta's end, its other members). So the client's message is the same
//! text, and a stream cut inside the event loses nothing that went out.
//!
//! ```text
//! data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"Hello, w"}
//!
//! data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"orld","timestamp":1}
//! ```

use crate::check::normalize::LaneKind;
use crate::output::encode::Write;
use crate::protocol::event_type::EventType;
use crate::view::string::JsonStr;

use super::forward::Forward;

/// The longest head a split keeps (ids up to about 180 bytes).
const HEAD: usize = 256;

/// The least room a split needs in the raw buffer beside its head: for
/// the bytes a piece leaves (the end of an escape, the 16 withheld) and the
/// event's own end after its delta.
pub(super) const ROOM: usize = 128;

/// The types whose deltas split.
const SPLIT: [EventType; 3] = [
    EventType::TextMessageContent,
    EventType::ToolCallArgs,
    EventType::ReasoningMessageContent,
];

/// A delta event's head: its block's bytes up to its delta's opening
/// quote.
pub(super) struct Head {
    bytes: [u8; HEAD],
    len: usize,
    /// Blank lines before it, in the block's bytes.
    pub(super) skip: usize,
    pub(super) ty: EventType,
    /// Where its id lies in `bytes`, without its quotes.
    id: (usize, usize),
}

impl Head {
    /// The head of the block whose first bytes are `parts` (joined), if it
    /// is one the split takes: after blank lines, `data: {"type":"T",
    /// "idKey":"id","delta":"` (or `data:{`) with `T` one of the three
    /// delta types, its id key, and an id without escapes.
    pub(super) fn of(parts: [&[u8]; 2]) -> Option<Head> {
        let mut bytes = [0u8; HEAD];
        let mut len = 0usize;
        for (dst, &src) in bytes.iter_mut().zip(parts.into_iter().flatten()) {
            *dst = src;
            len = len.saturating_add(1);
        }
        let all = bytes.get(..len)?;
        let skip = all.iter().take_while(|&&b| b == b'\n').count();
        let line = all.get(skip..)?.strip_prefix(b"data:")?;
        let line = line.strip_prefix(b" ").unwrap_or(line);
        let rest = line.strip_prefix(b"{\"type\":\"")?;
        let (ty, rest) = SPLIT.into_iter().find_map(|ty| {
            let rest = rest.strip_prefix(ty.as_str().as_bytes())?;
            Some((ty, rest.strip_prefix(b"\",\"")?))
        })?;
        let key = LaneKind::of_content(ty)?.id_key().as_str().as_bytes();
        let rest = rest.strip_prefix(key)?.strip_prefix(b"\":\"")?;
        let id_len = rest.iter().position(|&b| b == b'"')?;
        let id = rest.get(..id_len)?;
        if id.iter().any(|&b| b == b'\\' || b < 0x20) {
            return None;
        }
        let tail = rest.get(id_len..)?.strip_prefix(b"\",\"delta\":\"")?;
        let id_start = len.checked_sub(rest.len())?;
        let end = len.checked_sub(tail.len())?;
        Some(Head {
            bytes,
            len: end.checked_sub(skip)?,
            skip,
            ty,
            id: (
                id_start.checked_sub(skip)?,
                id_start.checked_add(id_len)?.checked_sub(skip)?,
            ),
        })
    }

    /// Its bytes, from `data:` on.
    pub(super) fn bytes(&self) -> &[u8] {
        let end = self.skip.saturating_add(self.len);
        self.bytes.get(self.skip..end).unwrap_or_default()
    }

    /// The entity it names.
    pub(super) fn id(&self) -> JsonStr<'_> {
        let (a, b) = self.id;
        JsonStr::from_escaped(self.bytes().get(a..b).unwrap_or_default())
    }
}

/// Where in an escape the scan is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    Backslash,
    /// `\u` and `left` hex digits to go, the value so far.
    Hex {
        left: u8,
        value: u16,
    },
}

/// How much of the JSON string content `parts` (joined), from a point
/// outside any escape, goes out as a piece now: at most `limit` bytes,
/// ending at a character's start, never inside an escape or between the
/// two escapes of a surrogate pair. It stops before a byte no JSON string
/// holds (the event's verdict will say so), and before the string's last
/// character, which stays with the event's own end (a delta is never
/// empty).
pub(super) fn piece(parts: [&[u8]; 2], limit: usize) -> usize {
    let mut escape = Escape::None;
    // The last escape was a high surrogate: a low one may follow.
    let mut high = false;
    // The last two places a piece may end.
    let (mut before, mut safe) = (0, 0);
    for (i, &b) in parts.into_iter().flatten().enumerate() {
        let continuation = b & 0xC0 == 0x80;
        if escape == Escape::None && !(high && b == b'\\') && !continuation && i != safe {
            before = safe;
            safe = i;
        }
        if i >= limit && !(escape == Escape::None && b == b'"') {
            return safe.min(limit);
        }
        escape = match escape {
            Escape::None => match b {
                b'"' => return if safe == i { before } else { safe },
                b'\\' => Escape::Backslash,
                0..=0x1F => return safe,
                _ => {
                    high = false;
                    Escape::None
                }
            },
            Escape::Backslash => match b {
                b'u' => Escape::Hex { left: 4, value: 0 },
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                    high = false;
                    Escape::None
                }
                _ => return safe,
            },
            Escape::Hex { left, value } => {
                let Some(digit) = char::from(b).to_digit(16) else {
                    return safe;
                };
                let value = value.wrapping_shl(4) | digit as u16;
                if left > 1 {
                    Escape::Hex {
                        left: left.saturating_sub(1),
                        value,
                    }
                } else {
                    high = (0xD800..=0xDBFF).contains(&value);
                    Escape::None
                }
            }
        };
    }
    safe
}

impl<W: Write + ?Sized> Forward<'_, W> {
    /// Writes the next piece of a split delta whose content goes on at
    /// stream offset `from`, as far as [`piece`] allows up to `upto` (the
    /// input reaches `end`): `head`, the piece, `"}` and a blank line.
    /// Returns where the content goes on now.
    pub(super) fn piece(&mut self, head: &[u8], from: u64, upto: u64, end: u64) -> u64 {
        let limit = usize::try_from(upto.saturating_sub(from)).unwrap_or(usize::MAX);
        let len = piece(self.emit.parts(from, end), limit);
        let to = from.saturating_add(len as u64);
        if len > 0 {
            self.emit.write(head);
            for part in self.emit.parts(from, to) {
                self.emit.write(part);
            }
            self.emit.write(b"\"}\n\n");
        }
        to
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece_of(s: &[u8], limit: usize) -> usize {
        // Every split of the input gives the same piece.
        let whole = piece([s, b""], limit);
        for k in 0..=s.len() {
            let (a, b) = s.split_at(k);
            assert_eq!(piece([a, b], limit), whole, "{k}");
        }
        whole
    }

    #[test]
    fn pieces_end_at_characters() {
        assert_eq!(piece_of(b"abcdef", 4), 4);
        // Not inside an escape, nor a UTF-8 sequence.
        assert_eq!(piece_of(br"ab\ncd", 3), 2);
        assert_eq!(piece_of(br"ab\u00e9cd", 6), 2);
        assert_eq!(piece_of(br"ab\u00e9cd", 8), 8);
        assert_eq!(piece_of("aé".as_bytes(), 2), 1);
        assert_eq!(piece_of("aé".as_bytes(), 3), 1); // the next byte unknown
        assert_eq!(piece_of("aéb".as_bytes(), 3), 3);
        // Not between a surrogate pair's halves; after a lone one, yes.
        assert_eq!(piece_of(br"a\ud83d\ude00b", 7), 1);
        assert_eq!(piece_of(br"a\ud83d\ude00b", 13), 13);
        assert_eq!(piece_of(br"a\ud83db", 7), 7);
        // A backslash escaped.
        assert_eq!(piece_of(br"a\\b", 3), 3);
    }

    #[test]
    fn the_last_character_stays_with_the_end() {
        assert_eq!(piece_of(br#"abc","x":1}"#, 100), 2);
        assert_eq!(piece_of(br#"ab\n","x":1}"#, 100), 2);
        assert_eq!(piece_of("aé\"}".as_bytes(), 100), 1);
        assert_eq!(piece_of(br#"a"}"#, 100), 0);
        assert_eq!(piece_of(br#""}"#, 100), 0);
        // At the limit, too.
        assert_eq!(piece_of(br#"abc"}"#, 3), 2);
    }

    #[test]
    fn bytes_no_string_holds_stop_it() {
        assert_eq!(piece_of(b"ab\ncd", 100), 2);
        assert_eq!(piece_of(br"ab\qcd", 100), 2);
        assert_eq!(piece_of(br"ab\u00g0", 100), 2);
    }

    #[test]
    fn heads_of_delta_events() {
        let head = Head::of([
            b"\ndata: {\"type\":\"TOOL_CALL_ARGS\",",
            b"\"toolCallId\":\"c1\",\"delta\":\"{\\\"a",
        ])
        .unwrap();
        assert_eq!(head.skip, 1);
        assert_eq!(head.ty, EventType::ToolCallArgs);
        assert_eq!(
            head.bytes(),
            b"data: {\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"c1\",\"delta\":\""
        );
        assert!(head.id().eq_str("c1"));
        let bytes =
            b"data:{\"type\":\"REASONING_MESSAGE_CONTENT\",\"messageId\":\"r\",\"delta\":\"x";
        assert!(Head::of([bytes, b""]).is_some());
        for no in [
            &b"data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"x"[..],
            b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"delta\":\"x\",\"messageId\":\"m\"}",
            b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\\u0031\",\"delta\":\"x",
            b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"toolCallId\":\"m\",\"delta\":\"x",
            b"event: x\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"x",
            b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":",
        ] {
            assert!(
                Head::of([no, b""]).is_none(),
                "{:?}",
                core::str::from_utf8(no)
            );
        }
    }
}
