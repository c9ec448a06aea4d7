//! From each rule to its test: every lifecycle [`Rule`], every
//! [`ChunkError`] and every [`Capacity`] is reached by a named case, and
//! `cargo test --test rules -- --nocapture` prints the map (variant → case
//! → the frame that reaches it, with the reference's message).
//!
//! A case is a corpus stream (`tests/corpus/{conformance,extra}`, whose
//! `MANIFEST.tsv` describes it in prose) or a small stream built here, run
//! through the pipeline in the configuration it names; it must stop with
//! exactly the error the table gives (stage, kind and frame).
//!
//! The enums are `#[non_exhaustive]`, so no `match` outside the crate can
//! be exhaustive, and the crate has no table of their variants. The list
//! of variants is therefore read from the enum's definition under `src/`
//! (found by name wherever it lives), and a value's variant from its
//! `Debug` form: a variant added without a case fails
//! [`every_variant_is_reached_by_a_named_case`]. A rule that carries an
//! [`Entity`] (a chunk error that carries a [`LaneKind`]) needs a case per
//! entity (lane kind), but for the pairs [`UNREACHABLE`] lists.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use support::record::{Outcome, run_sized};
use support::{end, run_of, start, tagged};

use agui_stream::normalize::{ChunkError, LaneKind};
use agui_stream::verify::{Entity, Rule};
use agui_stream::{Capacity, Config, Dialect, ErrorKind, EventType, Key, Minting, Stage};

/// Variants no input can reach, with the reason.
const UNREACHABLE: &[(&str, &str, &str)] = &[
    (
        "Rule",
        "AlreadyOpen(Subagent)",
        "SUBAGENT_STARTED for an active subagent is SubagentActive",
    ),
    (
        "Rule",
        "NotOpen(Subagent)",
        "SUBAGENT_FINISHED/ERROR for a subagent not active is SubagentNotActive",
    ),
    (
        "Capacity",
        "RequestBuffer",
        "a request checker's, not the stream pipeline's: tests/requests.rs reaches it (an id longer than the buffer)",
    ),
];

/// The enums whose every variant needs a case; and the payload enums a
/// tuple variant is expanded over.
const CHECKED: [&str; 3] = ["Rule", "ChunkError", "Capacity"];
const PAYLOADS: [&str; 2] = ["Entity", "LaneKind"];

// ------------------------------------------------------------- the cases

