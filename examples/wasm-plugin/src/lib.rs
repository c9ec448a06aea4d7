//! agui-stream's gateway rewriter as a wasm32 module for plugin hosts:
//! no allocator, no imports, fixed memory, a push ABI.
//!
//! The host writes each chunk of the upstream's body at
//! [`agui_input_ptr`] and calls [`agui_push`]; the module rewrites it and
//! leaves the client's bytes at [`agui_output_ptr`] / [`agui_output_len`],
//! exactly what the native [`Rewriter`] writes (and `agui gateway`
//! prints) for the same input and flags. At the end of the body the host
//! calls [`agui_finish`] (repair and the end-of-stream verdict). The
//! statistics and the last error are one JSON object at
//! [`agui_report_ptr`] / [`agui_report_len`], with the fields of
//! `agui gateway`'s stderr line.
//!
//! ```text
//! agui_init(1, 0)                          // V1, stop on violation, repair
//! for chunk in body:                       // any split
//!     while chunk not empty:
//!         n = min(len(chunk), agui_input_cap())
//!         copy chunk[..n] to agui_input_ptr(); chunk = chunk[n..]
//!         code = agui_push(n)              // 0 go on, 1 ended, < 0 error
//!         send agui_output_ptr()[..agui_output_len()]
//!         while code == 0 and agui_pending() > 0:
//!             code = agui_push(0); send the output
//! code = agui_finish(); send the output
//! ```
//!
//! Backpressure: a push reads as much input as the output buffer can take
//! the worst case of; what it could not read stays *pending* in the input
//! buffer, and [`agui_input_ptr`] / [`agui_input_cap`] then point past it.
//! `agui_push(0)` reads on once the host has taken the output. With the
//! sizes below a push of [`agui_input_cap`] bytes leaves input pending only
//! on streams of many tiny frames.
//!
//! Return codes of [`agui_init`], [`agui_push`], [`agui_finish`] and
//! [`agui_deny_tool`]:
//!
//! | code | meaning |
//! |-----:|---------|
//! | 0 | go on |
//! | 1 | the stream has ended (stopped by the policy; later input is ignored) |
//! | -1 | not initialized: call `agui_init` first |
//! | -2 | bad argument: a length outside `0..=agui_input_cap()`, a dialect other than 0 or 1, unknown flag bits, a tool name that is not UTF-8 |
//! | -3 | already finished: `agui_init` starts the next stream |
//! | -4 | the output buffer cannot take the next block's worst case even empty (cannot happen with these sizes) |
//! | -5 | a block outgrew the raw buffer (cannot happen with these sizes) |
//! | -6 | the output writer failed |
//! | -7 | more denied tool names than the rewriter holds |
//! | -8 | input is still pending at `agui_finish`: push(0) until `agui_pending()` is 0 |
//!
//! After a negative code other than -2 the stream is over: the same code
//! comes back until `agui_init`.
#![no_std]
// `#[unsafe(no_mangle)]` on the exports (their names are the ABI) is the
// only unsafe code, each allowed where it stands; there is no unsafe block.
#![deny(unsafe_code)]

use agui_stream::legacy::Minting;
use agui_stream::rewrite::{OnViolation, Options, RewriteError, Rewriter, Stats};
use agui_stream::{Config, Dialect, SliceWriter};
use core::fmt::Write as _;
use spin::{Mutex, MutexGuard};

/// The pipeline's frame buffer: a frame up to this size that spans pushes
/// is decoded whole (larger ones are checked as they stream).
pub const FRAME_CAP: usize = 64 * 1024;
/// The rewriter's raw buffer: a block up to this size that spans pushes
/// is held until its verdict (larger ones go out as they come).
pub const RAW_CAP: usize = 64 * 1024;
/// The most input one push takes.
pub const INPUT_CAP: usize = 16 * 1024;
/// Room for the worst case of a block of every byte the raw and input
/// buffers can hold (`Rewriter::frame_bound`, checked by `agui_init`), so
/// that an empty output always takes the next block.
pub const OUTPUT_CAP: usize = 3 * (RAW_CAP + INPUT_CAP) + 24 * 1024;
/// The report's buffer.
const REPORT_CAP: usize = 8 * 1024;

