//! Helpers shared by the integration tests: the corpus, a driver that runs
//! the library pipeline the way the `agui check` tool does, and a reader for
//! the oracle's stored answers (`NAME.expected`, `NAME.expected-0.0.59`).
//! Beside it: [`canon`] (the oracle's canonical JSON, which the `agui`
//! tool includes too), [`record`] (the one recording `Sink` and the
//! runs built on it), [`hostile`] (the hostile streams, named, for other
//! hosts) and [`stand_ins`] (spilled events compared with whole ones, which
//! the fuzz targets include too).
//!
//! The corpus under `tests/corpus/` is a copy of `../shared/corpus` made by
//! `scripts/refresh-corpus.sh`; the tests never read `../shared`.

// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use std::cell::RefCell;
use std::fmt;
use std::path::{Path, PathBuf};

use agui_stream::{Config, Dialect, Error, FrameInfo, Minting, Pipeline, Summary};

pub mod canon;
pub mod hostile;
pub mod record;
pub mod stand_ins;

/// The pipeline's frame buffer: larger than any corpus frame.
pub const FRAME_BUFFER: usize = 1 << 20;

/// `tests/corpus`.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("corpus")
}

/// Every stream of the corpus (conformance, extra, real) and the hostile
/// ones, by name: what the rewriter's buffer tests run.
pub fn all_streams() -> Vec<(String, Vec<u8>)> {
    let mut streams = hostile::streams();
    for dir in [conformance_dir(), extra_dir(), real_dir()] {
        for path in sse_files(&dir) {
            streams.push((path.display().to_string(), read(&path)));
        }
    }
    streams
}

/// The rewriter's option sets those tests compare under: the defaults;
/// V0 dropping violations; tool-argument checks, close-open, canonical
/// form, passing violations.
pub fn rewrite_option_sets() -> [(Config, agui_stream::rewrite::Options); 3] {
    use agui_stream::rewrite::{OnViolation, Options};
    [
        (Config::new(), Options::new()),
        (
            Config::new().dialect(Dialect::V0),
            Options::new().on_violation(OnViolation::Drop),
        ),
        (
            Config::new().check_tool_args(true),
            Options::new()
                .close_open(true)
                .canonical(true)
                .on_violation(OnViolation::Pass),
        ),
    ]
}

/// `tests/corpus/conformance`.
pub fn conformance_dir() -> PathBuf {
    corpus_dir().join("conformance")
}

/// `tests/corpus/real`.
pub fn real_dir() -> PathBuf {
    corpus_dir().join("real")
}

/// The request bodies of `tests/corpus/requests`, by name, sorted.
pub fn request_bodies() -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir().join("requests");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".json")?
                .to_owned();
            Some((name, read(&path)))
        })
        .collect();
    out.sort();
    assert!(out.len() >= 199, "{} request bodies", out.len());
    out
}

/// The reference's answer to request body `name` in `dialect`: its stage
/// (`None`: valid) and message (`NAME.expected`, `NAME.expected-0.0.59`).
pub fn request_answer(name: &str, dialect: Dialect) -> (Option<String>, String) {
    let suffix = match dialect {
        Dialect::V1 => "expected",
        Dialect::V0 => "expected-0.0.59",
    };
    let path = corpus_dir().join(format!("requests/{name}.{suffix}"));
    let text = String::from_utf8(read(&path)).expect("an answer is UTF-8");
    let last = text.lines().last().expect("a result line");
    let v: serde_json::Value = serde_json::from_str(last).expect("a JSON result line");
    match v["result"].as_str() {
        Some("ok") => (None, String::new()),
        _ => (
            v["stage"].as_str().map(str::to_owned),
            v["message"].as_str().unwrap_or_default().to_owned(),
        ),
    }
}

/// Reads a file, with its path in the panic message.
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A small deterministic generator (xorshift), for seeded random cases.
pub struct Rng(pub u64);

impl Rng {
    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    /// Piece sizes covering `len`: tiny, packet-sized or large, at random.
    pub fn pieces(&mut self, len: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut left = len;
        while left > 0 {
            let max = [16, 1460, 40_000][self.below(3)];
            let n = (1 + self.below(max)).min(left);
            out.push(n);
            left -= n;
        }
        out
    }
}

/// A run's first and last events, for streams built by hand.
pub const RUN_STARTED: &str = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;
pub const RUN_FINISHED: &str = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#;

/// The frames of `events` (one-line JSON texts), one after another.
pub fn sse<S: AsRef<str>>(events: &[S]) -> Vec<u8> {
    events
        .iter()
        .flat_map(|e| format!("data: {}\n\n", e.as_ref()).into_bytes())
        .collect()
}

/// RUN_STARTED, the events `middle`, RUN_FINISHED, as frames.
pub fn run_of(middle: impl IntoIterator<Item = String>) -> Vec<u8> {
    let mut events = vec![RUN_STARTED.to_owned()];
    events.extend(middle);
    events.push(RUN_FINISHED.to_owned());
    sse(&events)
}

