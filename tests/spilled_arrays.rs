//! Arrays in frames larger than the buffer, read element by element: a
//! MESSAGES_SNAPSHOT's `messages`, a STATE_DELTA's `delta`, an
//! ACTIVITY_DELTA's `patch`. Each element is checked as it closes and let
//! go, so a message history of any length passes through a small buffer
//! with the verdict a buffer holding the whole frame gives; the owners its
//! messages record are remembered as forgotten ones, so a later ownership
//! check that would need one is `Capacity::Owners`, never a guess.

mod support;

use support::record::Recorder;
use support::stand_ins::same_but_stand_ins;
use support::{RUN_FINISHED, RUN_STARTED, sse};

use agui_stream::{
    Capacity, Config, Dialect, Error, ErrorKind, EventType, Key, Pipeline, StandIns,
};

/// Events (type, encoded, stand-ins) and the verdict with its message.
type Run = (
    Vec<(EventType, Vec<u8>, StandIns)>,
    Result<(), (Error, String)>,
);

fn run(stream: &[u8], dialect: Dialect, buffer: usize, piece: usize) -> Run {
    let mut buf = vec![0u8; buffer];
    let mut p = Pipeline::new(&mut buf, Config::new().dialect(dialect));
    let mut sink = Recorder::new();
    let verdict = stream
        .chunks(piece)
        .try_for_each(|piece| p.push(piece, &mut sink).map(drop))
        .and_then(|_| p.finish(&mut sink).map(|_| ()));
    let verdict = verdict.map_err(|e| (e, p.message(&e).to_string()));
    let events = sink
        .into_events()
        .into_iter()
        .map(|(ty, json, f)| (ty, json, f.stand_ins))
        .collect();
    (events, verdict)
}

/// `got` (through a small buffer) is `want` (through one that holds every
/// frame), but that its events may show stand-ins.
fn assert_same(got: &Run, want: &Run, ctx: &str) {
    assert_eq!(got.1, want.1, "{ctx}");
    assert_eq!(got.0.len(), want.0.len(), "{ctx}: events");
    for (g, w) in got.0.iter().zip(&want.0) {
        assert!(
            g.1 == w.1 || same_but_stand_ins(&w.1, &g.1, g.2),
            "{ctx}: {} vs {}",
            String::from_utf8_lossy(&g.1),
            String::from_utf8_lossy(&w.1)
        );
    }
}

const SMALL: usize = 1024;
const WHOLE: usize = 1 << 24;

