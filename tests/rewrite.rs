//! The rewriter: what a gateway forwards.
//!
//! * A stream with nothing to change comes out byte for byte; any split of
//!   the input gives the same output; rewriting twice is rewriting once.
//! * The output of every corpus stream reads, through the pipeline, as the
//!   events of the input (chunks expanded), and — stopping or dropping —
//!   without a violation.
//! * A writer with room for one block's bound never holds the stream up:
//!   drained between pushes, it gets the same bytes.
//! * Each policy: stop, drop, pass, the end-of-stream repair, re-lining.

mod support;

use support::record::Recorder;

use agui_stream::rewrite::{
    DENIED_CALLS, OnViolation, Options, RewriteError, Rewriter, Stats, ToolTables,
};
use agui_stream::{Config, Dialect, Event, FrameInfo, Pipeline, SliceWriter};

/// The rewritten stream, pushed in `piece`-byte pieces, with its stats.
fn rewrite(stream: &[u8], config: Config, options: Options, piece: usize) -> (Vec<u8>, Stats) {
    let (mut frames, mut raw) = (vec![0u8; 1 << 16], vec![0u8; 1 << 20]);
    let mut r = Rewriter::new(&mut frames, &mut raw, config, options);
    let mut out = Vec::new();
    for p in stream.chunks(piece.max(1)) {
        let pushed = r.push(p, &mut out).expect("a Vec has room");
        assert_eq!(pushed.read, p.len());
    }
    r.finish(&mut out).expect("a Vec has room");
    (out, *r.stats())
}

/// The events the pipeline reads from `stream` (encoded), and whether it
/// read them without error.
fn events(stream: &[u8], config: Config) -> (Vec<Vec<u8>>, Result<(), String>) {
    let mut buf = vec![0u8; 1 << 20];
    let mut p = Pipeline::new(&mut buf, config);
    let mut sink = Recorder::new();
    let result = p
        .push(stream, &mut sink)
        .and_then(|_| p.finish(&mut sink))
        .map(drop)
        .map_err(|e| p.message(&e).to_string());
    let events = sink
        .into_events()
        .into_iter()
        .map(|(_, json, _)| json)
        .collect();
    (events, result)
}

fn streams() -> Vec<(String, Vec<u8>)> {
    let mut streams = Vec::new();
    let extra = support::manifest_in(&support::extra_dir());
    for case in support::manifest().into_iter().chain(extra) {
        streams.push((case.name.clone(), case.stream()));
    }
    for path in support::sse_files(&support::real_dir()) {
        streams.push((path.display().to_string(), support::read(&path)));
    }
    streams
}

fn config(dialect: Dialect) -> Config {
    Config::new()
        .dialect(dialect)
        .minting(agui_stream::Minting::Deterministic)
}

const RUN_STARTED: &str = support::RUN_STARTED;
const RUN_FINISHED: &str = support::RUN_FINISHED;

#[test]
#[cfg_attr(miri, ignore = "every corpus stream")]
fn every_split_gives_the_same_output_and_twice_is_once() {
    let mut identical = 0;
    for (name, stream) in streams() {
        for dialect in [Dialect::V1, Dialect::V0] {
            for on_violation in [OnViolation::Stop, OnViolation::Drop, OnViolation::Pass] {
                let options = Options::new().on_violation(on_violation);
                let (once, _) = rewrite(&stream, config(dialect), options, stream.len());
                for piece in [1, 7, 64] {
                    let (split, _) = rewrite(&stream, config(dialect), options, piece);
                    assert!(
                        split == once,
                        "{name} {dialect:?} {on_violation:?} in {piece}-byte pieces"
                    );
                }
                if on_violation == OnViolation::Pass {
                    // What passed is read again and may go differently.
                    continue;
                }
                let (twice, stats) = rewrite(&once, config(dialect), options, 64);
                assert!(
                    twice == once,
                    "{name} {dialect:?} {on_violation:?}: rewriting the output changed it ({stats:?})\n{}\n---\n{}",
                    String::from_utf8_lossy(&once),
                    String::from_utf8_lossy(&twice)
                );
                if once == stream {
                    identical += 1;
                }
            }
        }
    }
    assert!(identical > 300, "{identical} streams came out unchanged");
}

/// The pipeline reads the output as it read the input: the same events
/// (a chunk as its expansion), then only the repair; stopping or dropping,
/// the output has no violation.
#[test]
#[cfg_attr(miri, ignore = "every corpus stream")]
fn the_output_reads_as_the_input_did() {
    let mut repaired = 0;
    for (name, stream) in streams() {
        for dialect in [Dialect::V1, Dialect::V0] {
            let (want, verdict) = events(&stream, config(dialect));
            for on_violation in [OnViolation::Stop, OnViolation::Drop] {
                let options = Options::new().on_violation(on_violation);
                let (out, stats) = rewrite(&stream, config(dialect), options, 64);
                let (got, result) = events(&out, config(dialect));
                assert_eq!(
                    result,
                    Ok(()),
                    "{name} {dialect:?} {on_violation:?}: {}",
                    String::from_utf8_lossy(&out)
                );
                if verdict.is_ok() && stats.violations == 0 {
                    let repairs = got.len() - want.len();
                    assert_eq!(&got[..want.len()], &want[..], "{name} {dialect:?}");
                    assert!(repairs <= 1, "{name} {dialect:?}: {repairs} repair events");
                    repaired += repairs;
                }
            }
        }
    }
    assert!(repaired > 10, "{repaired} streams repaired");
}

/// A writer with room for the bound of the largest block, drained after
/// each push, gets the output a `Vec` gets; with less room the push says
/// so and reads nothing.
#[test]
#[cfg_attr(miri, ignore = "every corpus stream")]
fn a_writer_sized_by_the_bound_gets_everything() {
    let mut held_up = 0;
    for (name, stream) in streams() {
        let largest = stream
            .split(|&b| b == b'\n')
            .map(|line| line.len() + 2)
            .sum::<usize>()
            .min(stream.len());
        let (want, _) = rewrite(&stream, config(Dialect::V1), Options::new(), 7);
        let (mut frames, mut raw) = (vec![0u8; 1 << 16], vec![0u8; 1 << 20]);
        let r = Rewriter::new(&mut frames, &mut raw, config(Dialect::V1), Options::new());
        let got = bounded(r, &stream, largest);
        assert!(got.0 == want, "{name}");
        held_up += got.1;
        // Through 1 KiB buffers too, where large frames spill and blocks go
        // out as they stream: what a `Vec` gets with the same buffers.
        let small = || {
            let (frames, raw) = (vec![0u8; 1024].leak(), vec![0u8; 1024].leak());
            Rewriter::new(frames, raw, config(Dialect::V1), Options::new())
        };
        let mut want = Vec::new();
        let mut r = small();
        for piece in stream.chunks(1460) {
            r.push(piece, &mut want).unwrap();
        }
        r.finish(&mut want).unwrap();
        assert!(
            bounded(small(), &stream, largest).0 == want,
            "{name}, 1 KiB buffers"
        );
    }
    assert!(held_up > 0);
    // Too little room: nothing read, nothing lost.
    let stream = support::sse(&[RUN_STARTED, RUN_FINISHED]);
    let (mut frames, mut raw) = ([0u8; 256], [0u8; 256]);
    let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    let mut small = [0u8; 64];
    let e = r
        .push(&stream, &mut SliceWriter::new(&mut small))
        .unwrap_err();
    assert!(matches!(e, RewriteError::OutputFull { needed } if needed > 64));
    let mut out = Vec::new();
    assert_eq!(r.push(&stream, &mut out).unwrap().read, stream.len());
    r.finish(&mut out).unwrap();
    assert_eq!(out, stream);
}