/// Flag bits of [`agui_init`].
const DROP: i32 = 1;
const PASS: i32 = 1 << 1;
const NO_REPAIR: i32 = 1 << 2;
const CLOSE_OPEN: i32 = 1 << 3;
const CANONICAL: i32 = 1 << 4;
const DROP_RAW: i32 = 1 << 5;
/// Check tool-call arguments as JSON (`agui gateway --check-tool-args`).
const CHECK_TOOL_ARGS: i32 = 1 << 6;
/// Mint ids per run (the library's default) instead of the reference
/// oracle's deterministic sequence, which `agui gateway` uses.
const PER_RUN_IDS: i32 = 1 << 7;
const KNOWN_FLAGS: i32 = (1 << 8) - 1;

/// Why a call failed: its code, and the message the report shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    NotInitialized,
    BadArgument,
    Finished,
    Rewrite(RewriteError),
    Pending,
}

impl Failure {
    fn code(self) -> i32 {
        match self {
            Failure::NotInitialized => -1,
            Failure::BadArgument => -2,
            Failure::Finished => -3,
            Failure::Rewrite(RewriteError::OutputFull { .. }) => -4,
            Failure::Rewrite(RewriteError::RawBuffer { .. }) => -5,
            Failure::Rewrite(RewriteError::DeniedTools) => -7,
            Failure::Rewrite(_) => -6,
            Failure::Pending => -8,
        }
    }

    /// The report's message.
    fn message(self) -> Message {
        let mut m = Message {
            buf: [0; 256],
            len: 0,
        };
        let _ = match self {
            Failure::NotInitialized => m.write_str("not initialized: call agui_init first"),
            Failure::BadArgument => m.write_str("bad argument"),
            Failure::Finished => m.write_str("the stream is finished: agui_init starts the next"),
            Failure::Pending => m.write_str("input is pending: push(0) before finish"),
            Failure::Rewrite(e) => write!(m, "{e}"),
        };
        m
    }
}

/// An error's message (what fits in 256 bytes).
struct Message {
    buf: [u8; 256],
    len: usize,
}

impl core::fmt::Write for Message {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len.saturating_add(s.len()).min(self.buf.len());
        if let (Some(dst), Some(src)) = (
            self.buf.get_mut(self.len..end),
            s.as_bytes().get(..end.saturating_sub(self.len)),
        ) {
            dst.copy_from_slice(src);
            self.len = end;
        }
        Ok(())
    }
}

/// Where a stream stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Open,
    Ended,
    Finished,
    Failed(Failure),
}

/// One stream's state.
struct Stream {
    rewriter: Rewriter<'static>,
    phase: Phase,
    /// `INPUT[..pending]` are bytes pushed but not read yet.
    pending: usize,
    /// The last call's failure, for the report (a bad argument does not
    /// end the stream).
    error: Option<Failure>,
    /// The policy stopped the stream: every later push and `agui_finish`
    /// answer 1.
    stopped: bool,
}

static FRAME: Mutex<[u8; FRAME_CAP]> = Mutex::new([0; FRAME_CAP]);
static RAW: Mutex<[u8; RAW_CAP]> = Mutex::new([0; RAW_CAP]);
static INPUT: Mutex<[u8; INPUT_CAP]> = Mutex::new([0; INPUT_CAP]);
static OUTPUT: Mutex<Output> = Mutex::new(Output {
    buf: [0; OUTPUT_CAP],
    len: 0,
});
static REPORT: Mutex<Report> = Mutex::new(Report {
    buf: [0; REPORT_CAP],
    len: 0,
});
static STREAM: Mutex<Option<Stream>> = Mutex::new(None);

