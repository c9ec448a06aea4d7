//! The work itself, the same on the device and on the host: `main.rs`
//! runs it on the Cortex-M4, `build.rs` runs it natively to write the
//! values the device must reproduce.

use agui_stream::Minting;
use agui_stream::rewrite::{Options, RewriteError, Rewriter};
use agui_stream::verify::RunPhase;
use agui_stream::{Config, Error, Event, EventType, FrameInfo, Pipeline, SliceWriter};

/// Bytes per push, like a UART FIFO or a small TCP receive buffer.
pub const PIECE: usize = 64;

/// The capacities of the default configuration: the crate's default
/// verifier tables, 2 KiB frame and raw buffers (every block of the bundled
/// streams fits).
#[cfg(not(feature = "small"))]
pub mod caps {
    /// Open ids the verifier tracks.
    pub const OPEN: usize = agui_stream::DEFAULT_OPEN_IDS;
    /// Owner records.
    pub const OWNERS: usize = agui_stream::DEFAULT_OWNERS;
    /// Bytes of id storage.
    pub const ID_BYTES: usize = agui_stream::DEFAULT_ID_BYTES;
    /// The pipeline's frame buffer.
    pub const FRAME: usize = 2048;
    /// The rewriter's raw buffer.
    pub const RAW: usize = 2048;
    /// The configuration's name.
    pub const NAME: &str = "default";
}

/// The small configuration: a quarter of the verifier tables, 256-byte
/// frame and raw buffers — the larger blocks spill past the frame buffer
/// (checked as they stream) and go out ahead of their verdict.
#[cfg(feature = "small")]
pub mod caps {
    /// Open ids the verifier tracks.
    pub const OPEN: usize = 8;
    /// Owner records.
    pub const OWNERS: usize = 8;
    /// Bytes of id storage.
    pub const ID_BYTES: usize = 384;
    /// The pipeline's frame buffer.
    pub const FRAME: usize = 256;
    /// The rewriter's raw buffer.
    pub const RAW: usize = 256;
    /// The configuration's name.
    pub const NAME: &str = "small";
}

/// The streams bundled in the firmware: three real captures and one
/// conformance stream with a violation (no real capture has one).
pub const STREAMS: [(&str, &[u8]); 4] = [
    (
        "agent-framework-tool-call",
        include_bytes!("../../../tests/corpus/real/agent-framework-tool-call.sse"),
    ),
    (
        "langgraph-tool-call",
        include_bytes!("../../../tests/corpus/real/langgraph-tool-call.sse"),
    ),
    (
        "pydantic-ai-tool-call",
        include_bytes!("../../../tests/corpus/real/pydantic-ai-tool-call.sse"),
    ),
    (
        "life-finish-open-tool (conformance)",
        include_bytes!("../../../tests/corpus/conformance/life-finish-open-tool.sse"),
    ),
];

/// The pipeline's configuration (the rewriter's too): V1, ids minted as
/// the reference oracle does, tool-call arguments checked.
pub const fn config() -> Config {
    Config::new()
        .minting(Minting::Deterministic)
        .check_tool_args(true)
}

/// What one stream gave: the pipeline's verdict and counts, the rewriter's
/// statistics and the hash of its output. The device must reproduce the
/// host's value exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// 0 complete, 1 ended without error but incomplete, 2 error.
    pub verdict: u8,
    /// For an error: its frame index and [`agui_stream::Stage::index`].
    pub error_frame: u64,
    /// The failing stage's index (0 without error).
    pub error_stage: u8,
    /// Events the pipeline delivered, by [`EventType::index`].
    pub by_type: [u32; EventType::COUNT],
    /// Frames read (summary, or up to the error).
    pub frames: u64,
    /// The rewriter: bytes in and out, events, forwarded blocks, encoded
    /// events, violations, repairs.
    pub bytes_in: u64,
    /// Output bytes.
    pub bytes_out: u64,
    /// Events the rewriter's pipeline delivered.
    pub events: u64,
    /// Blocks forwarded as their bytes.
    pub forwarded: u64,
    /// Events encoded.
    pub encoded: u64,
    /// Violations.
    pub violations: u64,
    /// Repairs written.
    pub repairs: u64,
    /// Blocks forwarded ahead of their verdict.
    pub streamed: u64,
    /// FNV-1a 64 of the rewriter's whole output.
    pub hash: u64,
}

/// FNV-1a, 64 bits, over pieces.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(pub u64);

impl Fnv {
    /// The offset basis.
    pub const fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    /// Hashes `bytes` on.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// What the device adds around each call: measuring its stack or its
/// time. The host's does nothing.
pub trait Meter {
    /// Runs one `push` or `finish`.
    fn call<R>(&mut self, what: Call, f: impl FnOnce() -> R) -> R;
}

/// The calls a [`Meter`] measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `Pipeline::push`.
    PipelinePush = 0,
    /// `Pipeline::finish`.
    PipelineFinish = 1,
    /// `Rewriter::push`.
    RewriterPush = 2,
    /// `Rewriter::finish`.
    RewriterFinish = 3,
}