/// `stream` in 1460-byte pushes through `r` into a writer with room for
/// the bound of a `largest`-byte block, drained after each push: the
/// output, and how often a push was held up.
fn bounded(mut r: Rewriter<'_>, stream: &[u8], largest: usize) -> (Vec<u8>, usize) {
    let mut held_up = 0;
    let mut buf = vec![0u8; r.frame_bound(largest)];
    let mut got = Vec::new();
    {
        for piece in stream.chunks(1460) {
            let mut rest = piece;
            while !rest.is_empty() {
                let mut out = SliceWriter::new(&mut buf);
                let pushed = r.push(rest, &mut out).expect("room for a block");
                got.extend_from_slice(out.written());
                if pushed.read < rest.len() && !pushed.ended {
                    held_up += 1;
                }
                rest = &rest[pushed.read..];
            }
        }
    }
    let mut out = SliceWriter::new(&mut buf);
    r.finish(&mut out).unwrap();
    got.extend_from_slice(out.written());
    (got, held_up)
}

fn lines(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .split("\n\n")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn stop_ends_with_a_run_error_and_nothing_after() {
    let stream = support::sse(&[
        RUN_STARTED,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
        RUN_FINISHED,
    ]);
    let (out, stats) = rewrite(&stream, Config::new(), Options::new(), 5);
    let got = lines(&out);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], format!("data: {RUN_STARTED}"));
    assert_eq!(
        got[1],
        "data: {\"type\":\"RUN_ERROR\",\"message\":\"Cannot send 'TEXT_MESSAGE_END' event: No active text message found with ID 'm'. A 'TEXT_MESSAGE_START' event must be sent first.\",\"code\":\"AGUI_STREAM_VIOLATION\"}"
    );
    assert_eq!((stats.violations, stats.repairs), (1, 1));
    assert_eq!(
        stats.violations_by_stage[agui_stream::Stage::Verify.index()],
        1
    );
    assert_eq!(
        stats.events_out[agui_stream::EventType::RunError.index()],
        1
    );
}

#[test]
fn drop_and_pass_keep_going() {
    let bad = r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#;
    let stream = support::sse(&[RUN_STARTED, bad, RUN_FINISHED]);
    let drop = Options::new().on_violation(OnViolation::Drop);
    let (out, stats) = rewrite(&stream, Config::new(), drop, 5);
    assert_eq!(out, support::sse(&[RUN_STARTED, RUN_FINISHED]));
    assert_eq!((stats.violations, stats.dropped), (1, 1));
    let pass = Options::new().on_violation(OnViolation::Pass);
    let (out, stats) = rewrite(&stream, Config::new(), pass, 5);
    assert_eq!(out, stream);
    assert_eq!((stats.violations, stats.passed), (1, 1));
}

#[test]
fn a_run_cut_short_is_repaired_unless_told_not_to() {
    let stream = support::sse(&[RUN_STARTED, &support::start("m")]);
    // The last frame lost its blank line as well.
    let cut = &stream[..stream.len() - 2];
    let (out, stats) = rewrite(cut, Config::new(), Options::new(), 5);
    let mut want = stream.clone();
    want.extend_from_slice(
        b"data: {\"type\":\"RUN_ERROR\",\"message\":\"the stream ended before the run finished\",\"code\":\"AGUI_STREAM_TRUNCATED\"}\n\n",
    );
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&want)
    );
    assert_eq!(stats.repairs, 2);
    let (out, _) = rewrite(cut, Config::new(), Options::new().repair(false), 5);
    assert_eq!(out, cut);
    // Cut inside a frame: the frame is dropped, the run repaired as cut.
    let mid = &stream[..stream.len() - 10];
    for piece in [1, 5, mid.len()] {
        let (out, stats) = rewrite(mid, Config::new(), Options::new(), piece);
        let got = lines(&out);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[1].contains("AGUI_STREAM_TRUNCATED"), "{got:?}");
        assert_eq!((stats.dropped, stats.violations), (1, 0));
    }
    // A run that finished needs nothing.
    let whole = support::sse(&[RUN_STARTED, RUN_FINISHED]);
    assert_eq!(rewrite(&whole, Config::new(), Options::new(), 5).0, whole);
}

#[test]
fn chunks_are_expanded_and_keep_alives_kept() {
    let stream = support::sse(&[
        RUN_STARTED,
        r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"a"}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","delta":"b"}"#,
        RUN_FINISHED,
    ]);
    let mut input = b": ping\n\n".to_vec();
    input.extend_from_slice(&stream);
    let (out, stats) = rewrite(&input, Config::new(), Options::new(), 3);
    assert_eq!(
        lines(&out),
        [
            ": ping".to_owned(),
            format!("data: {RUN_STARTED}"),
            r#"data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#.into(),
            r#"data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}"#.into(),
            r#"data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"b"}"#.into(),
            r#"data: {"type":"TEXT_MESSAGE_END","messageId":"m"}"#.into(),
            format!("data: {RUN_FINISHED}"),
        ]
    );
    assert_eq!((stats.encoded, stats.forwarded), (4, 3));
    use agui_stream::EventType as T;
    let counts = |c: &[u32]| -> Vec<(T, u32)> {
        T::ALL
            .iter()
            .copied()
            .zip(c.iter().copied())
            .filter(|(_, n)| *n > 0)
            .collect()
    };
    let want = vec![
        (T::TextMessageStart, 1),
        (T::TextMessageContent, 2),
        (T::TextMessageEnd, 1),
        (T::RunStarted, 1),
        (T::RunFinished, 1),
    ];
    let mut got = counts(&stats.events_in);
    got.sort_by_key(|(t, _)| want.iter().position(|(w, _)| w == t));
    assert_eq!(got, want);
    assert_eq!(stats.events_in, stats.events_out);
}

