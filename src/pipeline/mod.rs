//! The push API: bytes in, validated, normalized and verified events out to
//! a sink.

use core::fmt;
use core::ops::ControlFlow;

pub(crate) mod delta_run;
pub(crate) mod error;

use crate::check::decode::{DecodeError, decode};
use crate::check::legacy::{Minting, Translator};
use crate::check::normalize::{Normalizer, ProcessError};
use crate::check::spilled::{Ended, Ending, JsonState, StandIns};
use crate::check::verify::Staged;
use crate::check::verify::{Entity, RunPhase, Verifier, VerifyError};
use crate::input::json::{Limits, V8Message};
use crate::input::sse::{self, Block, FieldValue, Frame, Framer};
use crate::pipeline::delta_run::DeltaRun;
use crate::pipeline::error::{Error, ErrorKind, Stage};
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key};
use crate::view::event::Event;

/// Default capacity of the verifier's open-id table (open text messages,
/// tool calls, reasoning spans and messages, steps, and the run's
/// subagents).
pub const DEFAULT_OPEN_IDS: usize = 32;
/// Default number of owner records the verifier keeps exactly (who owns
/// each message, tool call, activity and reasoning message); older ones
/// are forgotten, so a run may have any number.
pub const DEFAULT_OWNERS: usize = 32;
/// Default bytes of the verifier's id storage, shared by the open ids, the
/// run's subagent ids and the owner records (which take what is left).
pub const DEFAULT_ID_BYTES: usize = 1152;
/// Chunk lanes (the parent agent and subagents with a chunk stream open).
pub(crate) const LANES: usize = 8;
/// Bytes of the chunk lanes' storage (each open lane's id, owner, name and
/// parent, as JSON).
pub(crate) const LANE_BYTES: usize = 224;

/// What a pipeline does when the input breaks a rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Policy {
    /// Stop at the first violation (the reference's behaviour).
    #[default]
    Stop,
    /// Report each violation to [`Sink::violation`], skip the offending
    /// frame or event, and keep going: later events are verified against
    /// the state as it stands. A frame too large for the buffer is such a
    /// violation too (a capacity one), and the stream goes on after it. A
    /// closure sink does not hear violations (they are only counted in
    /// [`Summary::violations`]): implement [`Sink::violation`] for that.
    Monitor,
}

/// How a [`Pipeline`] reads its input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Config {
    /// Which protocol version to accept (default V1).
    pub dialect: Dialect,
    /// JSON limits (default: nesting up to 1024).
    pub limits: Limits,
    /// How V1 mints ids for translated `THINKING_*` events.
    pub minting: Minting,
    /// Make an incomplete end of stream an error (see [`Summary::is_complete`]).
    pub strict_end: bool,
    /// Check that each tool call's arguments are one complete JSON value by
    /// its TOOL_CALL_END ([`Rule::ToolCallArgs`](crate::verify::Rule::ToolCallArgs);
    /// off by default: the reference does not check).
    pub check_tool_args: bool,
}

impl Config {
    /// V1, default limits, ids minted per run.
    pub const fn new() -> Self {
        Config {
            dialect: Dialect::V1,
            limits: Limits::new(),
            minting: Minting::PerRun,
            strict_end: false,
            check_tool_args: false,
        }
    }

    /// The same configuration with another dialect.
    pub const fn dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// The same configuration with other JSON limits.
    pub const fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same configuration with another id minting.
    pub const fn minting(mut self, minting: Minting) -> Self {
        self.minting = minting;
        self
    }

    /// The same configuration, strict (or not) about the end of stream.
    pub const fn strict_end(mut self, strict: bool) -> Self {
        self.strict_end = strict;
        self
    }

    /// The same configuration, checking (or not) tool-call arguments.
    pub const fn check_tool_args(mut self, check: bool) -> Self {
        self.check_tool_args = check;
        self
    }
}

/// Where in the stream an event came from. One frame can give several
/// events (a chunk's START, CONTENT and END): they share its `index`, and
/// the frame is done when the sink hears of another one or the push
/// returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct FrameInfo {
    /// The input frame's index (0-based).
    pub index: u64,
    /// Stream offset of the frame's first byte.
    pub start: u64,
    /// Stream offset just past the frame's blank line (for a CRLF blank
    /// line, past its CR: the LF belongs to no frame, so that `end` does not
    /// depend on where pushes split; a forwarder of CRLF input adds it).
    pub end: u64,
    /// False for a last frame the stream ended without terminating.
    pub terminated: bool,
    /// False for an event the pipeline synthesized (chunk expansion,
    /// `THINKING_*` translation): it has no bytes of its own in the frame.
    pub original: bool,
    /// The frame did not fit the frame buffer: it was checked as it
    /// streamed past, and its bytes are gone (`start..end` of the stream).
    pub spilled: bool,
    /// The members of a spilled frame that no rule reads whose values did
    /// not fit: the event shows them as empty values of the same kind (`""`,
    /// `{}`, `[]`); their content is in the stream's `start..end`.
    pub stand_ins: StandIns,
    /// The type of the event the frame carried, before chunk expansion and
    /// V1's translation (`None` for a frame that did not decode): a
    /// TEXT_MESSAGE_CHUNK frame's START, CONTENT and END all say
    /// TEXT_MESSAGE_CHUNK.
    pub input_type: Option<EventType>,
    /// No line of the frame's block ended in CR and none was a bare
    /// `data` (false where unknown): the gateway forwards such a frame's
    /// bytes without looking at them again.
    pub(crate) plain: bool,
    /// The stream ended inside the frame's JSON: the frame was not
    /// terminated, and the bytes of it that arrived begin a JSON text, so
    /// its JSON error is where they end — the cut, not a syntax error in
    /// them. Told alike whether the frame fit the buffer or spilled (the
    /// gateway's repair reads it as the truncation it is).
    pub(crate) cut_in_json: bool,
}

