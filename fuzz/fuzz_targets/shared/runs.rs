//! What the targets that compare runs share (`pipeline`, `rewrite`,
//! `buffers`, `gen_pipeline`, `gen_rewrite`): a pipeline run recorded, the
//! comparison of a small-buffer run with a large one, the rewriter driven
//! over pushes, and pushes cut from sizes. Included with `#[path]`, as
//! `stand_ins.rs` is; each target uses part of it.
#![allow(dead_code)]

use agui_stream::rewrite::{Options, Rewriter, Stats, ToolTables};
use agui_stream::{Config, Error, Event, FrameInfo, Pipeline, Policy, Sink, Summary, encode};
use std::ops::ControlFlow;

#[path = "../../../tests/support/stand_ins.rs"]
#[allow(dead_code)] // its `run` is the tests'
mod stand_ins;
pub use stand_ins::same_but_stand_ins;

/// What a pipeline delivered, in order.
#[derive(Debug, PartialEq)]
pub enum Seen {
    /// An event, encoded, and its frame.
    Event(Vec<u8>, FrameInfo),
    /// A violation (`Policy::Monitor`) and its message.
    Violation(Error, String),
}

/// A sink that records what it is given.
#[derive(Default)]
pub struct Record {
    pub seen: Vec<Seen>,
    /// Reused for each event's encoding.
    json: Vec<u8>,
}

impl Sink for Record {
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
        self.json.clear();
        encode(event, &mut self.json).expect("a Vec never fills up");
        self.seen.push(Seen::Event(self.json.clone(), *frame));
        ControlFlow::Continue(())
    }

    fn violation(
        &mut self,
        error: &Error,
        frame: &FrameInfo,
        message: &dyn core::fmt::Display,
    ) -> ControlFlow<()> {
        assert_eq!(frame.index, error.frame, "a violation is told its frame");
        self.seen.push(Seen::Violation(*error, message.to_string()));
        ControlFlow::Continue(())
    }
}

/// The events and violations, the end, and the end's message.
pub type Outcome = (Vec<Seen>, Result<Summary, Error>, Option<String>);

/// Pushes `chunks` in order through a pipeline over `buffer`, stopping at
/// the first error, then finishes. A stopped pipeline must keep returning
/// its error, from push and finish alike.
pub fn run<'c>(
    (config, policy): (Config, Policy),
    chunks: impl IntoIterator<Item = &'c [u8]>,
    buffer: &mut [u8],
) -> Outcome {
    let mut pipeline = Pipeline::new(buffer, config).policy(policy);
    let mut sink = Record::default();
    let mut result = Ok(());
    for chunk in chunks {
        result = pipeline.push(chunk, &mut sink).map(drop);
        if result.is_err() {
            break;
        }
    }
    let result = result.and_then(|_| pipeline.finish(&mut sink));
    if let Err(e) = result {
        assert_eq!(pipeline.push(b"data: {}\n\n", &mut sink), Err(e));
        assert_eq!(pipeline.finish(&mut sink), Err(e));
    }
    let message = result.err().map(|e| pipeline.message(&e).to_string());
    (sink.seen, result, message)
}

/// Whether a monitoring pipeline over `buffer` reading `stream` hits a
/// fixed capacity.
pub fn hits_a_capacity(config: Config, stream: &[u8], buffer: &mut [u8]) -> bool {
    /// Notes capacities only (encoding the events would be wasted).
    struct Capacities(bool);
    impl Sink for Capacities {
        fn event(&mut self, _: &Event<'_>, _: &FrameInfo) -> ControlFlow<()> {
            ControlFlow::Continue(())
        }
        fn violation(
            &mut self,
            error: &Error,
            _: &FrameInfo,
            _: &dyn core::fmt::Display,
        ) -> ControlFlow<()> {
            self.0 |= error.is_capacity();
            ControlFlow::Continue(())
        }
    }
    let mut pipeline = Pipeline::new(buffer, config).policy(Policy::Monitor);
    let mut sink = Capacities(false);
    let end = pipeline
        .push(stream, &mut sink)
        .and_then(|_| pipeline.finish(&mut sink));
    sink.0 || end.is_err_and(|e| e.is_capacity())
}

