//! Linear time, measured as work (bytes scanned or copied, counted by the
//! `work-count` feature), not wall time: a ~1 MB stream pushed whole and
//! pushed one byte at a time must cost about the same.
#![cfg(feature = "work-count")]

mod common;

use agui_stream::{Config, Dialect, Event, FrameInfo, Pipeline, work};

/// About 1 MB: the real captures, repeated.
fn stream() -> Vec<u8> {
    let mut one = Vec::new();
    for path in common::sse_files(&common::real_dir()) {
        one.extend(common::read(&path));
    }
    let mut out = Vec::new();
    while out.len() < 1 << 20 {
        out.extend_from_slice(&one);
    }
    out
}

fn work_for(stream: &[u8], push: usize, dialect: Dialect) -> (usize, u64) {
    let mut buf = vec![0u8; 1 << 16];
    let mut p = Pipeline::new(&mut buf, Config::new().dialect(dialect));
    let mut events = 0u64;
    let mut sink = |_: &Event<'_>, _: &FrameInfo| events += 1;
    work::take();
    for piece in stream.chunks(push) {
        p.push(piece, &mut sink).unwrap();
    }
    p.finish(&mut sink).unwrap();
    (work::take(), events)
}

/// The only test in this binary: the work counter is process-global.
#[test]
fn work_does_not_depend_on_the_split() {
    let s = stream();
    for dialect in [Dialect::V1, Dialect::V0] {
        let (whole, events_whole) = work_for(&s, s.len(), dialect);
        let (bytewise, events_bytewise) = work_for(&s, 1, dialect);
        let (odd, _) = work_for(&s, 7, dialect);
        assert_eq!(events_whole, events_bytewise);
        let ratio = bytewise as f64 / whole as f64;
        eprintln!(
            "{dialect:?}: {} bytes; work whole {whole}, 1-byte pushes {bytewise}, 7-byte pushes {odd}; ratio {ratio:.3}",
            s.len()
        );
        // Per byte: the scanners' work is a small multiple of the input.
        assert!(whole < 8 * s.len(), "{whole} for {} bytes", s.len());
        // Splitting adds at most one copy of each byte into the buffer.
        assert!(ratio < 1.5, "ratio {ratio}");
        assert!((odd as f64) < 1.5 * whole as f64);
    }
}