/// CR and CRLF line ends, and a bare `data` line, come out as the
/// reference client reads them: LF line ends.
#[test]
fn line_ends_the_reference_cannot_read_are_rewritten() {
    // In one push (the fast path for bytes within a push) and in pieces.
    for piece in [1, 5, 64, usize::MAX] {
        let crlf =
            format!("data: {RUN_STARTED}\r\nid: 1\r\n\r\n: x\r\rdata: {RUN_FINISHED}\r\r\n\r\n");
        let (out, stats) = rewrite(crlf.as_bytes(), Config::new(), Options::new(), piece);
        assert_eq!(
            String::from_utf8_lossy(&out),
            format!("data: {RUN_STARTED}\nid: 1\n\n: x\n\ndata: {RUN_FINISHED}\n\n\n"),
            "pieces of {piece}"
        );
        assert_eq!(stats.relined, 3);
        let bare = format!("data: {RUN_STARTED}\n\ndata\ndata: {RUN_FINISHED}\n\n");
        let (out, _) = rewrite(bare.as_bytes(), Config::new(), Options::new(), piece);
        // The bare line is an empty data line: the payload starts with '\n'.
        assert_eq!(
            String::from_utf8_lossy(&out),
            format!("data: {RUN_STARTED}\n\ndata:\ndata: {RUN_FINISHED}\n\n"),
            "pieces of {piece}"
        );
        let inner = format!("data: {RUN_STARTED}\n\nid: 2\ndata\ndata: {RUN_FINISHED}\n\n");
        let (out, _) = rewrite(inner.as_bytes(), Config::new(), Options::new(), piece);
        assert_eq!(
            String::from_utf8_lossy(&out),
            format!("data: {RUN_STARTED}\n\nid: 2\ndata:\ndata: {RUN_FINISHED}\n\n"),
            "pieces of {piece}"
        );
    }
}

#[test]
fn close_open_closes_what_is_open_before_the_run_error() {
    let stream = support::sse(&[
        RUN_STARTED,
        r#"{"type":"STEP_STARTED","stepName":"plan"}"#,
        &support::start("m"),
        r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f","parentMessageId":"m"}"#,
        r#"{"type":"REASONING_START","messageId":"r"}"#,
    ]);
    let options = Options::new().close_open(true);
    let (out, stats) = rewrite(&stream, Config::new(), options, 9);
    let got = lines(&out);
    let tail: Vec<&str> = got[5..].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            r#"data: {"type":"TOOL_CALL_END","toolCallId":"c"}"#,
            r#"data: {"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
            r#"data: {"type":"REASONING_END","messageId":"r"}"#,
            r#"data: {"type":"STEP_FINISHED","stepName":"plan"}"#,
            r#"data: {"type":"RUN_ERROR","message":"the stream ended before the run finished","code":"AGUI_STREAM_TRUNCATED"}"#,
        ]
    );
    assert_eq!(stats.repairs, 5);
    // The output is a stream the pipeline accepts, complete.
    let mut buf = vec![0u8; 4096];
    let mut p = Pipeline::new(&mut buf, Config::new());
    let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
    p.push(&out, &mut sink).unwrap();
    assert!(p.finish(&mut sink).unwrap().is_complete());
    // Before the stop policy's RUN_ERROR too.
    let mut bad = stream.clone();
    bad.extend_from_slice(b"data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"x\"}\n\n");
    let (out, _) = rewrite(&bad, Config::new(), options, 9);
    let got = lines(&out);
    assert_eq!(got.len(), 10, "{got:?}");
    assert!(got[9].contains("AGUI_STREAM_VIOLATION"));
    // Without it, only the RUN_ERROR.
    let (out, _) = rewrite(&stream, Config::new(), Options::new(), 9);
    assert_eq!(lines(&out).len(), 6);
}

#[test]
fn a_second_terminal_event_is_dropped() {
    let error = r#"{"type":"RUN_ERROR","message":"boom"}"#;
    for dialect in [Dialect::V1, Dialect::V0] {
        for (events, dropped) in [
            (vec![RUN_STARTED, error, RUN_FINISHED], 1),
            (vec![RUN_STARTED, RUN_FINISHED, RUN_FINISHED], 1),
            // RUN_ERROR after RUN_FINISHED is accepted: kept.
            (vec![RUN_STARTED, RUN_FINISHED, error], 0),
        ] {
            let stream = support::sse(&events);
            let (out, stats) = rewrite(&stream, config(dialect), Options::new(), 5);
            assert_eq!(stats.duplicate_terminals, dropped, "{events:?}");
            assert_eq!(stats.violations, 0);
            let kept = if dropped == 1 {
                &events[..2]
            } else {
                &events[..]
            };
            assert_eq!(out, support::sse(kept), "{dialect:?} {events:?}");
        }
    }
}

#[test]
fn an_event_over_the_limit_ends_the_stream_cleanly() {
    let big = format!(
        r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{}"}}"#,
        "x".repeat(300)
    );
    let stream = support::sse(&[
        RUN_STARTED,
        &support::start("m"),
        &big,
        &support::end("m"),
        RUN_FINISHED,
    ]);
    let options = Options::new().max_event_bytes(200);
    let (out, stats) = rewrite(&stream, Config::new(), options, stream.len());
    let got = lines(&out);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(
        got[2],
        r#"data: {"type":"RUN_ERROR","message":"an event of at least 366 bytes is larger than the 200-byte limit","code":"AGUI_EVENT_TOO_LARGE"}"#
    );
    assert_eq!(stats.too_large, 1);
    // In pieces the block is found too large as soon as it is (the message
    // tells the bytes seen so far), and the rest is the same.
    for piece in [1, 7, 64] {
        let (split, _) = rewrite(&stream, Config::new(), options, piece);
        let split = lines(&split);
        assert_eq!(split[..2], got[..2]);
        assert!(split[2].contains("AGUI_EVENT_TOO_LARGE"), "{split:?}");
    }
    // Under the limit, nothing changes.
    let (out, _) = rewrite(
        &stream,
        Config::new(),
        Options::new().max_event_bytes(400),
        7,
    );
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&stream)
    );
}