/// Receives events in stream order, and can push back.
///
/// Each method returns [`ControlFlow`]: `Break` asks the pipeline to stop
/// reading at the end of the current frame (a frame's events are delivered
/// together: a chunk frame's START, CONTENT and END), and
/// [`push`](Pipeline::push) returns how many bytes it read so that the
/// caller pushes the rest later — when its writer has room, say.
///
/// Implemented for every `FnMut(&Event<'_>, &FrameInfo)`, which never
/// pushes back and ignores violations (a monitoring pipeline still counts
/// them in [`Summary::violations`]); a struct hears them too:
///
/// ```
/// use core::ops::ControlFlow;
/// use agui_stream::{Config, Error, Event, FrameInfo, Pipeline, Policy, Sink};
/// #[derive(Default)]
/// struct Counts { events: usize, violations: Vec<String> }
/// impl Sink for Counts {
///     fn event(&mut self, _: &Event<'_>, _: &FrameInfo) -> ControlFlow<()> {
///         self.events += 1;
///         ControlFlow::Continue(())
///     }
///     fn violation(&mut self, _: &Error, _: &FrameInfo, message: &dyn core::fmt::Display) -> ControlFlow<()> {
///         self.violations.push(message.to_string());
///         ControlFlow::Continue(())
///     }
/// }
/// let stream = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
///                data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\"}\n\n";
/// let mut buf = [0u8; 256];
/// let mut pipeline = Pipeline::new(&mut buf, Config::new()).policy(Policy::Monitor);
/// let mut counts = Counts::default();
/// pipeline.push(stream, &mut counts).unwrap();
/// assert_eq!(counts.events, 1);
/// assert_eq!(counts.violations.len(), 1); // the message was never started
/// ```
///
/// Pushing back, one frame at a time:
///
/// ```
/// use core::ops::ControlFlow;
/// use agui_stream::{Config, Event, FrameInfo, Pipeline, Sink};
/// struct OneFrame(Vec<u64>);
/// impl Sink for OneFrame {
///     fn event(&mut self, _: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
///         self.0.push(frame.index);
///         ControlFlow::Break(()) // e.g. "my output buffer is full"
///     }
/// }
/// let stream = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
///                data: {\"type\":\"STEP_STARTED\",\"stepName\":\"s\"}\n\n";
/// let mut buf = [0u8; 256];
/// let mut pipeline = Pipeline::new(&mut buf, Config::new());
/// let mut sink = OneFrame(Vec::new());
/// let read = pipeline.push(stream, &mut sink)?;
/// assert_eq!((read, &sink.0[..]), (57, &[0][..])); // the first frame
/// let rest = pipeline.push(&stream[read..], &mut sink)?;
/// assert_eq!((read + rest, &sink.0[..]), (stream.len(), &[0, 1][..]));
/// # Ok::<(), agui_stream::Error>(())
/// ```
pub trait Sink {
    /// Called once per event that passed every stage, in order.
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()>;

    /// In [`Policy::Monitor`], called for each violation instead of
    /// stopping: `frame` is the frame it is about (`frame.original` false
    /// for an event the pipeline synthesized), `message` the reference's
    /// wording, ids included.
    fn violation(
        &mut self,
        error: &Error,
        frame: &FrameInfo,
        message: &dyn fmt::Display,
    ) -> ControlFlow<()> {
        let _ = (error, frame, message);
        ControlFlow::Continue(())
    }

    /// Input that carries no event: a block without data (a `: ping`
    /// keep-alive a gateway forwards), a frame the dialect ignores, or one
    /// whose event added nothing. With the frames' events and violations,
    /// every frame is heard of.
    fn skipped(&mut self, skipped: &Skipped) -> ControlFlow<()> {
        let _ = skipped;
        ControlFlow::Continue(())
    }
}

impl<F: FnMut(&Event<'_>, &FrameInfo)> Sink for F {
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
        self(event, frame);
        ControlFlow::Continue(())
    }
}

/// What [`Sink::skipped`] hears about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Skipped {
    /// Stream bytes `start..end` are a block of lines without `data`
    /// ([`sse::Block::NoData`]): comments, `id:`, `event:` or `retry:`
    /// fields, ended by a blank line.
    NoData {
        /// Stream offset of the block's first byte.
        start: u64,
        /// Stream offset just past its blank line.
        end: u64,
    },
    /// A frame whose event the dialect ignores (V1: an unknown `type`).
    Ignored(FrameInfo),
    /// A frame whose event gave no event out: a chunk with nothing to add
    /// to its stream (V0: neither delta nor anything else to carry).
    Absorbed(FrameInfo),
}

/// What is still open when open-ended things are counted at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct OpenCounts {
    /// Text messages started and not ended.
    pub text_messages: usize,
    /// Tool calls started and not ended.
    pub tool_calls: usize,
    /// Steps started and not finished.
    pub steps: usize,
    /// Reasoning spans (V1).
    pub reasoning_spans: usize,
    /// Reasoning messages (V1).
    pub reasoning_messages: usize,
    /// Subagents started and not finished.
    pub subagents: usize,
    /// Chunk lanes no event closed.
    pub chunk_lanes: usize,
    /// A V0 thinking step or message.
    pub thinking: bool,
}

impl OpenCounts {
    /// True if nothing is open.
    pub fn is_empty(&self) -> bool {
        *self == OpenCounts::default()
    }
}

