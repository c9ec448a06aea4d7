//! `http_proxy`: a reverse proxy that rewrites AG-UI event streams as they
//! pass.
//!
//! ```text
//! http_proxy --listen 127.0.0.1:8080 --upstream http://127.0.0.1:8000
//!            [--dialect v1|v0] [--on-violation stop|drop|pass] [--no-repair]
//!            [--close-open] [--max-event-bytes N] [--canonical] [--drop-raw]
//!            [--deny-tool NAME]... [--check-tool-args]
//!            [--deterministic-ids] [--buffer N] [--buffer-budget N] [--hold-bytes N]
//!            [--keepalive-ms N]
//!            [--no-request-check] [--max-request-bytes N] [--request-path PREFIX]
//!            [--passthrough]
//! ```
//!
//! The rewriting options are `agui gateway`'s (and the proxy-wasm filter's
//! JSON keys), read by the shared `examples/shared/frontend.rs`; ids are
//! minted per run unless `--deterministic-ids` asks for the reference
//! oracle's sequence.
//!
//! Every request (method, path and query, headers but the hop-by-hop ones,
//! body) goes to the upstream over HTTP/1.1, one connection per request,
//! asking for `accept-encoding: identity`. A `text/event-stream` response
//! that is not compressed has its body streamed through a rewriter as it
//! arrives — one rewriter per response, and a pair of `--buffer`-byte
//! buffers from a pool (examples/shared/pool.rs, `--buffer-budget`) only
//! while a block is in flight; a block larger than the raw buffer is held
//! whole until its verdict, its raw buffer grown from the pool up to
//! `--hold-bytes` — and each push's output goes to the client at once. At the
//! upstream's end of body, or when its connection dies mid-body, the
//! rewriter's `finish` output follows (so a run cut short ends in its
//! `RUN_ERROR` with code `AGUI_STREAM_TRUNCATED`). Such a response loses its
//! `content-length`, gets `x-accel-buffering: no` and, if it has none,
//! `cache-control: no-cache` (the shared header policy); after
//! `--keepalive-ms` without output the proxy writes `: ping\n\n` (the
//! rewriter's output is whole blocks, so this always falls between
//! frames). Any other response passes through untouched.
//!
//! An agent request — a POST that accepts `text/event-stream`, as
//! `HttpAgent` sends it, or with `--request-path` a POST under that prefix —
//! has its `RunAgentInput` body checked as it streams upstream
//! (`agui_stream::rewrite::RequestRewriter`, a `--buffer`-byte checker
//! buffer and as much to hold a `tools` entry): every byte goes upstream as
//! it arrives but the last, which goes once the body passes, so the agent
//! cannot complete a request that fails. A body that fails gets `400` (over
//! `--max-request-bytes`, or a capacity: `413`) with a JSON problem
//! (`{"status":400,"code":"AGUI_INVALID_INPUT","message":…,"path":…,"offset":…}`),
//! and its upstream request is reset before the body ends: the agent never
//! receives a complete request. A `content-length` over the limit is `413`
//! before the upstream is contacted. With `--deny-tool`, the denied tools'
//! entries are taken out of the body's `tools` (so the request loses its
//! `content-length` and goes chunked). One JSON line on stderr per checked
//! request: its verdict and the running counts (`checked`, `refused_*` by
//! reason, `rewritten`).
//!
//! A client that goes away closes the upstream connection at once, whatever
//! the upstream is doing (a silent agent run is cancelled, not left to run
//! until its next write).
//!
//! When a rewritten response ends, one JSON line on stderr: the rewriter's
//! statistics (the fields of `agui gateway`'s line) and the response's
//! (`error`, `path`, `upstream_error`, `client_gone`, `pings`,
//! `first_byte_ms`, `total_ms`, `rewritten`); a client that left is that
//! line with `"client_gone":true`, nothing more. `listening on ADDR` on
//! stdout once the socket is bound. A failing upstream gives the client a
//! 502 whose body is `bad gateway` (the upstream's error goes to the log).
//!
//! `--passthrough` makes it the baseline a measurement compares with
//! (`scripts/envoy-memory.py --http-proxy`): the same proxy — the same
//! hyper client and server, buffers, response headers and event-stream
//! body (`EventStream`) — without agui-stream. An event stream's body goes
//! to the client frame by frame as it arrives, byte for byte: no rewriter,
//! no buffers, no keep-alives (they could fall inside an event), and an
//! upstream that dies mid-body cuts the client's response (no repair).
//! Requests are not checked. Its line at each event stream's end:
//! `{"passthrough":N,"path":…,"bytes":…,"upstream_error":…,"client_gone":…,"first_byte_ms":…,"total_ms":…}`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use agui_stream::rewrite;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

