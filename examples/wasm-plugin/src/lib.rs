//! agui-stream's gateway rewriter as a wasm32 module for plugin hosts:
//! no allocator, no imports, fixed memory, a push ABI.
//!
//! # The ABI (version 1)
//!
//! Thirteen exports, every argument and result an `i32`:
//!
//! | export | what it does |
//! |--------|--------------|
//! | `agui_init_v1(len)` | starts a stream with the configuration: the `len` bytes of JSON the host wrote at `agui_input_ptr()` |
//! | `agui_input_ptr()`, `agui_input_cap()` | where the host writes a configuration or the next chunk, and how many bytes fit there |
//! | `agui_push(len)` | rewrites the `len` bytes written at `agui_input_ptr()` |
//! | `agui_pending()` | bytes pushed but not read yet (the output was full) |
//! | `agui_finish()` | end of the body: the repair and the end-of-stream verdict |
//! | `agui_output_ptr()`, `agui_output_len()` | the client's bytes from the last call |
//! | `agui_report_ptr()`, `agui_report_len()` | the statistics and the last error, as one JSON object |
//! | `agui_request_begin()` | starts checking an agent request's body with the configuration of the last `agui_init_v1` |
//! | `agui_request_push(len)` | checks the `len` bytes written at `agui_input_ptr()`; the output is what goes upstream now |
//! | `agui_request_finish()` | end of the request body: the verdict; the output is its last byte (held back until now) |
//!
//! The version is in the name: a configuration format that changes
//! incompatibly comes as `agui_init_v2`, so a host finds out from the
//! exports (a missing export fails at link time) instead of from a stream
//! rewritten with the wrong settings.
//!
//! The configuration is the JSON object every front end takes (the
//! proxy-wasm filter's plugin configuration; `agui gateway`'s flags name
//! the same settings), read by the front ends' shared helper
//! (`examples/shared/frontend.rs`). Every key is optional; an unknown key or
//! a bad value is refused:
//!
//! ```json
//! {"dialect": "v1", "on_violation": "stop", "repair": true, "close_open": false,
//!  "canonical": false, "drop_raw": false, "max_event_bytes": 0,
//!  "check_tool_args": false, "deny_tools": [],
//!  "deterministic_ids": false}
//! ```
//!
//! `{}` (or `len` 0) is the defaults: V1, stop on a violation, repair, ids
//! minted per run. `deterministic_ids: true` mints the reference oracle's
//! sequence instead, as `agui gateway --deterministic-ids` does (tests ask
//! for it, to compare bytes). At most 16 `deny_tools` names (256 bytes).
//! The proxies' keys are taken too: `buffer` must be 65536 (this module's
//! buffers are fixed), `keepalive_ms`, `request_identity` and `log_streams`
//! are ignored (the module never writes on its own and sees no headers).
//!
//! A host drives it like this:
//!
//! ```text
//! write config to agui_input_ptr()
//! agui_init_v1(len(config))                // 0, or < 0: see the report
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
//! The output of each call is exactly what the native [`Rewriter`] writes
//! (and `agui gateway` prints) for the same pushes and settings. The report
//! is the object of `agui gateway`'s stderr line (`Stats`' serialization)
//! with an `"error"` member: the last call's error message, or `null`.
//!
//! Backpressure: a push reads as much input as the output buffer can take
//! the worst case of; what it could not read stays *pending* in the input
//! buffer, and `agui_input_ptr()` / `agui_input_cap()` then point past it.
//! `agui_push(0)` reads on once the host has taken the output. With the
//! sizes below a push of `agui_input_cap()` bytes leaves input pending only
//! on streams of many tiny frames.
//!
//! Return codes of `agui_init_v1`, `agui_push` and `agui_finish`:
//!
//! | code | meaning |
//! |-----:|---------|
//! | 0 | go on |
//! | 1 | the stream has ended (stopped by the policy; later input is ignored) |
//! | -1 | not initialized: no `agui_init_v1` yet, or the last one failed |
//! | -2 | bad argument: a length outside `0..=agui_input_cap()`, or a configuration that is not valid (the report says why) |
//! | -3 | already finished: `agui_init_v1` starts the next stream |
//! | -4 | the output buffer cannot take the next block's worst case even empty (cannot happen with these sizes) |
//! | -5 | a block outgrew the raw buffer (cannot happen with these sizes) |
//! | -6 | the output writer failed |
//! | -7 | input is still pending at `agui_finish`: `agui_push(0)` until `agui_pending()` is 0 |
//!
//! A bad length leaves the stream as it was. After any other negative code
//! of a push or finish the stream is over: the same code comes back until
//! `agui_init_v1`. A failed `agui_init_v1` ends the previous stream and
//! leaves the module not initialized (-1) until one succeeds; it never
//! keeps a later one from succeeding.
//!
//! # The request side
//!
//! A host that sees the requests too (an agent request: `HttpAgent`'s POST
//! of a `RunAgentInput` body) checks each body with
//! [`RequestRewriter`](agui_stream::rewrite::RequestRewriter), under the
//! last successful `agui_init_v1`'s configuration (`dialect`, `deny_tools`,
//! `max_request_bytes`):
//!
//! ```text
//! agui_request_begin()                     // 0, or -1: no configuration yet
//! for chunk in request body:               // any split, at most agui_input_cap() a push
//!     copy chunk to agui_input_ptr()
//!     code = agui_request_push(len(chunk))
//!     if code == 0: send agui_output_ptr()[..agui_output_len()] upstream
//!     else: answer code (400 or 413) with the output (a JSON problem), reset the upstream request; stop
//! code = agui_request_finish()             // 0: send the output (the body's last byte) upstream
//! ```
//!
//! The body goes upstream as it came (but for the entries of denied tools,
//! taken out of `tools`), its last byte held back until the verdict, so an
//! agent never receives a whole body that fails. Codes: 0 go on (at
//! `agui_request_finish`: passed); 400 invalid, 413 over
//! `max_request_bytes` or a capacity (then the output is the JSON problem,
//! `{"status":…,"code":"AGUI_INVALID_INPUT"|"AGUI_INPUT_TOO_LARGE","message":…,"path":…}`,
//! and every later call of this request answers the same); -1 no
//! configuration; -2 a bad length; -8 no request begun. The report gains
//! `request_bytes_in`, `request_bytes_out`, `request_tools_removed` and
//! `request_refused` (the reason, or `null`). The checker's and the hold
//! buffer are [`REQUEST_CAP`] bytes each.
//!
//! Memory: fixed, in the module's data ([`FRAME_CAP`], [`RAW_CAP`],
//! [`INPUT_CAP`], [`OUTPUT_CAP`] and an 8 KiB report); the two rewriter
//! buffers and its tool tables are lent once and handed from each
//! stream's rewriter to the next ([`Rewriter::into_parts`]).
#![no_std]
// `#[unsafe(no_mangle)]` on the exports (their names are the ABI) is the
// only unsafe code, each allowed where it stands; there is no unsafe block.
#![deny(unsafe_code)]