/// What [`Pipeline::finish`] reports about a stream that ended without error:
/// what the reference ignores — a cut last frame, a run never finished,
/// things left open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Summary {
    /// Input frames read.
    pub frames: u64,
    /// Events delivered to the sink.
    pub events: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Violations reported and skipped ([`Policy::Monitor`]).
    pub violations: u64,
    /// The last frame had no terminating blank line (the stream was cut).
    pub unterminated_frame: bool,
    /// Where the last run stands: anything but finished or errored means
    /// the stream ended mid-run (or held no run).
    pub run: RunPhase,
    /// What was left open.
    pub open: OpenCounts,
}

impl Summary {
    /// True if the stream ended cleanly: terminated, its last run finished
    /// or errored, and nothing left open. (A run that errored may leave
    /// messages open; the reference accepts that and so does this check.)
    pub fn is_complete(&self) -> bool {
        let ended = matches!(self.run, RunPhase::Finished | RunPhase::Errored);
        let open = match self.run {
            RunPhase::Errored => self.open.chunk_lanes != 0,
            _ => !self.open.is_empty(),
        };
        !self.unterminated_frame && ended && !open
    }
}

/// Runs a frame the framer just gave through the stages, or, if it
/// spilled, gives its verdict (a macro, as the frame borrows the framer
/// whose spill sink keeps the JSON error's message).
macro_rules! run_frame {
    ($pipeline:ident, $frame:ident, $sink:ident) => {
        if $frame.spilled {
            // The stand-in is the framer's buffer; the frame is let go so
            // that the spill sink can be read.
            let frame = Frame {
                payload: &[],
                event: FieldValue::Absent,
                id: FieldValue::Absent,
                ..$frame
            };
            let len = $frame.payload.len();
            $pipeline.spilled(frame, len, $sink)
        } else {
            let mut message = None;
            let no_stand_ins = StandIns::default();
            let plain = $frame.plain;
            let result =
                $pipeline
                    .stages
                    .frame(&$frame, no_stand_ins, None, $sink, &mut message, plain);
            if let Some(m) = message {
                let dialect = $pipeline.stages.config.dialect;
                *$pipeline.framer.spill_sink_mut() = JsonState::Message(m, dialect);
            }
            result
        }
    };
}

/// An SSE byte stream → validated, normalized, verified [`Event`]s, in
/// fixed memory.
///
/// The caller owns the frame buffer: it only holds a frame that spans two
/// pushes. Frames inside one push are never copied. A spanning frame larger
/// than the buffer spills past it: its JSON is checked as it streams, and a
/// stand-in for it, with the members no rule reads emptied and its message
/// histories and JSON Patches checked element by element, goes through the
/// stages (see [`FrameInfo::stand_ins`]). Only where the verdict needs what
/// did not fit is it [`Capacity::FrameBuffer`](crate::Capacity) at its end.
/// The const parameters
/// size the verifier (see [`DEFAULT_OPEN_IDS`], [`DEFAULT_OWNERS`],
/// [`DEFAULT_ID_BYTES`]).
///
/// ```
/// use agui_stream::{Config, Pipeline};
/// let mut buf = [0u8; 1024];
/// let mut pipeline = Pipeline::new(&mut buf, Config::new());
/// let mut types = heapless::Vec::<_, 4>::new();
/// let stream = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
/// let (a, b) = stream.split_at(20); // any split gives the same result
/// let mut sink = |ev: &agui_stream::Event<'_>, _: &_| types.push(ev.event_type()).unwrap();
/// pipeline.push(a, &mut sink).unwrap();
/// pipeline.push(b, &mut sink).unwrap();
/// let summary = pipeline.finish(&mut sink).unwrap();
/// assert_eq!(types.len(), 1);
/// assert!(!summary.is_complete()); // the run never finished
/// ```
#[derive(Debug)]
pub struct Pipeline<
    'b,
    const OPEN: usize = DEFAULT_OPEN_IDS,
    const OWNERS: usize = DEFAULT_OWNERS,
    const ID_BYTES: usize = DEFAULT_ID_BYTES,
> {
    /// Its spill sink keeps a spilling frame's state, or the last JSON
    /// error's message.
    framer: Framer<'b, JsonState>,
    stages: Stages<OPEN, OWNERS, ID_BYTES>,
    failed: Option<Error>,
}

impl<'b> Pipeline<'b> {
    /// A pipeline with the default capacities whose framer keeps spanning
    /// frames in `frame_buffer`.
    pub fn new(frame_buffer: &'b mut [u8], config: Config) -> Self {
        Self::sized(frame_buffer, config)
    }
}

