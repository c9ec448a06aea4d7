//! JSON syntax against serde_json: `json::validate` accepts exactly what
//! serde_json accepts. The oracle is serde_json's skipping parser
//! (`IgnoredAny`), which checks syntax only; a full `Value` parse is a
//! second oracle that rejects a few more texts, for documented reasons
//! (README.md, "serde_json").
#![no_main]

use agui_stream::json::{JsonErrorKind, Limits, validate};
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;

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

fuzz_target!(|text: &[u8]| {
    let ours = validate(text, Limits { max_depth: DEPTH });
    if let Err(e) = ours {
        // Deeper than our limit: serde_json's skipping parser has none.
        if let JsonErrorKind::TooDeep { limit } = e.kind {
            assert_eq!(limit, DEPTH);
            return;
        }
    }
    let skip = serde_json::from_slice::<IgnoredAny>(text);
    assert_eq!(
        ours.is_ok(),
        skip.is_ok(),
        "ours: {ours:?}, serde_json (IgnoredAny): {skip:?}"
    );
    let full = serde_json::from_slice::<serde_json::Value>(text);
    match (ours, full) {
        (Ok(()), Ok(_)) | (Err(_), Err(_)) => {}
        (Ok(()), Err(e)) => {
            let e = e.to_string();
            assert!(documented(&e), "ours: Ok, serde_json (Value): {e}");
        }
        (Err(e), Ok(_)) => panic!("ours: {e:?}, serde_json (Value): Ok"),
    }
});