/// Valid messages of every role (V1 and V0 alike), `i` making ids unique.
fn message(i: usize) -> String {
    match i % 7 {
        0 => format!(r#"{{"id":"u{i}","role":"user","content":"What is {i}?","name":"ana"}}"#),
        1 => format!(
            r#"{{"id":"a{i}","role":"assistant","content":"Let me check.","toolCalls":[{{"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{\"n\":{i}}}"}}}}]}}"#
        ),
        2 => format!(
            r#"{{"id":"t{i}","role":"tool","content":"42","toolCallId":"c{}"}}"#,
            i - 1
        ),
        3 => format!(
            r#"{{"id":"s{i}","role":"system","content":"Be terse. \u00e9 \"q\" [{{,:}}]"}}"#
        ),
        4 => format!(r#"{{"id":"d{i}","role":"developer","content":"dev"}}"#),
        5 => format!(
            r#"{{"id":"u{i}","role":"user","content":[{{"type":"text","text":"look"}},{{"type":"text","text":"again"}}]}}"#
        ),
        _ => format!(r#"{{"id":"a{i}","role":"assistant","content":"It is {i}."}}"#),
    }
}

/// A MESSAGES_SNAPSHOT of `n` messages, `bad` in place of message `at`,
/// with `before` and `after` as members around `messages`.
fn snapshot(n: usize, at: usize, bad: &str, before: &str, after: &str) -> String {
    let messages: Vec<String> = (0..n)
        .map(|i| if i == at { bad.to_owned() } else { message(i) })
        .collect();
    format!(
        r#"{{"type":"MESSAGES_SNAPSHOT"{before},"messages":[{}]{after}}}"#,
        messages.join(",\t ")
    )
}

/// Messages that break a rule in at least one dialect.
const BAD: &[&str] = &[
    r#"{"id":"x","role":"user","content":5}"#,
    r#"{"role":"user","content":"no id"}"#,
    r#"{"id":"x","role":"wizard","content":"V1 drops it, V0 refuses it"}"#,
    r#"{"id":"x","role":"assistant","toolCalls":[{"id":"c","type":"function"}]}"#,
    r#"{"id":"x","role":"tool","content":"no call id"}"#,
    r#"{"id":"x","role":"user","content":[{"type":"binary","mimeType":"image/png","data":"AAAA"}]}"#,
    r#"{"id":"x","role":"user","content":[{"type":"image"}]}"#,
    r#"{"id":"x","role":"activity","activityType":"PLAN","content":{}}"#,
    r#"{"id":"x","role":"reasoning","content":"r","encryptedValue":7}"#,
    r#"{"id":"x","role":"user","content":"fine","extra":{"deep":[1,2,{"three":3}]}}"#,
    r#"[]"#,
    r#""a string""#,
    r#"null"#,
];

#[test]
#[cfg_attr(miri, ignore = "thousands of runs")]
fn each_message_is_checked_as_the_whole_frame_would_be() {
    let n = 120; // ~10 KB: ten times the buffer
    let (mut errors, mut stood_in, mut runs) = (0, 0, 0);
    for dialect in [Dialect::V1, Dialect::V0] {
        for bad in BAD {
            for at in [0, 1, n / 2, n - 1] {
                for (before, after) in [
                    ("", ""),
                    (r#","timestamp":"late""#, ""),
                    ("", r#","timestamp":"late""#),
                    (r#","rawEvent":{"a":1}"#, r#","messages":[]"#),
                ] {
                    let snap = snapshot(n, at, bad, before, after);
                    let stream = sse(&[RUN_STARTED, &snap, RUN_FINISHED]);
                    let want = run(&stream, dialect, WHOLE, 1 << 16);
                    for piece in [7, 1460] {
                        let got = run(&stream, dialect, SMALL, piece);
                        let ctx = format!("{dialect:?} {bad} at {at} {before}|{after}, {piece}");
                        assert_same(&got, &want, &ctx);
                        runs += 1;
                        errors += usize::from(got.1.is_err());
                        stood_in += usize::from(got.0.iter().any(|e| e.2.contains(Key::Messages)));
                    }
                }
            }
        }
    }
    eprintln!("{runs} runs: {errors} errors, {stood_in} with a messages stand-in");
    assert!(
        errors > runs / 3 && stood_in > runs / 4,
        "{errors} {stood_in} of {runs}"
    );
}

/// A RUN_STARTED whose input holds the messages of [`snapshot`], with
/// `before` and `after` as members of the input around `messages`.
fn run_started(n: usize, at: usize, bad: &str, before: &str, after: &str) -> String {
    let messages: Vec<String> = (0..n)
        .map(|i| if i == at { bad.to_owned() } else { message(i) })
        .collect();
    format!(
        r#"{{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{{"threadId":"t","runId":"r"{before},"messages":[{}]{after},"tools":[]}},"timestamp":1}}"#,
        messages.join(",\t ")
    )
}

#[test]
#[cfg_attr(miri, ignore = "hundreds of runs")]
fn each_message_of_a_run_input_is_checked_as_the_whole_frame_would_be() {
    let n = 120;
    let (mut errors, mut stood_in, mut runs) = (0, 0, 0);
    for dialect in [Dialect::V1, Dialect::V0] {
        for bad in BAD {
            for at in [0, n / 2, n - 1] {
                for (before, after) in [
                    ("", ""),
                    (
                        r#","state":{"s":[1,{"t":"]"}]}"#,
                        r#","context":[{"description":"d","value":"v"}]"#,
                    ),
                    (r#","parentRunId":5"#, ""),
                    ("", r#","tools":[{"name":7}]"#),
                ] {
                    let stream = sse(&[&run_started(n, at, bad, before, after), RUN_FINISHED]);
                    let want = run(&stream, dialect, WHOLE, 1 << 16);
                    let got = run(&stream, dialect, SMALL, 1460);
                    let ctx = format!("{dialect:?} {bad} at {at} {before}|{after}");
                    assert_same(&got, &want, &ctx);
                    runs += 1;
                    errors += usize::from(got.1.is_err());
                    stood_in += usize::from(got.0.iter().any(|e| e.2.contains(Key::Input)));
                }
            }
        }
    }
    eprintln!("{runs} runs: {errors} errors, {stood_in} with an input stand-in");
    assert!(
        errors > runs / 3 && stood_in > runs / 8,
        "{errors} {stood_in} of {runs}"
    );
}

/// A message larger than the buffer is reduced as it streams (its large
/// content a stand-in): the verdict a buffer holding it gives.
#[test]
fn a_message_larger_than_the_buffer_is_read_as_it_streams() {
    // A user message, and a tool message without its call's id.
    for (role, valid) in [("user", true), ("tool", false)] {
        let big = format!(
            r#"{{"id":"x","role":"{role}","content":"{}"}}"#,
            "y".repeat(SMALL)
        );
        let snap = snapshot(20, 10, &big, "", "");
        let stream = sse(&[RUN_STARTED, &snap, RUN_FINISHED]);
        let want = run(&stream, Dialect::V1, WHOLE, 1460);
        assert_eq!(want.1.is_ok(), valid);
        for piece in [1, 7, 1460] {
            assert_same(&run(&stream, Dialect::V1, SMALL, piece), &want, role);
        }
    }
}

/// JSON Patch operations, one of them `bad`.
fn patch(ty: &str, key: &str, n: usize, at: usize, bad: &str) -> String {
    let ops: Vec<String> = (0..n)
        .map(|i| match i {
            _ if i == at => bad.to_owned(),
            _ if i % 3 == 0 => {
                format!(r#"{{"op":"add","path":"/items/{i}","value":{{"n":{i},"s":"x"}}}}"#)
            }
            _ if i % 3 == 1 => format!(r#"{{"op":"replace","path":"/count","value":{i}}}"#),
            _ => format!(r#"{{"op":"move","from":"/a/{i}","path":"/b/{i}"}}"#),
        })
        .collect();
    let extra = if ty == "ACTIVITY_DELTA" {
        r#","messageId":"m","activityType":"PLAN""#
    } else {
        ""
    };
    format!(r#"{{"type":"{ty}"{extra},"{key}":[{}]}}"#, ops.join(","))
}

#[test]
#[cfg_attr(miri, ignore = "hundreds of runs")]
fn each_patch_operation_is_checked_as_the_whole_frame_would_be() {
    let bad_ops = [
        r#"{"op":"add","path":"/x"}"#,
        r#"{"op":"jump","path":"/x"}"#,
        r#"{"op":"move","path":"/x"}"#,
        r#"{"op":"add","path":"no slash","value":1}"#,
        r#"{"op":"test","path":"/x","value":null}"#,
        r#"7"#,
    ];
    let (mut errors, mut runs) = (0, 0);
    for dialect in [Dialect::V1, Dialect::V0] {
        for (ty, key) in [("STATE_DELTA", "delta"), ("ACTIVITY_DELTA", "patch")] {
            for bad in bad_ops {
                for at in [0, 150, 299] {
                    let delta = patch(ty, key, 300, at, bad);
                    let stream = sse(&[RUN_STARTED, &delta, RUN_FINISHED]);
                    let want = run(&stream, dialect, WHOLE, 1 << 16);
                    let got = run(&stream, dialect, SMALL, 1460);
                    assert_same(&got, &want, &format!("{dialect:?} {ty} {bad} at {at}"));
                    runs += 1;
                    errors += usize::from(got.1.is_err());
                }
            }
        }
    }
    assert!(errors > runs / 4, "{errors} of {runs}");
}

/// After a snapshot that did not fit, an ownership check that needs one of
/// its messages' owners is `Capacity::Owners`; every other verdict is the
/// one a buffer holding the snapshot gives.
#[test]
fn owners_of_messages_let_go_are_forgotten_not_guessed() {
    let tagged = |i: usize, tag: &str| {
        format!(r#"{{"id":"m{i}","role":"assistant","content":"x","subagentRunId":"{tag}"}}"#)
    };
    let history = |tag: Option<&str>| -> String {
        let messages: Vec<String> = (0..40)
            .map(|i| match tag {
                Some(t) => tagged(i, t),
                None => format!(r#"{{"id":"m{i}","role":"assistant","content":"x"}}"#),
            })
            .collect();
        format!(
            r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{}]}}"#,
            messages.join(",")
        )
    };
    let sub = |id: &str, tag: &str| {
        [
            format!(
                r#"{{"type":"TEXT_MESSAGE_START","messageId":"{id}","subagentRunId":"{tag}"}}"#
            ),
            format!(r#"{{"type":"TEXT_MESSAGE_END","messageId":"{id}","subagentRunId":"{tag}"}}"#),
        ]
    };
    let started =
        |tag: &str| format!(r#"{{"type":"SUBAGENT_STARTED","subagentRunId":"{tag}","name":"n"}}"#);
    // (snapshot owner, the subagent's message id, the reference's verdict)
    let cases = [
        (None, "fresh", true),        // a new id: no owner to compare
        (None, "m3", false),          // the parent's message, claimed by s
        (Some("s"), "m3", true),      // s's own message, reopened
        (Some("other"), "m3", false), // another subagent's
    ];
    let mut capacity = 0;
    for (owner, id, valid) in cases {
        let mut evs = vec![RUN_STARTED.to_owned(), history(owner), started("s")];
        evs.extend(sub(id, "s"));
        evs.push(r#"{"type":"SUBAGENT_FINISHED","subagentRunId":"s"}"#.to_owned());
        evs.push(RUN_FINISHED.to_owned());
        let stream = sse(&evs);
        let want = run(&stream, Dialect::V1, WHOLE, 1 << 16);
        assert_eq!(want.1.is_ok(), valid, "{owner:?} {id}: {:?}", want.1);
        let got = run(&stream, Dialect::V1, SMALL, 1460);
        match &got.1 {
            Err((e, _)) if e.kind == ErrorKind::Capacity(Capacity::Owners) => capacity += 1,
            _ => assert_same(&got, &want, &format!("{owner:?} {id}")),
        }
        // The snapshot's event shows its messages as a stand-in.
        let (ty, json, stand_ins) = &got.0[1];
        assert_eq!(*ty, EventType::MessagesSnapshot);
        assert!(stand_ins.contains(Key::Messages), "{owner:?} {id}");
        let whole = &want.0[1].1;
        assert!(json.len() < whole.len() && same_but_stand_ins(whole, json, *stand_ins));
    }
    // A fresh id is told apart (the filter of forgotten ids); the others
    // need an owner that was let go.
    assert_eq!(capacity, 3);
    // A record kept from before the snapshot, which one of its messages
    // let go replaced, is forgotten too: s's m32 became the parent's. (The
    // last messages stay in the stand-in, and their records are exact.)
    let mut evs = vec![RUN_STARTED.to_owned(), started("s")];
    evs.extend(sub("m32", "s"));
    evs.push(history(None));
    evs.extend(sub("m32", "s"));
    let stream = sse(&evs);
    let want = run(&stream, Dialect::V1, WHOLE, 1 << 16).1.unwrap_err().0;
    assert!(matches!(want.kind, ErrorKind::Verify { .. }), "{want:?}");
    let got = run(&stream, Dialect::V1, SMALL, 1460).1.unwrap_err().0;
    assert_eq!(
        (got.kind, got.frame),
        (ErrorKind::Capacity(Capacity::Owners), want.frame)
    );
}

/// A 64 MB message history, one frame, through a 1 KiB buffer: accepted as
/// the reference accepts it, in flat memory.
#[test]
#[cfg_attr(miri, ignore = "64 MB")]
fn sixty_four_megabyte_message_history_through_a_one_kilobyte_buffer() {
    const SIZE: usize = 64 << 20;
    let mut history = br#"{"type":"MESSAGES_SNAPSHOT","messages":["#.to_vec();
    let mut n = 0;
    while history.len() < SIZE {
        history.extend_from_slice(message(n).as_bytes());
        history.push(b',');
        n += 1;
    }
    history.extend_from_slice(message(n).as_bytes());
    history.extend_from_slice(b"]}");
    let mut stream = sse(&[RUN_STARTED]);
    stream.extend_from_slice(b"data: ");
    stream.extend_from_slice(&history);
    stream.extend_from_slice(b"\n\n");
    stream.extend_from_slice(&sse(&[RUN_FINISHED]));
    let (events, verdict) = run(&stream, Dialect::V1, SMALL, 64 * 1024);
    assert!(verdict.is_ok(), "{verdict:?}");
    assert_eq!(events.len(), 3);
    assert!(events[1].2.contains(Key::Messages));
    // One broken message near the end is the schema error it would be.
    let at = history.len() - 1000;
    let next = history[at..].windows(7).position(|w| w == br#"},{"id""#);
    let comma = at + next.unwrap() + 1;
    history.splice(
        comma + 1..comma + 1,
        br#"{"id":"x","role":"user","content":5},"#.iter().copied(),
    );
    let mut stream = sse(&[RUN_STARTED]);
    stream.extend_from_slice(b"data: ");
    stream.extend_from_slice(&history);
    stream.extend_from_slice(b"\n\n");
    let (_, verdict) = run(&stream, Dialect::V1, SMALL, 64 * 1024);
    let (e, message) = verdict.unwrap_err();
    assert_eq!(e.frame, 1);
    assert!(matches!(e.kind, ErrorKind::Schema(_)), "{e:?}");
    assert!(message.contains("content"), "{message}");
    eprintln!("{n} messages: {message}");
}