impl<'b, const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize>
    Pipeline<'b, OPEN, OWNERS, ID_BYTES>
{
    /// A pipeline with the capacities of its type parameters:
    /// `Pipeline::<'_, 8, 16, 512>::sized(buf, config)`.
    pub fn sized(frame_buffer: &'b mut [u8], config: Config) -> Self {
        Self::sized_with(frame_buffer, config, Policy::Stop)
    }

    /// [`sized`](Self::sized) with `policy`, built in place (the
    /// [`policy`](Self::policy) builder moves the whole pipeline).
    pub(crate) fn sized_with(frame_buffer: &'b mut [u8], config: Config, policy: Policy) -> Self {
        Pipeline {
            framer: Framer::with_spill(
                frame_buffer,
                JsonState::Message(V8Message::EMPTY, config.dialect),
            ),
            stages: Stages {
                config,
                policy,
                translator: Translator::new(config.minting),
                normalizer: Normalizer::new(config.dialect),
                verifier: Verifier::new(config.dialect).check_tool_args(config.check_tool_args),
                events: 0,
                violations: 0,
                run: None,
            },
            failed: None,
        }
    }

    /// The same pipeline with another policy (a new pipeline stops at the
    /// first violation).
    #[must_use]
    #[inline]
    pub fn policy(mut self, policy: Policy) -> Self {
        self.stages.policy = policy;
        self
    }

    /// The configuration in force.
    pub fn config(&self) -> Config {
        self.stages.config
    }

    /// Ends the pipeline and gives its frame buffer back, for the next
    /// stream: `Pipeline::sized(pipeline.into_buffer(), config)`.
    pub fn into_buffer(self) -> &'b mut [u8] {
        self.framer.into_buffer()
    }

    /// Whether the frame buffer holds part of a frame (one that spans
    /// pushes, or spills past the buffer).
    pub(crate) fn holds_frame(&self) -> bool {
        self.framer.holds_payload()
    }

    /// Puts `buf` in place of the frame buffer and returns the old one;
    /// only where [`holds_frame`](Self::holds_frame) is false.
    pub(crate) fn replace_buffer(&mut self, buf: &'b mut [u8]) -> &'b mut [u8] {
        self.framer.replace_buffer(buf)
    }

    /// Bytes read so far: the stream offset of the next pushed byte.
    pub fn offset(&self) -> u64 {
        self.framer.offset()
    }

    /// Frames dispatched so far (the next frame's index).
    pub fn frames(&self) -> u64 {
        self.framer.frames()
    }

    /// The verifier's state (what is open, where the run stands).
    pub fn verifier(&self) -> &Verifier<OPEN, OWNERS, ID_BYTES> {
        &self.stages.verifier
    }

    /// Whether a `ty` event (a CONTENT or ARGS type) for the entity `id`
    /// continues what is open, as far as the stages can tell before its
    /// delta is read: the type is the dialect's, the entity is open, and
    /// no chunk lane is (which would close first).
    pub(crate) fn continues(&self, ty: EventType, id: crate::view::string::JsonStr<'_>) -> bool {
        let entity = match ty {
            EventType::TextMessageContent => Entity::TextMessage,
            EventType::ToolCallArgs => Entity::ToolCall,
            EventType::ReasoningMessageContent if self.stages.config.dialect == Dialect::V1 => {
                Entity::ReasoningMessage
            }
            _ => return false,
        };
        self.stages.normalizer.open_lanes() == 0
            && self.stages.verifier.open_ids(entity).any(|open| open == id)
    }

    /// Reads `bytes`, delivering every event completed by them, and returns
    /// how many it read: all of them, unless the sink pushed back
    /// ([`ControlFlow::Break`]); then it stopped at the end of that frame
    /// and the caller pushes the rest later. After an error the pipeline
    /// stops: every later call returns the same error.
    ///
    /// # Errors
    ///
    /// The first [`Error`] that stops the pipeline: a violation under
    /// [`Policy::Stop`], a capacity, or a frame too large for the buffer whose
    /// verdict needs it. Under [`Policy::Monitor`] violations go to
    /// [`Sink::violation`] instead.
    pub fn push<S: Sink + ?Sized>(&mut self, bytes: &[u8], sink: &mut S) -> Result<usize, Error> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        // A push inside a spanning frame's data value is only copied.
        let mut pos = match self.framer.absorb(bytes) {
            Ok(took) if took == bytes.len() => return Ok(took),
            Ok(took) => took,
            Err(e) => return Err(self.stop(Error::from_sse(e, self.framer.frames()))),
        };
        loop {
            let rest = bytes.get(pos..).unwrap_or_default();
            if let Some(run) = &self.stages.run
                && self.framer.at_clean_block_start()
                && crate::testing::fast_paths()
                && let Some(frame) = run.next(rest)
            {
                let event = run.event(rest, &frame, self.stages.config.dialect);
                let (index, start, end) = self.framer.took_block(frame.len);
                pos = pos.saturating_add(frame.len);
                let info = FrameInfo {
                    index,
                    start,
                    end,
                    terminated: true,
                    original: !run.expands(),
                    spilled: false,
                    stand_ins: StandIns::default(),
                    input_type: Some(run.input_type()),
                    plain: true,
                    cut_in_json: false,
                };
                self.stages.events = self.stages.events.saturating_add(1);
                if sink.event(&event, &info).is_break() {
                    return Ok(pos);
                }
                continue;
            }
            let frames_before = self.framer.frames();
            let flow = match self.framer.feed_block(bytes, &mut pos) {
                Ok(Some(Block::Frame(frame))) => match run_frame!(self, frame, sink) {
                    Ok(flow) => flow,
                    Err(e) => return Err(self.stop(e)),
                },
                Ok(Some(Block::NoData { start, end })) => {
                    sink.skipped(&Skipped::NoData { start, end })
                }
                Ok(None) => return Ok(pos),
                Err(e) => return Err(self.stop(Error::from_sse(e, frames_before))),
            };
            if flow.is_break() {
                return Ok(pos);
            }
        }
    }

    /// A frame that spilled (its stand-in is the first `len` bytes of the
    /// buffer): the stand-in through the stages, or its JSON error (the
    /// reference's verdict), or the buffer's capacity where the stand-in
    /// could change the verdict. Stops, or (monitoring)
    /// reports it and goes on.
    #[cold]
    #[inline(never)]
    fn spilled<S: Sink + ?Sized>(
        &mut self,
        frame: Frame<'_>,
        len: usize,
        sink: &mut S,
    ) -> Result<ControlFlow<()>, Error> {
        let (index, start, payload_offset) = (frame.index, frame.start, frame.payload_offset);
        let capacity = self.framer.capacity();
        let config = self.stages.config;
        let Ended {
            ending,
            message,
            unbroken,
        } = self
            .framer
            .spill_sink()
            .end_spilled(self.framer.buffer(), len, config.check_tool_args);
        let e = match ending {
            Ending::StandIn {
                payload,
                stand_ins,
                staged,
            } => {
                let frame = Frame { payload, ..frame };
                return self
                    .stages
                    .frame(&frame, stand_ins, staged, sink, &mut None, false);
            }
            Ending::Json { error, first_line } => {
                Error::from_spilled_json(error, first_line, index, start, payload_offset)
            }
            Ending::TooLarge { overflow_at } => Error::from_sse(
                sse::Error::FrameTooLarge {
                    offset: overflow_at.unwrap_or(start),
                    capacity,
                },
                index,
            ),
        };
        if let Some(m) = message {
            *self.framer.spill_sink_mut() = JsonState::Message(m, config.dialect);
        }
        let policy = self.stages.policy;
        let violations = &mut self.stages.violations;
        let info = FrameInfo {
            index,
            start,
            end: frame.end,
            terminated: frame.terminated,
            original: true,
            spilled: true,
            stand_ins: StandIns::default(),
            input_type: None,
            plain: false,
            cut_in_json: !frame.terminated && unbroken && matches!(e.kind, ErrorKind::Json(_)),
        };
        match self.framer.spill_sink() {
            JsonState::Message(m, _) if matches!(e.kind, ErrorKind::Json(_)) => {
                settle(policy, violations, sink, e, &info, m)
            }
            _ => settle(policy, violations, sink, e, &info, &e.kind),
        }
    }

    /// The frame being read, if its payload is spilling and its JSON has
    /// already failed: reported to `sink` now, with the error and message
    /// its end would bring (to monitoring; the error if the policy stops).
    /// `None` for any other frame. Only for a caller that ends the stream
    /// on it: the frame's end would report it again. (The gateway rewriter
    /// cuts a block that went out ahead of its verdict as soon as this
    /// shows it bad, instead of forwarding the rest of it.)
    pub(crate) fn report_failed_spill<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
    ) -> Option<Result<ControlFlow<()>, Error>> {
        let (index, start, payload_offset) = self.framer.spilling()?;
        let (error, first_line, message) = self
            .framer
            .spill_sink()
            .failed_early(self.framer.buffer())?;
        let e = Error::from_spilled_json(error, first_line, index, start, payload_offset);
        let info = FrameInfo {
            index,
            start,
            end: self.framer.offset(),
            terminated: false,
            original: true,
            spilled: true,
            stand_ins: StandIns::default(),
            input_type: None,
            plain: false,
            cut_in_json: false,
        };
        let (policy, violations) = (self.stages.policy, &mut self.stages.violations);
        Some(match message {
            Some(m) => settle(policy, violations, sink, e, &info, &m),
            None => settle(policy, violations, sink, e, &info, &e.kind),
        })
    }

    fn stop(&mut self, e: Error) -> Error {
        self.failed = Some(e);
        e
    }

    /// Ends the stream: an unterminated last frame is still decoded (as the
    /// reference does), and the summary says what was left open. With
    /// [`Config::strict_end`], an incomplete stream is an error.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push), for the last frame; [`ErrorKind::Incomplete`]
    /// for an incomplete stream under [`Config::strict_end`].
    pub fn finish<S: Sink + ?Sized>(&mut self, sink: &mut S) -> Result<Summary, Error> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        // A stream that follows starts with the general path.
        self.stages.run = None;
        let frames_before = self.framer.frames();
        let bytes = self.framer.offset();
        let mut unterminated = false;
        let mut frames = frames_before;
        match self.framer.finish() {
            Ok(Some(frame)) => {
                unterminated = !frame.terminated;
                frames = frame.index.saturating_add(1);
                if let Err(e) = run_frame!(self, frame, sink) {
                    return Err(self.stop(e));
                }
            }
            Ok(None) => {}
            Err(e) => return Err(self.stop(Error::from_sse(e, frames_before))),
        }
        let v = &self.stages.verifier;
        let summary = Summary {
            frames,
            events: self.stages.events,
            bytes,
            violations: self.stages.violations,
            unterminated_frame: unterminated,
            run: v.phase(),
            open: OpenCounts {
                text_messages: v.open_count(Entity::TextMessage),
                tool_calls: v.open_count(Entity::ToolCall),
                steps: v.open_count(Entity::Step),
                reasoning_spans: v.open_count(Entity::ReasoningSpan),
                reasoning_messages: v.open_count(Entity::ReasoningMessage),
                subagents: v.open_count(Entity::Subagent),
                chunk_lanes: self.stages.normalizer.open_lanes(),
                thinking: v.thinking_open(),
            },
        };
        if self.stages.config.strict_end && !summary.is_complete() {
            return Err(self.stop(Error {
                kind: ErrorKind::Incomplete,
                stage: Stage::End,
                frame: frames,
                offset: bytes,
            }));
        }
        Ok(summary)
    }

    /// `error` in the reference's words, ids included (for the error this
    /// pipeline returned last).
    pub fn message<'s>(&'s self, error: &'s Error) -> impl fmt::Display + 's {
        Message {
            error,
            json: self.framer.spill_sink(),
            normalizer: &self.stages.normalizer,
            verifier: &self.stages.verifier,
        }
    }
}

