//! Runs of deltas: the frames that continue the last one.
//!
//! A model streams an answer as hundreds of frames in a row that differ only
//! in their delta:
//!
//! ```text
//! data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"Hel"}
//!
//! data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"lo","timestamp":1700000000049}
//! ```
//!
//! Once such a frame has gone through every stage and passed, the next
//! frame that repeats its bytes up to its delta reaches the same verdict in
//! every stage but the schema's: the same type and id, an entity the
//! verifier has open, a normalizer with no chunk lane open, a translator
//! with nothing to translate, and none of them changes its state for it.
//! So the pipeline checks only what differs — the delta (a JSON string),
//! an optional integer `timestamp`, the end of the object and of the block
//! — and hands the event to the sink, without the framer's line machine or
//! the stages (a frame wholly in the push), or without the stages (a frame
//! the framer put together from several pushes). Anything else ends the
//! run and takes the general path.
//!
//! Chunk continuations make runs too: once `{"type":"TEXT_MESSAGE_CHUNK",
//! "delta":…}` (nothing but the delta and a timestamp) has given its lane's
//! CONTENT and nothing else, the next frame of that shape gives the same
//! lane's CONTENT (`TOOL_CALL_CHUNK` its ARGS, `REASONING_MESSAGE_CHUNK` its
//! CONTENT), made here as the normalizer makes it.
//! `tests::runs_give_what_the_general_path_gives` compares both on the
//! corpus's streams and on streams built at a run's edges, in several push
//! sizes.

use crate::check::normalize::LaneKind;
use crate::input::json::string_end;
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key};
use crate::view::event::Event;
use crate::view::json::RawJson;
use crate::view::scan::{digits_end, same_bytes};

/// The longest prefix a run remembers (type, id and the `delta` name):
/// ids up to about 70 bytes.
const PREFIX: usize = 128;

/// The frame a run continues: its payload's bytes up to its delta's value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeltaRun {
    /// The type of the frames (a `*_CHUNK` for a chunk run).
    input_type: EventType,
    /// The type of the event the sink gets (the chunk's CONTENT or ARGS).
    ty: EventType,
    id_key: Key,
    /// `{"type":"T","idKey":"id","delta":`; for a chunk run,
    /// `{"type":"T_CHUNK","delta":` and then its lane's id (JSON).
    bytes: [u8; PREFIX],
    /// The prefix's length.
    len: u8,
    /// Where the id's JSON string (quotes included) lies in `bytes`.
    id: (u8, u8),
}
/// One frame of a run, where its parts lie in the input (small, so that
/// the event is built once, in place: on wasm a moved event is a
/// `memory.copy`, a call in V8).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunFrame {
    /// The block's length: `data: `, the payload, the blank line.
    pub(crate) len: usize,
    /// The payload's start and end; the delta's and the timestamp's ranges.
    payload_at: usize,
    payload_end: usize,
    delta: (usize, usize),
    timestamp: Option<(usize, usize)>,
}

impl DeltaRun {
    /// The run a passed frame starts, if its payload has the shape
    /// `{"type":"T","idKey":"id","delta":…` (`T` a delta type, the id
    /// without escapes).
    pub(crate) fn starting(payload: &[u8], ty: EventType) -> Option<Self> {
        let id_key = LaneKind::of_content(ty)?.id_key();
        let (type_name, id_name) = (ty.as_str().as_bytes(), id_key.as_str().as_bytes());
        let rest = payload.strip_prefix(b"{\"type\":\"")?;
        let rest = rest.strip_prefix(type_name)?;
        let rest = rest.strip_prefix(b"\",\"")?;
        let rest = rest.strip_prefix(id_name)?;
        let rest = rest.strip_prefix(b"\":")?;
        let id_start = payload.len().checked_sub(rest.len())?;
        let id_end = string_end(payload, id_start).ok()?;
        let id = payload.get(id_start..id_end)?;
        if memchr::memchr(b'\\', id).is_some() {
            return None;
        }
        let len = id_end.checked_add(9)?;
        if payload.get(id_end..len)? != b",\"delta\":" || len > PREFIX {
            return None;
        }
        let mut bytes = [0u8; PREFIX];
        bytes.get_mut(..len)?.copy_from_slice(payload.get(..len)?);
        Some(DeltaRun {
            input_type: ty,
            ty,
            id_key,
            bytes,
            len: u8::try_from(len).ok()?,
            id: (u8::try_from(id_start).ok()?, u8::try_from(id_end).ok()?),
        })
    }

