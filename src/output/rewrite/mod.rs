//! The output side: a stream rewriter for gateways. Bytes in, bytes out,
//! in fixed memory.
//!
//! [`Rewriter`] runs the [`Pipeline`] and writes what a client should see:
//!
//! * every block that passes unchanged as its **original bytes** (its
//!   `event:`/`id:` lines, comments, keep-alives, blank lines), never
//!   re-encoded; a block with CR or CRLF line ends, or a bare `data` line,
//!   which the reference client cannot read, with LF line ends instead;
//! * events the pipeline synthesized (a chunk's START/CONTENT/END, V1's
//!   `REASONING_*` for `THINKING_*`) as `data: {json}\n\n`;
//! * on a violation, what [`OnViolation`] says; at the end of a stream cut
//!   mid-run, a `RUN_ERROR` with code `AGUI_STREAM_TRUNCATED` ([`Options::repair`]);
//!   and what the other [`Options`] and [`Rewriter::deny_tools`] ask for
//!   (closing what is open, a largest event, canonical form, no `RAW`);
//! * with [`Rewriter::guard`], each message's text masked, counted or
//!   blocked by content rules ([`guard`](crate::guard)).
//!
//! Output holds only complete blocks: a proxy forwards each push's output at
//! once, and the unfinished tail waits in the rewriter's raw buffer. Before
//! each block the rewriter makes sure the writer has room for the block's
//! worst case ([`Rewriter::frame_bound`]); if not, `push` returns how much it
//! read, and the caller drains the writer and pushes the rest — nothing is
//! lost.
//!
//! ```
//! use agui_stream::{Config, rewrite::{Options, Rewriter}};
//! let (mut frames, mut raw) = ([0u8; 256], [0u8; 256]);
//! let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
//! let mut out = Vec::new();
//! let input = b": ping\n\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
//!               data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"hi\"}\n\n";
//! let pushed = rewriter.push(input, &mut out)?;
//! assert_eq!(pushed.read, input.len());
//! rewriter.finish(&mut out)?; // the run never finished: repaired
//! let out = String::from_utf8(out).unwrap();
//! assert!(out.starts_with(": ping\n\ndata: {\"type\":\"RUN_STARTED\""));
//! assert!(out.contains("data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}\n\n"));
//! assert!(out.ends_with("\"code\":\"AGUI_STREAM_TRUNCATED\"}\n\n"));
//! # Ok::<(), agui_stream::rewrite::RewriteError>(())
//! ```

// One struct, its `impl` blocks split by concern into files, in the order
// the data flows: `push` → `admission` (block end, output bound, size
// limit) → the pipeline with the `sink` (verdict → action) driving the
// `forward` sink's frame bookkeeping, the `emit`ter (coalescing, BOM, the
// forwarded-as-is fast path; `relines` where needed) and the tool `filter`
// → the `spool` keeps what is not accounted for, or streams a long block
// ahead of its verdict → `repair` at a stop or at `finish`; `guard` rewrites
// the text lanes' content events.

mod admission;
mod emit;
mod error;
mod filter;
mod forward;
mod guard;
mod options;
mod relines;
mod repair;
mod request;
mod sink;
mod split;
mod spool;
mod stats;
#[cfg(test)]
mod tests;

pub use error::{Pushed, RewriteError};
pub use filter::{DENIED_CALL_ID_BYTES, DENIED_CALLS, DENIED_TOOL_BYTES, DENIED_TOOLS, ToolTables};
pub use guard::{GUARD_ID_BYTES, GUARD_LANES, GUARDRAIL_CODE, GuardLanes, RuleCounts};
pub use options::{OnViolation, Options};
pub use request::{Refusal, RequestRewriter, RequestStats};
pub use stats::Stats;

use crate::output::encode::Write;
use crate::pipeline::error::{Error, Stage};
use crate::pipeline::{
    Config, DEFAULT_ID_BYTES, DEFAULT_OPEN_IDS, DEFAULT_OWNERS, Pipeline, Policy, Summary,
};

