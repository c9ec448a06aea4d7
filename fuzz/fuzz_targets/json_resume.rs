//! The resumable validator against the one-shot one (and, through it,
//! serde_json: `differential` checks that `validate` accepts exactly what
//! serde_json's `IgnoredAny` accepts). The first byte of the input picks
//! the split points; the rest is the JSON text, fed in those pieces. Both
//! must give the same verdict, and the same error kind and offset.
#![no_main]

use agui_stream::json::{Limits, Validator, validate};
use libfuzzer_sys::fuzz_target;

const DEPTH: usize = 128;

fuzz_target!(|input: &[u8]| {
    let Some((&seed, text)) = input.split_first() else {
        return;
    };
    let limits = Limits { max_depth: DEPTH };
    let want = validate(text, limits);
    // Pieces of 1..=8 bytes, sizes drawn from a generator seeded by `seed`.
    let mut state = u32::from(seed) | 1;
    let mut v = Validator::<2>::new(limits);
    let mut rest = text;
    let mut got = Ok(());
    while !rest.is_empty() && got.is_ok() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (state % 8 + 1) as usize;
        let (piece, tail) = rest.split_at(n.min(rest.len()));
        got = v.feed(piece);
        rest = tail;
    }
    let got = got.and_then(|()| v.finish());
    assert_eq!(got, want, "{:?}", text.escape_ascii().to_string());
    if serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok() {
        assert!(
            got.is_ok()
                || matches!(got, Err(e) if matches!(e.kind, agui_stream::json::ErrorKind::TooDeep { .. }))
        );
    }
});
