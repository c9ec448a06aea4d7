//! Writing events as JSON text, without allocation. What is written (the
//! members the dialect keeps) is decided by [`walk`]; strings are written
//! the way `JSON.stringify` writes them (invalid UTF-8 as U+FFFD, lone
//! surrogates as `\udxxx`), numbers copied as written.

use core::fmt;

use super::walk::{self, Name, Node};
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::Framing;
use crate::testing;
use crate::view::event::Event;
use crate::view::json::{JsonKind, RawJson, Token, Tokens};
use crate::view::string::{JsonStr, encode_wtf8, is_stringify_form};

/// Where the encoder writes.
pub trait Write {
    /// Appends `bytes`; fails if there is no room.
    ///
    /// # Errors
    ///
    /// [`BufferFull`] if there is no room for all of `bytes`.
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), BufferFull>;

    /// How many more bytes it takes for certain (`usize::MAX` if it grows).
    fn room(&self) -> usize {
        usize::MAX
    }
}

/// The output has no room left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferFull;

impl fmt::Display for BufferFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("output buffer full")
    }
}

impl core::error::Error for BufferFull {}

/// Writes into a byte slice, front to back.
#[derive(Debug)]
pub struct SliceWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> SliceWriter<'b> {
    /// An empty writer over `buf`.
    pub fn new(buf: &'b mut [u8]) -> Self {
        SliceWriter { buf, len: 0 }
    }

    /// The bytes written so far.
    pub fn written(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }

    /// Number of bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Write for SliceWriter<'_> {
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), BufferFull> {
        let end = self.len.checked_add(bytes.len()).ok_or(BufferFull)?;
        self.buf
            .get_mut(self.len..end)
            .ok_or(BufferFull)?
            .copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    fn room(&self) -> usize {
        self.buf.len().saturating_sub(self.len)
    }
}

impl<const N: usize> Write for heapless::Vec<u8, N> {
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), BufferFull> {
        self.extend_from_slice(bytes).map_err(|_| BufferFull)
    }

    fn room(&self) -> usize {
        N.saturating_sub(self.len())
    }
}

/// Adapts any [`core::fmt::Write`] (the encoder only ever writes whole UTF-8
/// sequences, so every piece is a `str`).
#[derive(Debug)]
pub struct FmtWriter<W>(pub W);

impl<W: fmt::Write> Write for FmtWriter<W> {
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), BufferFull> {
        let s = core::str::from_utf8(bytes).map_err(|_| BufferFull)?;
        self.0.write_str(s).map_err(|_| BufferFull)
    }
}

#[cfg(feature = "std")]
impl Write for std::vec::Vec<u8> {
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), BufferFull> {
        self.extend_from_slice(bytes);
        Ok(())
    }
}

/// Writes `event` as one line of compact JSON (no trailing newline).
///
/// ```
/// use agui_stream::{decode, encode_to_slice, Dialect, json::Limits};
/// let ev = decode(br#"{"type":"TEXT_MESSAGE_END","messageId":"m\u0031","x":1}"#,
///                 Dialect::V1, Limits::new()).unwrap().unwrap();
/// let mut buf = [0u8; 64];
/// let n = encode_to_slice(&ev, &mut buf).unwrap();
/// assert_eq!(&buf[..n], br#"{"type":"TEXT_MESSAGE_END","messageId":"m1"}"#);
/// ```
///
/// # Errors
///
/// [`BufferFull`] when `out` has no room left (what was written stays).
pub fn encode<W: Write + ?Sized>(event: &Event<'_>, out: &mut W) -> Result<(), BufferFull> {
    out.write_bytes(event.event_type().framed(Framing::TypeMember))?;
    if testing::fast_paths() && is_flat(event) {
        for (field, value) in event.fields() {
            if let Some(v) = value {
                out.write_bytes(field.key.framed(Framing::Member))?;
                write_scalar(v, out)?;
            }
        }
    } else {
        walk::event(event, |name, value| write_member(false, name, value, out))?;
    }
    out.write_bytes(b"}")
}

