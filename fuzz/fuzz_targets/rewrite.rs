//! The rewriter never panics, and neither the split nor a second pass
//! changes what it writes: any stream pushed in arbitrary chunks gives the
//! bytes of one push (and the same statistics), in both dialects, under
//! every violation policy and repair option; stopping or dropping, its
//! output rewritten again is itself (unless that hits a fixed capacity:
//! canonical form writes an invalid byte as three); and through 64-byte
//! buffers (blocks stream ahead of their verdict) it is the same unless a
//! block was cut or a rule (a capacity among them) broken.
//!
//! Input layout (the pipeline target's): `[flags, n, sizes[0..n], stream...]`.
//! - `flags` bit 0: no repair; bit 1: close what is open; bit 2: canonical
//!   form; bit 3: drop `RAW`; bit 4: deny the tool `t`.
//! - `n % 8` chunk sizes follow, cycling (no sizes: one byte per push).
#![no_main]

use agui_stream::rewrite::{OnViolation, Options, Stats};
use agui_stream::{Config, Dialect, Minting};
use libfuzzer_sys::fuzz_target;

#[path = "shared/runs.rs"]
mod shared;
use shared::{hits_a_capacity, split};

/// Larger than any input we accept: no block outgrows a buffer.
const BUFFER: usize = 64 * 1024;
/// Small enough for most blocks to outgrow.
const SMALL: usize = 64;

/// Pushes `chunks` through a rewriter over `buffer`-byte frame and raw
/// buffers (denying the tool `t` if `deny`).
fn rewrite<'c>(
    config: Config,
    options: Options,
    deny: bool,
    chunks: impl Iterator<Item = &'c [u8]>,
    buffer: usize,
) -> (Vec<u8>, Stats) {
    let (mut frames, mut raw) = (vec![0u8; buffer], vec![0u8; buffer]);
    let deny = deny.then_some("t");
    shared::rewrite((&mut frames, &mut raw), config, options, deny, chunks)
}

fuzz_target!(|data: &[u8]| {
    let [flags, n, rest @ ..] = data else { return };
    let n = usize::from(n % 8).min(rest.len());
    let (sizes, stream) = rest.split_at(n);
    if stream.len() > BUFFER / 4 {
        return;
    }
    let chunks = split(stream, sizes);
    let deny = flags & 16 != 0;
    for dialect in [Dialect::V1, Dialect::V0] {
        for on_violation in [OnViolation::Stop, OnViolation::Drop, OnViolation::Pass] {
            let config = Config::new()
                .dialect(dialect)
                .minting(Minting::Deterministic);
            let options = Options::new()
                .on_violation(on_violation)
                .repair(flags & 1 == 0)
                .close_open(flags & 2 != 0)
                .canonical(flags & 4 != 0)
                .drop_raw(flags & 8 != 0);
            let whole = rewrite(config, options, deny, core::iter::once(stream), BUFFER);
            let pieces = rewrite(config, options, deny, chunks.iter().copied(), BUFFER);
            assert!(
                whole == pieces,
                "{dialect:?} {options:?}: pushes of {sizes:?} bytes\n{:?}\n{:?}",
                String::from_utf8_lossy(&whole.0),
                String::from_utf8_lossy(&pieces.0)
            );
            // Through 64-byte buffers blocks stream ahead of their verdict;
            // where none was cut and nothing broke a rule (a capacity
            // would), the output is the same.
            let small = rewrite(config, options, deny, chunks.iter().copied(), SMALL);
            if small.1.cut == 0 && small.1.violations == 0 && whole.1.violations == 0 {
                assert!(
                    small.0 == whole.0,
                    "{dialect:?} {options:?}: {SMALL}-byte buffers changed the output\n{:?}\n{:?}",
                    String::from_utf8_lossy(&whole.0),
                    String::from_utf8_lossy(&small.0)
                );
            }
            // Canonical form writes an invalid byte as U+FFFD (three
            // bytes), so a second pass may outgrow a fixed capacity the
            // first did not: then it need not be the same.
            if on_violation != OnViolation::Pass
                && !hits_a_capacity(config, &whole.0, &mut vec![0u8; BUFFER])
            {
                let again = rewrite(
                    config,
                    options,
                    deny,
                    core::iter::once(&whole.0[..]),
                    BUFFER,
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
});
