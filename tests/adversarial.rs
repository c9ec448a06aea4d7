//! Adversarial inputs through the public API: extreme nesting, huge strings
//! and frames, corrupted and truncated streams, surrogate escapes, huge
//! numbers, duplicate keys, a million events, and streams made only of
//! framing noise. The fixed capacities, each at and one past its boundary,
//! are in `capacity.rs`.
//!
//! Every test asserts outcomes only (never timings), and keeps its test code
//! linear in the input size.

mod support;

use std::fmt::Write as _;

use support::record::{Outcome, run_sized, run_sized_with};
use support::{RUN_FINISHED, RUN_STARTED, end, sse, start};

use agui_stream::json::{self, DEFAULT_MAX_DEPTH, ErrorKind as JsonErrorKind, Limits, MAX_DEPTH};
use agui_stream::{
    Capacity, Config, DecodeError, Dialect, Error, ErrorKind, Event, EventType, FrameInfo,
    Pipeline, Policy, SchemaProblem, Stage, decode, encode, verify::RunPhase,
};

// ------------------------------------------------------------------ helpers

/// One SSE frame holding `json` on a single `data:` line.
fn frame(json: &str) -> Vec<u8> {
    frame_bytes(json.as_bytes())
}

fn frame_bytes(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    out
}

/// The error that stops `stream` in the default pipeline with a `buffer`-byte
/// frame buffer, pushed in `piece`-byte pieces, and its message.
fn first_error(stream: &[u8], buffer: usize, piece: usize) -> (Error, String) {
    let mut buf = vec![0u8; buffer];
    let mut pipeline = Pipeline::new(&mut buf, Config::new());
    let e = stream
        .chunks(piece)
        .try_for_each(|p| {
            pipeline
                .push(p, &mut |_: &Event<'_>, _: &FrameInfo| {})
                .map(drop)
        })
        .expect_err("the stream fails");
    let message = pipeline.message(&e).to_string();
    (e, message)
}

/// `event` encoded by the library's encoder.
fn encoded(event: &Event<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    encode(event, &mut out).expect("a Vec never fills");
    out
}

/// Default capacities, a 64 KiB buffer, the stream in one push.
fn run(stream: &[u8], config: Config) -> Outcome {
    run_sized::<32, 32, 2048>(stream, config, 1 << 16, 0)
}

/// The same, with pushes of `chunk` bytes.
fn run_chunked(stream: &[u8], config: Config, chunk: usize) -> Outcome {
    run_sized::<32, 32, 2048>(stream, config, 1 << 16, chunk)
}

fn v0() -> Config {
    Config::new().dialect(Dialect::V0)
}

/// `depth` nested arrays: `[[[…]]]`.
fn nested_arrays(depth: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 * depth);
    out.resize(depth, b'[');
    out.resize(2 * depth, b']');
    out
}

