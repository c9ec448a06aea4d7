//! Every fixed capacity of the pipeline, each at and one past its
//! boundary, through the public API: open ids, owner records, id bytes,
//! chunk lanes, subagents, the legacy-parts budget, and monitoring after a
//! capacity error.
//!
//! Three capacities are tested beside the input that reaches them: the
//! frame buffer (`adversarial.rs` §3, a 10 MB frame in a 4 KiB buffer), the
//! JSON depth limit (`adversarial.rs` §1) and the tool-argument table
//! (`tool_args.rs`). `rules.rs` names one case for every [`Capacity`]
//! variant and checks that none is left without one.

mod support;

use support::record::{Outcome, Recorder, run_sized};
use support::{end, run_of, sse, start, tagged};

use agui_stream::{
    Capacity, Config, ErrorKind, EventType, Pipeline, Policy, Stage,
    verify::{Entity, Rule, RunPhase},
};

type Small<'b> = Pipeline<'b, 4, 6, 128>;

fn run_small(stream: &[u8]) -> Outcome {
    run_sized::<4, 6, 128>(stream, Config::new(), 1 << 16, 0)
}

fn content(id: &str) -> String {
    format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"{id}","delta":"x"}}"#)
}

fn subagent(kind: &str, tag: &str) -> String {
    match kind {
        "start" => format!(r#"{{"type":"SUBAGENT_STARTED","subagentRunId":"{tag}","name":"n"}}"#),
        _ => format!(r#"{{"type":"SUBAGENT_FINISHED","subagentRunId":"{tag}"}}"#),
    }
}

#[test]
fn small_pipeline_is_small() {
    // The type the capacity tests use holds everything inline.
    assert!(std::mem::size_of::<Small<'static>>() < 4096);
}

#[test]
fn open_ids_at_and_over_capacity() {
    let open = |n: usize| {
        let mut evs: Vec<String> = (0..n).map(|i| start(&format!("m{i}"))).collect();
        evs.extend((0..n).map(|i| end(&format!("m{i}"))));
        run_of(evs)
    };
    assert_eq!(run_small(&open(4)).ok().events, 10);
    let e = run_small(&open(5)).err();
    assert_eq!(e.kind, ErrorKind::Capacity(Capacity::OpenIds));
    assert_eq!((e.stage, e.frame), (Stage::Verify, 5));
}

/// Owner records are forgotten, never refused: a run the parent agent
/// sends alone never needs an old one, however long it is.
#[test]
fn owner_records_are_forgotten_not_refused() {
    let calls = |n: usize| {
        let mut evs = Vec::new();
        for i in 0..n {
            evs.push(start(&format!("m{i}")));
            evs.push(end(&format!("m{i}")));
            evs.push(format!(
                r#"{{"type":"TOOL_CALL_START","toolCallId":"c{i}","toolCallName":"f","parentMessageId":"m{i}"}}"#
            ));
            evs.push(format!(r#"{{"type":"TOOL_CALL_END","toolCallId":"c{i}"}}"#));
            evs.push(format!(
                r#"{{"type":"TOOL_CALL_RESULT","messageId":"r{i}","toolCallId":"c{i}","content":"ok"}}"#
            ));
        }
        run_of(evs)
    };
    let s = run_small(&calls(2000)).ok();
    assert!(s.is_complete());
    assert_eq!(s.events, 2 + 5 * 2000);
    // Ten thousand messages in one snapshot, several times over.
    let messages: Vec<String> = (0..10_000)
        .map(|i| format!(r#"{{"id":"s{i}","role":"assistant","content":"x"}}"#))
        .collect();
    let snapshot = format!(
        r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{}]}}"#,
        messages.join(",")
    );
    let s = run_small(&run_of(vec![snapshot.clone(), snapshot.clone(), snapshot])).ok();
    assert_eq!(s.events, 5);
    // A new run forgets what the last one forgot.
    let mut two_runs = calls(100);
    two_runs.extend(run_of(vec![
        subagent("start", "s"),
        tagged(&start("m0"), "s"),
        tagged(&end("m0"), "s"),
        subagent("finish", "s"),
    ]));
    assert!(run_small(&two_runs).ok().is_complete());
}

/// A forgotten record matters only to a check that could come out
/// differently with it: then the error names the capacity.
#[test]
fn a_forgotten_owner_is_a_capacity_error_only_where_a_rule_needs_it() {
    let messages = |tag: Option<&str>, from: usize, n: usize| -> Vec<String> {
        (from..from + n)
            .flat_map(|i| {
                let id = format!("m{i}");
                let evs = [start(&id), content(&id), end(&id)];
                evs.map(|e| match tag {
                    Some(t) => tagged(&e, t),
                    None => e,
                })
            })
            .collect()
    };
    // A subagent's own forgotten records: its checks pass whatever they
    // were, as the reference's do (m0 reopened by s, s's own message).
    let mut evs = vec![subagent("start", "s")];
    evs.extend(messages(Some("s"), 0, 20));
    evs.extend(messages(Some("s"), 0, 1));
    evs.push(subagent("finish", "s"));
    assert!(run_small(&run_of(evs)).ok().is_complete());
    // The parent's forgotten records: a fresh id attributed to s is known
    // to be fresh (the filter of forgotten ids says so) ...
    let mut evs = messages(None, 0, 20);
    evs.push(subagent("start", "s"));
    evs.extend(messages(Some("s"), 100, 1));
    evs.push(subagent("finish", "s"));
    assert!(run_small(&run_of(evs)).ok().is_complete());
    // ... but m0 attributed to s may be the parent's (a violation in the
    // reference): the verdict needs the forgotten record.
    let mut evs = messages(None, 0, 20);
    evs.push(subagent("start", "s"));
    evs.extend(messages(Some("s"), 0, 1));
    let e = run_small(&run_of(evs)).err();
    assert_eq!(e.kind, ErrorKind::Capacity(Capacity::Owners));
    assert_eq!((e.stage, e.frame), (Stage::Verify, 1 + 60 + 1));
    // After a long history of the parent's, a subagent's fresh ids may
    // collide in the filter of forgotten ids: then the verdict is a named
    // capacity, never a guess; enough owner records give the reference's
    // answer (ok).
    let mut evs = messages(None, 0, 300);
    evs.push(subagent("start", "s"));
    evs.extend(messages(Some("s"), 1000, 20));
    evs.push(subagent("finish", "s"));
    let stream = run_of(evs);
    match run_small(&stream).result {
        Ok(s) => assert!(s.is_complete()),
        Err(e) => assert_eq!(e.kind, ErrorKind::Capacity(Capacity::Owners)),
    }
    let out = run_sized::<4, 512, 8192>(&stream, Config::new(), 1 << 16, 0);
    assert!(out.ok().is_complete());
    // A record still kept gives the reference's verdict.
    let evs = vec![
        subagent("start", "s"),
        start("m"),
        tagged(&content("m"), "s"),
    ];
    let e = run_small(&run_of(evs)).err();
    assert_eq!(
        e.kind,
        ErrorKind::Verify {
            event: EventType::TextMessageContent,
            rule: Rule::OwnerMismatch
        }
    );
}

#[test]
fn id_bytes_at_and_over_capacity() {
    // The verifier's 128 bytes hold one 128-byte open id, or two of 64.
    let id = |n: usize| "x".repeat(n);
    let open = |ids: &[String]| {
        let mut evs: Vec<String> = ids.iter().map(|i| start(i)).collect();
        evs.extend(ids.iter().map(|i| end(i)));
        run_of(evs)
    };
    assert!(run_small(&open(&[id(128)])).ok().is_complete());
    assert!(
        run_small(&open(&[id(64), "y".repeat(64)]))
            .ok()
            .is_complete()
    );
    for ids in [vec![id(129)], vec![id(64), "y".repeat(64), "z".into()]] {
        let e = run_small(&open(&ids)).err();
        assert_eq!(
            e.kind,
            ErrorKind::Capacity(Capacity::IdBytes { capacity: 128 })
        );
        assert_eq!((e.stage, e.frame), (Stage::Verify, ids.len() as u64));
    }
    // The bytes are the id as written: 128 bytes of escapes fit.
    let escaped = r"\u0041".repeat(128 / 6) + "ab";
    assert_eq!(escaped.len(), 128);
    assert!(run_small(&open(&[escaped])).ok().is_complete());
    // Steps and tool calls hold their ids the same way.
    let step = |n: &str| {
        run_of(vec![
            format!(r#"{{"type":"STEP_STARTED","stepName":"{n}"}}"#),
            format!(r#"{{"type":"STEP_FINISHED","stepName":"{n}"}}"#),
        ])
    };
    assert!(run_small(&step(&id(128))).ok().is_complete());
    assert_eq!(
        run_small(&step(&id(129))).err().kind,
        ErrorKind::Capacity(Capacity::IdBytes { capacity: 128 })
    );
    // A chunk lane holds its id as JSON, quotes included, in the lanes'
    // 224 bytes (docs/capacities.md).
    let chunk = |n: usize| {
        run_of(vec![format!(
            r#"{{"type":"TEXT_MESSAGE_CHUNK","messageId":"{}","delta":"x"}}"#,
            id(n)
        )])
    };
    let lane = 224;
    let out = run_sized::<4, 6, 1024>(&chunk(lane - 2), Config::new(), 1 << 16, 0);
    assert_eq!(out.ok().events, 5);
    let e = run_sized::<4, 6, 1024>(&chunk(lane - 1), Config::new(), 1 << 16, 0).err();
    assert_eq!(
        e.kind,
        ErrorKind::Capacity(Capacity::IdBytes {
            capacity: lane as u32
        })
    );
    assert_eq!((e.stage, e.frame), (Stage::Chunks, 1));
    // A chunk that replaces its lane's stream reuses the lane's bytes: a
    // subagent's tool lane with UUID-sized id, owner and parent takes more
    // than half the storage, and still switches calls.
    let uuid = |i: usize| format!("{i:036}");
    let mut evs = vec![subagent("start", &uuid(0))];
    for i in 1..=3 {
        evs.push(format!(
            r#"{{"type":"TOOL_CALL_CHUNK","toolCallId":"{}","toolCallName":"f","parentMessageId":"{}","subagentRunId":"{}","delta":"{{}}"}}"#,
            uuid(i),
            uuid(100 + i),
            uuid(0)
        ));
    }
    evs.push(subagent("finish", &uuid(0)));
    let out = run_sized::<4, 6, 1024>(&run_of(evs), Config::new(), 1 << 16, 0);
    assert!(out.ok().is_complete());
}

#[test]
fn chunk_lanes_at_and_over_capacity() {
    // Eight lanes (the parent and seven subagents) each keep a text message
    // open, so the verifier needs more than four open ids here: this test
    // sizes the pipeline for the lanes, not the other way round.
    let lanes = |subagents: usize| {
        let mut evs = Vec::new();
        for s in 1..=subagents {
            evs.push(subagent("start", &format!("s{s}")));
        }
        evs.push(r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"x"}"#.to_owned());
        for s in 1..=subagents {
            evs.push(format!(
                r#"{{"type":"TEXT_MESSAGE_CHUNK","messageId":"m{s}","subagentRunId":"s{s}","delta":"x"}}"#
            ));
        }
        for s in 1..=subagents {
            evs.push(subagent("finish", &format!("s{s}")));
        }
        run_of(evs)
    };
    let out = run_sized::<32, 32, 2048>(&lanes(7), Config::new(), 1 << 16, 0);
    let s = out.ok();
    assert!(s.is_complete());
    // 1 + 7 starts + 8 × (START + CONTENT) + 7 × (END + FINISHED) + END + 1.
    assert_eq!(s.events, 1 + 7 + 16 + 14 + 1 + 1);
    let out = run_sized::<32, 32, 2048>(&lanes(8), Config::new(), 1 << 16, 0);
    let e = out.err();
    assert_eq!(e.kind, ErrorKind::Capacity(Capacity::Lanes));
    assert_eq!(e.stage, Stage::Chunks);
    assert_eq!(e.frame, 1 + 8 + 1 + 7, "the ninth lane's chunk");
}

#[test]
fn subagents_at_and_over_capacity() {
    // Active subagents share the open-id table (four slots).
    let active = |n: usize| {
        let mut evs: Vec<String> = (0..n)
            .map(|s| subagent("start", &format!("s{s}")))
            .collect();
        evs.extend((0..n).map(|s| subagent("finish", &format!("s{s}"))));
        run_of(evs)
    };
    assert_eq!(run_small(&active(4)).ok().events, 10);
    let e = run_small(&active(5)).err();
    // Active subagents hold open-id slots: the fifth needs a fifth slot.
    assert_eq!(e.kind, ErrorKind::Capacity(Capacity::OpenIds), "{e:?}");
    assert_eq!((e.stage, e.frame), (Stage::Verify, 5));

    // Distinct subagents an event is attributed to are interned in a table
    // of OPEN entries: four names fit, a fifth does not.
    let named = |n: usize| {
        run_of(
            (0..n)
                .map(|s| {
                    format!(
                        r#"{{"type":"ACTIVITY_SNAPSHOT","messageId":"a","activityType":"x","content":{{}},"subagentRunId":"s{s}"}}"#
                    )
                })
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(run_small(&named(4)).ok().events, 6);
    let e = run_small(&named(5)).err();
    assert_eq!(e.kind, ErrorKind::Capacity(Capacity::Subagents));
    assert_eq!((e.stage, e.frame), (Stage::Verify, 5));
}

const LEGACY_PART: &str = r#"{"type":"binary","mimeType":"image/png","data":"x"}"#;
const TEXT_PART: &str = r#"{"type":"text","text":"t"}"#;

fn user_snapshot(legacy: usize, text: usize) -> Vec<u8> {
    let parts: Vec<&str> = std::iter::repeat_n(LEGACY_PART, legacy)
        .chain(std::iter::repeat_n(TEXT_PART, text))
        .collect();
    let snapshot = format!(
        r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"id":"u","role":"user","content":[{}]}}]}}"#,
        parts.join(",")
    );
    run_of(vec![snapshot])
}

#[test]
fn legacy_binary_parts_at_and_over_the_budget() {
    // The budget is legacy parts × array length ≤ 4096.
    for (legacy, text, fits) in [
        (64, 0, true),    // 64 × 64 = 4096
        (65, 0, false),   // 65 × 65 = 4225
        (32, 96, true),   // 32 × 128 = 4096
        (32, 97, false),  // 32 × 129 = 4128
        (1, 4095, true),  // 1 × 4096
        (1, 4096, false), // 1 × 4097
        (0, 10_000, true),
    ] {
        let out = run_small(&user_snapshot(legacy, text));
        if fits {
            assert_eq!(out.ok().events, 3, "{legacy} legacy, {text} text");
            // Each legacy part is written upgraded to an image part.
            let json = &out.events[1].1;
            let upgraded =
                br#"{"type":"image","source":{"type":"data","value":"x","mimeType":"image/png"}}"#;
            let count = json
                .windows(upgraded.len())
                .filter(|w| *w == upgraded)
                .count();
            assert_eq!(count, legacy, "{legacy} legacy, {text} text");
        } else {
            let e = out.err();
            assert_eq!(
                e.kind,
                ErrorKind::Capacity(Capacity::LegacyParts { budget: 4096 }),
                "{legacy} legacy, {text} text"
            );
            assert_eq!((e.stage, e.frame), (Stage::Schema, 1));
        }
    }
    // The same budget applies to messages in RUN_STARTED's input.
    let input = |n: usize| {
        let parts = vec![LEGACY_PART; n].join(",");
        sse(&[format!(
            r#"{{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{{"threadId":"t","runId":"r","messages":[{{"id":"u","role":"user","content":[{parts}]}}]}}}}"#
        )])
    };
    assert_eq!(run_small(&input(64)).ok().events, 1);
    assert_eq!(
        run_small(&input(65)).err().kind,
        ErrorKind::Capacity(Capacity::LegacyParts { budget: 4096 })
    );
}

/// Monitoring after a capacity error: the skipped event leaves the
/// verifier as it stood, and later events are checked as before.
#[test]
fn monitor_after_owner_capacity_error_leaves_state_unchanged() {
    // One owner record: m1's pushes out m0's (owned by s), and m0 reopened
    // by the parent keeps its forgotten owner, s or the parent.
    let stream = run_of(vec![
        subagent("start", "s"),
        tagged(&start("m0"), "s"),
        tagged(&end("m0"), "s"),
        start("m1"),
        end("m1"),
        start("m0"),
        tagged(&content("m0"), "s"), // frame 7: needs m0's owner
        end("m0"),
        tagged(&content("m0"), "s"), // m0 is closed: a violation as ever
        subagent("finish", "s"),
    ]);
    let mut buf = vec![0u8; 4096];
    let mut p = Pipeline::<'_, 4, 1, 256>::sized(&mut buf, Config::new()).policy(Policy::Monitor);
    let mut log = Recorder::new();
    p.push(&stream, &mut log).unwrap();
    let s = p.finish(&mut log).unwrap();
    let violations: Vec<(ErrorKind, u64)> = log
        .violations()
        .map(|(e, _, _)| (e.kind, e.frame))
        .collect();
    assert_eq!(
        violations,
        [
            (ErrorKind::Capacity(Capacity::Owners), 7),
            (
                ErrorKind::Verify {
                    event: EventType::TextMessageContent,
                    rule: Rule::NotOpen(Entity::TextMessage),
                },
                9
            ),
        ]
    );
    let events = log.event_types();
    assert_eq!(events.len(), 10);
    assert_eq!(events.last().map(String::as_str), Some("RUN_FINISHED"));
    assert_eq!(s.run, RunPhase::Finished);
}
