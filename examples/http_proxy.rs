//! `http_proxy`: a reverse proxy that rewrites AG-UI event streams as they
//! pass.
//!
//! ```text
//! http_proxy --listen 127.0.0.1:8080 --upstream http://127.0.0.1:8000
//!            [--dialect v1|v0] [--on-violation stop|drop|pass] [--no-repair]
//!            [--close-open] [--buffer N] [--keepalive-ms N]
//! ```
//!
//! Every request (method, path and query, headers but the hop-by-hop ones,
//! body) goes to the upstream over HTTP/1.1, one connection per request,
//! asking for `accept-encoding: identity`. A `text/event-stream` response
//! that is not compressed has its body streamed through a [`Rewriter`] as it
//! arrives — one rewriter and one pair of `--buffer`-byte buffers per
//! response — and each push's output goes to the client at once. At the
//! upstream's end of body, or when its connection dies mid-body, the
//! rewriter's `finish` output follows (so a run cut short ends in its
//! `RUN_ERROR` with code `AGUI_STREAM_TRUNCATED`). Such a response loses its
//! `content-length` and gets `cache-control: no-cache` and
//! `x-accel-buffering: no`; after `--keepalive-ms` without output the proxy
//! writes `: ping\n\n` (the rewriter's output is whole blocks, so this always
//! falls between frames). Any other response passes through untouched.
//!
//! When a rewritten response ends, one JSON line on stderr: the rewriter's
//! statistics (the fields of `agui gateway`'s line) and the response's
//! timings. `listening on ADDR` on stdout once the socket is bound. A
//! failing upstream gives the client a 502.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use agui_stream::rewrite::{self, OnViolation, Rewriter};
use agui_stream::{Config, Dialect, legacy::Minting};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const USAGE: &str = "http_proxy --listen ADDR --upstream http://HOST:PORT [OPTIONS]
  A reverse proxy: text/event-stream responses are rewritten as they stream
  (agui_stream::rewrite), everything else passes through untouched.
  --listen ADDR                   address to listen on (port 0: any free port)
  --upstream http://HOST:PORT     where requests go (HTTP/1.1, plain http)
  --dialect v1|v0                 protocol version (default v1)
  --on-violation stop|drop|pass   (default stop: a final RUN_ERROR)
  --no-repair                     leave a stream cut mid-run as it is
  --close-open                    close what is open before a final RUN_ERROR
  --buffer N                      frame and raw buffer bytes each, per response,
                                  at least 64 (default 65536)
  --keepalive-ms N                `: ping` after N ms without output (default
                                  15000; 0: never)
  Stats of each rewritten response: one JSON line on stderr.";

/// What the command line says.
struct Args {
    listen: SocketAddr,
    /// `host:port` of the upstream.
    upstream: String,
    dialect: Dialect,
    rewrite: rewrite::Options,
    buffer: usize,
    keepalive: Option<Duration>,
}

fn parse_args() -> Result<Option<Args>, lexopt::Error> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let (mut listen, mut upstream) = (None, None);
    let mut args = Args {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        upstream: String::new(),
        dialect: Dialect::V1,
        rewrite: rewrite::Options::new(),
        buffer: 64 << 10,
        keepalive: Some(Duration::from_millis(15_000)),
    };
    while let Some(arg) = parser.next()? {
        match arg {
            Long("help") | Short('h') => return Ok(None),
            Long("listen") => listen = Some(parser.value()?.parse::<SocketAddr>()?),
            Long("upstream") => upstream = Some(parser.value()?.string()?),
            Long("dialect") => {
                args.dialect = match parser.value()?.string()?.as_str() {
                    "v1" | "V1" | "1.0.0" => Dialect::V1,
                    "v0" | "V0" | "0.0.59" => Dialect::V0,
                    d => return Err(format!("unknown dialect {d:?}").into()),
                }
            }
            Long("on-violation") => {
                let policy = match parser.value()?.string()?.as_str() {
                    "stop" => OnViolation::Stop,
                    "drop" => OnViolation::Drop,
                    "pass" => OnViolation::Pass,
                    p => return Err(format!("unknown --on-violation {p:?}").into()),
                };
                args.rewrite = args.rewrite.on_violation(policy);
            }
            Long("no-repair") => args.rewrite = args.rewrite.repair(false),
            Long("close-open") => args.rewrite = args.rewrite.close_open(true),
            Long("buffer") => {
                args.buffer = parser.value()?.parse()?;
                if args.buffer < 64 {
                    return Err("--buffer must be at least 64".into());
                }
            }
            Long("keepalive-ms") => {
                let ms: u64 = parser.value()?.parse()?;
                args.keepalive = (ms > 0).then(|| Duration::from_millis(ms));
            }
            arg => return Err(arg.unexpected()),
        }
    }
    args.listen = listen.ok_or("missing --listen ADDR")?;
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
    args.upstream = match authority.port() {
        Some(_) => authority.to_string(),
        None => format!("{}:80", authority.host()),
    };
    Ok(Some(args))
}