// The options and the response-header policy every front end shares.
#[path = "shared/frontend.rs"]
mod frontend;
#[path = "shared/pool.rs"]
mod pool;

const USAGE: &str = "http_proxy --listen ADDR --upstream http://HOST:PORT [OPTIONS]
  A reverse proxy: text/event-stream responses are rewritten as they stream
  (agui_stream::rewrite), everything else passes through untouched.
  --listen ADDR                 address to listen on (port 0: any free port)
  --upstream http://HOST:PORT   where requests go (HTTP/1.1, plain http)
  --passthrough                 no agui-stream: event streams forwarded as they
                                arrive (same headers, no rewriting, no
                                keep-alives), requests not checked; a baseline
  --config FILE                 the gateway's JSON configuration (docs/gateway.md;
                                the flags below override it)";

/// The usage, with the gateway's flags.
fn usage() -> String {
    let mut text = USAGE.to_owned();
    for f in &frontend::FLAGS {
        let name = match f.value {
            Some(value) => format!("--{} {value}", f.name),
            None => format!("--{}", f.name),
        };
        text.push_str(&format!("\n  {name:<29} {}", f.help));
    }
    text.push_str(&format!(
        "\n  (--buffer: default {}, per response)\n  Stats of each rewritten response: one JSON line on stderr.",
        frontend::DEFAULT_BUFFER
    ));
    text
}

/// What the command line says.
struct Args {
    listen: SocketAddr,
    /// `host:port` of the upstream.
    upstream: String,
    gateway: frontend::Gateway,
    /// `--passthrough`: no rewriter, no request check.
    passthrough: bool,
    /// The guard rules (`guard` in `--config`), compiled once.
    rules: Option<&'static agui_stream::guard::Rules<'static>>,
}

fn parse_args() -> Result<Option<Args>, lexopt::Error> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let (mut listen, mut upstream) = (None, None);
    let mut gateway = frontend::Gateway::default();
    let mut passthrough = false;
    let (mut config, mut flags) = (None, Vec::new());
    while let Some(arg) = parser.next()? {
        match arg {
            Long("help") | Short('h') => return Ok(None),
            Long("listen") => listen = Some(parser.value()?.parse::<SocketAddr>()?),
            Long("upstream") => upstream = Some(parser.value()?.string()?),
            Long("passthrough") => passthrough = true,
            Long("config") => config = Some(parser.value()?.string()?),
            Long(name) if frontend::Gateway::flag(name).is_some() => {
                let name = name.to_owned();
                let takes_value = frontend::Gateway::flag(&name).is_some_and(|f| f.value.is_some());
                let value = if takes_value {
                    Some(parser.value()?.string()?)
                } else {
                    None
                };
                flags.push((name, value));
            }
            arg => return Err(arg.unexpected()),
        }
    }
    // The configuration file first, then the flags over it.
    if let Some(path) = config {
        let json = std::fs::read(&path).map_err(|e| format!("--config {path}: {e}"))?;
        gateway =
            frontend::Gateway::from_json(&json).map_err(|e| format!("--config {path}: {e}"))?;
    }
    for (name, value) in flags {
        gateway
            .set(&name, value.as_deref())
            .map_err(|e| format!("--{name}: {e}"))?;
    }
    // Compiled once (`from_json` checked that they compile).
    let rules = pool::leak_rules(&gateway.guard, |g| g.rules().ok());
    let listen = listen.ok_or("missing --listen ADDR")?;
    let upstream = upstream.ok_or("missing --upstream http://HOST:PORT")?;
    let uri: Uri = upstream
        .parse()
        .map_err(|e| format!("--upstream {upstream:?}: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!("--upstream {upstream:?}: only http:// is supported").into());
    }
    if uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
        return Err(format!("--upstream {upstream:?}: a path is not supported").into());
    }
    let authority = uri
        .authority()
        .ok_or_else(|| format!("--upstream {upstream:?}: no host"))?;
    let upstream = match authority.port() {
        Some(_) => authority.to_string(),
        None => format!("{}:80", authority.host()),
    };
    Ok(Some(Args {
        listen,
        upstream,
        gateway,
        passthrough,
        rules,
    }))
}

