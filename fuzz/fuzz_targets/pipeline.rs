//! The split must not matter: an SSE stream pushed through `Pipeline` in
//! arbitrary chunks gives exactly the outcome of one push — the same events
//! (encoded), the same `FrameInfo`s, the same violations and the same final
//! `Summary` or `Error` — in both dialects and both policies. Nor must the
//! frame buffer: through a 32-byte one (frames that do not fit spill past
//! it) the outcome is the same unless a frame did not fit, and then what
//! came before that frame is the same.
//!
//! Input layout: `[flags, n, sizes[0..n], stream...]`.
//! - `flags` bit 0: `Minting::Deterministic` (else `PerRun`); bit 1: `strict_end`.
//! - `n % 8` chunk sizes follow (0..=255 each; 0 pushes an empty slice);
//!   the stream is pushed in chunks of those sizes, cycling. No sizes (or
//!   only zeros) means one byte per push.
#![no_main]

use agui_stream::{Config, Dialect, Error, Minting, Policy};
use libfuzzer_sys::fuzz_target;

#[path = "shared/runs.rs"]
mod shared;
use shared::{Outcome, same_unless_a_frame_did_not_fit, split};

/// Large enough for any frame of an input we accept, so the frame buffer's
/// capacity can never be what differs between splits.
const BUFFER: usize = 64 * 1024;

/// Pushes `chunks` in order through a `buffer`-byte frame buffer.
fn run<'c>(
    setup: (Config, Policy),
    chunks: impl Iterator<Item = &'c [u8]>,
    buffer: usize,
) -> Outcome {
    shared::run(setup, chunks, &mut vec![0u8; buffer])
}

fuzz_target!(|data: &[u8]| {
    let [flags, n, rest @ ..] = data else { return };
    let n = usize::from(n % 8).min(rest.len());
    let (sizes, stream) = rest.split_at(n);
    if stream.len() > BUFFER {
        return;
    }
    let minting = if flags & 1 != 0 {
        Minting::Deterministic
    } else {
        Minting::PerRun
    };
    let chunks = split(stream, sizes);
    for dialect in [Dialect::V1, Dialect::V0] {
        for policy in [Policy::Stop, Policy::Monitor] {
            let config = Config::new()
                .dialect(dialect)
                .minting(minting)
                .strict_end(flags & 2 != 0);
            let whole = run((config, policy), core::iter::once(stream), BUFFER);
            let pieces = run((config, policy), chunks.iter().copied(), BUFFER);
            assert_eq!(whole, pieces, "{config:?}, pushes of {sizes:?} bytes");
            for buffer in [SMALL, MEDIUM] {
                let small = run((config, policy), chunks.iter().copied(), buffer);
                same_unless_a_frame_did_not_fit(&whole, &small, buffer, |e| did_not_fit(e, buffer));
            }
        }
    }
});

/// A frame buffer most frames do not fit.
const SMALL: usize = 32;
/// One large enough for arrays read element by element and deep nesting.
const MEDIUM: usize = 512;

/// The errors of a frame that spilled past a `buffer`-byte buffer and was
/// well-formed (its JSON is checked 64 levels deep where the buffer cannot
/// spare room for more), or of a check that needs what it let go.
fn did_not_fit(e: &Error, buffer: usize) -> bool {
    use agui_stream::{Capacity, ErrorKind};
    match e.kind {
        ErrorKind::Capacity(Capacity::FrameBuffer { capacity }) => capacity as usize == buffer,
        ErrorKind::Capacity(Capacity::JsonDepth { limit }) => limit == 64,
        // The owners of a message history read element by element are
        // remembered as forgotten ones.
        ErrorKind::Capacity(Capacity::Owners) => buffer == MEDIUM,
        _ => false,
    }
}