#[path = "../../shared/frontend.rs"]
mod frontend;

use agui_stream::rewrite::{
    Options, Refusal, RequestRewriter, RewriteError, Rewriter, Stats, ToolTables,
};
use agui_stream::{Config, SliceWriter};
use core::fmt::Write as _;
use frontend::{ConfigError, Gateway, StatsLine};
use spin::{Mutex, MutexGuard};

/// The pipeline's frame buffer: a frame up to this size that spans pushes
/// is decoded whole (larger ones are checked as they stream).
pub const FRAME_CAP: usize = 64 * 1024;
/// The rewriter's raw buffer: a block up to this size that spans pushes
/// is held until its verdict (larger ones go out as they come).
pub const RAW_CAP: usize = 64 * 1024;
/// The most input one push (or one configuration) takes.
pub const INPUT_CAP: usize = 16 * 1024;
/// Room for the worst case of a block of every byte the raw and input
/// buffers can hold (`Rewriter::frame_bound`, checked by `agui_init_v1`),
/// so that an empty output always takes the next block.
pub const OUTPUT_CAP: usize = 3 * (RAW_CAP + INPUT_CAP) + 24 * 1024;
/// A request checker's buffer, and the buffer that holds one `tools` entry
/// while its name is read: each this size.
pub const REQUEST_CAP: usize = 16 * 1024;
// A request push writes at most its input and the held entry.
const _: () = assert!(INPUT_CAP + REQUEST_CAP <= OUTPUT_CAP);