/// The proxy's state shared by all connections.
struct Proxy {
    args: Args,
    /// Responses passed through untouched, and rewritten.
    passed_through: AtomicU64,
    rewritten: AtomicU64,
    /// Agent requests checked, refused and rewritten.
    requests: Mutex<frontend::RequestCounts>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ProxyBody = BoxBody<Bytes, BoxError>;

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{}", usage());
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("http_proxy: {e}\n{}", usage());
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("http_proxy: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("http_proxy: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

async fn serve(args: Args) -> std::io::Result<()> {
    let listener = listen(args.listen)?;
    println!("listening on {}", listener.local_addr()?);
    {
        use std::io::Write as _;
        std::io::stdout().flush()?;
    }
    let proxy = Arc::new(Proxy {
        args,
        passed_through: AtomicU64::new(0),
        rewritten: AtomicU64::new(0),
        requests: Mutex::new(frontend::RequestCounts::default()),
    });
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait, go on.
                eprintln!("http_proxy: accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let proxy = Arc::clone(&proxy);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let proxy = Arc::clone(&proxy);
                // Boxed: hyper keeps a connection's service future in a
                // box of its size for the connection's life; this one
                // (~4 KB: the upstream's connect and handshake) is freed
                // once the response's head is out.
                Box::pin(async move { Ok::<_, Infallible>(handle(proxy, req, peer).await) })
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .max_buf_size(HYPER_BUF)
                .serve_connection(TokioIo::new(stream), service)
                .await
                && !is_hang_up(&e)
            {
                eprintln!("http_proxy: connection from {peer}: {e}");
            }
        });
    }
}

/// The client went away (closed or reset its connection): the response's
/// own line says so (`"client_gone":true`), nothing more is logged.
fn is_hang_up(e: &hyper::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    if e.is_incomplete_message() || e.is_closed() || e.is_canceled() {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                BrokenPipe | ConnectionReset | ConnectionAborted | UnexpectedEof
            );
        }
        source = s.source();
    }
    false
}

/// hyper's read and write buffers per connection and direction; its default
/// (about 400 KiB) lets a fast stream grow each connection to ~800 KiB.
const HYPER_BUF: usize = 64 << 10;

/// A listening socket with room for thousands of connections arriving at
/// once (the kernel caps the backlog at `net.core.somaxconn`); tokio's
/// default of 1024 drops SYNs, and a dropped SYN costs the client a second.
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(8192)
}

/// Headers that belong to one connection, not to the message.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

/// Removes the hop-by-hop headers, and those `connection` names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    headers.remove(header::UPGRADE);
}

fn plain(status: StatusCode, text: &str) -> Response<ProxyBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(format!("{text}\n")))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

