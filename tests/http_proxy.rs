//! End to end: `examples/http_proxy.rs` between a real upstream and a real
//! client, on loopback; one test per behaviour, over one shared fixture.
//!
//! The fixture ([`fixture`], made once per test process): the two
//! binaries, and an upstream. How the binaries are had: an integration
//! test cannot depend on examples (or another package) being built, so the
//! fixture first runs
//! `$CARGO build --release --features std,serde --example http_proxy` and
//! `$CARGO build --release -p agui-cli --message-format json` (`CARGO` is set
//! by cargo for tests; no-ops when they are fresh) and takes the
//! executables' paths from cargo's `compiler-artifact` messages, wherever
//! the target directory is. The release builds are the ones `.ci/run` makes
//! later anyway.
//!
//! The upstream is a small HTTP/1.1 server on raw tokio sockets (so that
//! each write is one the test chose), on a runtime of its own: it serves
//! the real captures and a few conformance cases as `text/event-stream`,
//! chunked or with a `content-length`, in seeded random writes of 1–1500
//! bytes with small random delays (and 100 ms before the last one), and
//! records when it wrote its last byte; `/silent/` answers with one block
//! and then nothing, and records when the proxy closes the connection. The
//! client is hyper's (or a raw socket, to leave mid-response). The expected
//! bodies are what `agui gateway --chunk 1460 --buffer 65536` prints for the
//! same file and flags.
//!
//! Each test starts its own proxies (their logs are its own) and makes
//! requests whose targets no other test makes. Everything after the build
//! is bounded in time; every process started is killed by pid when its
//! guard drops, also when the test fails.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::HeaderMap;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod support;

/// A started process, killed (by its pid) and reaped when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for `child` at most `limit`; kills it past that.
fn wait_bounded(child: Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let mut child = Killed(child);
    let deadline = Instant::now() + limit;
    loop {
        match child.0.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => panic!("{what}: still running after {limit:?}"),
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

/// Reads `from` to its end on a thread.
fn drain(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = from.read_to_end(&mut all);
        all
    })
}

/// Runs `cargo ARGS --message-format json`; the executables it built, by
/// target name.
fn cargo_build(args: &[&str]) -> HashMap<String, PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let started = Instant::now();
    let mut child = Command::new(cargo)
        .args(args)
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run cargo build");
    let stdout = drain(child.stdout.take().expect("cargo's stdout"));
    // A cold build of the examples' dependencies on 2 cores takes minutes.
    let status = wait_bounded(child, Duration::from_secs(1800), "cargo build");
    assert!(status.success(), "cargo {args:?} failed: {status}");
    let messages = stdout.join().expect("cargo's stdout");
    let mut found = HashMap::new();
    for line in messages.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(m) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        if m["reason"] != "compiler-artifact" {
            continue;
        }
        if let (Some(name), Some(exe)) = (m["target"]["name"].as_str(), m["executable"].as_str()) {
            found.insert(name.to_owned(), PathBuf::from(exe));
        }
    }
    eprintln!("cargo {args:?}: {:.1} s", started.elapsed().as_secs_f64());
    found
}

/// What every test shares: the binaries and the upstream.
struct Fixture {
    proxy: PathBuf,
    agui: PathBuf,
    corpus: PathBuf,
    upstream: Arc<Upstream>,
    upstream_addr: SocketAddr,
    /// The upstream's runtime (it lives as long as the process).
    _runtime: tokio::runtime::Runtime,
}

/// The real captures and the conformance cases every stream test serves.
const CONFORMANCE: [&str; 5] = [
    "sse-crlf-multi.sse",      // CRLF line ends: relined
    "chunk-mixed-kinds.sse",   // chunks: expanded
    "mix-small-25.sse",        // 24 KB, 253 events
    "real-tool-roundtrip.sse", // a valid run
    VIOLATING,
];
/// A lifecycle violation.
const VIOLATING: &str = "life-finish-open-tool.sse";
/// One 72 KB block: more than the proxy's 64 KiB buffers (streamed).
const LARGE: &str = "esc-long-delta.sse";
/// Served slowly, for the keep-alives.
const SLOW: &str = "real-chat-simple.sse";
/// Legacy THINKING events, which V1 gives minted ids.
const THINKING: &str = "ev-thinking-full.sse";

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let mut proxy = cargo_build(&[
            "build",
            "--release",
            "--features",
            "std,serde",
            "--example",
            "http_proxy",
        ]);
        let mut agui = cargo_build(&["build", "--release", "-p", "agui-cli", "--bin", "agui"]);
        let proxy = proxy
            .remove("http_proxy")
            .expect("cargo built no http_proxy");
        let agui = agui.remove("agui").expect("cargo built no agui");
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        let mut streams = HashMap::new();
        for f in real_captures(&corpus).into_iter().chain(
            [CONFORMANCE.as_slice(), &[LARGE, SLOW, THINKING]]
                .concat()
                .iter()
                .map(|name| corpus.join("conformance").join(name)),
        ) {
            let name = f.file_name().expect("name").to_string_lossy().into_owned();
            streams.insert(name, std::fs::read(&f).expect("read a stream"));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let upstream = Arc::new(Upstream {
            streams,
            sent: Mutex::new(HashMap::new()),
            closed: Mutex::new(HashMap::new()),
            received: Mutex::new(HashMap::new()),
        });
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind the upstream");
        let upstream_addr = listener.local_addr().expect("upstream address");
        runtime.spawn(serve_upstream(listener, Arc::clone(&upstream)));
        Fixture {
            proxy,
            agui,
            corpus,
            upstream,
            upstream_addr,
            _runtime: runtime,
        }
    })
}

/// The real captures, by path.
fn real_captures(corpus: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join("real"))
        .expect("tests/corpus/real")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sse"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no real captures");
    files
}

impl Fixture {
    /// The path of the stream `name`.
    fn file(&self, name: &str) -> PathBuf {
        let real = self.corpus.join("real").join(name);
        if real.exists() {
            real
        } else {
            self.corpus.join("conformance").join(name)
        }
    }

    /// The streams served whole: the real captures, then [`CONFORMANCE`].
    fn names(&self) -> Vec<String> {
        real_captures(&self.corpus)
            .iter()
            .map(|f| f.file_name().expect("name").to_string_lossy().into_owned())
            .chain(CONFORMANCE.iter().map(|n| (*n).to_owned()))
            .collect()
    }

    fn stream(&self, name: &str) -> &[u8] {
        &self.upstream.streams[name]
    }

