//! The generator's smoke test, in wasm-smith's style: seeded inputs, every
//! stream through the pipeline, which must find it valid and complete.

extern crate std;

use std::vec;
use std::vec::Vec;

use super::*;
use crate::pipeline::{Config, Pipeline};
use crate::view::event::Event;

/// xorshift64*: seeded bytes.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// The pipeline's verdict on `stream`, in `piece`-byte pushes.
fn check(stream: &[u8], dialect: Dialect, piece: usize) -> Result<u64, std::string::String> {
    let mut buf = vec![0u8; 1 << 16];
    let mut p = Pipeline::new(&mut buf, Config::new().dialect(dialect));
    let mut sink = |_: &Event<'_>, _: &crate::pipeline::FrameInfo| {};
    for c in stream.chunks(piece.max(1)) {
        if let Err(e) = p.push(c, &mut sink) {
            return Err(std::format!("{e:?}: {}", p.message(&e)));
        }
    }
    let summary = p.finish(&mut sink).map_err(|e| std::format!("{e:?}"))?;
    if !summary.is_complete() {
        return Err(std::format!("incomplete: {summary:?}"));
    }
    Ok(summary.events)
}

#[test]
#[cfg_attr(miri, ignore = "2,048 pipelines")]
fn every_generated_stream_is_valid() {
    let mut out = vec![0u8; 64 << 10];
    let mut seen = [0u32; 2];
    for seed in 0..2048u64 {
        let input = bytes(seed, 2048);
        let g = generate(&input, &mut out);
        let stream = &out[..g.len];
        assert!(g.len > 0, "seed {seed}");
        if let Err(e) = check(stream, g.dialect, 61) {
            let text = std::string::String::from_utf8_lossy(stream);
            let at = e
                .rfind("offset: ")
                .and_then(|i| {
                    e[i + 8..]
                        .split(|c: char| !c.is_ascii_digit())
                        .next()?
                        .parse::<usize>()
                        .ok()
                })
                .unwrap_or(0);
            panic!(
                "seed {seed}, {:?}: {e}\n…{}",
                g.config,
                &text[at.saturating_sub(300).min(text.len())..(at + 100).min(text.len())]
            );
        }
        seen[usize::from(g.dialect == Dialect::V0)] += 1;
    }
    assert!(seen[0] > 500 && seen[1] > 500, "{seen:?}");
}

#[test]
#[cfg_attr(miri, ignore = "many pipelines")]
fn every_prefix_of_the_input_gives_a_valid_stream() {
    let mut out = vec![0u8; 64 << 10];
    for seed in 0..64u64 {
        let input = bytes(seed ^ 0xabcd, 1024);
        for cut in (0..input.len()).step_by(37) {
            let g = generate(&input[..cut], &mut out);
            let stream = &out[..g.len];
            if let Err(e) = check(stream, g.dialect, 1 << 16) {
                panic!(
                    "seed {seed} cut {cut}: {e}\n{}",
                    std::string::String::from_utf8_lossy(stream)
                );
            }
        }
    }
}

#[test]
fn the_output_never_passes_its_buffer() {
    let input = bytes(7, 4096);
    for size in [0usize, 100, 511, 512, 700, 2048, 8192] {
        let mut out = vec![0u8; size];
        let g = generate(&input, &mut out);
        assert!(g.len <= size);
        if g.len > 0 {
            assert!(check(&out[..g.len], g.dialect, 7).is_ok(), "size {size}");
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "2,048 pipelines")]
fn generated_streams_reach_every_family() {
    use crate::protocol::event_type::EventType;
    let mut out = vec![0u8; 64 << 10];
    let mut counts = [0u64; EventType::ALL.len()];
    let mut total = 0u64;
    for seed in 0..512u64 {
        let input = bytes(seed.wrapping_mul(977), 2048);
        let g = generate(&input, &mut out);
        let mut buf = vec![0u8; 1 << 16];
        let mut p = Pipeline::new(&mut buf, Config::new().dialect(g.dialect));
        let mut sink = |ev: &Event<'_>, _: &crate::pipeline::FrameInfo| {
            counts[ev.event_type() as usize] += 1;
        };
        p.push(&out[..g.len], &mut sink).unwrap();
        p.finish(&mut sink).unwrap();
        total += u64::from(g.events);
    }
    let reached: Vec<_> = EventType::ALL
        .iter()
        .zip(counts)
        .filter(|&(_, n)| n > 0)
        .map(|(t, n)| std::format!("{t} {n}"))
        .collect();
    std::println!("{total} events; {}", reached.join(", "));
    // Every family the generator writes comes out of the pipeline.
    for ty in [
        EventType::TextMessageContent,
        EventType::ToolCallArgs,
        EventType::ToolCallResult,
        EventType::StepFinished,
        EventType::StateDelta,
        EventType::ReasoningMessageContent,
        EventType::ThinkingTextMessageContent,
        EventType::Custom,
        EventType::Raw,
    ] {
        assert!(counts[ty as usize] > 10, "{ty}: {}", counts[ty as usize]);
    }
    assert!(total > 512 * 20, "{total} events");
}

/// The pipeline's first error on `stream` (`None`: valid and complete).
fn first_error(
    stream: &[u8],
    dialect: Dialect,
    piece: usize,
) -> Option<crate::pipeline::error::Error> {
    let mut buf = vec![0u8; 1 << 16];
    let mut p = Pipeline::new(&mut buf, Config::new().dialect(dialect));
    let mut sink = |_: &Event<'_>, _: &crate::pipeline::FrameInfo| {};
    for c in stream.chunks(piece.max(1)) {
        if let Err(e) = p.push(c, &mut sink) {
            return Some(e);
        }
    }
    match p.finish(&mut sink) {
        Err(e) => Some(e),
        Ok(s) => {
            assert!(s.is_complete(), "{s:?}");
            None
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "2,048 pipelines")]
fn every_injected_violation_gets_its_expected_verdict() {
    use crate::pipeline::error::ErrorKind;
    let mut out = vec![0u8; 64 << 10];
    let mut rules = std::collections::BTreeSet::new();
    let (mut valid, mut invalid) = (0, 0);
    for seed in 0..2048u64 {
        let input = bytes(seed ^ 0x5eed_0000, 2048);
        let g = generate_invalid(&input, &mut out);
        let stream = &out[..g.len];
        let got = first_error(stream, g.dialect, 61);
        let show = || std::string::String::from_utf8_lossy(stream).into_owned();
        match (g.expected, got) {
            (Expected::Valid, None) => valid += 1,
            (Expected::Violation { frame, stage, rule }, Some(e)) => {
                assert_eq!(
                    (e.frame, e.stage),
                    (frame, stage),
                    "seed {seed}: {e:?}\n{}",
                    show()
                );
                if let Some(rule) = rule {
                    assert!(
                        matches!(e.kind, ErrorKind::Verify { rule: r, .. } if r == rule),
                        "seed {seed}: {e:?}, want {rule:?}\n{}",
                        show()
                    );
                    rules.insert(std::format!("{rule:?}"));
                }
                invalid += 1;
            }
            (want, got) => panic!("seed {seed}: want {want:?}, got {got:?}\n{}", show()),
        }
    }
    std::println!("{valid} valid, {invalid} invalid; rules {rules:?}");
    assert!(
        valid > 500 && invalid > 500,
        "{valid} valid, {invalid} invalid"
    );
    assert!(rules.len() >= 10, "{rules:?}");
}
