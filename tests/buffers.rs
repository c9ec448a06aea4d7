//! The frame buffer is a performance knob: with any buffer, from the
//! smallest to one larger than every frame, and any push size, every
//! corpus stream gives the same events and verdict. A frame larger than
//! the buffer is checked as it spills past it: its event is the same but
//! for the members named as stand-ins, which hold values reduced at any
//! depth (empty values of the same kind, array elements let go) — or,
//! where a rule needs what did not fit, the frame is
//! `Capacity::FrameBuffer` (`Capacity::JsonDepth` when it nests deeper
//! than 64 levels and the buffer cannot spare room for more). A syntax
//! error in a frame that spills is the reference's verdict. From 1 KiB on,
//! no corpus stream stops.

mod support;

use agui_stream::{Capacity, Dialect, ErrorKind, StandIns};
use support::stand_ins::{run, same_but_stand_ins};

/// The same event, but that `got` may show stand-ins.
fn same_event(got: &(u64, Vec<u8>, StandIns), want: &(u64, Vec<u8>, StandIns)) -> bool {
    got.0 == want.0 && (got.1 == want.1 || same_but_stand_ins(&want.1, &got.1, got.2))
}

fn same_events(got: &[(u64, Vec<u8>, StandIns)], want: &[(u64, Vec<u8>, StandIns)]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| same_event(g, w))
}

#[test]
#[cfg_attr(miri, ignore = "every corpus stream many times")]
fn every_buffer_gives_the_verdict_or_names_the_frame_that_did_not_fit() {
    let mut streams: Vec<(String, Vec<u8>)> = Vec::new();
    let extra = support::manifest_in(&support::extra_dir());
    for case in support::manifest().into_iter().chain(extra) {
        if case.category != "sse-quirk" {
            streams.push((case.name.clone(), case.stream()));
        }
    }
    for path in support::sse_files(&support::real_dir()) {
        streams.push((path.display().to_string(), support::read(&path)));
    }
    let (mut same, mut spilled, mut stood_in) = (0, [0; 3], 0);
    for (name, stream) in &streams {
        for dialect in [Dialect::V1, Dialect::V0] {
            let want = run(stream, dialect, 1 << 24, 1 << 16);
            for (b, buffer) in [64, 512, 1024].into_iter().enumerate() {
                for push in [1, 7, 1460] {
                    if push == 1 && stream.len() > 20_000 {
                        continue; // the long runs: 7-byte pushes split them enough
                    }
                    let got = run(stream, dialect, buffer, push);
                    let ctx = format!("{name} {dialect:?}, buffer {buffer}, pushes of {push}");
                    // A spilled frame's JSON is checked 64 levels deep where
                    // the buffer cannot spare room for more.
                    let too_large = [
                        ErrorKind::Capacity(Capacity::FrameBuffer {
                            capacity: buffer as u32,
                        }),
                        ErrorKind::Capacity(Capacity::JsonDepth { limit: 64 }),
                    ];
                    match &got.1 {
                        Err((e, _)) if too_large.contains(&e.kind) => {
                            // From 1 KiB on, every corpus frame gets its verdict.
                            assert!(buffer < 1024, "{ctx}: stopped at {e:?}");
                            // What came before the frame that did not fit.
                            let before: Vec<_> = want
                                .0
                                .iter()
                                .filter(|(f, ..)| *f < e.frame)
                                .cloned()
                                .collect();
                            assert!(
                                same_events(&got.0, &before),
                                "{ctx}: other events before {e:?}"
                            );
                            if let Err((w, _)) = &want.1 {
                                assert!(w.frame >= e.frame, "{ctx}: {w:?} before {e:?}");
                                assert!(
                                    w.frame > e.frame || !matches!(w.kind, ErrorKind::Json(_)),
                                    "{ctx}: the reference's JSON error {w:?} became {e:?}"
                                );
                            }
                            spilled[b] += 1;
                        }
                        _ => {
                            assert!(same_events(&got.0, &want.0), "{ctx}: other events");
                            assert_eq!(got.1, want.1, "{ctx}");
                            same += 1;
                            stood_in += usize::from(got.0.iter().any(|e| !e.2.is_empty()));
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "{same} runs as with a large buffer ({stood_in} with stand-ins); stopped at a frame that did not fit: {} at 64 bytes, {} at 512",
        spilled[0], spilled[1]
    );
    assert!(
        stood_in > 50 && same > 1000,
        "{spilled:?} spilled, {same} same, {stood_in} with stand-ins"
    );
}

/// A backslash before an astral character is a bad escape that V8 words as
/// an unexpected token (it reads the escape a UTF-16 unit at a time): the
/// same error whether the frame is read whole or spills past the buffer,
/// worded as an unexpected token both ways (a fuzz find: the spilled frame
/// changed the error's kind with its words).
#[test]
fn an_escaped_astral_character_is_the_same_error_in_any_buffer() {
    let stream = support::sse(&[format!(
        r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{}\😀 after"}}"#,
        "x".repeat(100)
    )]);
    for dialect in [Dialect::V1, Dialect::V0] {
        let (_, whole) = run(&stream, dialect, 1 << 16, 1 << 16);
        let (whole, whole_message) = whole.unwrap_err();
        assert!(
            matches!(whole.kind, ErrorKind::Json(e) if e.kind == agui_stream::json::ErrorKind::BadEscape),
            "{whole:?}"
        );
        assert!(
            whole_message.starts_with("Unexpected token"),
            "{whole_message}"
        );
        for push in [1, 7, 1460] {
            let (_, spilled) = run(&stream, dialect, 64, push);
            let (spilled, message) = spilled.unwrap_err();
            assert_eq!(spilled, whole, "pushes of {push}");
            assert!(message.starts_with("Unexpected token"), "{message}");
        }
    }
}

/// V0 passes unknown members through. When one of several is too large
/// for the buffer, it alone stands in: the others keep their values,
/// though one bit (`StandIns::unlisted`) covers them all (a fuzz find: the
/// comparison took every unlisted member for a stand-in).
#[test]
fn one_unlisted_member_stands_in_and_the_others_keep_their_values() {
    let event = format!(
        r#"{{"type":"REASONING_START","messageId":"r","small":"kept","large":{{"k":"{}"}},"also":[1]}}"#,
        "x".repeat(600)
    );
    let stream = support::sse(&[
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#.to_string(),
        event,
    ]);
    let (whole, _) = run(&stream, Dialect::V0, 1 << 16, 1 << 16);
    let (small, _) = run(&stream, Dialect::V0, 512, 7);
    let (w, s) = (&whole[1], &small[1]);
    assert!(s.2.unlisted() && s.2.covers("small") && s.2.covers("large"));
    let text = String::from_utf8_lossy(&s.1);
    assert!(
        text.contains(r#""small":"kept""#)
            && text.contains(r#""large":{}"#)
            && text.contains(r#""also":[1]"#),
        "{text}"
    );
    assert!(same_but_stand_ins(&w.1, &s.1, s.2));
    // A kept value that differs from the whole one is still a difference.
    let changed = String::from_utf8(s.1.clone())
        .unwrap()
        .replace("kept", "lost");
    assert!(!same_but_stand_ins(&w.1, changed.as_bytes(), s.2));
}
