//! The pipeline on streams the structure-aware generator writes
//! (`agui_stream::generator`, feature `generator`): valid runs deep in the
//! protocol, or one injected violation with the verdict the reference
//! gives it. Byte mutation (the `pipeline` target) rarely gets past the
//! first few events; here every input is a stream worth checking.
//!
//! Must hold (any panic is a finding), for the generated stream pushed in
//! the generator's cut points (`Generated::pieces`):
//! - the verdict of a `Stop` pipeline is the generator's `Expected`
//!   (`Expected::matches`), and a valid stream ends complete
//!   (`Summary::is_complete`);
//! - the `pipeline` target's properties: the pushes give exactly what one
//!   push gives (events encoded, `FrameInfo`s, violations and messages,
//!   `Summary` or `Error` and message), for `Stop` and `Monitor`; a stopped
//!   pipeline returns its error again; through a 1 KiB frame buffer (frames
//!   larger than it are checked as they stream) the outcome is the same —
//!   events of a spilled frame may show stand-ins — unless a frame did not
//!   fit, and then what came before it is the same;
//! - `Monitor` hears, up to its first violation, what `Stop` delivered, and
//!   that violation is `Stop`'s error with the same message (a valid stream:
//!   the same outcome);
//! - framing is only framing: the same input generated with
//!   `Framing::PLAIN` (`data: {json}`, LF, nothing else) instead of its
//!   drawn framing has the same events and expected verdict, and the
//!   pipeline emits the same events (encoded, with
//!   the same frame indexes) and stops at the same frame, stage and error
//!   kind with the same message — but for the JSON stage, whose kind and
//!   V8-style message hold a position that data lines split differently
//!   move. Compared only when neither stream used more than half of the
//!   1 MiB output (the generator's room never bound it).
//!
//! Input layout: `[flags, generator input...]`.
//! - `flags` bit 0: the generator may inject a violation
//!   (`GenOptions::violations`); bit 1: any line ends (CR, CRLF, mixed),
//!   else LF only; bit 2: `Minting::Deterministic` (else `PerRun`); bit 3:
//!   `strict_end`; bit 4: also read the stream in the other dialect
//!   (no verdict expected there: split and buffer invariance only).
//! - The rest drives the generator (dialect, families, maximums, framing
//!   and cut points first; then one draw per event).
#![no_main]

use agui_stream::generator::{self, Framing, GenOptions, LineEnds};
use agui_stream::{Config, Dialect, Error, Minting, Policy, Stage};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

#[path = "gen/support.rs"]
mod support;
use support::{Counters, dump};
#[path = "shared/runs.rs"]
mod shared;
use shared::{Outcome, Seen, run, same_unless_a_frame_did_not_fit};

/// The generator's output: room for long runs and many large values.
const OUT: usize = 1 << 20;
/// A frame buffer that holds any generated frame (a large value is at
/// most 64 KiB), so capacity never differs between splits.
const BUFFER: usize = 256 << 10;
/// A frame buffer most large frames and some ordinary ones outgrow.
const SMALL: usize = 1024;

/// Buffers reused from input to input (zeroing megabytes each time would
/// cost more than the runs).
struct Buffers {
    drawn: Vec<u8>,
    plain: Vec<u8>,
    runs: Runs,
}

/// What the pipelines run over.
struct Runs {
    frame: Vec<u8>,
    small: Vec<u8>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers {
        drawn: vec![0; OUT],
        plain: vec![0; OUT],
        runs: Runs {
            frame: vec![0; BUFFER],
            small: vec![0; SMALL],
        },
    });
}

/// `AGUI_FUZZ_STATS=1`: what the inputs made.
static STATS: Counters<9> = Counters::new([
    "inputs",
    "generated",
    "v0",
    "violations",
    "non-LF",
    "spilled at 1 KiB",
    "stand-ins",
    "did not fit 1 KiB",
    "PLAIN compared",
]);
const GENERATED: usize = 1;
const V0: usize = 2;
const VIOLATIONS: usize = 3;
const NON_LF: usize = 4;
const SPILLED: usize = 5;
const STAND_INS: usize = 6;
const DID_NOT_FIT: usize = 7;
const COMPARED: usize = 8;

fuzz_target!(|data: &[u8]| {
    STATS.input("gen_pipeline");
    let [flags, input @ ..] = data else { return };
    BUFFERS.with_borrow_mut(|b| check(*flags, input, b));
});