/// The output of the last call.
struct Output {
    buf: [u8; OUTPUT_CAP],
    len: usize,
}

/// The report, rendered by [`agui_report_len`].
struct Report {
    buf: [u8; REPORT_CAP],
    len: usize,
}

impl Report {
    /// The `agui gateway` stderr line's object: the statistics as the
    /// library serializes them (`Stats`' `Serialize`, the fields of that
    /// line), then `"error"`. 8 KiB hold every field with every count at
    /// its largest.
    fn render(&mut self, stats: &Stats, error: Option<Failure>) {
        let message = error.map(Failure::message);
        let message = message.as_ref().map(|m| {
            // Cut at 256 bytes, perhaps inside a character.
            let bytes = m.buf.get(..m.len).unwrap_or_default();
            core::str::from_utf8(bytes).unwrap_or_else(|e| {
                core::str::from_utf8(bytes.get(..e.valid_up_to()).unwrap_or_default()).unwrap_or("")
            })
        });
        self.len = serde_json_core::to_slice(stats, &mut self.buf)
            .ok()
            .and_then(|n| {
                // `{…}` becomes `{…,"error":…}`.
                let end = n.checked_sub(1)?;
                let rest = self.buf.get_mut(end..)?;
                let tail = b",\"error\":";
                rest.get_mut(..tail.len())?.copy_from_slice(tail);
                let at = end + tail.len();
                let written = serde_json_core::to_slice(&message, self.buf.get_mut(at..)?).ok()?;
                let close = at + written;
                *self.buf.get_mut(close)? = b'}';
                Some(close + 1)
            })
            .unwrap_or(0);
    }
}

/// The rewriter's options and configuration from `agui_init`'s arguments.
fn settings(dialect: i32, flags: i32, max_event_bytes: i64) -> Option<(Config, Options)> {
    let dialect = match dialect {
        1 => Dialect::V1,
        0 => Dialect::V0,
        _ => return None,
    };
    if flags & !KNOWN_FLAGS != 0 || flags & (DROP | PASS) == DROP | PASS || max_event_bytes < 0 {
        return None;
    }
    let on_violation = if flags & DROP != 0 {
        OnViolation::Drop
    } else if flags & PASS != 0 {
        OnViolation::Pass
    } else {
        OnViolation::Stop
    };
    let minting = if flags & PER_RUN_IDS != 0 {
        Minting::PerRun
    } else {
        Minting::Deterministic
    };
    let config = Config::new()
        .dialect(dialect)
        .minting(minting)
        .check_tool_args(flags & CHECK_TOOL_ARGS != 0);
    let options = Options::new()
        .on_violation(on_violation)
        .repair(flags & NO_REPAIR == 0)
        .close_open(flags & CLOSE_OPEN != 0)
        .canonical(flags & CANONICAL != 0)
        .drop_raw(flags & DROP_RAW != 0)
        .max_event_bytes(max_event_bytes.unsigned_abs());
    Some((config, options))
}

/// Starts a stream: resets all state. `dialect` 1 = V1, 0 = V0; `flags`
/// bit 0 = on violation drop, bit 1 = pass (neither = stop), bit 2 = no
/// repair, bit 3 = close open, bit 4 = canonical, bit 5 = drop raw, bit 6
/// = check tool-call arguments, bit 7 = ids minted per run (else the
/// reference oracle's deterministic ids, as `agui gateway`).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_init(dialect: i32, flags: i32) -> i32 {
    agui_init_max(dialect, flags, 0)
}

