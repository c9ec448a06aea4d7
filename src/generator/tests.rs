//! The generator's smoke tests, in wasm-smith's style: seeded inputs,
//! every stream through the pipeline, which must give exactly the verdict
//! the generator recorded. A failing input is written out.

extern crate std;

use std::collections::BTreeSet;
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;

use super::*;
use crate::pipeline::{Config, FrameInfo, Pipeline};
use crate::protocol::event_type::EventType;
use crate::view::event::Event;

/// xorshift64*: seeded bytes.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// What the pipeline made of a stream: each event it emitted (encoded),
/// its first error, and whether the stream was complete.
struct Verdict {
    events: Vec<Vec<u8>>,
    error: Option<Error>,
    message: String,
    complete: bool,
}

fn run<'s>(pieces: impl Iterator<Item = &'s [u8]>, dialect: Dialect) -> Verdict {
    let mut buf = vec![0u8; 1 << 16];
    let mut p = Pipeline::new(&mut buf, Config::new().dialect(dialect));
    let mut events = Vec::new();
    let mut scratch = vec![0u8; 1 << 18];
    let mut sink = |ev: &Event<'_>, _: &FrameInfo| {
        let n = crate::encode_to_slice(ev, &mut scratch).unwrap();
        events.push(scratch[..n].to_vec());
    };
    let mut error = None;
    for piece in pieces {
        if let Err(e) = p.push(piece, &mut sink) {
            error = Some(e);
            break;
        }
    }
    let mut complete = false;
    if error.is_none() {
        match p.finish(&mut sink) {
            Ok(s) => complete = s.is_complete(),
            Err(e) => error = Some(e),
        }
    }
    let message = error
        .map(|e| format!("{}", p.message(&e)))
        .unwrap_or_default();
    Verdict {
        events,
        error,
        message,
        complete,
    }
}

/// The stream around an error's offset (the whole of a short one).
fn around(stream: &[u8], error: Option<Error>) -> String {
    let at = error
        .map_or(stream.len(), |e| e.offset as usize)
        .min(stream.len());
    let from = at.saturating_sub(1500);
    let to = (at + 300).min(stream.len());
    format!("…{}…", String::from_utf8_lossy(&stream[from..to]))
}

/// Writes a failing input out, and says where.
fn keep(name: &str, input: &[u8]) -> String {
    let path = std::env::temp_dir().join(format!("agui-gen-{name}.bin"));
    let _ = std::fs::write(&path, input);
    format!("input in {}", path.display())
}