/// Where a case's stream comes from.
enum Stream {
    /// `tests/corpus/extra/NAME.sse` for a name starting `x-`, else
    /// `tests/corpus/conformance/NAME.sse`.
    Corpus(&'static str),
    /// Built here.
    Inline(fn() -> Vec<u8>),
}

/// How a case is run: a name for the map, and the run.
struct Setup {
    name: &'static str,
    run: fn(&[u8]) -> Outcome,
}

struct Case {
    /// The corpus case's name, or a name for an inline stream.
    name: &'static str,
    stream: Stream,
    setup: Setup,
    /// The error it must stop with.
    stage: Stage,
    kind: ErrorKind,
    frame: u64,
}

fn config(dialect: Dialect) -> Config {
    Config::new()
        .dialect(dialect)
        .minting(Minting::Deterministic)
}

const V1: Setup = Setup {
    name: "V1",
    run: |s| run_sized::<32, 32, 2048>(s, config(Dialect::V1), 1 << 20, 0),
};
const V0: Setup = Setup {
    name: "V0",
    run: |s| run_sized::<32, 32, 2048>(s, config(Dialect::V0), 1 << 20, 0),
};
/// Four open ids, six owner records, 128 id bytes.
const SMALL: Setup = Setup {
    name: "V1, Pipeline<4, 6, 128>",
    run: |s| run_sized::<4, 6, 128>(s, config(Dialect::V1), 1 << 16, 0),
};
/// One owner record.
const ONE_OWNER: Setup = Setup {
    name: "V1, Pipeline<4, 1, 256>",
    run: |s| run_sized::<4, 1, 256>(s, config(Dialect::V1), 1 << 16, 0),
};
/// A 4 KiB frame buffer, 1 KiB pushes.
const BUFFER_4K: Setup = Setup {
    name: "V1, 4 KiB buffer, 1 KiB pushes",
    run: |s| run_sized::<32, 32, 2048>(s, config(Dialect::V1), 4096, 1024),
};
const TOOL_ARGS: Setup = Setup {
    name: "V1, check_tool_args",
    run: |s| {
        let config = config(Dialect::V1).check_tool_args(true);
        run_sized::<32, 32, 2048>(s, config, 1 << 20, 0)
    },
};

fn corpus(name: &'static str, setup: Setup, stage: Stage, kind: ErrorKind, frame: u64) -> Case {
    Case {
        name,
        stream: Stream::Corpus(name),
        setup,
        stage,
        kind,
        frame,
    }
}

fn inline(
    name: &'static str,
    stream: fn() -> Vec<u8>,
    setup: Setup,
    stage: Stage,
    kind: ErrorKind,
    frame: u64,
) -> Case {
    Case {
        name,
        stream: Stream::Inline(stream),
        setup,
        stage,
        kind,
        frame,
    }
}

fn rule(event: EventType, rule: Rule) -> ErrorKind {
    ErrorKind::Verify { event, rule }
}

fn subagent_started(tag: &str) -> String {
    format!(r#"{{"type":"SUBAGENT_STARTED","subagentRunId":"{tag}","name":"n"}}"#)
}

fn subagent_finished(tag: &str) -> String {
    format!(r#"{{"type":"SUBAGENT_FINISHED","subagentRunId":"{tag}"}}"#)
}

fn tool_start(id: &str) -> String {
    format!(r#"{{"type":"TOOL_CALL_START","toolCallId":"{id}","toolCallName":"f"}}"#)
}

/// Every case, grouped by what it reaches (one line per corpus case).
#[rustfmt::skip]
fn cases() -> Vec<Case> {
    use Entity as N;
    use EventType as T;
    use Rule as R;
    let (verify, chunks) = (Stage::Verify, Stage::Chunks);
    vec![
        // ------------------------------------------------------- Rule
        corpus("life-first-custom", V1, verify, rule(T::Custom, R::FirstEvent), 0),
        corpus("life-event-after-error", V1, verify, rule(T::TextMessageStart, R::AfterRunError), 2),
        corpus("life-event-after-finished", V1, verify, rule(T::Custom, R::AfterRunFinished), 2),
        corpus("life-double-run-started", V1, verify, rule(T::RunStarted, R::RunStillActive), 1),
        corpus("x-v0-null-tag-on-run-event", V0, verify, rule(T::RunStarted, R::NullSubagentRunId), 0),
        corpus("life-text-start-duplicate", V1, verify, rule(T::TextMessageStart, R::AlreadyOpen(N::TextMessage)), 2),
        corpus("life-tool-start-duplicate", V1, verify, rule(T::ToolCallStart, R::AlreadyOpen(N::ToolCall)), 2),
        corpus("life-reasoning-start-duplicate", V1, verify, rule(T::ReasoningStart, R::AlreadyOpen(N::ReasoningSpan)), 2),
        corpus("life-reasoning-message-duplicate", V1, verify, rule(T::ReasoningMessageStart, R::AlreadyOpen(N::ReasoningMessage)), 2),
        corpus("life-step-duplicate", V1, verify, rule(T::StepStarted, R::AlreadyOpen(N::Step)), 2),
        corpus("life-text-end-no-start", V1, verify, rule(T::TextMessageEnd, R::NotOpen(N::TextMessage)), 1),
        corpus("life-tool-args-no-start", V1, verify, rule(T::ToolCallArgs, R::NotOpen(N::ToolCall)), 1),
        corpus("life-reasoning-end-no-start", V1, verify, rule(T::ReasoningEnd, R::NotOpen(N::ReasoningSpan)), 1),
        corpus("life-reasoning-content-no-start", V1, verify, rule(T::ReasoningMessageContent, R::NotOpen(N::ReasoningMessage)), 1),
        corpus("life-step-finish-unstarted", V1, verify, rule(T::StepFinished, R::NotOpen(N::Step)), 1),
        corpus("x-step-finished-by-other-owner", V1, verify, rule(T::StepFinished, R::StepOwnedElsewhere), 3),
        corpus("x-finish-with-text-open", V1, verify, rule(T::RunFinished, R::OpenAtRunFinished(N::TextMessage)), 3),
        corpus("life-finish-open-tool", V1, verify, rule(T::RunFinished, R::OpenAtRunFinished(N::ToolCall)), 2),
        corpus("life-finish-open-reasoning-span", V1, verify, rule(T::RunFinished, R::OpenAtRunFinished(N::ReasoningSpan)), 2),
        corpus("x-finish-with-reasoning-message-open", V1, verify, rule(T::RunFinished, R::OpenAtRunFinished(N::ReasoningMessage)), 2),
        corpus("x-finish-with-step-open", V1, verify, rule(T::RunFinished, R::OpenAtRunFinished(N::Step)), 4),
        corpus("x-finish-with-subagent-open", V1, verify, rule(T::RunFinished, R::OpenAtRunFinished(N::Subagent)), 2),
        corpus("life-text-owner-mismatch", V1, verify, rule(T::TextMessageContent, R::OwnerMismatch), 2),
        corpus("life-tool-owner-vs-parent-message", V1, verify, rule(T::ToolCallStart, R::ParentOwnerMismatch), 2),
        corpus("x-tool-call-parent-conflict", V1, verify, rule(T::ToolCallStart, R::ToolCallParentConflict), 6),
        corpus("x-subagent-already-active", V1, verify, rule(T::SubagentStarted, R::SubagentActive), 2),
        corpus("life-subagent-reuse-id", V1, verify, rule(T::SubagentStarted, R::SubagentReused), 3),
        corpus("x-subagent-unknown-parent", V1, verify, rule(T::SubagentStarted, R::UnknownParentSubagent), 1),
        corpus("life-subagent-finish-unstarted", V1, verify, rule(T::SubagentFinished, R::SubagentNotActive), 1),
        corpus("x-thinking-step-twice", V0, verify, rule(T::ThinkingStart, R::ThinkingStepActive), 2),
        corpus("life-thinking-end-no-start", V0, verify, rule(T::ThinkingEnd, R::NoThinkingStep), 1),
        corpus("x-thinking-message-twice", V0, verify, rule(T::ThinkingTextMessageStart, R::ThinkingMessageActive), 3),
        corpus("life-thinking-content-no-start", V0, verify, rule(T::ThinkingTextMessageContent, R::NoThinkingMessage), 1),
        inline("tool-args-not-one-json-value", tool_args_not_one_json_value, TOOL_ARGS, verify, rule(T::ToolCallEnd, R::ToolCallArgs), 3),
        // ------------------------------------------------- ChunkError
        corpus("chunk-text-no-id-after-tool", V1, chunks, ErrorKind::Chunk(ChunkError::MissingId(LaneKind::Text)), 2),
        corpus("x-chunk-tool-no-id", V1, chunks, ErrorKind::Chunk(ChunkError::MissingId(LaneKind::Tool)), 1),
        corpus("chunk-reasoning-first-no-id", V1, chunks, ErrorKind::Chunk(ChunkError::MissingId(LaneKind::Reasoning)), 1),
        corpus("chunk-tool-first-no-name", V1, chunks, ErrorKind::Chunk(ChunkError::MissingToolCallName), 1),
        corpus("x-chunk-role-mismatch", V1, chunks, ErrorKind::Chunk(ChunkError::Mismatch { kind: LaneKind::Text, field: Key::Role }), 2),
        corpus("x-chunk-name-mismatch", V1, chunks, ErrorKind::Chunk(ChunkError::Mismatch { kind: LaneKind::Text, field: Key::Name }), 2),
        corpus("chunk-tool-name-conflict", V1, chunks, ErrorKind::Chunk(ChunkError::Mismatch { kind: LaneKind::Tool, field: Key::ToolCallName }), 2),
        corpus("chunk-tool-parent-conflict", V1, chunks, ErrorKind::Chunk(ChunkError::Mismatch { kind: LaneKind::Tool, field: Key::ParentMessageId }), 2),
        corpus("chunk-subagent-tag-conflict", V1, chunks, ErrorKind::Chunk(ChunkError::SubagentMismatch(LaneKind::Text)), 2),
        corpus("x-chunk-tool-subagent-mismatch", V1, chunks, ErrorKind::Chunk(ChunkError::SubagentMismatch(LaneKind::Tool)), 2),
        inline("reasoning-chunk-names-another-subagents-lane", reasoning_chunk_names_another_subagents_lane, V1, chunks, ErrorKind::Chunk(ChunkError::SubagentMismatch(LaneKind::Reasoning)), 4),
        corpus("chunk-ambiguous-lanes", V1, chunks, ErrorKind::Chunk(ChunkError::Ambiguous { kind: LaneKind::Text, lanes: 2 }), 3),
        inline("nine-chunk-lanes", nine_chunk_lanes, V1, chunks, ErrorKind::Capacity(Capacity::Lanes), 1 + 8 + 1 + 7),
        // --------------------------------------------------- Capacity
        inline("frame-larger-than-the-buffer", frame_larger_than_the_buffer, BUFFER_4K, Stage::Sse, ErrorKind::Capacity(Capacity::FrameBuffer { capacity: 4096 }), 1),
        inline("json-1025-levels-deep", json_1025_levels_deep, V1, Stage::Json, ErrorKind::Capacity(Capacity::JsonDepth { limit: 1024 }), 1),
        inline("65-legacy-binary-parts", legacy_binary_parts_65, V1, Stage::Schema, ErrorKind::Capacity(Capacity::LegacyParts { budget: 4096 }), 1),
        inline("five-open-messages", five_open_messages, SMALL, verify, ErrorKind::Capacity(Capacity::OpenIds), 5),
        inline("forgotten-owner-of-a-reopened-message", forgotten_owner_of_a_reopened_message, ONE_OWNER, verify, ErrorKind::Capacity(Capacity::Owners), 7),
        inline("five-subagents-named", five_subagents_named, SMALL, verify, ErrorKind::Capacity(Capacity::Subagents), 5),
        inline("nine-tool-calls-checked-at-once", nine_tool_calls_checked_at_once, TOOL_ARGS, verify, ErrorKind::Capacity(Capacity::ToolArgs { capacity: 8 }), 9),
        inline("a-129-byte-message-id", a_129_byte_message_id, SMALL, verify, ErrorKind::Capacity(Capacity::IdBytes { capacity: 128 }), 1),
    ]
}

// ------------------------------------------------- the inline streams

fn tool_args_not_one_json_value() -> Vec<u8> {
    run_of([
        tool_start("c"),
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{\"a\":"}"#.to_owned(),
        r#"{"type":"TOOL_CALL_END","toolCallId":"c"}"#.to_owned(),
    ])
}

fn reasoning_chunk_names_another_subagents_lane() -> Vec<u8> {
    run_of([
        subagent_started("s1"),
        subagent_started("s2"),
        tagged(
            r#"{"type":"REASONING_MESSAGE_CHUNK","messageId":"r","delta":"x"}"#,
            "s1",
        ),
        tagged(
            r#"{"type":"REASONING_MESSAGE_CHUNK","messageId":"r","delta":"y"}"#,
            "s2",
        ),
    ])
}

fn nine_chunk_lanes() -> Vec<u8> {
    // The parent and eight subagents each stream a text chunk.
    let mut evs: Vec<String> = (1..=8)
        .map(|s| subagent_started(&format!("s{s}")))
        .collect();
    evs.push(r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"x"}"#.to_owned());
    evs.extend((1..=8).map(|s| {
        tagged(
            &format!(r#"{{"type":"TEXT_MESSAGE_CHUNK","messageId":"m{s}","delta":"x"}}"#),
            &format!("s{s}"),
        )
    }));
    evs.extend((1..=8).map(|s| subagent_finished(&format!("s{s}"))));
    run_of(evs)
}

fn frame_larger_than_the_buffer() -> Vec<u8> {
    run_of([format!(
        r#"{{"type":"TEXT_MESSAGE_START","messageId":"{}"}}"#,
        "x".repeat(5000)
    )])
}

fn json_1025_levels_deep() -> Vec<u8> {
    run_of([format!(
        r#"{{"type":"STATE_SNAPSHOT","snapshot":{}{}}}"#,
        "[".repeat(1024),
        "]".repeat(1024)
    )])
}

fn legacy_binary_parts_65() -> Vec<u8> {
    let part = r#"{"type":"binary","mimeType":"image/png","data":"x"}"#;
    let parts = vec![part; 65].join(",");
    run_of([format!(
        r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"id":"u","role":"user","content":[{parts}]}}]}}"#
    )])
}