async fn handle(
    proxy: Arc<Proxy>,
    req: Request<Incoming>,
    peer: SocketAddr,
) -> Response<ProxyBody> {
    let started = Instant::now();
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let head_request = req.method() == hyper::Method::HEAD;
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .map_or(&b""[..], HeaderValue::as_bytes);
    let agent = !proxy.args.passthrough
        && proxy.args.gateway.is_agent_request(
            req.method().as_str().as_bytes(),
            path.as_bytes(),
            accept,
        );
    let forwarded = if agent {
        match checked(&proxy, req, &path) {
            Ok((req, verdict)) => forward_checked(&proxy, req, &path, peer, verdict).await,
            Err(refused) => return refused,
        }
    } else {
        forward(
            &proxy,
            req.map(|b| b.map_err(BoxError::from).boxed()),
            &path,
            peer,
        )
        .await
        .map_err(Refused::Upstream)
    };
    let (response, upstream) = match forwarded {
        Ok(forwarded) => forwarded,
        Err(Refused::Body(response)) => return response,
        Err(Refused::Upstream(e)) => {
            // The client learns no more than that: the upstream's address
            // and errors stay in the log.
            eprintln!("http_proxy: {path}: upstream: {e}");
            return plain(StatusCode::BAD_GATEWAY, "bad gateway");
        }
    };
    let status = response.status();
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let no_body = head_request
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    if no_body || !is_plain_event_stream(&parts.headers) {
        let n = proxy.passed_through.fetch_add(1, Ordering::Relaxed) + 1;
        eprintln!(
            "{{\"passed_through\":{n},\"path\":{},\"status\":{}}}",
            json_string(&path),
            status.as_u16()
        );
        // The upstream connection lives as long as the body (hyper drops
        // the body when the client goes).
        let body = Upstreamed {
            body,
            _connection: upstream,
        };
        return Response::from_parts(parts, body.boxed());
    }
    let n = proxy.rewritten.fetch_add(1, Ordering::Relaxed) + 1;
    for edit in frontend::RESPONSE_EDITS {
        match edit {
            frontend::HeaderEdit::Remove(name) => {
                parts.headers.remove(name);
            }
            frontend::HeaderEdit::Set(name, value) => {
                parts.headers.insert(name, HeaderValue::from_static(value));
            }
            frontend::HeaderEdit::SetIfAbsent(name, value) => {
                parts
                    .headers
                    .entry(name)
                    .or_insert(HeaderValue::from_static(value));
            }
        }
    }
    let rewriter = if proxy.args.passthrough {
        None
    } else {
        match new_rewriter(&proxy.args.gateway, proxy.args.rules) {
            Ok(rewriter) => Some(rewriter),
            Err(e) => {
                // (The names were checked when they were set.)
                eprintln!("http_proxy: {path}: {e}");
                let (tx, rx) = mpsc::channel(1);
                let _ = tx.try_send(Err(format!("rewriter: {e}")));
                return Response::from_parts(parts, ChannelBody(rx).boxed());
            }
        }
    };
    let body = EventStream::new(proxy, body, upstream, rewriter, path, n, started);
    Response::from_parts(parts, body.boxed())
}

