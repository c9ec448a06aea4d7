//! The library never allocates: a counting global allocator sees zero
//! allocations while whole streams go through the pipeline (decode,
//! normalize, verify, encode, violation messages) in both dialects, stopping
//! at the first violation or monitoring (then checking tool-call arguments
//! too), long runs that forget owner records and frames that spill past a
//! small buffer included.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};

use agui_stream::{
    Config, Dialect, Error, Event, FrameInfo, Minting, Pipeline, Policy, Sink, SliceWriter, encode,
};

struct Counting;

thread_local! {
    /// Counting is per thread: the harness runs other tests alongside.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn whole_streams_go_through_without_allocating() {
    // Everything the test itself needs is allocated before counting starts.
    let mut streams: Vec<Vec<u8>> = support::sse_files(&support::real_dir())
        .iter()
        .map(|p| support::read(p))
        .collect();
    let extra = support::manifest_in(&support::extra_dir());
    for case in support::manifest().into_iter().chain(extra) {
        if case.category != "sse-quirk" {
            streams.push(case.stream());
        }
    }
    let mut frame_buffer = vec![0u8; 1 << 20];
    // The encoder writes into a fixed slice (a `Vec` would allocate), large
    // enough for the largest event of the corpus.
    let mut out = vec![0u8; 1 << 20];
    let mut sink = Encoding {
        out: &mut out,
        events: 0,
        too_large: 0,
        violations: 0,
        stand_ins: 0,
    };

    COUNTING.with(|c| c.set(true));
    // A 64-byte buffer makes most frames spill past it; with 512 bytes most
    // of those that spill have stand-ins; with 1 KiB message histories are
    // read element by element and deep nesting checked in the buffer.
    for (stream, buffer) in streams
        .iter()
        .flat_map(|s| [(s, 1 << 20), (s, 64), (s, 512), (s, 1024)])
    {
        for dialect in [Dialect::V1, Dialect::V0] {
            for (policy, minting) in [
                (Policy::Stop, Minting::Deterministic),
                (Policy::Monitor, Minting::PerRun),
            ] {
                // Monitoring also checks tool-call arguments.
                let config = Config::new()
                    .dialect(dialect)
                    .minting(minting)
                    .check_tool_args(policy == Policy::Monitor);
                let mut pipeline =
                    Pipeline::new(&mut frame_buffer[..buffer], config).policy(policy);
                // Pushes of 61 bytes: frames span pushes and go through the buffer.
                let verdict = stream
                    .chunks(61)
                    .try_for_each(|piece| pipeline.push(piece, &mut sink).map(drop))
                    .and_then(|_| pipeline.finish(&mut sink).map(|_| ()));
                if let Err(e) = verdict {
                    // Rendering the reference's message allocates nothing either.
                    let mut text = heapless::String::<512>::new();
                    let _ = core::fmt::write(&mut text, format_args!("{}", pipeline.message(&e)));
                }
            }
        }
    }
    COUNTING.with(|c| c.set(false));

    let allocations = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(allocations, 0, "{allocations} allocations");
    let Encoding {
        events,
        too_large,
        violations,
        stand_ins,
        ..
    } = sink;
    assert!(stand_ins > 50, "only {stand_ins} events with stand-ins");
    assert!(events > 10_000, "only {events} events");
    assert!(violations > 100, "only {violations} violations reported");
    assert_eq!(too_large, 0, "events the encoder could not write whole");
}

/// Encodes every event, and renders every reported violation, into fixed
/// storage.
struct Encoding<'o> {
    out: &'o mut [u8],
    events: usize,
    too_large: usize,
    violations: usize,
    stand_ins: usize,
}

impl Sink for Encoding<'_> {
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
        self.events += 1;
        self.stand_ins += usize::from(!frame.stand_ins.is_empty());
        if encode(event, &mut SliceWriter::new(self.out)).is_err() {
            self.too_large += 1;
        }
        ControlFlow::Continue(())
    }

    fn violation(
        &mut self,
        _: &Error,
        _: &FrameInfo,
        message: &dyn core::fmt::Display,
    ) -> ControlFlow<()> {
        self.violations += 1;
        let mut text = heapless::String::<512>::new();
        let _ = core::fmt::write(&mut text, format_args!("{message}"));
        ControlFlow::Continue(())
    }
}

