//! The frame buffer is a performance knob, never a verdict: for any stream,
//! a 1 KiB or 4 KiB buffer gives what a 16 MiB one gives. Compares
//! small-buffer and 16 MiB runs on random splits of generated nested values
//! (and of the corpus):
//!
//! - `Pipeline` (V1 and V0, `Stop` and `Monitor`, deterministic minting):
//!   16 MiB in one push against 1 KiB and 4 KiB in the drawn pushes. The
//!   same events (a spilled frame's may show stand-ins: values reduced at
//!   any depth, `same_but_stand_ins`) from the same frames, the same
//!   violations with the same messages, the same `Summary` or `Error` and
//!   its message. The one capacity a small buffer may add is
//!   `Capacity::Owners` (a rule needs the owner record of a history message
//!   that was let go): the small run may stop (or report) there, and all
//!   before it is the same.
//! - `rewrite::Rewriter` (default options, and `close_open`): 16 MiB frame
//!   and raw buffers in one push against 1 KiB/4 KiB pairs in the drawn
//!   pushes. A stream the 16 MiB run passes without a violation comes out
//!   byte for byte the same (a block cut short by the stream's end aside:
//!   what the client reads is the same); a rejected one ends with the same
//!   final `RUN_ERROR`. The gateway may also stop at `Capacity::Owners`, or
//!   where an event it must re-encode outgrew its buffers (documented),
//!   with the same output before.
//!
//! Input layout: `[mode, n, sizes[0..n % 8 + 1] as u16 LE, rest…]`.
//! - The pushes are `1 + size % 1460` bytes, cycling.
//! - `mode` bit 7: `rest` is the stream itself (the corpus seeds, behind
//!   `80 01 06 00 b3 05`: pushes of 7 and 1460 bytes). Otherwise `rest`
//!   drives the generator (`nested/generator.rs`), which builds a run
//!   whose frames carry nested values of up to about 20 KB.
//!
//! `AGUI_FUZZ_DUMP=FILE` writes each stream to FILE (to see what an input
//! makes: `cargo fuzz run -s none buffers INPUT`).
#![no_main]

use agui_stream::rewrite::{Options, Stats};
use agui_stream::{Capacity, Config, Dialect, Error, ErrorKind, FrameInfo, Minting, Policy};
use libfuzzer_sys::fuzz_target;
use std::sync::atomic::{AtomicU64, Ordering};

#[path = "shared/runs.rs"]
mod shared;
use shared::{Outcome, Seen, same_but_stand_ins};

#[path = "nested/generator.rs"]
mod generator;

/// The buffer that holds every frame.
const LARGE: usize = 16 << 20;
/// The small frame buffers.
const SMALL: [usize; 2] = [1 << 10, 4 << 10];
/// The small (frame, raw) buffer pairs of the rewriter.
const PAIRS: [(usize, usize); 4] = [
    (1 << 10, 1 << 10),
    (4 << 10, 4 << 10),
    (1 << 10, 4 << 10),
    (4 << 10, 1 << 10),
];
/// The longest stream compared (a raw input's is cut there).
const MAX_STREAM: usize = 64 << 10;

// ------------------------------------------------------------------ pipeline

/// Pushes `chunks` through a pipeline with a `buffer`-byte frame buffer.
fn run(setup: (Config, Policy), chunks: &[&[u8]], buffer: usize) -> Outcome {
    shared::run(setup, chunks.iter().copied(), &mut vec![0u8; buffer])
}

/// Whether a small run may stop at `finding`, a limit docs/capacities.md
/// lists: `depth64`, a small run stops at
/// `Capacity::JsonDepth { limit: 64 }` (the buffer's last bytes hold a
/// history's records); `framebuffer`, at `Capacity::FrameBuffer` (a value
/// a rule reads, or a member read before what decides its shape, did not
/// fit); `owners16m`, the 16 MiB run says `Capacity::Owners` where the
/// small one, which kept the record, gives the verdict. All three are on
/// unless `AGUI_FUZZ_STRICT=1`; `AGUI_FUZZ_KNOWN` (comma-separated) names
/// the ones to allow instead. A wrong verdict, event or message is never
/// allowed.
fn known(finding: &str) -> bool {
    static KNOWN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KNOWN
        .get_or_init(|| match std::env::var("AGUI_FUZZ_KNOWN") {
            Ok(list) => list,
            Err(_) if std::env::var("AGUI_FUZZ_STRICT").is_ok_and(|v| v == "1") => String::new(),
            Err(_) => "depth64,framebuffer,owners16m".to_string(),
        })
        .split(',')
        .any(|k| k == finding)
}

