//! agui-stream's gateway rewriter as an Envoy dynamic module: a native HTTP
//! filter (`envoy.filters.http.dynamic_modules`, Envoy 1.40), the same
//! filter as the proxy-wasm one (examples/proxy-wasm) without the wasm VM.
//!
//! What it does is the proxy-wasm filter's, with the same configuration
//! (the JSON object every front end takes, examples/shared/frontend.rs, as
//! the `filter_config` `StringValue`; a bad one fails Envoy's
//! configuration), the same response-header policy and edits, the same
//! request side (request.rs: an agent request's `RunAgentInput` body
//! checked as it streams upstream, refused with 400 or 413 and a JSON
//! problem before the agent acts, denied tools taken out of `tools`), the
//! same metrics (`agui_stream.*`, shown by Envoy as
//! `dynamicmodulescustom.…`) and the same per-stream log line. Where it
//! differs:
//!
//! - Each body chunk is read where Envoy holds it (its slices, no copy)
//!   straight into the rewriter, and the chunk's bytes are replaced by the
//!   rewriter's output with one drain and one append (one copy out).
//! - A response that ends with trailers (an HTTP/2 upstream's, those
//!   Envoy's decompressor adds) is repaired too: in the trailers hook
//!   `finish`'s output goes in as body before the trailers
//!   (`addEncodedData`), which proxy-wasm cannot do. Counted in
//!   `trailers`. Likewise a request body that ends with trailers gets its
//!   verdict there.
//! - Native code: no VM to trap or reload. The filter has no `unsafe`
//!   outside abi.rs and exports.rs, and no unwrap, panic or indexing (the
//!   lints below); a panic would abort Envoy (`panic = "abort"`).
//!
//! The end of the body otherwise as in the proxy-wasm filter: a
//! close-delimited body cut short is repaired; a chunked or content-length
//! one makes Envoy reset the client's stream (counted as `aborted`).
//!
//! Memory: the rewriter borrows two buffers (`buffer` bytes each) from a
//! per-thread pool of pairs (examples/shared/pool.rs) for each chunk, and
//! keeps them after it only while a block is in flight (a chunk ended
//! inside it); the output of a chunk is written into a per-thread scratch
//! `Vec` ([`Scratch`]), so a stream between blocks holds nothing but its
//! rewriter's state. An agent request's rewriter and buffers exist from
//! its headers to the end of its body only (request.rs).
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

mod abi;
mod exports;
#[path = "../../shared/frontend.rs"]
mod frontend;
#[path = "../../shared/pool.rs"]
mod pool;
mod request;

use std::cell::RefCell;

use agui_stream::guard::Rules;
use agui_stream::rewrite::{RewriteError, Rewriter, Stats};

use abi::{Body, ConfigHook, EnvoyBuffer, Headers, Hook, Level};
use frontend::{Gateway, HeaderEdit, RESPONSE_EDITS, Reported, StatsLine};
use request::Verdict;

/// The rewriter's counters (`Stats::counters`), in that order.
const COUNTERS: usize = Stats::COUNTER_NAMES.len();

/// Counter ids (`None` where Envoy would not define one).
struct Metrics {
    /// One per `Stats::COUNTER_NAMES`.
    stats: [Option<usize>; COUNTERS],
    streams: Option<usize>,
    untouched: Option<usize>,
    compressed: Option<usize>,
    errors: Option<usize>,
    aborted: Option<usize>,
    trailers: Option<usize>,
    /// Buffer pairs allocated (never freed: a counter).
    buffer_pairs: Option<usize>,
    /// Agent requests: checked, refused by reason, rewritten.
    requests: request::Counters,
}

/// One filter configuration: the gateway's options, its guard rules
/// compiled, and the counters.
pub struct FilterConfig {
    gateway: Gateway,
    rules: Option<&'static Rules<'static>>,
    metrics: Metrics,
}

