//! The one recording [`Sink`] of the tests, and the runs built on it.
//!
//! [`Recorder`] keeps everything a pipeline tells its sink, in order:
//! each event (its type, the encoder's bytes, its frame), each violation a
//! monitoring pipeline reports (the error, its frame, the message), each
//! skipped block. With `push_back` it says `Break` after every call.

use std::fmt;
use std::ops::ControlFlow;

use agui_stream::{
    Config, Error, Event, EventType, FrameInfo, Pipeline, Policy, Sink, Skipped, Summary, encode,
};

/// What a sink heard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Heard {
    /// An event: its type, the encoder's bytes, its frame.
    Event(EventType, Vec<u8>, FrameInfo),
    /// A violation (monitoring): the error, its frame, the message.
    Violation(Error, FrameInfo, String),
    /// Input that carries no event.
    Skipped(Skipped),
}

impl Heard {
    /// The input bytes it is about, and the frame index if it is a frame.
    pub fn range(&self) -> (u64, u64, Option<u64>) {
        match self {
            Heard::Event(_, _, f)
            | Heard::Violation(_, f, _)
            | Heard::Skipped(Skipped::Ignored(f) | Skipped::Absorbed(f)) => {
                (f.start, f.end, Some(f.index))
            }
            Heard::Skipped(Skipped::NoData { start, end }) => (*start, *end, None),
            Heard::Skipped(other) => panic!("unexpected {other:?}"),
        }
    }
}

/// Records everything it hears; with `push_back`, says `Break` every time.
#[derive(Debug, Default)]
pub struct Recorder {
    pub heard: Vec<Heard>,
    pub push_back: bool,
}

impl Recorder {
    /// A recorder that never pushes back.
    pub fn new() -> Self {
        Self::default()
    }

    /// A recorder that says `Break` after every call.
    pub fn pushing_back() -> Self {
        Recorder {
            heard: Vec::new(),
            push_back: true,
        }
    }

    fn hear(&mut self, heard: Heard) -> ControlFlow<()> {
        self.heard.push(heard);
        if self.push_back {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// The events: type, encoded bytes, frame.
    pub fn events(&self) -> impl Iterator<Item = (EventType, &[u8], &FrameInfo)> {
        self.heard.iter().filter_map(|h| match h {
            Heard::Event(ty, json, f) => Some((*ty, json.as_slice(), f)),
            _ => None,
        })
    }

    /// The events' type names, in order.
    pub fn event_types(&self) -> Vec<String> {
        self.events().map(|(ty, _, _)| ty.to_string()).collect()
    }

    /// The events, moved out: type, encoded bytes, frame.
    pub fn into_events(self) -> Vec<(EventType, Vec<u8>, FrameInfo)> {
        self.heard
            .into_iter()
            .filter_map(|h| match h {
                Heard::Event(ty, json, f) => Some((ty, json, f)),
                _ => None,
            })
            .collect()
    }

    /// The violations: error, frame, message.
    pub fn violations(&self) -> impl Iterator<Item = (&Error, &FrameInfo, &str)> {
        self.heard.iter().filter_map(|h| match h {
            Heard::Violation(e, f, m) => Some((e, f, m.as_str())),
            _ => None,
        })
    }
}

impl Sink for Recorder {
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
        let mut json = Vec::new();
        encode(event, &mut json).expect("a Vec never fills");
        self.hear(Heard::Event(event.event_type(), json, *frame))
    }

    fn violation(
        &mut self,
        error: &Error,
        frame: &FrameInfo,
        message: &dyn fmt::Display,
    ) -> ControlFlow<()> {
        // The frame a violation is about is the one its error names, and
        // the error's byte is in it (or, for a frame the stream cut, at the
        // end where its JSON was cut).
        assert_eq!(frame.index, error.frame, "{error:?} {frame:?}");
        let past = frame.end.max(frame.start + 1) + u64::from(!frame.terminated);
        assert!(
            frame.start <= error.offset && error.offset < past,
            "{error:?} {frame:?}"
        );
        self.hear(Heard::Violation(*error, *frame, message.to_string()))
    }

    fn skipped(&mut self, skipped: &Skipped) -> ControlFlow<()> {
        self.hear(Heard::Skipped(*skipped))
    }
}

/// What one run delivered.
#[derive(Debug)]
pub struct Outcome {
    /// Each event: its type, the encoder's bytes, its frame.
    pub events: Vec<(EventType, Vec<u8>, FrameInfo)>,
    /// What `finish` (or the failing `push`) returned.
    pub result: Result<Summary, Error>,
    /// The failing pipeline's message for the error, if any.
    pub message: Option<String>,
}

impl Outcome {
    pub fn err(&self) -> Error {
        match &self.result {
            Err(e) => *e,
            Ok(s) => panic!(
                "expected an error, got {s:?} after {} events",
                self.events.len()
            ),
        }
    }

    pub fn ok(&self) -> Summary {
        match &self.result {
            Ok(s) => *s,
            Err(e) => panic!(
                "expected success, got {e:?} after {} events",
                self.events.len()
            ),
        }
    }

    pub fn encoded(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|(_, json, _)| String::from_utf8_lossy(json).into_owned())
            .collect()
    }
}

/// Runs `stream`, pushed in `chunk`-byte pieces (the whole stream if
/// `chunk == 0`), through a pipeline of the given capacities with a
/// `buffer`-byte frame buffer, into a [`Recorder`]; stops at the first
/// error.
pub fn run_sized<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize>(
    stream: &[u8],
    config: Config,
    buffer: usize,
    chunk: usize,
) -> Outcome {
    run_sized_with::<OPEN, OWNERS, ID_BYTES>(stream, config, Policy::Stop, buffer, chunk)
}

/// [`run_sized`] under another policy.
pub fn run_sized_with<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize>(
    stream: &[u8],
    config: Config,
    policy: Policy,
    buffer: usize,
    chunk: usize,
) -> Outcome {
    let mut buf = vec![0u8; buffer];
    let mut pipeline =
        Pipeline::<'_, OPEN, OWNERS, ID_BYTES>::sized(&mut buf, config).policy(policy);
    let mut sink = Recorder::new();
    let mut result = Ok(());
    let pieces: Vec<&[u8]> = match chunk {
        0 => vec![stream],
        n => stream.chunks(n).collect(),
    };
    for piece in pieces {
        result = pipeline.push(piece, &mut sink).map(drop);
        if result.is_err() {
            break;
        }
    }
    let result = result.and_then(|_| pipeline.finish(&mut sink));
    // A rendered message never panics, whatever the error.
    let message = result.as_ref().err().map(|e| {
        let _ = e.to_string();
        pipeline.message(e).to_string()
    });
    let events = sink.into_events();
    Outcome {
        events,
        result,
        message,
    }
}