/// Why a call failed.
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
            Failure::Rewrite(_) => -6,
            Failure::Pending => -7,
        }
    }
}

impl core::fmt::Display for Failure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Failure::NotInitialized => f.write_str("not initialized: call agui_init_v1 first"),
            Failure::BadArgument => f.write_str("bad argument"),
            Failure::Finished => {
                f.write_str("the stream is finished: agui_init_v1 starts the next")
            }
            Failure::Pending => f.write_str("input is pending: push(0) before finish"),
            Failure::Rewrite(e) => write!(f, "{e}"),
        }
    }
}

/// Why `agui_init_v1` failed.
#[derive(Clone, Copy, Debug)]
enum InitError {
    BadLength,
    Config(ConfigError),
    /// `buffer` is not this build's.
    Buffer(usize),
    /// Guard rules, which this module does not apply yet.
    Guard,
    DenyTools(RewriteError),
    /// The buffer sizes of this build cannot promise progress.
    Sizes(RewriteError),
}

impl InitError {
    fn code(self) -> i32 {
        match self {
            InitError::Sizes(e) => Failure::Rewrite(e).code(),
            _ => Failure::BadArgument.code(),
        }
    }
}

impl core::fmt::Display for InitError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            InitError::BadLength => Failure::BadArgument.fmt(f),
            InitError::Config(e) => write!(f, "bad configuration: {e}"),
            InitError::Buffer(n) => write!(
                f,
                "bad configuration: buffer {n}: this module's buffers are {FRAME_CAP} bytes"
            ),
            InitError::DenyTools(e) => write!(f, "bad configuration: deny_tools: {e}"),
            InitError::Guard => f.write_str(
                "bad configuration: guard: this module does not apply guard rules (docs/guardrails.md)",
            ),
            InitError::Sizes(e) => e.fmt(f),
        }
    }
}

/// The last call's error message (what fits in 256 bytes; empty: none).
struct Message {
    buf: [u8; 256],
    len: usize,
}

impl Message {
    const NONE: Message = Message {
        buf: [0; 256],
        len: 0,
    };

    fn of(error: impl core::fmt::Display) -> Message {
        let mut m = Message::NONE;
        let _ = write!(m, "{error}");
        m
    }

    /// The message, `None` if there is none.
    fn text(&self) -> Option<&str> {
        // Cut at 256 bytes, perhaps inside a character.
        let bytes = self.buf.get(..self.len).unwrap_or_default();
        let text = core::str::from_utf8(bytes).unwrap_or_else(|e| {
            core::str::from_utf8(bytes.get(..e.valid_up_to()).unwrap_or_default()).unwrap_or("")
        });
        (self.len > 0).then_some(text)
    }
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

/// Where the stream stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The last `agui_init_v1` failed: nothing is accepted until one
    /// succeeds.
    Unconfigured,
    Open,
    /// Stopped by the policy: later input is read and ignored.
    Ended,
    Finished,
    Failed(Failure),
}

/// The module's state after the first `agui_init_v1`. It always holds the
/// rewriter (and with it the two buffers), whatever the last init did:
/// `agui_init_v1` takes the buffers back from the old rewriter and, on every
/// path, stores a new one.
struct Module {
    rewriter: Rewriter<'static>,
    phase: Phase,
    /// `INPUT[..pending]` are bytes pushed but not read yet.
    pending: usize,
    /// The last call's error, for the report (a bad length does not end
    /// the stream).
    error: Message,
    /// The policy stopped the stream: every later push and `agui_finish`
    /// answer 1.
    stopped: bool,
    /// The configuration, once an `agui_init_v1` succeeded (for requests).
    gateway: Option<Gateway>,
}

/// An agent request's body being checked.
struct Request {
    rewriter: RequestRewriter<'static>,
    refused: Option<Refusal>,
}

static CHECK: Mutex<[u8; REQUEST_CAP]> = Mutex::new([0; REQUEST_CAP]);
static HOLD: Mutex<[u8; REQUEST_CAP]> = Mutex::new([0; REQUEST_CAP]);
static REQUEST: Mutex<Option<Request>> = Mutex::new(None);