/// `event` (one JSON object) attributed to subagent `tag`.
pub fn tagged(event: &str, tag: &str) -> String {
    let body = event.strip_suffix('}').expect("an object");
    format!(r#"{body},"subagentRunId":"{tag}"}}"#)
}

/// TEXT_MESSAGE_START of message `id`.
pub fn start(id: &str) -> String {
    format!(r#"{{"type":"TEXT_MESSAGE_START","messageId":"{id}"}}"#)
}

/// TEXT_MESSAGE_END of message `id`.
pub fn end(id: &str) -> String {
    format!(r#"{{"type":"TEXT_MESSAGE_END","messageId":"{id}"}}"#)
}

/// The `.sse` files of a directory, sorted by name.
pub fn sse_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sse"))
        .collect();
    files.sort();
    files
}

/// One row of `MANIFEST.tsv`.
#[derive(Clone, Debug)]
pub struct Case {
    /// The directory holding the case's files.
    pub dir: PathBuf,
    /// File stem: `NAME.sse`, `NAME.expected`, `NAME.expected-0.0.59`.
    pub name: String,
    pub description: String,
    pub category: String,
    /// Expected verdict under 1.0.0 (`valid` / `invalid`).
    pub verdict: String,
    /// Expected verdict under 0.0.59.
    pub verdict_v0: String,
}

impl Case {
    pub fn sse_path(&self) -> PathBuf {
        self.dir.join(format!("{}.sse", self.name))
    }

    pub fn stream(&self) -> Vec<u8> {
        read(&self.sse_path())
    }

    /// The stored oracle answer for `dialect`.
    pub fn expected_path(&self, dialect: Dialect) -> PathBuf {
        let suffix = match dialect {
            Dialect::V1 => "expected",
            Dialect::V0 => "expected-0.0.59",
        };
        self.dir.join(format!("{}.{suffix}", self.name))
    }

    pub fn expected(&self, dialect: Dialect) -> Output {
        let path = self.expected_path(dialect);
        parse_expected(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// The conformance cases, in manifest order. Panics if the manifest is
/// malformed or names a case whose files are missing.
pub fn manifest() -> Vec<Case> {
    manifest_in(&conformance_dir())
}

/// `tests/corpus/extra`: cases written here for rules the shared corpus
/// does not exercise, with answers from the same oracle
/// (`scripts/refresh-corpus.sh` regenerates them).
pub fn extra_dir() -> PathBuf {
    corpus_dir().join("extra")
}

/// The cases of the manifest in `dir`.
pub fn manifest_in(dir: &Path) -> Vec<Case> {
    let path = dir.join("MANIFEST.tsv");
    let text = String::from_utf8(read(&path)).expect("MANIFEST.tsv is UTF-8");
    let mut lines = text.lines();
    let header = lines.next().expect("MANIFEST.tsv has a header");
    assert_eq!(
        header.split('\t').take(5).collect::<Vec<_>>(),
        [
            "name",
            "description",
            "category",
            "verdict",
            "verdict_0.0.59"
        ],
        "unexpected MANIFEST.tsv header"
    );
    let cases: Vec<Case> = lines
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert!(f.len() >= 5, "short MANIFEST.tsv row: {line:?}");
            Case {
                dir: dir.to_owned(),
                name: f[0].to_owned(),
                description: f[1].to_owned(),
                category: f[2].to_owned(),
                verdict: f[3].to_owned(),
                verdict_v0: f[4].to_owned(),
            }
        })
        .collect();
    for case in &cases {
        assert!(case.sse_path().is_file(), "{}: no .sse file", case.name);
    }
    cases
}

/// How a stream ended, as the oracle's result line says it (the message is
/// not compared).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Error { index: u64, stage: String },
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Ok => f.write_str(r#"{"result":"ok"}"#),
            Verdict::Error { index, stage } => {
                write!(
                    f,
                    r#"{{"result":"error","index":{index},"stage":"{stage}"}}"#
                )
            }
        }
    }
}

impl From<&Result<Summary, Error>> for Verdict {
    fn from(r: &Result<Summary, Error>) -> Self {
        match r {
            Ok(_) => Verdict::Ok,
            Err(e) => Verdict::Error {
                index: e.frame,
                stage: e.stage.reference_name().to_owned(),
            },
        }
    }
}

/// A run in the oracle's output form: canonical event lines, then the result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub events: Vec<String>,
    pub result: Verdict,
}

impl Output {
    /// The output as the oracle's lines (events, then the result line).
    pub fn lines(&self) -> Vec<String> {
        let mut lines = self.events.clone();
        lines.push(self.result.to_string());
        lines
    }

    /// `None` if equal, else a description of the first difference
    /// (`self` is the expectation).
    pub fn first_difference(&self, got: &Output) -> Option<String> {
        let n = self.events.len().max(got.events.len());
        for i in 0..n {
            let (a, b) = (self.events.get(i), got.events.get(i));
            if a != b {
                return Some(format!(
                    "event line {} differs (expected {} events, got {})\n    expected: {}\n    got:      {}",
                    i + 1,
                    self.events.len(),
                    got.events.len(),
                    a.map_or("<none>", |s| short(s)),
                    b.map_or("<none>", |s| short(s)),
                ));
            }
        }
        (self.result != got.result).then(|| {
            format!(
                "result differs\n    expected: {}\n    got:      {}",
                self.result, got.result
            )
        })
    }
}

