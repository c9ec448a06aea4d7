//! JSON against serde_json. Syntax: `json::validate` accepts exactly what
//! serde_json's skipping parser (`IgnoredAny`) accepts; a full `Value` parse
//! rejects a few more texts, for the reasons `encode.rs` gives (lone
//! surrogate escapes, numbers beyond f64). Values: where `Value` parses, our cursors read the same
//! tree — strings (`code_points`, `eq_str`, `unescape_into`), numbers (`as_f64`),
//! members (last duplicate wins), elements.
#![no_main]

use agui_stream::json::{ErrorKind as JsonErrorKind, JsonKind, Limits, RawJson, validate};
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;
use serde_json::Value;

const DEPTH: usize = 128;

/// What serde_json's `Value` rejects and `JSON.parse` (and we) accept.
fn documented(serde_error: &str) -> bool {
    [
        "lone leading surrogate",       // "\ud800\u0041", "\udc00"
        "unexpected end of hex escape", // "\ud800" then no escape
        "invalid unicode code point",   // invalid UTF-8 in a string
        "number out of range",          // 1e400
        "recursion limit exceeded",     // 128 or more levels (ours: 129)
    ]
    .iter()
    .any(|d| serde_error.starts_with(d))
}

/// A string as our decoder reads it; `Value` parsed it, so no lone surrogates.
fn text(s: agui_stream::JsonStr<'_>) -> String {
    s.code_points()
        .map(|c| char::from_u32(c).expect("a scalar value"))
        .collect()
}

/// Our reading of `ours` is serde_json's `theirs`.
fn same(ours: RawJson<'_>, theirs: &Value) {
    match (ours.kind(), theirs) {
        (JsonKind::Null, Value::Null) => {}
        (JsonKind::Bool, Value::Bool(b)) => assert_eq!(ours.as_bool(), Some(*b)),
        (JsonKind::Number, Value::Number(n)) => assert_eq!(ours.as_f64(), n.as_f64(), "{ours:?}"),
        (JsonKind::String, Value::String(s)) => {
            let ours = ours.as_str().expect("a string");
            assert_eq!(&text(ours), s);
            assert!(ours.eq_str(s), "eq_str({s:?})");
            let mut buf = vec![0u8; s.len()];
            let unescaped = ours.unescape_into(&mut buf).expect("room for the text");
            assert_eq!(unescaped.as_str(), Some(s.as_str()));
        }
        (JsonKind::Array, Value::Array(items)) => {
            assert_eq!(ours.elements().count(), items.len());
            ours.elements().zip(items).for_each(|(o, t)| same(o, t));
        }
        (JsonKind::Object, Value::Object(map)) => {
            let mut members: Vec<(String, RawJson<'_>)> = Vec::new();
            for (name, value) in ours.members() {
                let name = text(name);
                members.retain(|(n, _)| *n != name); // the last duplicate wins
                members.push((name, value));
            }
            assert_eq!(members.len(), map.len());
            for (name, value) in members {
                same(value, &map[&name]);
            }
        }
        (kind, _) => panic!("ours: {kind:?} {ours:?}, serde_json: {theirs}"),
    }
}

fuzz_target!(|input: &[u8]| {
    let ours = validate(input, Limits { max_depth: DEPTH });
    if let Err(e) = ours {
        // Deeper than our limit: serde_json's skipping parser has none.
        if let JsonErrorKind::TooDeep { limit } = e.kind {
            assert_eq!(usize::from(limit), DEPTH);
            return;
        }
    }
    let skip = serde_json::from_slice::<IgnoredAny>(input);
    assert_eq!(
        ours.is_ok(),
        skip.is_ok(),
        "ours: {ours:?}, serde_json (IgnoredAny): {skip:?}"
    );
    match (ours, serde_json::from_slice::<Value>(input)) {
        (Ok(()), Ok(value)) => {
            let raw = RawJson::parse(input, Limits { max_depth: DEPTH }).expect("validated");
            same(raw, &value);
        }
        (Err(_), Err(_)) => {}
        (Ok(()), Err(e)) => {
            let e = e.to_string();
            assert!(documented(&e), "ours: Ok, serde_json (Value): {e}");
        }
        (Err(e), Ok(_)) => panic!("ours: {e:?}, serde_json (Value): Ok"),
    }
});