/// Renders an error with the stages' stored details.
struct Message<'s, const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize> {
    error: &'s Error,
    json: &'s JsonState,
    normalizer: &'s Normalizer<LANES, LANE_BYTES>,
    verifier: &'s Verifier<OPEN, OWNERS, ID_BYTES>,
}

impl<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize> fmt::Display
    for Message<'_, OPEN, OWNERS, ID_BYTES>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.error.kind {
            ErrorKind::Json(e) => match self.json {
                JsonState::Message(m, _) => m.fmt(f),
                JsonState::Spilling(_) => e.fmt(f),
            },
            ErrorKind::Chunk(c) => self.normalizer.describe(c).fmt(f),
            ErrorKind::Verify { event, rule } => self
                .verifier
                .describe(VerifyError::Violation { event, rule })
                .fmt(f),
            kind => kind.fmt(f),
        }
    }
}

/// The stages after framing, with their counters.
#[derive(Debug)]
struct Stages<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize> {
    config: Config,
    policy: Policy,
    translator: Translator,
    normalizer: Normalizer<LANES, LANE_BYTES>,
    verifier: Verifier<OPEN, OWNERS, ID_BYTES>,
    events: u64,
    violations: u64,
    /// The delta frame the next ones may continue ([`DeltaRun`]): set by
    /// a delta event that passed every stage, cleared by any other frame.
    run: Option<DeltaRun>,
}

