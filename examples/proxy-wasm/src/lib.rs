//! agui-stream's gateway rewriter as a proxy-wasm HTTP filter (ABI 0.2.1:
//! Envoy, Istio, Envoy Gateway and other proxy-wasm hosts).
//!
//! A response whose `content-type` is `text/event-stream` and whose
//! `content-encoding` is absent or `identity` loses its `content-length`
//! (in `on_http_response_headers`, the last place headers can change), gets
//! `x-accel-buffering: no` and, if it had none, `cache-control: no-cache`;
//! then each body chunk goes through one [`Rewriter`] and is replaced by the
//! rewriter's complete output (`set_http_response_body(0, body_size, out)`:
//! "replace all", one of the three buffer edits Envoy accepts). The
//! rewriter keeps a block that is not complete yet for the next chunk, so
//! the client gets whole events, each as soon as it is complete. At the end
//! of the body `finish`'s output (the repair: a run cut short ends in
//! `RUN_ERROR` `AGUI_STREAM_TRUNCATED`) goes into the last chunk. Every
//! callback returns `Action::Continue` (`Pause` would make Envoy buffer the
//! whole body). Any other response passes untouched (a compressed event
//! stream is counted).
//!
//! The end of the body, as Envoy reports it: an upstream that closes a
//! close-delimited body (HTTP/1.0 style) ends it normally, so a run cut
//! there is repaired; a chunked or content-length body cut short makes
//! Envoy reset the client's stream (it keeps the complete events; nothing
//! more can be written, the context is counted as aborted); a response
//! that ends with trailers (an HTTP/2 upstream's, or those Envoy's
//! decompressor adds to every body it inflates) has no body chunk with
//! `end_of_stream`, and Envoy refuses a body edit in the trailers callback
//! (`BadArgument`, which the SDK turns into a panic): it is rewritten but
//! not repaired, and counted.
//!
//! Nothing here panics on any input: every host call used is one whose
//! status the SDK turns into a panic only for arguments this filter never
//! passes, header values are read as bytes (the SDK's `String` getters
//! unwrap UTF-8), and a rewriter error (which cannot happen with a `Vec`
//! output and the buffer sizes allowed) forwards what output there is, then
//! empties the remaining chunks, and is logged and counted.
//!
//! Memory: the rewriter borrows two buffers (frame and raw, `buffer` bytes
//! each). Pairs are allocated once (`Box::leak`) and kept in a per-VM pool:
//! a stream takes one when its headers say it is an event stream and gives
//! it back ([`Rewriter::into_buffers`]) when it ends or its context is
//! deleted, so memory is bounded by the number of concurrent streams, not
//! by the number of requests.
//!
//! Configuration (the plugin configuration, JSON; every key optional, an
//! unknown key or a bad value fails the plugin's start):
//!
//! ```json
//! {"dialect": "v1", "on_violation": "stop", "repair": true, "close_open": false,
//!  "canonical": false, "drop_raw": false, "max_event_bytes": 0,
//!  "check_tool_args": false, "deny_tools": [], "buffer": 65536,
//!  "deterministic_ids": false, "request_identity": true, "log_streams": true}
//! ```
//!
//! Metrics (counters unless said, named `agui_stream.*`; Envoy shows them
//! with its `wasmcustom.` prefix): `streams`, `passed`, `compressed`,
//! `events`, `violations`, `repairs`, `dropped`, `bytes_in`, `bytes_out`,
//! `too_large`, `tool_events_dropped`, `cut`, `errors`, `aborted` (streams
//! gone before their end: a reset, a client gone), `trailers` (streams that
//! ended with trailers, where nothing can be added after the body, so no
//! repair), and the gauge `buffer_pairs` (buffer pairs allocated, over all
//! VMs).

// No unsafe code here (the SDK's `main!` exports `_initialize`); no
// unwrap, expect, panic, indexing or unchecked arithmetic, as in the library.
#![deny(unsafe_code)]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented
)]

use std::cell::RefCell;
use std::rc::Rc;