/// A V1 event whose members are all strings, numbers, booleans or null:
/// the walk writes each of them as it is (a string in stringify form), in
/// table order, so [`encode`] writes them without it. The deltas and what
/// the normalizer makes of chunks: most events of any stream. (V0 keeps
/// unknown members too: those take the walk.)
#[inline]
fn is_flat(event: &Event<'_>) -> bool {
    event.dialect() == Dialect::V1
        && event.fields().all(|(_, value)| {
            value.is_none_or(|v| !matches!(v.kind(), JsonKind::Object | JsonKind::Array))
        })
}

/// [`encode`] with the value of member `key` (which `event` has) written
/// by `value` in place of the event's own.
pub(crate) fn encode_replacing<W: Write + ?Sized>(
    event: &Event<'_>,
    key: crate::protocol::event_type::Key,
    out: &mut W,
    mut value: impl FnMut(&mut W) -> Result<(), BufferFull>,
) -> Result<(), BufferFull> {
    out.write_bytes(event.event_type().framed(Framing::TypeMember))?;
    walk::event(event, |name, node| match name {
        Name::Key(k) if k == key => {
            out.write_bytes(k.framed(Framing::Member))?;
            value(out)
        }
        _ => write_member(false, name, node, out),
    })?;
    out.write_bytes(b"}")
}

/// Writes decoded text (UTF-8, or WTF-8 with lone surrogates) as the
/// inside of a JSON string, as `JSON.stringify` does.
pub(crate) fn write_decoded<W: Write + ?Sized>(text: &[u8], out: &mut W) -> Result<(), BufferFull> {
    let plain = text.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\');
    if plain && core::str::from_utf8(text).is_ok() {
        return out.write_bytes(text);
    }
    let mut rest = text;
    while let Some((&lead, tail)) = rest.split_first() {
        let len: usize = match lead {
            0..0x80 => 1,
            0xC0..0xE0 => 2,
            0xE0..0xF0 => 3,
            _ => 4,
        };
        let mut c = match len {
            1 => u32::from(lead),
            2 => u32::from(lead & 0x1F),
            3 => u32::from(lead & 0x0F),
            _ => u32::from(lead & 0x07),
        };
        let (more, after) = tail
            .split_at_checked(len.saturating_sub(1))
            .unwrap_or((tail, &[]));
        for &b in more {
            c = (c << 6) | u32::from(b & 0x3F);
        }
        write_char(c, out)?;
        rest = after;
    }
    Ok(())
}

/// Writes a string, number, boolean or null as the walk does.
#[inline]
fn write_scalar<W: Write + ?Sized>(v: RawJson<'_>, out: &mut W) -> Result<(), BufferFull> {
    match v.kind() {
        JsonKind::String => write_json_str(v, out),
        _ => out.write_bytes(v.as_bytes()),
    }
}

/// [`encode`] into a slice; returns the length written.
///
/// # Errors
///
/// [`BufferFull`] if the event does not fit `buf`.
pub fn encode_to_slice(event: &Event<'_>, buf: &mut [u8]) -> Result<usize, BufferFull> {
    let mut w = SliceWriter::new(buf);
    encode(event, &mut w)?;
    Ok(w.len())
}

/// Writes a node of the walk.
fn write_node<W: Write + ?Sized>(node: Node<'_>, out: &mut W) -> Result<(), BufferFull> {
    match node {
        Node::Raw(v) => match v.kind() {
            JsonKind::String => write_json_str(v, out),
            JsonKind::Object | JsonKind::Array => write_any(v, out),
            // A scalar is one token: written as it is.
            _ => out.write_bytes(v.as_bytes()),
        },
        Node::Known(s) => encode_str(JsonStr::from_escaped(s.as_bytes()), out),
        Node::Object(o) => {
            let mut first = true;
            o.members(|name, value| write_member(core::mem::take(&mut first), name, value, out))?;
            out.write_bytes(if first { b"{}" } else { b"}" })
        }
        Node::Array(array, item) => {
            out.write_bytes(b"[")?;
            let mut first = true;
            walk::elements(array, item, |e| {
                if !core::mem::take(&mut first) {
                    out.write_bytes(b",")?;
                }
                write_node(e, out)
            })?;
            out.write_bytes(b"]")
        }
    }
}