fn forgotten_owner_of_a_reopened_message() -> Vec<u8> {
    // m1's record pushes out m0's (owned by s); m0 reopened by the
    // parent, then attributed to s: the verdict needs m0's owner.
    run_of([
        subagent_started("s"),
        tagged(&start("m0"), "s"),
        tagged(&end("m0"), "s"),
        start("m1"),
        end("m1"),
        start("m0"),
        tagged(
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m0","delta":"x"}"#,
            "s",
        ),
    ])
}

fn five_subagents_named() -> Vec<u8> {
    run_of((0..5).map(|s| {
        tagged(
            r#"{"type":"ACTIVITY_SNAPSHOT","messageId":"a","activityType":"x","content":{}}"#,
            &format!("s{s}"),
        )
    }))
}

fn five_open_messages() -> Vec<u8> {
    run_of((0..5).map(|i| start(&format!("m{i}"))))
}

/// One more than the eight calls the arguments check holds.
fn nine_tool_calls_checked_at_once() -> Vec<u8> {
    run_of((0..9).map(|i| tool_start(&format!("c{i}"))))
}

fn a_129_byte_message_id() -> Vec<u8> {
    run_of([start(&"x".repeat(129))])
}

// ------------------------------------------------------- the source walk

/// The variants of `pub enum NAME` as its definition under `src/` spells
/// them: each name, and the type in parentheses of a tuple variant.
fn variants(name: &str) -> Vec<(String, Option<String>)> {
    let header = format!("pub enum {name} {{");
    let mut found = Vec::new();
    for path in rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")) {
        let text = std::fs::read_to_string(&path).expect("a source file");
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.trim_start() != header {
                continue;
            }
            let indent = &line[..line.len() - line.trim_start().len()];
            let (close, inner) = (format!("{indent}}}"), format!("{indent}    "));
            let mut list = Vec::new();
            for line in lines.by_ref().take_while(|l| *l != close) {
                let Some(rest) = line.strip_prefix(&inner) else {
                    continue;
                };
                if !rest.starts_with(|c: char| c.is_ascii_uppercase()) {
                    continue; // docs, attributes, a struct variant's fields
                }
                let end = rest
                    .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .unwrap_or(rest.len());
                let payload = rest[end..]
                    .strip_prefix('(')
                    .and_then(|p| p.split_once(')'))
                    .map(|(p, _)| p.to_owned());
                list.push((rest[..end].to_owned(), payload));
            }
            found.push((path.clone(), list));
        }
    }
    assert_eq!(found.len(), 1, "`pub enum {name}` defined once under src/");
    let (path, list) = found.pop().expect("one");
    assert!(!list.is_empty(), "no variants read in {}", path.display());
    list
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// What needs a case: `(enum, variant)`, a tuple variant over a payload
/// enum once per payload variant (`NotOpen(Step)`), in declaration order.
fn required() -> Vec<(&'static str, String)> {
    let payloads: BTreeMap<&str, Vec<String>> = PAYLOADS
        .iter()
        .map(|p| (*p, variants(p).into_iter().map(|(v, _)| v).collect()))
        .collect();
    let mut out = Vec::new();
    for e in CHECKED {
        for (v, payload) in variants(e) {
            match payload.as_deref().and_then(|p| payloads.get(p)) {
                Some(inner) => out.extend(inner.iter().map(|i| (e, format!("{v}({i})")))),
                None => out.push((e, v)),
            }
        }
    }
    out
}