    /// The run a passed chunk continuation starts: a frame that is exactly
    /// `{"type":"T_CHUNK","delta":…}` (and an integer `timestamp`), which
    /// gave one event, the CONTENT (ARGS) of its lane, whose id is
    /// `lane_id` (JSON) and which names no owner.
    pub(crate) fn chunk(payload: &[u8], input_type: EventType, lane_id: &[u8]) -> Option<Self> {
        let kind = LaneKind::of_chunk(input_type)?;
        let [_, ty, _] = kind.expansion();
        let (type_name, id_key) = (input_type.as_str().as_bytes(), kind.id_key());
        let rest = payload.strip_prefix(b"{\"type\":\"")?;
        let rest = rest.strip_prefix(type_name)?;
        rest.strip_prefix(b"\",\"delta\":")?;
        let len = payload.len().checked_sub(rest.len())?.checked_add(10)?;
        let id_end = len.checked_add(lane_id.len())?;
        let mut bytes = [0u8; PREFIX];
        bytes.get_mut(..len)?.copy_from_slice(payload.get(..len)?);
        bytes.get_mut(len..id_end)?.copy_from_slice(lane_id);
        let run = DeltaRun {
            input_type,
            ty,
            id_key,
            bytes,
            len: u8::try_from(len).ok()?,
            id: (u8::try_from(len).ok()?, u8::try_from(id_end).ok()?),
        };
        // The frame itself has the run's shape: nothing but the delta and
        // a timestamp, so no id, owner or opener field to resolve or agree.
        run.in_payload(payload)?;
        Some(run)
    }

    /// A chunk run: its events are the pipeline's, not the frames'.
    pub(crate) fn expands(&self) -> bool {
        self.input_type != self.ty
    }

    /// The frames' type.
    pub(crate) fn input_type(&self) -> EventType {
        self.input_type
    }

    /// The frame at the start of `input`, if it continues the run: `data: `,
    /// the prefix, a JSON string, optionally `,"timestamp":` and an integer
    /// of 1 to 15 digits, `}`, and the blank line (LF, LF).
    #[inline]
    pub(crate) fn next(&self, input: &[u8]) -> Option<RunFrame> {
        if input.first_chunk::<6>() != Some(b"data: ") {
            return None;
        }
        let mut frame = self.read(input, 6)?;
        if input.get(frame.payload_end..)?.first_chunk::<2>() != Some(b"\n\n") {
            return None;
        }
        frame.len = frame.payload_end.checked_add(2)?;
        crate::testing::count_work(frame.len);
        Some(frame)
    }

    /// The same for a frame's payload the framer has put together (a frame
    /// that spanned pushes): the prefix, the delta, the timestamp, `}`.
    #[inline]
    pub(crate) fn in_payload(&self, payload: &[u8]) -> Option<RunFrame> {
        let frame = self.read(payload, 0)?;
        crate::testing::count_work(payload.len());
        (frame.payload_end == payload.len()).then_some(frame)
    }

    /// The payload at `payload_at` up to its `}`, if it continues the run.
    #[inline(always)]
    fn read(&self, input: &[u8], payload_at: usize) -> Option<RunFrame> {
        let prefix = self.bytes.get(..usize::from(self.len))?;
        let delta_at = payload_at.checked_add(prefix.len())?;
        if !same_bytes(input.get(payload_at..delta_at)?, prefix)
            || input.get(delta_at) != Some(&b'"')
        {
            return None;
        }
        let delta_end = string_end(input, delta_at).ok()?;
        let mut at = delta_end;
        let mut timestamp = None;
        if input.get(at) == Some(&b',') {
            let digits_at = at.checked_add(13)?;
            if input.get(at..)?.first_chunk::<13>() != Some(b",\"timestamp\":") {
                return None;
            }
            let end = digits_end(input, digits_at);
            let digits = input.get(digits_at..end)?;
            let plain = matches!(digits.len(), 1..=15)
                && (digits.len() == 1 || digits.first() != Some(&b'0'));
            if !plain {
                return None;
            }
            timestamp = Some((digits_at, end));
            at = end;
        }
        if input.get(at) != Some(&b'}') {
            return None;
        }
        let payload_end = at.checked_add(1)?;
        Some(RunFrame {
            len: payload_end,
            payload_at,
            payload_end,
            delta: (delta_at, delta_end),
            timestamp,
        })
    }