/// Writes a member, `{` first if it is the first.
fn write_member<W: Write + ?Sized>(
    first: bool,
    name: Name<'_>,
    value: Node<'_>,
    out: &mut W,
) -> Result<(), BufferFull> {
    match name {
        // The usual case in one piece: `,"name":`.
        Name::Key(key) if !first => out.write_bytes(key.framed(Framing::Member))?,
        Name::Key(key) => write_name(first, key.as_str().as_bytes(), out)?,
        Name::Known(name) => write_name(first, name.as_bytes(), out)?,
        Name::Json(name) => {
            out.write_bytes(if first { b"{\"" } else { b",\"" })?;
            write_text(name, out)?;
            out.write_bytes(b"\":")?;
        }
    }
    write_node(value, out)
}

/// Writes `"name":` (plain text), `{` first if it is the first member.
fn write_name<W: Write + ?Sized>(first: bool, name: &[u8], out: &mut W) -> Result<(), BufferFull> {
    out.write_bytes(if first { b"{\"" } else { b",\"" })?;
    out.write_bytes(name)?;
    out.write_bytes(b"\":")
}

/// Writes any value compactly, strings re-escaped, numbers as written.
fn write_any<W: Write + ?Sized>(v: RawJson<'_>, out: &mut W) -> Result<(), BufferFull> {
    for t in Tokens::new(v) {
        match t {
            Token::Open(b) | Token::Close(b) => out.write_bytes(&[b])?,
            Token::Comma => out.write_bytes(b",")?,
            Token::Colon => out.write_bytes(b":")?,
            Token::Str(s) => encode_str(s, out)?,
            Token::Scalar(s) => out.write_bytes(s)?,
        }
    }
    Ok(())
}

/// Writes the JSON string `v` (quotes included) the way `JSON.stringify`
/// does: as it is, in one piece, when it is in that form already.
#[inline]
fn write_json_str<W: Write + ?Sized>(v: RawJson<'_>, out: &mut W) -> Result<(), BufferFull> {
    let bytes = v.as_bytes();
    let inner = bytes
        .get(1..bytes.len().saturating_sub(1))
        .unwrap_or_default();
    if is_stringify_form(inner) {
        return out.write_bytes(bytes);
    }
    encode_str(JsonStr::from_escaped(inner), out)
}

/// Writes a string (with quotes) the way `JSON.stringify` does.
///
/// # Errors
///
/// [`BufferFull`] when `out` has no room left.
pub fn encode_str<W: Write + ?Sized>(s: JsonStr<'_>, out: &mut W) -> Result<(), BufferFull> {
    out.write_bytes(b"\"")?;
    write_text(s, out)?;
    out.write_bytes(b"\"")
}

/// [`encode_str`] without the quotes.
fn write_text<W: Write + ?Sized>(s: JsonStr<'_>, out: &mut W) -> Result<(), BufferFull> {
    if is_stringify_form(s.raw()) {
        out.write_bytes(s.raw())?;
    } else {
        for c in s.code_points() {
            write_char(c, out)?;
        }
    }
    Ok(())
}

