//! `load`: drives `http_proxy` over loopback with many concurrent streams
//! and reports throughput, time to first event and the proxy's resident
//! memory per connection.
//!
//! ```text
//! cargo build --release --features std --example http_proxy --example load
//! target/release/examples/load [--streams N]... [--requests N] [--hold-ms N]
//!                              [--delay-ms N] [--max-write N] [--ramp-ms N]
//!                              [--captures DIR] [--proxy PATH]
//!                              [-- PROXY FLAGS...]
//! ```
//!
//! It starts an upstream in this process (127.0.0.1, any free port) that
//! answers every request with one of the real captures, in seeded random
//! writes of 1–`--max-write` bytes with up to `--delay-ms` between them,
//! holding `--hold-ms` after the write that completes the first event (an
//! agent that thinks before its next token). It starts the proxy as a child
//! process in front of it, then, for each `--streams N`, opens N client
//! connections at once (hyper), each making `--requests` requests one after
//! another, and checks every body byte for byte against the rewriter run
//! in this process on the same capture. While the streams run it samples
//! the proxy's `VmRSS`; memory per connection is the peak less the idle
//! figure, over N.
//!
//! One line per run: wall time, responses and bytes per second, time to
//! first event (p50/p99) as seen from the request and as added by the
//! proxy (from the upstream's write that completed the first event to its
//! arrival at the client), RSS idle and peak. Exit status 1 if a body
//! differed or a request failed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agui_stream::rewrite::{self, Rewriter};
use agui_stream::{Config, Minting};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const USAGE: &str = "load [OPTIONS]
  Drives http_proxy over loopback; prints throughput, time to first event
  and the proxy's RSS per connection.
  --streams N     concurrent client connections; repeat for several runs
                  (default: 100 and 1000)
  --requests N    requests each connection makes in turn (default 1)
  --hold-ms N     upstream pause after the first event (default 1000)
  --delay-ms N    at most this long between upstream writes (default 5)
  --max-write N   upstream writes of 1..=N bytes (default 1500)
  --ramp-ms N     connections start evenly over N ms (default 0: at once)
  --proxy PATH    the proxy binary (default: http_proxy beside this one)
  --captures DIR  streams to serve (default tests/corpus/real)
  -- FLAGS...     passed to the proxy (e.g. --buffer 8192); the bodies are
                  checked against the default flags' output";

struct Args {
    streams: Vec<usize>,
    requests: usize,
    hold: Duration,
    delay_ms: u64,
    max_write: usize,
    ramp: Duration,
    proxy: PathBuf,
    captures: PathBuf,
    proxy_flags: Vec<std::ffi::OsString>,
}

fn parse_args() -> Result<Option<Args>, lexopt::Error> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("http_proxy")))
        .unwrap_or_else(|| PathBuf::from("http_proxy"));
    let mut args = Args {
        streams: Vec::new(),
        requests: 1,
        hold: Duration::from_millis(1000),
        delay_ms: 5,
        max_write: 1500,
        ramp: Duration::ZERO,
        proxy: beside,
        captures: PathBuf::from("tests/corpus/real"),
        proxy_flags: Vec::new(),
    };
    while let Some(arg) = parser.next()? {
        match arg {
            Long("help") | Short('h') => return Ok(None),
            Long("streams") => args.streams.push(parser.value()?.parse()?),
            Long("requests") => args.requests = parser.value()?.parse()?,
            Long("hold-ms") => args.hold = Duration::from_millis(parser.value()?.parse()?),
            Long("delay-ms") => args.delay_ms = parser.value()?.parse()?,
            Long("max-write") => args.max_write = parser.value()?.parse::<usize>()?.max(1),
            Long("ramp-ms") => args.ramp = Duration::from_millis(parser.value()?.parse()?),
            Long("proxy") => args.proxy = parser.value()?.into(),
            Long("captures") => args.captures = parser.value()?.into(),
            Value(flag) => args.proxy_flags.push(flag),
            arg => return Err(arg.unexpected()),
        }
    }
    if args.streams.is_empty() {
        args.streams = vec![100, 1000];
    }
    Ok(Some(args))
}

/// A small seeded generator (splitmix64), so runs are repeatable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// A capture and what the proxy must make of it.
struct Stream {
    name: String,
    bytes: Vec<u8>,
    rewritten: Vec<u8>,
    /// Where its first block ends: the upstream notes when it wrote it.
    first_block_end: usize,
}

/// What the proxy writes for `bytes` with its default flags.
fn rewritten(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let (mut frames, mut raw) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    let config = Config::new().minting(Minting::Deterministic);
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, config, rewrite::Options::new());
    let mut out = Vec::new();
    let pushed = rewriter.push(bytes, &mut out).map_err(|e| e.to_string())?;
    if !pushed.ended {
        rewriter.finish(&mut out).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn load_streams(dir: &Path) -> Result<Vec<Stream>, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "sse"))
        .collect();
    paths.sort();
    let mut streams = Vec::new();
    for path in paths {
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let first_block_end = (1..=bytes.len())
            .find(|&i| bytes[..i].ends_with(b"\n\n") || bytes[..i].ends_with(b"\r\n\r\n"))
            .unwrap_or(bytes.len());
        streams.push(Stream {
            name: path.display().to_string(),
            rewritten: rewritten(&bytes)?,
            bytes,
            first_block_end,
        });
    }
    if streams.is_empty() {
        return Err(format!("{}: no .sse files", dir.display()));
    }
    Ok(streams)
}

