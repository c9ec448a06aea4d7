//! The dedicated path for the events most of real traffic is: the streamed
//! deltas (`TEXT_MESSAGE_CONTENT`, `TOOL_CALL_ARGS`, V1's
//! `REASONING_MESSAGE_CONTENT`, and the `…_CHUNK` forms of each) in the
//! shape agent servers write them —
//!
//! ```text
//! {"type":"TEXT_MESSAGE_CONTENT","messageId":"…","delta":"…"}
//! {"type":"TOOL_CALL_ARGS","timestamp":1700000000049,"toolCallId":"…","delta":"…"}
//! ```
//!
//! `type` first, then the id (optional for a chunk), `delta` and an
//! optional `timestamp` in any order, each once; strings (escapes allowed), the timestamp a plain
//! integer of at most 15 digits; no whitespace. Such a frame is one valid
//! JSON object whose every member the schema accepts, so its event is
//! built here directly, without the general validator, the member lookup
//! or the field-by-field schema loop. Anything else (another member, a
//! `null`, whitespace, a second `type`) is `None`, and the general path
//! decides. A test compares both paths on every frame the corpus has and
//! on near misses.

use crate::input::json::{Limits, string_end};
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key};
use crate::view::event::Event;
use crate::view::json::RawJson;
use crate::view::scan::digits_end;

/// The event [`decode`](super::decode::decode) gives for `payload`, when
/// it is a delta event in the usual shape; `None` otherwise.
#[inline]
pub(crate) fn decode_delta(payload: &[u8], dialect: Dialect, limits: Limits) -> Option<Event<'_>> {
    if limits.max_depth == 0 {
        return None;
    }
    let (ty, id_key, id_required, mut i) = delta_type(payload, dialect)?;
    // Every byte is read once, as the general validator reads it.
    crate::testing::count_work(payload.len());
    let mut event = Event::empty(ty, dialect, Some(RawJson::exact(payload)));
    // Which of id, delta and timestamp have been read.
    let mut seen = [false; 3];
    loop {
        // `i` is past the previous member's value: `,"` or the last `}`.
        match payload.get(i..)? {
            [b'}'] => break,
            [b',', b'"', ..] => i = i.checked_add(2)?,
            _ => return None,
        }
        let rest = payload.get(i..)?;
        let id_name = match id_key {
            Key::ToolCallId => starts(rest, b"toolCallId\":").then_some(12),
            _ => starts(rest, b"messageId\":").then_some(11),
        };
        let (key, which, name_len) = if let Some(len) = id_name {
            (id_key, 0, len)
        } else if starts(rest, b"delta\":") {
            (Key::Delta, 1, 7)
        } else if starts(rest, b"timestamp\":") {
            (Key::Timestamp, 2, 11)
        } else {
            return None;
        };
        let slot = seen.get_mut(which)?;
        if *slot {
            return None;
        }
        *slot = true;
        let start = i.checked_add(name_len)?;
        let end = if key == Key::Timestamp {
            timestamp_end(payload, start)?
        } else {
            if payload.get(start) != Some(&b'"') {
                return None;
            }
            string_end(payload, start).ok()?
        };
        event.set(key, payload.get(start..end).map(RawJson::exact));
        i = end;
    }
    // The delta is required here (a chunk without one is left to the
    // general path), the id where the schema requires it.
    ((seen[0] || !id_required) && seen[1]).then_some(event)
}

/// Whether `bytes` starts with `name`, compared as one fixed-size array
/// (a few word compares, where a slice compare calls `memcmp`).
#[inline(always)]
fn starts<const N: usize>(bytes: &[u8], name: &[u8; N]) -> bool {
    bytes.first_chunk::<N>() == Some(name)
}

