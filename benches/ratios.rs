//! Throughput ratios from rows timed in interleaved rounds.
//!
//! Rows timed one after another drift by 20–50% on small VMs, so this
//! harness times every row once per round, in an order rotated each round,
//! and reports for each comparison the median of the per-round ratios and
//! their range. Run
//!
//! ```text
//! cargo bench --bench ratios [-- --rounds N] [--stream NAME]... [--only ROW]
//! ```
//!
//! Every row reads the same bytes (the streams of `benches/common`). With
//! `--once --only ROW` it runs the selected rows once without timing, for a
//! profiler: `valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect='*run_once*' target/release/deps/ratios-* --once ...`
//! counts only that row.

use std::hint::black_box;
use std::time::Instant;

use agui_stream::guard::{Action, Detector, Rule, Rules};
use agui_stream::rewrite::{GuardLanes, Options, Rewriter};
use agui_stream::{Config, Dialect, Event, FrameInfo, Pipeline};

mod common;
use common::{payloads, split_frames, streams};

/// Streams the 10,000-stream row keeps open at once.
const MANY: usize = 10_000;
/// The frame buffer of every row that pushes in pieces.
const PIECE_BUFFER: usize = 16 << 10;

fn count_sink(n: &mut u64) -> impl FnMut(&Event<'_>, &FrameInfo) + '_ {
    move |ev: &Event<'_>, _: &FrameInfo| {
        black_box(ev.event_type());
        *n += 1;
    }
}

/// The pipeline over `stream` pushed in `piece`-byte pushes.
fn pipeline(stream: &[u8], dialect: Dialect, piece: usize, buf: &mut [u8]) -> u64 {
    let mut p = Pipeline::new(buf, Config::new().dialect(dialect));
    let mut n = 0;
    let mut sink = count_sink(&mut n);
    for chunk in stream.chunks(piece) {
        p.push(chunk, &mut sink).expect("valid stream");
    }
    p.finish(&mut sink).expect("valid stream");
    drop(sink);
    n
}

/// The gateway rewriter with default options over `stream` in 64 KiB
/// pushes, into a `Vec` drained after every push (as `http_proxy` does);
/// with `rules`, guarding text.
fn gateway(
    stream: &[u8],
    rules: Option<&Rules<'_>>,
    frames: &mut [u8],
    raw: &mut [u8],
    out: &mut Vec<u8>,
) -> u64 {
    let mut lanes = rules.map(GuardLanes::new);
    let mut r = Rewriter::new(frames, raw, Config::new(), Options::new());
    if let Some(lanes) = lanes.as_mut() {
        r.guard(lanes);
    }
    let mut written = 0;
    for chunk in stream.chunks(64 << 10) {
        out.clear();
        r.push(chunk, out).expect("rewrites");
        written += out.len() as u64;
        black_box(&out);
    }
    out.clear();
    r.finish(out).expect("finishes");
    written + out.len() as u64
}

/// The guard rules of the guarded row: `email`, `credit_card` and ten
/// literals, all masking.
fn guard_rules() -> Vec<Rule<'static>> {
    let mut rules = vec![
        Rule::builtin(Detector::Email, Action::Mask),
        Rule::builtin(Detector::CreditCard, Action::Mask),
    ];
    for literal in [
        "Project Falcon",
        "internal only",
        "confidential",
        "secret plan",
        "password",
        "api_key",
        "do not share",
        "classified",
        "Acme Corp",
        "tiger team",
    ] {
        rules.push(Rule::literal(literal, Action::Mask).ignore_case());
    }
    rules
}

fn ignored_any(stream: &[u8]) -> u64 {
    split_frames(stream)
        .filter(|p| serde_json::from_slice::<serde::de::IgnoredAny>(p).is_ok())
        .count() as u64
}

/// `MANY` pipelines over the same stream, pushed round-robin in 1,460-byte
/// pieces, each at its own position (staggered evenly over the stream when
/// the row is set up, which pushes `MANY` half streams), so both their
/// state and their input are cold. One call pushes one stream's worth of
/// bytes; a pipeline that reaches the end is finished and started again.
struct ManyStreams {
    streams: Vec<(Pipeline<'static>, usize)>,
    next: usize,
}

impl ManyStreams {
    fn new(stream: &[u8]) -> Self {
        let pieces = stream.len().div_ceil(1460);
        let mut n = 0;
        let mut sink = count_sink(&mut n);
        let streams = (0..MANY)
            .map(|s| {
                let mut p = Self::fresh();
                let at = s * pieces / MANY;
                p.push(&stream[..at * 1460], &mut sink)
                    .expect("valid stream");
                (p, at)
            })
            .collect();
        ManyStreams { streams, next: 0 }
    }