/// The task driving one upstream connection, aborted (its socket closed)
/// when this is dropped.
struct Connection(tokio::task::JoinHandle<()>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Why an agent request got no upstream response.
enum Refused {
    /// Its body was refused: the answer.
    Body(Response<ProxyBody>),
    Upstream(BoxError),
}

/// A refused body's verdict, sent by its checking task.
type Verdict = oneshot::Receiver<Response<ProxyBody>>;

/// An agent request with its body checked on the way: the request to send
/// upstream (its body fed by a task that checks the client's) and where a
/// refusal's answer arrives. A `content-length` over the limit is refused
/// at once.
#[allow(clippy::result_large_err)]
fn checked(
    proxy: &Arc<Proxy>,
    req: Request<Incoming>,
    path: &str,
) -> Result<(Request<ProxyBody>, Verdict), Response<ProxyBody>> {
    let gateway = &proxy.args.gateway;
    let (mut parts, body) = req.into_parts();
    let length = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    // Refused before the upstream is asked: a length over the limit, and
    // an empty body (a request with `content-length: 0` is whole as soon
    // as it is sent).
    if let Some(n) = length.filter(|&n| n == 0 || n > gateway.max_request_bytes) {
        let (mut check, mut hold) = ([0u8; 64], [0u8; 0]);
        let mut r = rewrite::RequestRewriter::new(&mut check, &mut hold, gateway.dialect);
        let empty = (n == 0).then(|| r.finish(&mut Vec::new()).err()).flatten();
        let refusal = empty.unwrap_or(rewrite::Refusal::TooLarge {
            limit: gateway.max_request_bytes,
        });
        let response = problem(&r, &refusal);
        log_request(proxy, path, Err(&refusal), r.stats());
        return Err(response);
    }
    if !gateway.deny_tools.is_empty() {
        // Taking an entry out changes the length: the body goes chunked.
        parts.headers.remove(header::CONTENT_LENGTH);
    }
    let (tx, rx) = mpsc::channel(8);
    let (verdict_tx, verdict_rx) = oneshot::channel();
    tokio::spawn(check_body(
        Arc::clone(proxy),
        body,
        tx,
        verdict_tx,
        path.to_owned(),
    ));
    Ok((
        Request::from_parts(parts, ChannelBody(rx).boxed()),
        verdict_rx,
    ))
}

/// Checks the client's `body` on its way into `tx` (the upstream request's
/// body); a refusal ends `tx` with an error (the upstream request is
/// reset) and sends the answer on `verdict`.
async fn check_body(
    proxy: Arc<Proxy>,
    mut body: Incoming,
    tx: mpsc::Sender<Result<Bytes, String>>,
    verdict: oneshot::Sender<Response<ProxyBody>>,
    path: String,
) {
    let gateway = &proxy.args.gateway;
    let (mut check, mut hold) = (vec![0u8; gateway.buffer], vec![0u8; gateway.buffer]);
    // The denied names fit: `set` took them.
    let Ok(mut request) = gateway.request_rewriter(&mut check, &mut hold) else {
        let _ = tx.send(Err("denied tools".into())).await;
        return;
    };
    let mut out = Vec::new();
    let outcome = loop {
        out.clear();
        match body.frame().await {
            None => {
                let outcome = request.finish(&mut out).map(drop);
                if outcome.is_ok() && !out.is_empty() {
                    let _ = tx.send(Ok(Bytes::from(std::mem::take(&mut out)))).await;
                }
                break outcome;
            }
            Some(Err(e)) => {
                // The client went away mid-body: the upstream request too.
                let _ = tx.send(Err(format!("client: {e}"))).await;
                return;
            }
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                if let Err(refusal) = request.push(&data, &mut out) {
                    break Err(refusal);
                }
                if !out.is_empty()
                    && tx
                        .send(Ok(Bytes::from(std::mem::take(&mut out))))
                        .await
                        .is_err()
                {
                    return; // the upstream request is gone
                }
            }
        }
    };
    log_request(&proxy, &path, outcome.as_ref(), request.stats());
    if let Err(refusal) = outcome {
        // The answer first: the upstream request's reset must not be
        // taken for the upstream failing.
        let _ = verdict.send(problem(&request, &refusal));
        let _ = tx.send(Err(format!("refused: {refusal}"))).await;
    }
}

/// The answer to a refused body: its status and JSON problem.
fn problem(
    request: &rewrite::RequestRewriter<'_>,
    refusal: &rewrite::Refusal,
) -> Response<ProxyBody> {
    let mut body = Vec::new();
    let _ = request.write_problem(refusal, &mut body);
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() =
        StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::BAD_REQUEST);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// One JSON line on stderr for a checked request: its verdict, and the
/// running counts.
fn log_request(
    proxy: &Proxy,
    path: &str,
    outcome: Result<&(), &rewrite::Refusal>,
    stats: &rewrite::RequestStats,
) {
    let counts = {
        let Ok(mut counts) = proxy.requests.lock() else {
            return;
        };
        counts.count(outcome.map(|()| stats));
        *counts
    };
    let mut line = serde_json::json!({
        "request": path,
        "verdict": if outcome.is_ok() { "ok" } else { "refused" },
        "bytes_in": stats.bytes_in,
        "bytes_out": stats.bytes_out,
        "tools_removed": stats.tools_removed,
    });
    if let Err(refusal) = outcome {
        line["status"] = refusal.status().into();
        line["reason"] = refusal.reason().into();
        line["error"] = refusal.to_string().into();
    }
    if let (Some(line), Ok(serde_json::Value::Object(counts))) =
        (line.as_object_mut(), serde_json::to_value(counts))
    {
        line.extend(counts);
    }
    eprintln!("{line}");
}