impl<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize> Stages<OPEN, OWNERS, ID_BYTES> {
    /// Decodes, translates, normalizes and verifies one frame. `Err` only
    /// when the pipeline must stop. A JSON syntax error's message goes to
    /// `json`. `staged` holds the records of a spilled frame's elements
    /// that were let go.
    fn frame<S: Sink + ?Sized>(
        &mut self,
        frame: &Frame<'_>,
        stand_ins: StandIns,
        staged: Option<Staged<'_>>,
        sink: &mut S,
        json: &mut Option<V8Message>,
        plain: bool,
    ) -> Result<ControlFlow<()>, Error> {
        if let Some(run) = &self.run
            && staged.is_none()
            && !frame.spilled
            && crate::testing::fast_paths()
            && let Some(f) = run.in_payload(frame.payload)
        {
            // A frame that continues the run (`delta_run`).
            let event = run.event(frame.payload, &f, self.config.dialect);
            let info = FrameInfo {
                index: frame.index,
                start: frame.start,
                end: frame.end,
                terminated: frame.terminated,
                original: !run.expands(),
                spilled: false,
                stand_ins,
                input_type: Some(run.input_type()),
                plain,
                cut_in_json: false,
            };
            self.events = self.events.saturating_add(1);
            return Ok(sink.event(&event, &info));
        }
        self.run = None;
        let policy = self.policy;
        let mut info = FrameInfo {
            index: frame.index,
            start: frame.start,
            end: frame.end,
            terminated: frame.terminated,
            original: true,
            spilled: frame.spilled,
            stand_ins,
            input_type: None,
            plain,
            cut_in_json: false,
        };
        let decode_error = |e| {
            Error::from_decode(
                e,
                frame.payload,
                frame.index,
                frame.start,
                frame.payload_offset,
            )
        };
        // Matched by reference: the event view is not copied out.
        let decoded = decode(frame.payload, self.config.dialect, self.config.limits);
        if let Err(DecodeError::Json(e)) = decoded {
            *json = Some(V8Message::new(frame.payload, e));
        }
        let event = match &decoded {
            Ok(Some(event)) => event,
            Ok(None) => return Ok(sink.skipped(&Skipped::Ignored(info))),
            Err(e) => {
                if let DecodeError::Json(j) = e {
                    // An error where the bytes end is the cut's (a
                    // syntax error is at the byte that breaks it).
                    info.cut_in_json = !frame.terminated
                        && usize::try_from(j.offset).is_ok_and(|at| at == frame.payload.len());
                }
                let e = decode_error(*e);
                let violations = &mut self.violations;
                return match json {
                    Some(m) if matches!(e.kind, ErrorKind::Json(_)) => {
                        settle(policy, violations, sink, e, &info, m)
                    }
                    _ => settle(policy, violations, sink, e, &info, &e.kind),
                };
            }
        };
        info.input_type = Some(event.event_type());
        let translated = match self.config.dialect {
            Dialect::V1 => self.translator.translate(event),
            Dialect::V0 => None,
        };
        let event = translated.as_ref().unwrap_or(event);
        let verifier = &mut self.verifier;
        let (events, violations) = (&mut self.events, &mut self.violations);
        // A frame's events go out together: a push-back takes effect after
        // the last of them.
        let mut flow = ControlFlow::Continue(());
        let mut heard = false;
        // Events the frame gave that passed, and whether one did not; the
        // id of a synthesized event that names nothing else (a chunk run
        // may continue it).
        let (mut passed, mut rejected) = (0u32, false);
        let mut lane_id = heapless::Vec::<u8, 64>::new();
        let result = self.normalizer.process(event, |out| {
            heard = true;
            // Only a decoded event carries its object; synthesized and
            // translated ones are built field by field.
            info.original = out.object().is_some();
            let step = match verifier.check_staged(out, staged.filter(|_| info.original)) {
                Ok(()) => {
                    *events = events.saturating_add(1);
                    passed = passed.saturating_add(1);
                    let bare = !info.original
                        && out.subagent_run_id().is_none()
                        && out.metadata().is_none()
                        && out.raw_event().is_none();
                    lane_id.clear();
                    if bare && let Some(id) = out.get(Key::MessageId).or(out.get(Key::ToolCallId)) {
                        let _ = lane_id.extend_from_slice(id.as_bytes());
                    }
                    sink.event(out, &info)
                }
                Err(e) => {
                    rejected = true;
                    let error = Error::from_verify(e, frame.index, frame.start);
                    let message = verifier.describe(e);
                    settle(policy, violations, sink, error, &info, &message)?
                }
            };
            if step.is_break() {
                flow = step;
            }
            Ok(())
        });
        match result {
            // Nothing came out: the frame is absorbed.
            Ok(()) if !heard => Ok(sink.skipped(&Skipped::Absorbed(info))),
            Ok(()) => {
                // A delta event that passed as it was, with no chunk lane
                // open, or a chunk continuation that gave its lane's
                // CONTENT (ARGS) and nothing else; no tool arguments to
                // follow: the next frames may continue it.
                let delta = translated.is_none()
                    && passed == 1
                    && !rejected
                    && staged.is_none()
                    && !frame.spilled
                    && (!lane_id.is_empty() || self.normalizer.open_lanes() == 0)
                    && !(self.config.check_tool_args
                        && matches!(
                            event.event_type(),
                            EventType::ToolCallArgs | EventType::ToolCallChunk
                        ));
                if delta {
                    let ty = event.event_type();
                    self.run = match lane_id.is_empty() {
                        true => DeltaRun::starting(frame.payload, ty),
                        false => DeltaRun::chunk(frame.payload, ty, &lane_id),
                    };
                }
                Ok(flow)
            }
            Err(ProcessError::Downstream(e)) => Err(e),
            Err(ProcessError::Chunk(c)) => {
                let error = Error::from_chunk(c, frame.index, frame.start);
                let message = self.normalizer.describe(c);
                info.original = true;
                let step = settle(policy, &mut self.violations, sink, error, &info, &message)?;
                Ok(if step.is_break() { step } else { flow })
            }
        }
    }
}

