//! The gateway rewriter on streams the structure-aware generator writes
//! (`agui_stream::generator`): valid runs deep in the protocol, or one
//! injected violation with its expected verdict.
//!
//! Must hold (any panic is a finding):
//! - the `rewrite` target's properties, for the options `flags` draws and
//!   each violation policy (`Stop`, `Drop`, `Pass`): pushed in the
//!   generator's cut points (`Generated::pieces`) the output and `Stats`
//!   are those of one push; lent buffers and blocks held whole (`hold`,
//!   the raw buffer grown from 64 bytes) give the same; through 64-byte
//!   buffers (blocks stream ahead
//!   of their verdict) the output is the same where no block was cut and
//!   no rule broken; stopping or dropping, the output rewritten again is
//!   itself (unless a monitoring pipeline finds a capacity in it);
//! - with the default `Options` (stop on a violation, repair, nothing
//!   else), a **valid** stream comes out byte for byte, nothing counted as
//!   dropped, repaired, cut or violating — where it has nothing the
//!   gateway must change: LF line ends (a block with CR or CRLF ones comes
//!   out with LF ones: the output is then the stream with every line end
//!   made LF), no byte order mark (a leading one is not forwarded:
//!   clients drop it) and no event the pipeline synthesizes (no chunk lanes,
//!   `GenConfig::chunks`, which are expanded, and in V1 no legacy
//!   `THINKING_*`, which is translated). Comments, keep-alives, `event:`,
//!   `id:` and `retry:` lines, `data:` without a space, split `data:`
//!   lines and the `: agui-gen` envelope all pass as they are. Whatever it
//!   has, the output read by a pipeline is complete and gives the events
//!   the stream gives (encoded);
//! - an **invalid** stream gets the generator's verdict: a `Stop` pipeline
//!   matches `Expected`, and the default rewriter's `Stats` count that one
//!   violation in its stage (`violations_by_stage`) — or, for a second
//!   `RUN_FINISHED`/`RUN_ERROR` of a run, none and one
//!   `duplicate_terminals`, as the gateway drops those; its output, read by
//!   a pipeline, is valid: the events before the violation and, when the
//!   client's verifier accepts one, a final `RUN_ERROR` with code
//!   `AGUI_STREAM_VIOLATION` and the pipeline's message.
//!
//! Input layout: `[flags, generator input...]`.
//! - `flags` bit 0: the generator may inject a violation; bit 1: any line
//!   ends (CR, CRLF, mixed), else LF; the drawn options (the `rewrite`
//!   target's, for the first property): bit 2 close what is open, bit 3
//!   canonical form, bit 4 drop `RAW`, bit 5 deny the tool `calc` (one of
//!   the generator's four), bit 6 no repair; bit 7: the first property in
//!   the other dialect too.
//! - The rest drives the generator.
#![no_main]

use agui_stream::generator::{self, Expected, LineEnds};
use agui_stream::rewrite::{OnViolation, Options};
use agui_stream::verify::Rule;
use agui_stream::{Config, Dialect, Error, ErrorKind, EventType, Minting, Policy};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

#[path = "shared/runs.rs"]
mod shared;
#[path = "gen/support.rs"]
mod support;
use shared::{Seen, hits_a_capacity, rewrite, rewrite_held, rewrite_lent};
use support::{Counters, dump};

/// The generator's output.
const OUT: usize = 256 << 10;
/// Frame and raw buffers no generated block outgrows (a large value is at
/// most 64 KiB; canonical form may write a string three times as long).
const BUFFER: usize = 256 << 10;
/// Small enough for most blocks to outgrow.
const SMALL: usize = 64;

struct Buffers {
    out: Vec<u8>,
    frames: Vec<u8>,
    raw: Vec<u8>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers {
        out: vec![0; OUT],
        frames: vec![0; BUFFER],
        raw: vec![0; BUFFER],
    });
}

/// What a pipeline made of a stream: its events (encoded), its error and
/// the error's message.
struct Read {
    events: Vec<Vec<u8>>,
    result: Result<bool, Error>,
    message: String,
}

/// Reads `stream` whole with a `Stop` pipeline over `buffer`; `result` is
/// whether it ended complete.
fn read(config: Config, stream: &[u8], buffer: &mut [u8]) -> Read {
    let (seen, end, message) = shared::run((config, Policy::Stop), [stream], buffer);
    let events = seen
        .into_iter()
        .filter_map(|s| match s {
            Seen::Event(json, _) => Some(json),
            Seen::Violation(..) => None,
        })
        .collect();
    Read {
        events,
        result: end.map(|s| s.is_complete()),
        message: message.unwrap_or_default(),
    }
}