impl FilterConfig {
    /// Reads the configuration and defines the counters; `None` (logged)
    /// for a bad configuration.
    fn new(hook: &ConfigHook, json: &[u8]) -> Option<FilterConfig> {
        let gateway = match Gateway::from_json(json) {
            Ok(gateway) => gateway,
            Err(e) => {
                abi::log(
                    Level::Error,
                    &format!("agui-stream: bad filter configuration: {e}"),
                );
                return None;
            }
        };
        let counter = |name: &str| hook.define_counter(&format!("agui_stream.{name}"));
        let metrics = Metrics {
            stats: Stats::COUNTER_NAMES.map(counter),
            streams: counter("streams"),
            untouched: counter("untouched"),
            compressed: counter("compressed"),
            errors: counter("errors"),
            aborted: counter("aborted"),
            trailers: counter("trailers"),
            buffer_pairs: counter("buffer_pairs"),
            requests: request::Counters::define(counter),
        };
        abi::log(
            Level::Info,
            &format!(
                "agui-stream: configured: {}",
                String::from_utf8_lossy(json).trim()
            ),
        );
        let rules = pool::leak_rules(&gateway.guard, |g| g.rules().ok());
        Some(FilterConfig {
            gateway,
            rules,
            metrics,
        })
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

/// The filter of one HTTP stream.
pub struct Filter {
    config: &'static FilterConfig,
    state: State,
    /// The counters already added to the metrics.
    reported: Reported,
    /// The request's path, for the log line.
    path: String,
    /// An agent request's body being checked (request.rs): from its
    /// headers to the end of its body, no longer.
    request: request::Request,
}

impl Filter {
    fn new(config: &'static FilterConfig) -> Filter {
        Filter {
            config,
            state: State::Waiting,
            reported: Reported::new(),
            path: String::new(),
            request: None,
        }
    }

    fn on_request_headers(&mut self, hook: &mut Hook<'_>, end_of_stream: bool) -> Verdict {
        if let (Some(path), _) = hook.header(Headers::Request, ":path", 0) {
            let path = path.get(..256).unwrap_or(path);
            self.path = String::from_utf8_lossy(path).into_owned();
        }
        let (accept, _) = hook.header(Headers::Request, "accept", 0);
        if self.config.gateway.request_identity
            && frontend::accepts_event_stream(accept.unwrap_or_default())
        {
            // A compressed stream cannot be rewritten.
            hook.set_header(Headers::Request, "accept-encoding", Some(b"identity"));
        }
        self.check_request_headers(hook, end_of_stream)
    }

    fn on_response_headers(&mut self, hook: &mut Hook<'_>, end_of_stream: bool) {
        let metrics = &self.config.metrics;
        let (content_type, _) = hook.header(Headers::Response, "content-type", 0);
        if end_of_stream || !frontend::is_event_stream(content_type.unwrap_or_default()) {
            self.state = State::Untouched;
            hook.increment_counter(metrics.untouched, 1);
            return;
        }
        let (first, lines) = hook.header(Headers::Response, "content-encoding", 0);
        let rest =
            (1..lines).filter_map(|i| hook.header(Headers::Response, "content-encoding", i).0);
        if !frontend::is_identity(first.into_iter().chain(rest)) {
            self.state = State::Untouched;
            hook.increment_counter(metrics.compressed, 1);
            return;
        }
        for edit in RESPONSE_EDITS {
            match edit {
                HeaderEdit::Remove(name) => hook.set_header(Headers::Response, name, None),
                // Added where it is absent (nearly always), not set: a set
                // looks the name up (see `Hook::has_header`).
                HeaderEdit::Set(name, value) | HeaderEdit::SetIfAbsent(name, value)
                    if !hook.has_header(Headers::Response, name) =>
                {
                    hook.add_header(Headers::Response, name, value.as_bytes())
                }
                HeaderEdit::Set(name, value) => {
                    hook.set_header(Headers::Response, name, Some(value.as_bytes()))
                }
                HeaderEdit::SetIfAbsent(..) => false,
            };
        }
        let gateway = &self.config.gateway;
        // No buffers until a chunk comes ([`pool::lend`]), tool tables only
        // if tools are denied. The names fit: `Gateway::from_json` took
        // them.
        let tables = gateway.denies_tools().then(pool::take_tables);
        let Ok(mut rewriter) = gateway.rewriter(&mut [], &mut [], tables) else {
            return;
        };
        if let Some(rules) = self.config.rules {
            rewriter.guard(pool::take_lanes(rules));
        }
        self.state = State::Rewriting(Box::new(rewriter));
        hook.increment_counter(metrics.streams, 1);
    }

    fn on_response_body(&mut self, hook: &mut Hook<'_>, end_of_stream: bool) {
        with_scratch(|scratch| self.rewrite_chunk(hook, end_of_stream, scratch));
    }

    fn rewrite_chunk(&mut self, hook: &mut Hook<'_>, end_of_stream: bool, scratch: &mut Scratch) {
        let Scratch { out, slices } = scratch;
        let rewriter = match &mut self.state {
            State::Rewriting(rewriter) => rewriter,
            State::Failed => {
                // Nothing more after a failure.
                let size = hook
                    .body(Body::ReceivedResponse, slices)
                    .map_or(0, |s| s.map(<[u8]>::len).fold(0, usize::saturating_add));
                hook.drain_body(Body::ReceivedResponse, size);
                return;
            }
            _ => return,
        };
        let gateway = &self.config.gateway;
        let metrics = &self.config.metrics;
        pool::lend(rewriter, gateway.buffer, gateway.buffer_budget, |_| {
            hook.increment_counter(metrics.buffer_pairs, 1)
        });
        let mut size = 0usize;
        let mut result = match hook.body(Body::ReceivedResponse, slices) {
            Some(slices) => {
                size = slices
                    .clone()
                    .map(<[u8]>::len)
                    .fold(0, usize::saturating_add);
                // Room for the output at once (a chunk-form stream's grows
                // by its expansion): no copy as the `Vec` grows.
                out.reserve(size.saturating_add(size / 8));
                slices.into_iter().try_for_each(|slice| {
                    pool::push_all(
                        rewriter,
                        slice,
                        out,
                        gateway.hold_bytes,
                        gateway.buffer_budget,
                    )
                    .map(drop)
                })
            }
            None => Err(RewriteError::Write),
        };
        if result.is_ok() && end_of_stream {
            result = rewriter.finish(out).map(drop);
        }
        // Between blocks the pair goes back: an open stream holds buffers
        // only while a block is in flight.
        pool::reclaim(rewriter);
        if size > 0 {
            hook.drain_body(Body::ReceivedResponse, size);
        }
        if !out.is_empty() {
            hook.append_body(Body::ReceivedResponse, out);
        }
        self.report(hook);
        match result {
            Err(e) => self.fail(hook, e),
            Ok(()) if end_of_stream => self.release(hook, State::Done, "finished"),
            Ok(()) => {}
        }
    }

    /// A response that ends with trailers has no body chunk with
    /// `end_of_stream`: the end of the body is here, and `finish`'s output
    /// (a repair) goes in before the trailers.
    fn on_response_trailers(&mut self, hook: &mut Hook<'_>) {
        let State::Rewriting(rewriter) = &mut self.state else {
            return;
        };
        let result = with_scratch(|Scratch { out, .. }| {
            let result = rewriter.finish(out);
            if !out.is_empty() {
                hook.append_body(Body::BufferedResponse, out);
            }
            result
        });
        hook.increment_counter(self.config.metrics.trailers, 1);
        match result {
            Err(e) => self.fail(hook, e),
            Ok(_) => self.release(hook, State::Done, "trailers"),
        }
    }

    fn on_stream_complete(&mut self, hook: &mut Hook<'_>) {
        // The request went away before its body ended.
        self.release_request();
        if matches!(self.state, State::Rewriting(_)) {
            // The stream went away before its end (a reset, a client gone).
            hook.increment_counter(self.config.metrics.aborted, 1);
            self.release(hook, State::Done, "aborted");
        }
    }

    fn fail(&mut self, hook: &mut Hook<'_>, e: RewriteError) {
        let message = format!(
            "agui-stream: {}: the rewriter cannot go on ({e}); the rest of the body is dropped",
            self.path
        );
        abi::log(Level::Error, &message);
        hook.increment_counter(self.config.metrics.errors, 1);
        self.release(hook, State::Failed, "failed");
    }

    /// Adds what the counters gained since the last call to the metrics.
    fn report(&mut self, hook: &Hook<'_>) {
        let State::Rewriting(rewriter) = &self.state else {
            return;
        };
        let gains = self.reported.gains(rewriter.stats());
        for (id, gain) in self.config.metrics.stats.iter().zip(gains) {
            hook.increment_counter(*id, gain);
        }
    }

    /// Ends the rewriting: the metrics, the log line, the buffers back to
    /// the pool.
    fn release(&mut self, hook: &Hook<'_>, next: State, how: &str) {
        self.report(hook);
        let State::Rewriting(rewriter) = core::mem::replace(&mut self.state, next) else {
            return;
        };
        if self.config.gateway.log_streams {
            let mut line = StatsLine::new(rewriter.stats());
            if let Some(lanes) = rewriter.guard_lanes() {
                line.field("guard", &frontend::GuardCounts(lanes));
            }
            line.field("path", self.path.as_str()).field("end", how);
            abi::log(Level::Info, &format!("agui-stream: {}", line.as_str()));
        }
        pool::give_back_parts(*rewriter);
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        self.release_request();
        // `on_stream_complete` released it; if not (no hook left to count
        // with), the buffers at least go back.
        if let State::Rewriting(rewriter) = core::mem::replace(&mut self.state, State::Done) {
            abi::log(
                Level::Warn,
                "agui-stream: a filter was destroyed before its stream completed",
            );
            pool::give_back_parts(*rewriter);
        }
    }
}

/// What a hook needs for a moment: the output for a chunk and the list of
/// Envoy's slices of it. One per worker thread (hooks on a thread never
/// overlap) rather than per stream: it keeps its capacity, so a chunk costs
/// no allocation, and no stream holds memory between its chunks. Its
/// output grows to the largest chunk's output (Envoy's buffer limits bound
/// a chunk: 1 MiB by default).
#[derive(Default)]
struct Scratch {
    out: Vec<u8>,
    slices: Vec<EnvoyBuffer>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch, its output emptied after.
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            let r = f(&mut scratch);
            scratch.out.clear();
            r
        }
        // (Cannot happen: no hook runs inside another.)
        Err(_) => f(&mut Scratch::default()),
    })
}
