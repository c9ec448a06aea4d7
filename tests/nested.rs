//! Never refuse a valid conversation (issue 26): a value of any size at any
//! depth — a 100 KB tool result in a history, an image in a user message, a
//! tool's JSON schema in a run's input, a patch operation's value, an
//! interrupt's response schema — goes through any frame buffer of 1 KiB and
//! more as it does through 16 MiB.
//!
//! The shapes are `scripts/gen_nested.py`'s (its small ones, with the
//! reference's answers, are in `tests/corpus/extra`), made here with
//! values of 100 KB and 300 KB. Through 1 KiB, 4 KiB and 64 KiB buffers in
//! 1-, 7- and 1460-byte pushes, in both dialects:
//! * the pipeline gives the events of a 16 MiB buffer (stand-ins aside)
//!   and the same verdict and message;
//! * the gateway writes the same bytes for a stream the 16 MiB run
//!   accepts, and ends with the same `RUN_ERROR` for one it rejects;
//! * cut in its largest frame's middle (and elsewhere), a stream the
//!   16 MiB run accepts ends in `AGUI_STREAM_TRUNCATED` at every buffer.

mod support;

use std::path::PathBuf;
use std::process::Command;

use agui_stream::rewrite::{Options, Rewriter};
use agui_stream::{Config, Dialect, Minting};
use support::stand_ins::{Run, run, same_but_stand_ins};

const WHOLE: usize = 16 << 20;
const BUFFERS: [usize; 3] = [1 << 10, 4 << 10, 64 << 10];

/// The shapes, made with large values of `scale` bytes: (name, stream).
fn shapes(scale: usize) -> Vec<(String, Vec<u8>)> {
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("agui-nested-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/gen_nested.py");
    let status = Command::new("python3")
        .arg(&script)
        .arg(&dir)
        .arg(scale.to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs scripts/gen_nested.py");
    assert!(status.success());
    let mut shapes: Vec<_> = support::sse_files(&dir)
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, support::read(&p))
        })
        .collect();
    shapes.sort();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(shapes.len() >= 70, "{} shapes", shapes.len());
    shapes
}

fn config(dialect: Dialect) -> Config {
    Config::new()
        .dialect(dialect)
        .minting(Minting::Deterministic)
}

fn gateway(stream: &[u8], dialect: Dialect, buffer: usize, push: usize, close: bool) -> Vec<u8> {
    let (mut frames, mut raw) = (vec![0u8; buffer], vec![0u8; buffer]);
    let options = Options::new().close_open(close);
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, config(dialect), options);
    let mut out = Vec::new();
    for piece in stream.chunks(push) {
        let pushed = rewriter.push(piece, &mut out).expect("a Vec has room");
        assert_eq!(pushed.read, piece.len());
    }
    rewriter.finish(&mut out).expect("a Vec has room");
    out
}

