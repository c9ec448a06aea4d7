//! The benches' streams and the baselines' framing (shared by the
//! `pipeline` and `ratios` benches).

use std::path::PathBuf;
use std::process::Command;

/// A stream from `scripts/gen_stream.py`, generated once into
/// `target/bench-streams/`.
pub fn generated(name: &str, args: &[&str]) -> Vec<u8> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target").join("bench-streams");
    let path = dir.join(format!("{name}.sse"));
    if !path.exists() {
        std::fs::create_dir_all(&dir).expect("create target/bench-streams");
        let status = Command::new("python3")
            .arg(root.join("scripts").join("gen_stream.py"))
            .args(args)
            .arg("--out")
            .arg(&path)
            .status()
            .expect("run python3 scripts/gen_stream.py");
        assert!(status.success(), "gen_stream.py failed for {name}");
    }
    std::fs::read(&path).expect("read generated stream")
}

/// `mix-1mb` (the shared 1 MB mixed stream, `--size 1MB --seed 1`),
/// `text-5mb` (an LLM token stream) and `mix-10mb`.
pub fn streams() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "mix-1mb",
            generated("mix-1mb", &["--size", "1MB", "--seed", "1"]),
        ),
        (
            "text-5mb",
            generated(
                "text-5mb",
                &["--profile", "text", "--size", "5MB", "--seed", "5"],
            ),
        ),
        (
            "mix-10mb",
            generated("mix-10mb", &["--size", "10MB", "--seed", "10"]),
        ),
    ]
}

/// The frames a baseline parses, found as it runs: blocks split on `\n\n`
/// with `memchr`, the `data: ` prefix stripped, comment blocks skipped (the
/// generated streams have one data line per block; the benches check that
/// this yields exactly the payloads our framer finds).
pub fn split_frames(stream: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memmem::find_iter(stream, b"\n\n").filter_map(move |end| {
        let block = stream.get(start..end).unwrap_or_default();
        start = end + 2;
        // Other blocks are comments (keep-alives).
        block.strip_prefix(b"data: ")
    })
}

/// The payloads our framer finds in `stream` (pushed whole), to check
/// [`split_frames`] against.
pub fn payloads(stream: &[u8], buf: &mut [u8]) -> Vec<Vec<u8>> {
    let mut framer = agui_stream::sse::Framer::new(buf);
    let mut pos = 0;
    let mut out = Vec::new();
    while let Some(frame) = framer.feed(stream, &mut pos).expect("fits") {
        out.push(frame.payload.to_vec());
    }
    out
}