fn short(s: &str) -> &str {
    match s.char_indices().nth(300) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Parses an oracle answer: event lines (canonicalised), then one result
/// line, of which `result`, `index` and `stage` are kept.
pub fn parse_expected(text: &[u8]) -> Result<Output, String> {
    let text = std::str::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut lines: Vec<&str> = text.split('\n').filter(|l| !l.trim().is_empty()).collect();
    let last = lines.pop().ok_or("no result line")?;
    let result = parse_result_line(last)?;
    let events = lines
        .iter()
        .enumerate()
        .map(|(i, l)| canon::canonicalize(l.as_bytes()).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Output { events, result })
}

/// `{"result":"ok"}` or `{"result":"error","index":N,"stage":"S",...}` (the
/// oracle writes the keys in this order, `message` last).
fn parse_result_line(line: &str) -> Result<Verdict, String> {
    let line = line.trim();
    if line == r#"{"result":"ok"}"# {
        return Ok(Verdict::Ok);
    }
    let bad = || format!("not a result line: {line}");
    let rest = line
        .strip_prefix(r#"{"result":"error","index":"#)
        .ok_or_else(bad)?;
    let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let index: u64 = rest[..digits].parse().map_err(|_| bad())?;
    let rest = rest[digits..]
        .strip_prefix(r#","stage":""#)
        .ok_or_else(bad)?;
    let stage = &rest[..rest.find('"').ok_or_else(bad)?];
    if !["sse", "schema", "chunks", "verify"].contains(&stage) {
        return Err(bad());
    }
    Ok(Verdict::Error {
        index,
        stage: stage.to_owned(),
    })
}

/// Everything a run produced, uncanonicalised: the encoder's bytes and the
/// frame of every event, and what `finish` (or the failing `push`) returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOutput {
    pub events: Vec<(Vec<u8>, FrameInfo)>,
    pub result: Result<Summary, Error>,
}

impl RawOutput {
    /// The oracle's form: events canonicalised, result reduced to a verdict.
    pub fn output(&self) -> Output {
        let events = self
            .events
            .iter()
            .map(|(json, _)| {
                canon::canonicalize(json).unwrap_or_else(|e| {
                    format!(
                        "<encoder wrote invalid JSON: {e}> {}",
                        String::from_utf8_lossy(json)
                    )
                })
            })
            .collect();
        Output {
            events,
            result: Verdict::from(&self.result),
        }
    }
}

/// Runs `pieces` (the stream, in push order) through a pipeline, then
/// `finish`. Stops at the first error, as the `check` tool does.
pub fn run_pieces<'a, I>(pieces: I, dialect: Dialect) -> RawOutput
where
    I: IntoIterator<Item = &'a [u8]>,
{
    thread_local! {
        // Reused: allocating and zeroing 1 MiB per run is a noticeable share
        // of the split tests' time. Its contents do not matter.
        static BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0u8; FRAME_BUFFER]);
    }
    BUFFER.with_borrow_mut(|buffer| run_in(buffer, pieces, dialect))
}

fn run_in<'a, I>(buffer: &mut [u8], pieces: I, dialect: Dialect) -> RawOutput
where
    I: IntoIterator<Item = &'a [u8]>,
{
    // The oracle's deterministic ids for translated THINKING_* events.
    let config = Config::new()
        .dialect(dialect)
        .minting(Minting::Deterministic);
    let mut pipeline = Pipeline::new(buffer, config);
    let mut sink = record::Recorder::new();
    let mut result = Ok(());
    for piece in pieces {
        // A sink that never pushes back has every byte read.
        result = pipeline.push(piece, &mut sink).map(|read| {
            assert_eq!(read, piece.len(), "bytes read");
        });
        if result.is_err() {
            break;
        }
    }
    let result = result.and_then(|_| pipeline.finish(&mut sink));
    let events = sink
        .into_events()
        .into_iter()
        .map(|(_, json, frame)| (json, frame))
        .collect();
    RawOutput { events, result }
}

/// Runs `stream` pushed in `chunk`-byte pieces.
pub fn run_raw(stream: &[u8], dialect: Dialect, chunk: usize) -> RawOutput {
    assert!(chunk > 0);
    run_pieces(stream.chunks(chunk), dialect)
}

/// Runs `stream` pushed in `chunk`-byte pieces, in the oracle's output form.
pub fn run(stream: &[u8], dialect: Dialect, chunk: usize) -> Output {
    run_raw(stream, dialect, chunk).output()
}

pub fn dialect_name(d: Dialect) -> &'static str {
    match d {
        Dialect::V1 => "V1 (1.0.0)",
        Dialect::V0 => "V0 (0.0.59)",
    }
}