/// The output's last `RUN_ERROR` line, if any.
fn last_run_error(out: &[u8]) -> Option<String> {
    out.split(|&b| b == b'\n')
        .rev()
        .find(|line| line.starts_with(br#"data: {"type":"RUN_ERROR""#))
        .map(|line| String::from_utf8_lossy(line).into_owned())
}

fn assert_same(got: &Run, want: &Run, ctx: &str) {
    assert_eq!(got.1, want.1, "{ctx}: verdict");
    assert_eq!(got.0.len(), want.0.len(), "{ctx}: events");
    for (g, w) in got.0.iter().zip(&want.0) {
        assert!(
            g.0 == w.0 && (g.1 == w.1 || same_but_stand_ins(&w.1, &g.1, g.2)),
            "{ctx}: frame {}: {} is not {}",
            g.0,
            String::from_utf8_lossy(&g.1[..g.1.len().min(400)]),
            String::from_utf8_lossy(&w.1[..w.1.len().min(400)])
        );
    }
}

/// Every shape, every buffer, every push size: what 16 MiB gives.
fn same_through_every_buffer(scale: usize, pushes: &[usize]) {
    let (mut runs, mut stood_in, mut rejected) = (0, 0, 0);
    for (name, stream) in shapes(scale) {
        for dialect in [Dialect::V1, Dialect::V0] {
            let want = run(&stream, dialect, WHOLE, 1 << 16);
            let whole_out = gateway(&stream, dialect, WHOLE, 1460, false);
            rejected += usize::from(want.1.is_err());
            for buffer in BUFFERS {
                for &push in pushes {
                    let ctx = format!("{name} {dialect:?}, buffer {buffer}, pushes of {push}");
                    let got = run(&stream, dialect, buffer, push);
                    assert_same(&got, &want, &ctx);
                    stood_in += usize::from(got.0.iter().any(|e| !e.2.is_empty()));
                    let out = gateway(&stream, dialect, buffer, push, false);
                    match want.1 {
                        Ok(()) => assert!(out == whole_out, "{ctx}: the gateway's bytes"),
                        Err(_) => assert_eq!(
                            last_run_error(&out),
                            last_run_error(&whole_out),
                            "{ctx}: the gateway's end"
                        ),
                    }
                    runs += 1;
                }
            }
        }
    }
    eprintln!("{runs} runs, {stood_in} with stand-ins; {rejected} of the 16 MiB runs reject");
    assert!(
        stood_in > runs / 3 && rejected > 20,
        "{stood_in} {rejected}"
    );
}

#[test]
#[cfg_attr(miri, ignore = "megabytes of streams")]
fn values_of_100_kb_at_any_depth_go_through_any_buffer() {
    same_through_every_buffer(100_000, &[1, 7, 1460]);
}

#[test]
#[cfg_attr(miri, ignore = "megabytes of streams")]
fn values_of_300_kb_at_any_depth_go_through_any_buffer() {
    same_through_every_buffer(300_000, &[1460]);
}

/// The frame with the most bytes: its start and end.
fn largest_frame(stream: &[u8]) -> (usize, usize) {
    let mut best = (0, 0);
    let mut at = 0;
    while at < stream.len() {
        let end = stream[at..]
            .windows(2)
            .position(|w| w == b"\n\n")
            .map_or(stream.len(), |k| at + k + 2);
        if end - at > best.1 - best.0 {
            best = (at, end);
        }
        at = end;
    }
    best
}

#[test]
#[cfg_attr(miri, ignore = "megabytes of streams")]
fn a_run_cut_inside_its_largest_event_is_truncated_at_every_buffer() {
    const TRUNCATED: &str = r#"data: {"type":"RUN_ERROR","message":"the stream ended before the run finished","code":"AGUI_STREAM_TRUNCATED"}"#;
    let mut cuts_seen = 0;
    for (name, stream) in shapes(100_000) {
        let (start, end) = largest_frame(&stream);
        for dialect in [Dialect::V1, Dialect::V0] {
            if run(&stream, dialect, WHOLE, 1 << 16).1.is_err() {
                continue;
            }
            for cut in [
                (start + end) / 2,
                start + (end - start) / 3,
                start + 7,
                end - 3,
            ] {
                let cut_stream = &stream[..cut];
                for close in [false, true] {
                    let whole = gateway(cut_stream, dialect, WHOLE, 1460, close);
                    let want = last_run_error(&whole);
                    // A run started before the cut (a run cut in its
                    // RUN_STARTED never started).
                    if start > 0 {
                        assert_eq!(
                            want.as_deref(),
                            Some(TRUNCATED),
                            "{name} {dialect:?} cut at {cut}"
                        );
                    }
                    for buffer in BUFFERS {
                        for push in [7, 1460] {
                            let out = gateway(cut_stream, dialect, buffer, push, close);
                            let ctx =
                                format!("{name} {dialect:?} cut at {cut}, buffer {buffer}/{push}");
                            assert_eq!(last_run_error(&out), want, "{ctx}");
                            assert!(out.is_empty() || out.ends_with(b"\n\n"), "{ctx}");
                        }
                    }
                }
                cuts_seen += 1;
            }
        }
    }
    assert!(cuts_seen > 100, "{cuts_seen}");
}