#[test]
fn canonical_form_and_dropping_raw() {
    let stream = format!(
        "data: {RUN_STARTED}\n\nid: 3\ndata: {}\n\ndata: {}\n\ndata: {}\n\n: ping\n\ndata: {}\n\ndata: {RUN_FINISHED}\n\n",
        r#"{"type":"STEP_STARTED","stepName":"s","extra":1,"rawEvent":{"big":true}}"#,
        r#"{"type":"RAW","event":{"x":1}}"#,
        r#"{"type":"VENDOR_THING"}"#,
        r#"{"type":"STEP_FINISHED","stepName":"s"}"#,
    );
    let canonical = Options::new().canonical(true);
    let (out, _) = rewrite(stream.as_bytes(), Config::new(), canonical, 5);
    assert_eq!(
        lines(&out),
        [
            format!("data: {RUN_STARTED}"),
            r#"data: {"type":"STEP_STARTED","rawEvent":{"big":true},"stepName":"s"}"#.into(),
            r#"data: {"type":"RAW","event":{"x":1}}"#.into(),
            ": ping".into(),
            r#"data: {"type":"STEP_FINISHED","stepName":"s"}"#.into(),
            format!("data: {RUN_FINISHED}"),
        ]
    );
    let drop_raw = Options::new().drop_raw(true);
    let (out, stats) = rewrite(stream.as_bytes(), Config::new(), drop_raw, 5);
    assert_eq!(
        lines(&out),
        [
            format!("data: {RUN_STARTED}"),
            r#"data: {"type":"STEP_STARTED","stepName":"s"}"#.into(),
            r#"data: {"type":"VENDOR_THING"}"#.into(),
            ": ping".into(),
            r#"data: {"type":"STEP_FINISHED","stepName":"s"}"#.into(),
            format!("data: {RUN_FINISHED}"),
        ]
    );
    assert_eq!(stats.raw_dropped, 2);
    assert_eq!(events(&out, Config::new()).1, Ok(()));
}

#[test]
fn keep_alives_go_between_blocks() {
    let stream = support::sse(&[RUN_STARTED, RUN_FINISHED]);
    let (mut frames, mut raw) = ([0u8; 256], [0u8; 256]);
    let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    let mut out = Vec::new();
    let (a, b) = stream.split_at(30); // mid-frame
    r.push(a, &mut out).unwrap();
    assert!(r.keep_alive(&mut out).unwrap());
    r.push(b, &mut out).unwrap();
    r.finish(&mut out).unwrap();
    assert!(!r.keep_alive(&mut out).unwrap(), "the stream has ended");
    let mut want = b": ping\n\n".to_vec();
    want.extend_from_slice(&stream);
    assert_eq!(out, want);
    assert_eq!(r.stats().keep_alives, 1);
}