/// [`agui_init`] with a cap on the size of one event's block
/// (`agui gateway --max-event-bytes`; 0 = none).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_init_max(dialect: i32, flags: i32, max_event_bytes: i64) -> i32 {
    let mut stream = STREAM.lock();
    output().len = 0;
    let Some((config, options)) = settings(dialect, flags, max_event_bytes) else {
        if let Some(s) = stream.as_mut() {
            s.error = Some(Failure::BadArgument);
        }
        return Failure::BadArgument.code();
    };
    // The buffers are lent once, for the life of the module, and handed
    // from one stream's rewriter to the next.
    let (frame, raw) = match stream.take() {
        Some(old) => old.rewriter.into_buffers(),
        None => match (FRAME.try_lock(), RAW.try_lock()) {
            (Some(f), Some(r)) => (&mut MutexGuard::leak(f)[..], &mut MutexGuard::leak(r)[..]),
            _ => return Failure::NotInitialized.code(),
        },
    };
    let rewriter = Rewriter::new(frame, raw, config, options);
    if rewriter.frame_bound(RAW_CAP + INPUT_CAP) > OUTPUT_CAP {
        // The sizes above are wrong: this build cannot promise progress.
        return Failure::Rewrite(RewriteError::OutputFull {
            needed: rewriter.frame_bound(RAW_CAP + INPUT_CAP),
        })
        .code();
    }
    *stream = Some(Stream {
        rewriter,
        phase: Phase::Open,
        pending: 0,
        error: None,
        stopped: false,
    });
    0
}

/// Denies the tool whose name is the `len` bytes at [`agui_input_ptr`]:
/// its calls' events are removed (`agui gateway --deny-tool`). Call after
/// `agui_init`, before the first push.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_deny_tool(len: i32) -> i32 {
    let mut guard = STREAM.lock();
    let Some(stream) = guard.as_mut() else {
        return Failure::NotInitialized.code();
    };
    let input = INPUT.lock();
    let name = usize::try_from(len)
        .ok()
        .and_then(|len| input.get(stream.pending..stream.pending.checked_add(len)?))
        .and_then(|b| core::str::from_utf8(b).ok());
    let result = match name {
        None => Err(Failure::BadArgument),
        Some(name) => stream.rewriter.deny_tool(name).map_err(Failure::Rewrite),
    };
    match result {
        Ok(()) => 0,
        Err(failure) => {
            stream.error = Some(failure);
            failure.code()
        }
    }
}

/// Where the host writes the next chunk (past any pending input).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_input_ptr() -> i32 {
    let pending = pending();
    let input = INPUT.lock();
    address(input.as_ptr().wrapping_add(pending))
}

/// How many bytes the host may write at [`agui_input_ptr`].
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_input_cap() -> i32 {
    i32::try_from(INPUT_CAP.saturating_sub(pending())).unwrap_or(0)
}

/// Bytes pushed that the rewriter has not read yet (output backpressure).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_pending() -> i32 {
    i32::try_from(pending()).unwrap_or(i32::MAX)
}

fn pending() -> usize {
    STREAM.lock().as_ref().map_or(0, |s| s.pending)
}

/// Rewrites the `len` bytes written at [`agui_input_ptr`] (and any
/// pending before them).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_push(len: i32) -> i32 {
    let mut guard = STREAM.lock();
    let mut out = output();
    out.len = 0;
    let Some(stream) = guard.as_mut() else {
        return Failure::NotInitialized.code();
    };
    let result = push(stream, len, &mut out);
    respond(stream, result)
}

fn push(stream: &mut Stream, len: i32, out: &mut Output) -> Result<(), Failure> {
    let total = usize::try_from(len)
        .ok()
        .and_then(|len| len.checked_add(stream.pending))
        .filter(|&total| total <= INPUT_CAP)
        .ok_or(Failure::BadArgument)?;
    match stream.phase {
        Phase::Open => {}
        Phase::Ended => {
            // Read and ignored, as the rewriter does.
            stream.pending = 0;
            return Ok(());
        }
        Phase::Finished => return Err(Failure::Finished),
        Phase::Failed(failure) => return Err(failure),
    }
    let mut input = INPUT.lock();
    let mut writer = SliceWriter::new(&mut out.buf);
    let mut read = 0;
    let mut failure = None;
    while read < total {
        let rest = input.get(read..total).unwrap_or_default();
        match stream.rewriter.push(rest, &mut writer) {
            Ok(pushed) => {
                read += pushed.read;
                if pushed.ended {
                    stream.phase = Phase::Ended;
                    stream.stopped = true;
                    read = total;
                } else if pushed.read == 0 {
                    break;
                }
            }
            // Room for less than the next block: the host drains first.
            Err(RewriteError::OutputFull { .. }) if !writer.is_empty() => break,
            Err(e) => {
                failure = Some(Failure::Rewrite(e));
                read = total;
                break;
            }
        }
    }
    out.len = writer.len();
    input.copy_within(read..total, 0);
    stream.pending = total - read;
    match failure {
        Some(failure) => {
            stream.phase = Phase::Failed(failure);
            Err(failure)
        }
        None => Ok(()),
    }
}

