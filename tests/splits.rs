//! Split invariance: how the stream is cut into pushes never changes the
//! output.
//!
//! For every corpus stream (conformance and real captures) the output of a
//! single push — events as encoded, each event's `FrameInfo`, and the final
//! `Summary` or `Error` (frame, offset, kind) — must be identical when the
//! stream is pushed
//! * in pieces of 1, 2, 3, 7, 64 and 4096 bytes (both dialects);
//! * as two pieces, split at every byte position (V1). Streams longer than
//!   [`FULL_SPLITS_MAX`] are split at a stride that keeps the test fast in
//!   debug builds, plus always at positions 0..=64, the last 64 positions,
//!   and just before and after every `\n`, `\r` and `\` in the first 4 KB.
//!
//! The framer and the decoder do not depend on the dialect, so two-piece
//! splits run in V1 only; V0 gets the fixed piece sizes.

mod support;

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use agui_stream::Dialect;
use support::{RawOutput, dialect_name, run_pieces, run_raw};

/// Streams up to this length are split at every position.
const FULL_SPLITS_MAX: usize = 4096;
/// For longer streams: bytes pushed through the pipeline for the strided
/// splits of one stream (the mandatory positions come on top).
const STRIDE_BUDGET: usize = 1 << 20;
/// Mandatory positions near the start and the end of a long stream.
const EDGE: usize = 64;
/// Long streams are split around line ends and backslashes in this prefix.
const SPECIAL_PREFIX: usize = 4096;
/// Piece sizes every stream is pushed in, besides one piece.
const CHUNKS: &[usize] = &[1, 2, 3, 7, 64, 4096];
/// Split positions per work item (load balancing across threads).
const BATCH: usize = 32;
/// Differences reported per stream.
const MAX_REPORTS_PER_STREAM: usize = 3;

struct Stream {
    name: String,
    bytes: Vec<u8>,
}

fn load(dir: &Path, prefix: &str) -> Vec<Stream> {
    support::sse_files(dir)
        .into_iter()
        .map(|p| Stream {
            name: format!("{prefix}/{}", p.file_name().unwrap().to_string_lossy()),
            bytes: support::read(&p),
        })
        .collect()
}

fn streams() -> Vec<Stream> {
    let mut all = load(&support::conformance_dir(), "conformance");
    let real = load(&support::real_dir(), "real");
    assert!(all.len() >= 200, "conformance corpus missing or incomplete");
    assert_eq!(real.len(), 3, "real captures missing");
    all.extend(real);
    all
}

/// Where to cut `s` in two (a position `p` pushes `s[..p]`, then `s[p..]`).
fn split_positions(s: &[u8]) -> Vec<usize> {
    let n = s.len();
    if n <= FULL_SPLITS_MAX {
        return (0..=n).collect();
    }
    let mut set = BTreeSet::new();
    set.extend(0..=EDGE);
    set.extend(n - EDGE..=n);
    for (i, b) in s[..SPECIAL_PREFIX].iter().enumerate() {
        if matches!(b, b'\n' | b'\r' | b'\\') {
            set.extend([i, i + 1]);
        }
    }
    let runs = (STRIDE_BUDGET / n).max(16);
    set.extend((0..=n).step_by(n.div_ceil(runs)));
    set.into_iter().collect()
}

#[derive(Clone, Copy)]
enum Pushes<'a> {
    Chunks(usize),
    Splits(&'a [usize]),
}

struct Work<'a> {
    stream: usize,
    dialect: Dialect,
    pushes: Pushes<'a>,
}

/// `None` if `got` equals `want`, else what differs first.
fn difference(want: &RawOutput, got: &RawOutput) -> Option<String> {
    if want == got {
        return None;
    }
    // The oracle-visible form first: events and verdict.
    if let Some(d) = want.output().first_difference(&got.output()) {
        return Some(d);
    }
    for (i, (w, g)) in want.events.iter().zip(&got.events).enumerate() {
        if w.1 != g.1 {
            return Some(format!(
                "event {} frame info differs\n    single push: {:?}\n    split:       {:?}",
                i + 1,
                w.1,
                g.1
            ));
        }
        if w.0 != g.0 {
            return Some(format!(
                "event {} encodes differently (same canonical form)",
                i + 1
            ));
        }
    }
    Some(format!(
        "result differs\n    single push: {:?}\n    split:       {:?}",
        want.result, got.result
    ))
}