static FRAME: Mutex<[u8; FRAME_CAP]> = Mutex::new([0; FRAME_CAP]);
static RAW: Mutex<[u8; RAW_CAP]> = Mutex::new([0; RAW_CAP]);
static TABLES: Mutex<ToolTables> = Mutex::new(ToolTables::new());
static INPUT: Mutex<[u8; INPUT_CAP]> = Mutex::new([0; INPUT_CAP]);
static OUTPUT: Mutex<Output> = Mutex::new(Output {
    buf: [0; OUTPUT_CAP],
    len: 0,
});
/// The report, rendered by `agui_report_len`: `agui gateway`'s stats line
/// (the shared front-end helper's), with `"error"`.
static REPORT: Mutex<Option<StatsLine>> = Mutex::new(None);
static MODULE: Mutex<Option<Module>> = Mutex::new(None);

/// The output of the last call.
struct Output {
    buf: [u8; OUTPUT_CAP],
    len: usize,
}

/// The frame and raw buffers: from the old rewriter, or, at the first
/// call, the statics (lent for the life of the module).
/// The tool tables every rewriter borrows.
type Tables = &'static mut ToolTables;

fn buffers(module: Option<Module>) -> Option<(&'static mut [u8], &'static mut [u8], Tables)> {
    match module {
        // Every rewriter is given the tables: they come back.
        Some(old) => match old.rewriter.into_parts() {
            (f, r, Some(t)) => Some((f, r, t)),
            (_, _, None) => None,
        },
        None => match (FRAME.try_lock(), RAW.try_lock(), TABLES.try_lock()) {
            (Some(f), Some(r), Some(t)) => Some((
                &mut MutexGuard::leak(f)[..],
                &mut MutexGuard::leak(r)[..],
                MutexGuard::leak(t),
            )),
            // Taken already: only if a rewriter holding them was lost,
            // which the code below never does.
            _ => None,
        },
    }
}

/// Starts a stream with the configuration in the `len` bytes of JSON at
/// [`agui_input_ptr`] (see the crate's documentation): 0, or -2 (the
/// report says what is wrong with it).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_init_v1(len: i32) -> i32 {
    let mut slot = MODULE.lock();
    output().len = 0;
    let input = INPUT.lock();
    let pending = slot.as_ref().map_or(0, |m| m.pending);
    let json = usize::try_from(len)
        .ok()
        .and_then(|len| input.get(pending..pending.checked_add(len)?));
    let Some((frame, raw, tables)) = buffers(slot.take()) else {
        return Failure::NotInitialized.code();
    };
    // From here on every path stores the rewriter (and so the buffers)
    // back in `slot`: no early return.
    let gateway = match json {
        Some(json) => Gateway::from_json(json).map_err(InitError::Config),
        None => Err(InitError::BadLength),
    };
    let gateway = gateway.and_then(|g| match g.buffer {
        // Fixed in this module; `keepalive_ms`, `request_identity` and
        // `log_streams` are the proxies' and ignored here.
        FRAME_CAP => Ok(g),
        n => Err(InitError::Buffer(n)),
    });
    // Refused rather than ignored: a host must not believe text is guarded.
    let gateway = gateway.and_then(|g| match g.guard.is_on() {
        true => Err(InitError::Guard),
        false => Ok(g),
    });
    let (config, options) = match &gateway {
        // Fixed buffers: a block larger than the raw one goes ahead.
        Ok(g) => (g.config(), g.options().hold(false)),
        Err(_) => (Config::new(), Options::new()),
    };
    let kept = gateway.as_ref().ok().cloned();
    let mut rewriter = Rewriter::new(frame, raw, config, options);
    // The tables go with every rewriter (so that they come back with it);
    // with no tool denied they deny nothing.
    let result = match &gateway {
        Ok(g) => g.deny(tables).map_err(InitError::DenyTools),
        Err(_) => {
            tables.clear();
            Ok(())
        }
    };
    rewriter.deny_tools(tables);
    let result = gateway.and(result).and_then(|()| {
        let needed = rewriter.frame_bound(RAW_CAP + INPUT_CAP);
        if needed > OUTPUT_CAP {
            // The sizes above are wrong: this build cannot promise progress.
            return Err(InitError::Sizes(RewriteError::OutputFull { needed }));
        }
        Ok(())
    });
    let (phase, error, code, gateway) = match result {
        Ok(()) => (Phase::Open, Message::NONE, 0, kept),
        Err(e) => (Phase::Unconfigured, Message::of(e), e.code(), None),
    };
    *slot = Some(Module {
        rewriter,
        phase,
        pending: 0,
        error,
        stopped: false,
        gateway,
    });
    code
}