/// The filter holds its documented limits, and compares names and ids by
/// their text, however the stream escapes them (a name JSON escapes, the
/// sixteenth name, ids spelled with escapes).
#[test]
fn denied_tools_match_by_text_up_to_the_limits() {
    use agui_stream::rewrite::{DENIED_TOOL_BYTES, DENIED_TOOLS};
    let stream = support::sse(&[
        RUN_STARTED,
        &support::start("m"),
        r#"{"type":"TOOL_CALL_START","toolCallId":"a","toolCallName":"q\"x","parentMessageId":"m"}"#,
        r#"{"type":"TOOL_CALL_END","toolCallId":"\u0061"}"#,
        r#"{"type":"TOOL_CALL_START","toolCallId":"b","toolCallName":"t\u0031\u0035","parentMessageId":"m"}"#,
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"b","delta":"{}"}"#,
        r#"{"type":"TOOL_CALL_END","toolCallId":"b"}"#,
        r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"t16","parentMessageId":"m"}"#,
        r#"{"type":"TOOL_CALL_END","toolCallId":"c"}"#,
        &support::end("m"),
        RUN_FINISHED,
    ]);
    let (mut frames, mut raw) = (vec![0u8; 4096], vec![0u8; 4096]);
    let mut tables = ToolTables::new();
    tables.deny("q\"x").unwrap();
    for i in 1..DENIED_TOOLS {
        tables.deny(&format!("t{i}")).unwrap();
    }
    assert_eq!(tables.deny("t16"), Err(RewriteError::DeniedTools));
    let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    r.deny_tools(&mut tables);
    let mut out = Vec::new();
    r.push(&stream, &mut out).unwrap();
    r.finish(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(
        !text.contains(r#""a""#) && !text.contains(r#""b""#),
        "{text}"
    );
    assert!(text.contains(r#""toolCallName":"t16""#), "{text}");
    assert_eq!(r.stats().tool_events_dropped, 5);
    assert_eq!(events(&out, Config::new()).1, Ok(()));
    // The names' bytes are counted as JSON text: a quote takes two.
    let mut tables = ToolTables::new();
    let quotes = "\"".repeat(DENIED_TOOL_BYTES / 2);
    assert!(tables.deny(&quotes).is_ok());
    assert_eq!(tables.deny("x"), Err(RewriteError::DeniedTools));
}

#[test]
fn denied_tools_leave_no_trace() {
    let stream = support::sse(&[
        RUN_STARTED,
        &support::start("m"),
        r#"{"type":"TOOL_CALL_START","toolCallId":"a","toolCallName":"shell","parentMessageId":"m"}"#,
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"a","delta":"{\"cmd\":\"rm\"}"}"#,
        r#"{"type":"TOOL_CALL_END","toolCallId":"a"}"#,
        r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"b","toolCallName":"shell","parentMessageId":"m","delta":"{"}"#,
        r#"{"type":"TOOL_CALL_CHUNK","delta":"}"}"#,
        r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"search","parentMessageId":"m"}"#,
        r#"{"type":"TOOL_CALL_END","toolCallId":"c"}"#,
        &support::end("m"),
        r#"{"type":"TOOL_CALL_RESULT","messageId":"r1","toolCallId":"a","content":"gone"}"#,
        r#"{"type":"TOOL_CALL_RESULT","messageId":"r2","toolCallId":"c","content":"kept"}"#,
        RUN_FINISHED,
    ]);
    let rewrite_denying = |names: &[&str]| {
        let (mut frames, mut raw) = (vec![0u8; 4096], vec![0u8; 4096]);
        let mut tables = ToolTables::new();
        for name in names {
            tables.deny(name).unwrap();
        }
        let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
        r.deny_tools(&mut tables);
        let mut out = Vec::new();
        for piece in stream.chunks(11) {
            r.push(piece, &mut out).unwrap();
        }
        r.finish(&mut out).unwrap();
        (out, *r.stats())
    };
    let (out, stats) = rewrite_denying(&["shell"]);
    let text = String::from_utf8_lossy(&out);
    assert!(
        !text.contains("shell") && !text.contains("\"a\"") && !text.contains("\"b\""),
        "{text}"
    );
    assert!(text.contains("\"search\"") && text.contains("kept"));
    // START, ARGS, END, RESULT of a; START, two ARGS, END of b (its
    // chunks, expanded: the second has no id).
    assert_eq!(stats.tool_events_dropped, 8);
    let (events, verdict) = events(&out, Config::new());
    assert_eq!(verdict, Ok(()));
    assert_eq!(events.len(), 7);
    // Denying nothing changes nothing but the chunks' expansion.
    let (out, stats) = rewrite_denying(&[]);
    assert_eq!(stats.tool_events_dropped, 0);
    assert!(String::from_utf8_lossy(&out).contains("shell"));
    // More names than fit is an error.
    let mut tables = ToolTables::new();
    let long = "x".repeat(100);
    assert!(tables.deny(&long).is_ok() && tables.deny(&long).is_ok());
    assert_eq!(tables.deny(&long), Err(RewriteError::DeniedTools));
    // A run with more denied calls than the filter holds ends cleanly.
    let mut events = vec![RUN_STARTED.to_owned()];
    for i in 0..40 {
        events.push(format!(
            r#"{{"type":"TOOL_CALL_START","toolCallId":"c{i}","toolCallName":"shell"}}"#
        ));
        events.push(format!(r#"{{"type":"TOOL_CALL_END","toolCallId":"c{i}"}}"#));
    }
    events.push(RUN_FINISHED.to_owned());
    let stream = support::sse(&events);
    let (mut frames, mut raw) = (vec![0u8; 4096], vec![0u8; 4096]);
    let mut tables = ToolTables::new();
    tables.deny("shell").unwrap();
    let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    r.deny_tools(&mut tables);
    let mut out = Vec::new();
    assert!(r.push(&stream, &mut out).unwrap().ended);
    assert_eq!(
        lines(&out),
        [
            format!("data: {RUN_STARTED}"),
            r#"data: {"type":"RUN_ERROR","message":"more calls to denied tools in this run than the filter holds","code":"AGUI_STREAM_CAPACITY"}"#.into()
        ]
    );
}

/// A leading BOM is not forwarded: clients drop it, and whether it would
/// reach them must not depend on what follows it (found by the fuzzer: a
/// stream whose every frame is dropped came out as a lone BOM, and that,
/// rewritten again, as nothing).
#[test]
fn a_leading_bom_is_not_forwarded() {
    let drop = Options::new().on_violation(OnViolation::Drop);
    let mut stream = b"\xEF\xBB\xBF".to_vec();
    stream.extend_from_slice(&support::sse(&[RUN_FINISHED]));
    let (out, stats) = rewrite(&stream, Config::new(), drop, 2);
    assert_eq!((out.as_slice(), stats.dropped), (&b""[..], 1));
    let mut stream = b"\xEF\xBB\xBF".to_vec();
    stream.extend_from_slice(&support::sse(&[RUN_STARTED, RUN_FINISHED]));
    let (out, _) = rewrite(&stream, Config::new(), drop, 1);
    assert_eq!(out, support::sse(&[RUN_STARTED, RUN_FINISHED]));
}

/// Repair events are written by the encoder, so a canonical second pass
/// finds them unchanged (found by the fuzzer: a closing event with its
/// members in another order).
#[test]
fn repairs_are_written_as_the_encoder_writes() {
    let stream = support::sse(&[
        RUN_STARTED,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","subagentRunId":"s2"}"#,
    ]);
    let options = Options::new().close_open(true).canonical(true);
    let (once, _) = rewrite(&stream, Config::new(), options, 64);
    let (twice, _) = rewrite(&once, Config::new(), options, 64);
    assert_eq!(
        String::from_utf8_lossy(&twice),
        String::from_utf8_lossy(&once)
    );
    assert!(
        String::from_utf8_lossy(&once)
            .contains(r#"{"type":"TEXT_MESSAGE_END","subagentRunId":"s2","messageId":"m1"}"#)
    );
}

/// A BOM inside the stream is a line's bytes; if what came before it is
/// dropped, it must not become the output's BOM (found by the fuzzer).
#[test]
fn a_bom_inside_the_stream_stays_a_lines_bytes() {
    let drop = Options::new().on_violation(OnViolation::Drop);
    let stream = b"data: {\"bad\n\n\xEF\xBB\xBFdata: {\"type\":\"RUN_STARTED\"}\n\n";
    let (once, _) = rewrite(stream, Config::new(), drop, 3);
    assert_eq!(once, b"\n\xEF\xBB\xBFdata: {\"type\":\"RUN_STARTED\"}\n\n");
    let (twice, _) = rewrite(&once, Config::new(), drop, 3);
    assert_eq!(twice, once);
}

/// The rewritten stream of `stream` through small buffers (512 bytes each),
/// in `piece`-byte pushes.
fn rewrite_small(stream: &[u8], options: Options, piece: usize) -> (Vec<u8>, Stats) {
    let (mut frames, mut raw) = ([0u8; 512], [0u8; 512]);
    let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), options);
    let mut out = Vec::new();
    for p in stream.chunks(piece) {
        assert_eq!(r.push(p, &mut out).expect("a Vec has room").read, p.len());
    }
    r.finish(&mut out).unwrap();
    (out, *r.stats())
}

/// A block larger than the raw buffer goes out piece by piece ahead of its
/// verdict: unchanged when it passes; cut, so that the client's parse
/// fails, when its end shows it bad; cut as well where it would have to be
/// re-encoded (its bytes are gone).
#[test]
fn blocks_larger_than_the_raw_buffer_stream_through() {
    let big = |ty: &str, id: &str| {
        format!(
            r#"{{"type":"{ty}","messageId":"{id}","delta":"{}"}}"#,
            "ab\\n\\u00e9".repeat(500)
        )
    };
    let stream = support::sse(&[
        RUN_STARTED,
        &support::start("m"),
        &big("TEXT_MESSAGE_CONTENT", "m"),
        &support::end("m"),
        RUN_FINISHED,
    ]);
    for piece in [100, 333, 1460] {
        let (out, stats) = rewrite_small(&stream, Options::new(), piece);
        assert!(out == stream, "in {piece}-byte pushes");
        assert_eq!((stats.streamed, stats.cut), (1, 0));
    }
    // Bad at its end (the message is not open): cut, then the stop.
    let bad = support::sse(&[RUN_STARTED, &big("TEXT_MESSAGE_CONTENT", "x"), RUN_FINISHED]);
    let (out, stats) = rewrite_small(&bad, Options::new(), 100);
    assert_eq!((stats.streamed, stats.cut), (1, 1));
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("\ndata: \u{1}\n\n"), "{text}");
    assert!(
        text.ends_with("\"code\":\"AGUI_STREAM_VIOLATION\"}\n\n"),
        "{text}"
    );
    // The client's parse of the cut block fails.
    let (events, verdict) = events(&out, Config::new());
    assert_eq!(events.len(), 1);
    assert!(verdict.is_err());
    // A chunk would need expanding: cut too, a capacity.
    let chunk = support::sse(&[RUN_STARTED, &big("TEXT_MESSAGE_CHUNK", "m"), RUN_FINISHED]);
    let (out, _) = rewrite_small(&chunk, Options::new(), 100);
    assert!(String::from_utf8_lossy(&out).ends_with("\"code\":\"AGUI_STREAM_CAPACITY\"}\n\n"));
    // A writer sized by the bound for the largest block never fails.
    let (mut frames, mut raw) = ([0u8; 512], [0u8; 512]);
    let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    let mut buf = vec![0u8; r.frame_bound(stream.len())];
    let mut got = Vec::new();
    for piece in stream.chunks(100) {
        let mut out = SliceWriter::new(&mut buf);
        assert_eq!(r.push(piece, &mut out).unwrap().read, piece.len());
        got.extend_from_slice(out.written());
    }
    let mut out = SliceWriter::new(&mut buf);
    r.finish(&mut out).unwrap();
    got.extend_from_slice(out.written());
    assert!(got == stream);
}

