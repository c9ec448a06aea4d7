//! The request side, as the proxy-wasm filter has it: an agent request
//! (`Gateway::is_agent_request`: a POST that accepts `text/event-stream`,
//! or one under `request_path`; none with `check_requests: false`) has its
//! `RunAgentInput` body checked chunk by chunk as Envoy streams it upstream
//! (`Gateway::request_rewriter`). Each chunk is replaced by the rewriter's
//! output — the same bytes, but the body's last byte held back until the
//! verdict and the entries of denied tools taken out of `tools` (the
//! request then loses its `content-length`). A body that fails is answered
//! locally (`send_response`: 400, or 413 over `max_request_bytes` or a
//! capacity, with the JSON problem) and the hook stops the request: Envoy
//! resets the upstream request, whose body never ended, so the agent never
//! receives a complete request. A `content-length` over the limit, or none
//! at all (0, or headers that end the request), is answered in the
//! headers hook, before the upstream sees any of the body.
//!
//! One thing the proxy-wasm filter cannot do: a request body that ends
//! with trailers (HTTP/2) has no chunk with `end_of_stream`; the verdict
//! comes in the trailers hook and the held byte goes in before them
//! (`addDecodedData`), or the request is refused there.
//!
//! Memory: the rewriter (about 3 KB, boxed) and its two buffers (`buffer`
//! bytes each, a pair from the same per-thread pool as the responses')
//! exist only for an agent request, from its headers to the end of its
//! body — passed or refused, the buffers go back to the pool and the box
//! is freed there, so a response streaming for minutes after holds none of
//! it. A stream gone before its request body ended gives them back in
//! `on_stream_complete` (or, failing that, when the filter is destroyed).
//! A chunk's output goes through the per-thread scratch, as the response's.
//!
//! Counted (`requests_checked`, `requests_refused_json`,
//! `requests_refused_schema`, `requests_refused_too_large`,
//! `requests_refused_capacity`, `requests_rewritten`) and, refused, logged.

use agui_stream::rewrite::{Refusal, RequestRewriter, RequestStats};

use crate::abi::{self, Body, Headers, Hook, Level};
use crate::frontend::RequestCounts;
use crate::{Filter, Scratch, pool, with_scratch};

/// An agent request's body being checked.
pub type Request = Option<Box<RequestRewriter<'static>>>;

/// What a request hook tells Envoy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The request goes on.
    Continue,
    /// It was answered locally: nothing more of it goes upstream.
    Stop,
}

/// The request counters' ids (`RequestCounts::NAMES`).
pub struct Counters([Option<usize>; RequestCounts::NAMES.len()]);

impl Counters {
    /// Defines them with `counter` (a name → its id).
    pub fn define(counter: impl Fn(&str) -> Option<usize>) -> Counters {
        Counters(RequestCounts::NAMES.map(counter))
    }

    /// Counts one agent request's outcome.
    fn count(&self, hook: &Hook<'_>, outcome: Result<&RequestStats, &Refusal>) {
        for (id, n) in self.0.iter().zip(RequestCounts::of(outcome)) {
            if n > 0 {
                hook.increment_counter(*id, n);
            }
        }
    }
}

/// `content-type` of a refusal's answer.
const PROBLEM_HEADERS: [(&str, &[u8]); 1] = [("content-type", b"application/json")];

