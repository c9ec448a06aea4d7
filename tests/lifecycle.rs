//! The stop/monitor policies and the end-of-stream report, through the
//! public pipeline API. The verifier's capacities are in `capacity.rs`;
//! one named case for every lifecycle rule is in `rules.rs`.

mod support;

use support::record::Recorder;
use support::{RUN_FINISHED, RUN_STARTED, end, sse, start};

use agui_stream::{
    Config, Dialect, ErrorKind, Event, FrameInfo, Pipeline, Policy, Stage,
    verify::{Rule, RunPhase},
};

fn faulty_stream() -> Vec<u8> {
    sse(&[
        RUN_STARTED.into(),
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"ghost","delta":"x"}"#.into(),
        start("m1"),
        r#"{"type":"TEXT_MESSAGE_START"}"#.into(),
        r#"{"type":"TOOL_CALL_CHUNK","delta":"{}"}"#.into(),
        end("m1"),
        RUN_FINISHED.into(),
    ])
}

#[test]
fn stop_policy_stops_at_the_first_violation() {
    let stream = faulty_stream();
    let mut buf = vec![0u8; 4096];
    let mut p = Pipeline::new(&mut buf, Config::new());
    let mut sink = Recorder::new();
    let e = p.push(&stream, &mut sink).unwrap_err();
    assert_eq!((e.stage, e.frame), (Stage::Verify, 1));
    assert_eq!(
        e.kind,
        ErrorKind::Verify {
            event: agui_stream::EventType::TextMessageContent,
            rule: Rule::NotOpen(agui_stream::verify::Entity::TextMessage),
        }
    );
    assert_eq!(
        p.message(&e).to_string(),
        "Cannot send 'TEXT_MESSAGE_CONTENT' event: No active text message found with ID 'ghost'. \
         Start a text message with 'TEXT_MESSAGE_START' first."
    );
    assert_eq!(sink.event_types(), ["RUN_STARTED"]);
    assert_eq!(sink.violations().count(), 0);
    // Stopped for good.
    assert_eq!(p.finish(&mut sink), Err(e));
}

#[test]
fn monitor_policy_reports_and_keeps_verifying() {
    let stream = faulty_stream();
    for dialect in [Dialect::V1, Dialect::V0] {
        let mut buf = vec![0u8; 4096];
        let config = Config::new().dialect(dialect);
        let mut p = Pipeline::new(&mut buf, config).policy(Policy::Monitor);
        let mut sink = Recorder::new();
        p.push(&stream, &mut sink).unwrap();
        let summary = p.finish(&mut sink).unwrap();
        // The bad frames are skipped; everything else is verified as usual.
        assert_eq!(
            sink.event_types(),
            [
                "RUN_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_END",
                "RUN_FINISHED"
            ]
        );
        let stages: Vec<(Stage, u64)> = sink
            .violations()
            .map(|(e, _, _)| (e.stage, e.frame))
            .collect();
        assert_eq!(
            stages,
            [(Stage::Verify, 1), (Stage::Schema, 3), (Stage::Chunks, 4)]
        );
        assert_eq!(
            sink.violations().nth(2).map(|(_, _, m)| m),
            Some("First TOOL_CALL_CHUNK must have a toolCallId")
        );
        assert_eq!(summary.violations, 3);
        assert!(summary.is_complete());
    }
}

#[test]
fn end_of_stream_report_names_what_is_open() {
    let stream = sse(&[
        RUN_STARTED.into(),
        r#"{"type":"STEP_STARTED","stepName":"plan"}"#.into(),
        start("m1"),
        r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","toolCallName":"f","delta":"{"}"#.into(),
    ]);
    let mut buf = vec![0u8; 4096];
    let mut p = Pipeline::new(&mut buf, Config::new());
    let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
    p.push(&stream, &mut sink).unwrap();
    let s = p.finish(&mut sink).unwrap();
    assert_eq!(s.run, RunPhase::Active);
    assert_eq!(
        (
            s.open.steps,
            s.open.text_messages,
            s.open.tool_calls,
            s.open.chunk_lanes
        ),
        (1, 1, 1, 1)
    );
    assert!(!s.is_complete());
    let open: Vec<String> = p
        .verifier()
        .open_ids(agui_stream::verify::Entity::ToolCall)
        .map(|id| id.to_string())
        .collect();
    assert_eq!(open, ["c1"]);

    // Strict: the same stream is an error at the end.
    let mut buf = vec![0u8; 4096];
    let mut p = Pipeline::new(&mut buf, Config::new().strict_end(true));
    p.push(&stream, &mut sink).unwrap();
    let e = p.finish(&mut sink).unwrap_err();
    assert_eq!((e.kind, e.stage), (ErrorKind::Incomplete, Stage::End));

    // A clean stream is complete.
    let clean = sse(&[RUN_STARTED, RUN_FINISHED]);
    let mut buf = vec![0u8; 4096];
    let mut p = Pipeline::new(&mut buf, Config::new().strict_end(true));
    p.push(&clean, &mut sink).unwrap();
    assert!(p.finish(&mut sink).unwrap().is_complete());
}

#[test]
fn cut_stream_is_reported() {
    let mut stream = sse(&[RUN_STARTED]);
    stream.extend_from_slice(br#"data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#);
    let mut buf = vec![0u8; 4096];
    let mut p = Pipeline::new(&mut buf, Config::new());
    let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
    p.push(&stream, &mut sink).unwrap();
    let s = p.finish(&mut sink).unwrap();
    assert!(s.unterminated_frame);
    assert_eq!(s.run, RunPhase::Finished);
    assert!(!s.is_complete());
}