/// `Variant`, or `Variant(Payload)` for a tuple variant over a payload
/// enum, from a value's `Debug` form (`Mismatch { kind: Text, .. }` is
/// `Mismatch`).
fn variant_of(debug: &str) -> String {
    let name_end = debug
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(debug.len());
    match debug[name_end..].strip_prefix('(') {
        Some(inner)
            if inner.ends_with(')')
                && inner[..inner.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric()) =>
        {
            debug.to_owned()
        }
        _ => debug[..name_end].to_owned(),
    }
}

/// What an error reaches: the rule, chunk error or capacity it names (a
/// capacity the normalizer reports is also `ChunkError::Capacity`).
fn reached(stage: Stage, kind: &ErrorKind) -> Vec<(&'static str, String)> {
    match kind {
        ErrorKind::Verify { rule, .. } => vec![("Rule", variant_of(&format!("{rule:?}")))],
        ErrorKind::Chunk(c) => vec![("ChunkError", variant_of(&format!("{c:?}")))],
        ErrorKind::Capacity(c) => {
            let mut out = vec![("Capacity", variant_of(&format!("{c:?}")))];
            if stage == Stage::Chunks {
                out.push(("ChunkError", "Capacity".to_owned()));
            }
            out
        }
        _ => Vec::new(),
    }
}

