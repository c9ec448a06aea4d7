//! End to end: `examples/http_proxy.rs` between a real upstream and a real
//! client, on loopback.
//!
//! How the binaries are had: an integration test cannot depend on examples
//! being built, so the test first runs
//! `$CARGO build --release --features std --example http_proxy --example agui --message-format json`
//! (`CARGO` is set by cargo for tests; a no-op when they are fresh) and
//! takes the two executables' paths from cargo's `compiler-artifact`
//! messages, wherever the target directory is. The release build is the
//! one `.ci/run` makes later anyway. Everything after the build is bounded
//! in time; every process started is killed by pid when its guard drops,
//! also when the test fails.
//!
//! The upstream is a small HTTP/1.1 server on raw tokio sockets inside this
//! process (so that each write is one the test chose): it serves the real
//! captures and a few conformance cases as `text/event-stream`, chunked or
//! with a `content-length`, in seeded random writes of 1–1500 bytes with
//! small random delays (and 100 ms before the last one), and records when it
//! wrote its last byte. The client is hyper's. The expected bodies are what
//! `agui gateway --chunk 1460` prints for the same file and flags.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::HeaderMap;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A started process, killed (by its pid) and reaped when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
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

/// Builds the examples (release); their paths.
fn build() -> (PathBuf, PathBuf) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let started = Instant::now();
    let mut child = Command::new(cargo)
        .args(["build", "--release", "--features", "std"])
        .args(["--example", "http_proxy", "--example", "agui"])
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
    assert!(status.success(), "cargo build failed: {status}");
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
    eprintln!("build: {:.1} s", started.elapsed().as_secs_f64());
    let mut get = |name: &str| {
        found
            .remove(name)
            .unwrap_or_else(|| panic!("cargo built no executable {name}"))
    };
    let proxy = get("http_proxy");
    (proxy, get("agui"))
}

/// `agui gateway --chunk 1460 --buffer 65536 FLAGS FILE`'s stdout.
fn gateway(agui: &Path, flags: &[&str], file: &Path) -> Vec<u8> {
    let mut child = Command::new(agui)
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
    assert!(status.success(), "agui gateway {file:?}: {status}");
    stdout.join().expect("agui's stdout")
}