    fn fresh() -> Pipeline<'static> {
        // A new buffer per pipeline started: a few MB over a bench run.
        let buf: &'static mut [u8] = Box::leak(vec![0u8; PIECE_BUFFER].into_boxed_slice());
        Pipeline::new(buf, Config::new())
    }

    fn run(&mut self, stream: &[u8]) -> u64 {
        let pieces = stream.len().div_ceil(1460);
        let mut n = 0;
        let mut sink = count_sink(&mut n);
        let mut budget = stream.len();
        while budget > 0 {
            let (p, at) = &mut self.streams[self.next];
            let start = *at * 1460;
            let chunk = &stream[start..(start + 1460).min(stream.len())];
            p.push(chunk, &mut sink).expect("valid stream");
            budget = budget.saturating_sub(chunk.len());
            *at += 1;
            if *at == pieces {
                p.finish(&mut sink).expect("valid stream");
                *p = Self::fresh();
                *at = 0;
            }
            self.next = (self.next + 1) % MANY;
        }
        drop(sink);
        n
    }
}

struct Row<'a> {
    name: &'static str,
    run: Box<dyn FnMut() -> u64 + 'a>,
    secs: Vec<f64>,
}

impl<'a> Row<'a> {
    fn new(name: &'static str, run: Box<dyn FnMut() -> u64 + 'a>) -> Self {
        Row {
            name,
            run,
            secs: Vec::new(),
        }
    }
}

/// Runs one row once (the symbol a profiler toggles on).
#[inline(never)]
fn run_once(row: &mut Row<'_>) -> u64 {
    (row.run)()
}

struct Args {
    rounds: usize,
    streams: Vec<String>,
    only: Vec<String>,
    once: bool,
}

fn args() -> Args {
    let mut a = Args {
        rounds: 15,
        streams: Vec::new(),
        only: Vec::new(),
        once: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--rounds" => a.rounds = it.next().and_then(|v| v.parse().ok()).expect("--rounds N"),
            "--stream" => a.streams.push(it.next().expect("--stream NAME")),
            "--only" => a.only.push(it.next().expect("--only ROW")),
            "--once" => a.once = true,
            // `cargo bench` passes `--bench`.
            _ => {}
        }
    }
    a
}