/// Sends an agent request upstream while its body is checked: the
/// upstream's response, unless the body is refused first (then the
/// upstream request is dropped, and the client gets the refusal).
async fn forward_checked(
    proxy: &Proxy,
    req: Request<ProxyBody>,
    path: &str,
    peer: SocketAddr,
    mut verdict: Verdict,
) -> Result<(Response<Incoming>, Connection), Refused> {
    let forwarding = forward(proxy, req, path, peer);
    tokio::pin!(forwarding);
    let mut pending = true;
    loop {
        tokio::select! {
            biased;
            refused = &mut verdict, if pending => match refused {
                Ok(response) => return Err(Refused::Body(response)),
                // The body passed (its task ended without a refusal).
                Err(_) => pending = false,
            },
            forwarded = &mut forwarding => return forwarded.map_err(Refused::Upstream),
        }
    }
}

/// Sends `req` to the upstream over a new HTTP/1.1 connection; the response
/// and the connection, which closes when it is dropped.
async fn forward(
    proxy: &Proxy,
    req: Request<ProxyBody>,
    path: &str,
    peer: SocketAddr,
) -> Result<(Response<Incoming>, Connection), BoxError> {
    let upstream = proxy.args.upstream.as_str();
    let stream = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(upstream))
        .await
        .map_err(|_| "connect timed out")??;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(HYPER_BUF)
        .handshake::<_, ProxyBody>(TokioIo::new(stream))
        .await?;
    // Dropped with this future too (the client gone before the response).
    let connection = Connection(tokio::spawn(async move {
        // Its errors reach the response or its body.
        let _ = connection.await;
    }));
    let (mut parts, body) = req.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    parts.uri = Uri::try_from(path)?;
    parts.version = hyper::Version::HTTP_11;
    parts
        .headers
        .insert(header::HOST, HeaderValue::from_str(upstream)?);
    parts.headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    let forwarded_for = match parts.headers.get("x-forwarded-for").map(|v| v.to_str()) {
        Some(Ok(before)) => format!("{before}, {}", peer.ip()),
        _ => peer.ip().to_string(),
    };
    parts
        .headers
        .insert("x-forwarded-for", HeaderValue::from_str(&forwarded_for)?);
    let response = sender
        .send_request(Request::from_parts(parts, body))
        .await?;
    Ok((response, connection))
}

/// `text/event-stream`, and not compressed (the shared policy).
fn is_plain_event_stream(headers: &HeaderMap) -> bool {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map_or(&b""[..], HeaderValue::as_bytes);
    frontend::is_event_stream(content_type)
        && frontend::is_identity(
            headers
                .get_all(header::CONTENT_ENCODING)
                .iter()
                .map(HeaderValue::as_bytes),
        )
}

/// A body passed through untouched, with the connection it comes from.
struct Upstreamed {
    body: Incoming,
    _connection: Connection,
}

impl Body for Upstreamed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.body)
            .poll_frame(cx)
            .map(|next| next.map(|r| r.map_err(BoxError::from)))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A response body fed by a channel: each message one frame; an error
/// aborts the response (the client sees it cut, not ended).
struct ChannelBody(mpsc::Receiver<Result<Bytes, String>>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.0
            .poll_recv(cx)
            .map(|next| next.map(|r| r.map(Frame::data).map_err(BoxError::from)))
    }
}

/// What happened to one rewritten response, for its stats line.
#[derive(Default)]
struct Outcome {
    /// The rewriter's error, if it could not go on.
    error: Option<String>,
    /// The upstream's body failed (taken as its end).
    upstream_error: Option<String>,
    client_gone: bool,
    pings: u64,
    first_byte: Option<Duration>,
}

