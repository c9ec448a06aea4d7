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
//!   that was let go): up to its frame, all the same.
//! - `rewrite::Rewriter` (default options, and `close_open`): 16 MiB frame
//!   and raw buffers in one push against 1 KiB/4 KiB pairs in the drawn
//!   pushes. A stream the 16 MiB run passes without a violation comes out
//!   byte for byte the same (a block cut short by the stream's end aside:
//!   what the client reads is the same); a rejected one ends with the same
//!   final `RUN_ERROR`.
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

use agui_stream::rewrite::{Options, Rewriter, Stats};
use agui_stream::{
    Capacity, Config, Dialect, Error, ErrorKind, Event, FrameInfo, Pipeline, Policy, Sink,
    Summary, encode, legacy::Minting,
};
use libfuzzer_sys::fuzz_target;
use std::ops::ControlFlow;

#[path = "../../tests/common/stand_ins.rs"]
mod stand_ins;
use stand_ins::same_but_stand_ins;

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

/// The events and violations, the end, and the end's message.
type Outcome = (Vec<Seen>, Result<Summary, Error>, Option<String>);

fn run(config: Config, chunks: &[&[u8]], buffer: usize) -> Outcome {
    let mut buffer = vec![0u8; buffer];
    let mut pipeline = Pipeline::new(&mut buffer, config);
    let mut sink = Record::default();
    let mut result = Ok(());
    for chunk in chunks {
        result = pipeline.push(chunk, &mut sink).map(drop);
        if result.is_err() {
            break;
        }
    }
    let result = result.and_then(|_| pipeline.finish(&mut sink));
    let message = result.err().map(|e| pipeline.message(&e).to_string());
    (sink.0, result, message)
}

/// The findings `AGUI_FUZZ_KNOWN` names, for a run that looks past them:
/// `depth64` lets a small buffer add `Capacity::JsonDepth { limit: 64 }`
/// as it may add `Capacity::Owners`.
fn known() -> &'static [Capacity] {
    static KNOWN: std::sync::OnceLock<Vec<Capacity>> = std::sync::OnceLock::new();
    KNOWN.get_or_init(|| {
        let names = std::env::var("AGUI_FUZZ_KNOWN").unwrap_or_default();
        let mut known = vec![Capacity::Owners];
        if names.contains("depth64") {
            known.push(Capacity::JsonDepth { limit: 64 });
        }
        known
    })
}

/// A stop a small buffer may add: `Capacity::Owners` (a rule needs the
/// owner record of a history message that was let go).
fn is_owners(e: &Error) -> bool {
    matches!(e.kind, ErrorKind::Capacity(c) if known().contains(&c))
}

