//! Linear time, measured as work (bytes scanned or copied, counted by the
//! `work-count` feature), not wall time: a ~1 MB stream pushed whole and
//! pushed one byte at a time must cost about the same.
#![cfg(feature = "work-count")]

mod support;

use agui_stream::testing::take_work;
use agui_stream::{Config, Dialect, Event, FrameInfo, Pipeline, RequestChecker};

/// About 1 MB: the real captures, repeated.
fn stream() -> Vec<u8> {
    let mut one = Vec::new();
    for path in support::sse_files(&support::real_dir()) {
        one.extend(support::read(&path));
    }
    let mut out = Vec::new();
    while out.len() < 1 << 20 {
        out.extend_from_slice(&one);
    }
    out
}

fn work_for(stream: &[u8], push: usize, dialect: Dialect) -> (usize, u64) {
    let mut buf = vec![0u8; 1 << 16];
    let mut p = Pipeline::new(&mut buf, Config::new().dialect(dialect));
    let mut events = 0u64;
    let mut sink = |_: &Event<'_>, _: &FrameInfo| events += 1;
    take_work();
    for piece in stream.chunks(push) {
        p.push(piece, &mut sink).unwrap();
    }
    p.finish(&mut sink).unwrap();
    (take_work(), events)
}

/// The only test in this binary: the work counter is process-global.
#[test]
fn work_does_not_depend_on_the_split() {
    let s = stream();
    for dialect in [Dialect::V1, Dialect::V0] {
        let (whole, events_whole) = work_for(&s, s.len(), dialect);
        let (bytewise, events_bytewise) = work_for(&s, 1, dialect);
        let (odd, _) = work_for(&s, 7, dialect);
        assert_eq!(events_whole, events_bytewise);
        let ratio = bytewise as f64 / whole as f64;
        eprintln!(
            "{dialect:?}: {} bytes; work whole {whole}, 1-byte pushes {bytewise}, 7-byte pushes {odd}; ratio {ratio:.3}",
            s.len()
        );
        // Per byte: the scanners' work is a small multiple of the input.
        assert!(whole < 8 * s.len(), "{whole} for {} bytes", s.len());
        // Splitting adds at most one copy of each byte into the buffer.
        assert!(ratio < 1.5, "ratio {ratio}");
        assert!((odd as f64) < 1.5 * whole as f64);
    }
    // A run ten times as long costs ten times the work, forgotten owner
    // records, compacted id storage and checked tool-call arguments
    // included.
    let per_byte = |calls: usize| {
        let s = long_run(calls);
        let mut buf = vec![0u8; 1 << 16];
        let config = Config::new().check_tool_args(true);
        let mut p = Pipeline::new(&mut buf, config);
        let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
        take_work();
        for piece in s.chunks(1460) {
            p.push(piece, &mut sink).unwrap();
        }
        assert!(p.finish(&mut sink).unwrap().is_complete());
        take_work() as f64 / s.len() as f64
    };
    // Frames that spill past a 64-byte buffer cost about what they cost
    // whole: each byte is scanned, and read for the stand-in, once (at most
    // twice the work of a frame that fits). The delta comes before the id,
    // so that the frames that fit take the stages too, not a run of deltas
    // (which reads each byte once: `pipeline::delta_run`).
    let big = {
        let delta = "x".repeat(20_000);
        let mut events = vec![support::RUN_STARTED.to_owned(), support::start("m")];
        for _ in 0..50 {
            events.push(format!(
                r#"{{"type":"TEXT_MESSAGE_CONTENT","delta":"{delta}","messageId":"m"}}"#
            ));
        }
        support::sse(&events)
    };
    let spill_work = |buffer: usize, push: usize| {
        let mut buf = vec![0u8; buffer];
        let mut p = Pipeline::new(&mut buf, Config::new()).policy(agui_stream::Policy::Monitor);
        let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
        take_work();
        for piece in big.chunks(push) {
            p.push(piece, &mut sink).unwrap();
        }
        // Spilled or not, every frame passes (as stand-ins when spilled).
        assert_eq!(p.finish(&mut sink).unwrap().violations, 0);
        take_work()
    };
    let (kept, spilled) = (spill_work(1 << 20, big.len()), spill_work(64, 7));
    eprintln!("50 frames of 20 kB: work {kept} whole, {spilled} spilled in 7-byte pushes");
    assert!((spilled as f64) < 2.0 * kept as f64, "{spilled} vs {kept}");
    // A message history read element by element: the same work per byte
    // for 1,000 messages as for 10,000, and about what it costs whole.
    let history = |n: usize, buffer: usize| {
        let message = |i: usize| {
            format!(
                r#"{{"id":"m{i}","role":"assistant","content":"step {i}","toolCalls":[{{"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}"#
            )
        };
        snapshot_work(n, message, buffer, 1460).0
    };
    let (short, long, whole) = (
        history(1_000, 1024),
        history(10_000, 1024),
        history(10_000, 1 << 24),
    );
    eprintln!(
        "message histories: work per byte {short:.2} (1,000 messages), {long:.2} (10,000), {whole:.2} whole"
    );
    assert!(
        long < 1.1 * short && long < 2.0 * whole,
        "{short} {long} {whole}"
    );
    // Histories whose messages each outgrow the buffer (a long text part
    // and an image's data, reduced at their depth): the same work per
    // byte for 100 messages as for 1,000, in any pushes.
    let nested = |n: usize, push: usize, buffer: usize| {
        let text = "t".repeat(1500);
        let data = "QUJD".repeat(500);
        let message = |i: usize| {
            format!(
                r#"{{"id":"m{i}","role":"user","content":[{{"type":"text","text":"{text}"}},{{"type":"image","source":{{"type":"data","value":"{data}","mimeType":"image/png"}}}}]}}"#
            )
        };
        let (work, spilled) = snapshot_work(n, message, buffer, push);
        assert_eq!(spilled, buffer == 1024);
        work
    };
    let (short, long, small, whole) = (
        nested(100, 1460, 1024),
        nested(1_000, 1460, 1024),
        nested(1_000, 7, 1024),
        nested(1_000, 1460, 1 << 24),
    );
    eprintln!(
        "nested histories: work per byte {short:.2} (100 messages), {long:.2} (1,000), {small:.2} (1,000 in 7-byte pushes), {whole:.2} whole"
    );
    assert!(
        long < 1.1 * short && small < 1.5 * long && long < 2.0 * whole,
        "{short} {long} {small} {whole}"
    );
    let (short, long) = (per_byte(1_000), per_byte(10_000));
    eprintln!("long runs: work per byte {short:.2} (1,000 tool calls), {long:.2} (10,000)");
    assert!(long < 1.1 * short, "{long} vs {short}");
    // A request body's history, each message checked as it ends: the same
    // work per byte for 1,000 messages as for 10,000, in any pushes,
    // through 1 KiB as through 16 MiB.
    let (short, long, bytewise, whole) = (
        request_work(1_000, 1024, 1460),
        request_work(10_000, 1024, 1460),
        request_work(1_000, 1024, 1),
        request_work(10_000, 1 << 24, 1 << 24),
    );
    eprintln!(
        "request histories: work per byte {short:.2} (1,000 messages), {long:.2} (10,000), {bytewise:.2} (1-byte pushes), {whole:.2} whole"
    );
    assert!(
        long < 1.1 * short && bytewise < 1.1 * short && long < 1.5 * whole,
        "{short} {long} {bytewise} {whole}"
    );
}

