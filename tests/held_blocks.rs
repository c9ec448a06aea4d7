//! `Options::hold`: a block that outgrows the raw buffer is held, not
//! streamed ahead of its verdict. A rewriter given a larger raw buffer
//! whenever a push stops there (`Pushed::held`, `Rewriter::grow_raw`)
//! writes exactly what one whose raw buffer holds the whole stream writes;
//! one that lets each such block go ahead (`Rewriter::let_ahead`) writes
//! what one without `hold` writes. Whatever the stream, the push size and
//! the options. And a run cut inside a large event ends in the repair's
//! `RUN_ERROR` alone: no part of the cut event reaches the client.

mod support;

use agui_stream::Config;
use agui_stream::rewrite::{Options, RewriteError, Rewriter, Stats};

/// What a push that stopped at a held block gets.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Held {
    /// A raw buffer twice the size.
    Grow,
    /// Leave to go ahead.
    LetAhead,
}

/// The output, statistics and result of `stream` in `push`-byte pieces
/// through `frames`- and `raw`-byte buffers; with `held`, `hold` is on
/// and a held push gets what it says. Also how many pushes were held.
fn rewrite(
    stream: &[u8],
    push: usize,
    (frames, raw): (usize, usize),
    config: Config,
    options: Options,
    held: Option<Held>,
) -> (Vec<u8>, Stats, Result<(), RewriteError>, usize) {
    let mut frames = vec![0u8; frames];
    // Every raw buffer it had (leaked: a rewriter borrows them all).
    let raw: &'static mut [u8] = vec![0u8; raw].leak();
    let options = options.hold(held.is_some());
    let mut rewriter = Rewriter::new(&mut frames, raw, config, options);
    let (mut out, mut holds) = (Vec::new(), 0);
    let result = push_held(&mut rewriter, stream.chunks(push), &mut out, |rewriter| {
        holds += 1;
        match held {
            Some(Held::Grow) => {
                let size = rewriter.stats().bytes_in as usize * 2 + 64;
                let old = rewriter.grow_raw(vec![0u8; size].leak()).unwrap();
                old.fill(b'\n'); // never read again
            }
            Some(Held::LetAhead) => rewriter.let_ahead(),
            None => panic!("held without hold"),
        }
    })
    .and_then(|()| rewriter.finish(&mut out).map(drop));
    (out, *rewriter.stats(), result, holds)
}

/// Pushes `pieces` through `rewriter` into `out`, each whole: where a push
/// stops at a held block (`Pushed::held`), `on_held` is given the
/// rewriter, then the rest is pushed.
fn push_held<'b, 'p>(
    rewriter: &mut Rewriter<'b>,
    pieces: impl IntoIterator<Item = &'p [u8]>,
    out: &mut Vec<u8>,
    mut on_held: impl FnMut(&mut Rewriter<'b>),
) -> Result<(), RewriteError> {
    for piece in pieces {
        let mut rest = piece;
        while !rest.is_empty() {
            let pushed = rewriter.push(rest, out)?;
            rest = &rest[pushed.read..];
            if pushed.held {
                on_held(rewriter);
            }
        }
    }
    Ok(())
}

/// [`push_held`], letting the first held block go ahead and growing the
/// raw buffer for the others; where each was held (bytes pushed by then).
fn let_the_first_ahead<'p>(
    rewriter: &mut Rewriter<'_>,
    pieces: impl IntoIterator<Item = &'p [u8]>,
    out: &mut Vec<u8>,
) -> Vec<u64> {
    let mut held_at = Vec::new();
    push_held(rewriter, pieces, out, |rewriter| {
        held_at.push(rewriter.stats().bytes_in);
        if held_at.len() == 1 {
            rewriter.let_ahead();
        } else {
            rewriter.grow_raw(vec![0u8; 16384].leak()).unwrap();
        }
    })
    .unwrap();
    held_at
}

/// Every stream of the corpus and the hostile ones, and each cut in its
/// middle and near its end, by name.
fn streams() -> Vec<(String, Vec<u8>)> {
    let mut streams = support::all_streams();
    let cut = streams
        .iter()
        .flat_map(|(name, s)| {
            [s.len() / 2, s.len().saturating_sub(3)]
                .map(|at| (format!("{name} cut at {at}"), s[..at].to_vec()))
        })
        .collect::<Vec<_>>();
    streams.extend(cut);
    streams
}

#[test]
#[cfg_attr(miri, ignore = "every corpus stream many times")]
fn held_blocks_go_out_whole_or_as_without_hold() {
    let streams = streams();
    assert!(streams.len() > 400, "the corpus is there");
    let (mut compared, mut grown, mut let_ahead) = (0usize, 0usize, 0usize);
    for (name, stream) in &streams {
        for (config, options) in support::rewrite_option_sets() {
            for (push, frames, raw) in [(7, 1024, 64), (64, 1024, 1024), (1460, 4096, 256)] {
                if push < 64 && stream.len() > (push << 12) {
                    continue;
                }
                let whole = (frames, stream.len() + 1);
                let want = rewrite(stream, push, whole, config, options, None);
                let mut got = rewrite(
                    stream,
                    push,
                    (frames, raw),
                    config,
                    options,
                    Some(Held::Grow),
                );
                // Blank lines between blocks that outgrow the raw buffer go
                // ahead (no event is in them) and count in `streamed`. A
                // block that went ahead would show in the bytes: the cut
                // streams among these end in `\x01` where it did.
                got.1.streamed = want.1.streamed;
                assert!(
                    got.0 == want.0 && got.1 == want.1 && got.2 == want.2,
                    "{name}: pushes of {push}, {frames}/{raw}-byte buffers, {options:?}: \
                     growing the raw buffer where a block was held is not having it large"
                );
                grown += got.3;
                let want = rewrite(stream, push, (frames, raw), config, options, None);
                let got = rewrite(
                    stream,
                    push,
                    (frames, raw),
                    config,
                    options,
                    Some(Held::LetAhead),
                );
                assert!(
                    got.0 == want.0 && got.1 == want.1 && got.2 == want.2,
                    "{name}: pushes of {push}, {frames}/{raw}-byte buffers, {options:?}: \
                     a held block let ahead is not what goes without hold"
                );
                let_ahead += got.3;
                compared += 2;
            }
        }
    }
    assert!(compared > 4000, "{compared}");
    assert!(grown > 10_000 && let_ahead > 1000, "{grown} {let_ahead}");
}