/// Starts checking an agent request's body (see "The request side"): 0,
/// or -1 if no `agui_init_v1` succeeded.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_request_begin() -> i32 {
    let guard = MODULE.lock();
    output().len = 0;
    let Some(gateway) = guard.as_ref().and_then(|m| m.gateway.as_ref()) else {
        return Failure::NotInitialized.code();
    };
    let mut request = REQUEST.lock();
    let buffers = match request.take() {
        Some(old) => Some(old.rewriter.into_buffers()),
        None => match (CHECK.try_lock(), HOLD.try_lock()) {
            (Some(c), Some(h)) => {
                Some((&mut MutexGuard::leak(c)[..], &mut MutexGuard::leak(h)[..]))
            }
            _ => None,
        },
    };
    let Some((check, hold)) = buffers else {
        return Failure::NotInitialized.code();
    };
    // The names fit: `agui_init_v1` denied them on the rewriter.
    let Ok(rewriter) = gateway.request_rewriter(check, hold) else {
        return Failure::BadArgument.code();
    };
    *request = Some(Request {
        rewriter,
        refused: None,
    });
    0
}

/// Checks the next `len` bytes of the request body, written at
/// [`agui_input_ptr`]: 0 (the output goes upstream), 400 or 413 (refused:
/// the output is the JSON problem), -2 a bad length, -8 no request begun.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_request_push(len: i32) -> i32 {
    let start = pending();
    let mut request = REQUEST.lock();
    let mut out = output();
    out.len = 0;
    let Some(request) = request.as_mut() else {
        return NO_REQUEST;
    };
    let input = INPUT.lock();
    let Some(bytes) = usize::try_from(len)
        .ok()
        .and_then(|len| input.get(start..start.checked_add(len)?))
    else {
        return Failure::BadArgument.code();
    };
    let mut writer = SliceWriter::new(&mut out.buf);
    let verdict = match request.refused {
        Some(refusal) => Err(refusal),
        None => request.rewriter.push(bytes, &mut writer),
    };
    out.len = writer.len();
    request_code(request, verdict, &mut out)
}

/// The request body ended: 0 (passed: the output, its last byte, goes
/// upstream), 400 or 413 (refused: the output is the JSON problem), -8 no
/// request begun.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_request_finish() -> i32 {
    let mut request = REQUEST.lock();
    let mut out = output();
    out.len = 0;
    let Some(request) = request.as_mut() else {
        return NO_REQUEST;
    };
    let mut writer = SliceWriter::new(&mut out.buf);
    let verdict = match request.refused {
        Some(refusal) => Err(refusal),
        None => request.rewriter.finish(&mut writer).map(drop),
    };
    out.len = writer.len();
    request_code(request, verdict, &mut out)
}

/// No `agui_request_begin` yet.
const NO_REQUEST: i32 = -8;

/// A request call's code; a refusal's problem replaces the output.
fn request_code(request: &mut Request, verdict: Result<(), Refusal>, out: &mut Output) -> i32 {
    match verdict {
        Ok(()) => 0,
        Err(refusal) => {
            request.refused = Some(refusal);
            let mut writer = SliceWriter::new(&mut out.buf);
            let _ = request.rewriter.write_problem(&refusal, &mut writer);
            out.len = writer.len();
            i32::from(refusal.status())
        }
    }
}

/// Where the host writes the configuration or the next chunk (past any
/// pending input).
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
    MODULE.lock().as_ref().map_or(0, |m| m.pending)
}

/// Rewrites the `len` bytes written at [`agui_input_ptr`] (and any
/// pending before them).
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_push(len: i32) -> i32 {
    let mut guard = MODULE.lock();
    let mut out = output();
    out.len = 0;
    let Some(module) = guard.as_mut() else {
        return Failure::NotInitialized.code();
    };
    let result = push(module, len, &mut out);
    respond(module, result)
}