/// Why a small run may stop (or, monitoring, report) where the 16 MiB one
/// does not: `Capacity::Owners`, a rule that needs the owner record of a
/// history message that was let go (and what [`known`] adds).
fn allowed_stop(e: &Error) -> Option<&'static str> {
    match e.kind {
        ErrorKind::Capacity(Capacity::Owners) => Some("owners"),
        ErrorKind::Capacity(Capacity::JsonDepth { limit: 64 }) if known("depth64") => {
            Some("depth64")
        }
        ErrorKind::Capacity(Capacity::FrameBuffer { .. }) if known("framebuffer") => {
            Some("framebuffer")
        }
        ErrorKind::Json(_) if known("json") => Some("json"),
        _ => None,
    }
}

/// The same event from the same frame: `small` may show stand-ins where
/// its frame spilled.
fn same_event(w: &[u8], wi: &FrameInfo, s: &[u8], si: &FrameInfo) -> bool {
    (
        wi.index,
        wi.start,
        wi.end,
        wi.terminated,
        wi.original,
        wi.input_type,
    ) == (
        si.index,
        si.start,
        si.end,
        si.terminated,
        si.original,
        si.input_type,
    ) && (w == s || (si.spilled && same_but_stand_ins(w, s, si.stand_ins)))
}

/// Where the two differ first, if they do.
fn first_difference(whole: &[Seen], small: &[Seen]) -> Option<usize> {
    let differ = |(w, s): (&Seen, &Seen)| match (w, s) {
        (Seen::Event(w, wi), Seen::Event(s, si)) => !same_event(w, wi, s, si),
        (Seen::Violation(a, m), Seen::Violation(b, n)) => a != b || m != n,
        _ => true,
    };
    whole
        .iter()
        .zip(small)
        .position(differ)
        .or((whole.len() != small.len()).then(|| whole.len().min(small.len())))
}

fn show(seen: Option<&Seen>) -> String {
    match seen {
        Some(Seen::Event(json, info)) => format!(
            "event of frame {} (spilled {}, stand-ins {:?}): {}",
            info.index,
            info.spilled,
            info.stand_ins,
            String::from_utf8_lossy(&json[..json.len().min(600)])
        ),
        Some(Seen::Violation(e, m)) => format!("violation {e:?}: {m}"),
        None => "nothing".into(),
    }
}

/// Compares; returns the kind of an allowed stop the small run made where
/// the 16 MiB one did not (after which nothing more is compared). Up to
/// the first difference all is the same; there, the small run may stop
/// (or report) at an allowed capacity.
fn compare_pipeline(ctx: &str, whole: &Outcome, small: &Outcome) -> Option<&'static str> {
    let differs = first_difference(&whole.0, &small.0);
    if differs.is_none() && whole.1 == small.1 && whole.2 == small.2 {
        return None;
    }
    let i = differs.unwrap_or(whole.0.len());
    // What a run has at the first difference: a violation, or its end.
    let at = |o: &Outcome| match o.0.get(i) {
        Some(Seen::Violation(e, _)) => Some(*e),
        Some(Seen::Event(..)) => None,
        None => o.1.err(),
    };
    let stop = at(small).and_then(|e| allowed_stop(&e)).or_else(|| {
        at(whole)
            .filter(|e| known("owners16m") && e.kind == ErrorKind::Capacity(Capacity::Owners))
            .map(|_| "owners-16m")
    });
    if let Some(kind) = stop {
        return Some(kind);
    }
    if let Some(i) = differs {
        panic!(
            "{ctx}: item {i} differs:\n  16 MiB: {}\n  small:  {}\n  ends: {:?} {:?}\n     vs {:?} {:?}",
            show(whole.0.get(i)),
            show(small.0.get(i)),
            whole.1,
            whole.2,
            small.1,
            small.2
        );
    }
    panic!(
        "{ctx}: the end differs:\n  16 MiB: {:?} {:?}\n  small:  {:?} {:?}",
        whole.1, whole.2, small.1, small.2
    );
}

