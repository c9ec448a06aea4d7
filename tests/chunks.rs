//! Property: a stream written with `*_CHUNK` shorthand and the same stream
//! expanded by hand into START / CONTENT / END produce the same verified
//! output, in both dialects, for many generated streams.

mod support;

use agui_stream::Dialect;
use support::{dialect_name, run, sse};

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Tool,
    Reasoning,
}

/// The open chunk stream, as the explicit form must close it.
struct Open {
    kind: Kind,
    id: String,
}

fn end_event(open: &Open) -> String {
    match open.kind {
        Kind::Text => format!(r#"{{"type":"TEXT_MESSAGE_END","messageId":"{}"}}"#, open.id),
        Kind::Tool => format!(r#"{{"type":"TOOL_CALL_END","toolCallId":"{}"}}"#, open.id),
        Kind::Reasoning => format!(
            r#"{{"type":"REASONING_MESSAGE_END","messageId":"{}"}}"#,
            open.id
        ),
    }
}

/// Builds one run in both forms: (chunk form, explicit form).
fn generate(rng: &mut Rng) -> (Vec<String>, Vec<String>) {
    let mut chunked = Vec::new();
    let mut explicit = Vec::new();
    let both = |c: &mut Vec<String>, e: &mut Vec<String>, ev: String| {
        c.push(ev.clone());
        e.push(ev);
    };
    both(
        &mut chunked,
        &mut explicit,
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#.to_owned(),
    );
    let mut open: Option<Open> = None;
    let mut serial = 0;
    for _ in 0..rng.below(12) + 1 {
        match rng.below(10) {
            // A chunk stream: opener plus continuations.
            0..=6 => {
                let kind = match rng.below(3) {
                    0 => Kind::Text,
                    1 => Kind::Tool,
                    _ => Kind::Reasoning,
                };
                // Sometimes continue the open stream by naming its id.
                let reuse = open.as_ref().filter(|o| o.kind == kind && rng.chance(30));
                let id = match reuse {
                    Some(o) => o.id.clone(),
                    None => {
                        serial += 1;
                        format!("{}{serial}", ["m", "c", "r"][kind as usize])
                    }
                };
                let continues = reuse.is_some();
                if !continues && let Some(o) = open.take() {
                    explicit.push(end_event(&o));
                }
                let meta = if rng.chance(20) {
                    r#","metadata":{"k":1}"#
                } else {
                    ""
                };
                let delta = format!("d{}", rng.below(100));
                let (id_key, chunk_type, start, content) = match kind {
                    Kind::Text => (
                        "messageId",
                        "TEXT_MESSAGE_CHUNK",
                        format!(
                            r#"{{"type":"TEXT_MESSAGE_START","messageId":"{id}","role":"assistant"{meta}}}"#
                        ),
                        "TEXT_MESSAGE_CONTENT",
                    ),
                    Kind::Tool => (
                        "toolCallId",
                        "TOOL_CALL_CHUNK",
                        format!(
                            r#"{{"type":"TOOL_CALL_START","toolCallId":"{id}","toolCallName":"f"{meta}}}"#
                        ),
                        "TOOL_CALL_ARGS",
                    ),
                    Kind::Reasoning => (
                        "messageId",
                        "REASONING_MESSAGE_CHUNK",
                        format!(
                            r#"{{"type":"REASONING_MESSAGE_START","messageId":"{id}","role":"reasoning"{meta}}}"#
                        ),
                        "REASONING_MESSAGE_CONTENT",
                    ),
                };
                let name = if kind == Kind::Tool && !continues {
                    r#","toolCallName":"f""#
                } else {
                    ""
                };
                chunked.push(format!(
                    r#"{{"type":"{chunk_type}","{id_key}":"{id}"{name},"delta":"{delta}"{meta}}}"#
                ));
                if !continues {
                    explicit.push(start);
                }
                explicit.push(format!(
                    r#"{{"type":"{content}","{id_key}":"{id}","delta":"{delta}"{meta}}}"#
                ));
                for _ in 0..rng.below(4) {
                    if rng.chance(25) {
                        // Metadata only: an empty CONTENT keeps it.
                        chunked.push(format!(r#"{{"type":"{chunk_type}","metadata":{{"n":2}}}}"#));
                        explicit.push(format!(
                            r#"{{"type":"{content}","{id_key}":"{id}","delta":"","metadata":{{"n":2}}}}"#
                        ));
                    } else {
                        let delta = format!("x{}", rng.below(100));
                        chunked.push(format!(r#"{{"type":"{chunk_type}","delta":"{delta}"}}"#));
                        explicit.push(format!(
                            r#"{{"type":"{content}","{id_key}":"{id}","delta":"{delta}"}}"#
                        ));
                    }
                }
                open = Some(Open { kind, id });
            }
            // An explicit event that closes the open stream first.
            7 | 8 => {
                if let Some(o) = open.take() {
                    explicit.push(end_event(&o));
                }
                let ev = if rng.chance(50) {
                    r#"{"type":"STATE_SNAPSHOT","snapshot":{"a":1}}"#
                } else {
                    r#"{"type":"CUSTOM","name":"n","value":1}"#
                };
                both(&mut chunked, &mut explicit, ev.to_owned());
            }
            // One that does not.
            _ => both(
                &mut chunked,
                &mut explicit,
                r#"{"type":"RAW","event":{"x":1}}"#.to_owned(),
            ),
        }
    }
    if let Some(o) = open.take() {
        explicit.push(end_event(&o));
    }
    both(
        &mut chunked,
        &mut explicit,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#.to_owned(),
    );
    (chunked, explicit)
}

#[test]
fn chunk_streams_equal_their_hand_expansion() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut events = 0;
    for case in 0..500 {
        let (chunked, explicit) = generate(&mut rng);
        for dialect in [Dialect::V1, Dialect::V0] {
            let a = run(&sse(&chunked), dialect, 7);
            let b = run(&sse(&explicit), dialect, 64);
            assert_eq!(
                a.lines(),
                b.lines(),
                "case {case} {}:\nchunked:\n{}\nexplicit:\n{}",
                dialect_name(dialect),
                chunked.join("\n"),
                explicit.join("\n")
            );
            assert_eq!(a.result.to_string(), r#"{"result":"ok"}"#, "case {case}");
            events += a.events.len();
        }
    }
    assert!(events > 5000, "only {events} events compared");
}
