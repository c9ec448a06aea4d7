//! The request side: any bytes as a `RunAgentInput` body, in any split,
//! through a small and a large buffer, and through the gateway's request
//! rewriter. The first byte picks the dialect, a denied tool, the small
//! buffer and the splits; the rest is the body.
//!
//! - Nothing panics; a small buffer gives the large buffer's verdict
//!   (`ok`, `json` or `schema`) or a capacity error.
//! - The rewriter's verdict is the checker's (or a limit of its own); a
//!   body it passes goes upstream whole (byte for byte with no tool denied;
//!   no longer with one); one it refuses never does.
#![no_main]

use agui_stream::rewrite::{Refusal, RequestRewriter};
use agui_stream::{Dialect, RequestChecker, RequestError, RequestErrorKind};
use libfuzzer_sys::fuzz_target;

/// The verdict's stage (`None`: valid), or `Err` for a capacity.
fn stage(v: &Result<(), RequestError>) -> Result<Option<&'static str>, ()> {
    match v {
        Ok(()) => Ok(None),
        Err(e) => e.kind.stage().map(Some).ok_or(()),
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&flags, body)) = input.split_first() else {
        return;
    };
    let dialect = if flags & 1 == 0 {
        Dialect::V1
    } else {
        Dialect::V0
    };
    let deny = flags & 2 != 0;
    let small = [64, 256, 1024, 4096][usize::from(flags >> 2) & 3];
    let mut state = u32::from(flags >> 4) | 1;
    let mut pieces = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state % 61 + 1) as usize
    };
    let mut large = vec![0u8; 1 << 20];
    let mut whole = RequestChecker::new(&mut large, dialect);
    let want = whole.push(body).and_then(|()| whole.finish());
    let mut buf = vec![0u8; small];
    let mut split = RequestChecker::new(&mut buf, dialect);
    let mut rest = body;
    let mut got = Ok(());
    while !rest.is_empty() && got.is_ok() {
        let (piece, tail) = rest.split_at(pieces().min(rest.len()));
        got = split.push(piece);
        rest = tail;
    }
    let got = got.and_then(|()| split.finish());
    let want_stage = stage(&want);
    if let Ok(s) = stage(&got) {
        assert_eq!(Ok(s), want_stage, "buffer {small}: {got:?} vs {want:?}");
    }
    // The gateway's request side, 1 KiB buffers.
    let (mut check, mut hold) = (vec![0u8; 1024], vec![0u8; 1024]);
    let mut r = RequestRewriter::new(&mut check, &mut hold, dialect);
    if deny {
        r.deny_tool("a").unwrap();
    }
    let mut out = Vec::new();
    let mut rest = body;
    let mut verdict = Ok(());
    while !rest.is_empty() && verdict.is_ok() {
        let (piece, tail) = rest.split_at(pieces().min(rest.len()));
        verdict = r.push(piece, &mut out);
        rest = tail;
    }
    let verdict = verdict.and_then(|()| r.finish(&mut out).map(drop));
    match verdict {
        Ok(()) => {
            assert!(matches!(want_stage, Ok(None)), "{want:?}");
            if !deny || r.stats().tools_removed == 0 {
                assert_eq!(out, body);
            } else {
                assert!(out.len() < body.len());
            }
        }
        Err(refusal) => {
            if let Refusal::Invalid(e) = refusal
                && !matches!(e.kind, RequestErrorKind::Capacity(_))
            {
                assert_eq!(want_stage, Ok(e.kind.stage()), "{refusal:?} vs {want:?}");
            }
            assert!(body.is_empty() || out.len() < body.len());
            let mut problem = Vec::new();
            r.write_problem(&refusal, &mut problem).unwrap();
            assert!(problem.starts_with(b"{\"status\":"));
        }
    }
});