    /// `agui gateway --chunk 1460 --buffer 65536 FLAGS FILE`'s stdout.
    fn gateway(&self, flags: &[&str], file: &Path) -> Vec<u8> {
        let mut child = Command::new(&self.agui)
            .args(["gateway", "--chunk", "1460", "--buffer", "65536"])
            .args(flags)
            .arg(file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run agui");
        let stdout = drain(child.stdout.take().expect("agui's stdout"));
        let status = wait_bounded(child, Duration::from_secs(20), "agui gateway");
        // 1: the input had a violation (the output is still the gateway's).
        assert!(
            matches!(status.code(), Some(0 | 1)),
            "agui gateway {file:?}: {status}"
        );
        stdout.join().expect("agui's stdout")
    }

    /// The gateway's output for `name` cut as the upstream's `/cut/`
    /// (`mid_frame`: `/cutmid/`) cuts it.
    fn gateway_cut(&self, flags: &[&str], name: &str, mid_frame: bool, tmp: &TempDir) -> Vec<u8> {
        let stream = self.stream(name);
        let cut = tmp.0.join(format!("cut-{mid_frame}-{name}"));
        std::fs::write(&cut, &stream[..cut_len(stream, mid_frame)]).expect("write a cut stream");
        self.gateway(flags, &cut)
    }

    /// A proxy in front of the upstream, its stderr in `tmp`.
    fn proxy(&self, flags: &[&str], tmp: &TempDir) -> Proxy {
        start_proxy(
            &self.proxy,
            self.upstream_addr,
            flags,
            tmp.0.join("proxy.log"),
        )
    }
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    /// A new directory for the test `name`.
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("agui-http-proxy-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A test's client side: a runtime of its own.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// A started proxy and where it listens.
struct Proxy {
    _child: Killed,
    addr: SocketAddr,
    log: PathBuf,
}

impl Proxy {
    /// Its stderr lines so far.
    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .expect("proxy log")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Its stderr lines once `done` holds of them (at most 5 s).
    fn log_when(&self, done: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let log = self.log();
            if done(&log) || Instant::now() > deadline {
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn start_proxy(exe: &Path, upstream: SocketAddr, flags: &[&str], log: PathBuf) -> Proxy {
    let stderr = std::fs::File::create(&log).expect("proxy log");
    let mut child = Command::new(exe)
        .args(["--listen", "127.0.0.1:0", "--upstream"])
        .arg(format!("http://{upstream}"))
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start the proxy");
    let stdout = child.stdout.take().expect("proxy's stdout");
    let child = Killed(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the proxy says where it listens within 10 s");
    let addr = line
        .strip_prefix("listening on ")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    Proxy {
        _child: child,
        addr,
        log,
    }
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn seeded(key: &str) -> Self {
        // FNV-1a of the key, never 0.
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in key.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng(h | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// In `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// What the upstream did for one request (by its path and query).
#[derive(Clone, Copy, Debug)]
struct Sent {
    /// When its last body byte was written.
    last_byte: Instant,
    /// Where its last write started in the body.
    last_write_at: usize,
    /// When it started the write that completed the first block.
    first_block_sent: Option<Instant>,
}

/// Where the first block of `stream` ends (its blank line's end).
fn first_block_end(stream: &[u8]) -> usize {
    (1..=stream.len())
        .find(|&i| stream[..i].ends_with(b"\n\n") || stream[..i].ends_with(b"\r\n\r\n"))
        .unwrap_or(stream.len())
}

/// The upstream's streams (by name) and what it did.
struct Upstream {
    streams: HashMap<String, Vec<u8>>,
    sent: Mutex<HashMap<String, Sent>>,
    /// `/silent/` requests (by target): when the proxy closed the
    /// connection.
    closed: Mutex<HashMap<String, Instant>>,
    /// `/record/` requests (by target): the body received, and whether it
    /// was whole (its length, or its last chunk, arrived).
    received: Mutex<HashMap<String, (Vec<u8>, bool)>>,
}

impl Upstream {
    /// What it did for `target` (it records that just after its last
    /// write, which a client may see first: waits 5 s at most).
    fn sent(&self, target: &str) -> Sent {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(sent) = self.sent.lock().expect("sent").get(target) {
                return *sent;
            }
            assert!(
                Instant::now() < deadline,
                "{target}: the upstream recorded nothing"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// When the proxy closed `/silent/` `target`'s connection, waiting at
    /// most `limit` for it.
    fn closed(&self, target: &str, limit: Duration) -> Option<Instant> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(at) = self.closed.lock().expect("closed").get(target) {
                return Some(*at);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The JSON the upstream answers `/json` with.
fn echo_json(method: &str, target: &str, accept_encoding: &str, body_len: usize) -> String {
    format!(
        r#"{{"method":"{method}","target":"{target}","accept_encoding":"{accept_encoding}","body_len":{body_len}}}"#
    )
}

/// Where the upstream cuts `stream` short: after the first block that ends
/// past its middle (`/cut/`), or in the middle (`/cutmid/`, most often
/// inside a frame, which the pipeline then reads as cut JSON).
fn cut_len(stream: &[u8], mid_frame: bool) -> usize {
    let half = stream.len() / 2;
    if mid_frame {
        return half;
    }
    (half..stream.len())
        .find(|&i| stream[..i].ends_with(b"\n\n") || stream[..i].ends_with(b"\r\n\r\n"))
        .unwrap_or(half)
}

/// Bytes that stand for a gzip body (never decoded).
const FAKE_GZIP: &[u8] = b"\x1f\x8b\x08\x00data: not really gzip\n\n";

async fn serve_upstream(listener: TcpListener, upstream: Arc<Upstream>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let upstream = Arc::clone(&upstream);
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(30), answer(socket, upstream)).await;
        });
    }
}

/// One request, one response, then the connection closes.
async fn answer(mut socket: TcpStream, upstream: Arc<Upstream>) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut buf).await?;
        if n == 0 || head.len() > 65536 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    };
    let text = String::from_utf8_lossy(&head[..head_end]).into_owned();
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let target = request_line.next().unwrap_or_default().to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    if target.starts_with("/record/") {
        return record(
            socket,
            head[head_end..].to_vec(),
            &headers,
            target,
            &upstream,
        )
        .await;
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = head[head_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        body.extend_from_slice(&buf[..n]);
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let chunked = !query.split('&').any(|p| p == "mode=length");
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    let (route, name) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    match route {
        "json" => {
            let accept = headers.get("accept-encoding").map_or("", String::as_str);
            let json = echo_json(&method, &target, accept, body.len());
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 x-upstream: yes\r\nconnection: close\r\n\r\n{json}",
                json.len()
            );
            socket.write_all(response.as_bytes()).await?;
        }
        "gzip" => {
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                FAKE_GZIP.len()
            );
            socket.write_all(response.as_bytes()).await?;
            socket.write_all(FAKE_GZIP).await?;
        }
        "reset" => return Ok(()), // closed before any response
        "silent" | "silenthead" => {
            // The head and the stream's first block (`/silent/`), or
            // nothing (`/silenthead/`); then nothing more, for 30 s at
            // most, while watching for the proxy to close the connection.
            if route == "silent" {
                let stream = upstream.streams.get(name).map_or(&b""[..], Vec::as_slice);
                let first = &stream[..first_block_end(stream)];
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                     transfer-encoding: chunked\r\n\r\n{:x}\r\n",
                    first.len()
                );
                socket.write_all(response.as_bytes()).await?;
                socket.write_all(first).await?;
                socket.write_all(b"\r\n").await?;
            }
            loop {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            upstream
                .closed
                .lock()
                .expect("closed")
                .insert(target.clone(), Instant::now());
            return Ok(());
        }
        "s" | "cut" | "cutmid" | "slow" => {
            let Some(stream) = upstream.streams.get(name) else {
                socket
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    .await?;
                return Ok(());
            };
            let framing = if chunked {
                "transfer-encoding: chunked".to_owned()
            } else {
                format!("content-length: {}", stream.len())
            };
            // `cc=no-store`: the upstream's own cache-control.
            let cache = if query.split('&').any(|p| p == "cc=no-store") {
                "cache-control: no-store\r\n"
            } else {
                ""
            };
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
                 {framing}\r\n{cache}connection: close\r\n\r\n"
            );
            socket.write_all(response.as_bytes()).await?;
            let send = match route {
                "cut" => &stream[..cut_len(stream, false)],
                "cutmid" => &stream[..cut_len(stream, true)],
                _ => &stream[..],
            };
            let mut rng = Rng::seeded(&target);
            let mut at = 0;
            let mut last_write_at = 0;
            let mut first_block_sent = None;
            let first_block = first_block_end(send);
            while at < send.len() {
                let n = (rng.range(1, 1500) as usize).min(send.len() - at);
                if at + n == send.len() {
                    // The last write comes late: the first event must
                    // have reached the client by then (and on `/slow/`,
                    // long enough for the proxy's keep-alives).
                    let pause = if route == "slow" { 450 } else { 100 };
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    last_write_at = at;
                } else if rng.range(0, 1) == 1 {
                    tokio::time::sleep(Duration::from_millis(rng.range(1, 3))).await;
                }
                let piece = &send[at..at + n];
                if at < first_block && at + n >= first_block {
                    first_block_sent = Some(Instant::now());
                }
                if chunked {
                    let mut framed = format!("{n:x}\r\n").into_bytes();
                    framed.extend_from_slice(piece);
                    framed.extend_from_slice(b"\r\n");
                    socket.write_all(&framed).await?;
                } else {
                    socket.write_all(piece).await?;
                }
                at += n;
            }
            let sent = Sent {
                last_byte: Instant::now(),
                last_write_at,
                first_block_sent,
            };
            upstream
                .sent
                .lock()
                .expect("sent")
                .insert(target.clone(), sent);
            if route.starts_with("cut") {
                // Dies mid-run: no last chunk, or short of the length.
                return Ok(());
            }
            if chunked {
                socket.write_all(b"0\r\n\r\n").await?;
            }
        }
        _ => {
            socket
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                .await?;
        }
    }
    socket.shutdown().await
}

/// `/record/`: reads the request body (a length or chunks), records it and
/// whether it was whole, and answers a whole one with `{"received":N}`.
async fn record(
    mut socket: TcpStream,
    mut raw: Vec<u8>,
    headers: &HashMap<String, String>,
    target: String,
    upstream: &Upstream,
) -> std::io::Result<()> {
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut buf = [0u8; 4096];
    let (body, whole) = loop {
        let parsed = if chunked {
            dechunk(&raw)
        } else {
            (raw.len() >= length).then(|| raw[..length].to_vec())
        };
        if let Some(body) = parsed {
            break (body, true);
        }
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let body = if chunked { Vec::new() } else { raw.clone() };
                break (body, false);
            }
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    };
    let n = body.len();
    upstream
        .received
        .lock()
        .expect("received")
        .insert(target, (body, whole));
    if whole {
        let json = format!(r#"{{"received":{n}}}"#);
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{json}",
            json.len()
        );
        socket.write_all(response.as_bytes()).await?;
    }
    socket.shutdown().await
}

/// A chunked body's data, once its last chunk arrived.
fn dechunk(raw: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let line_end = at + raw[at..].windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&raw[at..line_end]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        let data = line_end + 2;
        if size == 0 {
            return raw[data..].starts_with(b"\r\n").then_some(body);
        }
        body.extend_from_slice(raw.get(data..data + size)?);
        at = data + size + 2;
        if raw.len() < at {
            return None;
        }
    }
}

/// What the client got.
struct Got {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
    /// When the first non-empty body chunk arrived, and how long after the
    /// request was sent.
    first_chunk: Option<(Instant, Duration)>,
    /// The body ended in an error (cut), not at its end.
    body_error: Option<String>,
}

/// One request through the proxy at `addr`, on its own connection.
async fn request(addr: SocketAddr, method: &str, target: &str, body: &'static [u8]) -> Got {
    let work = async {
        let stream = TcpStream::connect(addr)
            .await
            .expect("connect to the proxy");
        stream.set_nodelay(true).expect("nodelay");
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream))
                .await
                .expect("handshake");
        tokio::spawn(connection);
        let req = hyper::Request::builder()
            .method(method)
            .uri(target)
            .header("host", addr.to_string())
            .header("accept-encoding", "gzip, br")
            .body(Full::new(Bytes::from_static(body)))
            .expect("request");
        let sent_at = Instant::now();
        let response = sender.send_request(req).await.expect("response");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut incoming = response.into_body();
        let (mut body, mut first_chunk, mut body_error) = (Vec::new(), None, None);
        while let Some(frame) = incoming.frame().await {
            match frame {
                Ok(frame) => {
                    if let Ok(data) = frame.into_data()
                        && !data.is_empty()
                    {
                        first_chunk.get_or_insert_with(|| (Instant::now(), sent_at.elapsed()));
                        body.extend_from_slice(&data);
                    }
                }
                Err(e) => {
                    body_error = Some(e.to_string());
                    break;
                }
            }
        }
        Got {
            status,
            headers,
            body,
            first_chunk,
            body_error,
        }
    };
    tokio::time::timeout(Duration::from_secs(20), work)
        .await
        .unwrap_or_else(|_| panic!("{target}: no whole response within 20 s"))
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn show(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let tail: String = text
        .chars()
        .rev()
        .take(300)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{} bytes, ending {tail:?}", bytes.len())
}

/// Asserts `got` is a rewritten stream with body `want`.
fn assert_rewritten(what: &str, got: &Got, want: &[u8]) {
    assert_eq!(got.status, 200, "{what}: status");
    assert!(
        got.body_error.is_none(),
        "{what}: body error {:?}",
        got.body_error
    );
    assert!(
        got.body == want,
        "{what}: the body differs from agui gateway's output\n got: {}\nwant: {}",
        show(&got.body),
        show(want)
    );
    let h = &got.headers;
    assert_eq!(header(h, "content-length"), None, "{what}: content-length");
    assert_eq!(header(h, "cache-control"), Some("no-cache"), "{what}");
    assert_eq!(header(h, "x-accel-buffering"), Some("no"), "{what}");
    assert!(
        header(h, "content-type").is_some_and(|t| t.starts_with("text/event-stream")),
        "{what}: content-type"
    );
}

/// `got` without the proxy's keep-alives, each a block of its own, and how
/// many there were (`want` has none of its own).
fn without_pings(got: Got, want: &[u8]) -> (Got, usize) {
    const PING: &str = ": ping\n\n";
    assert!(
        !want.windows(6).any(|w| w == b": ping"),
        "the expectation pings"
    );
    let text = String::from_utf8(got.body.clone()).expect("UTF-8");
    let blocks: Vec<&str> = text.split_inclusive("\n\n").collect();
    let pings = blocks.iter().filter(|b| **b == PING).count();
    assert_eq!(
        pings,
        text.matches(PING).count(),
        "each keep-alive is a block of its own"
    );
    let body = blocks
        .into_iter()
        .filter(|b| *b != PING)
        .collect::<String>();
    let got = Got {
        body: body.into_bytes(),
        ..got
    };
    (got, pings)
}

const TRUNCATED: &[u8] = b"\"code\":\"AGUI_STREAM_TRUNCATED\"}\n\n";
const VIOLATION: &[u8] = b"\"code\":\"AGUI_STREAM_VIOLATION\"}\n\n";

/// Every stream, chunked and with a content-length, whole and cut in two
/// ways, all at once through one proxy: each body is what `agui gateway`
/// prints for it (a cut run ends in the repair's RUN_ERROR), with the
/// rewritten response's headers.
#[test]
fn every_stream_is_the_gateways_output() {
    let f = fixture();
    let tmp = TempDir::new("every");
    let names = f.names();
    let mut want = HashMap::new();
    for name in &names {
        want.insert(format!("s/{name}"), f.gateway(&[], &f.file(name)));
        want.insert(format!("cut/{name}"), f.gateway_cut(&[], name, false, &tmp));
        want.insert(
            format!("cutmid/{name}"),
            f.gateway_cut(&[], name, true, &tmp),
        );
    }
    assert!(
        want[&format!("s/{VIOLATING}")].ends_with(VIOLATION),
        "the violating case's expectation"
    );
    let proxy = f.proxy(&[], &tmp);
    let addr = proxy.addr;
    let mut targets = Vec::new();
    for name in &names {
        for route in ["s", "cut", "cutmid"] {
            for mode in ["chunked", "length"] {
                targets.push((
                    format!("{route}/{name}"),
                    format!("/{route}/{name}?mode={mode}&t=every"),
                ));
            }
        }
    }
    block_on(async {
        let tasks: Vec<_> = targets
            .iter()
            .map(|(_, t)| {
                let t = t.clone();
                tokio::spawn(async move { request(addr, "GET", &t, b"").await })
            })
            .collect();
        for ((key, target), task) in targets.iter().zip(tasks) {
            let got = task.await.expect("request task");
            assert_rewritten(target, &got, &want[key]);
            if key.starts_with("cut/") {
                assert!(
                    got.body.ends_with(TRUNCATED),
                    "{target}: {}",
                    show(&got.body)
                );
            } else if key.starts_with("cutmid/") {
                // Cut inside a frame: a RUN_ERROR too, its code by what
                // the cut frame reads as.
                assert!(
                    got.body.ends_with(TRUNCATED) || got.body.ends_with(VIOLATION),
                    "{target}: {}",
                    show(&got.body)
                );
            } else if key.ends_with(VIOLATING) {
                assert!(
                    got.body.ends_with(VIOLATION),
                    "{target}: {}",
                    show(&got.body)
                );
            }
        }
    });
}

/// Events go out as they come: the first one reaches the client before the
/// upstream's last byte (where the first block ends before the upstream's
/// last write starts), also with every stream at once.
#[test]
fn the_first_event_comes_before_the_upstreams_last_byte() {
    let f = fixture();
    let tmp = TempDir::new("first");
    let names = f.names();
    let proxy = f.proxy(&[], &tmp);
    let addr = proxy.addr;
    let targets: Vec<(String, String)> = names
        .iter()
        .flat_map(|name| {
            ["chunked", "length"]
                .map(|mode| (name.clone(), format!("/s/{name}?mode={mode}&t=first")))
        })
        .collect();
    block_on(async {
        let tasks: Vec<_> = targets
            .iter()
            .map(|(_, t)| {
                let t = t.clone();
                tokio::spawn(async move { request(addr, "GET", &t, b"").await })
            })
            .collect();
        let (mut lead_min, mut ttfe_max) = (Duration::MAX, Duration::ZERO);
        let mut latencies = Vec::new();
        let mut timed = 0;
        for ((name, target), task) in targets.iter().zip(tasks) {
            let got = task.await.expect("request task");
            assert_eq!(got.status, 200, "{target}");
            let sent = f.upstream.sent(target);
            let (first, ttfe) = got.first_chunk.expect("a first chunk");
            // What the proxy adds: from the upstream's write that completed
            // the first block to the client's first chunk.
            let written = sent.first_block_sent.expect("the first block's write");
            latencies.push(first.saturating_duration_since(written));
            if first_block_end(f.stream(name)) <= sent.last_write_at {
                assert!(
                    first < sent.last_byte,
                    "{target}: the first event came {:?} after the upstream's last byte",
                    first - sent.last_byte
                );
                lead_min = lead_min.min(sent.last_byte - first);
                ttfe_max = ttfe_max.max(ttfe);
                timed += 1;
            }
        }
        assert!(timed >= names.len(), "only {timed} streams could be timed");
        latencies.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        eprintln!(
            "time to first event: at most {:.2} ms after the request over {timed} streams, \
             at least {:.1} ms before the upstream's last byte; from the upstream's write of \
             the first block to the client: median {:.2} ms, max {:.2} ms over {} responses \
             at once",
            ms(ttfe_max),
            ms(lead_min),
            ms(latencies[latencies.len() / 2]),
            ms(latencies[latencies.len() - 1]),
            latencies.len(),
        );

        // One request alone.
        let lone = format!("/s/{}?mode=chunked&t=alone", names[0]);
        let got = request(addr, "GET", &lone, b"").await;
        let (first, ttfe) = got.first_chunk.expect("a first chunk");
        let written = f
            .upstream
            .sent(&lone)
            .first_block_sent
            .expect("the first block's write");
        assert!(
            first < f.upstream.sent(&lone).last_byte,
            "alone: the first event came late"
        );
        eprintln!(
            "alone: first event {:.2} ms after the request, {:.2} ms after the upstream wrote it",
            ms(ttfe),
            ms(first.saturating_duration_since(written))
        );
    });
}

/// A response that is not an event stream, or a compressed one, passes
/// untouched; the request goes upstream as it was sent (asking for
/// identity).
#[test]
fn other_responses_pass_through_untouched() {
    let f = fixture();
    let tmp = TempDir::new("passthrough");
    let proxy = f.proxy(&[], &tmp);
    block_on(async {
        let post_body = b"{\"question\":\"weather?\"}";
        let got = request(proxy.addr, "POST", "/json?x=1&y=2", post_body).await;
        let json = echo_json("POST", "/json?x=1&y=2", "identity", post_body.len());
        assert_eq!(got.status, 200);
        assert_eq!(
            got.body,
            json.as_bytes(),
            "the JSON passes through untouched"
        );
        let h = &got.headers;
        assert_eq!(header(h, "content-type"), Some("application/json"));
        assert_eq!(
            header(h, "content-length"),
            Some(json.len().to_string().as_str())
        );
        assert_eq!(header(h, "x-upstream"), Some("yes"));
        assert_eq!(header(h, "cache-control"), None);

        let got = request(proxy.addr, "GET", "/gzip", b"").await;
        assert_eq!(got.status, 200);
        assert_eq!(
            got.body, FAKE_GZIP,
            "a compressed stream passes through untouched"
        );
        assert_eq!(header(&got.headers, "content-encoding"), Some("gzip"));
        assert_eq!(header(&got.headers, "cache-control"), None);
    });
    let log = proxy.log_when(|l| l.len() >= 2);
    assert_eq!(
        log.iter()
            .filter(|l| l.contains("\"passed_through\":"))
            .count(),
        2,
        "{log:?}"
    );
}

/// `--passthrough`, the baseline `scripts/envoy-memory.py --http-proxy`
/// measures against: an event stream reaches the client byte for byte as
/// the upstream sent it — chunks unexpanded, CRLF line ends kept, a
/// violation and a cut run unrepaired (the cut response cut too) — with
/// the rewritten responses' headers; an agent request goes unchecked; one
/// `passthrough` line per event stream, no stats line.
#[test]
fn passthrough_forwards_event_streams_untouched() {
    // What the rewriter would change (so that the test says something):
    // a chunk it expands, CRLF it relines, a violation it ends.
    const CHANGED: [&str; 3] = ["chunk-mixed-kinds.sse", "sse-crlf-multi.sse", VIOLATING];
    const CUT: &str = "real-tool-roundtrip.sse";
    let f = fixture();
    for name in CHANGED {
        assert_ne!(
            f.gateway(&[], &f.file(name)),
            f.stream(name),
            "{name}: the rewriter leaves it as it is"
        );
    }
    let tmp = TempDir::new("passthrough-flag");
    let proxy = f.proxy(&["--passthrough"], &tmp);
    let addr = proxy.addr;
    block_on(async {
        for name in CHANGED {
            for mode in ["chunked", "length"] {
                let target = format!("/s/{name}?mode={mode}&t=passthrough");
                let got = request(addr, "GET", &target, b"").await;
                assert_eq!(got.status, 200, "{target}");
                assert!(got.body_error.is_none(), "{target}: {:?}", got.body_error);
                assert!(
                    got.body == f.stream(name),
                    "{target}: not the upstream's bytes\n got: {}\nwant: {}",
                    show(&got.body),
                    show(f.stream(name))
                );
                let h = &got.headers;
                assert_eq!(header(h, "content-length"), None, "{target}");
                assert_eq!(header(h, "cache-control"), Some("no-cache"), "{target}");
                assert_eq!(header(h, "x-accel-buffering"), Some("no"), "{target}");
            }
        }
        // A run cut short: no repair, and the client's response is cut.
        let target = format!("/cut/{CUT}?mode=chunked&t=passthrough");
        let got = request(addr, "GET", &target, b"").await;
        let stream = f.stream(CUT);
        assert!(
            got.body == stream[..cut_len(stream, false)],
            "{target}: not the upstream's bytes: {}",
            show(&got.body)
        );
        assert!(got.body_error.is_some(), "{target}: ended, not cut");
        // Not checked: a body the check refuses reaches the upstream whole.
        let (status, _) = post(
            addr,
            "/record/passthrough/invalid",
            b"not json",
            "text/event-stream",
            1460,
            Duration::ZERO,
        )
        .await;
        assert_eq!(status, 200, "an agent request is not checked");
        assert_eq!(
            f.upstream.received.lock().expect("received")["/record/passthrough/invalid"],
            (b"not json".to_vec(), true)
        );
    });
    let streams = 2 * CHANGED.len() + 1;
    let lines = |log: &[String]| {
        log.iter()
            .filter(|l| l.starts_with("{\"passthrough\":"))
            .count()
    };
    let log = proxy.log_when(|l| lines(l) >= streams);
    assert_eq!(lines(&log), streams, "{log:?}");
    assert!(!log.iter().any(|l| l.contains("\"bytes_in\"")), "{log:?}");
    let cut = log
        .iter()
        .find(|l| l.contains(&format!("\"path\":\"/cut/{CUT}")))
        .expect("the cut stream's line");
    assert!(!cut.contains("\"upstream_error\":null"), "{cut}");
}

/// The upstream's own `cache-control` is kept (`no-store` says more than
/// `no-cache`); `no-cache` only where it set none.
#[test]
fn the_upstreams_cache_control_is_kept() {
    let f = fixture();
    let tmp = TempDir::new("cache");
    let proxy = f.proxy(&[], &tmp);
    let name = &f.names()[0];
    let want = f.gateway(&[], &f.file(name));
    let got = block_on(request(
        proxy.addr,
        "GET",
        &format!("/s/{name}?cc=no-store&t=cache"),
        b"",
    ));
    assert_eq!(got.body, want);
    assert_eq!(header(&got.headers, "cache-control"), Some("no-store"));
    assert_eq!(header(&got.headers, "x-accel-buffering"), Some("no"));
    assert_eq!(header(&got.headers, "content-length"), None);
}

/// An upstream that fails: a 502 that says `bad gateway` and nothing of
/// the upstream (its error goes to the log).
#[test]
fn a_failing_upstream_is_a_bad_gateway() {
    let f = fixture();
    let tmp = TempDir::new("reset");
    let proxy = f.proxy(&[], &tmp);
    let got = block_on(request(proxy.addr, "GET", "/reset", b""));
    assert_eq!(got.status, 502, "a failing upstream");
    assert_eq!(got.body, b"bad gateway\n", "{}", show(&got.body));
    let log = proxy.log_when(|l| !l.is_empty());
    assert!(
        log.iter()
            .any(|l| l.starts_with("http_proxy: /reset: upstream: ")),
        "{log:?}"
    );
}

/// A block larger than the proxy's buffers is held whole until its verdict
/// (its raw buffer grown from the pool), or with `--hold-bytes 0` goes out
/// piece by piece ahead of it; either way the body is the gateway's.
#[test]
fn a_block_larger_than_the_buffers_is_held_or_streams() {
    let f = fixture();
    for (flags, streamed) in [(&[][..], false), (&["--hold-bytes", "0"][..], true)] {
        let tmp = TempDir::new("large");
        let proxy = f.proxy(flags, &tmp);
        let want = f.gateway(flags, &f.file(LARGE));
        let got = block_on(request(
            proxy.addr,
            "GET",
            &format!("/s/{LARGE}?t=large"),
            b"",
        ));
        assert_rewritten("a block over --buffer", &got, &want);
        assert!(got.body == f.stream(LARGE), "nothing to change in it");
        let log = proxy.log_when(|l| l.iter().any(|l| l.contains("\"rewritten\":")));
        let stats = log.iter().find(|l| l.contains(LARGE)).expect("its stats");
        assert!(stats.contains("\"error\":null"), "{stats}");
        assert_eq!(
            !stats.contains("\"streamed\":0,"),
            streamed,
            "{flags:?}: {stats}"
        );
    }
}

/// The proxy takes `agui gateway`'s options, and they do what they do
/// there: the body is the gateway's with the same flags.
#[test]
fn the_gateways_options_reach_the_proxy() {
    let f = fixture();
    let tmp = TempDir::new("options");
    let flags: &[&str] = &[
        "--on-violation",
        "drop",
        "--close-open",
        "--drop-raw",
        "--deny-tool",
        "get_weather",
        "--canonical",
        "--check-tool-args",
        "--max-event-bytes",
        "100000",
    ];
    let proxy = f.proxy(flags, &tmp);
    let mut names = f.names();
    names.truncate(names.len() - CONFORMANCE.len());
    names.push(VIOLATING.to_owned());
    block_on(async {
        for name in &names {
            let want = f.gateway(flags, &f.file(name));
            let got = request(proxy.addr, "GET", &format!("/s/{name}?t=options"), b"").await;
            assert_rewritten(name, &got, &want);
            if name != VIOLATING {
                assert!(
                    !String::from_utf8_lossy(&got.body)
                        .contains("\"toolCallName\":\"get_weather\""),
                    "{name}: a denied tool's call went out"
                );
            }
            let want = f.gateway_cut(flags, name, false, &tmp);
            let got = request(proxy.addr, "GET", &format!("/cut/{name}?t=options"), b"").await;
            assert_rewritten(name, &got, &want);
        }
    });
    assert_ne!(
        f.gateway(flags, &f.file(&names[0])),
        f.gateway(&[], &f.file(&names[0])),
        "the flags change the output"
    );
}

/// Keep-alives (`: ping`, here after 100 ms without output, also in the
/// upstream's pause before its last write) fall between frames.
#[test]
fn keep_alives_fall_between_frames() {
    let f = fixture();
    let tmp = TempDir::new("keepalive");
    let proxy = f.proxy(&["--keepalive-ms", "100"], &tmp);
    let want = f.gateway(&[], &f.file(SLOW));
    let got = block_on(request(
        proxy.addr,
        "GET",
        &format!("/slow/{SLOW}?t=keepalive"),
        b"",
    ));
    let (got, pings) = without_pings(got, &want);
    assert!(
        pings >= 2,
        "{pings} keep-alives in a 450 ms pause at 100 ms"
    );
    assert_rewritten("keep-alives", &got, &want);
    eprintln!("{pings} keep-alives in a 450 ms pause");
}

/// One stats line per rewritten response as it ends (the gateway's
/// statistics, then the response's fields); one line per response passed
/// through.
#[test]
fn one_stats_line_per_response() {
    let f = fixture();
    let tmp = TempDir::new("stats");
    let proxy = f.proxy(&[], &tmp);
    let name = &f.names()[0];
    block_on(async {
        for target in [
            format!("/s/{name}?t=stats"),
            format!("/cut/{name}?t=stats"),
            format!("/s/{VIOLATING}?t=stats"),
            "/json".to_owned(),
        ] {
            request(proxy.addr, "GET", &target, b"").await;
        }
    });
    let log = proxy.log_when(|l| l.iter().filter(|l| l.contains("\"rewritten\":")).count() >= 3);
    let stats: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("\"rewritten\":"))
        .collect();
    assert_eq!(stats.len(), 3, "{log:?}");
    assert_eq!(log.len(), 4, "{log:?}");
    for line in &stats {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let keys: Vec<&str> = v
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.first(), Some(&"bytes_in"), "{line}");
        for key in [
            "events_in",
            "events_out",
            "violations_by_stage",
            "error",
            "path",
            "upstream_error",
            "client_gone",
            "pings",
            "first_byte_ms",
            "total_ms",
        ] {
            assert!(v.get(key).is_some(), "{key} in {line}");
        }
        assert_eq!(v["client_gone"], false, "{line}");
    }
    let cut = stats
        .iter()
        .find(|l| l.contains("\"path\":\"/cut/"))
        .expect("the cut stream's");
    assert!(!cut.contains("\"upstream_error\":null"), "{cut}");
    assert!(cut.contains("\"repairs\":1,"), "{cut}");
    let violating = stats
        .iter()
        .find(|l| l.contains(VIOLATING))
        .expect("the violation's");
    assert!(violating.contains("\"violations\":1,"), "{violating}");
    assert_eq!(
        log.iter()
            .filter(|l| l.contains("\"passed_through\":"))
            .count(),
        1
    );
}

/// Ids for legacy THINKING events are minted per run by default, as
/// `agui gateway` does; `--deterministic-ids` asks for the reference
/// oracle's sequence.
#[test]
fn ids_are_minted_per_run_unless_asked() {
    let f = fixture();
    let tmp = TempDir::new("ids");
    let per_run = f.gateway(&[], &f.file(THINKING));
    let oracle = f.gateway(&["--deterministic-ids"], &f.file(THINKING));
    assert_ne!(per_run, oracle, "the two mintings differ on {THINKING}");
    assert!(String::from_utf8_lossy(&oracle).contains("-0000-4000-8000-000000000001"));
    let proxy = f.proxy(&[], &tmp);
    let got = block_on(request(
        proxy.addr,
        "GET",
        &format!("/s/{THINKING}?t=ids"),
        b"",
    ));
    assert_rewritten("per run", &got, &per_run);
    let tmp2 = TempDir::new("ids-oracle");
    let proxy = f.proxy(&["--deterministic-ids"], &tmp2);
    let got = block_on(request(
        proxy.addr,
        "GET",
        &format!("/s/{THINKING}?t=ids2"),
        b"",
    ));
    assert_rewritten("deterministic", &got, &oracle);
}

/// Sends a GET for `target` to the proxy on a raw socket, reads until the
/// response's body has begun (`body`) or only waits a moment (the
/// upstream has not answered), then closes the connection; when.
async fn leave(addr: SocketAddr, target: &str, body: bool) -> Instant {
    let mut socket = TcpStream::connect(addr)
        .await
        .expect("connect to the proxy");
    let request = format!("GET {target} HTTP/1.1\r\nhost: {addr}\r\n\r\n");
    socket.write_all(request.as_bytes()).await.expect("request");
    if body {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.windows(6).any(|w| w == b"data: ") {
            let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
                .await
                .expect("the first event within 5 s")
                .expect("read");
            assert!(n > 0, "the proxy closed first");
            got.extend_from_slice(&buf[..n]);
        }
    } else {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    drop(socket);
    Instant::now()
}

/// A client that leaves closes the upstream request at once, whatever the
/// upstream is doing: here it is silent (an agent waiting on a model),
/// after its first event or before its response's head, and the proxy's
/// keep-alives (15 s) are far off.
#[test]
fn a_client_that_leaves_closes_the_upstream() {
    let f = fixture();
    let tmp = TempDir::new("leave");
    let proxy = f.proxy(&[], &tmp);
    let name = &f.names()[0];
    for (target, body) in [
        (format!("/silent/{name}?t=leave"), true),
        ("/silenthead/x?t=leave".to_owned(), false),
    ] {
        let left = block_on(leave(proxy.addr, &target, body));
        let closed = f
            .upstream
            .closed(&target, Duration::from_secs(5))
            .unwrap_or_else(|| {
                panic!("{target}: the upstream's connection still open 5 s after the client left")
            });
        let after = closed.saturating_duration_since(left);
        eprintln!(
            "{target}: the upstream saw its connection close {:.1} ms after the client left",
            after.as_secs_f64() * 1e3
        );
        assert!(after < Duration::from_secs(1), "{target}: {after:?}");
    }
}

/// A client that leaves mid-stream is one log line: the response's stats
/// line, with `"client_gone":true`.
#[test]
fn a_client_abort_is_one_log_line() {
    let f = fixture();
    let tmp = TempDir::new("abort");
    let proxy = f.proxy(&[], &tmp);
    let name = &f.names()[0];
    let target = format!("/silent/{name}?t=abort");
    block_on(leave(proxy.addr, &target, true));
    f.upstream
        .closed(&target, Duration::from_secs(5))
        .expect("the upstream closed");
    // Time for anything more to be written.
    std::thread::sleep(Duration::from_millis(300));
    let log = proxy.log_when(|l| !l.is_empty());
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(log[0].contains("\"client_gone\":true"), "{log:?}");
    assert!(log[0].starts_with("{\"bytes_in\":"), "{log:?}");
}

// ------------------------------------------------------------ request side

/// `POST target` with `body` as `HttpAgent` sends it (`accept`, JSON), in
/// `piece`-byte writes `pause` apart on a raw socket: the status and body
/// of the answer.
async fn post(
    addr: SocketAddr,
    target: &str,
    body: &[u8],
    accept: &str,
    piece: usize,
    pause: Duration,
) -> (u16, Vec<u8>) {
    let work = async {
        let mut socket = TcpStream::connect(addr)
            .await
            .expect("connect to the proxy");
        socket.set_nodelay(true).expect("nodelay");
        let head = format!(
            "POST {target} HTTP/1.1\r\nhost: {addr}\r\naccept: {accept}\r\n\
             content-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        socket
            .write_all(head.as_bytes())
            .await
            .expect("send the head");
        for p in body.chunks(piece.max(1)) {
            // The proxy may answer (and close) before the body is sent.
            if socket.write_all(p).await.is_err() {
                break;
            }
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
        let mut answer = Vec::new();
        let _ = socket.read_to_end(&mut answer).await;
        answer
    };
    let answer = tokio::time::timeout(Duration::from_secs(20), work)
        .await
        .unwrap_or_else(|_| panic!("{target}: no answer within 20 s"));
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{target}: no status in {text:?}"));
    let head_end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(answer.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&answer[..head_end]).to_ascii_lowercase();
    let mut body = answer[head_end..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = dechunk(&body).unwrap_or_default();
    }
    (status, body)
}

/// What the library's request rewriter answers `body`, with the proxy's
/// defaults (64 KiB buffers, V1, 16 MiB limit): the status and the JSON
/// problem (`None`: it passes).
fn library_refusal(body: &[u8]) -> Option<(u16, Vec<u8>)> {
    use agui_stream::rewrite::RequestRewriter;
    let (mut check, mut hold) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    let mut r =
        RequestRewriter::new(&mut check, &mut hold, agui_stream::Dialect::V1).limit(16 << 20);
    let mut sink = Vec::new();
    let refusal = r
        .push(body, &mut sink)
        .and_then(|()| r.finish(&mut sink).map(drop))
        .err()?;
    let mut problem = Vec::new();
    r.write_problem(&refusal, &mut problem)
        .expect("a Vec has room");
    Some((refusal.status(), problem))
}

/// Every request corpus body through the proxy: a valid one reaches the
/// upstream byte for byte; an invalid one is answered 400 with a JSON
/// problem, and the upstream never receives it whole.
#[test]
fn agent_requests_are_checked_on_their_way() {
    let f = fixture();
    let dir = std::env::temp_dir().join(format!("agui-proxy-requests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("log dir");
    let proxy = start_proxy(&f.proxy, f.upstream_addr, &[], dir.join("checked.log"));
    let (mut valid, mut refused) = (0, 0);
    block_on(async {
        for (name, body) in support::request_bodies() {
            let target = format!("/record/checked/{name}");
            let (status, answer) = post(
                proxy.addr,
                &target,
                &body,
                "text/event-stream",
                1460,
                Duration::ZERO,
            )
            .await;
            let received = f
                .upstream
                .received
                .lock()
                .expect("received")
                .get(&target)
                .cloned();
            let (stage, _) = support::request_answer(&name, agui_stream::Dialect::V1);
            match stage {
                None => {
                    assert_eq!(status, 200, "{name}: {}", String::from_utf8_lossy(&answer));
                    assert_eq!(received, Some((body.clone(), true)), "{name}");
                    valid += 1;
                }
                Some(_) => {
                    // The library's answer, whatever split the proxy saw
                    // (413 where a capacity ran out: nesting past its
                    // depth limit).
                    let (want, problem) = library_refusal(&body)
                        .unwrap_or_else(|| panic!("{name}: the library passes it"));
                    assert_eq!(status, want, "{name}: {}", String::from_utf8_lossy(&answer));
                    assert_eq!(
                        String::from_utf8_lossy(&answer),
                        String::from_utf8_lossy(&problem),
                        "{name}"
                    );
                    // The upstream never received it whole (it may have
                    // seen its start, then a reset).
                    assert!(
                        !received.as_ref().is_some_and(|r| r.1),
                        "{name}: the upstream got it whole"
                    );
                    refused += 1;
                }
            }
        }
    });
    assert!(
        valid >= 80 && refused >= 110,
        "{valid} valid, {refused} refused"
    );
    // One line per checked request, with the running counts.
    let log = proxy
        .log_when(|l| l.iter().filter(|l| l.contains("\"request\"")).count() >= valid + refused);
    let last: serde_json::Value = log
        .iter()
        .rev()
        .find(|l| l.contains("\"request\""))
        .and_then(|l| serde_json::from_str(l).ok())
        .expect("a request line");
    assert_eq!(last["checked"], (valid + refused) as u64, "{last}");
    let refused_counted: u64 = [
        "refused_json",
        "refused_schema",
        "refused_too_large",
        "refused_capacity",
    ]
    .iter()
    .map(|k| last[k].as_u64().unwrap_or(0))
    .sum();
    assert_eq!(refused_counted, refused as u64, "{last}");
    assert!(last["refused_json"].as_u64() > Some(30) && last["refused_schema"].as_u64() > Some(60));
}

/// A denied tool leaves the request's `tools` and nothing else changes;
/// a body over the limit is 413; a body sent slowly in small pieces gets
/// the same verdict; other requests pass unchecked.
#[test]
fn the_request_policy() {
    let f = fixture();
    let dir = std::env::temp_dir().join(format!("agui-proxy-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("log dir");
    let deny = start_proxy(
        &f.proxy,
        f.upstream_addr,
        &[
            "--deny-tool",
            "get_weather",
            "--max-request-bytes",
            "150000",
        ],
        dir.join("deny.log"),
    );
    let bodies = support::request_bodies();
    let body = |name: &str| {
        bodies
            .iter()
            .find(|(n, _)| n == name)
            .expect(name)
            .1
            .clone()
    };
    block_on(async {
        let mut rewritten = 0;
        for (name, body) in &bodies {
            if support::request_answer(name, agui_stream::Dialect::V1)
                .0
                .is_some()
                || !String::from_utf8_lossy(body).contains("get_weather")
            {
                continue;
            }
            let mut want: serde_json::Value = serde_json::from_slice(body).expect("JSON");
            let Some(tools) = want.get_mut("tools").and_then(|t| t.as_array_mut()) else {
                continue;
            };
            let before = tools.len();
            tools.retain(|t| t["name"] != "get_weather");
            if tools.len() == before {
                continue;
            }
            let target = format!("/record/deny/{name}");
            let (status, _) = post(
                deny.addr,
                &target,
                body,
                "text/event-stream",
                1460,
                Duration::ZERO,
            )
            .await;
            assert_eq!(status, 200, "{name}");
            let (got, whole) = f.upstream.received.lock().expect("received")[&target].clone();
            assert!(whole, "{name}");
            let got: serde_json::Value = serde_json::from_slice(&got).expect("JSON upstream");
            assert_eq!(got, want, "{name}");
            rewritten += 1;
        }
        assert!(rewritten >= 3, "{rewritten} bodies rewritten");
        // Over the limit: by its content-length, before the upstream is asked.
        let large = body("valid-large-user-image-200kb");
        let (status, answer) = post(
            deny.addr,
            "/record/deny/over",
            &large,
            "text/event-stream",
            1460,
            Duration::ZERO,
        )
        .await;
        let problem: serde_json::Value = serde_json::from_slice(&answer).expect("problem");
        assert_eq!(
            (status, problem["code"].as_str()),
            (413, Some("AGUI_INPUT_TOO_LARGE"))
        );
        assert!(
            !f.upstream
                .received
                .lock()
                .expect("received")
                .contains_key("/record/deny/over")
        );
        // Slowly, in 13-byte pieces 2 ms apart: the same verdicts.
        let valid = body("valid-all-roles-conversation");
        let (status, _) = post(
            deny.addr,
            "/record/deny/slow-valid",
            &valid,
            "text/event-stream",
            13,
            Duration::from_millis(2),
        )
        .await;
        assert_eq!(status, 200);
        let invalid = body("schema-unknown-role");
        let (status, _) = post(
            deny.addr,
            "/record/deny/slow-invalid",
            &invalid,
            "text/event-stream",
            13,
            Duration::from_millis(2),
        )
        .await;
        assert_eq!(status, 400);
        let received = f
            .upstream
            .received
            .lock()
            .expect("received")
            .get("/record/deny/slow-invalid")
            .cloned();
        assert!(!received.is_some_and(|r| r.1));
        // Not an agent request (no `accept: text/event-stream`): unchecked.
        let (status, _) = post(
            deny.addr,
            "/record/deny/plain",
            b"not json",
            "application/json",
            1460,
            Duration::ZERO,
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            f.upstream.received.lock().expect("received")["/record/deny/plain"],
            (b"not json".to_vec(), true)
        );
    });
    // With --request-path, the path decides, not the accept header.
    let prefixed = start_proxy(
        &f.proxy,
        f.upstream_addr,
        &["--request-path", "/record/agent"],
        dir.join("prefixed.log"),
    );
    block_on(async {
        let (status, _) = post(
            prefixed.addr,
            "/record/agent-1",
            b"not json",
            "*/*",
            1460,
            Duration::ZERO,
        )
        .await;
        assert_eq!(status, 400, "under the prefix: checked");
        let (status, _) = post(
            prefixed.addr,
            "/record/other-1",
            b"not json",
            "text/event-stream",
            1460,
            Duration::ZERO,
        )
        .await;
        assert_eq!(status, 200, "elsewhere: unchecked");
    });
}

/// Guard rules from `--config`: each stream masked as `agui gateway`
/// masks it with the same file (a literal spread over three deltas of
/// the real captures), the rules' counts in the stats line.
#[test]
fn guard_rules_from_the_config_file_mask_the_text() {
    let f = fixture();
    let tmp = TempDir::new("guard");
    let config = tmp.0.join("guard.json");
    std::fs::write(
        &config,
        r#"{"guard": {"rules": [
            {"literal": "°c in Zü", "ignore_case": true, "action": "mask", "replacement": "[TEMP]", "name": "temperature"},
            {"builtin": "email", "action": "mask"}]}}"#,
    )
    .expect("config");
    let config = config.to_string_lossy().into_owned();
    let flags: &[&str] = &["--config", &config];
    let proxy = f.proxy(flags, &tmp);
    let reals: Vec<String> = real_captures(&f.corpus)
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    block_on(async {
        for name in &f.names() {
            let want = f.gateway(flags, &f.file(name));
            let got = request(proxy.addr, "GET", &format!("/s/{name}?t=guard"), b"").await;
            assert_rewritten(name, &got, &want);
            let body = String::from_utf8_lossy(&got.body);
            if reals.contains(name) && f.gateway(&[], &f.file(name)) != want {
                assert!(body.contains("[TEMP]"), "{name}: {body}");
            }
            // The messages' text (tool results and snapshots are not
            // guarded yet).
            let text: String = body
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
                .map(|e| e["delta"].as_str().unwrap_or_default().to_owned())
                .collect();
            assert!(!text.contains("°C in Zü"), "{name}: {text}");
        }
    });
    let masked = reals
        .iter()
        .filter(|n| f.gateway(flags, &f.file(n)) != f.gateway(&[], &f.file(n)))
        .count();
    assert!(
        masked >= 2,
        "{masked} of {} real captures masked",
        reals.len()
    );
    let log = proxy
        .log_when(|l| l.iter().filter(|l| l.contains("\"rewritten\":")).count() >= f.names().len());
    let counted: u64 = log
        .iter()
        .filter(|l| l.contains("\"rewritten\":"))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let guard = v["guard"].as_array().expect("guard counts").clone();
            assert_eq!(guard[0]["rule"], "temperature", "{l}");
            assert_eq!(guard[1]["rule"], "email", "{l}");
            guard[0]["masked"].as_u64().expect("a count")
        })
        .sum();
    assert!(counted >= masked as u64, "{counted}");
}
