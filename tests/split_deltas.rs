//! `Options::split`: a delta event (`TEXT_MESSAGE_CONTENT`,
//! `TOOL_CALL_ARGS`, `REASONING_MESSAGE_CONTENT`) that outgrows the raw
//! buffer goes out as several complete events of its lane, not as part of
//! one event. Joined again, the pieces are exactly what a rewriter whose
//! raw buffer holds the whole stream writes, whatever the stream, the push
//! size and the options; each piece is an event the client accepts; and a
//! run cut inside such an event ends in the repair's `RUN_ERROR` after
//! pieces that are whole events: nothing the client got is lost.

#[path = "support/joined.rs"]
mod joined;
mod support;

use agui_stream::Config;
use agui_stream::rewrite::{Options, Rewriter, Stats};
use joined::{blocks, joined};
use support::{RUN_FINISHED, RUN_STARTED, Rng, sse};

/// The output and statistics of `stream` in `push`-byte pieces through a
/// `raw`-byte raw buffer and a frame buffer as large (at least 1 KiB).
fn rewrite(
    stream: &[u8],
    push: usize,
    raw: usize,
    config: Config,
    options: Options,
) -> (Vec<u8>, Stats) {
    let (mut frames, mut raw) = (vec![0u8; raw.max(1024)], vec![0u8; raw]);
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, config, options);
    let mut out = Vec::new();
    for piece in stream.chunks(push.max(1)) {
        let mut rest = piece;
        while !rest.is_empty() {
            let pushed = rewriter.push(rest, &mut out).expect("a Vec has room");
            rest = &rest[pushed.read..];
        }
    }
    rewriter.finish(&mut out).expect("a Vec has room");
    (out, *rewriter.stats())
}

/// `stream` with `split` in 700-byte pushes through 1 KiB buffers.
fn split_in_1k(stream: &[u8]) -> (Vec<u8>, Stats) {
    rewrite(stream, 700, 1024, Config::new(), Options::new().split(true))
}

/// Long deltas of each kind, with escapes, multi-byte characters and
/// surrogate pairs at every offset, and members after the delta.
fn long_delta_streams() -> Vec<(String, Vec<u8>)> {
    let text: String = (0..400)
        .map(|i| match i % 7 {
            0 => "é".to_owned(),
            1 => r"\n".to_owned(),
            2 => r"\ud83d\ude00".to_owned(),
            3 => "😀".to_owned(),
            4 => r#"\"q\""#.to_owned(),
            5 => r"\\".to_owned(),
            _ => "plain words ".to_owned(),
        })
        .collect();
    let decoded: String = serde_json::from_str(&format!("\"{text}\"")).expect("a JSON string");
    let args = serde_json::json!({ "text": decoded }).to_string();
    let args = serde_json::to_string(&args).expect("a string");
    let args = &args[1..args.len() - 1];
    let mut streams = Vec::new();
    for tail in ["", r#","timestamp":1700000000000"#] {
        streams.push((
            format!("text{tail}"),
            sse(&[
                RUN_STARTED.to_owned(),
                r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#.to_owned(),
                format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"{text}"{tail}}}"#),
                r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"!"}"#.to_owned(),
                r#"{"type":"TEXT_MESSAGE_END","messageId":"m1"}"#.to_owned(),
                r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"write"}"#.to_owned(),
                format!(r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{args}"{tail}}}"#),
                r#"{"type":"TOOL_CALL_END","toolCallId":"c1"}"#.to_owned(),
                r#"{"type":"REASONING_START","messageId":"r0"}"#.to_owned(),
                r#"{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}"#.to_owned(),
                format!(r#"{{"type":"REASONING_MESSAGE_CONTENT","messageId":"r1","delta":"{text}"{tail}}}"#),
                r#"{"type":"REASONING_MESSAGE_END","messageId":"r1"}"#.to_owned(),
                r#"{"type":"REASONING_END","messageId":"r0"}"#.to_owned(),
                RUN_FINISHED.to_owned(),
            ]),
        ));
    }
    streams
}

