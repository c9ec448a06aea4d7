//! The push API: bytes in, validated events out to a sink.

use crate::decode::decode_value;
use crate::error::{Capacity, Error, ErrorKind};
use crate::event::Event;
use crate::json::{Limits, RawJson};
use crate::schema::Dialect;
use crate::sse::{Frame, SseError, SseFramer};

/// How a [`Pipeline`] reads its input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Config {
    /// Which protocol version to accept (default V1).
    pub dialect: Dialect,
    /// JSON limits (default: nesting up to 1024).
    pub limits: Limits,
}

impl Config {
    /// V1 with default limits.
    pub const fn new() -> Self {
        Config {
            dialect: Dialect::V1,
            limits: Limits::new(),
        }
    }

    /// The same configuration with another dialect.
    pub const fn dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }
}

/// Where in the stream an event came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FrameInfo {
    /// The input frame's index (0-based).
    pub index: u64,
    /// Stream offset of the frame's first byte.
    pub start: u64,
    /// Stream offset just past the frame (its blank line included): a
    /// gateway can forward `start..end` unchanged.
    pub end: u64,
    /// False for a last frame the stream ended without terminating.
    pub terminated: bool,
}

/// Receives events in stream order.
///
/// Implemented for every `FnMut(&Event<'_>, &FrameInfo)`.
pub trait Sink {
    /// Called once per event, in order.
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo);
}

impl<F: FnMut(&Event<'_>, &FrameInfo)> Sink for F {
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo) {
        self(event, frame)
    }
}

/// What [`Pipeline::finish`] reports about a stream that ended without error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Summary {
    /// Input frames read.
    pub frames: u64,
    /// Events delivered to the sink.
    pub events: u64,
    /// Bytes read.
    pub bytes: u64,
    /// The last frame had no terminating blank line (the stream was cut).
    pub unterminated_frame: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Running,
    Failed(Error),
}

/// An SSE byte stream → validated [`Event`]s, with fixed memory.
///
/// The caller owns the frame buffer: it only holds a frame that spans two
/// pushes, so its size is the largest such frame. Frames that lie inside
/// one push are never copied.
///
/// ```
/// use agui_stream::{Config, Pipeline};
/// let mut buf = [0u8; 1024];
/// let mut pipeline = Pipeline::new(&mut buf, Config::new());
/// let mut types = heapless::Vec::<_, 4>::new();
/// let stream = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
/// let (a, b) = stream.split_at(20); // any split gives the same result
/// pipeline.push(a, &mut |ev: &agui_stream::Event<'_>, _: &_| types.push(ev.event_type()).unwrap()).unwrap();
/// pipeline.push(b, &mut |ev: &agui_stream::Event<'_>, _: &_| types.push(ev.event_type()).unwrap()).unwrap();
/// let summary = pipeline.finish(&mut |_: &agui_stream::Event<'_>, _: &_| {}).unwrap();
/// assert_eq!(types.len(), 1);
/// assert_eq!(summary.frames, 1);
/// ```
pub struct Pipeline<'b> {
    framer: SseFramer<'b>,
    config: Config,
    state: State,
    events: u64,
}

impl<'b> Pipeline<'b> {
    /// A pipeline whose framer keeps spanning frames in `frame_buffer`.
    pub fn new(frame_buffer: &'b mut [u8], config: Config) -> Self {
        Pipeline {
            framer: SseFramer::new(frame_buffer),
            config,
            state: State::Running,
            events: 0,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> Config {
        self.config
    }

    /// Reads `bytes`, delivering every event completed by them. After an
    /// error the pipeline stops: every later call returns the same error.
    pub fn push<S: Sink + ?Sized>(&mut self, bytes: &[u8], sink: &mut S) -> Result<(), Error> {
        if let State::Failed(e) = self.state {
            return Err(e);
        }
        let mut pos = 0;
        loop {
            let frames_before = self.framer.frames();
            let offset_before = self.framer.offset();
            let frame = match self.framer.feed(bytes, &mut pos) {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(()),
                Err(e) => {
                    let e = sse_error(e, frames_before, offset_before);
                    self.state = State::Failed(e);
                    return Err(e);
                }
            };
            if let Err(e) = deliver(&frame, self.config, sink, &mut self.events) {
                self.state = State::Failed(e);
                return Err(e);
            }
        }
    }

    /// Ends the stream: an unterminated last frame is still decoded (as the
    /// reference does) and reported in the summary.
    pub fn finish<S: Sink + ?Sized>(&mut self, sink: &mut S) -> Result<Summary, Error> {
        if let State::Failed(e) = self.state {
            return Err(e);
        }
        let frames_before = self.framer.frames();
        let offset_before = self.framer.offset();
        let mut unterminated = false;
        let mut frames = frames_before;
        match self.framer.finish() {
            Ok(Some(frame)) => {
                unterminated = !frame.terminated;
                frames = frame.index + 1;
                if let Err(e) = deliver(&frame, self.config, sink, &mut self.events) {
                    self.state = State::Failed(e);
                    return Err(e);
                }
            }
            Ok(None) => {}
            Err(e) => {
                let e = sse_error(e, frames_before, offset_before);
                self.state = State::Failed(e);
                return Err(e);
            }
        }
        Ok(Summary {
            frames,
            events: self.events,
            bytes: offset_before,
            unterminated_frame: unterminated,
        })
    }
}

fn sse_error(e: SseError, frame: u64, offset: u64) -> Error {
    match e {
        SseError::FrameTooLarge {
            offset: at,
            capacity,
        } => Error {
            kind: ErrorKind::Capacity(Capacity::FrameBuffer { capacity }),
            frame,
            offset: at.max(offset),
        },
    }
}

fn deliver<S: Sink + ?Sized>(
    frame: &Frame<'_>,
    config: Config,
    sink: &mut S,
    events: &mut u64,
) -> Result<(), Error> {
    let fail = |e| Error::from_decode(e, frame.index, frame.start, frame.payload_offset);
    let root = RawJson::parse(frame.payload, config.limits)
        .map_err(|j| fail(crate::decode::DecodeError::Json(j)))?;
    let info = FrameInfo {
        index: frame.index,
        start: frame.start,
        end: frame.end,
        terminated: frame.terminated,
    };
    if let Some(event) = decode_value(root, config.dialect).map_err(fail)? {
        *events += 1;
        sink.event(&event, &info);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;
    extern crate std;
    use std::vec::Vec;

    #[test]
    fn state_is_small_and_fixed() {
        // The framer's inline state plus the configuration; the frame buffer
        // is the caller's. Event views are per-call stack values.
        let size = core::mem::size_of::<Pipeline<'static>>();
        std::println!(
            "size_of Pipeline = {size}, Event = {}",
            core::mem::size_of::<Event<'static>>()
        );
        assert!(size <= 512, "{size}");
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
        assert_eq!(e.stage(), crate::Stage::Schema);
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
        assert_eq!(e.stage(), crate::Stage::Sse);
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
            .and_then(|()| p.push(b, &mut sink))
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
}