/// `depth` levels alternating objects and arrays: `{"k":[{"k":[…]}]}`.
fn nested_mixed(depth: usize) -> Vec<u8> {
    let mut open = Vec::with_capacity(3 * depth);
    let mut close = Vec::with_capacity(depth);
    for level in 0..depth {
        if level % 2 == 0 {
            open.extend_from_slice(br#"{"k":"#);
            close.push(b'}');
        } else {
            open.push(b'[');
            close.push(b']');
        }
    }
    if depth > 0 {
        open.push(b'0');
    }
    close.reverse();
    open.extend_from_slice(&close);
    open
}

fn snapshot_payload(value: &[u8]) -> Vec<u8> {
    let mut p = br#"{"type":"STATE_SNAPSHOT","snapshot":"#.to_vec();
    p.extend_from_slice(value);
    p.push(b'}');
    p
}

fn raw_event_payload(value: &[u8]) -> Vec<u8> {
    let mut p = br#"{"type":"CUSTOM","name":"n","value":1,"rawEvent":"#.to_vec();
    p.extend_from_slice(value);
    p.push(b'}');
    p
}

/// RUN_STARTED, then `payload`, then RUN_FINISHED; and the stream offset of
/// `payload`'s first byte.
fn in_run(payload: &[u8]) -> (Vec<u8>, u64) {
    let mut stream = frame(RUN_STARTED);
    let at = stream.len() as u64 + 6;
    stream.extend_from_slice(&frame_bytes(payload));
    stream.extend_from_slice(&frame(RUN_FINISHED));
    (stream, at)
}

// ------------------------------------------------- 1. nesting depth limits

/// Bytes of the payload before the nested value starts.
fn prefix_len(payload_fn: fn(&[u8]) -> Vec<u8>) -> usize {
    payload_fn(b"").len() - 1
}

#[test]
fn million_deep_snapshot_and_raw_event_are_depth_capacity_errors() {
    const DEEP: usize = 1_000_000;
    assert_eq!(DEFAULT_MAX_DEPTH, 1024);
    for (name, make, value) in [
        (
            "snapshot/arrays",
            snapshot_payload as fn(&[u8]) -> Vec<u8>,
            nested_arrays(DEEP),
        ),
        ("snapshot/mixed", snapshot_payload, nested_mixed(DEEP)),
        ("rawEvent/arrays", raw_event_payload, nested_arrays(DEEP)),
        ("rawEvent/mixed", raw_event_payload, nested_mixed(DEEP)),
    ] {
        let payload = make(&value);
        // The 1025th opening bracket (the event object is level 1) is where
        // the limit is hit.
        let nested_offset = if value[0] == b'[' {
            1023
        } else {
            // `{"k":` is 5 bytes, `[` is 1: level L (0-based) starts at
            // 5 * ceil(L/2) + floor(L/2).
            5 * 1023usize.div_ceil(2) + 1023 / 2
        };
        let json_offset = prefix_len(make) + nested_offset;
        assert!(matches!(value[nested_offset], b'[' | b'{'), "{name}");

        // The JSON layer alone.
        let e = json::validate(&payload, Limits::new()).unwrap_err();
        assert_eq!(e.kind, JsonErrorKind::TooDeep { limit: 1024 }, "{name}");
        assert_eq!(e.offset as usize, json_offset, "{name}");
        // decode().
        match decode(&payload, Dialect::V1, Limits::new()) {
            Err(DecodeError::Json(j)) => {
                assert_eq!(j.kind, JsonErrorKind::TooDeep { limit: 1024 }, "{name}")
            }
            other => panic!("{name}: {other:?}"),
        }
        // The pipeline, in one push and in 64 KiB pushes (the frame then
        // spans pushes, so it needs a buffer that holds it).
        let (stream, payload_at) = in_run(&payload);
        for dialect in [Dialect::V1, Dialect::V0] {
            for chunk in [0, 1 << 16] {
                let out = run_sized::<32, 32, 2048>(
                    &stream,
                    Config::new().dialect(dialect),
                    payload.len() + 16,
                    chunk,
                );
                let e = out.err();
                assert_eq!(
                    e.kind,
                    ErrorKind::Capacity(Capacity::JsonDepth { limit: 1024 }),
                    "{name} {dialect:?} chunk {chunk}"
                );
                assert!(e.is_capacity());
                assert_eq!(e.stage, Stage::Json);
                assert_eq!(e.frame, 1, "{name}");
                assert_eq!(e.offset, payload_at + json_offset as u64, "{name}");
                assert_eq!(out.events.len(), 1, "only RUN_STARTED was delivered");
            }
        }
    }
}

#[test]
fn nesting_exactly_at_the_limit_is_accepted_and_one_more_is_not() {
    // 1024 levels counting the event object itself: the value may nest
    // 1023 deep.
    for (name, make) in [
        ("snapshot", snapshot_payload as fn(&[u8]) -> Vec<u8>),
        ("rawEvent", raw_event_payload),
    ] {
        for (value_at, value_over) in [
            (nested_arrays(1023), nested_arrays(1024)),
            (nested_mixed(1023), nested_mixed(1024)),
        ] {
            let at = make(&value_at);
            let over = make(&value_over);
            assert!(json::validate(&at, Limits::new()).is_ok(), "{name}");
            assert_eq!(
                json::validate(&over, Limits::new()).unwrap_err().kind,
                JsonErrorKind::TooDeep { limit: 1024 },
                "{name}"
            );
            for dialect in [Dialect::V1, Dialect::V0] {
                let (stream, _) = in_run(&at);
                let out = run(&stream, Config::new().dialect(dialect));
                let s = out.ok();
                assert_eq!(s.events, 3, "{name} {dialect:?}");
                assert!(s.is_complete());
                // The encoder re-emits the 1023-deep value intact (it walks
                // tokens, no recursion).
                let (ty, json, _) = &out.events[1];
                assert!(matches!(ty, EventType::StateSnapshot | EventType::Custom));
                let needle = &value_at[..value_at.len() / 2];
                assert!(
                    json.windows(needle.len()).any(|w| w == needle),
                    "{name}: encoded value lost its nesting"
                );
                let (stream, _) = in_run(&over);
                let e = run(&stream, Config::new().dialect(dialect)).err();
                assert_eq!(
                    e.kind,
                    ErrorKind::Capacity(Capacity::JsonDepth { limit: 1024 })
                );
            }
        }
    }
}

/// A frame larger than the buffer is checked to the same depth: its
/// levels past 64 are kept in the buffer's last 128 bytes.
#[test]
fn frames_larger_than_the_buffer_are_checked_to_the_same_depth() {
    let whole = |stream: &[u8], piece: usize| {
        run_sized::<32, 32, 2048>(stream, Config::new(), 1 << 24, piece)
    };
    let small =
        |stream: &[u8], piece: usize| run_sized::<32, 32, 2048>(stream, Config::new(), 1024, piece);
    for value in [nested_arrays(1023), nested_mixed(1023)] {
        let (stream, _) = in_run(&snapshot_payload(&value));
        for piece in [7, 1460] {
            let out = small(&stream, piece);
            assert_eq!(out.ok().events, 3, "pushes of {piece}");
            assert!(out.events[1].2.spilled);
        }
        // One level more, and a bracket that does not match at depth 900:
        // the verdict and position of a buffer that holds the frame.
        let mut broken = value.clone();
        let close = broken.len() - 900;
        broken[close] = if broken[close] == b']' { b'}' } else { b']' };
        for bad in [
            snapshot_payload(&nested_arrays(1024)),
            snapshot_payload(&broken),
        ] {
            let (stream, _) = in_run(&bad);
            let want = whole(&stream, 1460).err();
            for piece in [7, 1460] {
                let got = small(&stream, piece).err();
                assert_eq!(got, want, "pushes of {piece}");
            }
        }
    }
}

#[test]
fn depth_limit_is_clamped_to_the_bit_stack() {
    // Any larger limit is clamped to MAX_DEPTH; a million levels still fail
    // cleanly.
    assert_eq!(MAX_DEPTH, 4096);
    let huge = Limits {
        max_depth: usize::MAX,
    };
    assert!(json::validate(&nested_arrays(MAX_DEPTH), huge).is_ok());
    let e = json::validate(&nested_arrays(MAX_DEPTH + 1), huge).unwrap_err();
    assert_eq!(
        (e.kind, e.offset),
        (
            JsonErrorKind::TooDeep {
                limit: MAX_DEPTH as u16
            },
            MAX_DEPTH as u32
        )
    );
    let e = json::validate(&nested_arrays(1_000_000), huge).unwrap_err();
    assert_eq!(
        e.kind,
        JsonErrorKind::TooDeep {
            limit: MAX_DEPTH as u16
        }
    );

    let config = Config::new().limits(huge);
    let (stream, _) = in_run(&snapshot_payload(&nested_arrays(1_000_000)));
    let e = run(&stream, config).err();
    assert_eq!(
        e.kind,
        ErrorKind::Capacity(Capacity::JsonDepth {
            limit: MAX_DEPTH as u32
        })
    );
    let (stream, _) = in_run(&snapshot_payload(&nested_arrays(MAX_DEPTH - 1)));
    assert_eq!(run(&stream, config).ok().events, 3);

    // A zero limit admits scalars only.
    let zero = Limits { max_depth: 0 };
    assert!(json::validate(b" 1 ", zero).is_ok());
    assert_eq!(
        json::validate(b"{}", zero).unwrap_err().kind,
        JsonErrorKind::TooDeep { limit: 0 }
    );
}

// --------------------------------------------------- 2. a 10 MB string

const TEN_MB: usize = 10 * 1024 * 1024;

/// `len` bytes of printable ASCII text (no quote, no backslash).
fn text(len: usize) -> Vec<u8> {
    const PATTERN: &[u8] = b"The quick brown fox jumps over the lazy dog 0123456789. ";
    let mut out = PATTERN.repeat(len / PATTERN.len() + 1);
    out.truncate(len);
    out
}

#[test]
fn ten_megabyte_delta_pushed_whole_is_accepted_without_a_buffer() {
    let delta = text(TEN_MB);
    let mut content = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""#.to_vec();
    content.extend_from_slice(&delta);
    content.extend_from_slice(br#""}"#);
    let mut stream = sse(&[
        RUN_STARTED,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m"}"#,
    ]);
    stream.extend_from_slice(&frame_bytes(&content));
    stream.extend_from_slice(&sse(&[
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
        RUN_FINISHED,
    ]));

    // Every frame lies inside the one push, so none is copied: an empty
    // frame buffer suffices.
    let mut no_buffer = [0u8; 0];
    let mut pipeline = Pipeline::new(&mut no_buffer, Config::new());
    let mut seen = Vec::new();
    let mut decoded_len = None;
    let mut sink = |ev: &Event<'_>, f: &FrameInfo| {
        seen.push(ev.event_type());
        if ev.event_type() == EventType::TextMessageContent {
            let d = ev.delta().expect("delta");
            let plain = d.as_str().expect("a plain delta is borrowed as is");
            assert_eq!(plain.len(), TEN_MB);
            assert!(plain.as_bytes() == delta.as_slice(), "delta text differs");
            let mut out = vec![0u8; TEN_MB];
            decoded_len = Some(d.unescape_into(&mut out).expect("fits").as_bytes().len());
            let json = encoded(ev);
            assert_eq!(json.len(), TEN_MB + content.len() - delta.len());
            assert!(f.terminated && f.original);
        }
    };
    pipeline.push(&stream, &mut sink).unwrap();
    let s = pipeline.finish(&mut sink).unwrap();
    assert_eq!(decoded_len, Some(TEN_MB));
    assert_eq!(s.events, 5);
    assert_eq!(s.bytes, stream.len() as u64);
    assert!(s.is_complete());
    assert_eq!(
        seen,
        [
            EventType::RunStarted,
            EventType::TextMessageStart,
            EventType::TextMessageContent,
            EventType::TextMessageEnd,
            EventType::RunFinished,
        ]
    );

    // decode() directly.
    let ev = decode(&content, Dialect::V1, Limits::new())
        .unwrap()
        .unwrap();
    assert_eq!(ev.delta().unwrap().raw().len(), TEN_MB);
}

// -------------------------------------- 3. a 10 MB frame, a 4 KiB buffer

#[test]
fn ten_megabyte_frame_through_a_small_buffer_is_checked_as_it_streams() {
    const BUFFER: usize = 4096;
    const PIECE: usize = 64 * 1024;
    let delta = text(TEN_MB);
    let mut content = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""#.to_vec();
    content.extend_from_slice(&delta);
    content.extend_from_slice(br#""}"#);
    let mut stream = sse(&[
        RUN_STARTED,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m"}"#,
    ]);
    let frame2_start = stream.len() as u64;
    stream.extend_from_slice(&frame_bytes(&content));
    stream.extend_from_slice(&sse(&[
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
        RUN_FINISHED,
    ]));

    // The frame is checked as it streams past; the event shows its delta
    // (which no rule reads) as a stand-in, and says so.
    let mut buf = vec![0u8; BUFFER];
    let mut pipeline = Pipeline::new(&mut buf, Config::new());
    let mut seen = Vec::new();
    let mut sink = |ev: &Event<'_>, info: &FrameInfo| {
        seen.push((ev.event_type(), ev.delta().map(|d| d.raw().len()), *info));
    };
    for piece in stream.chunks(PIECE) {
        pipeline.push(piece, &mut sink).unwrap();
    }
    let summary = pipeline.finish(&mut sink).unwrap();
    assert!(summary.is_complete());
    assert_eq!(seen.len(), 5);
    let (ty, delta_len, info) = seen[2];
    assert_eq!((ty, delta_len), (EventType::TextMessageContent, Some(0)));
    assert!(
        info.spilled && info.stand_ins.contains(agui_stream::Key::Delta),
        "{info:?}"
    );
    assert_eq!(info.stand_ins.keys().count(), 1);
    assert_eq!((info.index, info.start), (2, frame2_start));
    assert_eq!(info.end, frame2_start + frame_bytes(&content).len() as u64);
    assert!(
        seen.iter()
            .enumerate()
            .all(|(i, s)| s.2.spilled == (i == 2))
    );

    // The verdict is the reference's: without its start, the content is
    // a lifecycle violation.
    let mut orphan = frame(RUN_STARTED);
    orphan.extend_from_slice(&frame_bytes(&content));
    let (e, message) = first_error(&orphan, BUFFER, PIECE);
    assert_eq!((e.stage, e.frame), (Stage::Verify, 1), "{e}");
    assert_eq!(
        message,
        "Cannot send 'TEXT_MESSAGE_CONTENT' event: No active text message found with ID 'm'. Start a text message with 'TEXT_MESSAGE_START' first."
    );

    // A member a rule reads (an id) that does not fit: the verdict needs
    // it, so the frame is the buffer's capacity, after its end.
    let mut long_id = br#"{"type":"TEXT_MESSAGE_START","messageId":""#.to_vec();
    long_id.extend_from_slice(&delta);
    long_id.extend_from_slice(br#""}"#);
    let mut stream = frame(RUN_STARTED);
    let frame1_start = stream.len() as u64;
    stream.extend_from_slice(&frame_bytes(&long_id));
    let pieces = stream.len().div_ceil(PIECE);
    let mut buf = vec![0u8; BUFFER];
    let mut pipeline = Pipeline::new(&mut buf, Config::new());
    let mut events = 0u64;
    let mut sink = |_: &Event<'_>, _: &FrameInfo| events += 1;
    let mut failure = None;
    for (i, piece) in stream.chunks(PIECE).enumerate() {
        if let Err(e) = pipeline.push(piece, &mut sink) {
            failure = Some((i, e));
            break;
        }
    }
    let (piece, e) = failure.expect("the id cannot fit");
    assert_eq!(piece, pieces - 1, "the verdict comes at the frame's end");
    assert_eq!(
        e.kind,
        ErrorKind::Capacity(Capacity::FrameBuffer {
            capacity: BUFFER as u32
        })
    );
    assert!(e.is_capacity());
    assert_eq!(
        (e.stage, e.frame),
        (Stage::Sse, 1),
        "frame 0 (RUN_STARTED) was fine"
    );
    // The first payload byte that did not fit.
    assert_eq!(e.offset, frame1_start + 6 + BUFFER as u64);
    // Sticky.
    assert_eq!(pipeline.push(b"data: {}\n\n", &mut sink), Err(e));
    assert_eq!(pipeline.finish(&mut sink), Err(e));
    assert_eq!(events, 1);
    drop(pipeline);
    assert_eq!(buf.len(), BUFFER, "the caller's buffer is all there is");

    // Monitor: the frame is a capacity violation and the stream goes on.
    let mut buf = vec![0u8; BUFFER];
    let mut pipeline = Pipeline::new(&mut buf, Config::new()).policy(Policy::Monitor);
    let mut types = Vec::new();
    let mut sink = |ev: &Event<'_>, _: &FrameInfo| types.push(ev.event_type());
    stream.extend_from_slice(&frame(RUN_FINISHED));
    for piece in stream.chunks(PIECE) {
        pipeline.push(piece, &mut sink).unwrap();
    }
    let s = pipeline.finish(&mut sink).unwrap();
    assert_eq!(s.violations, 1);
    assert_eq!(types, [EventType::RunStarted, EventType::RunFinished]);

    // A syntax error in a frame that spilled gets the reference's verdict,
    // at its byte, wherever the buffer overflowed.
    let mut broken = content.clone();
    let at = broken.len() / 2;
    broken[at] = 0x01;
    let mut stream = frame(RUN_STARTED);
    stream.extend_from_slice(&frame_bytes(&broken));
    let (e, message) = first_error(&stream, BUFFER, PIECE);
    assert_eq!(
        e.kind,
        ErrorKind::Json(json::Error {
            kind: JsonErrorKind::ControlCharacter,
            offset: at as u32
        })
    );
    assert_eq!(
        (e.frame, e.offset),
        (1, (frame(RUN_STARTED).len() + 6 + at) as u64)
    );
    assert_eq!(
        message,
        format!("Bad control character in string literal in JSON at position {at}")
    );

    // The same 4 KiB buffer holds a spanning payload of exactly 4096 bytes,
    // and that payload is in the caller's buffer afterwards; of 4097, the
    // stand-in is.
    for (extra, fits) in [(0usize, true), (1, false)] {
        let head = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""#;
        let fill = BUFFER + extra - head.len() - 2;
        let mut payload = head.to_vec();
        payload.extend_from_slice(&text(fill));
        payload.extend_from_slice(br#""}"#);
        assert_eq!(payload.len(), BUFFER + extra);
        let mut stream = sse(&[
            RUN_STARTED,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m"}"#,
        ]);
        stream.extend_from_slice(&frame_bytes(&payload));
        let mut buf = vec![0u8; BUFFER];
        let mut pipeline = Pipeline::new(&mut buf, Config::new());
        let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
        let result = stream
            .chunks(PIECE.min(stream.len() - 100))
            .try_for_each(|piece| pipeline.push(piece, &mut sink).map(drop))
            .and_then(|_| pipeline.finish(&mut sink));
        drop(pipeline);
        assert_eq!(result.unwrap().events, 3);
        if fits {
            assert_eq!(buf, payload, "the spanning frame was kept in our buffer");
        } else {
            let stand_in = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}"#;
            assert_eq!(&buf[..stand_in.len()], stand_in);
        }
    }
}

/// A 64 MB state snapshot, one frame, through a 1 KiB buffer: the verdict
/// is the reference's (accepted) and the snapshot is a stand-in (message
/// histories: `tests/spilled_arrays.rs`).
#[test]
#[cfg_attr(miri, ignore = "64 MB")]
fn sixty_four_megabyte_state_snapshot_through_a_one_kilobyte_buffer() {
    const SIZE: usize = 64 << 20;
    const BUFFER: usize = 1024;
    let item = br#"{"role":"user","text":"lorem ipsum dolor sit amet, \u00e9 \"quoted\" [{,:}]","n":[1,2.5,true,null]}"#;
    let mut state = br#"{"type":"STATE_SNAPSHOT","snapshot":{"items":["#.to_vec();
    while state.len() < SIZE {
        state.extend_from_slice(item);
        state.push(b',');
    }
    state.extend_from_slice(b"0]}}");
    let mut stream = frame(RUN_STARTED);
    stream.extend_from_slice(&frame_bytes(&state));
    stream.extend_from_slice(&frame(RUN_FINISHED));
    let mut buf = vec![0u8; BUFFER];
    let mut pipeline = Pipeline::new(&mut buf, Config::new());
    let mut seen = Vec::new();
    let mut sink = |ev: &Event<'_>, info: &FrameInfo| {
        let snapshot = ev
            .get(agui_stream::Key::Snapshot)
            .map(|v| v.as_bytes().to_vec());
        seen.push((ev.event_type(), snapshot, info.stand_ins));
    };
    for piece in stream.chunks(64 * 1024) {
        pipeline.push(piece, &mut sink).unwrap();
    }
    assert!(pipeline.finish(&mut sink).unwrap().is_complete());
    assert_eq!(seen.len(), 3);
    let (ty, snapshot, stand_ins) = &seen[1];
    assert_eq!(*ty, EventType::StateSnapshot);
    assert_eq!(snapshot.as_deref(), Some(&b"{}"[..]));
    assert!(stand_ins.contains(agui_stream::Key::Snapshot));
}

// ------------------------------------------- 4. invalid UTF-8 everywhere

/// What replacing one byte with 0xFF must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// The `data` field name is broken: the line is an unknown field, no frame.
    NoFrame,
    /// Outside any string: a JSON syntax error.
    Json,
    /// Inside a member name: the member is unknown, a required one missing.
    Schema,
    /// Inside the `type` value: an unknown type (V1 ignores it).
    UnknownType,
    /// Inside the value of this member: accepted, the byte decodes to U+FFFD.
    Value(&'static str),
    /// The blank line's LF: the frame is dispatched unterminated, accepted.
    Unterminated,
}

#[test]
fn invalid_utf8_at_every_byte_of_a_frame() {
    use Expect::*;
    let parts: &[(&str, Expect)] = &[
        ("data", NoFrame),
        (":", NoFrame),
        (" ", Json),
        ("{", Json),
        ("\"", Json),
        ("type", Schema),
        ("\"", Json),
        (": ", Json),
        ("\"", Json),
        ("RUN_STARTED", UnknownType),
        ("\"", Json),
        (",", Json),
        ("\"", Json),
        ("threadId", Schema),
        ("\"", Json),
        (":", Json),
        ("\"", Json),
        ("thréad", Value("threadId")),
        ("\"", Json),
        (",", Json),
        ("\"", Json),
        ("runId", Schema),
        ("\"", Json),
        (":", Json),
        ("\"", Json),
        ("run", Value("runId")),
        ("\"", Json),
        ("}", Json),
        ("\n", Json),
        ("\n", Unterminated),
    ];
    let mut stream = Vec::new();
    let mut expect = Vec::new();
    // Where each value lies.
    let mut ranges = Vec::new();
    for (text, e) in parts {
        if let Value(field) = e {
            ranges.push((*field, stream.len()..stream.len() + text.len()));
        }
        stream.extend_from_slice(text.as_bytes());
        expect.extend(std::iter::repeat_n(*e, text.len()));
    }
    // The original is valid.
    assert_eq!(run(&stream, Config::new()).ok().events, 1);

    for i in 0..stream.len() {
        let mut bad = stream.clone();
        bad[i] = 0xFF;
        let ctx = format!(
            "byte {i} ({:?}) of {:?}",
            expect[i],
            String::from_utf8_lossy(&stream)
        );
        for chunk in [0, 1, 7] {
            let out = run_chunked(&bad, Config::new(), chunk);
            match expect[i] {
                NoFrame => {
                    let s = out.ok();
                    assert_eq!((s.frames, s.events), (0, 0), "{ctx}");
                }
                Json => {
                    let e = out.err();
                    assert!(matches!(e.kind, ErrorKind::Json(_)), "{ctx}: {e:?}");
                    assert_eq!((e.stage, e.frame), (Stage::Json, 0), "{ctx}");
                    assert!(
                        e.offset >= i as u64 && e.offset <= bad.len() as u64,
                        "{ctx}: offset {}",
                        e.offset
                    );
                }
                Schema => {
                    let e = out.err();
                    assert!(matches!(e.kind, ErrorKind::Schema(_)), "{ctx}: {e:?}");
                    assert_eq!((e.stage, e.frame), (Stage::Schema, 0), "{ctx}");
                }
                UnknownType => {
                    let s = out.ok();
                    assert_eq!((s.frames, s.events), (1, 0), "{ctx}");
                }
                Value(field) => {
                    let s = out.ok();
                    assert_eq!(s.events, 1, "{ctx}");
                    // The id decodes as the WHATWG decoder (= from_utf8_lossy)
                    // decodes the bytes, and is written back that way.
                    let json = &out.events[0].1;
                    let text = String::from_utf8(json.clone()).expect("encoder writes UTF-8");
                    let (_, range) = ranges.iter().find(|(f, _)| *f == field).unwrap();
                    let lossy = String::from_utf8_lossy(&bad[range.clone()]);
                    assert!(lossy.contains('\u{FFFD}'), "{ctx}");
                    let want = format!("\"{field}\":\"{lossy}\"");
                    assert!(text.contains(&want), "{ctx}: {text} lacks {want}");
                }
                Unterminated => {
                    let s = out.ok();
                    assert_eq!(s.events, 1, "{ctx}");
                    assert!(s.unterminated_frame, "{ctx}");
                }
            }
        }
        // V0: an unknown type is a schema error; nothing panics.
        let out = run(&bad, v0());
        if expect[i] == UnknownType {
            let e = out.err();
            assert!(
                matches!(e.kind, ErrorKind::Schema(s) if s.problem == SchemaProblem::UnknownType),
                "{ctx}: {e:?}"
            );
        }
    }
}

#[test]
fn invalid_utf8_in_values_decodes_to_replacement_characters() {
    // A few explicit cases: a lone continuation byte, a truncated sequence,
    // an encoded surrogate, an overlong form.
    let cases: &[(&[u8], &str)] = &[
        (b"a\xffb", "a\u{FFFD}b"),
        (b"\xe2\x82", "\u{FFFD}"),
        (b"\xed\xa0\x80", "\u{FFFD}\u{FFFD}\u{FFFD}"),
        (b"\xc0\xaf!", "\u{FFFD}\u{FFFD}!"),
        (b"\xf0\x9f\x98\x80\xf0\x9f\x98", "\u{1F600}\u{FFFD}"),
    ];
    for (raw, text) in cases {
        let mut payload = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""#.to_vec();
        payload.extend_from_slice(raw);
        payload.extend_from_slice(br#""}"#);
        let mut stream = sse(&[
            RUN_STARTED,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m"}"#,
        ]);
        stream.extend_from_slice(&frame_bytes(&payload));
        let out = run(&stream, Config::new());
        assert_eq!(out.ok().events, 3, "{raw:?}");
        let want = format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{text}"}}"#);
        assert_eq!(out.encoded()[2], want, "{raw:?}");
        let ev = decode(&payload, Dialect::V1, Limits::new())
            .unwrap()
            .unwrap();
        assert_eq!(ev.delta().unwrap().to_string(), *text);
        assert!(ev.delta().unwrap().eq_str(text));
    }
}

#[test]
fn every_byte_value_at_every_position_never_panics() {
    let stream = frame(r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m\u00e9","delta":"a\"b"}"#);
    for i in 0..stream.len() {
        for b in 0..=255u8 {
            let mut bad = stream.clone();
            bad[i] = b;
            let runs = [
                (Config::new(), Policy::Stop),
                (v0(), Policy::Stop),
                (Config::new(), Policy::Monitor),
            ];
            for (config, policy) in runs {
                let _ = run_sized_with::<32, 32, 2048>(&bad, config, policy, 1 << 16, 0);
            }
        }
    }
}

// ---------------------------------------------- 5. truncation everywhere

/// A valid stream exercising the framer's corners: comments, `event`/`id`
/// fields, CRLF and CR line ends, multi-line data, escapes, chunks. Returns
/// it with, per frame, the offset at which its blank line dispatches it.
fn rich_stream() -> (Vec<u8>, Vec<usize>) {
    // (lines of the block, the blank line ending it)
    let blocks: &[(&str, &str)] = &[
        (
            ": hello\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n",
            "\n",
        ),
        (
            "event: x\r\nid: 7\r\ndata: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\\u00e9\",\"role\":\"assistant\"}\r\n",
            "\r\n",
        ),
        (
            "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\ndata:\"messageId\":\"m\\u00e9\",\n: interleaved comment\ndata: \"delta\":\"h\\\"i \\ud83d\\ude00 \u{e9}\"}\n",
            "\n",
        ),
        (
            "data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"mé\",\"timestamp\":1700000000000}\r",
            "\r",
        ),
        (
            "data: {\"type\":\"TOOL_CALL_CHUNK\",\"toolCallId\":\"c1\",\"toolCallName\":\"f\",\"delta\":\"{\\\"a\\\":\"}\n",
            "\n",
        ),
        (
            "data: {\"type\":\"TOOL_CALL_CHUNK\",\"toolCallId\":\"c1\",\"delta\":\"1}\"}\n",
            "\n",
        ),
        (
            "data: {\"type\":\"STATE_SNAPSHOT\",\"snapshot\":{\"a\":[1,-2.5e3,true,false,null,\"x\",{}]}}\n",
            "\n",
        ),
        (
            "data:{\"type\":\"CUSTOM\",\"name\":\"n\",\"value\":[]}\n",
            "\n",
        ),
        (
            "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n",
            "\n",
        ),
    ];
    let mut stream = Vec::new();
    let mut dispatch = Vec::new();
    for (lines, blank) in blocks {
        stream.extend_from_slice(lines.as_bytes());
        dispatch.push(stream.len() + 1);
        stream.extend_from_slice(blank.as_bytes());
    }
    (stream, dispatch)
}

#[test]
fn truncation_at_every_byte_errs_only_in_the_cut_frame() {
    let (stream, dispatch) = rich_stream();
    for dialect in [Dialect::V1, Dialect::V0] {
        let config = Config::new().dialect(dialect);
        let full = run(&stream, config);
        let s = full.ok();
        assert!(s.is_complete(), "{dialect:?}: {s:?}");
        assert_eq!(s.frames, dispatch.len() as u64);
        // Chunk expansion: START + ARGS, ARGS; the RUN_FINISHED closes the
        // tool call lane with an END.
        assert_eq!(full.events.len(), dispatch.len() + 2, "{dialect:?}");

        for n in 0..=stream.len() {
            let prefix = &stream[..n];
            // The frame the cut falls in: every frame dispatched before it.
            let cut = dispatch.iter().filter(|&&d| d <= n).count() as u64;
            for chunk in [0, 3] {
                let out = run_chunked(prefix, config, chunk);
                let ctx = format!("{dialect:?}, prefix of {n} bytes, pushes of {chunk}");
                match &out.result {
                    Ok(s) => {
                        assert!(s.frames == cut || s.frames == cut + 1, "{ctx}: {s:?}");
                        assert_eq!(s.bytes, n as u64, "{ctx}");
                    }
                    Err(e) => {
                        assert_eq!(e.frame, cut, "{ctx}: {e:?}");
                        assert_eq!(e.stage, Stage::Json, "{ctx}: {e:?}");
                        // A syntax error where the cut text ends (V8 words
                        // it after what was due there): the offending byte
                        // is the end, or the frame's first byte for a
                        // multi-line frame.
                        assert!(matches!(e.kind, ErrorKind::Json(_)), "{ctx}: {e:?}");
                        assert!(e.offset <= n as u64, "{ctx}: {e:?}");
                    }
                }
                // What was delivered is what the whole stream delivers first.
                assert!(out.events.len() <= full.events.len(), "{ctx}");
                for (got, want) in out.events.iter().zip(&full.events) {
                    assert_eq!((got.0, &got.1), (want.0, &want.1), "{ctx}");
                    assert_eq!(got.2.index, want.2.index, "{ctx}");
                    assert_eq!(got.2.start, want.2.start, "{ctx}");
                }
                assert!(
                    out.events.iter().all(|(_, _, f)| f.index <= cut),
                    "{ctx}: an event from beyond the cut"
                );
            }
        }
    }
}

/// `Error::offset`: "For JSON errors in a single-`data`-line frame it is the
/// offending byte; otherwise the frame's first byte."
#[test]
fn json_error_offsets_in_multi_line_frames_are_the_frame_start() {
    let head = frame(RUN_STARTED);
    let frame_start = head.len() as u64;
    let deep = String::from_utf8(nested_arrays(2000)).unwrap();
    for tail in [
        "data: {\"type\":\n: comment\ndata: \"CUSTOM\",x}\n\n".to_owned(),
        "data: {\"type\":\r\ndata: \"CUSTOM\",x}\r\n\r\n".to_owned(),
        format!("data: {{\"type\":\"STATE_SNAPSHOT\",\ndata: \"snapshot\":{deep}}}\n\n"),
    ] {
        let stream = [head.clone(), tail.clone().into_bytes()].concat();
        let e = run(&stream, Config::new()).err();
        assert_eq!(e.frame, 1);
        assert_eq!(e.offset, frame_start, "{e:?} for {tail:?}");
    }
    // (Single-line frames do point at the offending byte.)
    let stream = [head, b"data: {\"type\":\"CUSTOM\",x}\n\n".to_vec()].concat();
    let e = run(&stream, Config::new()).err();
    assert_eq!(e.offset, frame_start + 6 + 17);
}

// ------------------------------------------------ 6. surrogate escapes

#[test]
fn lone_and_reversed_surrogates_in_ids_and_deltas() {
    let stream = sse(&[
        RUN_STARTED,
        // A lone high surrogate as id; the same id spelled in upper case.
        r#"{"type":"TEXT_MESSAGE_START","messageId":"\ud800"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"\uD800","delta":"\udc00"}"#,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"\ud800"}"#,
        // Reversed: low then high.
        r#"{"type":"TEXT_MESSAGE_START","messageId":"\udc00\ud800"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"\udc00\ud800","delta":"\ud83d\ude00"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"\udc00\ud800","delta":"x\ud800\u0041\uD83D\uDE00\udfff"}"#,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"\udc00\ud800"}"#,
        // A pair as id, closed by the same text written raw.
        r#"{"type":"TEXT_MESSAGE_START","messageId":"\ud83d\ude00"}"#,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"😀"}"#,
        // A tool call with a lone surrogate id.
        r#"{"type":"TOOL_CALL_START","toolCallId":"\udfff","toolCallName":"f\ud800"}"#,
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"\uDFFF","delta":"\udbff"}"#,
        r#"{"type":"TOOL_CALL_END","toolCallId":"\udfff"}"#,
        RUN_FINISHED,
    ]);
    for dialect in [Dialect::V1, Dialect::V0] {
        let out = run(&stream, Config::new().dialect(dialect));
        let s = out.ok();
        assert_eq!(s.events, 14, "{dialect:?}");
        assert!(s.is_complete());
        let lines = out.encoded();
        let role = match dialect {
            Dialect::V1 => "",
            Dialect::V0 => r#","role":"assistant""#,
        };
        let want = [
            format!(r#"{{"type":"TEXT_MESSAGE_START","messageId":"\ud800"{role}}}"#),
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"\ud800","delta":"\udc00"}"#.to_owned(),
            r#"{"type":"TEXT_MESSAGE_END","messageId":"\ud800"}"#.to_owned(),
            format!(r#"{{"type":"TEXT_MESSAGE_START","messageId":"\udc00\ud800"{role}}}"#),
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"\udc00\ud800","delta":"😀"}"#.to_owned(),
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"\udc00\ud800","delta":"x\ud800A😀\udfff"}"#.to_owned(),
            r#"{"type":"TEXT_MESSAGE_END","messageId":"\udc00\ud800"}"#.to_owned(),
            format!(r#"{{"type":"TEXT_MESSAGE_START","messageId":"😀"{role}}}"#),
            r#"{"type":"TEXT_MESSAGE_END","messageId":"😀"}"#.to_owned(),
            r#"{"type":"TOOL_CALL_START","toolCallId":"\udfff","toolCallName":"f\ud800"}"#
                .to_owned(),
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"\udfff","delta":"\udbff"}"#.to_owned(),
            r#"{"type":"TOOL_CALL_END","toolCallId":"\udfff"}"#.to_owned(),
        ];
        assert_eq!(&lines[1..13], &want[..], "{dialect:?}");
    }
}