use admission::BlockEnd;
use emit::{Emitter, Lines};
use filter::Tools;
use forward::Forward;
use repair::Stop;
use spool::{Spool, Window};
use stats::count_in;

/// An SSE byte stream → the stream a client should see, in fixed memory:
/// the pipeline's frame buffer, and a raw buffer for the original bytes of
/// a block that spans pushes.
#[derive(Debug)]
pub struct Rewriter<
    'b,
    const OPEN: usize = DEFAULT_OPEN_IDS,
    const OWNERS: usize = DEFAULT_OWNERS,
    const ID_BYTES: usize = DEFAULT_ID_BYTES,
> {
    pipeline: Pipeline<'b, OPEN, OWNERS, ID_BYTES>,
    /// The raw buffer, and how far the stream is accounted for.
    spool: Spool<'b>,
    /// How the output's last line stands (CR, bare `data`).
    lines: Lines,
    /// The block-end look-ahead.
    scan: BlockEnd,
    options: Options,
    stats: Stats,
    state: State,
    /// The tool tables borrowed ([`Rewriter::deny_tools`]).
    filter: Tools<'b>,
    /// The guard's rules and lanes borrowed ([`Rewriter::guard`]).
    guard: guard::Lent<'b>,
    /// [`Rewriter::let_ahead`] was called where the stream was at this
    /// offset less one (0: it was not): the block in flight then may go
    /// out ahead of its verdict.
    ahead_from: u64,
}

/// Where the rewriter stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    /// Stopped by the policy, or finished.
    Ended,
}

impl<'b> Rewriter<'b> {
    /// A rewriter with the default capacities. `frame_buffer` is the
    /// pipeline's (see [`Pipeline::new`]); `raw_buffer` holds the original
    /// bytes of a block that spans pushes, so it bounds the blocks that can.
    /// What to do on a violation is [`Options::on_violation`].
    pub fn new(
        frame_buffer: &'b mut [u8],
        raw_buffer: &'b mut [u8],
        config: Config,
        options: Options,
    ) -> Self {
        Self::sized(frame_buffer, raw_buffer, config, options)
    }
}

