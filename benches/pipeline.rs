//! Pipeline throughput (first numbers; the full comparison group comes with
//! the performance milestone). Run: `cargo bench --bench pipeline`.

use std::hint::black_box;

use agui_stream::{Config, Dialect, Event, FrameInfo, Pipeline};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Streams to measure: the bundled real captures, and the 1 MB mix stream
/// when the shared perf corpus is next to the repository.
fn streams() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut real = Vec::new();
    for name in [
        "agent-framework-tool-call",
        "langgraph-tool-call",
        "pydantic-ai-tool-call",
    ] {
        let path = format!(
            "{}/tests/corpus/real/{name}.sse",
            env!("CARGO_MANIFEST_DIR")
        );
        real.extend(std::fs::read(path).expect("bundled capture"));
    }
    out.push(("real-captures".to_owned(), real));
    let mix = format!("{}/../shared/perf/mix-1mb.sse", env!("CARGO_MANIFEST_DIR"));
    if let Ok(bytes) = std::fs::read(mix) {
        out.push(("mix-1mb".to_owned(), bytes));
    }
    out
}

fn run(stream: &[u8], dialect: Dialect, buf: &mut [u8]) -> u64 {
    let mut pipeline = Pipeline::new(buf, Config::new().dialect(dialect));
    let mut n = 0u64;
    let mut sink = |ev: &Event<'_>, _: &FrameInfo| {
        black_box(ev.event_type());
        n += 1;
    };
    for piece in stream.chunks(65536) {
        if pipeline.push(piece, &mut sink).is_err() {
            break;
        }
    }
    let _ = pipeline.finish(&mut sink);
    n
}

fn bench(c: &mut Criterion) {
    let mut buf = vec![0u8; 1 << 20];
    for (name, stream) in streams() {
        let mut g = c.benchmark_group(name.as_str());
        g.throughput(Throughput::Bytes(stream.len() as u64));
        g.bench_function("pipeline-v1", |b| {
            b.iter(|| run(black_box(&stream), Dialect::V1, &mut buf))
        });
        g.bench_function("pipeline-v0", |b| {
            b.iter(|| run(black_box(&stream), Dialect::V0, &mut buf))
        });
        g.bench_function("memchr-framing-floor", |b| {
            b.iter(|| memchr::memmem::find_iter(black_box(&stream), b"\n\n").count())
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
