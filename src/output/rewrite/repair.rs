//! Repair: the final `RUN_ERROR` (a stop, a truncated run, a block too
//! large), after the events that close what is open
//! ([`Options::close_open`](super::Options::close_open)).
//!
//! What must close comes from the verifier
//! ([`Verifier::closing_events`]); each event goes out only if a copy of
//! the verifier accepts it, as the client's would (no `RUN_ERROR` after
//! another), and is written by the encoder, so that a canonical second
//! pass finds it as it is.

use core::fmt;

use crate::check::verify::{Closing, Verifier};
use crate::output::encode::{BufferFull, SliceWriter, Write, encode, encode_str};
use crate::pipeline::error::Error;
use crate::protocol::event_type::{EventType, Key};
use crate::view::event::Event;
use crate::view::json::RawJson;

use super::emit::Counted;
use super::guard::GUARDRAIL_CODE;
use super::{RewriteError, Rewriter, State, count_in};

/// The most a repair `RUN_ERROR` takes (its message is cut to fit).
pub(super) const RUN_ERROR_BYTES: usize = 1024;

/// The most one closing event takes besides its ids.
pub(super) const CLOSE_EVENT_BYTES: usize = 96;

/// The most a closing event may take as JSON text (an id too long for it,
/// 2 KiB escaped, is left open).
const CLOSE_JSON_BYTES: usize = 2048;

/// A final `RUN_ERROR`: its code, and its message as a JSON string.
pub(super) struct RunError {
    code: &'static str,
    /// `"message"`, escaped, cut (at a character) so that the whole event
    /// takes at most [`RUN_ERROR_BYTES`].
    message: [u8; RUN_ERROR_BYTES],
    len: usize,
    /// The code as a JSON string, after the message in `message`.
    code_len: usize,
}

/// What comes before the message in the event's JSON text.
const RUN_ERROR_HEAD: &[u8] = b"{\"type\":\"RUN_ERROR\",\"message\":\"";

impl RunError {
    pub(super) const fn new() -> Self {
        RunError {
            code: "",
            message: [0; RUN_ERROR_BYTES],
            len: 0,
            code_len: 0,
        }
    }

    /// Sets `code` and `message` (cut to fit).
    pub(super) fn set(&mut self, code: &'static str, message: &dyn fmt::Display) {
        // The message's room: what `{"type":"RUN_ERROR","message":"…",
        // "code":"…"}` leaves of RUN_ERROR_BYTES.
        let tail_len = code.len().saturating_add(12);
        let room = RUN_ERROR_BYTES
            .saturating_sub(tail_len)
            .saturating_sub(RUN_ERROR_HEAD.len());
        let mut w = Escaped {
            buf: &mut self.message,
            len: 0,
            limit: room.saturating_add(1),
        };
        let _ = w.raw(b"\"");
        // A message that does not fit is cut.
        let _ = fmt::write(&mut w, format_args!("{message}"));
        w.limit = w.buf.len();
        let _ = w.raw(b"\"");
        let len = w.len;
        let _ = w.raw(b"\"");
        let _ = w.raw(code.as_bytes());
        let _ = w.raw(b"\"");
        self.code_len = w.len.saturating_sub(len);
        self.len = len;
        self.code = code;
    }

    /// The message, escaped, without its quotes.
    fn message(&self) -> &[u8] {
        let quoted = self.message.get(..self.len).unwrap_or_default();
        quoted
            .get(1..self.len.saturating_sub(1))
            .unwrap_or_default()
    }

    /// The same code, with a message that says only that it was withheld.
    fn withheld(&self) -> Self {
        let mut run_error = RunError::new();
        let message = "the message is withheld: it names a call to a denied tool";
        run_error.set(self.code, &message);
        run_error
    }

    /// The event, in `dialect`.
    fn event(&self, dialect: crate::Dialect) -> Event<'_> {
        let (message, code) = self.message.split_at_checked(self.len).unwrap_or_default();
        let code = code.get(..self.code_len).unwrap_or_default();
        let mut event = Event::empty(EventType::RunError, dialect, None);
        event.set(Key::Message, Some(RawJson::trusted(message)));
        event.set(Key::Code, Some(RawJson::trusted(code)));
        event
    }
}

/// The stop policy's decision, taken in the sink: the final `RUN_ERROR`.
pub(super) struct Stop {
    run_error: RunError,
    stopped: bool,
    /// The input ended inside a frame's JSON (a truncation, whether or not
    /// a run had started).
    cut: bool,
}

impl Stop {
    pub(super) const fn new() -> Self {
        Stop {
            run_error: RunError::new(),
            stopped: false,
            cut: false,
        }
    }