#[test]
#[cfg_attr(miri, ignore = "every corpus stream many times")]
fn split_deltas_join_to_what_a_large_buffer_writes() {
    let mut streams = support::all_streams();
    let long = long_delta_streams();
    streams.extend(long.iter().cloned());
    let (mut compared, mut split) = (0usize, Vec::new());
    for (name, stream) in &streams {
        for (config, options) in support::rewrite_option_sets() {
            let (whole, whole_stats) = rewrite(stream, 4096, 1 << 24, config, options);
            for raw in [256, 1024] {
                for push in [1, 97, 4096] {
                    if push == 1 && stream.len() > 20_000 {
                        continue;
                    }
                    let (out, _) = rewrite(stream, push, raw, config, options.split(true));
                    let (plain, _) = rewrite(stream, push, raw, config, options);
                    let context = format!("{name} raw {raw} push {push} {options:?}");
                    if out != plain {
                        split.push((name.clone(), options.canonical, raw, push));
                        // Pieces joined are the event as a large buffer writes it.
                        assert_eq!(
                            String::from_utf8_lossy(&joined(&out)),
                            String::from_utf8_lossy(&joined(&whole)),
                            "{context}"
                        );
                        // And every piece is an event the client accepts.
                        let again = rewrite(
                            &out,
                            4096,
                            1 << 24,
                            config,
                            Options::new().on_violation(options.on_violation),
                        )
                        .1;
                        let whole_again = rewrite(
                            &whole,
                            4096,
                            1 << 24,
                            config,
                            Options::new().on_violation(options.on_violation),
                        )
                        .1;
                        assert_eq!(again.violations, whole_again.violations, "{context}");
                        assert_eq!(
                            whole_stats.violations,
                            rewrite(stream, push, raw, config, options.split(true))
                                .1
                                .violations,
                            "{context}"
                        );
                    }
                    compared += 1;
                }
            }
        }
    }
    // Every run of the long deltas split them (but the canonical one,
    // which re-encodes every event), and some of the corpus's.
    for (name, _) in &long {
        let runs = split
            .iter()
            .filter(|(n, canonical, ..)| n == name && !canonical)
            .count();
        assert_eq!(runs, 2 * 2 * 3, "{name}");
    }
    let corpus = split
        .iter()
        .filter(|(n, ..)| !long.iter().any(|(l, _)| l == n))
        .count();
    println!(
        "{} of {compared} runs split a delta, {corpus} of the corpus",
        split.len()
    );
    assert!(corpus > 0);
}

/// A run whose one text message is `delta` (escaped), then `after` (the
/// rest of the CONTENT event after its delta's closing quote).
fn one_message(delta: &str, after: &str) -> Vec<u8> {
    sse(&[
        RUN_STARTED.to_owned(),
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#.to_owned(),
        format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"{delta}"{after}}}"#),
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m1"}"#.to_owned(),
        RUN_FINISHED.to_owned(),
    ])
}

/// The JSON events of an output, each block's `data:` payload parsed.
fn events(out: &[u8]) -> Vec<serde_json::Value> {
    blocks(out)
        .iter()
        .map(|b| {
            let payload = b.strip_prefix(b"data: ").expect("a data line");
            serde_json::from_slice(payload.trim_ascii_end()).unwrap_or_else(|e| {
                panic!("{e}: {}", String::from_utf8_lossy(b));
            })
        })
        .collect()
}

/// The text of message `m1` in `events`.
fn text(events: &[serde_json::Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().expect("a delta"))
        .collect()
}

