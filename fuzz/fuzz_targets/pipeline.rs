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

use agui_stream::{
    Config, Dialect, Error, Event, FrameInfo, Minting, Pipeline, Policy, Sink, Summary, encode,
};
use libfuzzer_sys::fuzz_target;
use std::ops::ControlFlow;

#[path = "../../tests/support/stand_ins.rs"]
mod stand_ins;
use stand_ins::same_but_stand_ins;

/// Large enough for any frame of an input we accept, so the frame buffer's
/// capacity can never be what differs between splits.
const BUFFER: usize = 64 * 1024;

#[derive(Debug, PartialEq)]
enum Seen {
    Event(Vec<u8>, FrameInfo),
    Violation(Error, String),
}

#[derive(Default)]
struct Record(Vec<Seen>);

impl Sink for Record {
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
        let mut json = Vec::new();
        encode(event, &mut json).expect("a Vec never fills up");
        self.0.push(Seen::Event(json, *frame));
        ControlFlow::Continue(())
    }

    fn violation(
        &mut self,
        error: &Error,
        frame: &FrameInfo,
        message: &dyn core::fmt::Display,
    ) -> ControlFlow<()> {
        assert_eq!(frame.index, error.frame, "a violation is told its frame");
        self.0.push(Seen::Violation(*error, message.to_string()));
        ControlFlow::Continue(())
    }
}

type Outcome = (Vec<Seen>, Result<Summary, Error>, Option<String>);

/// Pushes `chunks` in order, stopping at the first error, then finishes.
fn run<'c>(setup: (Config, Policy), chunks: impl Iterator<Item = &'c [u8]>) -> Outcome {
    run_with(setup, chunks, BUFFER)
}

fn run_with<'c>(
    (config, policy): (Config, Policy),
    chunks: impl Iterator<Item = &'c [u8]>,
    buffer: usize,
) -> Outcome {
    let mut buffer = vec![0u8; buffer];
    let mut pipeline = Pipeline::new(&mut buffer, config).policy(policy);
    let mut sink = Record::default();
    let mut result = Ok(());
    for chunk in chunks {
        result = pipeline.push(chunk, &mut sink).map(drop);
        if result.is_err() {
            break;
        }
    }
    let result = result.and_then(|_| pipeline.finish(&mut sink));
    // A stopped pipeline keeps returning its error, from push and finish alike.
    if let Err(e) = result {
        assert_eq!(pipeline.push(b"data: {}\n\n", &mut sink), Err(e));
        assert_eq!(pipeline.finish(&mut sink), Err(e));
    }
    let message = result.err().map(|e| pipeline.message(&e).to_string());
    (sink.0, result, message)
}

/// The stream cut into pushes of `sizes` bytes, cycling.
fn split<'s>(stream: &'s [u8], sizes: &[u8]) -> Vec<&'s [u8]> {
    let sizes: &[u8] = if sizes.iter().any(|&s| s != 0) {
        sizes
    } else {
        &[1]
    };
    let mut chunks = Vec::new();
    let mut rest = stream;
    for &size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(usize::from(size).min(rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    chunks
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
            let whole = run((config, policy), core::iter::once(stream));
            let pieces = run((config, policy), chunks.iter().copied());
            assert_eq!(whole, pieces, "{config:?}, pushes of {sizes:?} bytes");
            for buffer in [SMALL, MEDIUM] {
                let small = run_with((config, policy), chunks.iter().copied(), buffer);
                same_unless_a_frame_did_not_fit(&whole, &small, buffer);
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

fn same_unless_a_frame_did_not_fit(whole: &Outcome, small: &Outcome, buffer: usize) {
    let stop_at = small
        .0
        .iter()
        .find_map(|s| match s {
            Seen::Violation(e, _) if did_not_fit(e, buffer) => Some(e.frame),
            _ => None,
        })
        .or(small
            .1
            .as_ref()
            .err()
            .filter(|e| did_not_fit(e, buffer))
            .map(|e| e.frame));
    match stop_at {
        None => {
            assert!(
                same_seen(&whole.0, &small.0),
                "the small buffer changed the events"
            );
            assert_eq!(whole.1, small.1);
            assert_eq!(whole.2, small.2);
        }
        Some(frame) => {
            let before = |o: &Outcome| {
                o.0.iter()
                    .take_while(|s| match s {
                        Seen::Event(_, info) => info.index < frame,
                        Seen::Violation(e, _) => e.frame < frame,
                    })
                    .count()
            };
            let (w, s) = (before(whole), before(small));
            assert!(
                same_seen(&whole.0[..w], &small.0[..s]),
                "events before the frame that did not fit"
            );
        }
    }
}

/// The same events and violations, but that an event of a spilled frame
/// shows its stand-ins as empty values of the same kind.
fn same_seen(whole: &[Seen], small: &[Seen]) -> bool {
    whole.len() == small.len()
        && whole.iter().zip(small).all(|pair| match pair {
            (Seen::Event(w, wi), Seen::Event(s, si)) => {
                wi.index == si.index && (w == s || same_but_stand_ins(w, s, si.stand_ins))
            }
            (Seen::Violation(a, m), Seen::Violation(b, n)) => a == b && m == n,
            _ => false,
        })
}
