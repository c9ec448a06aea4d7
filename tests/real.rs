//! Real captures (`tests/corpus/real`, see `../shared/corpus/real/README.md`):
//! every producer's stream decodes without error in both dialects, one event
//! per frame, each reported at the frame's exact byte range.

mod support;

use agui_stream::{Dialect, Event, FrameInfo};
use support::dialect_name;

/// One `data: <json>\n\n` frame of a capture, located by hand.
struct Frame {
    start: u64,
    end: u64,
    event_type: String,
}

/// Splits a capture into frames. The captures have a fixed shape (a
/// `data:` line, then a blank line, LF only); anything else fails the test.
fn frames(name: &str, bytes: &[u8]) -> Vec<Frame> {
    let text = std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{name}: not UTF-8: {e}"));
    assert!(!text.contains('\r'), "{name}: the captures use LF only");
    let mut frames = Vec::new();
    let mut offset = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let (line, after) = rest
            .split_once("\n\n")
            .unwrap_or_else(|| panic!("{name}: byte {offset}: frame without a blank line"));
        assert!(
            !line.contains('\n'),
            "{name}: byte {offset}: a frame of one line expected"
        );
        let event_type = line
            .strip_prefix(r#"data: {"type":""#)
            .and_then(|t| t.split_once('"'))
            .unwrap_or_else(|| panic!("{name}: byte {offset}: not a data line: {line}"))
            .0
            .to_owned();
        let len = line.len() + 2;
        frames.push(Frame {
            start: offset as u64,
            end: (offset + len) as u64,
            event_type,
        });
        offset += len;
        rest = after;
    }
    frames
}

#[test]
fn real_captures_decode_cleanly() {
    let files = support::sse_files(&support::real_dir());
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "agent-framework-tool-call.sse",
            "langgraph-tool-call.sse",
            "pydantic-ai-tool-call.sse"
        ]
    );
    let mut counts = Vec::new();
    for (path, name) in files.iter().zip(&names) {
        let bytes = support::read(path);
        let want = frames(name, &bytes);
        assert!(want.len() >= 10, "{name}: only {} frames", want.len());
        for dialect in [Dialect::V1, Dialect::V0] {
            let what = format!("{name} {}", dialect_name(dialect));
            let mut seen: Vec<(String, FrameInfo)> = Vec::new();
            let mut buffer = vec![0u8; support::FRAME_BUFFER];
            let mut pipeline = agui_stream::Pipeline::new(
                &mut buffer,
                agui_stream::Config::new().dialect(dialect),
            );
            let mut sink = |ev: &Event<'_>, frame: &FrameInfo| {
                let mut json = Vec::new();
                agui_stream::encode(ev, &mut json).expect("encodes");
                support::canon::canonicalize(&json).expect("the encoder writes JSON");
                seen.push((ev.event_type().as_str().to_owned(), *frame));
            };
            pipeline
                .push(&bytes, &mut sink)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let summary = pipeline
                .finish(&mut sink)
                .unwrap_or_else(|e| panic!("{what}: {e}"));

            assert_eq!(summary.frames, want.len() as u64, "{what}: frames");
            assert_eq!(summary.events, want.len() as u64, "{what}: events");
            assert_eq!(summary.bytes, bytes.len() as u64, "{what}: bytes");
            assert!(!summary.unterminated_frame, "{what}: unterminated frame");
            assert_eq!(seen.len(), want.len(), "{what}: events delivered");
            for (i, ((ty, info), frame)) in seen.iter().zip(&want).enumerate() {
                let got = (
                    info.index,
                    info.start,
                    info.end,
                    info.terminated,
                    info.original,
                );
                let want = (i as u64, frame.start, frame.end, true, true);
                assert_eq!(got, want, "{what}: event {i}");
                assert!(
                    !info.spilled && info.stand_ins.is_empty(),
                    "{what}: event {i}"
                );
                assert_eq!(*ty, frame.event_type, "{what}: event {i}");
            }
        }
        counts.push(format!("{name}: {} frames", want.len()));
    }
    eprintln!("{}", counts.join(", "));
}

/// The same through the oracle-form driver the other tests use, in pushes
/// of 61 bytes (frames span pushes and go through the buffer): an `ok`
/// result and one event per frame.
#[test]
fn real_captures_through_the_common_driver() {
    for path in support::sse_files(&support::real_dir()) {
        let bytes = support::read(&path);
        let n = frames(&path.display().to_string(), &bytes).len();
        for dialect in [Dialect::V1, Dialect::V0] {
            let out = support::run(&bytes, dialect, 61);
            assert_eq!(out.result, support::Verdict::Ok, "{}", path.display());
            assert_eq!(out.events.len(), n, "{}", path.display());
        }
    }
}
