//! The encoder always writes valid UTF-8 and valid JSON (serde_json is the
//! judge), `encode_to_slice` agrees with `encode`, and the output re-decodes
//! to an event with the same encoding. Checked for the events `decode`
//! accepts and for the events a `Pipeline` delivers — including those it
//! synthesizes (chunk expansion, V1's `THINKING_*` translation), which have
//! no JSON object of their own.
#![no_main]

use agui_stream::{
    BufferFull, Config, Dialect, Event, FrameInfo, Pipeline, Policy, decode, encode,
    encode_to_slice, json, json::Limits,
};
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;

fn check(event: &Event<'_>) {
    let dialect = event.dialect();
    let mut once = Vec::new();
    encode(event, &mut once).expect("a Vec never fills up");

    let text = match std::str::from_utf8(&once) {
        Ok(text) => text,
        Err(e) => panic!("encoding is not UTF-8 ({e}): {once:?}"),
    };
    // Syntax, strictly: serde_json's skipping parser has no exceptions.
    if let Err(e) = serde_json::from_str::<IgnoredAny>(text) {
        panic!("encoding is not JSON ({e}): {text}");
    }
    // Structure: a full parse, except what serde_json's `Value` cannot hold:
    // lone surrogate escapes, which JSON.stringify writes too, and numbers
    // beyond f64, which the encoder copies as written.
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    match serde::Deserialize::deserialize(&mut de) {
        Ok(serde_json::Value::Object(members)) => {
            let ty = members.get("type").and_then(|t| t.as_str());
            assert_eq!(ty, Some(event.event_type().as_str()), "{text}");
        }
        Ok(other) => panic!("encoding is not an object: {other}"),
        Err(e) => {
            let e = e.to_string();
            let documented = e.starts_with("lone leading surrogate")
                || e.starts_with("unexpected end of hex escape")
                || e.starts_with("number out of range");
            assert!(documented, "serde_json rejects the encoding ({e}): {text}");
        }
    }
    if let Err(e) = json::validate(&once, Limits::new()) {
        panic!("our own validator rejects the encoding ({e}): {text}");
    }

    // encode_to_slice writes the same bytes, and needs every one of them.
    let mut buf = vec![0u8; once.len()];
    assert_eq!(encode_to_slice(event, &mut buf), Ok(once.len()));
    assert_eq!(buf, once);
    assert_eq!(
        encode_to_slice(event, &mut buf[..once.len() - 1]),
        Err(BufferFull)
    );

    // Round trip.
    let second = match decode(&once, dialect, Limits::new()) {
        Ok(Some(second)) => second,
        other => panic!("{dialect:?}: the encoding is not accepted ({other:?}): {text}"),
    };
    let mut twice = Vec::new();
    encode(&second, &mut twice).expect("a Vec never fills up");
    assert!(
        once == twice,
        "{dialect:?}: encoding is not idempotent\n once: {text}\ntwice: {}",
        String::from_utf8_lossy(&twice)
    );
}

/// Checks every event in [`Policy::Monitor`], where violations are skipped.
fn sink(event: &Event<'_>, _: &FrameInfo) {
    check(event);
}

const RUN_STARTED: &[u8] =
    b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";

fuzz_target!(|payload: &[u8]| {
    // The payload as a frame after a RUN_STARTED, so that chunks and
    // THINKING_* events get through to the sink.
    let mut stream = RUN_STARTED.to_vec();
    for line in payload.split(|&b| b == b'\n') {
        stream.extend_from_slice(b"data: ");
        stream.extend_from_slice(line);
        stream.push(b'\n');
    }
    stream.push(b'\n');

    for dialect in [Dialect::V1, Dialect::V0] {
        if let Ok(Some(event)) = decode(payload, dialect, Limits::new()) {
            check(&event);
        }
        let config = Config::new().dialect(dialect);
        let mut buffer = [0u8; 0]; // one push: nothing spans pushes
        let mut pipeline = Pipeline::new(&mut buffer, config).policy(Policy::Monitor);
        let _ = pipeline.push(&stream, &mut sink);
        let _ = pipeline.finish(&mut sink);
    }
});