fn median_range(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// A `RunAgentInput` body of about 1 MB: a history of 120 turns, each a
/// user message (text and a 2 KB base64 image), an assistant's tool call,
/// and a 6 KB tool result; four tools.
fn request_body() -> Vec<u8> {
    let image = "iVBORw0KGgo".repeat(190);
    let result = "{\\\"rows\\\":[1,2,3],\\\"text\\\":\\\"".to_owned()
        + &"lorem ipsum ".repeat(500)
        + "\\\"}";
    let mut messages = Vec::new();
    for i in 0..120 {
        messages.push(format!(
            r#"{{"id":"u{i}","role":"user","content":[{{"type":"text","text":"What does the chart in step {i} show?"}},{{"type":"image","source":{{"type":"data","value":"{image}","mimeType":"image/png"}}}}]}}"#
        ));
        messages.push(format!(
            r#"{{"id":"a{i}","role":"assistant","content":"Looking it up.","toolCalls":[{{"id":"c{i}","type":"function","function":{{"name":"query","arguments":"{{\"step\":{i}}}"}}}}]}}"#
        ));
        messages.push(format!(
            r#"{{"id":"t{i}","role":"tool","toolCallId":"c{i}","content":"{result}"}}"#
        ));
    }
    let tools: Vec<String> = ["query", "search", "get_weather", "shell"]
        .iter()
        .map(|n| {
            format!(
                r#"{{"name":"{n}","description":"the {n} tool","parameters":{{"type":"object","properties":{{"q":{{"type":"string"}}}}}}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"threadId":"thread-1","runId":"run-1","state":{{"step":3}},"messages":[{}],"tools":[{}],"context":[],"forwardedProps":{{}}}}"#,
        messages.join(","),
        tools.join(",")
    )
    .into_bytes()
}

/// The request checker over `body` in `piece`-byte pushes.
fn check_request(body: &[u8], piece: usize, buf: &mut [u8]) -> u64 {
    let mut c = agui_stream::RequestChecker::new(buf, Dialect::V1);
    for chunk in body.chunks(piece) {
        c.push(chunk).expect("valid body");
    }
    c.finish().expect("valid body");
    body.len() as u64
}

/// The gateway's request side (a tool denied) over `body` in 64 KiB
/// pushes, into a `Vec` drained after every push.
fn request_gateway(body: &[u8], check: &mut [u8], hold: &mut [u8], out: &mut Vec<u8>) -> u64 {
    let mut r = agui_stream::rewrite::RequestRewriter::new(check, hold, Dialect::V1);
    r.deny_tool("shell").expect("a name");
    let mut written = 0;
    for chunk in body.chunks(64 << 10) {
        out.clear();
        r.push(chunk, out).expect("valid body");
        written += out.len() as u64;
    }
    out.clear();
    r.finish(out).expect("valid body");
    written + out.len() as u64
}

/// The request side's rows, over [`request_body`], as `main` times the
/// streams' (`--stream request`).
fn requests(args: &Args) {
    let body = request_body();
    assert!(serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_ok());
    let b = &body[..];
    let (mut small, mut large) = (vec![0u8; 16 << 10], vec![0u8; 2 << 20]);
    let (mut check, mut hold, mut out) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10], Vec::new());
    let mut rows: Vec<Row<'_>> = vec![
        Row::new(
            "serde_json IgnoredAny",
            Box::new(move || u64::from(serde_json::from_slice::<serde::de::IgnoredAny>(b).is_ok())),
        ),
        Row::new(
            "checker one push, 2 MiB buffer",
            Box::new(|| check_request(b, usize::MAX, &mut large)),
        ),
        Row::new(
            "checker 1460-byte pushes, 16 KiB",
            Box::new(|| check_request(b, 1460, &mut small)),
        ),
        Row::new(
            "request gateway 64 KiB pushes",
            Box::new(|| request_gateway(b, &mut check, &mut hold, &mut out)),
        ),
    ];
    time_rows(
        "request (a 1 MB RunAgentInput history)",
        body.len(),
        &mut rows,
        args,
        &[
            ("checker one push, 2 MiB buffer", "serde_json IgnoredAny"),
            ("checker 1460-byte pushes, 16 KiB", "serde_json IgnoredAny"),
            ("request gateway 64 KiB pushes", "serde_json IgnoredAny"),
        ],
    );
}

/// Times `rows` in interleaved rounds over `len` bytes and prints their
/// MB/s and the `compare` ratios.
fn time_rows(
    name: &str,
    len: usize,
    rows: &mut Vec<Row<'_>>,
    args: &Args,
    compare: &[(&str, &str)],
) {
    rows.retain(|r| args.only.is_empty() || args.only.iter().any(|o| r.name == o));
    if args.once {
        for row in rows.iter_mut() {
            black_box(run_once(row));
        }
        return;
    }
    // Each timing reads at least 8 MB, so a round is not noise.
    let reps = (8usize << 20).div_ceil(len);
    for row in rows.iter_mut() {
        black_box(run_once(row)); // warm-up (and the 10,000 streams' setup)
    }
    for round in 0..args.rounds {
        let k = rows.len();
        for i in 0..k {
            let row = &mut rows[(i + round) % k];
            let t = Instant::now();
            for _ in 0..reps {
                black_box(run_once(row));
            }
            row.secs.push(t.elapsed().as_secs_f64() / reps as f64);
        }
    }
    println!("\n{name} ({len} bytes, {} rounds)", args.rounds);
    let mbps = |row: &Row<'_>| {
        let (m, _, _) = median_range(row.secs.clone());
        len as f64 / m / 1e6
    };
    for row in rows.iter() {
        println!("  {:<34} {:>8.0} MB/s (median)", row.name, mbps(row));
    }
    let find = |n: &str| rows.iter().find(|r| r.name == n);
    for &(row, base) in compare {
        let (Some(r), Some(b)) = (find(row), find(base)) else {
            continue;
        };
        let ratios = r.secs.iter().zip(&b.secs).map(|(r, b)| b / r).collect();
        let (m, lo, hi) = median_range(ratios);
        println!("  {row} / {base}: {m:.2}x ({lo:.2}-{hi:.2})");
    }
}

