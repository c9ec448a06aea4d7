//! The request checker against the reference's answers on every body of
//! `tests/corpus/requests`, both dialects, through buffers from 1 KiB to
//! 16 MiB and pushes of 1, 7 and 1460 bytes.

mod support;

use agui_stream::{Capacity, Dialect, RequestChecker, RequestErrorKind};

/// Bodies the checker answers with a capacity error where the reference
/// gives a verdict (README, "Deviations"): nesting past 1,024 levels.
const DEEPER_THAN_THE_LIMIT: &[&str] =
    &["json-mismatched-deep-nesting", "json-unclosed-deep-nesting"];

/// The verdict as (stage, V8 message) or capacity.
fn check(
    body: &[u8],
    dialect: Dialect,
    buffer: usize,
    piece: usize,
) -> Result<(Option<String>, String), Capacity> {
    let mut buf = vec![0u8; buffer];
    let mut checker = RequestChecker::new(&mut buf, dialect);
    let mut early = None;
    for p in body.chunks(piece.max(1)) {
        if let Err(e) = checker.push(p) {
            early = Some(e);
            break;
        }
    }
    let verdict = match early {
        Some(e) => Err(e),
        None => checker.finish(),
    };
    match verdict {
        Ok(()) => Ok((None, String::new())),
        Err(e) => match e.kind {
            RequestErrorKind::Capacity(c) => Err(c),
            RequestErrorKind::Json(_) => Ok((
                Some("json".into()),
                checker
                    .json_message()
                    .map(|m| m.to_string())
                    .unwrap_or_default(),
            )),
            _ => Ok((Some("schema".into()), String::new())),
        },
    }
}