/// With a tool denied, a block larger than the raw buffer still streams
/// through unless the filter leaves its event out: only a denied call's
/// own events are cut (its bytes went out ahead of the verdict).
#[test]
fn blocks_larger_than_the_raw_buffer_stream_through_a_tool_filter() {
    let big = "ab\\n\\u00e9".repeat(500);
    let stream = support::sse(&[
        RUN_STARTED.to_string(),
        support::start("m"),
        format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{big}"}}"#),
        support::end("m"),
        r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"search"}"#.to_string(),
        format!(r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{big}"}}"#),
        r#"{"type":"TOOL_CALL_END","toolCallId":"c"}"#.to_string(),
        format!(r#"{{"type":"STATE_SNAPSHOT","snapshot":{{"k":"{big}"}}}}"#),
        RUN_FINISHED.to_string(),
    ]);
    let denying = |stream: &[u8], piece: usize| {
        let (mut frames, mut raw) = ([0u8; 512], [0u8; 512]);
        let mut tables = ToolTables::new();
        tables.deny("shell").unwrap();
        let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
        r.deny_tools(&mut tables);
        let mut out = Vec::new();
        for p in stream.chunks(piece) {
            r.push(p, &mut out).unwrap();
        }
        r.finish(&mut out).unwrap();
        (out, *r.stats())
    };
    for piece in [100, 333, 1460] {
        let (out, stats) = denying(&stream, piece);
        assert!(out == stream, "in {piece}-byte pushes");
        assert_eq!((stats.streamed, stats.cut), (3, 0));
    }
    // A denied call's large arguments are cut: a capacity.
    let denied = String::from_utf8(stream)
        .unwrap()
        .replace("search", "shell");
    let (out, stats) = denying(denied.as_bytes(), 100);
    assert_eq!(stats.cut, 1);
    assert!(String::from_utf8_lossy(&out).ends_with("\"code\":\"AGUI_STREAM_CAPACITY\"}\n\n"));
}

/// A block that goes out ahead of its verdict is cut as soon as its JSON
/// is known bad: the rest of it is never forwarded, and the cut and the
/// error are the ones its end would have brought.
#[test]
fn a_streamed_block_is_cut_as_soon_as_its_json_is_bad() {
    let stream = |bad: &str| {
        let delta = format!("{}{bad}{}", "x".repeat(2_000), "y".repeat(100_000));
        support::sse(&[
            RUN_STARTED.to_string(),
            support::start("m"),
            format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{delta}"}}"#),
            support::end("m"),
            RUN_FINISHED.to_string(),
        ])
    };
    // A control character, bad escapes (V8 words one before an astral
    // character by the bytes after it), and a bad `\u` escape.
    for bad in ["\u{1}", "\\q", "\\\u{1F600}", "\\u12x4"] {
        let stream = stream(bad);
        let needle = b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\"";
        let frame_start = stream
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap();
        // Even pushes; and, for the astral character, a push that ends
        // one byte into it, so that V8's words are not yet known there.
        let delta = b"\"delta\":\"";
        let bad_at = frame_start
            + stream[frame_start..]
                .windows(delta.len())
                .position(|w| w == delta)
                .unwrap()
            + delta.len()
            + 2_000;
        assert_eq!(&stream[bad_at..bad_at + bad.len()], bad.as_bytes());
        let mut splits: Vec<Vec<&[u8]>> = [100, 333, 1460]
            .iter()
            .map(|&n| stream.chunks(n).collect())
            .collect();
        splits.push(vec![
            &stream[..frame_start + 1_000],
            &stream[frame_start + 1_000..bad_at + 2],
            &stream[bad_at + 2..],
        ]);
        for pushes in splits {
            // What the frame's end reports, through the same buffer.
            let mut buffer = [0u8; 512];
            let mut pipeline =
                Pipeline::new(&mut buffer, Config::new()).policy(agui_stream::Policy::Monitor);
            let mut sink = Recorder::new();
            for p in &pushes {
                pipeline.push(p, &mut sink).unwrap();
            }
            let want = sink.violations().next().unwrap().2.to_owned();
            let (mut frames, mut raw) = ([0u8; 512], [0u8; 512]);
            let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
            let mut out = Vec::new();
            for p in &pushes {
                r.push(p, &mut out).unwrap();
            }
            r.finish(&mut out).unwrap();
            let stats = r.stats();
            assert_eq!((stats.streamed, stats.cut, stats.violations), (1, 1, 1));
            let mark = out
                .windows(10)
                .position(|w| w == b"\ndata: \x01\n\n")
                .unwrap();
            // What went out of the block is its first bytes, and no more
            // than the raw buffer and a push past the bad byte.
            let longest = pushes.iter().map(|p| p.len()).max().unwrap().min(100_000);
            assert_eq!(out[frame_start..mark], stream[frame_start..mark]);
            assert!(mark < bad_at + 512 + 2 * longest, "{bad:?}: {mark}");
            let last = &out[mark + 10..];
            let json = last
                .strip_prefix(b"data: ")
                .unwrap()
                .strip_suffix(b"\n\n")
                .unwrap();
            let error: serde_json::Value = serde_json::from_slice(json).unwrap();
            assert_eq!(error["type"], "RUN_ERROR");
            assert_eq!(error["code"], "AGUI_STREAM_VIOLATION");
            assert_eq!(
                error["message"],
                want.as_str(),
                "{bad:?}, pushes of {longest}"
            );
        }
    }
}

/// A line that never ends, whose JSON went bad early, stops the stream
/// soon after it outgrew the raw buffer instead of going out for ever.
#[test]
fn an_endless_bad_line_stops_the_stream() {
    let mut stream = support::sse(&[RUN_STARTED]);
    stream.extend_from_slice(b"data: {\"type\":tru");
    stream.extend(std::iter::repeat_n(b'e', 10 << 20));
    let (mut frames, mut raw) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    let mut out = Vec::new();
    let mut read = 0;
    for p in stream.chunks(1460) {
        let pushed = r.push(p, &mut out).unwrap();
        read += p.len();
        if pushed.ended {
            break;
        }
    }
    assert!(read < 100_000, "read {read} bytes before the stop");
    assert!(out.len() < 100_000, "{} bytes out", out.len());
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("\ndata: \u{1}\n\n"));
    assert!(
        text.ends_with("\"code\":\"AGUI_STREAM_VIOLATION\"}\n\n"),
        "{}",
        &text[text.len() - 300..]
    );
    assert_eq!(r.stats().cut, 1);
}