/// The options a configuration class fixes.
fn classes() -> [(&'static str, GenOptions); 6] {
    let o = GenOptions::new();
    [
        ("v1-plain", o.dialect(Dialect::V1).framing(Framing::PLAIN)),
        ("v1-lf", o.dialect(Dialect::V1).line_ends(LineEnds::Lf)),
        ("v1-any", o.dialect(Dialect::V1)),
        ("v0-plain", o.dialect(Dialect::V0).framing(Framing::PLAIN)),
        ("v0-lf", o.dialect(Dialect::V0).line_ends(LineEnds::Lf)),
        ("v0-any", o.dialect(Dialect::V0)),
    ]
}

#[test]
#[cfg_attr(miri, ignore = "6,144 pipelines")]
fn every_generated_stream_is_valid_in_every_class() {
    let mut out = vec![0u8; 64 << 10];
    for (class, options) in classes() {
        let mut events = 0u64;
        for seed in 0..1024u64 {
            let input = bytes(seed, 2048);
            let g = generate_with(&input, &mut out, options);
            let stream = &out[..g.len];
            let v = run(g.pieces(stream), g.dialect);
            if v.error.is_some() || !v.complete {
                panic!(
                    "{class} seed {seed} ({:?}): {:?} {}, complete {}; {}\n{}",
                    g.config,
                    v.error,
                    v.message,
                    v.complete,
                    keep(&format!("{class}-{seed}"), &input),
                    around(stream, v.error)
                );
            }
            events += u64::from(g.events);
        }
        assert!(events > 1024 * 20, "{class}: {events} events");
    }
}

/// The input `gen_pipeline` found (its flag byte aside): a run of
/// subagents and 17 messages snapshots, whose verifier forgot the owner of
/// an activity a subagent then updated (`Capacity::Owners`).
const FORGOTTEN_OWNER: &str = concat!(
    "f449f1509512bf5365529f72b95e45c23353d3bb39b11de8a55e48917265706c",
    "616365246284f8e52c5e48917265706c616365246259e719dd4f361b462a62f6",
    "54532928feccc3e9fa0e2eb4b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2",
    "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2",
    "b2b2b2b2b2b2b2b2b2b2b2ffffff84f8e52c94b5b2b61c94b5ffffffffb2ffb6",
    "1cff",
);

/// Long runs of one action (a byte repeated: the same choice again and
/// again) build up what a verifier must remember: many messages, tool
/// calls and activities in one run, with subagents. A valid stream still
/// passes a verifier of the default capacities (no `Capacity` error), and
/// a violation still gets its verdict, in every class.
#[test]
#[cfg_attr(miri, ignore = "many pipelines")]
fn repeated_choices_stay_within_the_default_capacities() {
    let mut out = vec![0u8; 64 << 10];
    let found: Vec<u8> = (0..FORGOTTEN_OWNER.len() / 2)
        .map(|i| u8::from_str_radix(&FORGOTTEN_OWNER[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let g = generate(&found, &mut out);
    let v = run(g.pieces(&out[..g.len]), g.dialect);
    assert!(
        v.error.is_none() && v.complete,
        "{:?} {}",
        v.error,
        v.message
    );
    for (class, options) in classes() {
        for seed in 0..256u64 {
            let mut input = bytes(seed ^ 0x5eed, 24);
            input.resize(2048, seed as u8);
            for options in [options, options.violations(true)] {
                let g = generate_with(&input, &mut out, options);
                let stream = &out[..g.len];
                let v = run(g.pieces(stream), g.dialect);
                let ok = g.expected.matches(v.error.as_ref()) && (v.error.is_some() || v.complete);
                assert!(
                    ok,
                    "{class} seed {seed} ({:?}): expected {:?}, got {:?} {}; {}\n{}",
                    g.config,
                    g.expected,
                    v.error,
                    v.message,
                    keep(&format!("repeated-{class}-{seed}"), &input),
                    around(stream, v.error)
                );
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "many pipelines")]
fn every_prefix_of_the_input_gives_a_valid_stream() {
    let mut out = vec![0u8; 64 << 10];
    for seed in 0..64u64 {
        let input = bytes(seed ^ 0xabcd, 1024);
        for cut in (0..input.len()).step_by(37) {
            let g = generate(&input[..cut], &mut out);
            let v = run([&out[..g.len]].into_iter(), g.dialect);
            assert!(
                v.error.is_none() && v.complete,
                "seed {seed} cut {cut}: {:?} {}\n{}",
                v.error,
                v.message,
                around(&out[..g.len], v.error)
            );
        }
    }
}

#[test]
fn the_output_never_passes_its_buffer() {
    let input = bytes(7, 4096);
    for size in [0usize, 100, 511, 512, 700, 2048, 4096, 8192, 12_000, 20_000] {
        let mut out = vec![0u8; size];
        let g = generate(&input, &mut out);
        assert!(g.len <= size);
        if g.len > 0 {
            let v = run(out[..g.len].chunks(7), g.dialect);
            assert!(
                v.error.is_none() && v.complete,
                "size {size}: {}",
                v.message
            );
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "1,024 pipelines")]
fn generated_streams_reach_every_event_type() {
    let mut out = vec![0u8; 64 << 10];
    let mut seen = BTreeSet::new();
    for seed in 0..1024u64 {
        let input = bytes(seed.wrapping_mul(977), 2048);
        let g = generate(&input, &mut out);
        for ty in EventType::ALL {
            let name = format!("\"type\":\"{}\"", ty.as_str());
            if out[..g.len]
                .windows(name.len())
                .any(|w| w == name.as_bytes())
            {
                seen.insert(ty.index());
            }
        }
    }
    let missing: Vec<_> = EventType::ALL
        .iter()
        .filter(|t| !seen.contains(&t.index()))
        .collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}

/// Every lifecycle rule the reference has, and every chunk error but a
/// capacity.
fn reasons_to_reach() -> Vec<String> {
    use crate::check::normalize::LaneKind;
    use crate::check::verify::Entity;
    let mut all: Vec<String> = [
        Rule::FirstEvent,
        Rule::AfterRunError,
        Rule::AfterRunFinished,
        Rule::RunStillActive,
        Rule::NullSubagentRunId,
        Rule::StepOwnedElsewhere,
        Rule::OwnerMismatch,
        Rule::ParentOwnerMismatch,
        Rule::SubagentActive,
        Rule::SubagentReused,
        Rule::UnknownParentSubagent,
        Rule::SubagentNotActive,
        Rule::ThinkingStepActive,
        Rule::NoThinkingStep,
        Rule::ThinkingMessageActive,
        Rule::NoThinkingMessage,
    ]
    .iter()
    .map(|r| format!("{r:?}"))
    .collect();
    for e in [
        Entity::TextMessage,
        Entity::ToolCall,
        Entity::Step,
        Entity::ReasoningSpan,
        Entity::ReasoningMessage,
        Entity::Subagent,
    ] {
        // A subagent is started and finished, not opened and closed.
        if e != Entity::Subagent {
            all.push(format!("{:?}", Rule::AlreadyOpen(e)));
            all.push(format!("{:?}", Rule::NotOpen(e)));
        }
        all.push(format!("{:?}", Rule::OpenAtRunFinished(e)));
    }
    for k in [LaneKind::Text, LaneKind::Tool, LaneKind::Reasoning] {
        all.push(format!("{:?}", ChunkError::MissingId(k)));
        all.push(format!("{:?}", ChunkError::SubagentMismatch(k)));
        all.push(format!("Ambiguous({k:?})"));
    }
    all.push(format!("{:?}", ChunkError::MissingToolCallName));
    all.push("Mismatch(Text, Role)".into());
    all.push("Mismatch(Tool, ToolCallName)".into());
    all.push("Json".into());
    all.push("Schema".into());
    all
}

/// How `reasons_to_reach` names a reason.
fn reason_name(r: Reason) -> String {
    match r {
        Reason::Json => "Json".into(),
        Reason::Schema => "Schema".into(),
        Reason::Rule(rule) => format!("{rule:?}"),
        Reason::Chunk(ChunkError::Mismatch { kind, field }) => {
            format!("Mismatch({kind:?}, {field:?})")
        }
        Reason::Chunk(ChunkError::Ambiguous { kind, .. }) => format!("Ambiguous({kind:?})"),
        Reason::Chunk(e) => format!("{e:?}"),
    }
}

#[test]
#[cfg_attr(miri, ignore = "8,192 pipelines")]
fn every_injected_violation_gets_its_expected_verdict() {
    let mut out = vec![0u8; 64 << 10];
    let mut reached = BTreeSet::new();
    for dialect in [Dialect::V1, Dialect::V0] {
        let (mut valid, mut invalid) = (0, 0);
        for seed in 0..4096u64 {
            let input = bytes(seed ^ 0x5eed_0000, 2048);
            let options = GenOptions::new().dialect(dialect).violations(true);
            let g = generate_with(&input, &mut out, options);
            let stream = &out[..g.len];
            let v = run(g.pieces(stream), g.dialect);
            if !g.expected.matches(v.error.as_ref()) || (v.error.is_none() && !v.complete) {
                panic!(
                    "{dialect:?} seed {seed}: want {:?}, got {:?} {}; {}\n{}",
                    g.expected,
                    v.error,
                    v.message,
                    keep(&format!("invalid-{seed}"), &input),
                    around(stream, v.error)
                );
            }
            match g.expected {
                Expected::Valid => valid += 1,
                Expected::Violation { reason, .. } => {
                    reached.insert(reason_name(reason));
                    invalid += 1;
                }
            }
        }
        assert!(
            valid > 1000 && invalid > 1000,
            "{dialect:?}: {valid} valid, {invalid} invalid"
        );
    }
    let missing: Vec<_> = reasons_to_reach()
        .into_iter()
        .filter(|r| !reached.contains(r))
        .collect();
    assert!(missing.is_empty(), "never injected: {missing:?}");
}

#[test]
#[cfg_attr(miri, ignore = "1,536 pipelines")]
fn framing_and_pushes_do_not_change_the_events_or_the_verdict() {
    // The same input under plain framing and under its drawn framing
    // (every line end; the envelope on or off), pushed whole or in pieces:
    // the same events and the same verdict.
    // Room never binds (framing takes room, and room decides how much is
    // written): buffers far over what 300 events take.
    let mut plain = vec![0u8; 24 << 20];
    let mut framed = vec![0u8; 24 << 20];
    for seed in 0..512u64 {
        let input = bytes(seed ^ 0xf00d, 2048);
        let base = GenOptions::new().violations(true);
        let a = generate_with(&input, &mut plain, base.framing(Framing::PLAIN));
        let b = generate_with(&input, &mut framed, base.envelope(seed % 2 == 0));
        assert_eq!(
            (a.events, a.expected),
            (b.events, b.expected),
            "seed {seed}"
        );
        let whole = run([&plain[..a.len]].into_iter(), a.dialect);
        let cut = run(b.pieces(&framed[..b.len]), b.dialect);
        let show = || {
            format!(
                "seed {seed}, {:?}: {:?} / {:?}; {}\n{}",
                b.config.framing,
                whole.error,
                cut.error,
                keep(&format!("framing-{seed}"), &input),
                around(&framed[..b.len], cut.error)
            )
        };
        assert_eq!(whole.events, cut.events, "{}", show());
        assert_eq!(
            whole.error.map(|e| (e.frame, e.stage)),
            cut.error.map(|e| (e.frame, e.stage)),
            "{}",
            show()
        );
        // (A JSON error's position counts the newlines of split lines.)
        if whole.error.is_some_and(|e| e.stage != Stage::Json) {
            assert_eq!(whole.message, cut.message, "{}", show());
        }
    }
}

#[test]
fn the_envelope_gives_back_the_input_and_the_same_stream() {
    let mut out = vec![0u8; 64 << 10];
    let mut again = vec![0u8; 64 << 10];
    let mut back = vec![0u8; 4096];
    for seed in 0..32u64 {
        let input = bytes(seed, 1 + (seed as usize * 61) % 2048);
        let g = generate_invalid(&input, &mut out);
        let stream = &out[..g.len];
        let tail = format!(": agui-gen {:02x}", input[0]);
        assert!(
            stream.windows(tail.len()).any(|w| w == tail.as_bytes()),
            "seed {seed}"
        );
        let n = envelope(stream, &mut back).unwrap();
        assert_eq!(&back[..n], &input[..], "seed {seed}");
        let h = generate_invalid(&back[..n], &mut again);
        assert_eq!(&again[..h.len], stream, "seed {seed}");
    }
    // Off, or too little room: none.
    let g = generate_with(&[1, 2, 3], &mut out, GenOptions::new().envelope(false));
    assert_eq!(envelope(&out[..g.len], &mut back), None);
}

#[test]
fn pieces_cover_the_stream_in_order() {
    let stream = bytes(3, 5000);
    for seed in 0..64u32 {
        let pieces: Vec<&[u8]> = Pieces::new(&stream, seed).collect();
        assert!(pieces.iter().all(|p| !p.is_empty()));
        assert_eq!(pieces.concat(), stream);
    }
    // Some single bytes, some short and long pieces.
    let lens: BTreeSet<usize> = (0..64u32)
        .flat_map(|s| Pieces::new(&stream, s).map(<[u8]>::len).collect::<Vec<_>>())
        .collect();
    assert!(lens.contains(&1) && lens.iter().any(|&l| l > 100));
}
