//! The tool-call arguments check (`Config::check_tool_args`, off by
//! default; the reference does not check): each tool call's TOOL_CALL_ARGS
//! deltas, after chunk normalization, must concatenate to one complete
//! JSON value by its TOOL_CALL_END. The verdict and the error's position
//! inside the arguments must be the one-shot validator's on the whole
//! arguments, however the deltas split them.

mod support;

use support::{RUN_FINISHED, RUN_STARTED, sse};

use agui_stream::json::{ErrorKind as JsonErrorKind, Limits, validate};
use agui_stream::{
    Capacity, Config, Error, ErrorKind, Event, EventType, FrameInfo, Pipeline, Stage, verify::Rule,
};

/// A JSON string holding `text`, escaped as JSON.stringify escapes it.
fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn tool_start(id: &str) -> String {
    format!(r#"{{"type":"TOOL_CALL_START","toolCallId":"{id}","toolCallName":"f"}}"#)
}

fn tool_args(id: &str, delta: &str) -> String {
    format!(
        r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"{id}","delta":{}}}"#,
        json_string(delta)
    )
}

fn tool_end(id: &str) -> String {
    format!(r#"{{"type":"TOOL_CALL_END","toolCallId":"{id}"}}"#)
}

/// Runs `events` (a run around them) with the check on; the error and its
/// message, if any.
fn run(events: &[String], check: bool) -> Result<u64, (Error, String)> {
    let mut all = vec![RUN_STARTED.to_owned()];
    all.extend_from_slice(events);
    all.push(RUN_FINISHED.to_owned());
    let stream = sse(&all);
    let mut buf = vec![0u8; 1 << 16];
    let mut p = Pipeline::new(&mut buf, Config::new().check_tool_args(check));
    let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
    match p.push(&stream, &mut sink).and_then(|_| p.finish(&mut sink)) {
        Ok(s) => Ok(s.events),
        Err(e) => Err((e, p.message(&e).to_string())),
    }
}

/// One tool call whose arguments arrive as `pieces`.
fn call(pieces: &[&str]) -> Vec<String> {
    let mut evs = vec![tool_start("c1")];
    evs.extend(pieces.iter().map(|p| tool_args("c1", p)));
    evs.push(tool_end("c1"));
    evs
}

const ARGS: &[&str] = &[
    r#"{"path":"src/main.rs","lines":[1,20],"dry":false}"#,
    r#"{"q":"caf\u00e9 \"quoted\" \\ back","n":-1.5e3,"x":null}"#,
    "[1,2,{\"a\":[]}]",
    "42",
    " \"just a string\" ",
    "{\"a\":1}}",
    "{\"a\":1,}",
    "{\"a\" 1}",
    "{\"a\":tru}",
    "[1,2",
    "{\"a\":\"unterminated",
    "1.",
    "",
    "   ",
];

#[test]
fn every_split_of_every_argument_text_gets_the_one_shot_verdict() {
    for args in ARGS {
        let want = validate(args.as_bytes(), Limits { max_depth: 64 });
        // Split at every char boundary into two deltas, and into one
        // delta per character.
        let mut splits: Vec<Vec<&str>> = (0..=args.len())
            .filter(|&i| args.is_char_boundary(i))
            .map(|i| vec![&args[..i], &args[i..]])
            .collect();
        splits.push(args.split_inclusive(|_| true).collect());
        for pieces in splits {
            let got = run(&call(&pieces), true);
            match want {
                Ok(()) => assert_eq!(got, Ok(pieces.len() as u64 + 4), "{args:?} as {pieces:?}"),
                Err(e) => {
                    let (err, message) = got.expect_err(args);
                    let rule = Rule::ToolCallArgs;
                    // A syntax error stops the delta that makes it; an
                    // incomplete text (an error at its end), the END.
                    let event = if e.offset as usize == args.len() {
                        EventType::ToolCallEnd
                    } else {
                        EventType::ToolCallArgs
                    };
                    assert_eq!(err.kind, ErrorKind::Verify { event, rule }, "{args:?}");
                    assert_eq!(err.stage, Stage::Verify);
                    assert!(message.contains("tool call 'c1'"), "{message}");
                    let at = if e.kind == JsonErrorKind::UnexpectedEnd {
                        format!("after {} bytes", args.len())
                    } else {
                        format!("at position {}", e.offset)
                    };
                    assert!(message.contains(&at), "{args:?}: {message} lacks {at}");
                }
            }
        }
    }
}

#[test]
fn messages_name_the_tool_call_and_the_place() {
    let (_, m) = run(&call(&["{\"a\":1", "}}"]), true).unwrap_err();
    assert_eq!(
        m,
        "Cannot send 'TOOL_CALL_ARGS' event: the arguments of tool call 'c1' are not valid JSON: \
         Unexpected non-whitespace character after JSON at position 7."
    );
    let (_, m) = run(&call(&["{\"a\":"]), true).unwrap_err();
    assert_eq!(
        m,
        "Cannot send 'TOOL_CALL_END' event: the arguments of tool call 'c1' are not one complete \
         JSON value: Unexpected end of JSON input after 5 bytes."
    );
}

#[test]
fn the_check_is_off_by_default() {
    assert_eq!(run(&call(&["{{{"]), false), Ok(5));
    assert!(run(&call(&["{{{"]), true).is_err());
}

#[test]
fn escapes_are_decoded_before_the_check() {
    // The delta's JSON string holds the arguments escaped: `\u007b` is `{`.
    let evs = vec![
        tool_start("c1"),
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"\u007b\"k\":\"\ud83d"}"#.to_owned(),
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"\ude00\"\u007d"}"#.to_owned(),
        tool_end("c1"),
    ];
    assert_eq!(run(&evs, true), Ok(6));
}