    /// The event of `frame`, read from the same `input`: the frame's own, or
    /// (a chunk run) the CONTENT or ARGS of its lane.
    #[inline(always)]
    pub(crate) fn event<'a>(
        &'a self,
        input: &'a [u8],
        frame: &RunFrame,
        dialect: Dialect,
    ) -> Event<'a> {
        let at = |(a, b): (usize, usize)| input.get(a..b).map(RawJson::exact);
        let payload = input
            .get(frame.payload_at..frame.payload_end)
            .unwrap_or_default();
        let id = (usize::from(self.id.0), usize::from(self.id.1));
        let (object, id) = if self.expands() {
            (None, self.bytes.get(id.0..id.1))
        } else {
            (Some(RawJson::exact(payload)), payload.get(id.0..id.1))
        };
        let mut event = Event::empty(self.ty, dialect, object);
        event.set(self.id_key, id.map(RawJson::exact));
        event.set(Key::Delta, at(frame.delta));
        if !self.expands() {
            event.set(Key::Timestamp, frame.timestamp.and_then(at));
        }
        event
    }
}

/// Streams at the run's edges: long runs, and runs broken every way a
/// frame can differ from the one before.
#[cfg(test)]
pub(crate) fn edge_streams() -> impl Iterator<Item = std::vec::Vec<u8>> {
    extern crate std;
    use std::format;
    use std::vec::Vec;
    let start = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
                 data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m1\",\"role\":\"assistant\"}\n\n\
                 data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c1\",\"toolCallName\":\"search\"}\n\n";
    let text = |d: &str| {
        format!(
            "data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":{d}}}\n\n"
        )
    };
    let args = |d: &str| {
        format!("data: {{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"c1\",\"delta\":{d}}}\n\n")
    };
    let breaks = [
        // Members, values and spellings a run does not take.
        text("\"a\",\"timestamp\":17"),
        text("\"a\",\"timestamp\":017"),
        text("\"a\",\"timestamp\":1234567890123456"),
        text("\"a\",\"timestamp\":-1"),
        text("\"a\",\"timestamp\":1.5"),
        text("\"a\",\"timestamp\":null"),
        text("\"a\",\"rawEvent\":{}"),
        text("\"a\",\"subagentRunId\":\"s\""),
        text("\"a\",\"delta\":\"b\""),
        text("\"q\\\"\\\\\\n\\u00e9\\ud83d x\""),
        text("\"\""),
        text("\"bad \\x\""),
        text("5"),
        text("\"a\" "),
        text("\"a\"}"),
        text("\"a\",\"timestamp\":5}x"),
        "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"a\"}\r\n\r\n".into(),
        "data:{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"a\"}\n\n".into(),
        "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"a\"}\n\n\n".into(),
        ": keep-alive\n\n".into(),
        ": a comment\r\n\r\n".into(),
        "event: x\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"a\"}\n\n".into(),
        "id: 9\n\n".into(),
        "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\n\"delta\":\"a\"}\n\n".into(),
        "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"a\"}\ndata: {}\n\n".into(),
        "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\\u0031\",\"delta\":\"a\"}\n\n".into(),
        // Another message, a chunk lane, the end of the message.
        "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m2\",\"delta\":\"a\"}\n\n".into(),
        "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m3\",\"delta\":\"a\"}\n\n".into(),
        args("\"{\\\"q\\\":\""),
        "data: {\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c1\"}\n\n".into(),
        args("\"1}\""),
        "data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m1\"}\n\n".into(),
    ];
    // Chunk continuations: runs of them, and each way one can differ.
    let chunk = |ty: &str, d: &str| format!("data: {{\"type\":\"{ty}\",\"delta\":{d}}}\n\n");
    let lanes = "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"lane-1\",\"delta\":\"a\"}\n\n\
                 data: {\"type\":\"TOOL_CALL_CHUNK\",\"toolCallId\":\"c9\",\"toolCallName\":\"search\",\"delta\":\"{\"}\n\n\
                 data: {\"type\":\"REASONING_MESSAGE_CHUNK\",\"messageId\":\"r\\u0031\",\"delta\":\"a\"}\n\n";
    let chunk_breaks = [
        chunk("TEXT_MESSAGE_CHUNK", "\"x\",\"timestamp\":9"),
        chunk("TEXT_MESSAGE_CHUNK", "\"x\",\"messageId\":\"lane-1\""),
        chunk("TEXT_MESSAGE_CHUNK", "\"x\",\"messageId\":\"lane-2\""),
        chunk("TEXT_MESSAGE_CHUNK", "\"x\",\"role\":\"user\""),
        chunk("TEXT_MESSAGE_CHUNK", "\"x\",\"subagentRunId\":\"s\""),
        chunk("TEXT_MESSAGE_CHUNK", "\"x\",\"rawEvent\":{}"),
        chunk("TOOL_CALL_CHUNK", "\"1}\""),
        chunk("TOOL_CALL_CHUNK", "\"x\",\"toolCallName\":\"other\""),
        chunk("REASONING_MESSAGE_CHUNK", "\"y\""),
        chunk("TEXT_MESSAGE_CHUNK", "\"\""),
        "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"delta\":\"x\"}\r\n\r\n".into(),
        "data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"lane-1\"}\n\n".into(),
        text("\"after the lanes\""),
    ];
    let mut streams = Vec::new();
    for b in &chunk_breaks {
        let mut s = String::from(start);
        s.push_str(lanes);
        for k in 0..5 {
            s.push_str(&chunk("TEXT_MESSAGE_CHUNK", &format!("\"c{k}\"")));
            s.push_str(&chunk(
                "TEXT_MESSAGE_CHUNK",
                &format!("\"t{k}\",\"timestamp\":{k}"),
            ));
        }
        s.push_str(b);
        for k in 0..5 {
            s.push_str(&chunk("TOOL_CALL_CHUNK", &format!("\"{k}\"")));
            s.push_str(&chunk("REASONING_MESSAGE_CHUNK", &format!("\"{k}\"")));
            s.push_str(&chunk("TEXT_MESSAGE_CHUNK", &format!("\"{k}\"")));
        }
        streams.push(s.into_bytes());
    }
    // Each break between runs of the same frame; then every break in a row.
    for b in &breaks {
        let mut s = String::from(start);
        for k in 0..6 {
            s.push_str(&text(&format!("\"d{k}\"")));
            s.push_str(&text(&format!("\"t{k}\",\"timestamp\":{k}")));
        }
        s.push_str(b);
        for k in 0..6 {
            s.push_str(&text(&format!("\"e{k}\"")));
            s.push_str(&args(&format!("\"{k}\"")));
        }
        streams.push(s.into_bytes());
    }
    let mut all = String::from(start);
    for b in &breaks {
        all.push_str(&text("\"x\""));
        all.push_str(&text("\"y\""));
        all.push_str(b);
    }
    all.push_str("data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n");
    streams.push(all.into_bytes());
    use std::string::String;
    streams.into_iter()
}