#[test]
fn a_run_cut_inside_a_split_delta_keeps_the_pieces_and_ends_in_run_error() {
    let delta = "0123456789abcdé😀".repeat(1000);
    let stream = one_message(&delta, "");
    let cut_at = stream.len() / 2;
    for push in [1, 100, 1500, 1 << 20] {
        let (out, stats) = rewrite(
            &stream[..cut_at],
            push,
            1024,
            Config::new(),
            Options::new().split(true),
        );
        assert!(!out.contains(&1u8), "no cut frame: {push}");
        let events = events(&out);
        assert!(events.len() >= 4, "{push}: {}", events.len());
        let last = events.last().unwrap();
        assert_eq!(last["type"], "RUN_ERROR", "{push}");
        assert_eq!(last["code"], "AGUI_STREAM_TRUNCATED", "{push}");
        // The pieces are the delta's start, each piece at most the raw
        // buffer's size.
        let got = text(&events);
        assert!(
            got.len() > cut_at / 2 && delta.starts_with(&got),
            "{push}: {}",
            got.len()
        );
        assert_eq!((stats.streamed, stats.cut), (1, 0), "{push}");
        // Without splitting, the same cut reaches the client as a cut
        // frame: `data: \x01`.
        let (plain, _) = rewrite(&stream[..cut_at], push, 1024, Config::new(), Options::new());
        assert!(plain.windows(8).any(|w| w == b"data: \x01\n"), "{push}");
    }
}