/// An event stream's body on its way to the client: the upstream's body,
/// each frame through the response's rewriter (`--passthrough`: as it
/// is), polled by hyper as the client's connection takes it — no task and
/// no channel of its own. The upstream's connection goes when its body
/// ends, when the rewriter ends the stream, or when this is dropped: hyper
/// drops a body whose client has gone, so a run whose client is gone stops
/// at once. One stats line at the end, or when dropped before it (the
/// client gone).
struct EventStream {
    proxy: Arc<Proxy>,
    /// The upstream's body and connection, until the input ends.
    upstream: Option<(Incoming, Connection)>,
    /// `None` with `--passthrough`. Its buffers are lent (`pool::lend`)
    /// only for a push, and kept between pushes only while a block is in
    /// flight.
    rewriter: Option<Box<rewrite::Rewriter<'static>>>,
    /// When a keep-alive is due, and how long after the last output.
    keepalive: Option<(Pin<Box<tokio::time::Sleep>>, Duration)>,
    outcome: Outcome,
    /// Body bytes sent (the `--passthrough` line's).
    bytes: u64,
    path: String,
    n: u64,
    started: Instant,
    /// The end was given to hyper and the stats line written.
    done: bool,
}

impl EventStream {
    fn new(
        proxy: Arc<Proxy>,
        body: Incoming,
        upstream: Connection,
        rewriter: Option<Box<rewrite::Rewriter<'static>>>,
        path: String,
        n: u64,
        started: Instant,
    ) -> Self {
        // A passed-through stream gets no keep-alives: they could fall
        // inside an event.
        let keepalive = rewriter
            .as_ref()
            .and(proxy.args.gateway.keepalive_ms())
            .map(Duration::from_millis)
            .map(|every| (Box::pin(tokio::time::sleep(every)), every));
        EventStream {
            proxy,
            upstream: Some((body, upstream)),
            rewriter,
            keepalive,
            outcome: Outcome::default(),
            bytes: 0,
            path,
            n,
            started,
            done: false,
        }
    }

    /// `out` as the next frame: the first byte's time, the keep-alive's
    /// next deadline.
    fn output(&mut self, out: Bytes) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.bytes += out.len() as u64;
        self.outcome
            .first_byte
            .get_or_insert_with(|| self.started.elapsed());
        if let Some((sleep, every)) = &mut self.keepalive {
            sleep.as_mut().reset(tokio::time::Instant::now() + *every);
        }
        Poll::Ready(Some(Ok(Frame::data(out))))
    }

    /// The input has ended (or the rewriter has): the upstream's
    /// connection closes, the rewriter's `finish` output is the last
    /// frame; a rewriter that could not go on, or with `--passthrough` an
    /// upstream that died mid-body, aborts the response instead (the
    /// client sees it cut, not ended). The stats line.
    fn end(&mut self) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.upstream = None;
        self.done = true;
        let mut last = None;
        if let Some(rewriter) = &mut self.rewriter
            && self.outcome.error.is_none()
        {
            let mut out = Vec::new();
            match rewriter.finish(&mut out) {
                Ok(_) if !out.is_empty() => last = Some(Bytes::from(out)),
                Ok(_) => {}
                Err(e) => self.outcome.error = Some(e.to_string()),
            }
        }
        let aborted = match &self.rewriter {
            Some(_) => self
                .outcome
                .error
                .as_ref()
                .map(|e| format!("rewriter: {e}")),
            None => (self.outcome.upstream_error.as_ref()).map(|e| format!("upstream: {e}")),
        };
        let next = match (aborted, last) {
            (Some(e), _) => Poll::Ready(Some(Err(e.into()))),
            (None, Some(out)) => self.output(out),
            (None, None) => Poll::Ready(None),
        };
        self.log();
        next
    }

    /// The response's stats line; the rewriter's buffers (if it holds a
    /// block) back to the pool, the rewriter gone.
    fn log(&mut self) {
        match self.rewriter.take() {
            Some(rewriter) => {
                log_stats(&self.path, self.n, &rewriter, &self.outcome, self.started);
                pool::give_back_parts(*rewriter);
            }
            None => {
                let ms = |d: Duration| d.as_micros() as f64 / 1e3;
                let o = &self.outcome;
                eprintln!(
                    "{{\"passthrough\":{},\"path\":{},\"bytes\":{},\"upstream_error\":{},\
                     \"client_gone\":{},\"first_byte_ms\":{},\"total_ms\":{}}}",
                    self.n,
                    json_string(&self.path),
                    self.bytes,
                    o.upstream_error
                        .as_deref()
                        .map_or("null".into(), json_string),
                    o.client_gone,
                    o.first_byte.map_or("null".into(), |d| ms(d).to_string()),
                    ms(self.started.elapsed()),
                );
            }
        }
    }
}