#[test]
fn output_does_not_depend_on_push_boundaries() {
    let started = Instant::now();
    let streams = streams();
    let dialects = [Dialect::V1, Dialect::V0];

    // The reference: each stream in one push.
    let reference: Vec<[RawOutput; 2]> = streams
        .iter()
        .map(|s| dialects.map(|d| run_pieces([s.bytes.as_slice()], d)))
        .collect();

    let positions: Vec<Vec<usize>> = streams.iter().map(|s| split_positions(&s.bytes)).collect();
    let mut work = Vec::new();
    for (i, _) in streams.iter().enumerate() {
        for dialect in dialects {
            for &chunk in CHUNKS {
                work.push(Work {
                    stream: i,
                    dialect,
                    pushes: Pushes::Chunks(chunk),
                });
            }
        }
        for batch in positions[i].chunks(BATCH) {
            work.push(Work {
                stream: i,
                dialect: Dialect::V1,
                pushes: Pushes::Splits(batch),
            });
        }
    }
    // Longest streams first, so no thread is left with a long tail.
    work.sort_by_key(|w| std::cmp::Reverse(streams[w.stream].bytes.len()));

    let next = AtomicUsize::new(0);
    let runs = AtomicUsize::new(0);
    let bytes = AtomicUsize::new(0);
    let failures: Mutex<Vec<Vec<String>>> = Mutex::new(vec![Vec::new(); streams.len()]);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());

    let worker = || {
        loop {
            let Some(w) = work.get(next.fetch_add(1, Ordering::Relaxed)) else {
                return;
            };
            let s = &streams[w.stream].bytes;
            let want = &reference[w.stream][usize::from(w.dialect == Dialect::V0)];
            let check = |what: String, run: &dyn Fn() -> RawOutput| {
                runs.fetch_add(1, Ordering::Relaxed);
                bytes.fetch_add(s.len(), Ordering::Relaxed);
                let problem = match catch_unwind(AssertUnwindSafe(run)) {
                    Ok(got) => difference(want, &got),
                    Err(_) => Some("panicked".to_owned()),
                };
                if let Some(p) = problem {
                    let mut f = failures.lock().unwrap();
                    f[w.stream].push(format!(
                        "{} {}, {what}: {p}",
                        streams[w.stream].name,
                        dialect_name(w.dialect)
                    ));
                }
            };
            match w.pushes {
                Pushes::Chunks(chunk) => check(format!("{chunk}-byte pushes"), &|| {
                    run_raw(s, w.dialect, chunk)
                }),
                Pushes::Splits(at) => {
                    for &p in at {
                        let (a, b) = s.split_at(p);
                        check(format!("split at {p} of {}", s.len()), &|| {
                            run_pieces([a, b], w.dialect)
                        });
                    }
                }
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(worker);
        }
    });

    let failures = failures.into_inner().unwrap();
    let failing: Vec<&Vec<String>> = failures.iter().filter(|f| !f.is_empty()).collect();
    let total: usize = failing.iter().map(|f| f.len()).sum();
    eprintln!(
        "{} streams, {} runs, {:.1} MB pushed, {} threads, {:.1?}",
        streams.len(),
        runs.load(Ordering::Relaxed),
        bytes.load(Ordering::Relaxed) as f64 / 1e6,
        threads,
        started.elapsed()
    );
    let report: Vec<String> = failing
        .iter()
        .flat_map(|f| {
            let more = f.len().saturating_sub(MAX_REPORTS_PER_STREAM);
            f.iter()
                .take(MAX_REPORTS_PER_STREAM)
                .cloned()
                .chain((more > 0).then(|| format!("  ... and {more} more for this stream")))
        })
        .collect();
    assert!(
        total == 0,
        "{total} push patterns change the output, in {} streams:\n{}",
        failing.len(),
        report.join("\n")
    );
}

#[test]
fn split_positions_cover_the_required_points() {
    let mut s = vec![b'x'; 10_000];
    s[100] = b'\n';
    s[200] = b'\\';
    s[300] = b'\r';
    s[5000] = b'\n'; // beyond the prefix: only the stride may hit it
    let p = split_positions(&s);
    for q in (0..=64)
        .chain(9936..=10_000)
        .chain([100, 101, 200, 201, 300, 301])
    {
        assert!(p.contains(&q), "{q} missing");
    }
    assert!(p.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(split_positions(b"abc"), [0, 1, 2, 3]);
}