/// A run through a `buffer`-byte frame buffer (`small`) against one whose
/// buffer holds every frame (`whole`): the same events, verdict and
/// message, unless a frame did not fit (`did_not_fit` says which errors
/// mean that); then what came before that frame is the same.
pub fn same_unless_a_frame_did_not_fit(
    whole: &Outcome,
    small: &Outcome,
    buffer: usize,
    did_not_fit: impl Fn(&Error) -> bool,
) {
    let stop_at = small
        .0
        .iter()
        .find_map(|s| match s {
            Seen::Violation(e, _) if did_not_fit(e) => Some(e.frame),
            _ => None,
        })
        .or(small
            .1
            .as_ref()
            .err()
            .filter(|e| did_not_fit(e))
            .map(|e| e.frame));
    match stop_at {
        None => {
            assert!(
                same_seen(&whole.0, &small.0),
                "the {buffer}-byte buffer changed the events"
            );
            assert_eq!(
                whole.1, small.1,
                "the {buffer}-byte buffer changed the verdict"
            );
            assert_eq!(
                whole.2, small.2,
                "the {buffer}-byte buffer changed the message"
            );
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
pub fn same_seen(whole: &[Seen], small: &[Seen]) -> bool {
    whole.len() == small.len()
        && whole.iter().zip(small).all(|pair| match pair {
            (Seen::Event(w, wi), Seen::Event(s, si)) => {
                wi.index == si.index && (w == s || same_but_stand_ins(w, s, si.stand_ins))
            }
            (Seen::Violation(a, m), Seen::Violation(b, n)) => a == b && m == n,
            _ => false,
        })
}

/// Pushes `chunks` through a rewriter over `(frames, raw)` that denies the
/// tool `deny`, into a `Vec`, then finishes: its output and statistics.
pub fn rewrite<'c>(
    (frames, raw): (&mut [u8], &mut [u8]),
    config: Config,
    options: Options,
    deny: Option<&str>,
    chunks: impl IntoIterator<Item = &'c [u8]>,
) -> (Vec<u8>, Stats) {
    let mut tables = ToolTables::new();
    let mut r = Rewriter::new(frames, raw, config, options);
    if let Some(name) = deny {
        tables.deny(name).expect("one short name fits");
        r.deny_tools(&mut tables);
    }
    let mut out = Vec::new();
    for chunk in chunks {
        let pushed = r.push(chunk, &mut out).expect("a Vec has room");
        assert_eq!(pushed.read, chunk.len(), "a Vec never holds the stream up");
    }
    r.finish(&mut out).expect("a Vec has room");
    (out, *r.stats())
}

/// [`rewrite`], with the buffers given back between blocks
/// (`Rewriter::take_buffers`) and another pair, poisoned, given before
/// each push that needs one (`put_buffers`), as the Envoy filters lend
/// them: the same output and statistics, or a buffer held a stale byte.
pub fn rewrite_lent<'c>(
    size: usize,
    config: Config,
    options: Options,
    deny: Option<&str>,
    chunks: impl IntoIterator<Item = &'c [u8]>,
) -> (Vec<u8>, Stats) {
    let mut pairs = [
        (vec![0u8; size], vec![0u8; size]),
        (vec![0u8; size], vec![0u8; size]),
    ];
    let mut idle: Vec<(&mut [u8], &mut [u8])> = pairs
        .iter_mut()
        .map(|(f, r)| (&mut f[..], &mut r[..]))
        .collect();
    let mut tables = ToolTables::new();
    let mut r = Rewriter::new(&mut [], &mut [], config, options);
    if let Some(name) = deny {
        tables.deny(name).expect("one short name fits");
        r.deny_tools(&mut tables);
    }
    let mut out = Vec::new();
    for chunk in chunks {
        if !r.holds_block() {
            // The pair given back longest ago.
            let (frames, raw) = idle.remove(0);
            frames.fill(b'{');
            raw.fill(b'\n');
            let (old, _) = r.put_buffers(frames, raw).expect("no block held");
            assert!(old.is_empty(), "the rewriter's pair was not given back");
        }
        let pushed = r.push(chunk, &mut out).expect("a Vec has room");
        assert_eq!(pushed.read, chunk.len(), "a Vec never holds the stream up");
        if let Some(pair) = r.take_buffers() {
            idle.push(pair);
        }
    }
    r.finish(&mut out).expect("a Vec has room");
    (out, *r.stats())
}

/// `chunks` through a rewriter with `Options::hold` and a `frames`-byte
/// frame buffer, whose raw buffer starts at `raw` bytes and doubles
/// wherever a push stops at a held block, as the front ends' pools make
/// room (`Rewriter::grow_raw`; the raw buffers it had are poisoned).
pub fn rewrite_held<'c>(
    frames: usize,
    raw: usize,
    config: Config,
    options: Options,
    deny: Option<&str>,
    chunks: impl IntoIterator<Item = &'c [u8]> + Clone,
) -> (Vec<u8>, Stats) {
    // Room for the largest block: the whole input.
    let total: usize = chunks.clone().into_iter().map(<[u8]>::len).sum();
    let mut store: Vec<Vec<u8>> = core::iter::successors(Some(raw.max(16)), |&n| {
        (n <= total).then(|| n.saturating_mul(2))
    })
    .map(|n| vec![0u8; n])
    .collect();
    let mut spare = store.iter_mut().map(|v| &mut v[..]);
    let mut frames = vec![0u8; frames];
    let first = spare.next().expect("one raw buffer at least");
    let mut tables = ToolTables::new();
    let mut r = Rewriter::new(&mut frames, first, config, options.hold(true));
    if let Some(name) = deny {
        tables.deny(name).expect("one short name fits");
        r.deny_tools(&mut tables);
    }
    let mut out = Vec::new();
    for chunk in chunks {
        let mut rest = chunk;
        loop {
            let pushed = r.push(rest, &mut out).expect("a Vec has room");
            rest = &rest[pushed.read..];
            if !pushed.held {
                break;
            }
            let larger = spare.next().expect("a raw buffer as large as the input");
            r.grow_raw(larger)
                .expect("larger than what is held")
                .fill(b'\n');
        }
        assert!(rest.is_empty(), "a Vec never holds the stream up");
    }
    r.finish(&mut out).expect("a Vec has room");
    (out, *r.stats())
}

/// The stream cut into pushes of `sizes` bytes, cycling (no sizes, or only
/// zeros: one byte per push; a zero pushes an empty slice).
pub fn split<'s>(stream: &'s [u8], sizes: &[u8]) -> Vec<&'s [u8]> {
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