/// The rewriter allocates nothing either: every corpus stream, quirks
/// included, under each policy, in 61-byte pushes into a fixed slice.
#[test]
fn the_rewriter_does_not_allocate() {
    use agui_stream::rewrite::{OnViolation, Options, Rewriter};
    let mut streams: Vec<Vec<u8>> = support::sse_files(&support::real_dir())
        .iter()
        .map(|p| support::read(p))
        .collect();
    let extra = support::manifest_in(&support::extra_dir());
    for case in support::manifest().into_iter().chain(extra) {
        streams.push(case.stream());
    }
    let (mut frames, mut raw) = (vec![0u8; 1024], vec![0u8; 1 << 20]);
    let mut out = vec![0u8; 4 << 20];
    let mut written = 0;
    COUNTING.with(|c| c.set(true));
    for stream in &streams {
        for dialect in [Dialect::V1, Dialect::V0] {
            for on_violation in [OnViolation::Stop, OnViolation::Drop, OnViolation::Pass] {
                let options = Options::new().on_violation(on_violation);
                let config = Config::new().dialect(dialect);
                let mut r = Rewriter::new(&mut frames, &mut raw, config, options);
                let mut w = SliceWriter::new(&mut out);
                for piece in stream.chunks(61) {
                    let _ = r.push(piece, &mut w);
                }
                let _ = r.finish(&mut w);
                written += w.len();
            }
        }
    }
    COUNTING.with(|c| c.set(false));
    let allocations = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(allocations, 0, "{allocations} allocations");
    assert!(written > 1 << 20, "{written} bytes written");
}

/// Nor does the request checker: every request corpus body, both
/// dialects, through 1 KiB and 1 MiB, in 7-byte pushes, its error
/// rendered into fixed storage.
#[test]
fn the_request_checker_does_not_allocate() {
    use agui_stream::RequestChecker;
    let bodies: Vec<Vec<u8>> = support::request_bodies()
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    let mut buf = vec![0u8; 1 << 20];
    let (mut valid, mut invalid) = (0, 0);
    let (mut hold, mut out) = (vec![0u8; 1 << 16], vec![0u8; 1 << 20]);
    COUNTING.with(|c| c.set(true));
    for body in &bodies {
        for dialect in [Dialect::V1, Dialect::V0] {
            for size in [1024, 1 << 20] {
                let mut checker = RequestChecker::new(&mut buf[..size], dialect);
                let verdict = body
                    .chunks(7)
                    .try_for_each(|piece| checker.push(piece))
                    .and_then(|()| checker.finish());
                match verdict {
                    Ok(()) => valid += 1,
                    Err(e) => {
                        invalid += 1;
                        let mut text = heapless::String::<512>::new();
                        let _ = core::fmt::write(&mut text, format_args!("{e}"));
                        if let Some(m) = checker.json_message() {
                            let _ = core::fmt::write(&mut text, format_args!("{m}"));
                        }
                    }
                }
            }
        }
    }
    // The gateway's request rewriter, a tool denied, into a fixed slice.
    let mut removed = 0;
    for body in &bodies {
        let (check, _) = buf.split_at_mut(1024);
        let mut r = agui_stream::rewrite::RequestRewriter::new(check, &mut hold, Dialect::V1);
        r.deny_tool("get_weather").unwrap();
        let mut w = SliceWriter::new(&mut out);
        let verdict = body
            .chunks(7)
            .try_for_each(|piece| r.push(piece, &mut w))
            .and_then(|()| r.finish(&mut w).map(drop));
        if let Err(refusal) = verdict {
            let mut problem = [0u8; 1024];
            let _ = r.write_problem(&refusal, &mut SliceWriter::new(&mut problem));
        }
        removed += r.stats().tools_removed;
    }
    COUNTING.with(|c| c.set(false));
    let allocations = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(allocations, 0, "{allocations} allocations");
    assert!(
        valid > 300 && invalid > 400,
        "{valid} valid, {invalid} invalid"
    );
    assert!(removed > 10, "{removed} tools removed");
}

/// The stream generator for fuzzers writes into the caller's buffer and
/// allocates nothing.
#[cfg(feature = "generator")]
#[test]
fn the_generator_does_not_allocate() {
    let inputs: Vec<Vec<u8>> = (0..256u32)
        .map(|seed| {
            (0..2048u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) ^ seed.wrapping_mul(40_503)) as u8)
                .collect()
        })
        .collect();
    let mut out = vec![0u8; 64 << 10];
    let mut total = 0;
    COUNTING.with(|c| c.set(true));
    for input in &inputs {
        let g = agui_stream::generator::generate_invalid(input, &mut out);
        total += g.len;
        // Its cut points, and reading the envelope back, allocate nothing
        // either.
        total += g.pieces(&out[..g.len]).count();
        let mut back = [0u8; 2048];
        total += agui_stream::generator::envelope(&out[..g.len], &mut back).unwrap_or(0);
    }
    COUNTING.with(|c| c.set(false));
    let allocations = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(allocations, 0, "{allocations} allocations");
    assert!(total > 256 * 1000, "{total} bytes generated");
}