/// The delta event type `payload` starts with, its id member
/// (`messageId` or `toolCallId`) and whether the schema requires it (a
/// chunk's is optional), and where the members after the type start.
#[inline(always)]
fn delta_type(payload: &[u8], dialect: Dialect) -> Option<(EventType, Key, bool, usize)> {
    const PREFIX: &[u8; 9] = b"{\"type\":\"";
    if !starts(payload, PREFIX) {
        return None;
    }
    let rest = payload.get(PREFIX.len()..)?;
    let v1 = dialect == Dialect::V1;
    let (ty, id, required, name_len) = if starts(rest, b"TEXT_MESSAGE_CONTENT\"") {
        (EventType::TextMessageContent, Key::MessageId, true, 21)
    } else if starts(rest, b"TEXT_MESSAGE_CHUNK\"") {
        (EventType::TextMessageChunk, Key::MessageId, false, 19)
    } else if starts(rest, b"TOOL_CALL_ARGS\"") {
        (EventType::ToolCallArgs, Key::ToolCallId, true, 15)
    } else if starts(rest, b"TOOL_CALL_CHUNK\"") {
        (EventType::ToolCallChunk, Key::ToolCallId, false, 16)
    } else if v1 && starts(rest, b"REASONING_MESSAGE_CONTENT\"") {
        (EventType::ReasoningMessageContent, Key::MessageId, true, 26)
    } else if v1 && starts(rest, b"REASONING_MESSAGE_CHUNK\"") {
        (EventType::ReasoningMessageChunk, Key::MessageId, false, 24)
    } else {
        return None;
    };
    Some((ty, id, required, PREFIX.len().checked_add(name_len)?))
}