/// Every high surrogate paired with the lowest and highest low surrogate
/// decodes to the code point `char::decode_utf16` gives (JSON.parse agrees).
#[test]
fn every_surrogate_pair_decodes_to_its_code_point() {
    let mut wrong = Vec::new();
    for hi in 0xD800u16..=0xDBFF {
        for lo in [0xDC00u16, 0xDE00, 0xDFFF] {
            let want = char::decode_utf16([hi, lo]).next().unwrap().unwrap();
            for raw in [
                format!(r"\u{hi:04x}\u{lo:04x}"),
                format!(r"\u{hi:04X}\u{lo:04X}"),
            ] {
                let s = agui_stream::JsonStr::from_escaped(raw.as_bytes());
                let got: Vec<u32> = s.code_points().collect();
                if got != [u32::from(want)] {
                    wrong.push((raw, got, want));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of 6144 pairs decode wrongly, e.g. {:x?}",
        wrong.len(),
        &wrong[..wrong.len().min(3)]
    );

    // Through the pipeline: the escaped and the raw spelling of U+20000 and
    // U+10FFFF are one id, and the encoder writes the raw character.
    let stream = sse(&[
        RUN_STARTED,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"\ud840\udc00"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"𠀀","delta":"\uDBFF\uDFFF"}"#,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"𠀀"}"#,
        RUN_FINISHED,
    ]);
    let out = run(&stream, Config::new());
    assert_eq!(out.ok().events, 5);
    assert_eq!(
        out.encoded()[2],
        "{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"\u{20000}\",\"delta\":\"\u{10FFFF}\"}"
    );
}

#[test]
fn a_lone_surrogate_is_not_its_replacement_nor_its_wtf8_bytes() {
    // JavaScript strings: "\ud800" differs from "\ufffd" and from the three
    // bytes ED A0 80 (invalid UTF-8, decoded as three U+FFFD).
    for end in [
        br#"{"type":"TEXT_MESSAGE_END","messageId":"\ufffd"}"#.to_vec(),
        b"{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"\xed\xa0\x80\"}".to_vec(),
        b"{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"\xef\xbf\xbd\"}".to_vec(),
    ] {
        let mut stream = sse(&[
            RUN_STARTED,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"\ud800"}"#,
        ]);
        stream.extend_from_slice(&frame_bytes(&end));
        let e = run(&stream, Config::new()).err();
        assert_eq!((e.stage, e.frame), (Stage::Verify, 2), "{e:?}");
        assert!(matches!(e.kind, ErrorKind::Verify { .. }));
    }
    // …while a raw U+FFFD and the three invalid bytes are the same text.
    let stream = [
        frame(RUN_STARTED),
        frame(r#"{"type":"TEXT_MESSAGE_START","messageId":"\ufffd\ufffd\ufffd"}"#),
        frame_bytes(b"{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"\xed\xa0\x80\"}"),
    ]
    .concat();
    assert_eq!(run(&stream, Config::new()).ok().events, 3);
}

// ---------------------------------------------- 7. 10,000-digit numbers

#[test]
fn ten_thousand_digit_numbers() {
    let nines = "9".repeat(10_000);
    let one_long = format!("1{}e-10000", "0".repeat(10_000)); // exactly 1
    let almost_one = format!("1.{}1", "0".repeat(10_000)); // rounds to 1
    let tiny = format!("0.{}1", "0".repeat(10_000)); // underflows to 0: an integer
    let half = format!("0.5{}", "0".repeat(10_000)); // not an integer
    let huge_exp = format!("1e{}", "9".repeat(10_000)); // overflows
    let neg = format!("-{nines}"); // -Infinity
    let neg_zero = format!("-{nines}.{nines}e-{nines}"); // -0: an integer

    // As CUSTOM `value` (any JSON): accepted in both dialects, copied as written.
    for n in [
        &nines,
        &one_long,
        &almost_one,
        &tiny,
        &half,
        &huge_exp,
        &neg,
        &neg_zero,
    ] {
        let ev = format!(r#"{{"type":"CUSTOM","name":"n","value":{n}}}"#);
        for dialect in [Dialect::V1, Dialect::V0] {
            let out = run(&sse(&[RUN_STARTED, &ev]), Config::new().dialect(dialect));
            assert_eq!(out.ok().events, 2, "{dialect:?}");
            assert_eq!(out.encoded()[1], ev);
        }
    }

    // As `timestamp`: V1 wants a safe integer, V0 any number.
    let with_ts = |n: &str| {
        sse(&[
            RUN_STARTED.to_owned(),
            format!(r#"{{"type":"CUSTOM","name":"n","value":1,"timestamp":{n}}}"#),
        ])
    };
    for n in [&nines, &half, &huge_exp, &neg] {
        let e = run(&with_ts(n), Config::new()).err();
        assert_eq!((e.stage, e.frame), (Stage::Schema, 1));
        match e.kind {
            ErrorKind::Schema(s) => assert!(
                matches!(
                    s.problem,
                    SchemaProblem::NotInteger | SchemaProblem::NotSafeInteger
                ),
                "{s:?}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(run(&with_ts(n), v0()).ok().events, 2);
    }
    // Long spellings of small integers are integers.
    for (n, x) in [
        (&one_long, 1.0),
        (&almost_one, 1.0),
        (&tiny, 0.0),
        (&neg_zero, -0.0),
    ] {
        let out = run(&with_ts(n), Config::new());
        assert_eq!(out.ok().events, 2);
        assert!(out.encoded()[1].contains(&format!(r#""timestamp":{n}"#)));
        let payload = format!(r#"{{"type":"CUSTOM","name":"n","value":1,"timestamp":{n}}}"#);
        let ev = decode(payload.as_bytes(), Dialect::V1, Limits::new())
            .unwrap()
            .unwrap();
        assert_eq!(ev.timestamp(), Some(x));
    }
    // Leading zeros stay invalid however many there are.
    let e = run(&with_ts(&format!("0{nines}")), Config::new()).err();
    assert!(matches!(e.kind, ErrorKind::Json(_)));
    assert_eq!(e.stage, Stage::Json);
}

#[test]
fn million_digit_timestamp_is_handled() {
    let digits = "7".repeat(1_000_000);
    let ev = format!(r#"{{"type":"CUSTOM","name":"n","value":1,"timestamp":{digits}}}"#);
    let stream = sse(&[RUN_STARTED, &ev]);
    let e = run(&stream, Config::new()).err();
    assert_eq!(e.stage, Stage::Schema);
    let out = run(&stream, v0());
    assert_eq!(out.ok().events, 2);
    assert_eq!(out.encoded()[1].len(), ev.len());
}

// ------------------------------------------ 8. 100,000 duplicate members

#[test]
fn hundred_thousand_duplicate_keys_last_wins() {
    const N: usize = 100_000;
    let dup = |ty: &str, extra: &str| {
        let mut s = format!(r#"{{"type":"{ty}""#);
        for i in 0..N - 1 {
            write!(s, r#","messageId":"d{i}""#).unwrap();
        }
        s.push_str(r#","messageId":"last""#);
        s.push_str(extra);
        s.push('}');
        s
    };
    let start = dup("TEXT_MESSAGE_START", "");
    let content = dup("TEXT_MESSAGE_CONTENT", r#","delta":"x""#);
    let end = dup("TEXT_MESSAGE_END", "");
    // `type` repeated too: the last one counts.
    let mut retyped = String::from("{");
    for _ in 0..N {
        retyped.push_str(r#""type":"CUSTOM","#);
    }
    retyped.push_str(r#""type":"TEXT_MESSAGE_END","messageId":"x"}"#);
    let stream = sse(&[
        RUN_STARTED,
        &start,
        &content,
        &end,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"x"}"#,
        &retyped,
        RUN_FINISHED,
    ]);
    let out = run(&stream, Config::new());
    let s = out.ok();
    assert_eq!(s.events, 7);
    assert!(s.is_complete());
    let lines = out.encoded();
    assert_eq!(
        lines[1],
        r#"{"type":"TEXT_MESSAGE_START","messageId":"last"}"#
    );
    assert_eq!(
        lines[2],
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"last","delta":"x"}"#
    );
    assert_eq!(
        lines[3],
        r#"{"type":"TEXT_MESSAGE_END","messageId":"last"}"#
    );
    assert_eq!(lines[5], r#"{"type":"TEXT_MESSAGE_END","messageId":"x"}"#);

    // V0 passes unknown members through; the known, duplicated one is
    // written once, with its last value.
    let stream = sse(&[RUN_STARTED, &start, &end, RUN_FINISHED]);
    let out = run(&stream, v0());
    assert!(out.ok().is_complete());
    assert_eq!(
        out.encoded()[1],
        r#"{"type":"TEXT_MESSAGE_START","messageId":"last","role":"assistant"}"#
    );
    let ev = decode(start.as_bytes(), Dialect::V1, Limits::new())
        .unwrap()
        .unwrap();
    assert!(ev.message_id().unwrap().eq_str("last"));
    assert_eq!(ev.object().unwrap().len(), N + 1);
}

// ------------------------------------------------- 9. a million events

#[test]
fn a_million_tiny_events_through_a_one_kib_buffer() {
    const EVENTS: usize = 1_000_000;
    const BUFFER: usize = 1024;
    const PUSH: usize = 4096;
    // Groups of ten frames: a text message over one of four ids, with seven
    // RAW events (the cheapest event to check) inside it.
    let ids = ["a", "b", "c", "d"];
    let raw = frame(r#"{"type":"RAW","event":0}"#);
    let groups: Vec<Vec<u8>> = ids
        .iter()
        .map(|id| {
            let mut g = frame(&start(id));
            g.extend_from_slice(&frame(&format!(
                r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"{id}","delta":"x"}}"#
            )));
            for _ in 0..7 {
                g.extend_from_slice(&raw);
            }
            g.extend_from_slice(&frame(&end(id)));
            g
        })
        .collect();
    let mut stream = Vec::with_capacity(EVENTS * 40);
    stream.extend_from_slice(&frame(RUN_STARTED));
    for i in 0..EVENTS / 10 {
        stream.extend_from_slice(&groups[i % ids.len()]);
    }
    stream.extend_from_slice(&frame(RUN_FINISHED));

    let mut buf = [0u8; BUFFER];
    let mut pipeline = Pipeline::new(&mut buf, Config::new());
    let mut delivered = 0u64;
    let mut texts = 0u64;
    let mut sink = |ev: &Event<'_>, f: &FrameInfo| {
        // One event per frame, in order.
        assert_eq!(f.index, delivered);
        delivered += 1;
        if ev.event_type() != EventType::Raw {
            texts += 1;
        }
    };
    for piece in stream.chunks(PUSH) {
        pipeline.push(piece, &mut sink).unwrap();
    }
    let s = pipeline.finish(&mut sink).unwrap();
    drop(pipeline);
    assert_eq!(buf.len(), BUFFER, "no frame buffer but our 1 KiB");
    assert_eq!(delivered, EVENTS as u64 + 2);
    assert_eq!(texts, 3 * EVENTS as u64 / 10 + 2);
    assert_eq!(s.events, EVENTS as u64 + 2);
    assert_eq!(s.frames, EVENTS as u64 + 2);
    assert_eq!(s.bytes, stream.len() as u64);
    assert!(s.is_complete());
}

// ------------------------------------------------ framing noise only

fn assert_silent(stream: &[u8], what: &str) {
    // No frame is ever dispatched, so the dialect does not matter.
    for chunk in [0, 1, 4096] {
        // A tiny buffer: nothing here may need one.
        let out = run_sized::<4, 4, 128>(stream, Config::new(), 8, chunk);
        let s = out.ok();
        assert!(out.events.is_empty(), "{what}");
        assert_eq!((s.frames, s.events), (0, 0), "{what} (pushes of {chunk})");
        assert_eq!(s.bytes, stream.len() as u64, "{what}");
        assert_eq!(s.run, RunPhase::NotStarted, "{what}");
        assert!(!s.unterminated_frame, "{what}");
    }
}

#[test]
fn streams_of_only_framing_noise_are_empty() {
    const N: usize = 100_000;
    assert_silent(&vec![b'\r'; N], "CR bytes");
    assert_silent(&vec![b'\n'; N], "blank lines");
    assert_silent(&b"\r\n".repeat(N), "CRLF blank lines");
    assert_silent(&b":\n".repeat(N), "':' comment lines");
    assert_silent(&b": keep-alive\r\n".repeat(N), "comments with CRLF");
    assert_silent(
        &b"event: x\nid: 1\nretry: 5\n".repeat(N / 3),
        "fields, no data",
    );
    assert_silent(b"\xEF\xBB\xBF", "BOM only");
    assert_silent(b"\xEF\xBB", "half a BOM");
    assert_silent(b"\xEF\xBB\xBF\xEF\xBB\xBF\n", "two BOMs");
    assert_silent(b"\xEF\xBB\xBF\n\n\r\r\n:\n", "BOM and blank lines");
    assert_silent(b"", "nothing");
    // One huge line of each ignored kind, through an 8-byte buffer.
    let huge = |head: &[u8]| {
        let mut v = head.to_vec();
        v.resize(head.len() + TEN_MB, b'x');
        v.push(b'\n');
        v
    };
    for head in [&b":"[..], b"event: ", b"id: ", b"unknown: ", b"dat"] {
        let stream = huge(head);
        let out = run_sized::<4, 4, 128>(&stream, Config::new(), 8, 64 * 1024);
        let s = out.ok();
        assert_eq!(
            (s.frames, s.events),
            (0, 0),
            "{:?}",
            String::from_utf8_lossy(head)
        );
    }
}

// ------------------------------------------- hostile streams, for other hosts

/// Every stream of `support::hostile` through the gateway rewriter (64 KiB
/// buffers, as the wasm module and the Envoy filter have them, under the
/// stop and the drop-and-close policies, in 1,460-byte pushes): it ends in
/// a verdict, never an error, and its output holds whole blocks only. With
/// `AGUI_HOSTILE_DIR` set, the streams are also written there as
/// `NAME.sse`, for `scripts/envoy-e2e.sh`.
#[test]
fn write_hostile_streams() {
    use agui_stream::rewrite::{OnViolation, Options, Rewriter};
    let dir = std::env::var_os("AGUI_HOSTILE_DIR").map(std::path::PathBuf::from);
    if let Some(dir) = &dir {
        std::fs::create_dir_all(dir).unwrap();
    }
    let (mut frames, mut raw) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    for (name, stream) in support::hostile::streams() {
        for options in [
            Options::new(),
            Options::new()
                .on_violation(OnViolation::Drop)
                .close_open(true),
        ] {
            let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), options);
            let mut out = Vec::new();
            for piece in stream.chunks(1460) {
                let pushed = rewriter
                    .push(piece, &mut out)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                if pushed.ended {
                    break;
                }
                assert_eq!(pushed.read, piece.len(), "{name}");
            }
            rewriter
                .finish(&mut out)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                out.is_empty() || out.ends_with(b"\n\n"),
                "{name}: a cut block"
            );
        }
        if let Some(dir) = &dir {
            std::fs::write(dir.join(format!("{name}.sse")), &stream).unwrap();
        }
    }
}