/// A block that goes out ahead of its verdict (through 64-byte buffers
/// here) may stop mid-line: the next piece goes on with that line. A line
/// that merely ends in `data` is not re-lined, and a bare `data` line
/// split between pieces is (a fuzz find: each piece was read as starting
/// a line).
#[test]
fn a_block_streamed_in_pieces_is_re_lined_as_a_whole() {
    let block = format!(
        "data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"{}\"}}\n: {}data\ndata\n: {}\n\n",
        "s".repeat(600),
        "x".repeat(100),
        "z".repeat(40)
    );
    let mut stream = support::sse(&[RUN_STARTED.to_string(), support::start("m")]);
    stream.extend_from_slice(block.as_bytes());
    // A block without data.
    let comment = format!(": {}data\n: {}\n\n", "x".repeat(600), "z".repeat(40));
    stream.extend_from_slice(comment.as_bytes());
    stream.extend_from_slice(&support::sse(&[
        support::end("m"),
        RUN_FINISHED.to_string(),
    ]));
    let (whole, _) = rewrite(&stream, Config::new(), Options::new(), stream.len());
    let text = String::from_utf8_lossy(&whole);
    assert!(text.contains("xdata\ndata:\n: z"), "{text}");
    for piece in 1..=120 {
        let (mut frames, mut raw) = ([0u8; 64], [0u8; 64]);
        let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
        let mut small = Vec::new();
        for p in stream.chunks(piece) {
            r.push(p, &mut small).unwrap();
        }
        r.finish(&mut small).unwrap();
        assert!(r.stats().streamed >= 2);
        assert!(
            small == whole,
            "{piece}-byte pushes:\n{}\n{}",
            small.escape_ascii(),
            whole.escape_ascii()
        );
    }
}

/// A block without data that never ended is forwarded at the end, and
/// terminated with the repair, whether or not it outgrew the raw buffer
/// (found by the fuzzer: through small buffers it had gone out already).
#[test]
fn an_unfinished_block_without_data_is_forwarded_at_the_end() {
    let mut stream = support::sse(&[RUN_STARTED, RUN_FINISHED]);
    stream.extend_from_slice(b": a comment longer than the buffers");
    stream.extend_from_slice(&[b'x'; 600]);
    for repair in [true, false] {
        let options = Options::new().repair(repair);
        let (big, _) = rewrite(&stream, Config::new(), options, 7);
        let (small, _) = rewrite_small(&stream, options, 7);
        let mut want = stream.clone();
        if repair {
            want.extend_from_slice(b"\n\n");
        }
        assert_eq!(big, want);
        assert_eq!(small, want);
    }
}

/// Blocks that outgrow the raw buffer one after another, through small
/// buffers, come out as they came (found by the fuzzer: the withheld bytes
/// of one were written again as the next one's).
#[test]
fn blocks_streamed_one_after_another_come_out_once() {
    let mut stream = b": short\n\n".to_vec();
    for i in 0..3 {
        stream.extend_from_slice(format!(": {i} {}\n\n", "y".repeat(700)).as_bytes());
    }
    stream.extend_from_slice(&support::sse(&[RUN_STARTED, RUN_FINISHED]));
    for piece in [73, 100, 701] {
        let (out, stats) = rewrite_small(&stream, Options::new(), piece);
        assert!(out == stream, "{piece}-byte pushes");
        assert_eq!(stats.streamed, 3);
    }
}

/// A chunk frame that outgrew the frame buffer is shown with stand-ins
/// (`metadata` emptied here); its expansion must be encoded, and an encoder
/// would write the stand-ins: the stream stops with a capacity error
/// instead of forwarding `"metadata":{}` (a fuzz find, 64-byte buffers, the
/// frame split over two pushes).
#[test]
fn an_event_with_stand_ins_is_never_re_encoded() {
    let stream = concat!(
        "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
        "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m1\",\"delta\":\"a\"}\n\n",
        "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"metadata\":{\"k\":1},\"rawEvent\":{\"y\":2}}\n\n",
        "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
    )
    .as_bytes();
    let split = stream.len() - 80;
    let (mut frames, mut raw) = ([0u8; 64], [0u8; 1024]);
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    let mut out = Vec::new();
    for piece in [&stream[..split], &stream[split..]] {
        rewriter.push(piece, &mut out).unwrap();
    }
    rewriter.finish(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("\"metadata\":{}"), "{text}");
    assert!(
        text.ends_with(
            "data: {\"type\":\"RUN_ERROR\",\"message\":\"an event larger than the frame buffer cannot be re-encoded\",\"code\":\"AGUI_STREAM_CAPACITY\"}\n\n"
        ),
        "{text}"
    );
    assert_eq!(rewriter.stats().cut, 1);
    // With a frame buffer that holds it, the same pushes expand it whole.
    let (whole, _) = rewrite(stream, Config::new(), Options::new(), split);
    assert!(
        String::from_utf8(whole)
            .unwrap()
            .contains("\"metadata\":{\"k\":1}")
    );
}