use agui_stream::legacy::Minting;
use agui_stream::rewrite::{OnViolation, Options, RewriteError, Rewriter, Stats};
use agui_stream::{Config, Dialect};
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, LogLevel, MapType, MetricType};
use serde::Deserialize;

proxy_wasm::main! {{
    proxy_wasm::set_log_level(LogLevel::Info);
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root::default()) });
}}

/// The smallest and largest `buffer` accepted.
const MIN_BUFFER: usize = 64;
const MAX_BUFFER: usize = 16 << 20;

/// The plugin configuration as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    dialect: DialectName,
    on_violation: PolicyName,
    repair: bool,
    close_open: bool,
    canonical: bool,
    drop_raw: bool,
    max_event_bytes: u64,
    check_tool_args: bool,
    deny_tools: Vec<String>,
    buffer: usize,
    deterministic_ids: bool,
    /// A request that accepts `text/event-stream` asks the upstream for
    /// `accept-encoding: identity` (a compressed stream cannot be
    /// rewritten).
    request_identity: bool,
    /// One log line (info) per rewritten stream, with its statistics.
    log_streams: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            dialect: DialectName::V1,
            on_violation: PolicyName::Stop,
            repair: true,
            close_open: false,
            canonical: false,
            drop_raw: false,
            max_event_bytes: 0,
            check_tool_args: false,
            deny_tools: Vec::new(),
            buffer: 64 << 10,
            deterministic_ids: false,
            request_identity: true,
            log_streams: true,
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum DialectName {
    V1,
    V0,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PolicyName {
    Stop,
    Drop,
    Pass,
}

/// What a stream is rewritten with, checked at configuration time.
#[derive(Debug)]
struct Plan {
    config: Config,
    options: Options,
    deny_tools: Vec<String>,
    buffer: usize,
    request_identity: bool,
    log_streams: bool,
}

impl Plan {
    fn from_json(json: &[u8]) -> Result<Plan, String> {
        let s: Settings = if json.iter().all(u8::is_ascii_whitespace) {
            Settings::default()
        } else {
            serde_json::from_slice(json).map_err(|e| e.to_string())?
        };
        if !(MIN_BUFFER..=MAX_BUFFER).contains(&s.buffer) {
            return Err(format!(
                "buffer {} is outside {MIN_BUFFER}..={MAX_BUFFER}",
                s.buffer
            ));
        }
        let dialect = match s.dialect {
            DialectName::V1 => Dialect::V1,
            DialectName::V0 => Dialect::V0,
        };
        let minting = if s.deterministic_ids {
            Minting::Deterministic
        } else {
            Minting::PerRun
        };
        let config = Config::new()
            .dialect(dialect)
            .minting(minting)
            .check_tool_args(s.check_tool_args);
        let policy = match s.on_violation {
            PolicyName::Stop => OnViolation::Stop,
            PolicyName::Drop => OnViolation::Drop,
            PolicyName::Pass => OnViolation::Pass,
        };
        let options = Options::new()
            .on_violation(policy)
            .repair(s.repair)
            .close_open(s.close_open)
            .canonical(s.canonical)
            .drop_raw(s.drop_raw)
            .max_event_bytes(s.max_event_bytes);
        // The denied names must fit the rewriter: try them on a small one.
        let (mut frames, mut raw) = ([0u8; MIN_BUFFER], [0u8; MIN_BUFFER]);
        let mut probe = Rewriter::new(&mut frames, &mut raw, config, options);
        for name in &s.deny_tools {
            probe
                .deny_tool(name)
                .map_err(|e| format!("deny_tools: {e} (at {name:?})"))?;
        }
        Ok(Plan {
            config,
            options,
            deny_tools: s.deny_tools,
            buffer: s.buffer,
            request_identity: s.request_identity,
            log_streams: s.log_streams,
        })
    }
}

/// A frame buffer and a raw buffer, allocated once and reused.
type Pair = (&'static mut [u8], &'static mut [u8]);

thread_local! {
    /// Buffer pairs no stream holds (one VM runs on one thread).
    static POOL: RefCell<Vec<Pair>> = const { RefCell::new(Vec::new()) };
    /// The metrics, defined once per VM.
    static METRICS: RefCell<Option<Rc<Metrics>>> = const { RefCell::new(None) };
}

/// A pair of `size`-byte buffers from the pool, or a new one.
fn take_pair(size: usize, metrics: &Metrics) -> Pair {
    let reused = POOL.with_borrow_mut(|pool| {
        let i = pool
            .iter()
            .position(|(a, b)| a.len() == size && b.len() == size)?;
        Some(pool.swap_remove(i))
    });
    reused.unwrap_or_else(|| {
        // A gauge summed over the VMs (one per worker thread).
        metrics.add(metrics.buffer_pairs, 1);
        let frames = Box::leak(vec![0u8; size].into_boxed_slice());
        let raw = Box::leak(vec![0u8; size].into_boxed_slice());
        (frames, raw)
    })
}

fn give_back(pair: Pair) {
    POOL.with_borrow_mut(|pool| pool.push(pair));
}

/// The counters that follow a rewriter's statistics, in [`Metrics::stats`]
/// order.
const STAT_NAMES: [&str; 9] = [
    "events",
    "violations",
    "repairs",
    "dropped",
    "bytes_in",
    "bytes_out",
    "too_large",
    "tool_events_dropped",
    "cut",
];

fn stat_values(s: &Stats) -> [u64; 9] {
    [
        s.events,
        s.violations,
        s.repairs,
        s.dropped,
        s.bytes_in,
        s.bytes_out,
        s.too_large,
        s.tool_events_dropped,
        s.cut,
    ]
}

/// Metric ids (`None` where the host would not define one).
#[derive(Debug, Default)]
struct Metrics {
    stats: [Option<u32>; 9],
    streams: Option<u32>,
    passed: Option<u32>,
    compressed: Option<u32>,
    errors: Option<u32>,
    aborted: Option<u32>,
    trailers: Option<u32>,
    buffer_pairs: Option<u32>,
}

impl Metrics {
    fn define() -> Metrics {
        let counter = |name: &str| define(MetricType::Counter, name);
        Metrics {
            stats: STAT_NAMES.map(counter),
            streams: counter("streams"),
            passed: counter("passed"),
            compressed: counter("compressed"),
            errors: counter("errors"),
            aborted: counter("aborted"),
            trailers: counter("trailers"),
            buffer_pairs: define(MetricType::Gauge, "buffer_pairs"),
        }
    }

    /// This VM's metrics, defined on first use.
    fn get() -> Rc<Metrics> {
        METRICS.with_borrow_mut(|m| Rc::clone(m.get_or_insert_with(|| Rc::new(Metrics::define()))))
    }

    fn add(&self, id: Option<u32>, n: u64) {
        if let (Some(id), Ok(n)) = (id, i64::try_from(n))
            && n > 0
        {
            // An unknown id is an error status, not a panic: ignored.
            let _ = hostcalls::increment_metric(id, n);
        }
    }
}

fn define(kind: MetricType, name: &str) -> Option<u32> {
    hostcalls::define_metric(kind, &format!("agui_stream.{name}")).ok()
}

/// The plugin: its configuration.
#[derive(Default)]
struct Root {
    plan: Option<Rc<Plan>>,
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, _size: usize) -> bool {
        let json = hostcalls::get_buffer(BufferType::PluginConfiguration, 0, usize::MAX)
            .ok()
            .flatten()
            .unwrap_or_default();
        match Plan::from_json(&json) {
            Ok(plan) => {
                log::info!(
                    "agui-stream: configured: {}",
                    String::from_utf8_lossy(&json).trim()
                );
                Metrics::get();
                self.plan = Some(Rc::new(plan));
                true
            }
            Err(e) => {
                log::error!("agui-stream: bad plugin configuration: {e}");
                false
            }
        }
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        let plan = Rc::clone(self.plan.as_ref()?);
        Some(Box::new(Stream {
            plan,
            metrics: Metrics::get(),
            state: State::Waiting,
            out: Vec::new(),
            reported: [0; 9],
            path: String::new(),
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

/// Where a response stands.
enum State {
    /// Its headers have not come yet.
    Waiting,
    /// Not an event stream (or compressed): untouched.
    Untouched,
    /// Being rewritten.
    Rewriting(Box<Rewriter<'static>>),
    /// The rewriter failed: the rest of the body is dropped.
    Failed,
    /// Rewritten to its end.
    Done,
}

/// One HTTP stream.
struct Stream {
    plan: Rc<Plan>,
    metrics: Rc<Metrics>,
    state: State,
    /// The output for the current chunk (reused).
    out: Vec<u8>,
    /// The statistics already added to the metrics.
    reported: [u64; 9],
    /// The request's path, for the log line.
    path: String,
}

/// A header's value as bytes (`None` if absent or unreadable).
fn header(map: MapType, name: &str) -> Option<Vec<u8>> {
    hostcalls::get_map_value_bytes(map, name).ok().flatten()
}

/// The media type of `content_type` is `text/event-stream`.
fn is_event_stream(content_type: &[u8]) -> bool {
    let media = content_type
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default();
    media
        .trim_ascii()
        .eq_ignore_ascii_case(b"text/event-stream")
}

/// Every coding listed is `identity` (an absent header is too).
fn is_identity(content_encoding: Option<&[u8]>) -> bool {
    content_encoding.is_none_or(|v| {
        v.split(|&b| b == b',')
            .map(<[u8]>::trim_ascii)
            .all(|c| c.is_empty() || c.eq_ignore_ascii_case(b"identity"))
    })
}

impl Stream {
    /// Adds what the statistics gained since the last call to the metrics.
    fn report(&mut self, stats: &Stats) {
        let now = stat_values(stats);
        for ((id, now), before) in self.metrics.stats.iter().zip(now).zip(&mut self.reported) {
            self.metrics.add(*id, now.saturating_sub(*before));
            *before = now;
        }
    }

    /// Ends the rewriting: the metrics, the log line, the buffers back to
    /// the pool.
    fn release(&mut self, next: State, how: &str) {
        let State::Rewriting(rewriter) = std::mem::replace(&mut self.state, next) else {
            return;
        };
        self.report(rewriter.stats());
        if self.plan.log_streams {
            let stats = serde_json::to_string(rewriter.stats()).unwrap_or_default();
            let path = serde_json::to_string(&self.path).unwrap_or_default();
            log::info!("agui-stream: {{\"path\":{path},\"end\":\"{how}\",\"stats\":{stats}}}");
        }
        give_back(rewriter.into_buffers());
    }

    /// Pushes `input` (and, at the end of the body, finishes) into
    /// `self.out`.
    fn rewrite(&mut self, input: &[u8], end_of_stream: bool) -> Result<(), RewriteError> {
        let State::Rewriting(rewriter) = &mut self.state else {
            return Ok(());
        };
        let mut rest = input;
        while !rest.is_empty() {
            // A `Vec` always has room: one push reads everything.
            let pushed = rewriter.push(rest, &mut self.out)?;
            if pushed.ended || pushed.read == 0 {
                break;
            }
            rest = rest.get(pushed.read..).unwrap_or_default();
        }
        if end_of_stream {
            rewriter.finish(&mut self.out)?;
        }
        let stats = *rewriter.stats();
        self.report(&stats);
        Ok(())
    }
}

impl Context for Stream {}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        if let Some(path) = header(MapType::HttpRequestHeaders, ":path") {
            let path = path.get(..256).unwrap_or(&path);
            self.path = String::from_utf8_lossy(path).into_owned();
        }
        if self.plan.request_identity {
            let accept = header(MapType::HttpRequestHeaders, "accept").unwrap_or_default();
            if accept
                .windows(17)
                .any(|w| w.eq_ignore_ascii_case(b"text/event-stream"))
            {
                let _ = hostcalls::set_map_value_bytes(
                    MapType::HttpRequestHeaders,
                    "accept-encoding",
                    Some(b"identity"),
                );
            }
        }
        Action::Continue
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        let content_type = header(MapType::HttpResponseHeaders, "content-type").unwrap_or_default();
        if end_of_stream || !is_event_stream(&content_type) {
            self.state = State::Untouched;
            self.metrics.add(self.metrics.passed, 1);
            return Action::Continue;
        }
        let encoding = header(MapType::HttpResponseHeaders, "content-encoding");
        if !is_identity(encoding.as_deref()) {
            self.state = State::Untouched;
            self.metrics.add(self.metrics.compressed, 1);
            return Action::Continue;
        }
        let response = MapType::HttpResponseHeaders;
        let _ = hostcalls::remove_map_value(response, "content-length");
        let _ = hostcalls::set_map_value_bytes(response, "x-accel-buffering", Some(b"no"));
        if header(response, "cache-control").is_none() {
            let _ = hostcalls::set_map_value_bytes(response, "cache-control", Some(b"no-cache"));
        }
        let plan = &self.plan;
        let (frames, raw) = take_pair(plan.buffer, &self.metrics);
        let mut rewriter = Rewriter::new(frames, raw, plan.config, plan.options);
        for name in &plan.deny_tools {
            // Checked at configuration time: cannot fail.
            let _ = rewriter.deny_tool(name);
        }
        self.state = State::Rewriting(Box::new(rewriter));
        self.metrics.add(self.metrics.streams, 1);
        Action::Continue
    }

    /// A response that ends with trailers (an HTTP/2 upstream's, or those
    /// Envoy's decompressor adds) never has a body chunk with
    /// `end_of_stream`, and here the body cannot be written any more (Envoy
    /// answers a body edit with `BadArgument`, which the SDK turns into a
    /// panic): `finish`'s output (a repair) cannot be sent. Logged and
    /// counted.
    fn on_http_response_trailers(&mut self, _num_trailers: usize) -> Action {
        if matches!(self.state, State::Rewriting(_)) {
            log::warn!(
                "agui-stream: {}: the response ends with trailers: the end of the stream cannot be repaired",
                self.path
            );
            self.metrics.add(self.metrics.trailers, 1);
            self.release(State::Done, "trailers");
        }
        Action::Continue
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        match self.state {
            State::Rewriting(_) => {}
            State::Failed => {
                // Nothing more after a failure.
                if body_size > 0 {
                    let _ = hostcalls::set_buffer(BufferType::HttpResponseBody, 0, body_size, &[]);
                }
                return Action::Continue;
            }
            _ => return Action::Continue,
        }
        let input = if body_size == 0 {
            Some(Vec::new())
        } else {
            hostcalls::get_buffer(BufferType::HttpResponseBody, 0, body_size)
                .ok()
                .flatten()
        };
        self.out.clear();
        let result = match &input {
            Some(input) => self.rewrite(input, end_of_stream),
            None => Err(RewriteError::Write),
        };
        if body_size > 0 || !self.out.is_empty() {
            // Replace all (start 0, size ≥ the buffer's length): an edit
            // Envoy accepts.
            let _ = hostcalls::set_buffer(BufferType::HttpResponseBody, 0, body_size, &self.out);
        }
        match result {
            Err(e) => {
                log::error!(
                    "agui-stream: {}: the rewriter cannot go on ({e}); the rest of the body is dropped",
                    self.path
                );
                self.metrics.add(self.metrics.errors, 1);
                self.release(State::Failed, "failed");
            }
            Ok(()) if end_of_stream => self.release(State::Done, "finished"),
            Ok(()) => {}
        }
        self.out.clear();
        if self.out.capacity() > self.plan.buffer.saturating_mul(4) {
            // A large chunk's output is not kept for the stream's life.
            self.out = Vec::new();
        }
        Action::Continue
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if matches!(self.state, State::Rewriting(_)) {
            // The stream went away before its end (a reset, a client gone).
            self.metrics.add(self.metrics.aborted, 1);
            self.release(State::Done, "aborted");
        }
    }
}