    /// The input ended inside a frame's JSON.
    pub(super) fn set_cut(&mut self) {
        self.cut = true;
    }

    pub(super) fn cut(&self) -> bool {
        self.cut
    }

    pub(super) fn stopped(&self) -> bool {
        self.stopped
    }

    pub(super) fn set(&mut self, error: &Error, message: &dyn fmt::Display) {
        self.set_code(code_of(error), message);
    }

    pub(super) fn set_code(&mut self, code: &'static str, message: &dyn fmt::Display) {
        self.run_error.set(code, message);
        self.stopped = true;
    }

    /// The `RUN_ERROR` to end with, once stopped.
    pub(super) fn run_error(&self) -> Option<&RunError> {
        self.stopped.then_some(&self.run_error)
    }
}

/// A sink that hears only of a violation, which stops it (for the
/// pipeline's verdict on a spilling frame whose JSON already failed).
impl crate::pipeline::Sink for Stop {
    fn event(
        &mut self,
        _: &Event<'_>,
        _: &crate::pipeline::FrameInfo,
    ) -> core::ops::ControlFlow<()> {
        core::ops::ControlFlow::Continue(())
    }

    fn violation(
        &mut self,
        error: &Error,
        _: &crate::pipeline::FrameInfo,
        message: &dyn fmt::Display,
    ) -> core::ops::ControlFlow<()> {
        self.set(error, message);
        core::ops::ControlFlow::Break(())
    }
}

/// The final `RUN_ERROR`'s code for `e`.
pub(super) fn code_of(e: &Error) -> &'static str {
    if e.is_capacity() {
        "AGUI_STREAM_CAPACITY"
    } else {
        "AGUI_STREAM_VIOLATION"
    }
}

/// The message of `AGUI_EVENT_TOO_LARGE`.
pub(super) struct Limit {
    pub(super) len: usize,
    pub(super) max: u64,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "an event of at least {} bytes is larger than the {}-byte limit",
            self.len, self.max
        )
    }
}

impl<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize>
    Rewriter<'_, OPEN, OWNERS, ID_BYTES>
{
    /// The stream ended before the run finished: `AGUI_STREAM_TRUNCATED`.
    pub(super) fn truncated<W: Write + ?Sized>(&mut self, out: &mut W) -> Result<(), RewriteError> {
        let mut run_error = RunError::new();
        let message = "the stream ended before the run finished";
        run_error.set("AGUI_STREAM_TRUNCATED", &message);
        self.end_run(out, &run_error)
    }

    /// A block of `len` bytes (or more) exceeds the limit: the run ends
    /// with `AGUI_EVENT_TOO_LARGE`, and the rest of the input is ignored.
    /// `unguarded`: it outgrew the raw buffer with guard rules on, which
    /// cannot let its text go ahead of them: `AGUI_STREAM_CAPACITY`.
    pub(super) fn too_large<W: Write + ?Sized>(
        &mut self,
        len: usize,
        unguarded: bool,
        out: &mut W,
    ) -> Result<(), RewriteError> {
        let needed = self.frame_bound(0);
        if out.room() < needed {
            return Err(RewriteError::OutputFull { needed });
        }
        self.state = State::Ended;
        let mut run_error = RunError::new();
        if unguarded {
            self.stats.cut = self.stats.cut.saturating_add(1);
            let message = "an event larger than the raw buffer cannot be guarded";
            run_error.set("AGUI_STREAM_CAPACITY", &message);
        } else {
            self.stats.too_large = self.stats.too_large.saturating_add(1);
            let max = self.options.max_event_bytes;
            run_error.set("AGUI_EVENT_TOO_LARGE", &Limit { len, max });
        }
        self.end_run(out, &run_error)
    }

    /// Ends the run: closes what is open ([`Options::close_open`](super::Options::close_open)),
    /// then `run_error` — each event only if the verifier, as the client
    /// would, accepts it.
    pub(super) fn end_run<W: Write + ?Sized>(
        &mut self,
        out: &mut W,
        run_error: &RunError,
    ) -> Result<(), RewriteError> {
        let dialect = self.pipeline.config().dialect;
        let open = self.pipeline.verifier();
        let mut client = open.clone();
        let mut out = Counted {
            out,
            bytes: &mut self.stats.bytes_out,
        };
        let repairs = &mut self.stats.repairs;
        let events_out = &mut self.stats.events_out;
        let filter = &self.filter;
        let mut emit = |event: &Event<'_>, client: &mut Verifier<OPEN, OWNERS, ID_BYTES>| {
            if client.check(event).is_ok() {
                out.write_bytes(b"data: ")?;
                encode(event, &mut out)?;
                out.write_bytes(b"\n\n")?;
                *repairs = repairs.saturating_add(1);
                count_in(events_out, event.event_type().index());
            }
            Ok::<(), BufferFull>(())
        };
        // A run a guard rule blocked closes what is open whatever the
        // option says.
        if self.options.close_open || run_error.code == GUARDRAIL_CODE {
            let mut buf = [0u8; CLOSE_JSON_BYTES];
            for closing in open.closing_events() {
                // A call to a denied tool was never forwarded: nor is its END.
                if let Some(event) = closing_event(&mut buf, closing, dialect)
                    && filter.keeps(&event)
                {
                    emit(&event, &mut client)?;
                }
            }
        }
        // The pipeline's message may name the calls it is about, a denied
        // one among them.
        let withheld;
        let run_error = if filter.named_in(run_error.message()) {
            withheld = run_error.withheld();
            &withheld
        } else {
            run_error
        };
        emit(&run_error.event(dialect), &mut client)?;
        Ok(())
    }
}