/// End of input: the repair, the end-of-stream verdict.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_finish() -> i32 {
    let mut guard = STREAM.lock();
    let mut out = output();
    out.len = 0;
    let Some(stream) = guard.as_mut() else {
        return Failure::NotInitialized.code();
    };
    let result = finish(stream, &mut out);
    respond(stream, result)
}

fn finish(stream: &mut Stream, out: &mut Output) -> Result<(), Failure> {
    match stream.phase {
        Phase::Open if stream.pending > 0 => return Err(Failure::Pending),
        Phase::Open | Phase::Ended => {}
        Phase::Finished => return Err(Failure::Finished),
        Phase::Failed(failure) => return Err(failure),
    }
    let mut writer = SliceWriter::new(&mut out.buf);
    let result = stream.rewriter.finish(&mut writer);
    out.len = writer.len();
    match result {
        Ok(_) => {
            stream.phase = Phase::Finished;
            Ok(())
        }
        Err(e) => {
            let failure = Failure::Rewrite(e);
            stream.phase = Phase::Failed(failure);
            Err(failure)
        }
    }
}

/// A call's code; its failure is the report's error.
fn respond(stream: &mut Stream, result: Result<(), Failure>) -> i32 {
    match result {
        Ok(()) => {
            stream.error = None;
            i32::from(stream.stopped)
        }
        Err(failure) => {
            stream.error = Some(failure);
            failure.code()
        }
    }
}

fn output() -> MutexGuard<'static, Output> {
    OUTPUT.lock()
}

fn address<T>(ptr: *const T) -> i32 {
    // wasm32 addresses fit 32 bits; the ABI's integers are i32.
    ptr as usize as i32
}

/// The output of the last call, valid until the next one.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_output_ptr() -> i32 {
    address(output().buf.as_ptr())
}

/// Bytes at [`agui_output_ptr`].
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_output_len() -> i32 {
    i32::try_from(output().len).unwrap_or(0)
}

/// The most output one call can give.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_output_cap() -> i32 {
    i32::try_from(OUTPUT_CAP).unwrap_or(i32::MAX)
}

/// The frame buffer's size (`agui gateway --buffer`).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_frame_cap() -> i32 {
    i32::try_from(FRAME_CAP).unwrap_or(i32::MAX)
}

/// The raw buffer's size (`agui gateway --buffer`).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_raw_cap() -> i32 {
    i32::try_from(RAW_CAP).unwrap_or(i32::MAX)
}

/// Where [`agui_report_len`] renders the report.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_report_ptr() -> i32 {
    address(REPORT.lock().buf.as_ptr())
}

/// Renders the report — the statistics and the last call's error as one
/// JSON object, the fields of `agui gateway`'s stderr line — and returns
/// its length.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_report_len() -> i32 {
    let guard = STREAM.lock();
    let mut report = REPORT.lock();
    match guard.as_ref() {
        Some(stream) => report.render(stream.rewriter.stats(), stream.error),
        None => report.render(&Stats::default(), Some(Failure::NotInitialized)),
    }
    i32::try_from(report.len).unwrap_or(0)
}

#[cfg(target_arch = "wasm32")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}