// ------------------------------------------------------------------ rewriter

fn rewrite(
    config: Config,
    options: Options,
    chunks: &[&[u8]],
    (f, r): (usize, usize),
) -> (Vec<u8>, Stats) {
    let (mut frames, mut raw) = (vec![0u8; f], vec![0u8; r]);
    let chunks = chunks.iter().copied();
    shared::rewrite((&mut frames, &mut raw), config, options, None, chunks)
}

/// The data line that ends a cut block.
const CUT_LINE: &[u8] = b"data: \x01";

/// The output's blocks (each without its blank line) but the cut ones,
/// which no client reads as events.
fn client_view(out: &[u8]) -> Vec<&[u8]> {
    let mut blocks = Vec::new();
    let mut rest = out;
    while !rest.is_empty() {
        let (block, next) = match rest.windows(2).position(|w| w == b"\n\n") {
            Some(k) => (&rest[..k], &rest[k + 2..]),
            None => (rest, &rest[rest.len()..]),
        };
        if !block.split(|&b| b == b'\n').any(|line| line == CUT_LINE) {
            blocks.push(block);
        }
        rest = next;
    }
    blocks
}

/// The final `RUN_ERROR`'s `code` and `message`, if the output ends with one.
fn last_run_error(out: &[u8]) -> Option<(String, String)> {
    let body = out.strip_suffix(b"\n\n").unwrap_or(out);
    let start = body
        .windows(2)
        .rposition(|w| w == b"\n\n")
        .map_or(0, |k| k + 2);
    let json = body[start..].strip_prefix(b"data: ")?;
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    if v["type"] != "RUN_ERROR" {
        return None;
    }
    Some((
        v["code"].as_str().unwrap_or_default().to_string(),
        v["message"].as_str().unwrap_or_default().to_string(),
    ))
}