/// The end of the pipeline's run, for the report.
pub enum End {
    /// No error: the summary's facts.
    Summary {
        /// The last run's phase.
        run: RunPhase,
        /// Complete (see [`agui_stream::Summary::is_complete`]).
        complete: bool,
        /// Events delivered.
        events: u64,
        /// Bytes read.
        bytes: u64,
    },
    /// The error that stopped it.
    Error(Error),
}

/// The buffers one stream needs (statics on the device).
pub struct Buffers {
    /// The pipeline's frame buffer.
    pub frame: [u8; caps::FRAME],
    /// The rewriter's frame buffer.
    pub rw_frame: [u8; caps::FRAME],
    /// The rewriter's raw buffer.
    pub raw: [u8; caps::RAW],
    /// The rewriter's output buffer (a transmit buffer, drained after
    /// every push).
    pub out: [u8; OUT],
}

impl Buffers {
    /// Zeroed buffers.
    pub const fn new() -> Self {
        Buffers {
            frame: [0; caps::FRAME],
            rw_frame: [0; caps::FRAME],
            raw: [0; caps::RAW],
            out: [0; OUT],
        }
    }
}

/// The output buffer: room for the worst case of the largest block that
/// can be pending — a raw buffer's worth plus one piece — three times over
/// plus the rewriter's slack for synthesized events and a final RUN_ERROR
/// (`Rewriter::frame_bound`, checked at run time).
pub const OUT: usize = 3 * (caps::RAW + PIECE) + 3808;

/// Runs `bytes` through the pipeline (stop at the first violation) and
/// through the rewriter (stop policy, repair), both in [`PIECE`]-byte
/// pushes. `log` hears every event of the pipeline, `report` its end (with
/// the message of its error).
pub fn run<M: Meter>(
    bytes: &[u8],
    bufs: &mut Buffers,
    meter: &mut M,
    log: &mut dyn FnMut(&Event<'_>, &FrameInfo),
    report: &mut dyn FnMut(&End, &dyn core::fmt::Display),
) -> Result<Outcome, RewriteError> {
    let mut by_type = [0u32; EventType::COUNT];
    // The pipeline alone.
    let mut pipeline: Pipeline<'_, { caps::OPEN }, { caps::OWNERS }, { caps::ID_BYTES }> =
        Pipeline::sized(&mut bufs.frame, config());
    let result = {
        let mut sink = |ev: &Event<'_>, f: &FrameInfo| {
            if let Some(n) = by_type.get_mut(ev.event_type().index()) {
                *n += 1;
            }
            log(ev, f);
        };
        let mut result = Ok(0);
        for piece in bytes.chunks(PIECE) {
            result = meter.call(Call::PipelinePush, || pipeline.push(piece, &mut sink));
            if result.is_err() {
                break;
            }
        }
        result.and_then(|_| meter.call(Call::PipelineFinish, || pipeline.finish(&mut sink)))
    };
    let (verdict, error_frame, error_stage, frames) = match result {
        Ok(s) => {
            let end = End::Summary {
                run: s.run,
                complete: s.is_complete(),
                events: s.events,
                bytes: s.bytes,
            };
            report(&end, &"");
            (u8::from(!s.is_complete()), 0, 0, s.frames)
        }
        Err(e) => {
            report(&End::Error(e), &pipeline.message(&e));
            (2, e.frame, e.stage.index() as u8, pipeline.frames())
        }
    };

    // The gateway rewriter, its output drained into the hash after every
    // push as a transmit buffer would be.
    let mut rewriter: Rewriter<'_, { caps::OPEN }, { caps::OWNERS }, { caps::ID_BYTES }> =
        Rewriter::sized(&mut bufs.rw_frame, &mut bufs.raw, config(), Options::new());
    let needed = rewriter.frame_bound(caps::RAW + PIECE);
    if needed > OUT {
        return Err(RewriteError::OutputFull { needed });
    }
    let mut hash = Fnv::new();
    'pieces: for piece in bytes.chunks(PIECE) {
        let mut rest = piece;
        while !rest.is_empty() {
            let mut out = SliceWriter::new(&mut bufs.out);
            let pushed = meter.call(Call::RewriterPush, || rewriter.push(rest, &mut out))?;
            hash.update(out.written());
            if pushed.ended {
                break 'pieces;
            }
            rest = rest.get(pushed.read..).unwrap_or_default();
        }
    }
    let mut out = SliceWriter::new(&mut bufs.out);
    meter.call(Call::RewriterFinish, || rewriter.finish(&mut out))?;
    hash.update(out.written());
    let s = rewriter.stats();
    Ok(Outcome {
        verdict,
        error_frame,
        error_stage,
        by_type,
        frames,
        bytes_in: s.bytes_in,
        bytes_out: s.bytes_out,
        events: s.events,
        forwarded: s.forwarded,
        encoded: s.encoded,
        violations: s.violations,
        repairs: s.repairs,
        streamed: s.streamed,
        hash: hash.0,
    })
}