fn check(flags: u8, input: &[u8], b: &mut Buffers) {
    let Buffers { drawn, plain, runs } = b;
    let violations = flags & 1 != 0;
    let mut options = GenOptions::new().violations(violations);
    if flags & 2 == 0 {
        options = options.line_ends(LineEnds::Lf);
    }
    let g = generator::generate_with(input, drawn, options);
    let stream = &drawn[..g.len];
    let pieces: Vec<&[u8]> = g.pieces(stream).collect();
    dump(stream);
    STATS.count(GENERATED, g.len > 0);
    STATS.count(V0, g.len > 0 && g.dialect == Dialect::V0);
    STATS.count(VIOLATIONS, !g.expected.is_valid());
    STATS.count(
        NON_LF,
        g.len > 0 && g.config.framing.line_ends != LineEnds::Lf,
    );
    assert_eq!(pieces.concat(), stream, "the pieces are the stream");
    let minting = if flags & 4 != 0 {
        Minting::Deterministic
    } else {
        Minting::PerRun
    };
    let config = Config::new()
        .dialect(g.dialect)
        .minting(minting)
        .strict_end(flags & 8 != 0);
    let show = || {
        format!(
            "{:?} {:?}, {} events, expected {:?}\n{}",
            config,
            g.config,
            g.events,
            g.expected,
            String::from_utf8_lossy(&stream[..stream.len().min(1 << 14)])
        )
    };

    // The verdict is the generator's.
    let stop = (config, Policy::Stop);
    let whole = run(stop, std::iter::once(stream), &mut runs.frame);
    assert!(
        g.expected.matches(whole.1.as_ref().err()),
        "verdict {:?} ({:?}), {}",
        whole.1,
        whole.2,
        show()
    );
    if g.expected.is_valid() {
        let summary = whole.1.as_ref().expect("matched: valid");
        assert!(summary.is_complete(), "{summary:?}, {}", show());
    }

    // The pipeline target's properties, in the generator's pushes.
    let same_pushes = |runs: &mut Runs, whole: &Outcome, setup: (Config, Policy)| {
        let split = run(setup, pieces.iter().copied(), &mut runs.frame);
        assert!(
            *whole == split,
            "{setup:?}: the pushes changed the outcome, {}",
            show()
        );
        let small = run(setup, pieces.iter().copied(), &mut runs.small);
        same_unless_a_frame_did_not_fit(whole, &small, SMALL, |e| did_not_fit(e, SMALL));
        small
    };
    {
        // How often the 1 KiB path is taken (Stop, the generated dialect).
        let small = same_pushes(runs, &whole, stop);
        let infos = || {
            small.0.iter().filter_map(|s| match s {
                Seen::Event(_, info) => Some(info),
                Seen::Violation(..) => None,
            })
        };
        STATS.count(SPILLED, infos().any(|i| i.spilled));
        STATS.count(STAND_INS, infos().any(|i| !i.stand_ins.is_empty()));
        STATS.count(
            DID_NOT_FIT,
            small.1.as_ref().is_err_and(|e| did_not_fit(e, SMALL)),
        );
    }
    let monitor = (config, Policy::Monitor);
    let watched = run(monitor, std::iter::once(stream), &mut runs.frame);
    let _ = same_pushes(runs, &watched, monitor);
    monitor_agrees(&whole, &watched);

    if flags & 16 != 0 {
        let other = match g.dialect {
            Dialect::V1 => Dialect::V0,
            _ => Dialect::V1,
        };
        for policy in [Policy::Stop, Policy::Monitor] {
            let setup = (config.dialect(other), policy);
            let whole = run(setup, std::iter::once(stream), &mut runs.frame);
            let _ = same_pushes(runs, &whole, setup);
        }
    }

    // Framing is only framing.
    let plain_options = GenOptions::new()
        .violations(violations)
        .framing(Framing::PLAIN);
    let p = generator::generate_with(input, plain, plain_options);
    if g.len > OUT / 2 || p.len > OUT / 2 {
        return;
    }
    assert_eq!(
        (p.dialect, p.events, p.expected),
        (g.dialect, g.events, g.expected),
        "the framing changed the generated events, {}",
        show()
    );
    let plain = &plain[..p.len];
    STATS.count(COMPARED, true);
    let plain_run = run(stop, std::iter::once(plain), &mut runs.frame);
    let events = |o: &Outcome| -> Vec<(u64, Vec<u8>)> {
        o.0.iter()
            .filter_map(|s| match s {
                Seen::Event(json, info) => Some((info.index, json.clone())),
                Seen::Violation(..) => None,
            })
            .collect()
    };
    assert!(
        events(&whole) == events(&plain_run),
        "PLAIN framing emits other events, {}",
        show()
    );
    match (&whole.1, &plain_run.1) {
        (Ok(_), Ok(_)) => {}
        (Err(a), Err(b)) => {
            assert_eq!(
                (a.frame, a.stage),
                (b.frame, b.stage),
                "PLAIN framing stops elsewhere, {}",
                show()
            );
            if a.stage != Stage::Json {
                assert_eq!(a.kind, b.kind, "PLAIN framing: another error, {}", show());
                assert_eq!(
                    whole.2,
                    plain_run.2,
                    "PLAIN framing: another message, {}",
                    show()
                );
            }
        }
        (a, b) => panic!("drawn framing {a:?}, PLAIN {b:?}, {}", show()),
    }
}

/// A monitoring pipeline hears, up to its first violation, what a stopping
/// one delivered, and that violation is the stopping one's error.
fn monitor_agrees(stop: &Outcome, monitor: &Outcome) {
    match &stop.1 {
        Ok(_) => assert!(stop == monitor, "a valid stream: Monitor differs from Stop"),
        Err(e) => {
            let first = monitor
                .0
                .iter()
                .position(|s| matches!(s, Seen::Violation(..)));
            let (before, violation) = match first {
                Some(i) => (&monitor.0[..i], monitor.0.get(i)),
                // A strict end's Incomplete, or a capacity, ends the run
                // as an error in both.
                None => (&monitor.0[..], None),
            };
            assert!(
                before == &stop.0[..],
                "Monitor heard other events before {e:?}"
            );
            match violation {
                Some(Seen::Violation(v, message)) => {
                    assert_eq!(v, e, "Monitor's first violation");
                    assert_eq!(Some(message), stop.2.as_ref(), "its message");
                }
                _ => assert_eq!(monitor.1.as_ref().err(), Some(e), "Monitor's error"),
            }
        }
    }
}

/// The errors of a frame that spilled past a `buffer`-byte buffer and was
/// well-formed, or of a check that needs what it let go (as in the
/// `pipeline` target; see `docs/capacities.md`).
fn did_not_fit(e: &Error, buffer: usize) -> bool {
    use agui_stream::{Capacity, ErrorKind};
    match e.kind {
        ErrorKind::Capacity(Capacity::FrameBuffer { capacity }) => capacity as usize == buffer,
        ErrorKind::Capacity(Capacity::JsonDepth { limit }) => limit == 64,
        _ => false,
    }
}