/// Found by the generator-driven `gen_rewrite` target: closing what is open
/// must not close a call to a denied tool, whose START was never forwarded.
#[test]
fn close_open_does_not_close_a_denied_call() {
    for dialect in [Dialect::V1, Dialect::V0] {
        let open_call = [
            RUN_STARTED,
            r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"calc"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"c2","toolCallName":"search"}"#,
        ];
        // A run cut short, and one stopped by a violation.
        let cut = support::sse(&open_call);
        let mut stopped = open_call.to_vec();
        stopped.push(RUN_FINISHED);
        let stopped = support::sse(&stopped);
        // In any pieces, through large and small buffers (a denied START
        // larger than the buffer is a capacity: tested above).
        for (stream, piece, buffer) in [&cut, &stopped]
            .into_iter()
            .flat_map(|s| [(s, 1, 4096), (s, 7, 128), (s, usize::MAX, 4096)])
        {
            let (mut frames, mut raw) = (vec![0u8; buffer], vec![0u8; buffer]);
            let options = Options::new().close_open(true);
            let mut tables = ToolTables::new();
            tables.deny("calc").unwrap();
            let mut r = Rewriter::new(&mut frames, &mut raw, config(dialect), options);
            r.deny_tools(&mut tables);
            let mut out = Vec::new();
            for p in stream.chunks(piece.min(stream.len())) {
                r.push(p, &mut out).unwrap();
            }
            r.finish(&mut out).unwrap();
            let text = String::from_utf8_lossy(&out);
            assert!(!text.contains("c1"), "{dialect:?}: {text}");
            assert!(
                text.contains(r#"{"type":"TOOL_CALL_END","toolCallId":"c2"}"#),
                "{dialect:?}: {text}"
            );
            assert_eq!(events(&out, config(dialect)).1, Ok(()), "{text}");
        }
    }
}

/// A violation's `RUN_ERROR` quotes the pipeline's message, which may name
/// the calls it is about: if one of them is to a denied tool, the message
/// is withheld.
#[test]
fn a_run_error_does_not_name_a_denied_call() {
    for dialect in [Dialect::V1, Dialect::V0] {
        let stream = support::sse(&[
            RUN_STARTED,
            r#"{"type":"TOOL_CALL_START","toolCallId":"call-7","toolCallName":"calc"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"call-8","toolCallName":"search"}"#,
            RUN_FINISHED,
        ]);
        // In any pieces, through large and small buffers.
        for (piece, buffer) in [(1, 4096), (7, 128), (stream.len(), 4096)] {
            let run_error = |deny: Option<&str>| {
                let (mut frames, mut raw) = (vec![0u8; buffer], vec![0u8; buffer]);
                let mut tables = ToolTables::new();
                let mut r = Rewriter::new(&mut frames, &mut raw, config(dialect), Options::new());
                if let Some(name) = deny {
                    tables.deny(name).unwrap();
                    r.deny_tools(&mut tables);
                }
                let mut out = Vec::new();
                for p in stream.chunks(piece) {
                    r.push(p, &mut out).unwrap();
                }
                r.finish(&mut out).unwrap();
                let text = String::from_utf8(out).unwrap();
                let last = lines(text.as_bytes()).pop().unwrap();
                (text, last)
            };
            // Undenied, the message names both calls.
            let (_, last) = run_error(None);
            assert!(last.contains("call-7") && last.contains("call-8"), "{last}");
            let (_, last) = run_error(Some("shell"));
            assert!(last.contains("call-7") && last.contains("call-8"), "{last}");
            // Denied, nothing of the call goes out.
            let (text, last) = run_error(Some("calc"));
            assert!(
                !text.contains("call-7"),
                "{dialect:?} {piece} {buffer}: {text}"
            );
            assert_eq!(
                last,
                r#"data: {"type":"RUN_ERROR","message":"the message is withheld: it names a call to a denied tool","code":"AGUI_STREAM_VIOLATION"}"#,
                "{dialect:?} {piece} {buffer}"
            );
        }
    }
}

/// Found by `gen_rewrite`: when one more denied call than the filter holds
/// ends the stream, closing what is open must not close that call (its
/// START never went out), nor, since the filter cannot tell them apart, the
/// calls that did: the `RUN_ERROR` ends the run with them open.
#[test]
fn close_open_after_the_denied_calls_overflow_closes_no_call() {
    for dialect in [Dialect::V1, Dialect::V0] {
        let mut input = vec![
            RUN_STARTED.to_owned(),
            r#"{"type":"TOOL_CALL_START","toolCallId":"k","toolCallName":"search"}"#.to_owned(),
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#.to_owned(),
        ];
        for i in 0..=DENIED_CALLS {
            input.push(format!(
                r#"{{"type":"TOOL_CALL_START","toolCallId":"c{i}","toolCallName":"calc"}}"#
            ));
            input.push(format!(r#"{{"type":"TOOL_CALL_END","toolCallId":"c{i}"}}"#));
        }
        let stream = support::sse(&input);
        for piece in [1, 9, stream.len()] {
            let (mut frames, mut raw) = (vec![0u8; 4096], vec![0u8; 4096]);
            let options = Options::new().close_open(true);
            let mut tables = ToolTables::new();
            tables.deny("calc").unwrap();
            let mut r = Rewriter::new(&mut frames, &mut raw, config(dialect), options);
            r.deny_tools(&mut tables);
            let mut out = Vec::new();
            for p in stream.chunks(piece) {
                r.push(p, &mut out).unwrap();
            }
            r.finish(&mut out).unwrap();
            let text = String::from_utf8_lossy(&out);
            assert_eq!(
                lines(&out)[1..],
                [
                    input[1].clone(),
                    input[2].clone(),
                    r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#.into(),
                    r#"{"type":"RUN_ERROR","message":"more calls to denied tools in this run than the filter holds","code":"AGUI_STREAM_CAPACITY"}"#.into(),
                ]
                .map(|e| format!("data: {e}")),
                "{dialect:?} {piece}: {text}"
            );
            assert_eq!(events(&out, config(dialect)).1, Ok(()), "{text}");
        }
    }
}

/// Found by the byte-level `rewrite` target: a V0 `RUN_STARTED` rejected
/// for `"subagentRunId": null` and dropped must not start a run, or the
/// `RUN_ERROR` after it goes out as a second one in a row.
#[test]
fn a_dropped_run_started_starts_no_run() {
    let stream = support::sse(&[
        r#"{"type":"RUN_ERROR","message":"x"}"#,
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","subagentRunId":null}"#,
        r#"{"type":"RUN_ERROR","message":"x"}"#,
    ]);
    let options = Options::new().on_violation(OnViolation::Drop);
    for piece in [1, 5, stream.len()] {
        let (out, stats) = rewrite(&stream, config(Dialect::V0), options, piece);
        // The RUN_STARTED is a violation, the second RUN_ERROR a terminal
        // event after the first: both dropped.
        assert_eq!(
            (stats.violations, stats.duplicate_terminals),
            (1, 1),
            "{stats:?}"
        );
        assert_eq!(lines(&out).len(), 1, "{}", String::from_utf8_lossy(&out));
        assert_eq!(events(&out, config(Dialect::V0)).1, Ok(()));
    }
}