#[test]
fn every_body_gets_the_reference_verdict() {
    let mut failures = Vec::new();
    for (name, body) in support::request_bodies() {
        for dialect in [Dialect::V1, Dialect::V0] {
            let (stage, message) = support::request_answer(&name, dialect);
            for (buffer, piece) in [
                (1 << 24, body.len()),
                (1 << 24, 1460),
                (4096, 7),
                (1024, 1460),
                (1024, 1),
            ] {
                let got = check(&body, dialect, buffer, piece);
                let ok = match &got {
                    Err(Capacity::JsonDepth { .. }) => {
                        DEEPER_THAN_THE_LIMIT.contains(&name.as_str())
                    }
                    Err(_) => false,
                    Ok((s, m)) => *s == stage && (s.as_deref() != Some("json") || *m == message),
                };
                if !ok {
                    failures.push(format!(
                        "{name} {dialect:?} buffer {buffer} pieces {piece}: got {got:?}, want {stage:?} {message}"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The error `body` gets, pushed in `piece`-byte pieces through `buffer`.
fn error_of(
    body: &[u8],
    dialect: Dialect,
    buffer: usize,
    piece: usize,
) -> Option<agui_stream::RequestError> {
    let mut buf = vec![0u8; buffer];
    let mut checker = RequestChecker::new(&mut buf, dialect);
    for p in body.chunks(piece.max(1)) {
        if let Err(e) = checker.push(p) {
            return Some(e);
        }
    }
    checker.finish().err()
}

/// `{"threadId":"t","runId":"r", MEMBERS}`.
fn body(members: &str) -> String {
    format!(r#"{{"threadId":"t","runId":"r",{members}}}"#)
}

#[test]
fn errors_name_the_member_path_and_the_offset() {
    let big = "A".repeat(300_000);
    let cases: Vec<(String, &str, String)> = vec![
        // (body, path, what the offset points at)
        (
            body(
                r#""messages":[{"id":"1","role":"user","content":"x"},{"id":"2","role":"bogus","content":"y"}]"#,
            ),
            "messages[1]",
            r#"{"id":"2""#.into(),
        ),
        (
            body(&format!(
                r#""messages":[{{"id":"1","role":"user","content":[{{"type":"image","source":{{"type":"data","value":"{big}","mimeType":"image/png"}}}},{{"type":"text","text":7}}]}}]"#
            )),
            "messages[0].content[1]",
            r#"{"type":"text","text":7}"#.into(),
        ),
        (
            body(&format!(
                r#""messages":[],"tools":[{{"name":"a","description":"d","parameters":{{"x":"{big}"}}}},{{"name":"b"}}]"#
            )),
            "tools[1]",
            r#"{"name":"b"}"#.into(),
        ),
        (
            body(
                r#""messages":[{"id":"1","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f"}}]}]"#,
            ),
            "messages[0].toolCalls[0]",
            r#"{"id":"c""#.into(),
        ),
        (
            body(
                r#""messages":[],"resume":[{"interruptId":"i","status":"resolved"},{"interruptId":"j","status":"later"}]"#,
            ),
            "resume[1]",
            r#"{"interruptId":"j""#.into(),
        ),
        (
            r#"{"runId":"r","messages":[]}"#.into(),
            "threadId",
            "}".into(),
        ),
        (
            format!(r#"{{"threadId":"{big}","runId":5,"messages":[]}}"#),
            "runId",
            "5,".into(),
        ),
        (
            body(r#""messages":{"id":"1"}"#),
            "messages",
            r#"{"id":"1"}"#.into(),
        ),
        ("[1,2]".into(), "(body)", "[1,2]".into()),
    ];
    for (text, path, at) in &cases {
        let want = text.rfind(at.as_str()).expect("the marked text") as u64;
        for (buffer, piece) in [(1 << 24, text.len()), (1 << 24, 7), (1024, 1460), (1024, 1)] {
            let e = error_of(text.as_bytes(), Dialect::V1, buffer, piece)
                .unwrap_or_else(|| panic!("{path}: no error"));
            assert!(
                matches!(e.kind, RequestErrorKind::Schema { .. }),
                "{path}: {e}"
            );
            assert_eq!(e.path.to_string(), *path, "{e}");
            assert_eq!(e.offset, want, "{path} buffer {buffer} pieces {piece}: {e}");
        }
    }
}

#[test]
fn the_last_of_duplicate_members_counts() {
    let bad_then_good = body(
        r#""messages":[{"id":"1","role":"bogus"}],"messages":[{"id":"1","role":"user","content":"x"}]"#,
    );
    let good_then_bad = body(
        r#""messages":[{"id":"1","role":"user","content":"x"}],"messages":[{"id":"1","role":"bogus"}]"#,
    );
    for piece in [1, 7, 1460] {
        assert_eq!(
            error_of(bad_then_good.as_bytes(), Dialect::V1, 1024, piece),
            None
        );
        let e = error_of(good_then_bad.as_bytes(), Dialect::V1, 1024, piece).expect("an error");
        assert_eq!(e.path.to_string(), "messages[0]");
    }
}

#[test]
fn offsets_count_a_dropped_byte_order_mark() {
    let text = [&[0xEF, 0xBB, 0xBF][..], br#"{"threadId":1}"#].concat();
    for piece in [1, 2, 7] {
        let e = error_of(&text, Dialect::V1, 1024, piece).expect("an error");
        assert_eq!(
            (e.path.to_string().as_str(), e.offset),
            ("threadId", 15),
            "{e}"
        );
        // A prefix of one is the body's: V8 sees U+FFFD.
        let e = error_of(&[0xEF, 0xBB, b'{'], Dialect::V1, 1024, piece).expect("an error");
        assert!(matches!(e.kind, RequestErrorKind::Json(_)), "{e}");
    }
}

#[test]
fn a_large_history_goes_through_a_small_buffer() {
    let result = "r".repeat(2_000_000);
    let image = "i".repeat(200_000);
    let text = body(&format!(
        r#""messages":[{{"id":"1","role":"user","content":[{{"type":"image","source":{{"type":"data","value":"{image}","mimeType":"image/png"}}}}]}},{{"id":"2","role":"tool","toolCallId":"c","content":"{result}"}}],"tools":[],"context":[]"#
    ));
    for dialect in [Dialect::V1, Dialect::V0] {
        for piece in [7, 1460] {
            assert_eq!(
                error_of(text.as_bytes(), dialect, 1024, piece),
                None,
                "{dialect:?}"
            );
        }
    }
    // What a rule reads must fit: an id longer than the buffer does not.
    let long_id = body(&format!(
        r#""messages":[{{"id":"{result}","role":"user","content":"x"}}]"#
    ));
    let e = error_of(long_id.as_bytes(), Dialect::V1, 1024, 1460).expect("an error");
    assert!(
        matches!(
            e.kind,
            RequestErrorKind::Capacity(Capacity::RequestBuffer { capacity: 1024 })
        ),
        "{e}"
    );
}
