//! The sink's side of the push API: it can push back, and it hears the
//! input that carries no event.
//!
//! * A sink that says `Break` after every frame gets the same events and
//!   verdict as one that never does, on every corpus stream in both
//!   dialects, stopping and monitoring, pushed whole and in 7-byte pieces:
//!   each push reads up to the end of one frame and the caller pushes the
//!   rest.
//! * Frames, blocks without data and ignored frames account for every
//!   input byte but a BOM, blank lines and the LF of a CRLF.

mod support;

use support::record::{Heard, Recorder};

use agui_stream::{Config, Dialect, Error, Minting, Pipeline, Policy, Skipped, Summary};

type Run = (Vec<Heard>, Result<Summary, Error>);

/// Pushes `stream` in `piece`-byte pieces; a pushing-back sink has each
/// piece pushed again from where the pipeline stopped, until it is read.
fn run(stream: &[u8], (config, policy): (Config, Policy), piece: usize, push_back: bool) -> Run {
    let mut buf = vec![0u8; 1 << 16];
    let mut p = Pipeline::new(&mut buf, config).policy(policy);
    let mut sink = Recorder {
        push_back,
        ..Recorder::new()
    };
    let mut result = Ok(());
    'pieces: for piece in stream.chunks(piece) {
        let mut rest = piece;
        loop {
            let before = sink.heard.len();
            match p.push(rest, &mut sink) {
                Err(e) => {
                    result = Err(e);
                    break 'pieces;
                }
                Ok(read) => {
                    assert!(read <= rest.len());
                    let new = &sink.heard[before..];
                    if push_back {
                        // Sink calls about one frame or block at most, and
                        // the pipeline stopped right after it.
                        let ranges: Vec<_> = new.iter().map(Heard::range).collect();
                        assert!(ranges.windows(2).all(|w| w[0] == w[1]), "{ranges:?}");
                        if read < rest.len() {
                            let (_, end, _) = ranges.last().expect("a push-back");
                            assert_eq!(p.offset(), *end, "stopped at the block's end");
                        }
                    } else {
                        assert_eq!(read, rest.len());
                    }
                    rest = &rest[read..];
                    if rest.is_empty() {
                        break;
                    }
                }
            }
        }
    }
    let result = result.and_then(|()| p.finish(&mut sink));
    (sink.heard, result)
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

#[test]
#[cfg_attr(miri, ignore = "every corpus stream")]
fn pushing_back_after_every_frame_changes_nothing() {
    let mut pushed_back = 0;
    for (name, stream) in streams() {
        for dialect in [Dialect::V1, Dialect::V0] {
            for policy in [Policy::Stop, Policy::Monitor] {
                let config = Config::new()
                    .dialect(dialect)
                    .minting(Minting::Deterministic);
                for piece in [stream.len().max(1), 7] {
                    let want = run(&stream, (config, policy), piece, false);
                    let got = run(&stream, (config, policy), piece, true);
                    // Not assert_eq: a mismatch would print megabytes.
                    assert!(
                        got == want,
                        "{name} {dialect:?} {policy:?} in {piece}-byte pieces: {} heard, {} wanted",
                        got.0.len(),
                        want.0.len()
                    );
                    pushed_back += want.0.len();
                }
            }
        }
    }
    assert!(pushed_back > 10_000, "{pushed_back}");
}

/// Every byte is in a frame or a block without data, but for a BOM, blank
/// lines and the LF of a CRLF; ranges come in stream order.
#[test]
#[cfg_attr(miri, ignore = "every corpus stream")]
fn every_byte_is_accounted_for() {
    let (mut no_data, mut ignored, mut absorbed) = (0, 0, 0);
    for (name, stream) in streams() {
        for dialect in [Dialect::V1, Dialect::V0] {
            let config = Config::new().dialect(dialect);
            let (heard, _) = run(&stream, (config, Policy::Monitor), 64, false);
            let mut covered = vec![false; stream.len()];
            let mut last_end = 0;
            let mut ranges: Vec<_> = heard.iter().map(Heard::range).collect();
            ranges.dedup();
            for (start, end, _) in ranges {
                assert!(
                    last_end <= start && start <= end,
                    "{name}: {start}..{end} after {last_end}"
                );
                let end = end.min(stream.len() as u64);
                covered[start as usize..end as usize].fill(true);
                last_end = end;
            }
            for (i, (&byte, &covered)) in stream.iter().zip(&covered).enumerate() {
                let bom = stream.starts_with(b"\xEF\xBB\xBF") && i < 3;
                assert!(
                    covered || bom || byte == b'\n' || byte == b'\r',
                    "{name} {dialect:?}: byte {i} ({:?}) belongs to nothing",
                    byte as char
                );
            }
            for h in &heard {
                match h {
                    Heard::Skipped(Skipped::NoData { .. }) => no_data += 1,
                    Heard::Skipped(Skipped::Ignored(_)) => ignored += 1,
                    Heard::Skipped(Skipped::Absorbed(_)) => absorbed += 1,
                    _ => {}
                }
            }
        }
    }
    assert!(
        no_data >= 20 && ignored >= 2 && absorbed >= 1,
        "{no_data} blocks without data, {ignored} ignored, {absorbed} absorbed"
    );
}

#[test]
fn keep_alives_and_ignored_frames_are_heard() {
    let stream = b": ping\n\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\nid: 7\n\ndata: {\"type\":\"VENDOR_THING\"}\n\n";
    let (heard, result) = run(stream, (Config::new(), Policy::Stop), 5, false);
    assert!(result.is_ok());
    let kinds: Vec<_> = heard
        .iter()
        .map(|h| match h {
            Heard::Event(..) => "event".to_owned(),
            Heard::Skipped(Skipped::NoData { start, end }) => format!("no data {start}..{end}"),
            Heard::Skipped(Skipped::Ignored(f)) => format!("ignored frame {}", f.index),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["no data 0..8", "event", "no data 65..72", "ignored frame 1"]
    );
    // V0 rejects the unknown type instead.
    let (_, result) = run(
        stream,
        (Config::new().dialect(Dialect::V0), Policy::Stop),
        5,
        false,
    );
    assert!(result.is_err());
}