/// The proxy's state shared by all connections.
struct Proxy {
    args: Args,
    /// Responses passed through untouched, and rewritten.
    passed_through: AtomicU64,
    rewritten: AtomicU64,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ProxyBody = BoxBody<Bytes, BoxError>;

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("http_proxy: {e}\n{USAGE}");
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
                async move { Ok::<_, Infallible>(handle(proxy, req, peer).await) }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .max_buf_size(HYPER_BUF)
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                eprintln!("http_proxy: connection from {peer}: {e}");
            }
        });
    }
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
    let response = match forward(&proxy, req, &path, peer).await {
        Ok(response) => response,
        Err(e) => {
            eprintln!("http_proxy: {path}: upstream: {e}");
            return plain(StatusCode::BAD_GATEWAY, &format!("bad gateway: {e}"));
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
        return Response::from_parts(parts, body.map_err(BoxError::from).boxed());
    }
    let n = proxy.rewritten.fetch_add(1, Ordering::Relaxed) + 1;
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    parts.headers.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    // A few pushes' output may wait for the client; then the rewriter waits.
    let (tx, rx) = mpsc::channel(8);
    tokio::spawn(rewrite_body(proxy, body, tx, path, n, started));
    Response::from_parts(parts, ChannelBody(rx).boxed())
}

/// Sends `req` to the upstream over a new HTTP/1.1 connection.
async fn forward(
    proxy: &Proxy,
    req: Request<Incoming>,
    path: &str,
    peer: SocketAddr,
) -> Result<Response<Incoming>, Box<dyn std::error::Error + Send + Sync>> {
    let upstream = proxy.args.upstream.as_str();
    let stream = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(upstream))
        .await
        .map_err(|_| "connect timed out")??;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(HYPER_BUF)
        .handshake(TokioIo::new(stream))
        .await?;
    tokio::spawn(async move {
        // Its errors reach the response or its body.
        let _ = connection.await;
    });
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
    Ok(sender
        .send_request(Request::from_parts(parts, body))
        .await?)
}