#[cfg(test)]
mod tests {
    extern crate std;
    use core::ops::ControlFlow;
    use std::format;
    use std::string::String;

    use crate::pipeline::{Config, Error, FrameInfo, Pipeline, Policy, Sink, Skipped};
    use crate::protocol::dialect::Dialect;
    use crate::view::event::Event;

    /// Everything a sink is told, as text.
    struct Log(String);

    impl Sink for Log {
        fn event(&mut self, event: &Event<'_>, f: &FrameInfo) -> ControlFlow<()> {
            self.0.push_str(&format!("{event:?} {f:?}\n"));
            ControlFlow::Continue(())
        }
        fn violation(
            &mut self,
            error: &Error,
            f: &FrameInfo,
            message: &dyn core::fmt::Display,
        ) -> ControlFlow<()> {
            self.0.push_str(&format!("! {error:?} {f:?} {message}\n"));
            ControlFlow::Continue(())
        }
        fn skipped(&mut self, skipped: &Skipped) -> ControlFlow<()> {
            self.0.push_str(&format!("- {skipped:?}\n"));
            ControlFlow::Continue(())
        }
    }

    fn run(stream: &[u8], config: Config, policy: Policy, piece: usize) -> String {
        let mut buf = [0u8; 1024];
        let mut p = Pipeline::new(&mut buf, config).policy(policy);
        let mut log = Log(String::new());
        for chunk in stream.chunks(piece) {
            let read = p.push(chunk, &mut log);
            log.0.push_str(&format!("push {read:?}\n"));
        }
        let end = p.finish(&mut log);
        log.0
            .push_str(&format!("finish {end:?} {} {}\n", p.frames(), p.offset()));
        log.0
    }

