//! The hostile streams of the test suite as whole streams, named, for the
//! hosts that run the rewriter outside this process: the wasm module under
//! wasmi (`tests/wasm_plugin.rs`) and the proxy-wasm filter in a real Envoy
//! (`scripts/envoy-e2e.sh` writes them out with
//! `AGUI_HOSTILE_DIR=DIR cargo test --test adversarial write_hostile_streams`).
//!
//! Each is a kind `tests/adversarial.rs` checks in the pipeline, at a size
//! an interpreter gets through in seconds: nesting far past the depth
//! limit, strings and frames far past the buffers, invalid UTF-8, every
//! byte value, truncations, every capacity overrun, framing noise.

use super::{RUN_FINISHED, RUN_STARTED, end, run_of, start};

/// One SSE frame holding `payload` on a single `data:` line.
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = b"data: ".to_vec();
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\n\n");
    out
}

/// RUN_STARTED, the frame of `payload`, RUN_FINISHED.
fn in_run(payload: &[u8]) -> Vec<u8> {
    let mut out = frame(RUN_STARTED.as_bytes());
    out.extend_from_slice(&frame(payload));
    out.extend_from_slice(&frame(RUN_FINISHED.as_bytes()));
    out
}

/// `len` bytes of printable ASCII (no quote, no backslash).
fn text(len: usize) -> Vec<u8> {
    const PATTERN: &[u8] = b"The quick brown fox jumps over the lazy dog 0123456789. ";
    let mut out = PATTERN.repeat(len / PATTERN.len() + 1);
    out.truncate(len);
    out
}

fn with(prefix: &str, middle: &[u8], suffix: &str) -> Vec<u8> {
    let mut out = prefix.as_bytes().to_vec();
    out.extend_from_slice(middle);
    out.extend_from_slice(suffix.as_bytes());
    out
}

/// A valid stream with comments, `event`/`id` fields, CRLF and CR line
/// ends, multi-line data, escapes and chunks.
fn rich() -> Vec<u8> {
    concat!(
        ": hello\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
        "event: x\r\nid: 7\r\ndata: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\\u00e9\",\"role\":\"assistant\"}\r\n\r\n",
        "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\ndata:\"messageId\":\"m\\u00e9\",\n: c\ndata: \"delta\":\"h\\\"i \\ud83d\\ude00 \u{e9}\"}\n\n",
        "data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\u{e9}\"}\r\r",
        "data: {\"type\":\"TOOL_CALL_CHUNK\",\"toolCallId\":\"c1\",\"toolCallName\":\"f\",\"delta\":\"{\\\"a\\\":\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_CHUNK\",\"toolCallId\":\"c1\",\"delta\":\"1}\"}\n\n",
        "data: {\"type\":\"STATE_SNAPSHOT\",\"snapshot\":{\"a\":[1,-2.5e3,true,false,null,\"x\",{}]}}\n\n",
        "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
    )
    .as_bytes()
    .to_vec()
}