/// The same event from the same frame: `small` may show stand-ins where
/// its frame spilled.
fn same_event(w: &[u8], wi: &FrameInfo, s: &[u8], si: &FrameInfo) -> bool {
    (wi.index, wi.start, wi.end, wi.terminated, wi.original, wi.input_type)
        == (si.index, si.start, si.end, si.terminated, si.original, si.input_type)
        && (w == s || (si.spilled && same_but_stand_ins(w, s, si.stand_ins)))
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

fn compare_pipeline(ctx: &str, whole: &Outcome, small: &Outcome) {
    // A check that needs an owner record the small buffer let go may stop
    // (or, monitoring, report) at its frame: up to there, all the same.
    let owners = small
        .0
        .iter()
        .find_map(|s| match s {
            Seen::Violation(e, _) if is_owners(e) => Some(e.frame),
            _ => None,
        })
        .or(small.1.as_ref().err().filter(|e| is_owners(e)).map(|e| e.frame));
    if let Some(frame) = owners {
        let before = |o: &Outcome| {
            o.0.iter()
                .take_while(|s| match s {
                    Seen::Event(_, info) => info.index < frame,
                    Seen::Violation(e, _) => e.frame < frame,
                })
                .count()
        };
        let (w, s) = (before(whole), before(small));
        if let Some(i) = first_difference(&whole.0[..w], &small.0[..s]) {
            panic!(
                "{ctx}: before the Capacity::Owners at frame {frame}, item {i} differs:\n  16 MiB: {}\n  small:  {}",
                show(whole.0.get(i)),
                show(small.0.get(i))
            );
        }
        return;
    }
    if let Some(i) = first_difference(&whole.0, &small.0) {
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
    assert!(
        whole.1 == small.1 && whole.2 == small.2,
        "{ctx}: the end differs:\n  16 MiB: {:?} {:?}\n  small:  {:?} {:?}",
        whole.1,
        whole.2,
        small.1,
        small.2
    );
}

// ------------------------------------------------------------------ rewriter

fn rewrite(config: Config, options: Options, chunks: &[&[u8]], (f, r): (usize, usize)) -> (Vec<u8>, Stats) {
    let (mut frames, mut raw) = (vec![0u8; f], vec![0u8; r]);
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, config, options);
    let mut out = Vec::new();
    for chunk in chunks {
        let pushed = rewriter.push(chunk, &mut out).expect("a Vec has room");
        assert_eq!(pushed.read, chunk.len(), "a Vec never holds the stream up");
    }
    rewriter.finish(&mut out).expect("a Vec has room");
    (out, *rewriter.stats())
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
    let view = client_view(out);
    let last = view.last()?;
    let json = last.strip_prefix(b"data: ")?;
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    if v["type"] != "RUN_ERROR" {
        return None;
    }
    Some((
        v["code"].as_str().unwrap_or_default().to_string(),
        v["message"].as_str().unwrap_or_default().to_string(),
    ))
}

/// The stop a small buffer may add: an owner record let go.
fn owners_stop(end: &Option<(String, String)>) -> bool {
    end.as_ref().is_some_and(|(code, message)| {
        code == "AGUI_STREAM_CAPACITY" && known().iter().any(|c| *message == c.to_string())
    })
}

fn compare_rewriter(ctx: &str, whole: &(Vec<u8>, Stats), small: &(Vec<u8>, Stats)) {
    let lossy = |b: &[u8]| String::from_utf8_lossy(&b[b.len().saturating_sub(3000)..]).into_owned();
    let (w_end, s_end) = (last_run_error(&whole.0), last_run_error(&small.0));
    if owners_stop(&s_end) && !owners_stop(&w_end) {
        return;
    }
    if whole.1.violations == 0 {
        if whole.0 == small.0 {
            return;
        }
        // A block that went out ahead of its verdict and that the stream
        // ended inside of is cut: the client reads what it reads from the
        // 16 MiB run.
        let truncated = whole.1.repairs > 0 && small.1.cut > 0 && small.1.violations == 0;
        assert!(
            truncated && client_view(&whole.0) == client_view(&small.0),
            "{ctx}: the output of a stream without violations differs (cut {}, violations {}, repairs {}):\n  16 MiB: …{:?}\n  small:  …{:?}",
            small.1.cut,
            small.1.violations,
            small.1.repairs,
            lossy(&whole.0),
            lossy(&small.0),
        );
    } else {
        assert!(
            w_end.is_some() && w_end == s_end,
            "{ctx}: the final RUN_ERROR differs:\n  16 MiB: {w_end:?}\n  small:  {s_end:?}\n  16 MiB: …{:?}\n  small:  …{:?}",
            lossy(&whole.0),
            lossy(&small.0),
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

fuzz_target!(|data: &[u8]| {
    let [mode, n, rest @ ..] = data else { return };
    let n = usize::from(n % 8) + 1;
    let Some((sizes, rest)) = rest.split_at_checked(2 * n) else {
        return;
    };
    let sizes: Vec<usize> = sizes
        .chunks(2)
        .map(|s| 1 + usize::from(u16::from_le_bytes([s[0], s[1]])) % 1460)
        .collect();
    let generated;
    let stream = if mode & 0x80 != 0 {
        &rest[..rest.len().min(MAX_STREAM)]
    } else {
        generated = generator::generate(rest).stream();
        &generated[..]
    };
    if let Some(path) = std::env::var_os("AGUI_FUZZ_DUMP") {
        std::fs::write(path, stream).expect("the dump file");
    }
    let chunks = split(stream, &sizes);
    let ctx = |what: String| format!("{what}, pushes of {sizes:?}");

    for dialect in [Dialect::V1, Dialect::V0] {
        for policy in [Policy::Stop, Policy::Monitor] {
            let config = Config::new()
                .dialect(dialect)
                .policy(policy)
                .minting(Minting::Deterministic);
            let whole = run(config, &[stream], LARGE);
            for buffer in SMALL {
                let small = run(config, &chunks, buffer);
                compare_pipeline(&ctx(format!("{dialect:?} {policy:?}, {buffer}-byte buffer")), &whole, &small);
            }
        }
        let config = Config::new()
            .dialect(dialect)
            .minting(Minting::Deterministic);
        for close_open in [false, true] {
            let options = Options::new().close_open(close_open);
            let whole = rewrite(config, options, &[stream], (LARGE, LARGE));
            for pair in PAIRS {
                let small = rewrite(config, options, &chunks, pair);
                compare_rewriter(
                    &ctx(format!("rewriter {dialect:?}, close_open {close_open}, buffers {pair:?}")),
                    &whole,
                    &small,
                );
            }
        }
    }
});