#[test]
fn a_split_delta_found_bad_at_its_end_stops_after_whole_pieces() {
    let delta = "x".repeat(5000);
    // A member after the delta that is no JSON: a violation at its end.
    let stream = one_message(&delta, r#","timestamp":nope"#);
    let (out, stats) = split_in_1k(&stream);
    let events = events(&out);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(last["code"], "AGUI_STREAM_VIOLATION", "{last}");
    assert!(text(&events).len() > 3000);
    assert_eq!((stats.violations, stats.cut), (1, 0));
}

#[test]
fn members_after_a_split_delta_that_outgrow_the_buffer_end_the_stream() {
    let delta = "x".repeat(5000);
    let after = format!(r#","rawEvent":{{"big":"{}"}}"#, "y".repeat(3000));
    let stream = one_message(&delta, &after);
    let (out, stats) = split_in_1k(&stream);
    let got = events(&out);
    let last = got.last().unwrap();
    assert_eq!(last["code"], "AGUI_STREAM_CAPACITY", "{last}");
    assert!(
        last["message"].as_str().unwrap().contains("split"),
        "{last}"
    );
    assert!(text(&got).len() > 3000);
    assert_eq!(stats.cut, 1);
    // Small members after it go with the last piece.
    let stream = one_message(&delta, r#","rawEvent":{"small":1}"#);
    let (out, _) = split_in_1k(&stream);
    let got = events(&out);
    assert_eq!(got.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(text(&got), delta);
    let last_piece = got
        .iter()
        .rfind(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .unwrap();
    assert_eq!(last_piece["rawEvent"]["small"], 1);
}

#[test]
fn deltas_that_do_not_split_go_ahead_as_before() {
    let delta = "x".repeat(5000);
    let content =
        format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"{delta}"}}"#);
    let unsplit = [
        // Its message is not open.
        sse(&[RUN_STARTED, &content]),
        // An `id:` line before its data.
        [
            sse(&[
                RUN_STARTED,
                r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#,
            ]),
            format!("id: 7\ndata: {content}\n\n").into_bytes(),
        ]
        .concat(),
        // Its id after its delta.
        sse(&[
            RUN_STARTED.to_owned(),
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#.to_owned(),
            format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","delta":"{delta}","messageId":"m1"}}"#),
        ]),
    ];
    for stream in unsplit {
        let split = split_in_1k(&stream);
        let plain = rewrite(&stream, 700, 1024, Config::new(), Options::new());
        assert_eq!(split.0, plain.0);
        assert_eq!(split.1.streamed, 1);
    }
}

#[test]
#[cfg_attr(miri, ignore = "hundreds of long streams")]
fn random_long_deltas_join_to_what_a_large_buffer_writes() {
    // Pieces of a JSON string's content: characters of one to four
    // bytes, every escape, surrogate pairs and lone halves, bytes no
    // UTF-8 or no string holds.
    let atoms: [&[u8]; 18] = [
        b"a",
        b"word ",
        "é".as_bytes(),
        "東".as_bytes(),
        "😀".as_bytes(),
        "\u{2028}".as_bytes(),
        br"\n",
        br"\t",
        br#"\""#,
        br"\\",
        br"\/",
        br"\u00e9",
        br"\ud83d\ude00",
        br"\ud83d",
        br"\udc00",
        br"\u0000",
        b"\xff",
        b"\x01",
    ];
    let kinds = [
        (
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "messageId",
            r#","role":"assistant""#,
        ),
        (
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "toolCallId",
            r#","toolCallName":"f""#,
        ),
        (
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "messageId",
            r#","role":"reasoning""#,
        ),
    ];
    let afters = [
        "",
        r#","timestamp":1700000000000"#,
        r#","rawEvent":{"k":[1,2,3]}"#,
        r#","timestamp":"x""#,
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut split, mut bad) = (0, 0);
    for case in 0..400 {
        let (start, content, end, key, extra) = kinds[rng.below(kinds.len())];
        let mut delta = Vec::new();
        // Mostly valid: the bytes no string holds in one case of four.
        let valid = rng.below(4) != 0;
        for _ in 0..100 + rng.below(1200) {
            let atom = atoms[rng.below(if valid { 16 } else { atoms.len() })];
            delta.extend_from_slice(atom);
        }
        let after = afters[rng.below(afters.len())];
        let mut stream = sse(&[
            RUN_STARTED.to_owned(),
            format!(r#"{{"type":"{start}","{key}":"e1"{extra}}}"#),
        ]);
        stream.extend_from_slice(
            format!(r#"data: {{"type":"{content}","{key}":"e1","delta":""#).as_bytes(),
        );
        stream.extend_from_slice(&delta);
        stream.extend_from_slice(format!("\"{after}}}\n\n").as_bytes());
        stream.extend(sse(&[
            format!(r#"{{"type":"{end}","{key}":"e1"}}"#),
            RUN_FINISHED.to_owned(),
        ]));
        // Cut in its middle, sometimes.
        let cut = rng.below(5) == 0;
        if cut {
            stream.truncate(stream.len() / 2);
        }
        let (raw, push) = (1024 + rng.below(2000), 1 + rng.below(1500));
        let options = Options::new().split(true);
        let (whole, whole_stats) =
            rewrite(&stream, 1 << 20, 1 << 20, Config::new(), Options::new());
        let (out, stats) = rewrite(&stream, push, raw, Config::new(), options);
        let context = format!(
            "case {case} raw {raw} push {push}: {:?}",
            String::from_utf8_lossy(&stream)
        );
        let pieces = blocks(&out).len() > blocks(&whole).len();
        split += usize::from(pieces);
        // (Its members after the delta are short, and a frame buffer as
        // large as the raw one has the JSON's verdict when a piece stops
        // at a byte no string holds: nothing outgrows it.)
        assert_eq!(stats.cut, 0, "{context}");
        if cut && whole_stats.violations == 0 {
            // What a large buffer gives, with the pieces that went out
            // before the repair's RUN_ERROR: the delta's start.
            let (got, want) = (blocks(&out), blocks(&whole));
            let k = want.len() - 1;
            assert!(
                got.len() > k && got[..k] == want[..k] && got.last() == want.last(),
                "{context}"
            );
            let head = format!(r#"data: {{"type":"{content}","{key}":"e1","delta":""#);
            let text: Vec<u8> = got[k..got.len() - 1]
                .iter()
                .flat_map(|b| {
                    let b = b.strip_prefix(head.as_bytes()).expect("a piece");
                    b.strip_suffix(b"\"}\n\n").expect("a piece").iter().copied()
                })
                .collect();
            assert!(delta.starts_with(&text), "{context}");
        } else if whole_stats.violations == 0 {
            assert_eq!(
                String::from_utf8_lossy(&joined(&out)),
                String::from_utf8_lossy(&joined(&whole)),
                "{context}"
            );
        } else {
            // The event (or the stream) is bad: the same verdict, after
            // pieces that are whole events, and never a cut frame.
            bad += 1;
            assert_eq!(stats.violations, whole_stats.violations, "{context}");
            assert!(!out.windows(8).any(|w| w == b"data: \x01\n"), "{context}");
            assert_eq!(blocks(&out).last(), blocks(&whole).last(), "{context}");
        }
        assert!(!pieces || out.len() > whole.len(), "{context}");
    }
    println!("{split} of 400 split, {bad} bad");
    assert!(split > 150 && bad > 50, "{split} split, {bad} bad");
}