// ------------------------------------------------------------- the tests

/// A case's stream.
fn stream_of(case: &Case) -> Vec<u8> {
    match case.stream {
        Stream::Inline(make) => make(),
        Stream::Corpus(name) => {
            let dir = support::corpus_dir().join(if name.starts_with("x-") {
                "extra"
            } else {
                "conformance"
            });
            support::read(&dir.join(format!("{name}.sse")))
        }
    }
}

/// The frame starting at `offset` (or holding it), on one line, shortened.
fn frame_at(stream: &[u8], offset: u64) -> String {
    let at = (offset as usize).min(stream.len());
    let start = stream[..at]
        .windows(2)
        .rposition(|w| w == b"\n\n")
        .map_or(0, |i| i + 2);
    let end = stream[start..]
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or(stream.len(), |i| start + i);
    let text = String::from_utf8_lossy(&stream[start..end]).replace('\n', "\\n");
    match text.char_indices().nth(100) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// Each case stops with exactly its error, and every variant of the
/// checked enums is reached by at least one case; prints the map.
#[test]
fn every_variant_is_reached_by_a_named_case() {
    let required = required();
    let unreachable: BTreeSet<(&str, &str)> = UNREACHABLE.iter().map(|&(e, v, _)| (e, v)).collect();
    // variant → (case, setup, frame, the frame's text, message)
    let mut map: BTreeMap<(&str, String), Vec<String>> = BTreeMap::new();
    let mut names = BTreeSet::new();
    for case in cases() {
        assert!(names.insert(case.name), "two cases named {}", case.name);
        let stream = stream_of(&case);
        let out = (case.setup.run)(&stream);
        let e = match out.result {
            Err(e) => e,
            Ok(s) => panic!("{}: no error, {s:?}", case.name),
        };
        assert_eq!(
            (e.stage, e.kind, e.frame),
            (case.stage, case.kind, case.frame),
            "{} ({})",
            case.name,
            case.setup.name
        );
        let keys = reached(e.stage, &e.kind);
        assert!(
            !keys.is_empty(),
            "{}: {e:?} reaches no checked enum",
            case.name
        );
        for key in keys {
            assert!(
                required.contains(&(key.0, key.1.clone()))
                    && !unreachable.contains(&(key.0, key.1.as_str())),
                "{}: {}::{} is not a variant the source walk found",
                case.name,
                key.0,
                key.1
            );
            let source = match case.stream {
                Stream::Corpus(name) if name.starts_with("x-") => "corpus/extra",
                Stream::Corpus(_) => "corpus/conformance",
                Stream::Inline(_) => "rules.rs",
            };
            map.entry(key).or_default().push(format!(
                "{} [{source}, {}]\n        frame {}: {}\n        {}",
                case.name,
                case.setup.name,
                e.frame,
                frame_at(&stream, e.offset),
                out.message.as_deref().unwrap_or("")
            ));
        }
    }
    let mut missing = Vec::new();
    for e in CHECKED {
        println!("\n{e}");
        for (_, v) in required.iter().filter(|(x, _)| *x == e) {
            if let Some(&(_, _, why)) = UNREACHABLE.iter().find(|(x, u, _)| *x == e && u == v) {
                println!("  {v}: unreachable ({why})");
                continue;
            }
            match map.get(&(e, v.clone())) {
                Some(cases) => {
                    for c in cases {
                        println!("  {v}: {c}");
                    }
                }
                None => missing.push(format!("{e}::{v}")),
            }
        }
    }
    assert!(missing.is_empty(), "variants without a case: {missing:?}");
    // The walk read the enums (a parser that found nothing would pass).
    for (e, at_least) in [("Rule", 21), ("ChunkError", 6), ("Capacity", 9)] {
        let n = variants(e).len();
        assert!(n >= at_least, "{e}: {n} variants read");
    }
    for (e, v, _) in UNREACHABLE {
        assert!(
            required.contains(&(*e, (*v).to_owned())),
            "{e}::{v} is no variant"
        );
    }
}

/// The corpus as an index by rule: every corpus case that stops at a
/// lifecycle rule or a chunk error, in both dialects, is listed under it,
/// and each reaches a variant the map above knows.
#[test]
fn the_corpus_indexed_by_rule() {
    let required = required();
    let mut index: BTreeMap<(&str, String), BTreeSet<String>> = BTreeMap::new();
    let extra = support::manifest_in(&support::extra_dir());
    let mut cases = 0;
    for case in support::manifest().into_iter().chain(extra) {
        let stream = case.stream();
        for (setup, dialect) in [(V1, "V1"), (V0, "V0")] {
            let Err(e) = (setup.run)(&stream).result else {
                continue;
            };
            for key in reached(e.stage, &e.kind) {
                assert!(required.contains(&key), "{}: {key:?}", case.name);
                index
                    .entry(key)
                    .or_default()
                    .insert(format!("{} ({dialect})", case.name));
                cases += 1;
            }
        }
    }
    assert!(cases > 100, "{cases} corpus runs stopped at a rule");
    for ((e, v), names) in &index {
        println!(
            "{e}::{v}: {}",
            names.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
}