/// A stop a small buffer may add to the gateway's output: an owner record
/// let go (`Capacity::Owners`), or the documented limit of a rewriter
/// whose buffers an event that must be re-encoded (a chunk's expansion,
/// V1's translation of `THINKING_*`) outgrew: its bytes are gone
/// (docs/gateway.md: "an event larger than the frame buffer cannot be
/// re-encoded").
fn allowed_gateway_stop(end: &Option<(String, String)>) -> Option<Stop> {
    let (code, message) = end.as_ref()?;
    if code != "AGUI_STREAM_CAPACITY" {
        return None;
    }
    if *message == Capacity::Owners.to_string() {
        Some(Stop::Owners)
    } else if message.ends_with("cannot be re-encoded") {
        Some(Stop::ReEncode)
    } else {
        None
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Stop {
    Owners,
    ReEncode,
}

fn compare_rewriter(ctx: &str, whole: &(Vec<u8>, Stats), small: &(Vec<u8>, Stats)) {
    if whole.0 == small.0 {
        return;
    }
    let lossy = |b: &[u8]| String::from_utf8_lossy(&b[b.len().saturating_sub(3000)..]).into_owned();
    let (w_end, s_end) = (last_run_error(&whole.0), last_run_error(&small.0));
    if s_end != w_end
        && let Some(stop) = allowed_gateway_stop(&s_end)
    {
        // Up to the stop (and the repairs it writes: closing events and
        // the final RUN_ERROR), the client reads what it reads from the
        // 16 MiB run.
        let (w, s) = (client_view(&whole.0), client_view(&small.0));
        let same = w.iter().zip(&s).take_while(|(a, b)| a == b).count();
        assert!(
            same + usize::try_from(small.1.repairs).unwrap_or(usize::MAX) + 1 >= s.len(),
            "{ctx}: before the stop {s_end:?}, the output differs at block {same}:\n  16 MiB: {:?}\n  small:  {:?}",
            w.get(same).map(|b| String::from_utf8_lossy(b)),
            s.get(same).map(|b| String::from_utf8_lossy(b)),
        );
        count(match stop {
            Stop::Owners => &STATS.rewriter_owners_stops,
            Stop::ReEncode => &STATS.reencode_stops,
        });
        return;
    }
    if whole.1.violations == 0 {
        // A block that went out ahead of its verdict and that the stream
        // ended inside of is cut: the client reads what it reads from the
        // 16 MiB run.
        let truncated = small.1.cut > 0 && small.1.violations == 0;
        assert!(
            truncated && client_view(&whole.0) == client_view(&small.0),
            "{ctx}: the output of a stream without violations differs (cut {}, violations {}, repairs {}):\n  16 MiB: …{:?}\n  small:  …{:?}",
            small.1.cut,
            small.1.violations,
            small.1.repairs,
            lossy(&whole.0),
            lossy(&small.0),
        );
        count(&STATS.truncation_cuts);
    } else {
        // The final block: the stop's RUN_ERROR (or, where the verifier
        // takes none, whatever came last).
        let (w, s) = (client_view(&whole.0), client_view(&small.0));
        assert!(
            w.last() == s.last(),
            "{ctx}: the final block differs:\n  16 MiB: {:?}\n  small:  {:?}\n  16 MiB: …{:?}\n  small:  …{:?}",
            w.last().map(|b| String::from_utf8_lossy(b)),
            s.last().map(|b| String::from_utf8_lossy(b)),
            lossy(&whole.0),
            lossy(&small.0),
        );
    }
}

// ------------------------------------------------------------------ statistics

/// What the runs saw, printed now and then with `AGUI_FUZZ_STATS=1` (how
/// often a generated stream spills, is accepted, hits an allowance).
#[derive(Default)]
struct Counters {
    inputs: AtomicU64,
    generated: AtomicU64,
    /// Dialects whose comparison stopped at a finding AGUI_FUZZ_KNOWN names.
    known_stops: AtomicU64,
    rewriter_owners_stops: AtomicU64,
    /// Streams with a frame that spilled past 1 KiB (V1, `Stop`).
    spilled: AtomicU64,
    /// … and with stand-ins in an event.
    stand_ins: AtomicU64,
    /// Streams the 16 MiB V1 pipeline accepts.
    accepted: AtomicU64,
    owners_stops: AtomicU64,
    reencode_stops: AtomicU64,
    truncation_cuts: AtomicU64,
}

static STATS: Counters = Counters {
    inputs: AtomicU64::new(0),
    generated: AtomicU64::new(0),
    known_stops: AtomicU64::new(0),
    rewriter_owners_stops: AtomicU64::new(0),
    spilled: AtomicU64::new(0),
    stand_ins: AtomicU64::new(0),
    accepted: AtomicU64::new(0),
    owners_stops: AtomicU64::new(0),
    reencode_stops: AtomicU64::new(0),
    truncation_cuts: AtomicU64::new(0),
};

fn count(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

fn print_stats() {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*ON.get_or_init(|| std::env::var_os("AGUI_FUZZ_STATS").is_some()) {
        return;
    }
    let n = STATS.inputs.load(Ordering::Relaxed);
    if n.is_power_of_two() && n >= 256 {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        eprintln!(
            "buffers stats: {n} inputs, {} generated; spilled {}, stand-ins {}, accepted {}; \
             stops at owners {}, at known findings {}; rewriter stops: owners {}, re-encode {}; truncation cuts {}",
            g(&STATS.generated),
            g(&STATS.spilled),
            g(&STATS.stand_ins),
            g(&STATS.accepted),
            g(&STATS.owners_stops),
            g(&STATS.known_stops),
            g(&STATS.rewriter_owners_stops),
            g(&STATS.reencode_stops),
            g(&STATS.truncation_cuts),
        );
    }
}

// ------------------------------------------------------------------ target

/// The stream cut into pushes of `sizes` bytes, cycling.
fn split<'s>(stream: &'s [u8], sizes: &[usize]) -> Vec<&'s [u8]> {
    let mut chunks = Vec::new();
    let mut rest = stream;
    for &size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

/// Fresh zeroed pages for every 16 MiB buffer: glibc would otherwise
/// serve them from the heap after the first is freed (its mmap threshold
/// grows to the freed size) and clear all 16 MiB each time, which costs
/// more than the runs. A fixed threshold keeps large blocks mmapped, so
/// only the pages a run touches are ever zeroed.
fn large_buffers_mmapped() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: mallopt only changes a malloc tuning parameter.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        }
    });
}

