//! The library never allocates: a counting global allocator sees zero
//! allocations while whole streams go through the pipeline (decode,
//! normalize, verify, encode) in both dialects.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use agui_stream::{Config, Dialect, Event, FrameInfo, Minting, Pipeline, SliceWriter, encode};

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
    let mut streams: Vec<Vec<u8>> = common::sse_files(&common::real_dir())
        .iter()
        .map(|p| common::read(p))
        .collect();
    for case in common::manifest() {
        if case.category != "sse-quirk" {
            streams.push(case.stream());
        }
    }
    let mut frame_buffer = vec![0u8; 1 << 20];
    // The encoder writes into a fixed slice (a `Vec` would allocate).
    let mut out = vec![0u8; 1 << 16];
    let mut events = 0usize;

    COUNTING.with(|c| c.set(true));
    for stream in &streams {
        for dialect in [Dialect::V1, Dialect::V0] {
            let config = Config::new()
                .dialect(dialect)
                .minting(Minting::Deterministic);
            let mut pipeline = Pipeline::new(&mut frame_buffer, config);
            let mut sink = |ev: &Event<'_>, _: &FrameInfo| {
                let _ = encode(ev, &mut SliceWriter::new(&mut out));
                events += 1;
            };
            // Pushes of 61 bytes: frames span pushes and go through the buffer.
            let verdict = stream
                .chunks(61)
                .try_for_each(|piece| pipeline.push(piece, &mut sink))
                .and_then(|()| pipeline.finish(&mut sink).map(|_| ()));
            if let Err(e) = verdict {
                // Rendering the reference's message allocates nothing either.
                let mut text = heapless::String::<512>::new();
                let _ = core::fmt::write(&mut text, format_args!("{}", pipeline.message(&e)));
            }
        }
    }
    COUNTING.with(|c| c.set(false));

    let allocations = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(
        allocations, 0,
        "{allocations} allocations over {events} events"
    );
    assert!(events > 5000, "only {events} events");
}
