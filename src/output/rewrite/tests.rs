//! The rewriter's unit tests: its state's size, the bound, the look-ahead
//! and the fast paths against the general ones.

use super::admission::BlockEnd;
use super::relines::{self, no_bare_data_after_lf};
use super::*;

/// The state of a stream beside its buffers, as docs/gateway.md and
/// docs/capacities.md say.
#[test]
fn state_is_fixed() {
    let size = core::mem::size_of::<Rewriter<'static>>();
    extern crate std;
    std::println!("size_of Rewriter: {size}");
    // A front end allocates one per open stream: it may only shrink
    // (docs/performance.md, memory per open stream), but for the pointer
    // to the guard's lent lanes (`Rewriter::guard`).
    assert!(size <= 5232, "{size}");
}

/// Statistics serialize as `agui gateway` prints them.
#[cfg(feature = "serde")]
#[test]
fn stats_serialize_with_names() {
    use crate::pipeline::error::Stage;
    use crate::protocol::event_type::EventType;
    let mut stats = Stats {
        bytes_in: 7,
        ..Stats::default()
    };
    count_in(&mut stats.events_in, EventType::RunStarted.index());
    count_in(&mut stats.violations_by_stage, Stage::Verify.index());
    let json = serde_json::to_string(&stats).unwrap();
    assert!(
        json.starts_with(r#"{"bytes_in":7,"bytes_out":0,"#),
        "{json}"
    );
    assert!(
        json.ends_with(
            r#""events_in":{"RUN_STARTED":1},"events_out":{},"violations_by_stage":{"verify":1}}"#
        ),
        "{json}"
    );
}

/// The bound docs/gateway.md quotes.
#[test]
fn the_bound_is_three_times_the_block_and_a_constant() {
    let (mut frames, mut raw) = ([0u8; 64], [0u8; 64]);
    let r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    assert_eq!(r.frame_bound(0), 3808);
    assert_eq!(r.frame_bound(100), 4108);
    let (mut frames, mut raw) = ([0u8; 64], [0u8; 64]);
    let options = Options::new().close_open(true);
    let r = Rewriter::new(&mut frames, &mut raw, Config::new(), options);
    assert_eq!(r.frame_bound(0), 3808 + 32 * 96 + 12 * 1152);
}

/// The look-ahead finds each block's end where the framer does, in any
/// split.
#[test]
fn block_ends_are_found_in_any_split() {
    let s: &[u8] = b"data: a\n\n: c\r\n\r\ndata: b\r\rdata: x\ndata: y\n\r\n\n";
    let ends = |pieces: &[&[u8]], no_cr: bool| {
        let mut scan = BlockEnd::new();
        let (mut out, mut base) = (Vec::new(), 0);
        for p in pieces {
            let mut from = 0;
            while let Some(k) = scan.next(&p[from..], no_cr) {
                from += k;
                out.push(base + from);
            }
            base += p.len();
        }
        out
    };
    extern crate std;
    use std::vec::Vec;
    let want = ends(&[s], false);
    // After each blank line (a CRLF's LF comes later).
    assert_eq!(want, [9, 15, 25, 42, 44]);
    for cut in 0..=s.len() {
        assert_eq!(ends(&[&s[..cut], &s[cut..]], false), want, "cut at {cut}");
    }
    // Without CR, the LF-only search finds the same ends.
    let lf: &[u8] = b"data: a\n\n\n: c\n\ndata: b\nid: 2\n\n\n\ndata: x\n\n";
    let want = ends(&[lf], false);
    assert_eq!(want, [9, 10, 15, 30, 31, 32, 41]);
    for cut in 0..=lf.len() {
        for no_cr in [false, true] {
            assert_eq!(ends(&[&lf[..cut], &lf[cut..]], no_cr), want, "cut at {cut}");
        }
    }
}

/// `Forward::forward`'s fast path gives `relines::needed`'s answer: in
/// a plain chunk, bytes that do not start with a bare `data` line
/// need no re-lining, wherever they start and end.
#[test]
fn plain_chunks_need_no_relining() {
    let chunks: [&[u8]; 8] = [
        b"data: a\n\ndata\n\n",
        b"data\n\ndata: b\n\n",
        b"xdata\n\n: data\ndata:\n\n",
        b"data: a\r\n\r\n",
        b"id: 1\ndata\ndata: x\n\n",
        b"data: {\"a\":\"data\"}\n\n",
        b"data: {\"a\":\"\ndata\n\n",
        b": x\ndata\n\n",
    ];
    // What `Rewriter::push` finds.
    // The fast path's answer (whatever the switch of `crate::fast`).
    let plain = |chunk: &[u8]| !chunk.contains(&b'\r') && no_bare_data_after_lf(chunk);
    for chunk in chunks {
        let plain = plain(chunk);
        for a in 0..=chunk.len() {
            for b in a..=chunk.len() {
                let y = &chunk[a..b];
                if plain && !y.starts_with(b"data\n") {
                    let fine = relines::check([&[], y], false, relines::LINE_START).is_ok();
                    assert!(fine, "{chunk:?} {a}..{b}");
                }
            }
        }
    }
    // `xdata` and `: data` are no bare `data` lines.
    assert!(plain(chunks[5]) && plain(chunks[2]));
    assert!(!plain(chunks[0]) && !plain(chunks[1]) && !plain(chunks[3]) && !plain(chunks[4]));
    assert!(!plain(chunks[6]) && !plain(chunks[7]));
}

/// The gateway's fast paths (a block forwarded as it is, writes
/// gathered over consecutive blocks, the search for bare `data` lines)
/// give the general path's output, statistics and results on every
/// corpus stream, in both dialects, under each option, in pushes of
/// several sizes, into a growing writer and into a small drained one.
#[test]
#[cfg_attr(miri, ignore = "the whole corpus")]
fn gateway_fast_paths_match_general_path() {
    extern crate std;
    use crate::Dialect;
    use crate::output::encode::SliceWriter;
    use std::format;
    use std::string::String;
    use std::vec::Vec;

    fn run(
        stream: &[u8],
        config: Config,
        options: Options,
        deny: bool,
        piece: usize,
        room: Option<usize>,
    ) -> (Vec<u8>, String) {
        let (mut frames, mut raw) = ([0u8; 4096], [0u8; 4096]);
        let mut tables = ToolTables::new();
        let mut r = Rewriter::new(&mut frames, &mut raw, config, options);
        if deny {
            tables.deny("search").expect("room for a name");
            r.deny_tools(&mut tables);
        }
        let mut all = Vec::new();
        let mut log = String::new();
        let mut slice = std::vec![0u8; room.unwrap_or(0)];
        for chunk in stream.chunks(piece.max(1)) {
            let mut at = 0;
            while at < chunk.len() {
                let rest = &chunk[at..];
                let pushed = match room {
                    None => r.push(rest, &mut all),
                    Some(_) => {
                        let mut out = SliceWriter::new(&mut slice);
                        let pushed = r.push(rest, &mut out);
                        all.extend_from_slice(out.written());
                        pushed
                    }
                };
                log.push_str(&format!("{pushed:?};"));
                match pushed {
                    Ok(p) if p.read > 0 => at += p.read,
                    _ => break,
                }
            }
        }
        let finished = match room {
            None => r.finish(&mut all).map(|s| s.is_some()),
            Some(_) => {
                let mut out = SliceWriter::new(&mut slice);
                let f = r.finish(&mut out).map(|s| s.is_some());
                all.extend_from_slice(out.written());
                f
            }
        };
        log.push_str(&format!("{finished:?};{:?}", r.stats()));
        (all, log)
    }

    let mut streams = crate::testing::corpus_streams();
    // Shapes at the fast paths' edges: a bare `data` line after a LF
    // and at a chunk's start, `a` + LF in a value, CRs, a BOM.
    streams.push(b"data\n\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n: a\ndata\n\n".to_vec());
    streams.push(b"\xEF\xBB\xBFdata: {\"type\":\"RUN_STARTED\",\"threadId\":\"a\n\n\",\"runId\":\"r\"}\r\n\r\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n".to_vec());
    streams.extend(crate::pipeline::delta_run::edge_streams());
    let options = [
        (Options::new(), false),
        (Options::new().on_violation(OnViolation::Pass), false),
        (
            Options::new()
                .on_violation(OnViolation::Drop)
                .close_open(true),
            false,
        ),
        (Options::new().canonical(true), false),
        (Options::new().drop_raw(true), false),
        (Options::new(), true),
    ];
    // Small pushes and one push into a growing writer, 1,460-byte ones
    // into a small writer; V0 with the default options only.
    let shapes = [(7, None), (usize::MAX, None), (1460, Some(8192))];
    for stream in &streams {
        for dialect in [Dialect::V1, Dialect::V0] {
            let config = Config::new().dialect(dialect);
            let options = match dialect {
                Dialect::V1 => &options[..],
                Dialect::V0 => &options[..1],
            };
            for &(opts, deny) in options {
                for (piece, room) in shapes {
                    let fast = run(stream, config, opts, deny, piece, room);
                    let general = crate::testing::general_only(|| {
                        run(stream, config, opts, deny, piece, room)
                    });
                    assert!(
                        fast == general,
                        "{} {dialect:?} {opts:?} {piece} {room:?}",
                        String::from_utf8_lossy(&stream[..stream.len().min(200)])
                    );
                }
            }
        }
    }
}