/// A 300 KB tool result cut anywhere, through 1 KiB buffers and a raw
/// buffer grown on demand: the client gets every event before it, whole,
/// then the repair's `RUN_ERROR`; nothing of the cut event.
#[test]
fn a_cut_inside_a_held_event_reaches_the_client_as_a_truncation() {
    let head = concat!(
        "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c\",\"toolCallName\":\"f\"}\n\n",
        "data: {\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c\"}\n\n",
    );
    let result = format!(
        "data: {{\"type\":\"TOOL_CALL_RESULT\",\"messageId\":\"m\",\"toolCallId\":\"c\",\"content\":\"{}\"}}\n\n",
        "é\\n\\u00e9 ".repeat(30_000)
    );
    let stream = format!("{head}{result}");
    let truncated = "data: {\"type\":\"RUN_ERROR\",\"message\":\"the stream ended before the run finished\",\"code\":\"AGUI_STREAM_TRUNCATED\"}\n\n";
    let mut cuts = 0;
    for cut in (head.len() + 10..stream.len() - 2).step_by(9_973) {
        for push in [1460, 16384] {
            let stream = &stream.as_bytes()[..cut];
            let (out, stats, result, holds) = rewrite(
                stream,
                push,
                (1024, 1024),
                Config::new(),
                Options::new(),
                Some(Held::Grow),
            );
            assert_eq!(result, Ok(()));
            assert!(stats.streamed == 0 && stats.cut == 0, "{stats:?}");
            assert!(
                holds > 0 || cut - head.len() < 1024,
                "cut at {cut}: never held"
            );
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("{head}{truncated}"),
                "cut at {cut}, pushes of {push}"
            );
            cuts += 1;
        }
    }
    assert!(cuts > 50);
}

/// A block let ahead streams; the next one is held again.
#[test]
fn only_the_block_let_ahead_goes_ahead() {
    let event = |id: &str| {
        format!(
            "data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"{id}\",\"delta\":\"{}\"}}\n\n",
            "x".repeat(5000)
        )
    };
    let stream = format!(
        "data: {{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}}\n\n\
         data: {{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}}\n\n{}{}",
        event("m"),
        event("m")
    );
    let mut frames = [0u8; 1024];
    let raw: &'static mut [u8] = vec![0u8; 1024].leak();
    let mut rewriter = Rewriter::new(&mut frames, raw, Config::new(), Options::new().hold(true));
    let mut out = Vec::new();
    let held_at = let_the_first_ahead(&mut rewriter, stream.as_bytes().chunks(512), &mut out);
    rewriter.finish(&mut out).unwrap();
    let second = (stream.len() - event("m").len()) as u64;
    assert_eq!(held_at.len(), 2, "{held_at:?}");
    assert!(held_at[0] < second && held_at[1] > second, "{held_at:?}");
    assert_eq!(rewriter.stats().streamed, 1);
    assert!(out.starts_with(stream.as_bytes()));
}

/// The push that ends a block let ahead and carries more of the next one
/// than the raw buffer holds: the next one is held, not streamed.
#[test]
fn the_block_after_one_let_ahead_is_held_in_the_same_push() {
    let event = |n: usize| {
        format!(
            "data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"{}\"}}\n\n",
            "x".repeat(n)
        )
    };
    let head = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
                data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}\n\n";
    let (first, second) = (event(3000), event(5000));
    let stream = format!("{head}{first}{second}");
    let mut frames = [0u8; 1024];
    let raw: &'static mut [u8] = vec![0u8; 1024].leak();
    let mut rewriter = Rewriter::new(&mut frames, raw, Config::new(), Options::new().hold(true));
    let mut out = Vec::new();
    // The first event's first 2,000 bytes, then the rest of the stream but
    // its last byte in one push.
    let cut = head.len() + 2000;
    let pieces = [&stream[..cut], &stream[cut..stream.len() - 1]];
    let held = let_the_first_ahead(&mut rewriter, pieces.map(str::as_bytes), &mut out);
    // The second event was held: nothing of it went out yet.
    assert_eq!(held.len(), 2, "{held:?}");
    assert_eq!(
        String::from_utf8(out.clone()).unwrap(),
        format!("{head}{first}")
    );
    rewriter.push(b"\n", &mut out).unwrap();
    assert_eq!(out, stream.as_bytes());
    assert_eq!(rewriter.stats().streamed, 1);
}