#[test]
fn parallel_calls_are_checked_apart() {
    let evs = vec![
        tool_start("a"),
        tool_start("b"),
        tool_args("a", "{\"x\":"),
        tool_args("b", "[1,"),
        tool_args("a", "1}"),
        tool_args("b", "2]"),
        tool_end("b"),
        tool_end("a"),
    ];
    assert_eq!(run(&evs, true), Ok(10));
    let evs = vec![
        tool_start("a"),
        tool_start("b"),
        tool_args("a", "{\"x\":"),
        tool_args("b", "[1,"),
        tool_args("a", "1}"),
        tool_end("a"),
        tool_args("b", "]"),
    ];
    let (e, m) = run(&evs, true).unwrap_err();
    assert_eq!(e.frame, 7);
    assert!(
        m.contains("tool call 'b'") && m.contains("position 3"),
        "{m}"
    );
}

#[test]
fn chunk_expanded_calls_are_checked() {
    let chunk = |delta: &str| {
        format!(
            r#"{{"type":"TOOL_CALL_CHUNK","toolCallId":"c","toolCallName":"f","delta":{}}}"#,
            json_string(delta)
        )
    };
    // RUN_FINISHED closes the lane: its synthesized END ends the check.
    assert_eq!(run(&[chunk("{\"a\""), chunk(":[1]}")], true), Ok(6));
    let (e, m) = run(&[chunk("{\"a\""), chunk(":[1]")], true).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::Verify {
            event: EventType::ToolCallEnd,
            rule: Rule::ToolCallArgs
        }
    );
    assert_eq!(e.frame, 3, "the END the run's end synthesizes");
    assert!(
        m.ends_with("Expected ',' or '}' after property value in JSON at position 8."),
        "{m}"
    );
}

#[test]
fn a_checked_call_needs_room_and_a_new_run_starts_clean() {
    // Tool calls whose arguments are checked at once (docs/capacities.md).
    let cap = 8;
    let open = |n: usize| {
        (0..n)
            .map(|i| tool_start(&format!("c{i}")))
            .collect::<Vec<_>>()
    };
    let mut evs = open(cap);
    evs.extend((0..cap).flat_map(|i| {
        [
            tool_args(&format!("c{i}"), "{}"),
            tool_end(&format!("c{i}")),
        ]
    }));
    assert!(run(&evs, true).is_ok());
    let (e, _) = run(&open(cap + 1), true).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::Capacity(Capacity::ToolArgs {
            capacity: cap as u32
        })
    );
    assert_eq!(e.frame, cap as u64 + 1);
    // Unchecked, the same calls only need open-id room.
    assert!(matches!(
        run(&open(cap + 1), false),
        Err((
            Error {
                kind: ErrorKind::Verify { .. },
                ..
            },
            _
        ))
    ));
}