fn push(module: &mut Module, len: i32, out: &mut Output) -> Result<(), Failure> {
    let total = usize::try_from(len)
        .ok()
        .and_then(|len| len.checked_add(module.pending))
        .filter(|&total| total <= INPUT_CAP)
        .ok_or(Failure::BadArgument)?;
    match module.phase {
        Phase::Open => {}
        Phase::Ended => {
            // Read and ignored, as the rewriter does.
            module.pending = 0;
            return Ok(());
        }
        Phase::Unconfigured => return Err(Failure::NotInitialized),
        Phase::Finished => return Err(Failure::Finished),
        Phase::Failed(failure) => return Err(failure),
    }
    let mut input = INPUT.lock();
    let mut writer = SliceWriter::new(&mut out.buf);
    let mut read = 0;
    let mut failure = None;
    while read < total {
        let rest = input.get(read..total).unwrap_or_default();
        match module.rewriter.push(rest, &mut writer) {
            Ok(pushed) => {
                read += pushed.read;
                if pushed.ended {
                    module.phase = Phase::Ended;
                    module.stopped = true;
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
    module.pending = total - read;
    match failure {
        Some(failure) => {
            module.phase = Phase::Failed(failure);
            Err(failure)
        }
        None => Ok(()),
    }
}

/// End of input: the repair, the end-of-stream verdict.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_finish() -> i32 {
    let mut guard = MODULE.lock();
    let mut out = output();
    out.len = 0;
    let Some(module) = guard.as_mut() else {
        return Failure::NotInitialized.code();
    };
    let result = finish(module, &mut out);
    respond(module, result)
}

fn finish(module: &mut Module, out: &mut Output) -> Result<(), Failure> {
    match module.phase {
        Phase::Open if module.pending > 0 => return Err(Failure::Pending),
        Phase::Open | Phase::Ended => {}
        Phase::Unconfigured => return Err(Failure::NotInitialized),
        Phase::Finished => return Err(Failure::Finished),
        Phase::Failed(failure) => return Err(failure),
    }
    let mut writer = SliceWriter::new(&mut out.buf);
    let result = module.rewriter.finish(&mut writer);
    out.len = writer.len();
    match result {
        Ok(_) => {
            module.phase = Phase::Finished;
            Ok(())
        }
        Err(e) => {
            let failure = Failure::Rewrite(e);
            module.phase = Phase::Failed(failure);
            Err(failure)
        }
    }
}

/// A call's code (1 once the policy has stopped the stream); its failure
/// is the report's error.
fn respond(module: &mut Module, result: Result<(), Failure>) -> i32 {
    match result {
        Ok(()) => {
            module.error = Message::NONE;
            i32::from(module.stopped)
        }
        Err(failure) => {
            module.error = Message::of(failure);
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

/// Where [`agui_report_len`] renders the report.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_report_ptr() -> i32 {
    let mut report = REPORT.lock();
    let line = report.get_or_insert_with(|| StatsLine::new(&Stats::default()));
    address(line.as_str().as_ptr())
}

/// Renders the report — the statistics and the last call's error as one
/// JSON object, the fields of `agui gateway`'s stderr line — and returns
/// its length.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agui_report_len() -> i32 {
    let guard = MODULE.lock();
    let not_initialized = Message::of(Failure::NotInitialized);
    let (stats, error) = match guard.as_ref() {
        Some(module) => (module.rewriter.stats(), module.error.text()),
        None => (&Stats::default(), not_initialized.text()),
    };
    let mut report = REPORT.lock();
    let line = report.insert(StatsLine::new(stats));
    line.field("error", &error);
    if let Some(request) = REQUEST.lock().as_ref() {
        let s = request.rewriter.stats();
        line.field("request_bytes_in", &s.bytes_in)
            .field("request_bytes_out", &s.bytes_out)
            .field("request_tools_removed", &s.tools_removed)
            .field("request_refused", &request.refused.map(|r| r.reason()));
    }
    let len = line.as_str().len();
    i32::try_from(len).unwrap_or(0)
}

#[cfg(target_arch = "wasm32")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}