/// The upstream's shared state: the streams, the pacing, and when each
/// request's first event left it (by request number).
struct Upstream {
    streams: Vec<Stream>,
    hold: Duration,
    delay_ms: u64,
    max_write: usize,
    first_event_sent: Mutex<Vec<Option<Instant>>>,
}

async fn serve_upstream(listener: TcpListener, upstream: Arc<Upstream>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            // Out of descriptors and the like: wait, go on.
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let upstream = Arc::clone(&upstream);
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(60), answer(socket, upstream)).await;
        });
    }
}

/// Answers `GET /s/N` with stream `N mod streams`, chunked and paced.
async fn answer(mut socket: TcpStream, upstream: Arc<Upstream>) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = socket.read(&mut buf).await?;
        if n == 0 || head.len() > 16384 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let request: usize = text
        .split(' ')
        .nth(1)
        .and_then(|target| target.strip_prefix("/s/"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let stream = &upstream.streams[request % upstream.streams.len()];
    socket
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
              transfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        )
        .await?;
    let mut rng = Rng(request as u64 ^ 0x5EED);
    let (bytes, mut at, mut held) = (&stream.bytes, 0, false);
    while at < bytes.len() {
        let len = (rng.range(1, upstream.max_write as u64) as usize).min(bytes.len() - at);
        let piece = &bytes[at..at + len];
        let mut chunk = format!("{len:x}\r\n").into_bytes();
        chunk.extend_from_slice(piece);
        chunk.extend_from_slice(b"\r\n");
        socket.write_all(&chunk).await?;
        at += len;
        if !held && at >= stream.first_block_end {
            held = true;
            if let Ok(mut sent) = upstream.first_event_sent.lock()
                && let Some(slot) = sent.get_mut(request)
            {
                *slot = Some(Instant::now());
            }
            tokio::time::sleep(upstream.hold).await;
        } else if upstream.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(rng.range(0, upstream.delay_ms))).await;
        }
    }
    socket.write_all(b"0\r\n\r\n").await?;
    socket.shutdown().await
}

/// What one request through the proxy gave.
struct Got {
    request: usize,
    /// From sending the request to the first body bytes (whole events).
    first_event: Option<(Instant, Duration)>,
    bytes: usize,
    equal: bool,
    error: Option<String>,
}

async fn request(proxy: SocketAddr, request: usize, want: &[u8]) -> Got {
    let mut got = Got {
        request,
        first_event: None,
        bytes: 0,
        equal: false,
        error: None,
    };
    let work = async {
        let stream = TcpStream::connect(proxy).await?;
        stream.set_nodelay(true)?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let req = hyper::Request::builder()
            .uri(format!("/s/{request}"))
            .header("host", proxy.to_string())
            .body(Empty::new())?;
        let sent_at = Instant::now();
        let mut body = sender.send_request(req).await?.into_body();
        let mut received = Vec::with_capacity(want.len());
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data()
                && !data.is_empty()
            {
                got.first_event
                    .get_or_insert_with(|| (Instant::now(), sent_at.elapsed()));
                received.extend_from_slice(&data);
            }
        }
        got.bytes = received.len();
        got.equal = received == want;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    };
    match tokio::time::timeout(Duration::from_secs(120), work).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => got.error = Some(e.to_string()),
        Err(_) => got.error = Some("no whole response within 120 s".into()),
    }
    got
}

/// The child process, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The proxy's resident set in KiB (`VmRSS` in `/proc/PID/status`).
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The `q` quantile (0..=1) of sorted `values`, in ms.
fn quantile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