/// The event `closing` says, its strings written into `buf` as
/// `JSON.stringify` writes them; `None` if its JSON text would take more
/// than `buf`.
fn closing_event<'b>(
    buf: &'b mut [u8],
    closing: Closing<'_>,
    dialect: crate::Dialect,
) -> Option<Event<'b>> {
    let ty = closing.event_type;
    // `{"type":TY[,KEY:ID][,"subagentRunId":OWNER]}`
    let mut size = Size(b"{\"type\":\"\"}".len().saturating_add(ty.as_str().len()));
    if let Some((key, id)) = closing.id {
        size.add(b",\"\":".len().saturating_add(key.as_str().len()));
        encode_str(id, &mut size).ok()?;
    }
    if let Some(owner) = closing.owner {
        size.add(b",\"subagentRunId\":".len());
        encode_str(owner, &mut size).ok()?;
    }
    if size.0 > buf.len() {
        return None;
    }
    let mut w = SliceWriter::new(buf);
    let id_len = match closing.id {
        Some((_, id)) => {
            encode_str(id, &mut w).ok()?;
            w.len()
        }
        None => 0,
    };
    if let Some(owner) = closing.owner {
        encode_str(owner, &mut w).ok()?;
    }
    let len = w.len();
    let (id, owner) = buf.get(..len)?.split_at_checked(id_len)?;
    let mut event = Event::empty(ty, dialect, None);
    if let Some((key, _)) = closing.id {
        event.set(key, Some(RawJson::trusted(id)));
    }
    if closing.owner.is_some() {
        let owner = Some(RawJson::trusted(owner));
        if event.names(Key::SubagentRunId) {
            event.set(Key::SubagentRunId, owner);
        } else {
            event.set_passthrough_tag(owner);
        }
    }
    Some(event)
}

/// A writer that only counts.
struct Size(usize);

impl Size {
    fn add(&mut self, n: usize) {
        self.0 = self.0.saturating_add(n);
    }
}

impl Write for Size {
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), BufferFull> {
        self.add(bytes.len());
        Ok(())
    }
}

/// A JSON string's contents, escaped, into a slice.
pub(super) struct Escaped<'a> {
    buf: &'a mut [u8],
    len: usize,
    limit: usize,
}

impl<'a> Escaped<'a> {
    /// Into all of `buf`.
    pub(super) fn new(buf: &'a mut [u8]) -> Self {
        let limit = buf.len();
        Escaped { buf, len: 0, limit }
    }

    /// Bytes written.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    fn raw(&mut self, bytes: &[u8]) -> Result<(), fmt::Error> {
        let end = self.len.checked_add(bytes.len()).ok_or(fmt::Error)?;
        if end > self.limit {
            return Err(fmt::Error);
        }
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }
}

impl fmt::Write for Escaped<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            let mut tmp = [0u8; 6];
            let bytes: &[u8] = match c {
                '"' => b"\\\"",
                '\\' => b"\\\\",
                '\n' => b"\\n",
                '\r' => b"\\r",
                '\t' => b"\\t",
                c if (c as u32) < 0x20 => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    let n = c as usize;
                    tmp = [
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX.get(n >> 4).copied().unwrap_or(b'0'),
                        HEX.get(n & 0xF).copied().unwrap_or(b'0'),
                    ];
                    &tmp
                }
                c => c.encode_utf8(&mut tmp).as_bytes(),
            };
            self.raw(bytes)?;
        }
        Ok(())
    }
}