    /// The events, frame details, violations, skipped blocks, results and
    /// counts are the general path's, over every corpus stream and the
    /// edge streams, in both dialects, under both policies (and with the
    /// tool-argument check), in pushes of several sizes.
    #[test]
    #[cfg_attr(miri, ignore = "the whole corpus")]
    fn runs_give_what_the_general_path_gives() {
        let mut streams = crate::testing::corpus_streams();
        streams.extend(super::edge_streams());
        let configs = [
            Config::new(),
            Config::new().dialect(Dialect::V0),
            Config::new().check_tool_args(true),
        ];
        let mut runs = 0;
        for stream in &streams {
            for config in configs {
                for policy in [Policy::Stop, Policy::Monitor] {
                    for piece in [usize::MAX, 1460, 61, 7] {
                        let fast = run(stream, config, policy, piece);
                        let general =
                            crate::testing::general_only(|| run(stream, config, policy, piece));
                        assert!(
                            fast == general,
                            "{config:?} {policy:?} {piece}\n{}",
                            String::from_utf8_lossy(stream)
                        );
                        runs += 1;
                    }
                }
            }
        }
        assert!(runs > 1000);
    }

    /// A run takes the frames that continue it, and no other.
    #[test]
    fn a_run_takes_what_continues_it() {
        use super::DeltaRun;
        use crate::protocol::event_type::EventType;
        let first = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a","x":1}"#;
        let run = DeltaRun::starting(first, EventType::TextMessageContent).expect("a run");
        let taken = |input: &[u8]| {
            run.next(input)
                .map(|f| (f.len, format!("{:?}", run.event(input, &f, Dialect::V1))))
        };
        let next = b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"b\\n\",\"timestamp\":7}\n\nrest";
        let (len, event) = taken(next).expect("continues");
        assert_eq!(len, next.len() - 4);
        assert_eq!(
            event,
            r#"TEXT_MESSAGE_CONTENT { timestamp: RawJson(7), messageId: RawJson("m1"), delta: RawJson("b\n") }"#
        );
        for other in [
            &b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m2\",\"delta\":\"b\"}\n\n"[..],
            b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"b\"}\r\n\r\n",
            b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"b\"}\n",
            b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"b\",\"timestamp\":07}\n\n",
            b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"b\",\"name\":\"x\"}\n\n",
            b"data:{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"b\"}\n\n",
        ] {
            assert!(taken(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
        // An id with an escape, or after the delta, starts no run.
        let escaped = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m\u0031","delta":"a"}"#;
        assert!(DeltaRun::starting(escaped, EventType::TextMessageContent).is_none());
        let late = br#"{"type":"TEXT_MESSAGE_CONTENT","delta":"a","messageId":"m1"}"#;
        assert!(DeltaRun::starting(late, EventType::TextMessageContent).is_none());
    }

    /// A delta frame, or a chunk continuation, that passes the stages
    /// starts a run; the frames that continue it leave it in place; any
    /// other frame ends it.
    #[test]
    fn runs_start_and_end() {
        let mut buf = [0u8; 1024];
        let mut p = Pipeline::new(&mut buf, Config::new());
        let mut log = Log(String::new());
        let mut push = |bytes: &str| {
            p.push(bytes.as_bytes(), &mut log).expect("valid");
            p.stages.run.map(|r| (r.input_type(), r.expands()))
        };
        use crate::protocol::event_type::EventType as T;
        let started =
            push("data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n");
        assert_eq!(started, None);
        push("data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n\n");
        let content =
            "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"a\"}\n\n";
        assert_eq!(push(content), Some((T::TextMessageContent, false)));
        assert_eq!(push(content), Some((T::TextMessageContent, false)));
        // A chunk that opens a lane gives two events: no run; its
        // continuation gives one.
        let opener =
            "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"n\",\"delta\":\"b\"}\n\n";
        assert_eq!(push(opener), None);
        let more = "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"delta\":\"c\"}\n\n";
        assert_eq!(push(more), Some((T::TextMessageChunk, true)));
        assert_eq!(push(more), Some((T::TextMessageChunk, true)));
        assert_eq!(
            push("data: {\"type\":\"CUSTOM\",\"name\":\"x\",\"value\":1}\n\n"),
            None
        );
        let text = log.0;
        // The continuation's event is its lane's CONTENT, told as made by
        // the pipeline (not original) from a TEXT_MESSAGE_CHUNK frame.
        assert_eq!(
            text.matches(
                "TEXT_MESSAGE_CONTENT { messageId: RawJson(\"n\"), delta: RawJson(\"c\") }"
            )
            .count(),
            2,
            "{text}"
        );
        assert!(text.contains("original: false"));
    }
}
