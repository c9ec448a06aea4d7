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
//! So behind Envoy a run cut inside a chunked body is reset, not repaired
//! — and uvicorn (every FastAPI/Starlette agent server) streams chunked:
//! an agent that crashes mid-run leaves the client with its complete
//! events and a reset stream, no `RUN_ERROR`. Where the client must get a
//! proper end (`RUN_ERROR` `AGUI_STREAM_TRUNCATED`), put `http_proxy` (or
//! `agui gateway`) in front instead: it sees the cut as the end of the
//! body and repairs it.
//!
//! The request side: an agent request (`Gateway::is_agent_request`: a POST
//! that accepts `text/event-stream`, or one under `request_path`) has its
//! `RunAgentInput` body checked chunk by chunk as Envoy streams it upstream
//! ([`RequestRewriter`], buffers from the same pool): each chunk is replaced
//! by the rewriter's output — the same bytes, but the body's last byte
//! held back until the verdict and the entries of denied tools taken out
//! of `tools` (then the request loses its `content-length` in
//! `on_http_request_headers`). A body that fails is answered locally
//! (`send_http_response`: 400, or 413 over `max_request_bytes` or a
//! capacity, with the JSON problem) and the callback pauses: Envoy resets
//! the upstream request, whose body never ended — the agent never receives
//! a complete request. A `content-length` over the limit (or 0) is
//! answered in the headers callback, before the upstream sees a byte of
//! body. Counted (`requests_checked`, `requests_refused_json`,
//! `requests_refused_schema`, `requests_refused_too_large`,
//! `requests_refused_capacity`, `requests_rewritten`) and, refused, logged.
//!
//! Nothing here panics on any input: the host calls go through [`host`],
//! which never unwraps a status (the SDK's context methods do), and a
//! rewriter error (which cannot happen with a `Vec` output and the buffer
//! sizes allowed) forwards what output there is, then empties the
//! remaining chunks, and is logged and counted.
//!
//! Memory: the rewriter borrows two buffers (frame and raw, `buffer` bytes
//! each) from a per-VM pool of pairs allocated once and reused ([`pool`])
//! for each chunk, and keeps them after it only while a block is in flight
//! (the chunk ended inside it): the pool holds about as many pairs as
//! blocks in flight at once, not one per open stream. A chunk's output is
//! written into one `Vec` per VM. So a stream between blocks holds its
//! rewriter's state and nothing else.
//!
//! Configuration (the plugin configuration): the JSON object every front
//! end takes, read by the front ends' shared helper
//! (`examples/shared/frontend.rs`); every key optional, an unknown key or
//! a bad value fails the plugin's start:
//!
//! ```json
//! {"dialect": "v1", "on_violation": "stop", "repair": true, "close_open": false,
//!  "canonical": false, "drop_raw": false, "max_event_bytes": 0,
//!  "check_tool_args": false, "deny_tools": [],
//!  "deterministic_ids": false, "buffer": 65536, "buffer_budget": 67108864,
//!  "hold_bytes": 16777216, "request_identity": true,
//!  "log_streams": true, "check_requests": true, "max_request_bytes": 16777216,
//!  "request_path": ""}
//! ```
//!
//! (`keepalive_ms` is taken and ignored: the filter never writes on its
//! own.) The response-header policy is the helper's too: which responses
//! are rewritten (`is_event_stream`, `is_identity` over every
//! `content-encoding` line) and the edits (`RESPONSE_EDITS`).
//!
//! Metrics (counters unless said, named `agui_stream.*`; Envoy shows them
//! with its `wasmcustom.` prefix): every counter of the rewriter's
//! statistics, by the names of `Stats::COUNTER_NAMES` (`bytes_in`,
//! `bytes_out`, `events`, `forwarded`, `relined`, `encoded`, `violations`,
//! `dropped`, `passed`, `repairs`, `duplicate_terminals`, `raw_dropped`,
//! `too_large`, `keep_alives`, `tool_events_dropped`, `streamed`, `cut`),
//! summed over the streams; and the filter's own: `streams` (rewritten),
//! `untouched` (responses that are not event streams), `compressed` (event
//! streams with a `content-encoding`, untouched), `errors`, `aborted`
//! (streams gone before their end: a reset, a client gone), `trailers`
//! (streams that ended with trailers, where nothing can be added after the
//! body, so no repair), and the gauge `buffer_pairs` (buffer pairs
//! allocated, over all VMs). One log line (info) per rewritten stream:
//! `agui gateway`'s stats line with `"path"` and `"end"` added.

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