impl Body for EventStream {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            let Some((body, _)) = &mut this.upstream else {
                return this.end();
            };
            let data = match Pin::new(body).poll_frame(cx) {
                Poll::Ready(None) => return this.end(),
                Poll::Ready(Some(Err(e))) => {
                    // The upstream died mid-body: the end of the input.
                    this.outcome.upstream_error = Some(e.to_string());
                    return this.end();
                }
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) if !data.is_empty() => data,
                    _ => continue, // trailers
                },
                Poll::Pending => {
                    if let Some((sleep, _)) = &mut this.keepalive
                        && sleep.as_mut().poll(cx).is_ready()
                    {
                        // Between pushes, so between frames.
                        this.outcome.pings += 1;
                        return this.output(Bytes::from_static(b": ping\n\n"));
                    }
                    return Poll::Pending;
                }
            };
            let Some(rewriter) = &mut this.rewriter else {
                return this.output(data); // --passthrough
            };
            let gateway = &this.proxy.args.gateway;
            let mut out = Vec::new();
            pool::lend(rewriter, gateway.buffer, gateway.buffer_budget, |_| ());
            let pushed = pool::push_all(
                rewriter,
                &data,
                &mut out,
                gateway.hold_bytes,
                gateway.buffer_budget,
            );
            // Between blocks the pair goes back: a stream holds buffers
            // only while a block is in flight.
            pool::reclaim(rewriter);
            match pushed {
                // A Vec always has room: all of `data` was read.
                Ok(ended) => {
                    if ended {
                        // Closes the upstream request now; `finish` next.
                        this.upstream = None;
                    }
                    if !out.is_empty() {
                        return this.output(Bytes::from(out));
                    }
                }
                Err(e) => {
                    // A block the buffers cannot hold: the client must
                    // not take what it got for the whole stream.
                    this.outcome.error = Some(e.to_string());
                    return this.end();
                }
            }
        }
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        if !self.done {
            // hyper let go of the body before its end: the client went
            // away. The upstream's connection closes with this.
            self.outcome.client_gone = true;
            self.upstream = None;
            self.log();
        }
    }
}

/// A response's rewriter, with no buffers yet and tool tables only if
/// tools are denied (both from the pool), boxed: its state (5 KB) is
/// allocated once and never copied, and an `EventStream` without one
/// (`--passthrough`) is not the larger for it.
fn new_rewriter(
    gateway: &frontend::Gateway,
    rules: Option<&'static agui_stream::guard::Rules<'static>>,
) -> Result<Box<rewrite::Rewriter<'static>>, String> {
    let tables = gateway.denies_tools().then(pool::take_tables);
    let mut rewriter = gateway
        .rewriter(&mut [], &mut [], tables)
        .map(Box::new)
        .map_err(|e| e.to_string())?;
    if let Some(rules) = rules {
        rewriter.guard(pool::take_lanes(rules));
    }
    Ok(rewriter)
}

/// One JSON line on stderr: `agui gateway`'s fields, then the response's.
fn log_stats(path: &str, n: u64, r: &rewrite::Rewriter<'_>, o: &Outcome, started: Instant) {
    // Milliseconds, to the microsecond.
    let ms = |d: Duration| d.as_micros() as f64 / 1e3;
    let mut line = frontend::StatsLine::new(r.stats());
    if let Some(lanes) = r.guard_lanes() {
        line.field("guard", &frontend::GuardCounts(lanes));
    }
    line.field("error", &o.error)
        .field("path", path)
        .field("upstream_error", &o.upstream_error)
        .field("client_gone", &o.client_gone)
        .field("pings", &o.pings)
        .field("first_byte_ms", &o.first_byte.map(ms))
        .field("total_ms", &ms(started.elapsed()))
        .field("rewritten", &n);
    eprintln!("{}", line.as_str());
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