/// The hostile streams, by name (a file name without `.sse`).
pub fn streams() -> Vec<(String, Vec<u8>)> {
    const DEEP: usize = 300_000;
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let mut add = |name: &str, bytes: Vec<u8>| out.push((name.to_owned(), bytes));

    // Nesting: 300,000 levels of arrays and of objects in arrays.
    let arrays = [vec![b'['; DEEP], vec![b']'; DEEP]].concat();
    add(
        "deep-arrays-snapshot",
        in_run(&with(
            r#"{"type":"STATE_SNAPSHOT","snapshot":"#,
            &arrays,
            "}",
        )),
    );
    let mixed: Vec<u8> = [
        r#"{"k":["#.repeat(DEEP / 2),
        "0".into(),
        "]}".repeat(DEEP / 2),
    ]
    .concat()
    .into_bytes();
    add(
        "deep-mixed-raw-event",
        in_run(&with(
            r#"{"type":"CUSTOM","name":"n","value":1,"rawEvent":"#,
            &mixed,
            "}",
        )),
    );
    add(
        "deep-unclosed",
        in_run(&with(
            r#"{"type":"STATE_SNAPSHOT","snapshot":"#,
            &arrays[..DEEP],
            "",
        )),
    );

    // Sizes: a 2 MB delta, id and snapshot string (32 times the buffers),
    // a frame of 50,000 data lines, a 1 MB line that never ends.
    let mut big = frame(RUN_STARTED.as_bytes());
    big.extend(frame(start("m").as_bytes()));
    big.extend(frame(&with(
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""#,
        &text(2 << 20),
        r#""}"#,
    )));
    big.extend(frame(end("m").as_bytes()));
    big.extend(frame(RUN_FINISHED.as_bytes()));
    add("two-megabyte-delta", big);
    add(
        "two-megabyte-id",
        in_run(&with(
            r#"{"type":"TEXT_MESSAGE_START","messageId":""#,
            &text(2 << 20),
            r#""}"#,
        )),
    );
    add(
        "two-megabyte-snapshot-string",
        in_run(&with(
            r#"{"type":"STATE_SNAPSHOT","snapshot":{"s":""#,
            &text(2 << 20),
            r#""}}"#,
        )),
    );
    let mut lines = frame(RUN_STARTED.as_bytes());
    lines.extend_from_slice(b"data: {\"type\":\"STATE_SNAPSHOT\",\"snapshot\":[\n");
    for _ in 0..50_000 {
        lines.extend_from_slice(b"data: 1,\n");
    }
    lines.extend_from_slice(b"data: 1]}\n\n");
    add("fifty-thousand-data-lines", lines);
    let mut endless = frame(RUN_STARTED.as_bytes());
    endless.extend_from_slice(b"data: ");
    endless.extend_from_slice(&text(1 << 20));
    add("one-megabyte-line-never-ends", endless);

    // Bytes: invalid UTF-8 in a delta and in an id, every byte value in a
    // frame and as a stream, NULs, BOMs inside, CR-only line ends.
    let invalid: Vec<u8> = (0x80..=0xffu8).collect();
    let mut utf8 = frame(RUN_STARTED.as_bytes());
    utf8.extend(frame(start("m").as_bytes()));
    utf8.extend(frame(&with(
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""#,
        &invalid,
        r#""}"#,
    )));
    utf8.extend(frame(&with(
        r#"{"type":"TEXT_MESSAGE_END","messageId":""#,
        &invalid,
        r#""}"#,
    )));
    add("invalid-utf8", utf8);
    let every: Vec<u8> = (0..=255u8).collect();
    add("every-byte-in-a-frame", in_run(&every));
    add("every-byte-as-a-stream", every.repeat(64));
    add(
        "nul-bytes",
        [
            frame(RUN_STARTED.as_bytes()),
            vec![0; 4096],
            b"\n\n".to_vec(),
        ]
        .concat(),
    );
    add(
        "boms-inside",
        [
            b"\xef\xbb\xbf".to_vec(),
            frame(RUN_STARTED.as_bytes()),
            b"\xef\xbb\xbfdata: {}\n\n".to_vec(),
            frame(RUN_FINISHED.as_bytes()),
        ]
        .concat(),
    );
    add(
        "cr-only",
        rich()
            .iter()
            .map(|&b| if b == b'\n' { b'\r' } else { b })
            .collect(),
    );
    add("rich", rich());

    // Truncation at many bytes of a rich stream, and a run cut mid-frame.
    let rich = rich();
    for cut in (1..rich.len()).step_by(41) {
        add(&format!("rich-cut-at-{cut}"), rich[..cut].to_vec());
    }

    // Numbers and keys.
    add(
        "ten-thousand-digit-timestamp",
        in_run(
            format!(
                r#"{{"type":"CUSTOM","name":"n","value":1,"timestamp":{}}}"#,
                "9".repeat(10_000)
            )
            .as_bytes(),
        ),
    );
    let dup = r#""snapshot":1,"#.repeat(30_000);
    add(
        "thirty-thousand-duplicate-keys",
        in_run(format!(r#"{{"type":"STATE_SNAPSHOT",{dup}"snapshot":2}}"#).as_bytes()),
    );
    add(
        "lone-surrogates",
        run_of([
            start(r"\ud800"),
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"\ud800","delta":"\udc00\ud83d"}"#.into(),
            end(r"\ud800"),
        ]),
    );

    // Long runs and every capacity one past its limit.
    add(
        "three-thousand-tool-calls",
        run_of((0..3_000).flat_map(|i| {
            [
                format!(r#"{{"type":"TOOL_CALL_START","toolCallId":"c{i}","toolCallName":"f"}}"#),
                format!(r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"c{i}","delta":"{{}}"}}"#),
                format!(r#"{{"type":"TOOL_CALL_END","toolCallId":"c{i}"}}"#),
                format!(r#"{{"type":"TOOL_CALL_RESULT","messageId":"r{i}","toolCallId":"c{i}","content":"ok"}}"#),
            ]
        })),
    );
    let messages: Vec<String> = (0..30_000)
        .map(|i| format!(r#"{{"id":"m{i}","role":"user","content":"hi"}}"#))
        .collect();
    add(
        "thirty-thousand-message-snapshot",
        in_run(
            format!(
                r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{}]}}"#,
                messages.join(",")
            )
            .as_bytes(),
        ),
    );
    add(
        "open-ids-over-capacity",
        run_of((0..40).map(|i| start(&format!("m{i}")))),
    );
    add(
        "chunk-lanes-over-capacity",
        run_of((0..40).map(|i| {
            format!(r#"{{"type":"TEXT_MESSAGE_CHUNK","messageId":"m{i}","delta":"x","subagentRunId":"s{i}"}}"#)
        })),
    );
    add(
        "long-ids-over-id-storage",
        run_of((0..8).map(|i| start(&format!("{i}{}", "x".repeat(400))))),
    );
    add(
        "thirty-thousand-tiny-events",
        [
            frame(RUN_STARTED.as_bytes()),
            frame(start("m").as_bytes()),
            frame(br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}"#).repeat(30_000),
            b": ping\n\n".repeat(3_000),
        ]
        .concat(),
    );
    add("only-blank-lines", b"\n".repeat(30_000));
    add("only-comments", b": x\n".repeat(30_000));
    out
}