impl<'b, const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize>
    Rewriter<'b, OPEN, OWNERS, ID_BYTES>
{
    /// A rewriter with the capacities of its type parameters (see
    /// [`Pipeline::sized`]).
    pub fn sized(
        frame_buffer: &'b mut [u8],
        raw_buffer: &'b mut [u8],
        config: Config,
        options: Options,
    ) -> Self {
        // The policies are the rewriter's: the pipeline reports every
        // violation, and the stop policy stops it.
        Rewriter {
            pipeline: Pipeline::sized_with(frame_buffer, config, Policy::Monitor),
            spool: Spool::new(raw_buffer),
            lines: Lines::new(),
            scan: BlockEnd::new(),
            options,
            stats: Stats::default(),
            state: State::Open,
            filter: Tools(None),
            guard: guard::Lent(None),
            ahead_from: 0,
        }
    }

    /// Removes every event of calls to the tools `tables` denies
    /// ([`ToolTables::deny`]) — TOOL_CALL_START, ARGS, END and RESULT —
    /// from the output, keeping the run's calls to them in `tables`. It
    /// works on normalized events, so chunk continuations without ids
    /// cannot leak. A rewriter that is given no tables keeps every call,
    /// and their 1,832 bytes are not part of its state.
    pub fn deny_tools(&mut self, tables: &'b mut ToolTables) {
        self.filter = Tools(Some(tables));
    }

    /// Guards the text of every text message, reasoning message and V0
    /// thinking message with `rules`, each message a lane of its own in
    /// `lanes`, which hold the rules (see [`guard`](crate::guard)): a match is masked, counted,
    /// or ends the run with `RUN_ERROR` code [`GUARDRAIL_CODE`] after
    /// closing what is open. A rewriter without rules holds no lanes, and
    /// its output is what it was.
    ///
    /// ```
    /// use agui_stream::{Config, guard::{Action, Detector, Rule, Rules}};
    /// use agui_stream::rewrite::{GuardLanes, Options, Rewriter};
    /// let rules: Rules<'_> = Rules::new(&[Rule::builtin(Detector::Email, Action::Mask)]).unwrap();
    /// let mut lanes = GuardLanes::new(&rules);
    /// let (mut frames, mut raw) = ([0u8; 1024], [0u8; 1024]);
    /// let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    /// rewriter.guard(&mut lanes);
    /// let mut out = Vec::new();
    /// rewriter.push(b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
    ///     data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"mail ada@exa\"}\n\n\
    ///     data: {\"type\":\"TEXT_MESSAGE_CHUNK\",\"messageId\":\"m\",\"delta\":\"mple.org!\"}\n\n\
    ///     data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n", &mut out)?;
    /// let out = String::from_utf8(out).unwrap();
    /// assert!(out.contains("\"delta\":\"mail \"}"));
    /// assert!(out.contains("\"delta\":\"[REDACTED]!\"}"));
    /// assert!(!out.contains("ada@"));
    /// # Ok::<(), agui_stream::rewrite::RewriteError>(())
    /// ```
    pub fn guard(&mut self, lanes: &'b mut GuardLanes<'b>) {
        self.guard = guard::Lent(Some(lanes));
    }

    /// Takes back the guard's lanes ([`guard`](Self::guard)): the
    /// rewriter guards no more.
    pub fn take_guard(&mut self) -> Option<&'b mut GuardLanes<'b>> {
        self.guard.0.take()
    }

    /// The guard's lanes and counts, if it has rules.
    pub fn guard_lanes(&self) -> Option<&GuardLanes<'b>> {
        self.guard.0.as_deref()
    }

    /// Ends the rewriter and gives its frame and raw buffers back, for the
    /// next stream, as a server does that keeps one pair per connection:
    ///
    /// ```
    /// use agui_stream::{Config, rewrite::{Options, Rewriter}};
    /// let (mut frames, mut raw) = ([0u8; 1024], [0u8; 1024]);
    /// let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    /// let mut out = heapless::Vec::<u8, 8192>::new();
    /// rewriter.push(b": first stream\n\n", &mut out)?;
    /// let (frames, raw) = rewriter.into_buffers();
    /// let next = Rewriter::new(frames, raw, Config::new(), Options::new());
    /// assert_eq!(next.stats().bytes_in, 0);
    /// # Ok::<(), agui_stream::rewrite::RewriteError>(())
    /// ```
    pub fn into_buffers(self) -> (&'b mut [u8], &'b mut [u8]) {
        (self.pipeline.into_buffer(), self.spool.into_buffer())
    }

    /// Ends the rewriter and gives back its buffers and the tool tables it
    /// was given ([`deny_tools`](Self::deny_tools)).
    #[allow(clippy::type_complexity)]
    pub fn into_parts(self) -> (&'b mut [u8], &'b mut [u8], Option<&'b mut ToolTables>) {
        let tables = self.filter.0;
        (
            self.pipeline.into_buffer(),
            self.spool.into_buffer(),
            tables,
        )
    }

    /// Whether the buffers hold part of a block: one that spans pushes
    /// (its payload in the frame buffer, its original bytes in the raw
    /// buffer). Between blocks they hold nothing, and
    /// [`take_buffers`](Self::take_buffers) can lend them to another stream;
    /// once the stream has ended, too.
    pub fn holds_block(&self) -> bool {
        self.state == State::Open
            && (self.spool.len() != 0 || self.pipeline.holds_frame() || self.spool.splitting())
    }

    /// Takes the frame and raw buffers out while they hold nothing
    /// ([`holds_block`](Self::holds_block) is false; else `None`), and
    /// leaves the rewriter with empty ones. Its state stays: give it
    /// buffers again with [`put_buffers`](Self::put_buffers) before its
    /// next push, which may be of other buffers, of another size. So a
    /// gateway needs buffers only for streams with a block in flight, not
    /// for every stream open (pushed without buffers, a block that spans
    /// pushes is [`RewriteError::RawBuffer`]).
    ///
    /// ```
    /// use agui_stream::{Config, rewrite::{Options, Rewriter}};
    /// let (mut frames, mut raw) = ([0u8; 1024], [0u8; 1024]);
    /// let mut rewriter = Rewriter::new(&mut [], &mut [], Config::new(), Options::new());
    /// let mut out = Vec::new();
    /// let mut lent = Some((&mut frames[..], &mut raw[..]));
    /// let stream = b": ping\n\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
    /// for push in stream.chunks(32) {
    ///     if let Some((frames, raw)) = lent.take() {
    ///         rewriter.put_buffers(frames, raw).unwrap();
    ///     }
    ///     rewriter.push(push, &mut out)?;
    ///     // Between blocks the buffers go back (after the last push).
    ///     lent = rewriter.take_buffers();
    ///     assert_eq!(lent.is_some(), !rewriter.holds_block());
    /// }
    /// assert!(lent.is_some());
    /// assert_eq!(out, stream);
    /// # Ok::<(), agui_stream::rewrite::RewriteError>(())
    /// ```
    pub fn take_buffers(&mut self) -> Option<(&'b mut [u8], &'b mut [u8])> {
        if self.holds_block() {
            return None;
        }
        let frames = self.pipeline.replace_buffer(&mut []);
        let raw = self.spool.replace_buffer(&mut []);
        Some((frames, raw))
    }

    /// Gives the rewriter `frames` and `raw` to read on with, and returns
    /// the buffers it had (empty ones after
    /// [`take_buffers`](Self::take_buffers)).
    ///
    /// # Errors
    ///
    /// The buffers given, untouched, if the rewriter's own hold part of a
    /// block ([`holds_block`](Self::holds_block)).
    #[allow(clippy::type_complexity)]
    pub fn put_buffers(
        &mut self,
        frames: &'b mut [u8],
        raw: &'b mut [u8],
    ) -> Result<(&'b mut [u8], &'b mut [u8]), (&'b mut [u8], &'b mut [u8])> {
        if self.holds_block() {
            return Err((frames, raw));
        }
        let frames = self.pipeline.replace_buffer(frames);
        let raw = self.spool.replace_buffer(raw);
        Ok((frames, raw))
    }

    /// Puts `raw` in place of the raw buffer, with the bytes it holds, and
    /// returns the old one: where a push stopped at a block that outgrew it
    /// ([`Pushed::held`], with [`Options::hold`]), a larger one lets the
    /// block grow on, so that it goes out whole once its verdict is known.
    ///
    /// ```
    /// use agui_stream::{Config, rewrite::{Options, Rewriter}};
    /// let (mut frames, mut raw, mut larger) = ([0u8; 256], [0u8; 64], [0u8; 256]);
    /// let options = Options::new().hold(true);
    /// let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), options);
    /// let event = format!(
    ///     "data: {{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"{}\"}}\n\n",
    ///     "r".repeat(100)
    /// );
    /// let (first, last) = event.as_bytes().split_at(event.len() - 1);
    /// let mut out = Vec::new();
    /// let pushed = rewriter.push(first, &mut out)?;
    /// assert!(pushed.held && pushed.read == 64 && out.is_empty());
    /// rewriter.grow_raw(&mut larger).unwrap();
    /// rewriter.push(&first[pushed.read..], &mut out)?;
    /// assert!(out.is_empty()); // held, never in pieces
    /// rewriter.push(last, &mut out)?;
    /// assert_eq!(out, event.as_bytes());
    /// # Ok::<(), agui_stream::rewrite::RewriteError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// `raw`, untouched, if it is shorter than what the raw buffer holds.
    pub fn grow_raw(&mut self, raw: &'b mut [u8]) -> Result<&'b mut [u8], &'b mut [u8]> {
        self.spool.grow(raw)
    }

    /// The raw buffer's length: the most of a block that spans pushes it
    /// holds.
    pub fn raw_capacity(&self) -> usize {
        self.spool.capacity()
    }

    /// Lets the block in flight go out ahead of its verdict although
    /// [`Options::hold`] is on, where no larger raw buffer can be had (a
    /// budget spent, a limit reached): it then streams as without
    /// `hold`. The next block is held again.
    pub fn let_ahead(&mut self) {
        self.ahead_from = self.pipeline.offset().saturating_add(1);
    }

    /// What went through so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The pipeline underneath (its verifier, offset and message renderer).
    pub fn pipeline(&self) -> &Pipeline<'b, OPEN, OWNERS, ID_BYTES> {
        &self.pipeline
    }

    /// Input bytes fully accounted for in the output so far (written,
    /// re-written, replaced or dropped); the rest waits in the raw buffer.
    pub fn accounted(&self) -> u64 {
        self.spool.marks.accounted
    }

    /// Writes a `: ping` keep-alive comment (a proxy's idle timer calls it):
    /// the output holds only whole blocks, so any moment between pushes is
    /// between frames. Returns false once the stream has ended.
    ///
    /// # Errors
    ///
    /// [`RewriteError::OutputFull`] without room for it.
    pub fn keep_alive<W: Write + ?Sized>(&mut self, out: &mut W) -> Result<bool, RewriteError> {
        const PING: &[u8] = b": ping\n\n";
        if self.state == State::Ended {
            return Ok(false);
        }
        if out.room() < PING.len() {
            return Err(RewriteError::OutputFull { needed: PING.len() });
        }
        out.write_bytes(PING)?;
        self.stats.bytes_out = self.stats.bytes_out.saturating_add(PING.len() as u64);
        self.stats.keep_alives = self.stats.keep_alives.saturating_add(1);
        Ok(true)
    }

    /// Ends the input: a cut last frame is terminated (dropped, or cut if
    /// it went out ahead of its verdict, where the input ended inside its
    /// JSON), and a run left open gets its `RUN_ERROR` (with
    /// [`Options::repair`]). Returns the
    /// pipeline's summary (`None` if the stream had already ended).
    ///
    /// # Errors
    ///
    /// [`RewriteError::OutputFull`] (nothing done: drain and call again),
    /// [`RewriteError::Write`].
    pub fn finish<W: Write + ?Sized>(
        &mut self,
        out: &mut W,
    ) -> Result<Option<Summary>, RewriteError> {
        if self.state == State::Ended {
            return Ok(None);
        }
        let needed = self.frame_bound(self.spool.len());
        if out.room() < needed {
            return Err(RewriteError::OutputFull { needed });
        }
        let base = self.pipeline.offset();
        let mut stop = Stop::new();
        let (result, failed) =
            self.with_forward(&[], Some(false), base, out, &mut stop, |pipeline, sink| {
                let result = pipeline.finish(sink);
                if result.is_ok() && !sink.stop.stopped() {
                    sink.rest(base);
                }
                result
            });
        self.state = State::Ended;
        if failed {
            return Err(RewriteError::Write);
        }
        if let Some(run_error) = stop.run_error() {
            self.end_run(out, run_error)?;
            return Ok(None);
        }
        let summary = match result {
            Ok(summary) => summary,
            Err(e) => {
                self.stop(e, out)?;
                return Ok(None);
            }
        };
        // A run that never finished, or a stream cut inside a frame where
        // no run was going (its own RUN_STARTED, cut): the client learns
        // the run failed (`end_run` writes the RUN_ERROR only where the
        // client accepts one: a RUN_ERROR may be a stream's first event).
        if self.options.repair
            && (summary.run == crate::check::verify::RunPhase::Active || stop.cut())
        {
            self.truncated(out)?;
        }
        Ok(Some(summary))
    }

    /// Runs `chunk` (whole blocks, or a last block that goes on) through the
    /// pipeline, and keeps what is not accounted for in the raw buffer.
    /// Pushes `chunk`; `plain` as [`relines::plain`] says of it (`None`:
    /// not known yet).
    fn run<W: Write + ?Sized>(
        &mut self,
        chunk: &[u8],
        plain: Option<bool>,
        out: &mut W,
    ) -> Result<(), RewriteError> {
        let base = self.pipeline.offset();
        let raw_start = self.spool.marks.accounted;
        let mut stop = Stop::new();
        let (result, failed) =
            self.with_forward(chunk, plain, base, out, &mut stop, |pipeline, sink| {
                let pushed = pipeline.push(chunk, sink)?;
                // A block that is going out ahead of its verdict is cut as
                // soon as its JSON is known bad, not at its end (which may
                // be far off, or never come): the same cut and error.
                if sink.marks.streamed != 0 && !sink.stop.stopped() {
                    pipeline.report_failed_spill(sink).transpose()?;
                }
                Ok(pushed)
            });
        self.stats.bytes_in = self.stats.bytes_in.saturating_add(chunk.len() as u64);
        if failed {
            self.state = State::Ended;
            return Err(RewriteError::Write);
        }
        if let Some(run_error) = stop.run_error() {
            self.state = State::Ended;
            return self.end_run(out, run_error);
        }
        if let Err(e) = result {
            return self.stop(e, out);
        }
        let end = base.saturating_add(chunk.len() as u64);
        let mut head = None;
        if let Some(upto) = self.spool.ahead(end) {
            // The unfinished block outgrew the raw buffer: out it goes
            // ahead of its verdict, all but its last bytes — in pieces
            // that are events of their own, if it is a delta that splits.
            head = self.go_ahead(chunk, base, upto, out)?;
            if self.state == State::Ended {
                return Ok(());
            }
        }
        if let Err(e) = self.spool.keep(raw_start, Window::new(base, chunk)) {
            self.state = State::Ended;
            return Err(e);
        }
        if let Some(head) = head
            && !self.spool.keep_head(head.bytes())
        {
            // (Room was checked in `go_ahead`.)
            return self.split_outgrown(out);
        }
        // The block let ahead is over: the next one is held again.
        if self.ahead_from != 0
            && self.spool.marks.streamed == 0
            && self.spool.marks.accounted >= self.ahead_from
        {
            self.ahead_from = 0;
        }
        Ok(())
    }

    /// Writes the unfinished block, which outgrew the raw buffer, up to
    /// stream offset `upto` (`chunk` from `base` ran): as it is, or, where
    /// it is a delta that splits ([`Options::split`]), as pieces. Returns
    /// the head of a delta that starts to split.
    fn go_ahead<W: Write + ?Sized>(
        &mut self,
        chunk: &[u8],
        base: u64,
        upto: u64,
        out: &mut W,
    ) -> Result<Option<split::Head>, RewriteError> {
        let first = self.spool.marks.streamed == 0;
        if first {
            self.stats.streamed = self.stats.streamed.saturating_add(1);
        }
        // (Canonical form re-encodes every event: none can go out ahead.)
        let split = first && self.options.split && !self.options.canonical;
        // Room for the head beside a piece's worth.
        let capacity = self.spool.capacity();
        let end = base.saturating_add(chunk.len() as u64);
        let mut stop = Stop::new();
        let (head, failed) = self.with_forward(
            chunk,
            Some(false),
            base,
            out,
            &mut stop,
            |pipeline, sink| {
                let from = sink.gap_start();
                let mut head = None;
                let to = if !sink.head.is_empty() {
                    let head = sink.head;
                    sink.piece(head, sink.marks.streamed, upto, end)
                } else if split
                    && let Some(h) = split::Head::of(sink.emit.parts(from, end))
                    && h.bytes().len().saturating_add(split::ROOM) <= capacity
                    && pipeline.continues(h.ty, h.id())
                    && sink.filter.keeps_call(h.ty, h.id())
                {
                    let start = from.saturating_add(h.skip as u64);
                    sink.forward(from, start);
                    if sink.emit.lines().settled() {
                        let content = start.saturating_add(h.bytes().len() as u64);
                        let to = sink.piece(h.bytes(), content, upto, end);
                        head = Some(h);
                        to
                    } else {
                        sink.forward(start, upto);
                        upto
                    }
                } else {
                    sink.forward(from, upto);
                    upto
                };
                sink.marks.streamed = to;
                sink.marks.accounted = to;
                head
            },
        );
        if failed {
            self.state = State::Ended;
            return Err(RewriteError::Write);
        }
        let head_len = head.as_ref().map_or(0, |h| h.bytes().len());
        let room = self.spool.capacity().saturating_sub(head_len) as u64;
        if (head.is_some() || self.spool.splitting())
            && end.saturating_sub(self.spool.marks.accounted) > room
        {
            // What follows the pieces outgrew the raw buffer: bytes no JSON
            // string holds (the pipeline's verdict, if it has one: the
            // stream ends with it), or the members after a long delta.
            let mut verdict = Stop::new();
            if self.pipeline.report_failed_spill(&mut verdict).is_some()
                && let Some(run_error) = verdict.run_error()
            {
                self.stats.violations = self.stats.violations.saturating_add(1);
                // (A spilled frame's JSON error.)
                count_in(&mut self.stats.violations_by_stage, Stage::Json.index());
                self.state = State::Ended;
                self.end_run(out, run_error)?;
            } else {
                self.split_outgrown(out)?;
            }
            return Ok(None);
        }
        Ok(head)
    }

    /// A split delta's rest outgrew the raw buffer: the stream ends with
    /// `AGUI_STREAM_CAPACITY` after the pieces (whole events) that went out.
    fn split_outgrown<W: Write + ?Sized>(&mut self, out: &mut W) -> Result<(), RewriteError> {
        let mut run_error = repair::RunError::new();
        let message = "the rest of a delta split into events outgrew the raw buffer";
        run_error.set("AGUI_STREAM_CAPACITY", &message);
        self.stats.cut = self.stats.cut.saturating_add(1);
        self.state = State::Ended;
        self.end_run(out, &run_error)
    }

    /// Runs `f` with the pipeline and a sink writing to `out`; `chunk` is
    /// what the pipeline reads from stream offset `base` on. Also returns
    /// whether `out` failed.
    fn with_forward<W: Write + ?Sized, T>(
        &mut self,
        chunk: &[u8],
        chunk_plain: Option<bool>,
        base: u64,
        out: &mut W,
        stop: &mut Stop,
        f: impl FnOnce(&mut Pipeline<'b, OPEN, OWNERS, ID_BYTES>, &mut Forward<'_, W>) -> T,
    ) -> (T, bool) {
        let (raw, head, marks) = self.spool.split(base);
        let emit = Emitter::new(
            out,
            raw,
            Window::new(base, chunk),
            chunk_plain,
            &mut self.lines,
            self.stats.bytes_out,
        );
        let mut sink = Forward {
            emit,
            marks,
            head,
            stats: &mut self.stats,
            options: self.options,
            filter: self.filter.reborrow(),
            guard: self.guard.reborrow(),
            stop,
            frame: Default::default(),
        };
        let result = f(&mut self.pipeline, &mut sink);
        let failed = sink.end();
        self.spool.settle();
        (result, failed)
    }

    /// The pipeline failed: the policy's final `RUN_ERROR`, then nothing.
    fn stop<W: Write + ?Sized>(&mut self, e: Error, out: &mut W) -> Result<(), RewriteError> {
        self.state = State::Ended;
        self.stats.violations = self.stats.violations.saturating_add(1);
        count_in(&mut self.stats.violations_by_stage, e.stage.index());
        let mut run_error = repair::RunError::new();
        run_error.set(repair::code_of(&e), &self.pipeline.message(&e));
        self.end_run(out, &run_error)
    }
}