#[path = "../../shared/frontend.rs"]
mod frontend;
pub mod host;
#[path = "../../shared/pool.rs"]
pub mod pool;

use std::cell::RefCell;
use std::rc::Rc;

use agui_stream::rewrite::{Refusal, RequestRewriter, RequestStats, RewriteError, Rewriter, Stats};
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, ContextType, LogLevel, MetricType};

use agui_stream::guard::Rules;
use frontend::{Gateway, RESPONSE_EDITS, Reported, RequestCounts, StatsLine};

proxy_wasm::main! {{
    proxy_wasm::set_log_level(LogLevel::Info);
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root::default()) });
}}

/// The rewriter's counters (`Stats::counters`), in that order.
const COUNTERS: usize = Stats::COUNTER_NAMES.len();

thread_local! {
    /// The metrics, defined once per VM.
    static METRICS: RefCell<Option<Rc<Metrics>>> = const { RefCell::new(None) };
}

/// Metric ids (`None` where the host would not define one).
#[derive(Debug)]
struct Metrics {
    /// One per `Stats::COUNTER_NAMES`.
    stats: [Option<u32>; COUNTERS],
    streams: Option<u32>,
    untouched: Option<u32>,
    compressed: Option<u32>,
    errors: Option<u32>,
    aborted: Option<u32>,
    trailers: Option<u32>,
    buffer_pairs: Option<u32>,
    /// Agent requests: checked, refused by reason, rewritten
    /// (`RequestCounts::NAMES`).
    requests: [Option<u32>; RequestCounts::NAMES.len()],
}

impl Metrics {
    fn define() -> Metrics {
        let counter = |name: &str| host::define_metric(MetricType::Counter, name);
        Metrics {
            stats: Stats::COUNTER_NAMES.map(counter),
            streams: counter("streams"),
            untouched: counter("untouched"),
            compressed: counter("compressed"),
            errors: counter("errors"),
            aborted: counter("aborted"),
            trailers: counter("trailers"),
            // A gauge summed over the VMs (one per worker thread).
            buffer_pairs: host::define_metric(MetricType::Gauge, "buffer_pairs"),
            requests: RequestCounts::NAMES.map(counter),
        }
    }

    /// Counts one agent request's outcome.
    fn count_request(&self, outcome: Result<&RequestStats, &Refusal>) {
        for (id, n) in self.requests.iter().zip(RequestCounts::of(outcome)) {
            if n > 0 {
                self.add(*id, n);
            }
        }
    }

    /// This VM's metrics, defined on first use.
    fn get() -> Rc<Metrics> {
        METRICS.with_borrow_mut(|m| Rc::clone(m.get_or_insert_with(|| Rc::new(Metrics::define()))))
    }

    fn add(&self, id: Option<u32>, n: u64) {
        host::increment_metric(id, n);
    }
}