/// The stream with every line end (CRLF, CR) made LF. Generated JSON
/// holds no raw CR (strings escape it), so every CR is a line end.
fn lf(stream: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(stream.len());
    let mut i = 0;
    while i < stream.len() {
        match stream[i] {
            b'\r' => {
                out.push(b'\n');
                if stream.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A RUN_FINISHED or RUN_ERROR the run's end already had: the gateway
/// drops it rather than stopping.
fn second_terminal(error: &Error) -> bool {
    matches!(
        error.kind,
        ErrorKind::Verify {
            event: EventType::RunFinished | EventType::RunError,
            rule: Rule::AfterRunError | Rule::AfterRunFinished,
        }
    )
}

/// `AGUI_FUZZ_STATS=1`: what the inputs made.
static STATS: Counters<9> = Counters::new([
    "inputs",
    "valid",
    "byte for byte",
    "relined",
    "synthesized",
    "violations",
    "second terminals",
    "final RUN_ERRORs",
    "cut at 64 B",
]);
const VALID: usize = 1;
const BYTE_FOR_BYTE: usize = 2;
const RELINED: usize = 3;
const SYNTHESIZED: usize = 4;
const VIOLATIONS: usize = 5;
const SECOND_TERMINALS: usize = 6;
const RUN_ERRORS: usize = 7;
const CUT: usize = 8;

fuzz_target!(|data: &[u8]| {
    STATS.input("gen_rewrite");
    let [flags, input @ ..] = data else { return };
    BUFFERS.with_borrow_mut(|b| check(*flags, input, b));
});

fn check(flags: u8, input: &[u8], b: &mut Buffers) {
    let mut options = generator::GenOptions::new().violations(flags & 1 != 0);
    if flags & 2 == 0 {
        options = options.line_ends(LineEnds::Lf);
    }
    let g = generator::generate_with(input, &mut b.out, options);
    let stream = &b.out[..g.len];
    let pieces: Vec<&[u8]> = g.pieces(stream).collect();
    dump(stream);
    let (frames, raw) = (&mut b.frames[..], &mut b.raw[..]);
    let config = Config::new()
        .dialect(g.dialect)
        .minting(Minting::Deterministic);
    let show = |what: &[u8]| {
        format!(
            "{:?} {:?}, {} events, expected {:?}\n{}",
            g.dialect,
            g.config,
            g.events,
            g.expected,
            String::from_utf8_lossy(&what[..what.len().min(1 << 14)])
        )
    };

    // The default options: a valid stream passes as it is, an invalid one
    // gets the generator's verdict.
    let input_read = read(config, stream, frames);
    assert!(
        g.expected.matches(input_read.result.as_ref().err()),
        "pipeline verdict {:?} {}, {}",
        input_read.result,
        input_read.message,
        show(stream)
    );
    let (out, stats) = rewrite(
        (&mut *frames, &mut *raw),
        config,
        Options::new(),
        None,
        std::iter::once(stream),
    );
    let out_read = read(config, &out, frames);
    match g.expected {
        Expected::Valid => {
            assert!(
                stats.violations == 0
                    && stats.dropped == 0
                    && stats.repairs == 0
                    && stats.cut == 0
                    && stats.duplicate_terminals == 0,
                "a valid stream: {stats:?}, {}",
                show(stream)
            );
            let synthesized = g.config.chunks
                || (g.dialect == Dialect::V1 && contains(stream, br#"{"type":"THINKING_"#));
            STATS.count(VALID, true);
            STATS.count(SYNTHESIZED, synthesized);
            STATS.count(RELINED, stats.relined > 0);
            if !synthesized {
                STATS.count(BYTE_FOR_BYTE, true);
                // A leading byte order mark is not forwarded (clients drop it).
                let unmarked = stream.strip_prefix("\u{feff}".as_bytes()).unwrap_or(stream);
                assert!(
                    out == lf(unmarked),
                    "a valid stream changed:\n{}\nout:\n{}",
                    show(stream),
                    String::from_utf8_lossy(&out)
                );
                assert_eq!(stats.encoded, 0, "{stats:?}");
            }
            assert_eq!(
                out_read.result,
                Ok(true),
                "the output of a valid stream: {}\n{}",
                out_read.message,
                show(&out)
            );
            assert!(
                out_read.events == input_read.events,
                "the output of a valid stream has other events\n{}\nout:\n{}",
                show(stream),
                String::from_utf8_lossy(&out)
            );
        }
        Expected::Violation { .. } => {
            let e = input_read.result.expect_err("matched: a violation");
            let mut by_stage = [0u32; agui_stream::Stage::COUNT];
            STATS.count(VIOLATIONS, true);
            STATS.count(SECOND_TERMINALS, second_terminal(&e));
            if second_terminal(&e) {
                assert!(
                    stats.violations == 0 && stats.duplicate_terminals == 1,
                    "{e:?}: {stats:?}"
                );
            } else {
                by_stage[e.stage.index()] = 1;
                assert!(
                    stats.violations == 1 && stats.violations_by_stage == by_stage,
                    "{e:?}: {stats:?}, {}",
                    show(stream)
                );
            }
            assert!(
                out_read.result.is_ok(),
                "the gateway's output of an invalid stream: {:?} {}\n{}",
                out_read.result,
                out_read.message,
                show(&out)
            );
            let n = input_read.events.len();
            assert!(
                out_read.events.get(..n) == Some(&input_read.events[..]),
                "the events before the violation\n{}\nout:\n{}",
                show(stream),
                String::from_utf8_lossy(&out)
            );
            match &out_read.events[n..] {
                [] => {}
                [last] if !second_terminal(&e) => {
                    STATS.count(RUN_ERRORS, true);
                    let v: serde_json::Value = serde_json::from_slice(last).expect("JSON");
                    assert_eq!(v["type"], "RUN_ERROR", "{v}");
                    assert_eq!(v["code"], "AGUI_STREAM_VIOLATION", "{v}");
                    let message = v["message"].as_str().expect("a message");
                    assert!(
                        message == input_read.message
                            || (message.len() > 900 && input_read.message.starts_with(message)),
                        "the RUN_ERROR's message {message:?}, the pipeline's {:?}",
                        input_read.message
                    );
                }
                more => panic!(
                    "{e:?}: after the events before it, {:?}\n{}",
                    more.iter()
                        .map(|j| String::from_utf8_lossy(j))
                        .collect::<Vec<_>>(),
                    show(stream)
                ),
            }
        }
    }

    // The rewrite target's properties, with the options `flags` draws.
    let deny = (flags & 32 != 0).then_some("calc");
    let mut dialects = vec![g.dialect];
    if flags & 128 != 0 {
        dialects.push(match g.dialect {
            Dialect::V1 => Dialect::V0,
            _ => Dialect::V1,
        });
    }
    for dialect in dialects {
        for on_violation in [OnViolation::Stop, OnViolation::Drop, OnViolation::Pass] {
            let config = config.dialect(dialect);
            let options = Options::new()
                .on_violation(on_violation)
                .repair(flags & 64 == 0)
                .close_open(flags & 4 != 0)
                .canonical(flags & 8 != 0)
                .drop_raw(flags & 16 != 0);
            let whole = rewrite(
                (&mut *frames, &mut *raw),
                config,
                options,
                deny,
                std::iter::once(stream),
            );
            let split = rewrite(
                (&mut *frames, &mut *raw),
                config,
                options,
                deny,
                pieces.iter().copied(),
            );
            assert!(
                whole == split,
                "{dialect:?} {options:?}: the generator's pushes\n{:?}\n{:?}",
                String::from_utf8_lossy(&whole.0),
                String::from_utf8_lossy(&split.0)
            );
            // Buffers lent only while a block is in flight, as the filters
            // do: the same as buffers kept.
            let lent = rewrite_lent(frames.len(), config, options, deny, pieces.iter().copied());
            assert!(
                lent == split,
                "{dialect:?} {options:?}: lending the buffers changed the output\n{:?}\n{:?}",
                String::from_utf8_lossy(&split.0),
                String::from_utf8_lossy(&lent.0)
            );
            // Blocks held whole, the raw buffer grown from 64 bytes where a
            // push stops at one: the same as a raw buffer that holds them.
            let mut held = rewrite_held(
                frames.len(),
                SMALL,
                config,
                options,
                deny,
                pieces.iter().copied(),
            );
            // (Blank lines between blocks outgrow it and go ahead: counted.)
            held.1.streamed = split.1.streamed;
            assert!(
                held == split,
                "{dialect:?} {options:?}: holding blocks changed the output\n{:?}\n{:?}",
                String::from_utf8_lossy(&split.0),
                String::from_utf8_lossy(&held.0)
            );
            let (mut f, mut r) = ([0u8; SMALL], [0u8; SMALL]);
            let small = rewrite(
                (&mut f, &mut r),
                config,
                options,
                deny,
                pieces.iter().copied(),
            );
            STATS.count(CUT, small.1.cut > 0);
            if small.1.cut == 0 && small.1.violations == 0 && whole.1.violations == 0 {
                assert!(
                    small.0 == whole.0,
                    "{dialect:?} {options:?}: {SMALL}-byte buffers changed the output\n{:?}\n{:?}",
                    String::from_utf8_lossy(&whole.0),
                    String::from_utf8_lossy(&small.0)
                );
            }
            if on_violation != OnViolation::Pass && !hits_a_capacity(config, &whole.0, frames) {
                let again = rewrite(
                    (&mut *frames, &mut *raw),
                    config,
                    options,
                    deny,
                    std::iter::once(&whole.0[..]),
                );
                assert!(
                    again.0 == whole.0,
                    "{dialect:?} {options:?}: a second pass changed the output\n{:?}\n{:?}",
                    String::from_utf8_lossy(&whole.0),
                    String::from_utf8_lossy(&again.0)
                );
            }
        }
    }
}
