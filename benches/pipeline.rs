//! Throughput of the pipeline and of baselines, in one benchmark group per
//! stream so criterion prints them side by side. Run `cargo bench --bench
//! pipeline`; docs/performance.md quotes one run.
//!
//! Streams (generated into `target/bench-streams/` by
//! `scripts/gen_stream.py` on first use, never committed):
//! - `mix-1mb`: the shared 1 MB mixed stream (`--size 1MB --seed 1`);
//! - `mix-10mb`: its 10 MB sibling (`--size 10MB --seed 10`);
//! - `text-5mb`: an LLM token stream (`--profile text --size 5MB --seed 5`).
//!
//! Rows: framing only (`memchr` for `\n\n` as the floor, our framer),
//! framing + decoding, the full pipeline in both dialects, and, on frames
//! split with `memchr` as they run, `serde_json` validating (`IgnoredAny`),
//! building a `Value`, and `ag-ui-core` 0.1.0 decoding its typed `Event` (it
//! fails most frames of these streams: ids must be UUIDs and it predates
//! REASONING_*). Every row starts from the same bytes.

use std::hint::black_box;

use agui_stream::sse::Framer;
use agui_stream::{Config, Dialect, Event, FrameInfo, Pipeline, decode, json::Limits};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

mod common;
use common::{payloads, split_frames, streams};

fn run_pipeline(stream: &[u8], dialect: Dialect, buf: &mut [u8]) -> u64 {
    let mut pipeline = Pipeline::new(buf, Config::new().dialect(dialect));
    let mut n = 0u64;
    let mut sink = |ev: &Event<'_>, _: &FrameInfo| {
        black_box(ev.event_type());
        n += 1;
    };
    for piece in stream.chunks(65536) {
        pipeline.push(piece, &mut sink).expect("valid stream");
    }
    pipeline.finish(&mut sink).expect("valid stream");
    n
}

fn run_framer(stream: &[u8], buf: &mut [u8]) -> u64 {
    let mut framer = Framer::new(buf);
    let mut n = 0u64;
    for piece in stream.chunks(65536) {
        let mut pos = 0;
        while let Some(frame) = framer.feed(piece, &mut pos).expect("fits") {
            black_box(frame.payload);
            n += 1;
        }
    }
    n
}

fn run_decode(stream: &[u8], buf: &mut [u8]) -> u64 {
    let mut framer = Framer::new(buf);
    let mut n = 0u64;
    for piece in stream.chunks(65536) {
        let mut pos = 0;
        while let Some(frame) = framer.feed(piece, &mut pos).expect("fits") {
            if let Ok(Some(ev)) = decode(frame.payload, Dialect::V1, Limits::new()) {
                black_box(ev.event_type());
                n += 1;
            }
        }
    }
    n
}

fn throughput(c: &mut Criterion) {
    let mut buf = vec![0u8; 1 << 20];
    for (name, stream) in streams() {
        assert!(
            split_frames(&stream).eq(payloads(&stream, &mut buf).iter().map(Vec::as_slice)),
            "{name}: the baselines' framing must find the same payloads"
        );
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes(stream.len() as u64));
        if stream.len() > 4 << 20 {
            g.sample_size(20);
        }
        g.bench_function("framing-floor: memchr \\n\\n", |b| {
            b.iter(|| memchr::memmem::find_iter(black_box(&stream), b"\n\n").count())
        });
        g.bench_function("agui-stream: framing", |b| {
            b.iter(|| run_framer(black_box(&stream), &mut buf))
        });
        g.bench_function("agui-stream: framing+decode", |b| {
            b.iter(|| run_decode(black_box(&stream), &mut buf))
        });
        g.bench_function("agui-stream: pipeline v1", |b| {
            b.iter(|| run_pipeline(black_box(&stream), Dialect::V1, &mut buf))
        });
        g.bench_function("agui-stream: pipeline v0", |b| {
            b.iter(|| run_pipeline(black_box(&stream), Dialect::V0, &mut buf))
        });
        g.bench_function("serde_json: IgnoredAny", |b| {
            b.iter(|| {
                split_frames(black_box(&stream))
                    .filter(|p| serde_json::from_slice::<serde::de::IgnoredAny>(p).is_ok())
                    .count()
            })
        });
        g.bench_function("serde_json: Value", |b| {
            b.iter(|| {
                split_frames(black_box(&stream))
                    .filter(|p| serde_json::from_slice::<serde_json::Value>(p).is_ok())
                    .count()
            })
        });
        g.bench_function("ag-ui-core 0.1: typed Event", |b| {
            b.iter(|| {
                split_frames(black_box(&stream))
                    .filter(|p| serde_json::from_slice::<ag_ui_core::event::Event>(p).is_ok())
                    .count()
            })
        });
        g.finish();
    }
}

/// Per-event cost with 1, 16 and 32 (the default capacity) tool calls open:
/// it must not grow with the number of open ids.
fn open_ids(c: &mut Criterion) {
    let mut g = c.benchmark_group("open tool calls");
    let mut buf = vec![0u8; 1 << 16];
    for open in [1usize, 16, 32] {
        let mut s =
            String::from("data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n");
        for i in 0..open {
            s += &format!(
                "data: {{\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"call-{i}\",\"toolCallName\":\"f\"}}\n\n"
            );
        }
        let events = 10_000;
        for k in 0..events {
            let id = (k * 7) % open;
            s += &format!(
                "data: {{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"call-{id}\",\"delta\":\"x\"}}\n\n"
            );
        }
        for i in 0..open {
            s += &format!("data: {{\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"call-{i}\"}}\n\n");
        }
        s += "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
        g.throughput(Throughput::Elements(events as u64));
        g.bench_with_input(
            BenchmarkId::from_parameter(open),
            s.as_bytes(),
            |b, stream| b.iter(|| run_pipeline(black_box(stream), Dialect::V1, &mut buf)),
        );
    }
    g.finish();
}

criterion_group!(benches, throughput, open_ids);
criterion_main!(benches);