fn write_char<W: Write + ?Sized>(c: u32, out: &mut W) -> Result<(), BufferFull> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short: &[u8] = match c {
        0x22 => b"\\\"",
        0x5C => b"\\\\",
        0x08 => b"\\b",
        0x0C => b"\\f",
        0x0A => b"\\n",
        0x0D => b"\\r",
        0x09 => b"\\t",
        _ => b"",
    };
    if !short.is_empty() {
        return out.write_bytes(short);
    }
    if c < 0x20 || (0xD800..=0xDFFF).contains(&c) {
        let hex = |shift: u32| {
            HEX.get(((c >> shift) & 0xF) as usize)
                .copied()
                .unwrap_or(b'0')
        };
        return out.write_bytes(&[b'\\', b'u', hex(12), hex(8), hex(4), hex(0)]);
    }
    let mut tmp = [0u8; 4];
    out.write_bytes(encode_wtf8(c, &mut tmp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::decode::decode;
    use crate::input::json::Limits;
    use crate::protocol::dialect::Dialect;
    extern crate std;
    use std::format;
    use std::string::{String, ToString};
    use std::vec::Vec;

    fn enc(s: &str, d: Dialect) -> String {
        let ev = decode(s.as_bytes(), d, Limits::new()).unwrap().unwrap();
        let mut out = Vec::new();
        encode(&ev, &mut VecW(&mut out)).unwrap();
        String::from_utf8(out).unwrap()
    }

    struct VecW<'v>(&'v mut Vec<u8>);
    impl Write for VecW<'_> {
        fn write_bytes(&mut self, b: &[u8]) -> Result<(), BufferFull> {
            self.0.extend_from_slice(b);
            Ok(())
        }
    }

    #[test]
    fn strips_in_v1_keeps_in_v0() {
        let s = r#"{"type":"TEXT_MESSAGE_START","messageId":"m","x":{"y":1},"role":"user"}"#;
        assert_eq!(
            enc(s, Dialect::V1),
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"user"}"#
        );
        assert_eq!(
            enc(s, Dialect::V0),
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"user","x":{"y":1}}"#
        );
    }

    #[test]
    fn nested_shapes_are_stripped_and_dropped() {
        let s = r#"{"type":"MESSAGES_SNAPSHOT","messages":[
            {"id":"a","role":"assistant","extra":1,"toolCalls":[{"id":"c","type":"function","index":0,"function":{"name":"f","arguments":"{}","strict":true}}]},
            {"id":"f","role":"function","content":"x"},
            {"id":"u","role":"user","content":[{"type":"text","text":"hi"},{"type":"hologram"}]}]}"#;
        assert_eq!(
            enc(s, Dialect::V1),
            concat!(
                r#"{"type":"MESSAGES_SNAPSHOT","messages":["#,
                r#"{"role":"assistant","id":"a","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"#,
                r#"{"role":"user","id":"u","content":[{"type":"text","text":"hi"}]}]}"#
            )
        );
    }

    #[test]
    fn patch_operations_keep_extra_members_and_drop_unknown_ops() {
        let s = r#"{"type":"STATE_DELTA","delta":[{"op":"remove","path":"/a","value":1},{"op":"frob","path":"/b"}]}"#;
        assert_eq!(
            enc(s, Dialect::V1),
            r#"{"type":"STATE_DELTA","delta":[{"op":"remove","path":"/a","value":1}]}"#
        );
    }

    #[test]
    fn defaults_are_written() {
        let s = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"state":null}}"#;
        assert_eq!(
            enc(s, Dialect::V1),
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"tools":[],"context":[]}}"#
        );
    }

    #[test]
    fn strings_are_written_like_json_stringify() {
        let s = "{\"type\":\"CUSTOM\",\"name\":\"a\\u0000\\/\\ud83d\\ude00\\udc00\u{FFFD}\",\"value\":[\"\\u00e9\",1.50]}";
        assert_eq!(
            enc(s, Dialect::V1),
            "{\"type\":\"CUSTOM\",\"name\":\"a\\u0000/😀\\udc00\u{FFFD}\",\"value\":[\"é\",1.50]}"
        );
    }

    #[test]
    fn legacy_binary_parts_are_written_upgraded_or_dropped() {
        let s = r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[
            {"type":"binary","mimeType":"image/png","data":"aGk=","filename":"a.png","id":"x"},
            {"type":"binary","mimeType":"image/png","id":"only-id"},
            {"type":"binary","mimeType":"text/plain","url":"https://e/x"},
            {"type":"image","source":{"type":"url","value":"https://e/x","mimeType":"text/plain"}},
            {"type":"document","source":{"type":"url","value":"https://e/x","mimeType":"text/plain"}}]}]}"#;
        assert_eq!(
            enc(s, Dialect::V1),
            concat!(
                r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"role":"user","id":"u","content":["#,
                r#"{"type":"image","source":{"type":"data","value":"aGk=","mimeType":"image/png"},"metadata":{"filename":"a.png"}},"#,
                r#"{"type":"image","source":{"type":"url","value":"https://e/x","mimeType":"text/plain"}},"#,
                r#"{"type":"document","source":{"type":"url","value":"https://e/x","mimeType":"text/plain"}}]}]}"#
            )
        );
    }

    #[test]
    fn v0_records_skip_proto_members() {
        let s = r#"{"type":"CUSTOM","name":"n","value":1,"metadata":{"__proto__":1,"k":{"__proto__":2}}}"#;
        assert_eq!(
            enc(s, Dialect::V0),
            r#"{"type":"CUSTOM","metadata":{"k":{"__proto__":2}},"name":"n","value":1}"#
        );
        assert_eq!(
            enc(s, Dialect::V1),
            r#"{"type":"CUSTOM","metadata":{"__proto__":1,"k":{"__proto__":2}},"name":"n","value":1}"#
        );
    }

    #[test]
    fn slice_writer_reports_full() {
        let ev = decode(
            br#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
            Dialect::V1,
            Limits::new(),
        )
        .unwrap()
        .unwrap();
        let mut small = [0u8; 10];
        assert_eq!(encode_to_slice(&ev, &mut small), Err(BufferFull));
    }

    /// `content` (a JSON string's inside) the slow way: decoded, each code
    /// point written as stringify writes it.
    fn reencoded(content: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for c in JsonStr::from_escaped(content).code_points() {
            write_char(c, &mut VecW(&mut out)).unwrap();
        }
        out
    }

    #[test]
    fn stringify_form_is_copied_only_where_it_is_the_reencoding() {
        // Every two-character escape and every \u00xx (both cases), alone
        // and between text, ASCII and not.
        let mut escapes: Vec<String> = ["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]
            .iter()
            .map(|e| e.to_string())
            .collect();
        for c in 0u32..0x80 {
            escapes.push(format!("\\u{c:04x}"));
            escapes.push(format!("\\u{c:04X}"));
        }
        escapes.extend(["\\ud83d\\ude00", "\\ud800", "\\u2028", "\\u00e9"].map(String::from));
        let mut copied = 0;
        for e in &escapes {
            for text in [
                e.clone(),
                format!("a{e}b"),
                format!("é{e}日本"),
                format!("{e}{e}"),
            ] {
                let content = text.as_bytes();
                let slow = reencoded(content);
                if is_stringify_form(content) {
                    assert_eq!(
                        content,
                        &slow[..],
                        "{text} copied but re-encodes differently"
                    );
                    copied += 1;
                } else if !text.contains("\\ud800") {
                    // (A lone surrogate's escape is stringify's too: left to
                    // the slow path, which writes it the same.)
                    assert_ne!(
                        content,
                        &slow[..],
                        "{text} is in stringify form but not copied"
                    );
                }
            }
        }
        // The canonical ones are copied: 7 short escapes and 27 \u00xx,
        // 18 of which have no letter to put in upper case (listed twice).
        assert_eq!(copied, 4 * (7 + 27 + 18));
        // Text without escapes: copied where it is valid UTF-8.
        assert!(is_stringify_form("plain 👩‍💻 → 日本語 \u{2028}".as_bytes()));
        assert!(!is_stringify_form(b"bad \xff utf-8"));
        assert!(!is_stringify_form(b"cut \xe6\x97"));
        assert!(!is_stringify_form(b"\xe6\x97\\n\xa5"));
    }

    /// [`encode`]'s flat path writes what the walk writes, for every event
    /// of the corpus in both dialects.
    #[test]
    #[cfg_attr(miri, ignore = "the whole corpus")]
    fn flat_events_are_written_as_the_walk_writes_them() {
        let (mut events, mut flat) = (0, 0);
        for text in crate::testing::corpus_streams() {
            for line in text.split(|&b| b == b'\n') {
                let Some(json) = line.strip_prefix(b"data: ") else {
                    continue;
                };
                for dialect in [Dialect::V1, Dialect::V0] {
                    let Ok(Some(ev)) = decode(json, dialect, Limits::new()) else {
                        continue;
                    };
                    let (mut fast, mut walked) = (Vec::new(), Vec::new());
                    encode(&ev, &mut VecW(&mut fast)).unwrap();
                    crate::testing::general_only(|| encode(&ev, &mut VecW(&mut walked))).unwrap();
                    assert_eq!(
                        String::from_utf8_lossy(&fast),
                        String::from_utf8_lossy(&walked)
                    );
                    events += 1;
                    flat += usize::from(is_flat(&ev));
                }
            }
        }
        // (V0 events are never flat: about half.)
        assert!(
            events > 5000 && flat > events * 2 / 5,
            "{flat} flat of {events}"
        );
    }
}