/// The plugin: its configuration, and its guard rules compiled.
#[derive(Default)]
struct Root {
    gateway: Option<Rc<Gateway>>,
    rules: Option<&'static Rules<'static>>,
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, _size: usize) -> bool {
        let json = host::plugin_configuration();
        match Gateway::from_json(&json) {
            Ok(gateway) => {
                log::info!(
                    "agui-stream: configured: {}",
                    String::from_utf8_lossy(&json).trim()
                );
                Metrics::get();
                self.rules = pool::leak_rules(&gateway.guard, |g| g.rules().ok());
                self.gateway = Some(Rc::new(gateway));
                true
            }
            Err(e) => {
                log::error!("agui-stream: bad plugin configuration: {e}");
                false
            }
        }
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        let gateway = Rc::clone(self.gateway.as_ref()?);
        Some(Box::new(Stream {
            gateway,
            rules: self.rules,
            metrics: Metrics::get(),
            state: State::Waiting,
            request: None,
            reported: Reported::new(),
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
    gateway: Rc<Gateway>,
    rules: Option<&'static Rules<'static>>,
    metrics: Rc<Metrics>,
    state: State,
    /// An agent request's body being checked.
    request: Option<Box<RequestRewriter<'static>>>,
    /// The counters already added to the metrics.
    reported: Reported,
    /// The request's path, for the log line.
    path: String,
}

impl Stream {
    /// Adds what the counters gained since the last call to the metrics.
    fn report(&mut self, stats: &Stats) {
        for (id, gain) in self.metrics.stats.iter().zip(self.reported.gains(stats)) {
            self.metrics.add(*id, gain);
        }
    }

    /// Starts rewriting: a rewriter, without buffers until a chunk comes
    /// ([`pool::lend`]), and with tool tables only if tools are denied.
    fn start(&mut self) {
        let tables = self.gateway.denies_tools().then(pool::take_tables);
        // The names fit: `Gateway::from_json` took them.
        let Ok(mut rewriter) = self.gateway.rewriter(&mut [], &mut [], tables) else {
            return;
        };
        if let Some(rules) = self.rules {
            rewriter.guard(pool::take_lanes(rules));
        }
        self.state = State::Rewriting(Box::new(rewriter));
        self.metrics.add(self.metrics.streams, 1);
    }

    /// Ends the rewriting: the metrics, the log line, the buffers back to
    /// the pool.
    fn release(&mut self, next: State, how: &str) {
        let State::Rewriting(rewriter) = std::mem::replace(&mut self.state, next) else {
            return;
        };
        self.report(rewriter.stats());
        if self.gateway.log_streams {
            let mut line = StatsLine::new(rewriter.stats());
            if let Some(lanes) = rewriter.guard_lanes() {
                line.field("guard", &frontend::GuardCounts(lanes));
            }
            line.field("path", self.path.as_str()).field("end", how);
            log::info!("agui-stream: {}", line.as_str());
        }
        pool::give_back_parts(*rewriter);
    }

    /// Pushes `input` (and, at the end of the body, finishes) into `out`,
    /// with a buffer pair lent for it: the pair goes back after it unless
    /// the chunk ended inside a block.
    fn rewrite(
        &mut self,
        input: &[u8],
        end_of_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), RewriteError> {
        let State::Rewriting(rewriter) = &mut self.state else {
            return Ok(());
        };
        let metrics = &self.metrics;
        pool::lend(
            rewriter,
            self.gateway.buffer,
            self.gateway.buffer_budget,
            |_| {
                metrics.add(metrics.buffer_pairs, 1);
            },
        );
        let gateway = &self.gateway;
        let mut result = pool::push_all(
            rewriter,
            input,
            out,
            gateway.hold_bytes,
            gateway.buffer_budget,
        )
        .map(drop);
        if result.is_ok() && end_of_stream {
            result = rewriter.finish(out).map(drop);
        }
        pool::reclaim(rewriter);
        let stats = *rewriter.stats();
        self.report(&stats);
        result
    }
}

impl Stream {
    /// Refuses the agent request: the local answer, the counts, the log
    /// line, the buffers back.
    fn refuse(&mut self, refusal: &Refusal) {
        let mut problem = Vec::new();
        if let Some(r) = &self.request {
            let _ = r.write_problem(refusal, &mut problem);
        }
        log::warn!(
            "agui-stream: {}: request refused ({}): {refusal}",
            self.path,
            refusal.status()
        );
        self.metrics.count_request(Err(refusal));
        host::send_json_response(refusal.status(), &problem);
        if let Some(r) = self.request.take() {
            pool::give_back(r.into_buffers());
        }
    }

    /// The body passed: counted, the buffers back.
    fn passed(&mut self) {
        if let Some(r) = self.request.take() {
            self.metrics.count_request(Ok(r.stats()));
            pool::give_back(r.into_buffers());
        }
    }
}

impl Context for Stream {}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        if let Some(path) = host::request_header(":path") {
            let path = path.get(..256).unwrap_or(&path);
            self.path = String::from_utf8_lossy(path).into_owned();
        }
        let accept = host::request_header("accept").unwrap_or_default();
        if self.gateway.request_identity && frontend::accepts_event_stream(&accept) {
            // A compressed stream cannot be rewritten.
            host::set_request_header("accept-encoding", b"identity");
        }
        let method = host::request_header(":method").unwrap_or_default();
        if !self
            .gateway
            .is_agent_request(&method, self.path.as_bytes(), &accept)
        {
            return Action::Continue;
        }
        let metrics = &self.metrics;
        let gateway = &self.gateway;
        let (check, hold) = pool::take(gateway.buffer, gateway.buffer_budget, |_| {
            metrics.add(metrics.buffer_pairs, 1);
        });
        let request = RequestRewriter::new(check, hold, self.gateway.dialect)
            .limit(self.gateway.max_request_bytes);
        self.request = Some(Box::new(request));
        if let Some(r) = &mut self.request {
            // The names fit: `Gateway::from_json` took them.
            for name in self.gateway.deny_tools.iter() {
                let _ = r.deny_tool(name);
            }
        }
        let length = host::request_header("content-length")
            .and_then(|v| std::str::from_utf8(&v).ok()?.trim().parse::<u64>().ok());
        // Refused before the upstream sees any body: a length over the
        // limit, and no body at all (whole as soon as it is sent).
        let refusal = match (length, end_of_stream) {
            (Some(n), _) if n > self.gateway.max_request_bytes => Some(Refusal::TooLarge {
                limit: self.gateway.max_request_bytes,
            }),
            (Some(0), _) | (_, true) => self
                .request
                .as_mut()
                .and_then(|r| r.finish(&mut Vec::new()).err()),
            _ => None,
        };
        if let Some(refusal) = refusal {
            self.refuse(&refusal);
            return Action::Pause;
        }
        if !self.gateway.deny_tools.is_empty() {
            // Taking an entry out changes the length: the body goes chunked.
            host::remove_request_header("content-length");
        }
        Action::Continue
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        let Some(request) = &mut self.request else {
            return Action::Continue;
        };
        let mut out = scratch::take();
        let mut verdict = match host::request_body(body_size) {
            Some(input) => request.push(&input, &mut out),
            None => Err(Refusal::OutputFull),
        };
        if verdict.is_ok() && end_of_stream {
            verdict = request.finish(&mut out).map(drop);
        }
        if verdict.is_ok() {
            host::replace_request_body(body_size, &out);
        }
        scratch::give_back(out);
        match verdict {
            Ok(()) => {
                if end_of_stream {
                    self.passed();
                }
                Action::Continue
            }
            Err(refusal) => {
                // Nothing of this chunk goes on; the upstream request is
                // reset with the local answer.
                host::replace_request_body(body_size, &[]);
                self.refuse(&refusal);
                Action::Pause
            }
        }
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        let content_type = host::response_header("content-type").unwrap_or_default();
        if end_of_stream || !frontend::is_event_stream(&content_type) {
            self.state = State::Untouched;
            self.metrics.add(self.metrics.untouched, 1);
            return Action::Continue;
        }
        let encodings = host::response_header_values("content-encoding");
        if !frontend::is_identity(encodings.iter().map(Vec::as_slice)) {
            self.state = State::Untouched;
            self.metrics.add(self.metrics.compressed, 1);
            return Action::Continue;
        }
        for edit in RESPONSE_EDITS {
            host::edit_response_header(edit);
        }
        self.start();
        Action::Continue
    }

    /// A response that ends with trailers (an HTTP/2 upstream's, or those
    /// Envoy's decompressor adds) never has a body chunk with
    /// `end_of_stream`, and here the body cannot be written any more (Envoy
    /// answers a body edit with `BadArgument`): `finish`'s output (a
    /// repair) cannot be sent. Logged and counted.
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
                    host::replace_response_body(body_size, &[]);
                }
                return Action::Continue;
            }
            _ => return Action::Continue,
        }
        let mut out = scratch::take();
        let result = match host::response_body(body_size) {
            Some(input) => self.rewrite(&input, end_of_stream, &mut out),
            None => Err(RewriteError::Write),
        };
        if body_size > 0 || !out.is_empty() {
            host::replace_response_body(body_size, &out);
        }
        scratch::give_back(out);
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
        Action::Continue
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Some(r) = self.request.take() {
            // The request went away before its body ended.
            pool::give_back(r.into_buffers());
        }
        if matches!(self.state, State::Rewriting(_)) {
            // The stream went away before its end (a reset, a client gone).
            self.metrics.add(self.metrics.aborted, 1);
            self.release(State::Done, "aborted");
        }
    }
}

/// The output of the chunk at hand: one `Vec` per VM (callbacks never
/// overlap), so a stream holds no output between its chunks. It keeps the
/// capacity of the largest chunk's output (Envoy's buffer limits bound a
/// chunk).
mod scratch {
    use std::cell::RefCell;

    thread_local! {
        static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }

    /// The scratch, empty (a new `Vec` if it is out).
    pub fn take() -> Vec<u8> {
        OUT.take()
    }

    /// Puts it back, emptied.
    pub fn give_back(mut out: Vec<u8>) {
        out.clear();
        OUT.set(out);
    }
}