/// Work per byte of checking a request body of `n` messages (each with a
/// 1,500-byte text part and a tool call), through a `buffer`-byte buffer
/// in `push`-byte pushes.
fn request_work(n: usize, buffer: usize, push: usize) -> f64 {
    let text = "t".repeat(1500);
    let messages: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"id":"u{i}","role":"user","content":[{{"type":"text","text":"{text}"}}]}},{{"id":"a{i}","role":"assistant","toolCalls":[{{"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}"#
            )
        })
        .collect();
    let body = format!(
        r#"{{"threadId":"t","runId":"r","messages":[{}],"tools":[],"context":[]}}"#,
        messages.join(",")
    );
    let mut buf = vec![0u8; buffer];
    let mut checker = RequestChecker::new(&mut buf, Dialect::V1);
    take_work();
    for piece in body.as_bytes().chunks(push) {
        checker.push(piece).unwrap();
    }
    checker.finish().unwrap();
    take_work() as f64 / body.len() as f64
}

/// Work per byte of a run that is a MESSAGES_SNAPSHOT of `n` messages,
/// through a `buffer`-byte frame buffer in `push`-byte pushes, and whether
/// the snapshot spilled.
fn snapshot_work(
    n: usize,
    message: impl Fn(usize) -> String,
    buffer: usize,
    push: usize,
) -> (f64, bool) {
    let messages: Vec<String> = (0..n).map(message).collect();
    let snapshot = format!(
        r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{}]}}"#,
        messages.join(",")
    );
    let s = support::sse(&[support::RUN_STARTED, &snapshot]);
    let mut buf = vec![0u8; buffer];
    let mut p = Pipeline::new(&mut buf, Config::new());
    let mut spilled = false;
    let mut sink = |_: &Event<'_>, f: &FrameInfo| spilled |= f.spilled;
    take_work();
    for piece in s.chunks(push) {
        p.push(piece, &mut sink).unwrap();
    }
    p.finish(&mut sink).unwrap();
    (take_work() as f64 / s.len() as f64, spilled)
}

/// A run of `calls` tool calls, each with a message, arguments and result.
fn long_run(calls: usize) -> Vec<u8> {
    let mut events = vec![support::RUN_STARTED.to_owned()];
    for i in 0..calls {
        events.push(support::start(&format!("msg-{i:06}")));
        events.push(support::end(&format!("msg-{i:06}")));
        events.push(format!(
            r#"{{"type":"TOOL_CALL_START","toolCallId":"call-{i:06}","toolCallName":"read","parentMessageId":"msg-{i:06}"}}"#
        ));
        events.push(format!(
            r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"call-{i:06}","delta":"{{\"path\":\"src/{i}.rs\"}}"}}"#
        ));
        events.push(format!(
            r#"{{"type":"TOOL_CALL_END","toolCallId":"call-{i:06}"}}"#
        ));
        events.push(format!(
            r#"{{"type":"TOOL_CALL_RESULT","messageId":"res-{i:06}","toolCallId":"call-{i:06}","content":"ok"}}"#
        ));
    }
    events.push(support::RUN_FINISHED.to_owned());
    support::sse(&events)
}
