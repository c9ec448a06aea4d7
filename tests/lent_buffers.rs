//! A rewriter that gives its buffers back between blocks
//! (`Rewriter::take_buffers`) and gets other ones before its next push
//! (`put_buffers`) writes exactly what one that keeps its buffers writes,
//! whatever the stream, the push size and the options: between blocks its
//! buffers hold nothing it reads again. The buffers it gets are poisoned
//! (filled with bytes no stream has there) and are never the pair it gave
//! back, so a read of stale bytes shows.

mod support;

use std::collections::VecDeque;

use agui_stream::Config;
use agui_stream::rewrite::{Options, RewriteError, Rewriter, Stats, ToolTables};

/// The output and statistics of `stream` in `push`-byte pieces through a
/// rewriter with `size`-byte buffers; with `lend`, it gives them back
/// whenever it can and gets the other, poisoned, pair before each push.
/// Also how many pushes it was given buffers for.
fn rewrite(
    stream: &[u8],
    push: usize,
    size: usize,
    config: Config,
    options: Options,
    lend: bool,
) -> (Vec<u8>, Stats, Result<(), RewriteError>, usize) {
    let mut pairs = [
        (vec![0u8; size], vec![0u8; size]),
        (vec![0u8; size], vec![0u8; size]),
    ];
    let [(a_frames, a_raw), (b_frames, b_raw)] = &mut pairs;
    let mut tables = ToolTables::new();
    tables.deny("get_weather").unwrap();
    let mut rewriter = Rewriter::new(a_frames, a_raw, config, options);
    rewriter.deny_tools(&mut tables);
    // The pairs the rewriter does not hold, the one it gave back last at
    // the back (it gets the other).
    let mut idle: VecDeque<(&mut [u8], &mut [u8])> =
        VecDeque::from([(&mut b_frames[..], &mut b_raw[..])]);
    let mut holds = true;
    let mut puts = 0;
    let mut out = Vec::new();
    let mut result = Ok(());
    for piece in stream.chunks(push) {
        if !holds {
            let (frames, raw) = idle.pop_front().unwrap();
            frames.fill(b'{');
            raw.fill(b'\n');
            let (old_frames, old_raw) = rewriter.put_buffers(frames, raw).unwrap();
            assert!(old_frames.is_empty() && old_raw.is_empty());
            holds = true;
            puts += 1;
        }
        let mut rest = piece;
        while !rest.is_empty() {
            match rewriter.push(rest, &mut out) {
                Ok(pushed) => rest = &rest[pushed.read..],
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_err() {
            break;
        }
        if lend {
            let held = rewriter.holds_block();
            match rewriter.take_buffers() {
                Some(pair) => {
                    assert!(!held && pair.0.len() == size && pair.1.len() == size);
                    idle.push_back(pair);
                    holds = false;
                }
                None => assert!(held),
            }
        }
    }
    if result.is_ok() {
        if !holds {
            let (frames, raw) = idle.pop_front().unwrap();
            rewriter.put_buffers(frames, raw).unwrap();
        }
        result = rewriter.finish(&mut out).map(drop);
    }
    (out, *rewriter.stats(), result, puts)
}

#[test]
#[cfg_attr(miri, ignore = "every corpus stream many times")]
fn buffers_lent_between_blocks_change_nothing() {
    let streams = support::all_streams();
    assert!(streams.len() > 200, "the corpus is there");
    let (mut compared, mut lent_pushes, mut held_pushes) = (0usize, 0usize, 0usize);
    for (name, stream) in &streams {
        for (config, options) in support::rewrite_option_sets() {
            for (push, size) in [
                (1, 1024),
                (7, 1024),
                (64, 4096),
                (1460, 1024),
                (4096, 65536),
            ] {
                if push < 64 && stream.len() > (push << 12) {
                    // The smallest pushes only for the smaller streams
                    // (the larger ones in 64-byte pushes and up).
                    continue;
                }
                let want = rewrite(stream, push, size, config, options, false);
                let got = rewrite(stream, push, size, config, options, true);
                assert!(
                    got.0 == want.0 && got.1 == want.1 && got.2 == want.2,
                    "{name}: pushes of {push}, {size}-byte buffers, {options:?}: \
                     lending the buffers changed the output"
                );
                compared += 1;
                lent_pushes += got.3;
                held_pushes += stream.len().div_ceil(push) - got.3;
            }
        }
    }
    // Both cases happened often: buffers lent between blocks, and kept
    // through pushes that ended inside one.
    assert!(compared > 3000, "{compared}");
    assert!(
        lent_pushes > 10_000 && held_pushes > 10_000,
        "{lent_pushes} {held_pushes}"
    );
}

/// Pushed without buffers (taken and not given back), a rewriter reads
/// whole blocks as ever, and a block that spans pushes is a typed error.
#[test]
fn without_buffers_a_block_that_spans_pushes_is_an_error() {
    let mut rewriter = Rewriter::new(&mut [], &mut [], Config::new(), Options::new());
    let mut out = Vec::new();
    let run = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
    assert_eq!(rewriter.push(run, &mut out).map(|p| p.read), Ok(run.len()));
    assert_eq!(out, run);
    assert!(matches!(
        rewriter.push(b"data: {\"type\":\"RUN_", &mut out),
        Err(RewriteError::RawBuffer { .. })
    ));
}