fuzz_target!(|data: &[u8]| {
    large_buffers_mmapped();
    let [mode, n, rest @ ..] = data else { return };
    let n = usize::from(n % 8) + 1;
    let Some((sizes, rest)) = rest.split_at_checked(2 * n) else {
        return;
    };
    let sizes: Vec<usize> = sizes
        .chunks(2)
        .map(|s| 1 + usize::from(u16::from_le_bytes([s[0], s[1]])) % 1460)
        .collect();
    count(&STATS.inputs);
    print_stats();
    let generated;
    let stream = if mode & 0x80 != 0 {
        &rest[..rest.len().min(MAX_STREAM)]
    } else {
        count(&STATS.generated);
        generated = generator::generate(rest).stream();
        &generated[..]
    };
    if let Some(path) = std::env::var_os("AGUI_FUZZ_DUMP") {
        std::fs::write(path, stream).expect("the dump file");
    }
    let chunks = split(stream, &sizes);
    let ctx = |what: String| format!("{what}, pushes of {sizes:?}");

    for dialect in [Dialect::V1, Dialect::V0] {
        // A stop at a finding AGUI_FUZZ_KNOWN names: the rewriter, whose
        // output would show it too, is not compared.
        let mut known_stop = false;
        for policy in [Policy::Stop, Policy::Monitor] {
            let config = Config::new()
                .dialect(dialect)
                .minting(Minting::Deterministic);
            let whole = run((config, policy), &[stream], LARGE);
            if (dialect, policy) == (Dialect::V1, Policy::Stop)
                && whole.1.is_ok()
                && whole.0.iter().all(|s| matches!(s, Seen::Event(..)))
            {
                count(&STATS.accepted);
            }
            for buffer in SMALL {
                let small = run((config, policy), &chunks, buffer);
                if (dialect, policy, buffer) == (Dialect::V1, Policy::Stop, SMALL[0]) {
                    let spilled = |f: fn(&FrameInfo) -> bool| {
                        small
                            .0
                            .iter()
                            .any(|s| matches!(s, Seen::Event(_, i) if f(i)))
                    };
                    if spilled(|i| i.spilled) {
                        count(&STATS.spilled);
                    }
                    if spilled(|i| !i.stand_ins.is_empty()) {
                        count(&STATS.stand_ins);
                    }
                }
                match compare_pipeline(
                    &ctx(format!("{dialect:?} {policy:?}, {buffer}-byte buffer")),
                    &whole,
                    &small,
                ) {
                    None => {}
                    Some("owners") => count(&STATS.owners_stops),
                    Some(_) => known_stop = true,
                }
            }
        }
        let config = Config::new()
            .dialect(dialect)
            .minting(Minting::Deterministic);
        if known_stop {
            count(&STATS.known_stops);
            continue;
        }
        for close_open in [false, true] {
            let options = Options::new().close_open(close_open);
            let whole = rewrite(config, options, &[stream], (LARGE, LARGE));
            for pair in PAIRS {
                let small = rewrite(config, options, &chunks, pair);
                compare_rewriter(
                    &ctx(format!(
                        "rewriter {dialect:?}, close_open {close_open}, buffers {pair:?}"
                    )),
                    &whole,
                    &small,
                );
            }
        }
    }
});