/// A started proxy and where it listens.
struct Proxy {
    _child: Killed,
    addr: SocketAddr,
    log: PathBuf,
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
    let chunked = query != "mode=length";
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
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
                 {framing}\r\nconnection: close\r\n\r\n"
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

#[test]
fn proxy_rewrites_streams_end_to_end() {
    let (proxy_exe, agui) = build();
    let started = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let tmp = TempDir(std::env::temp_dir().join(format!("agui-http-proxy-{}", std::process::id())));
    std::fs::create_dir_all(&tmp.0).expect("temp dir");

    // The streams: every real capture, and a few conformance cases.
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("real"))
        .expect("tests/corpus/real")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sse"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no real captures");
    let violating = "life-finish-open-tool.sse";
    for name in [
        "sse-crlf-multi.sse",      // CRLF line ends: relined
        "chunk-mixed-kinds.sse",   // chunks: expanded
        "mix-small-25.sse",        // 24 KB, 253 events
        "real-tool-roundtrip.sse", // a valid run
        violating,                 // a lifecycle violation
    ] {
        files.push(root.join("conformance").join(name));
    }
    let large = "esc-long-delta.sse"; // one 72 KB block: more than --buffer (streamed)
    let slow = "real-chat-simple.sse";
    let mut streams = HashMap::new();
    for f in files.iter().chain([&root.join("conformance").join(large)]) {
        let name = f.file_name().expect("name").to_string_lossy().into_owned();
        streams.insert(name, std::fs::read(f).expect("read a stream"));
    }
    streams.insert(
        slow.to_owned(),
        std::fs::read(root.join("conformance").join(slow)).expect("read a stream"),
    );
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().expect("name").to_string_lossy().into_owned())
        .collect();

    // What the gateway prints offline, whole and cut in half.
    let default_flags: &[&str] = &[];
    let other_flags: &[&str] = &["--on-violation", "drop", "--close-open"];
    let mut want = HashMap::new();
    let (mut want_cut, mut want_cutmid) = (HashMap::new(), HashMap::new());
    for (name, f) in names.iter().zip(&files) {
        want.insert(name.clone(), gateway(&agui, default_flags, f));
        for (mid_frame, want_cut) in [(false, &mut want_cut), (true, &mut want_cutmid)] {
            let cut = tmp.0.join(format!("cut-{mid_frame}-{name}"));
            let len = cut_len(&streams[name], mid_frame);
            std::fs::write(&cut, &streams[name][..len]).expect("write a cut stream");
            want_cut.insert(name.clone(), gateway(&agui, default_flags, &cut));
        }
    }
    let want_violating_drop = gateway(
        &agui,
        other_flags,
        &root.join("conformance").join(violating),
    );
    let want_slow = gateway(&agui, other_flags, &root.join("conformance").join(slow));
    let want_large = gateway(&agui, default_flags, &root.join("conformance").join(large));
    let cut = tmp.0.join(format!("cut-false-{}", names[0]));
    let want_cut_close = gateway(&agui, other_flags, &cut);
    assert!(
        want[violating].ends_with(VIOLATION),
        "the violating case's expectation"
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let large_stream = streams[large].clone();
    let upstream = Arc::new(Upstream {
        streams,
        sent: Mutex::new(HashMap::new()),
    });
    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind the upstream");
    let upstream_addr = listener.local_addr().expect("upstream address");
    runtime.spawn(serve_upstream(listener, Arc::clone(&upstream)));

    let proxy = start_proxy(
        &proxy_exe,
        upstream_addr,
        default_flags,
        tmp.0.join("proxy.log"),
    );
    let mut other_flags_and_keepalive = other_flags.to_vec();
    other_flags_and_keepalive.extend(["--keepalive-ms", "100"]);
    let other = start_proxy(
        &proxy_exe,
        upstream_addr,
        &other_flags_and_keepalive,
        tmp.0.join("other.log"),
    );
    let (addr, other_addr) = (proxy.addr, other.addr);

    runtime.block_on(async {
        // Every stream, chunked and with a content-length, and each cut in
        // half, all at once.
        let mut targets = Vec::new();
        for name in &names {
            for mode in ["chunked", "length"] {
                targets.push(format!("/s/{name}?mode={mode}"));
                targets.push(format!("/cut/{name}?mode={mode}"));
                targets.push(format!("/cutmid/{name}?mode={mode}"));
            }
        }
        let tasks: Vec<_> = targets
            .iter()
            .map(|t| {
                let t = t.clone();
                tokio::spawn(async move { request(addr, "GET", &t, b"").await })
            })
            .collect();
        let mut lead_min = Duration::MAX;
        let mut ttfe_max = Duration::ZERO;
        let mut latencies = Vec::new();
        let mut timed = 0;
        for (target, task) in targets.iter().zip(tasks) {
            let got = task.await.expect("request task");
            let name = target.split('/').nth(2).and_then(|n| n.split('?').next()).unwrap_or_default();
            let sent = upstream.sent.lock().expect("sent")[target];
            if target.starts_with("/cut/") {
                // Cut between frames: the repair's RUN_ERROR.
                assert_rewritten(target, &got, &want_cut[name]);
                assert!(got.body.ends_with(TRUNCATED), "{target}: {}", show(&got.body));
                continue;
            }
            if target.starts_with("/cutmid/") {
                // Cut inside a frame: what the gateway makes of it offline
                // (a RUN_ERROR too, its code by what the cut frame reads as).
                assert_rewritten(target, &got, &want_cutmid[name]);
                assert!(
                    got.body.ends_with(TRUNCATED) || got.body.ends_with(VIOLATION),
                    "{target}: {}",
                    show(&got.body)
                );
                continue;
            }
            assert_rewritten(target, &got, &want[name]);
            if name == violating {
                assert!(got.body.ends_with(VIOLATION), "{target}: {}", show(&got.body));
            }
            // The first event before the upstream's last byte, where the
            // first block ends before the upstream's last write starts.
            let first_block = first_block_end(&upstream.streams[name]);
            let (first, ttfe) = got.first_chunk.expect("a first chunk");
            // What the proxy adds: from the upstream's write that completed
            // the first block to the client's first chunk.
            let written = sent.first_block_sent.expect("the first block's write");
            latencies.push(first.saturating_duration_since(written));
            if first_block <= sent.last_write_at {
                assert!(
                    first < sent.last_byte,
                    "{target}: the first event came {:?} after the upstream's last byte",
                    first - sent.last_byte
                );
                let lead = sent.last_byte - first;
                eprintln!(
                    "{target}: first event after {:.2} ms, {:.1} ms before the upstream's last byte",
                    ttfe.as_secs_f64() * 1e3,
                    lead.as_secs_f64() * 1e3
                );
                lead_min = lead_min.min(lead);
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
             ({} at once)",
            ms(ttfe_max),
            ms(lead_min),
            ms(latencies[latencies.len() / 2]),
            ms(latencies[latencies.len() - 1]),
            latencies.len(),
            targets.len()
        );

        // One request alone.
        let lone = format!("/s/{}?mode=chunked&alone", names[0]);
        let got = request(addr, "GET", &lone, b"").await;
        assert_rewritten(&lone, &got, &want[&names[0]]);
        let (first, ttfe) = got.first_chunk.expect("a first chunk");
        let sent = upstream.sent.lock().expect("sent")[&lone];
        let written = sent.first_block_sent.expect("the first block's write");
        eprintln!(
            "alone: first event {:.2} ms after the request, {:.2} ms after the upstream wrote it",
            ms(ttfe),
            ms(first.saturating_duration_since(written))
        );

        // Not SSE: untouched, and the request forwarded as it was sent.
        let post_body = b"{\"question\":\"weather?\"}";
        let got = request(addr, "POST", "/json?x=1&y=2", post_body).await;
        let json = echo_json("POST", "/json?x=1&y=2", "identity", post_body.len());
        assert_eq!(got.status, 200);
        assert_eq!(got.body, json.as_bytes(), "the JSON passes through untouched");
        assert_eq!(header(&got.headers, "content-type"), Some("application/json"));
        assert_eq!(header(&got.headers, "content-length"), Some(json.len().to_string().as_str()));
        assert_eq!(header(&got.headers, "x-upstream"), Some("yes"));
        assert_eq!(header(&got.headers, "cache-control"), None);

        // A compressed event stream: untouched too.
        let got = request(addr, "GET", "/gzip", b"").await;
        assert_eq!(got.status, 200);
        assert_eq!(got.body, FAKE_GZIP, "a compressed stream passes through untouched");
        assert_eq!(header(&got.headers, "content-encoding"), Some("gzip"));
        assert_eq!(header(&got.headers, "cache-control"), None);

        // An upstream that fails: 502.
        let got = request(addr, "GET", "/reset", b"").await;
        assert_eq!(got.status, 502, "a failing upstream");

        // A block larger than the proxy's buffers goes out piece by piece
        // ahead of its verdict, and the body is still the gateway's.
        let got = request(addr, "GET", "/s/esc-long-delta.sse", b"").await;
        assert_rewritten("a block over --buffer", &got, &want_large);
        assert!(got.body == large_stream, "nothing to change in it");

        // The other policy, and keep-alives between frames (this proxy
        // pings after 100 ms: also in the upstream's pause before its last
        // write).
        let got = request(other_addr, "GET", &format!("/s/{violating}"), b"").await;
        let (got, _) = without_pings(got, &want_violating_drop);
        assert_rewritten("drop, close-open", &got, &want_violating_drop);
        let cut = format!("/cut/{}", names[0]);
        let got = request(other_addr, "GET", &cut, b"").await;
        let (got, _) = without_pings(got, &want_cut_close);
        assert_rewritten("cut, close-open", &got, &want_cut_close);
        assert!(got.body.ends_with(TRUNCATED));
        let got = request(other_addr, "GET", &format!("/slow/{slow}"), b"").await;
        let (got, pings) = without_pings(got, &want_slow);
        assert!(pings >= 2, "{pings} keep-alives in a 450 ms pause at 100 ms");
        assert_rewritten("keep-alives", &got, &want_slow);
        eprintln!("{pings} keep-alives in a 450 ms pause");
    });

    // One stats line per rewritten response (written as it ends).
    let rewritten = 6 * names.len() + 2;
    let deadline = Instant::now() + Duration::from_secs(5);
    let log = loop {
        let log = std::fs::read_to_string(&proxy.log).expect("proxy log");
        let lines = log.lines().filter(|l| l.contains("\"rewritten\":")).count();
        if lines >= rewritten || Instant::now() > deadline {
            break log;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stats: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"rewritten\":"))
        .collect();
    assert_eq!(stats.len(), rewritten, "stats lines:\n{log}");
    assert!(stats.iter().all(|l| l.starts_with("{\"bytes_in\":")));
    let cut = stats
        .iter()
        .find(|l| l.contains("\"path\":\"/cut/"))
        .expect("a cut stream's stats");
    assert!(!cut.contains("\"upstream_error\":null"), "{cut}");
    assert!(
        log.lines()
            .filter(|l| l.contains("\"passed_through\":"))
            .count()
            == 2,
        "{log}"
    );
    let large_stats = stats
        .iter()
        .find(|l| l.contains(large))
        .expect("the large block's stats");
    assert!(large_stats.contains("\"error\":null"), "{large_stats}");
    runtime.shutdown_timeout(Duration::from_secs(1));
    drop((proxy, other));
    let elapsed = started.elapsed();
    eprintln!("after the build: {:.1} s", elapsed.as_secs_f64());
    assert!(
        elapsed < Duration::from_secs(60),
        "the test took {elapsed:?}"
    );
}