/// The one place the policy decides: stop with `error`, or (monitoring)
/// count it, report it to the sink with its `message`, and go on.
fn settle<S: Sink + ?Sized>(
    policy: Policy,
    violations: &mut u64,
    sink: &mut S,
    error: Error,
    frame: &FrameInfo,
    message: &dyn fmt::Display,
) -> Result<ControlFlow<()>, Error> {
    match policy {
        Policy::Stop => Err(error),
        Policy::Monitor => {
            *violations = violations.saturating_add(1);
            Ok(sink.violation(&error, frame, message))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::Capacity;
    use crate::view::event::Event;
    extern crate std;
    use std::vec::Vec;

    #[test]
    fn state_is_fixed_and_sized_by_the_capacities() {
        // Everything lives inline; the frame buffer is the caller's.
        let default = core::mem::size_of::<Pipeline<'static>>();
        let small = core::mem::size_of::<Pipeline<'static, 4, 8, 256>>();
        std::println!(
            "size_of Pipeline: default {default}, <4, 8, 256> {small}; Event {}",
            core::mem::size_of::<Event<'static>>()
        );
        // The whole state of a stream, ids included, in 4.6 KiB by default
        // (of which about 600 bytes read a frame larger than the buffer).
        assert!(default <= 4736, "{default}");
        assert!(small <= 2944, "{small}");
    }

    #[test]
    fn synthesized_events_tell_the_type_their_frame_carried() {
        let stream = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\ndata: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"x\"}\n\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
        let mut buf = [0u8; 64];
        let mut p = Pipeline::new(&mut buf, Config::new());
        let mut seen = Vec::new();
        p.push(stream, &mut |ev: &Event<'_>, f: &FrameInfo| {
            seen.push((f.index, ev.event_type(), f.input_type, f.original));
        })
        .unwrap();
        use EventType as T;
        let chunk = Some(T::TextMessageChunk);
        assert_eq!(
            seen,
            [
                (0, T::RunStarted, Some(T::RunStarted), true),
                (1, T::TextMessageStart, chunk, false),
                (1, T::TextMessageContent, chunk, false),
                (2, T::TextMessageEnd, Some(T::RunFinished), false),
                (2, T::RunFinished, Some(T::RunFinished), true),
            ]
        );
    }

    #[test]
    fn the_pipeline_tells_where_it_stands() {
        let stream = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n: ping\n\ndata: {\"type\":\"STEP_STARTED\",\"stepName\":\"s\"}\n\ndata: {\"type";
        let mut buf = [0u8; 64];
        let mut p = Pipeline::new(&mut buf, Config::new());
        let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
        let (a, b) = stream.split_at(70);
        p.push(a, &mut sink).unwrap();
        assert_eq!((p.offset(), p.frames()), (70, 1));
        p.push(b, &mut sink).unwrap();
        assert_eq!((p.offset(), p.frames()), (stream.len() as u64, 2));
    }

    /// What the default id storage holds, as docs/capacities.md says.
    #[test]
    fn default_id_storage_holds_32_uuids_or_18_long_ids() {
        for (len, fits) in [(36, 32), (64, 18)] {
            let mut stream = std::string::String::from(
                "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
            );
            for i in 0..=fits {
                let id = std::format!("{i:0len$}");
                stream.push_str(&std::format!(
                    "data: {{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"{id}\"}}\n\n"
                ));
            }
            let mut buf = [0u8; 0];
            let mut p = Pipeline::new(&mut buf, Config::new());
            let e = p
                .push(stream.as_bytes(), &mut |_: &Event<'_>, _: &FrameInfo| {})
                .unwrap_err();
            let full = if fits == 32 {
                Capacity::OpenIds
            } else {
                Capacity::IdBytes { capacity: 1152 }
            };
            assert_eq!(
                (e.kind, e.frame),
                (ErrorKind::Capacity(full), fits as u64 + 1)
            );
        }
    }

    #[test]
    fn errors_are_sticky_and_carry_frame_and_offset() {
        let mut buf = [0u8; 64];
        let mut p = Pipeline::new(&mut buf, Config::new());
        let mut seen = Vec::new();
        let mut sink = |e: &Event<'_>, f: &FrameInfo| seen.push((e.event_type(), f.index));
        let stream = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\ndata: {\"type\":1}\n\n";
        let e = p.push(stream, &mut sink).unwrap_err();
        assert_eq!(e.frame, 1);
        assert_eq!(e.stage, crate::Stage::Schema);
        assert_eq!(e.offset, 57);
        assert_eq!(p.push(b"data: {}\n\n", &mut sink), Err(e));
        assert_eq!(p.finish(&mut sink), Err(e));
        assert_eq!(seen.len(), 1);
    }

    #[test]
    fn json_error_offsets_point_into_the_stream() {
        let mut buf = [0u8; 64];
        let mut p = Pipeline::new(&mut buf, Config::new());
        let e = p
            .push(
                b": hi\ndata: {\"a\" 1}\n\n",
                &mut |_: &Event<'_>, _: &FrameInfo| {},
            )
            .unwrap_err();
        assert_eq!(e.stage, crate::Stage::Json);
        assert_eq!((e.frame, e.offset), (0, 16));
    }

    #[test]
    fn oversize_spanning_frame_is_a_capacity_error() {
        let mut buf = [0u8; 16];
        let mut p = Pipeline::new(&mut buf, Config::new());
        let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
        let frame = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
        let (a, b) = frame.split_at(40);
        let e = p
            .push(a, &mut sink)
            .and_then(|_| p.push(b, &mut sink))
            .unwrap_err();
        assert!(e.is_capacity());
        assert_eq!(
            e.kind,
            ErrorKind::Capacity(Capacity::FrameBuffer { capacity: 16 })
        );
        // The same frame inside one push needs no buffer at all.
        let mut none = [0u8; 0];
        let mut p = Pipeline::new(&mut none, Config::new());
        assert!(p.push(frame, &mut sink).is_ok());
        assert_eq!(p.finish(&mut sink).unwrap().events, 1);
    }

    #[test]
    fn unterminated_last_frame_is_decoded_and_reported() {
        let mut buf = [0u8; 128];
        let mut p = Pipeline::new(&mut buf, Config::new());
        let mut n = 0;
        let mut sink = |_: &Event<'_>, f: &FrameInfo| {
            assert!(!f.terminated);
            n += 1;
        };
        p.push(
            b"data: {\"type\":\"RUN_ERROR\",\"message\":\"x\"}",
            &mut sink,
        )
        .unwrap();
        let s = p.finish(&mut sink).unwrap();
        assert!(s.unterminated_frame);
        assert_eq!((s.frames, s.events, n), (1, 1, 1));
    }

    /// A monitoring sink hears each violation in the words
    /// `Pipeline::message` gives the same error when the pipeline stops.
    #[test]
    fn monitor_and_stop_word_violations_alike() {
        use std::string::{String, ToString};
        struct Heard(Vec<(Error, String)>);
        impl Sink for Heard {
            fn event(&mut self, _: &Event<'_>, _: &FrameInfo) -> ControlFlow<()> {
                ControlFlow::Continue(())
            }
            fn violation(
                &mut self,
                error: &Error,
                _: &FrameInfo,
                message: &dyn fmt::Display,
            ) -> ControlFlow<()> {
                self.0.push((*error, message.to_string()));
                ControlFlow::Continue(())
            }
        }
        let start = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
        let long = "x".repeat(3000);
        let cases = [
            String::from("data: {\"type\":1}\n\n"),
            String::from("data: {\"type\":\n\n"),
            String::from("data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\"}\n\n"),
            std::format!("data: {{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"{long}\"}}\n\n"),
            std::format!(
                "data: {{\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"{long}\",\"delta\":\"d\"}}\n\n"
            ),
            String::from(
                "data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"a\",\"delta\":\"d\"}\n\n\
                 data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"a\",\"role\":\"user\"}\n\n",
            ),
        ];
        let mut kinds = Vec::new();
        for case in &cases {
            let stream = std::format!("{start}{case}");
            let mut buf = [0u8; 256];
            let mut stop = Pipeline::new(&mut buf, Config::new());
            let e = stop
                .push(stream.as_bytes(), &mut |_: &Event<'_>, _: &FrameInfo| {})
                .unwrap_err();
            let stopped = stop.message(&e).to_string();
            let mut buf = [0u8; 256];
            let mut monitor = Pipeline::new(&mut buf, Config::new()).policy(Policy::Monitor);
            let mut heard = Heard(Vec::new());
            monitor.push(stream.as_bytes(), &mut heard).unwrap();
            assert_eq!(heard.0, [(e, stopped)], "{case}");
            kinds.push(e.kind);
        }
        // The cases reach every stage that words its own messages.
        assert!(kinds.iter().any(|k| matches!(k, ErrorKind::Schema(_))));
        assert!(kinds.iter().any(|k| matches!(k, ErrorKind::Json(_))));
        assert!(kinds.iter().any(|k| matches!(k, ErrorKind::Verify { .. })));
        assert!(kinds.iter().any(|k| matches!(k, ErrorKind::Chunk(_))));
        assert!(
            kinds
                .iter()
                .filter(|k| matches!(k, ErrorKind::Capacity(_)))
                .count()
                == 2
        );
    }
}