/// One run: `streams` connections at once, `requests` each; false if any
/// body differed or failed.
async fn run(
    proxy: SocketAddr,
    pid: u32,
    upstream: &Arc<Upstream>,
    streams: usize,
    requests: usize,
    ramp: Duration,
    first_request: usize,
) -> bool {
    let idle = rss_kib(pid).unwrap_or(0);
    let peak = Arc::new(AtomicU64::new(idle));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (Arc::clone(&peak), Arc::clone(&sampling));
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                if let Some(kib) = rss_kib(pid) {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(streams);
    for s in 0..streams {
        let upstream = Arc::clone(upstream);
        let start = started + ramp.mul_f64(s as f64 / streams as f64);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start.into()).await;
            let mut gots = Vec::with_capacity(requests);
            for r in 0..requests {
                let n = first_request + s * requests + r;
                let want = &upstream.streams[n % upstream.streams.len()].rewritten;
                gots.push(request(proxy, n, want).await);
            }
            gots
        }));
    }
    let mut gots = Vec::with_capacity(streams * requests);
    for task in tasks {
        match task.await {
            Ok(more) => gots.extend(more),
            Err(e) => eprintln!("load: a client task failed: {e}"),
        }
    }
    let wall = started.elapsed();
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.join();
    let peak = peak.load(Ordering::Relaxed);

    let sent = upstream
        .first_event_sent
        .lock()
        .map(|s| s.clone())
        .unwrap_or_default();
    let (mut from_request, mut added) = (Vec::new(), Vec::new());
    let (mut bytes, mut equal, mut failed) = (0, 0, 0);
    for got in &gots {
        bytes += got.bytes;
        equal += usize::from(got.equal);
        if let Some(e) = &got.error {
            failed += 1;
            if failed <= 3 {
                eprintln!("load: request {}: {e}", got.request);
            }
        } else if !got.equal {
            let name = &upstream.streams[got.request % upstream.streams.len()].name;
            eprintln!("load: request {} ({name}): body differs", got.request);
        }
        if let Some((at, elapsed)) = got.first_event {
            from_request.push(elapsed);
            if let Some(Some(sent)) = sent.get(got.request) {
                added.push(at.saturating_duration_since(*sent));
            }
        }
    }
    from_request.sort();
    added.sort();
    let secs = wall.as_secs_f64();
    let per_connection = peak.saturating_sub(idle) as f64 / streams as f64;
    println!(
        "streams {streams:>5} x {requests} request(s), ramp {} ms: {:.2} s, {:.0} responses/s, {:.2} MB/s; \
         first event p50 {:.2} ms p99 {:.2} ms from the request, proxy adds p50 {:.2} ms \
         p99 {:.2} ms; proxy RSS {:.1} MiB idle, {:.1} MiB peak = {:.1} KiB per connection; \
         {equal}/{} bodies equal",
        ramp.as_millis(),
        secs,
        gots.len() as f64 / secs,
        bytes as f64 / 1e6 / secs,
        quantile(&from_request, 0.5),
        quantile(&from_request, 0.99),
        quantile(&added, 0.5),
        quantile(&added, 0.99),
        idle as f64 / 1024.0,
        peak as f64 / 1024.0,
        per_connection,
        streams * requests,
    );
    failed == 0 && equal == streams * requests
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("load: {e}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    match main_with(args) {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!("load: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

fn main_with(args: Args) -> Result<bool, Box<dyn std::error::Error>> {
    let streams = load_streams(&args.captures)?;
    let total: usize = args
        .streams
        .iter()
        .map(|n| n * args.requests)
        .sum::<usize>()
        + 1;
    let upstream = Arc::new(Upstream {
        streams,
        hold: args.hold,
        delay_ms: args.delay_ms,
        max_write: args.max_write,
        first_event_sent: Mutex::new(vec![None; total]),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // As the proxy does: a backlog for every stream arriving at once.
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let listener = socket.listen(8192)?;
        let upstream_addr = listener.local_addr()?;
        tokio::spawn(serve_upstream(listener, Arc::clone(&upstream)));

        let mut child = Command::new(&args.proxy)
            .args(["--listen", "127.0.0.1:0", "--upstream"])
            .arg(format!("http://{upstream_addr}"))
            .args(&args.proxy_flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", args.proxy.display()))?;
        let pid = child.id();
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let proxy = Killed(child);
        // Its stats lines: drained, so the proxy never blocks on them.
        let stats_lines = std::thread::spawn(move || {
            use std::io::BufRead;
            stderr.map_or(0, |e| std::io::BufReader::new(e).lines().count())
        });
        let addr = {
            use std::io::BufRead;
            let mut line = String::new();
            let mut stdout = std::io::BufReader::new(stdout.ok_or("no proxy stdout")?);
            stdout.read_line(&mut line)?;
            line.trim()
                .strip_prefix("listening on ")
                .ok_or_else(|| format!("proxy said {line:?}"))?
                .parse::<SocketAddr>()?
        };
        // One request first, so "idle" is a proxy that has served one.
        let warm = request(addr, 0, &upstream.streams[0].rewritten).await;
        if !warm.equal {
            return Err(format!("the first request failed: {:?}", warm.error).into());
        }
        println!(
            "proxy {} {:?} (pid {pid}) at {addr}, upstream {upstream_addr}; {} captures, \
             writes of 1..={} bytes, up to {} ms apart, {} ms hold after the first event",
            args.proxy.display(),
            args.proxy_flags,
            upstream.streams.len(),
            args.max_write,
            args.delay_ms,
            args.hold.as_millis(),
        );
        let mut all_ok = true;
        let mut next = 1;
        for &n in &args.streams {
            all_ok &= run(addr, pid, &upstream, n, args.requests, args.ramp, next).await;
            next += n * args.requests;
        }
        drop(proxy);
        let lines = stats_lines.join().unwrap_or(0);
        if lines != next {
            println!("proxy stats lines: {lines}, responses: {next}");
            all_ok = false;
        }
        Ok(all_ok)
    })
}