/// The end of a timestamp at `start` that every dialect takes as it is: a
/// JSON integer of 1 to 15 digits (so a safe one), no sign, fraction or
/// exponent.
#[inline(always)]
fn timestamp_end(payload: &[u8], start: usize) -> Option<usize> {
    let end = digits_end(payload, start);
    let digits = payload.get(start..end)?;
    let ok = matches!(digits.len(), 1..=15) && (digits.len() == 1 || digits.first() != Some(&b'0'));
    ok.then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::decode::decode;
    extern crate std;
    use std::format;
    use std::string::String;
    use std::vec::Vec;

    /// Both paths' answers, as text (the event's members and type).
    fn both(payload: &[u8], dialect: Dialect) -> (Option<String>, String) {
        let fast = decode_delta(payload, dialect, Limits::new()).map(|e| format!("{e:?}"));
        let general = crate::testing::general_only(|| {
            format!("{:?}", decode(payload, dialect, Limits::new()))
        });
        (fast, general)
    }

    /// Near misses of the shapes the path takes: each must be left to the
    /// general path, or give exactly its event.
    fn variants() -> Vec<String> {
        let mut out = Vec::new();
        let types = [
            ("TEXT_MESSAGE_CONTENT", "messageId"),
            ("TOOL_CALL_ARGS", "toolCallId"),
            ("REASONING_MESSAGE_CONTENT", "messageId"),
            ("TEXT_MESSAGE_CHUNK", "messageId"),
            ("TOOL_CALL_CHUNK", "toolCallId"),
            ("REASONING_MESSAGE_CHUNK", "messageId"),
            ("TOOL_CALL_CHUNK", "messageId"),
            ("TEXT_MESSAGE_END", "messageId"),
            ("TOOL_CALL_ARGS", "messageId"),
        ];
        let deltas = [
            r#""""#,
            r#""a b""#,
            r#""q\"x\\y\n\u00e9\ud83d""#,
            r#""bad \x""#,
            r#""ctl	""#,
            "\"caf\u{e9} \u{1F600}\"",
            "5",
            "null",
            r#""unterminated"#,
        ];
        let stamps = [
            None,
            Some("1700000000049"),
            Some("0"),
            Some("012"),
            Some("123456789012345"),
            Some("1234567890123456"),
            Some("-5"),
            Some("1.5"),
            Some("1e3"),
            Some("\"7\""),
        ];
        for (ty, id) in types {
            for delta in deltas {
                for stamp in stamps {
                    let t = stamp
                        .map(|s| format!(",\"timestamp\":{s}"))
                        .unwrap_or_default();
                    let (a, b) = (format!(r#""{id}":"m-1""#), format!(r#""delta":{delta}"#));
                    out.push(format!(r#"{{"type":"{ty}",{a},{b}{t}}}"#));
                    out.push(format!(r#"{{"type":"{ty}"{t},{b},{a}}}"#));
                }
            }
            // Missing, repeated, unknown and odd members; whitespace; trailing bytes.
            for tail in [
                r#","delta":"x"}"#.to_owned(),
                r#","delta":"x","timestamp":5}"#.to_owned(),
                r#","timestamp":5}"#.to_owned(),
                r#"}"#.to_owned(),
                format!(r#","{id}":"m","role":"assistant","delta":"x"}}"#),
                format!(r#","{id}":"m""#) + "}",
                format!(r#","{id}":"m","delta":"x","delta":"y"}}"#),
                format!(r#","{id}":"m","{id}":"n","delta":"y"}}"#),
                format!(r#","{id}":"m","delta":"x","timestamp":1,"timestamp":2}}"#),
                format!(r#","{id}":"m","delta":"x","rawEvent":null}}"#),
                format!(r#","{id}":"m","delta":"x","type":"RUN_STARTED"}}"#),
                format!(r#","{id}":"m","delta":"x","subagentRunId":"s"}}"#),
                format!(r#","{id}":"m","delta":"x"}} "#),
                format!(r#","{id}":"m","delta":"x"}}x"#),
                format!(r#", "{id}":"m","delta":"x"}}"#),
                format!(r#","{id}" :"m","delta":"x"}}"#),
                format!(r#","{id}":"m","delta":"x",}}"#),
                format!(r#","{id}":"m","delta":"x""#),
                format!(r#","{id}":"","delta":""}}"#),
                format!(r#","{id}":"m\u0041","delta":"x"}}"#),
            ] {
                out.push(format!(r#"{{"type":"{ty}"{tail}"#));
            }
        }
        out
    }

    use std::borrow::ToOwned;

    #[test]
    #[cfg_attr(miri, ignore = "thousands of decodes")]
    fn gives_the_general_paths_event_or_leaves_the_frame_to_it() {
        let mut taken = 0;
        for text in variants() {
            for dialect in [Dialect::V1, Dialect::V0] {
                let (fast, general) = both(text.as_bytes(), dialect);
                if let Some(fast) = fast {
                    assert_eq!(format!("Ok(Some({fast}))"), general, "{dialect:?} {text}");
                    taken += 1;
                }
            }
        }
        // The usual shapes are taken (not every one left to the general path).
        assert!(taken > 100, "only {taken} taken");
    }

    /// Every data line of the corpus (one-line frames) and of the bench
    /// streams, if they are there.
    #[test]
    #[cfg_attr(miri, ignore = "reads the corpus")]
    fn agrees_with_the_general_path_on_the_corpus() {
        let mut streams = crate::testing::corpus_streams();
        let bench = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/bench-streams/mix-1mb.sse");
        streams.extend(std::fs::read(bench).ok());
        let mut taken = 0;
        for (i, text) in streams.iter().enumerate() {
            for line in text.split(|&b| b == b'\n') {
                let Some(payload) = line.strip_prefix(b"data: ") else {
                    continue;
                };
                for dialect in [Dialect::V1, Dialect::V0] {
                    if let (Some(fast), general) = both(payload, dialect) {
                        assert_eq!(format!("Ok(Some({fast}))"), general, "stream {i}");
                        taken += 1;
                    }
                }
            }
        }
        assert!(taken > 100, "only {taken} taken");
    }

    #[test]
    fn takes_the_usual_shapes() {
        for (text, dialect) in [
            (
                r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}"#,
                Dialect::V1,
            ),
            (
                r#"{"type":"TOOL_CALL_ARGS","timestamp":17,"toolCallId":"c","delta":"{\"a\""}"#,
                Dialect::V0,
            ),
            (
                r#"{"type":"REASONING_MESSAGE_CONTENT","delta":"","messageId":"r"}"#,
                Dialect::V1,
            ),
        ] {
            assert!(
                decode_delta(text.as_bytes(), dialect, Limits::new()).is_some(),
                "{text}"
            );
        }
        // V0 has no REASONING_* events; depth 0 refuses every object.
        let r = br#"{"type":"REASONING_MESSAGE_CONTENT","messageId":"r","delta":""}"#;
        assert!(decode_delta(r, Dialect::V0, Limits::new()).is_none());
        let t = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}"#;
        assert!(decode_delta(t, Dialect::V1, Limits { max_depth: 0 }).is_none());
    }
}