impl Filter {
    /// The request headers' part (after `on_request_headers` took the
    /// path): an agent request gets its rewriter, or is answered at once.
    pub(crate) fn check_request_headers(
        &mut self,
        hook: &mut Hook<'_>,
        end_of_stream: bool,
    ) -> Verdict {
        let config = self.config;
        let gateway = &config.gateway;
        let (method, _) = hook.header(Headers::Request, ":method", 0);
        let (accept, _) = hook.header(Headers::Request, "accept", 0);
        let path = self.path.as_bytes();
        if !gateway.is_agent_request(method.unwrap_or_default(), path, accept.unwrap_or_default()) {
            return Verdict::Continue;
        }
        let metrics = &config.metrics;
        let (check, hold) = pool::take(gateway.buffer, gateway.buffer_budget, |_| {
            hook.increment_counter(metrics.buffer_pairs, 1)
        });
        match gateway.request_rewriter(check, hold) {
            Ok(rewriter) => self.request = Some(Box::new(rewriter)),
            Err(e) => {
                // (Cannot happen: `Gateway::from_json` took the names. The
                // pair went with the rewriter: one pair never reused.)
                abi::log(
                    Level::Error,
                    &format!("agui-stream: {}: request not checked: {e}", self.path),
                );
                hook.increment_counter(metrics.errors, 1);
                return Verdict::Continue;
            }
        }
        let (length, _) = hook.header(Headers::Request, "content-length", 0);
        let length = length
            .and_then(|v| core::str::from_utf8(v).ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        // Refused before the upstream sees any body: a length over the
        // limit, and no body at all (whole as soon as it is sent).
        let refusal = match (length, end_of_stream) {
            (Some(n), _) if n > gateway.max_request_bytes => Some(Refusal::TooLarge {
                limit: gateway.max_request_bytes,
            }),
            (Some(0), _) | (_, true) => self
                .request
                .as_mut()
                .and_then(|r| r.finish(&mut Vec::new()).err()),
            _ => None,
        };
        if let Some(refusal) = refusal {
            self.refuse(hook, &refusal);
            return Verdict::Stop;
        }
        if !gateway.deny_tools.is_empty() {
            // Taking an entry out changes the length: the body goes chunked.
            hook.set_header(Headers::Request, "content-length", None);
        }
        Verdict::Continue
    }

    /// A chunk of the request body: replaced by what goes upstream, or the
    /// request refused.
    pub(crate) fn on_request_body(&mut self, hook: &mut Hook<'_>, end_of_stream: bool) -> Verdict {
        let Some(request) = self.request.as_mut() else {
            return Verdict::Continue;
        };
        let verdict = with_scratch(|Scratch { out, slices }| {
            let mut size = 0usize;
            let mut verdict = match hook.body(Body::ReceivedRequest, slices) {
                Some(slices) => {
                    size = slices
                        .clone()
                        .map(<[u8]>::len)
                        .fold(0, usize::saturating_add);
                    out.reserve(size);
                    slices
                        .into_iter()
                        .try_for_each(|slice| request.push(slice, out))
                }
                // Envoy would not show the chunk: it cannot be checked.
                None => Err(Refusal::OutputFull),
            };
            if verdict.is_ok() && end_of_stream {
                verdict = request.finish(out).map(drop);
            }
            if size > 0 {
                hook.drain_body(Body::ReceivedRequest, size);
            }
            // Refused: nothing of this chunk goes on.
            if verdict.is_ok() && !out.is_empty() {
                hook.append_body(Body::ReceivedRequest, out);
            }
            verdict
        });
        match verdict {
            Ok(()) if end_of_stream => {
                self.passed(hook);
                Verdict::Continue
            }
            Ok(()) => Verdict::Continue,
            Err(refusal) => {
                self.refuse(hook, &refusal);
                Verdict::Stop
            }
        }
    }

    /// A request body that ends with trailers: its end is here, and the
    /// byte held back goes in before them.
    pub(crate) fn on_request_trailers(&mut self, hook: &mut Hook<'_>) -> Verdict {
        let Some(request) = self.request.as_mut() else {
            return Verdict::Continue;
        };
        let verdict = with_scratch(|Scratch { out, .. }| {
            let verdict = request.finish(out).map(drop);
            if verdict.is_ok() && !out.is_empty() {
                hook.append_body(Body::BufferedRequest, out);
            }
            verdict
        });
        match verdict {
            Ok(()) => {
                self.passed(hook);
                Verdict::Continue
            }
            Err(refusal) => {
                self.refuse(hook, &refusal);
                Verdict::Stop
            }
        }
    }

    /// Refuses the agent request: the local answer, the counts, the log
    /// line, the rewriter gone.
    fn refuse(&mut self, hook: &mut Hook<'_>, refusal: &Refusal) {
        let mut problem = Vec::new();
        if let Some(r) = &self.request {
            let _ = r.write_problem(refusal, &mut problem);
        }
        abi::log(
            Level::Warn,
            &format!(
                "agui-stream: {}: request refused ({}): {refusal}",
                self.path,
                refusal.status()
            ),
        );
        self.config.metrics.requests.count(hook, Err(refusal));
        hook.send_response(
            refusal.status(),
            &PROBLEM_HEADERS,
            &problem,
            "agui_stream_request_refused",
        );
        self.release_request();
    }

    /// The body passed: counted, the rewriter gone.
    fn passed(&mut self, hook: &Hook<'_>) {
        if let Some(r) = &self.request {
            self.config.metrics.requests.count(hook, Ok(r.stats()));
        }
        self.release_request();
    }

    /// Ends the request side: the buffers back to the pool, the rewriter
    /// freed (nothing of it stays for the response).
    pub(crate) fn release_request(&mut self) {
        if let Some(r) = self.request.take() {
            pool::give_back(r.into_buffers());
        }
    }
}