fn main() {
    let args = args();
    let rules_list = guard_rules();
    let rules: Rules<'_> = Rules::new(&rules_list).expect("the rules compile");
    let rules = &rules;
    if args.streams.is_empty() || args.streams.iter().any(|s| s == "request") {
        requests(&args);
    }
    for (name, stream) in streams() {
        if !args.streams.is_empty() && !args.streams.iter().any(|s| s == name) {
            continue;
        }
        let mut whole = vec![0u8; 1 << 20];
        assert!(
            split_frames(&stream).eq(payloads(&stream, &mut whole).iter().map(Vec::as_slice)),
            "{name}: the baseline's framing must find the same payloads"
        );
        let (mut frames, mut raw) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
        let mut out = Vec::with_capacity(4 << 20);
        // Does the gateway have anything to change on this stream?
        let unchanged = {
            let mut r = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
            let mut all = Vec::with_capacity(stream.len());
            r.push(&stream, &mut all).expect("rewrites");
            r.finish(&mut all).expect("finishes");
            all == stream
        };
        let s = &stream[..];
        let (mut b1, mut b2) = (vec![0u8; 1 << 20], vec![0u8; 64 << 10]);
        let mut many = None::<ManyStreams>;
        let mut rows: Vec<Row<'_>> = Vec::new();
        rows.push(Row::new(
            "serde_json IgnoredAny",
            Box::new(move || ignored_any(s)),
        ));
        rows.push(Row::new(
            "v1 one push",
            Box::new(|| pipeline(s, Dialect::V1, usize::MAX, &mut whole)),
        ));
        rows.push(Row::new(
            "v0 one push",
            Box::new(|| pipeline(s, Dialect::V0, usize::MAX, &mut b1)),
        ));
        let mut b = vec![0u8; PIECE_BUFFER];
        rows.push(Row::new(
            "v1 1460-byte pushes",
            Box::new(move || pipeline(s, Dialect::V1, 1460, &mut b)),
        ));
        let mut b = vec![0u8; PIECE_BUFFER];
        rows.push(Row::new(
            "v1 64-byte pushes",
            Box::new(move || pipeline(s, Dialect::V1, 64, &mut b)),
        ));
        let mut b = vec![0u8; PIECE_BUFFER];
        rows.push(Row::new(
            "v1 7-byte pushes",
            Box::new(move || pipeline(s, Dialect::V1, 7, &mut b)),
        ));
        rows.push(Row::new(
            "v1 64 KiB pushes",
            Box::new(|| pipeline(s, Dialect::V1, 64 << 10, &mut b2)),
        ));
        rows.push(Row::new(
            "gateway 64 KiB pushes",
            Box::new(|| gateway(s, None, &mut frames, &mut raw, &mut out)),
        ));
        let (mut gframes, mut graw) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
        let mut gout = Vec::with_capacity(4 << 20);
        {
            // The guarded row rewrites the whole stream (no rule blocks, no
            // delta outgrows its buffers).
            let mut all = Vec::new();
            let mut lanes = GuardLanes::new(rules);
            let mut r = Rewriter::new(&mut gframes, &mut graw, Config::new(), Options::new());
            r.guard(&mut lanes);
            r.push(s, &mut all).expect("rewrites");
            r.finish(&mut all).expect("finishes");
            let matched: u64 = r
                .guard_lanes()
                .map_or(0, |l| l.counts().iter().map(|c| c.matched).sum());
            let all = String::from_utf8_lossy(&all);
            assert!(!all.contains("AGUI_STREAM_CAPACITY") && !all.contains("AGUI_GUARDRAIL"));
            eprintln!("{name}: guard rules matched {matched} times");
        }
        rows.push(Row::new(
            "gateway, guard rules",
            Box::new(move || gateway(s, Some(rules), &mut gframes, &mut graw, &mut gout)),
        ));
        // Staggering 10,000 streams costs 5,000 passes over the stream:
        // only the 1 MB one.
        if s.len() <= 2 << 20 {
            rows.push(Row::new(
                "10,000 streams 1460-byte pushes",
                Box::new(|| many.get_or_insert_with(|| ManyStreams::new(s)).run(s)),
            ));
        }
        let title = format!(
            "{name} (gateway output {} its input)",
            if unchanged { "equals" } else { "differs from" }
        );
        time_rows(
            &title,
            stream.len(),
            &mut rows,
            &args,
            &[
                ("v1 one push", "serde_json IgnoredAny"),
                ("v0 one push", "serde_json IgnoredAny"),
                ("v1 1460-byte pushes", "v1 one push"),
                ("v1 64-byte pushes", "v1 one push"),
                ("v1 7-byte pushes", "v1 one push"),
                ("gateway 64 KiB pushes", "v1 64 KiB pushes"),
                ("gateway, guard rules", "gateway 64 KiB pushes"),
                ("10,000 streams 1460-byte pushes", "v1 1460-byte pushes"),
            ],
        );
    }
}