/// `text/event-stream`, and not compressed.
fn is_plain_event_stream(headers: &HeaderMap) -> bool {
    let event_stream = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"));
    let identity = headers.get_all(header::CONTENT_ENCODING).iter().all(|v| {
        v.to_str()
            .is_ok_and(|v| v.trim().eq_ignore_ascii_case("identity"))
    });
    event_stream && identity
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

/// Streams the upstream's `body` through a rewriter into `tx`.
async fn rewrite_body(
    proxy: Arc<Proxy>,
    mut body: Incoming,
    tx: mpsc::Sender<Result<Bytes, String>>,
    path: String,
    n: u64,
    started: Instant,
) {
    let args = &proxy.args;
    let (mut frames, mut raw) = (vec![0u8; args.buffer], vec![0u8; args.buffer]);
    let config = Config::new()
        .dialect(args.dialect)
        .minting(Minting::Deterministic);
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, config, args.rewrite);
    let mut outcome = Outcome::default();
    let mut out = Vec::new();
    let mut last_output = Instant::now();
    // Sends `out` to the client; false if the client has gone.
    async fn send(
        tx: &mpsc::Sender<Result<Bytes, String>>,
        out: &mut Vec<u8>,
        outcome: &mut Outcome,
        started: Instant,
        last_output: &mut Instant,
    ) -> bool {
        if out.is_empty() {
            return true;
        }
        let bytes = Bytes::from(std::mem::take(out));
        if tx.send(Ok(bytes)).await.is_err() {
            outcome.client_gone = true;
            return false;
        }
        outcome.first_byte.get_or_insert_with(|| started.elapsed());
        *last_output = Instant::now();
        true
    }
    let mut open = true;
    while open {
        let next = match args.keepalive {
            Some(every) => {
                match tokio::time::timeout_at((last_output + every).into(), body.frame()).await {
                    Ok(next) => next,
                    Err(_) => {
                        // Between pushes, so between frames.
                        out.extend_from_slice(b": ping\n\n");
                        outcome.pings += 1;
                        open = send(&tx, &mut out, &mut outcome, started, &mut last_output).await;
                        continue;
                    }
                }
            }
            None => body.frame().await,
        };
        let data = match next {
            None => break,
            Some(Err(e)) => {
                // The upstream died mid-body: the end of the input.
                outcome.upstream_error = Some(e.to_string());
                break;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue, // trailers
            },
        };
        match rewriter.push(&data, &mut out) {
            Ok(pushed) => {
                // A Vec always has room: `pushed.read == data.len()`.
                open = send(&tx, &mut out, &mut outcome, started, &mut last_output).await
                    && !pushed.ended;
            }
            Err(e) => {
                outcome.error = Some(e.to_string());
                open = false;
            }
        }
    }
    drop(body);
    if outcome.error.is_none() && !outcome.client_gone {
        match rewriter.finish(&mut out) {
            Ok(_) => {
                send(&tx, &mut out, &mut outcome, started, &mut last_output).await;
            }
            Err(e) => outcome.error = Some(e.to_string()),
        }
    }
    if let Some(e) = &outcome.error {
        // A block the buffers cannot hold: the client must not take what it
        // got for the whole stream.
        let _ = tx.send(Err(format!("rewriter: {e}"))).await;
    }
    drop(tx);
    log_stats(&path, n, rewriter.stats(), &outcome, started);
}

/// One JSON line on stderr: `agui gateway`'s fields, then the response's.
fn log_stats(path: &str, n: u64, s: &rewrite::Stats, o: &Outcome, started: Instant) {
    let fields = [
        ("bytes_in", s.bytes_in),
        ("bytes_out", s.bytes_out),
        ("events", s.events),
        ("forwarded", s.forwarded),
        ("relined", s.relined),
        ("encoded", s.encoded),
        ("violations", s.violations),
        ("dropped", s.dropped),
        ("passed", s.passed),
        ("repairs", s.repairs),
        ("duplicate_terminals", s.duplicate_terminals),
        ("raw_dropped", s.raw_dropped),
        ("too_large", s.too_large),
        ("keep_alives", s.keep_alives),
        ("tool_events_dropped", s.tool_events_dropped),
        ("streamed", s.streamed),
        ("cut", s.cut),
    ];
    let mut line = String::from("{");
    for (k, v) in fields {
        line.push_str(&format!("\"{k}\":{v},"));
    }
    let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1e3);
    let opt = |s: &Option<String>| s.as_deref().map_or("null".to_owned(), json_string);
    line.push_str(&format!(
        "\"error\":{},\"path\":{},\"upstream_error\":{},\"client_gone\":{},\"pings\":{},\
          \"first_byte_ms\":{},\"total_ms\":{},\"rewritten\":{n}}}",
        opt(&o.error),
        json_string(path),
        opt(&o.upstream_error),
        o.client_gone,
        o.pings,
        o.first_byte.map_or("null".to_owned(), ms),
        ms(started.elapsed()),
    ));
    eprintln!("{line}");
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
