//! `agui`: check AG-UI streams from the command line.
//!
//! ```text
//! agui check [--dialect v1|v0] [--chunk N] [--buffer N] [--check-tool-args] FILE|-
//! agui count [--dialect v1|v0] [--chunk N] [--buffer N] [--check-tool-args] FILE|-
//! agui gateway [--dialect v1|v0] [--on-violation stop|drop|pass] [--no-repair] [--close-open]
//!              [--canonical] [--drop-raw] [--deny-tool NAME]... [--max-event-bytes N]
//!              [--check-tool-args] [--chunk N] [--buffer N] FILE|-
//! ```
//!
//! `check` prints one canonical JSON line per event that passes, then a
//! result line — exactly the reference oracle's output contract
//! (`{"result":"ok"}` or `{"result":"error","index":N,"stage":"S","message":"M"}`).
//! The input is read as a stream and pushed in pieces of `--chunk` bytes
//! (default 65536): memory stays flat whatever its length. Any piece size
//! gives the same output. `--buffer` (default 16 MiB, at least
//! [`MIN_BUFFER`]) is the frame buffer, which holds a frame that spans two
//! pieces. `--check-tool-args` also checks that each tool call's arguments
//! are one JSON value by its TOOL_CALL_END (the reference does not). A
//! summary goes to stderr. `count` runs the same pipeline but
//! only counts events per type and prints the verdict. `gateway` writes
//! what [`Rewriter`] makes of the stream to stdout, and its statistics as
//! one JSON line to stderr.
//!
//! A frame larger than the buffer is checked as it streams past, and its
//! event's large members (those no rule reads) reach the sink as stand-ins
//! ([`FrameInfo::stand_ins`]). `check` prints the event whole: it keeps the
//! input since the last event and reads those members from the frame's
//! bytes there.

// The oracle's canonical form, shared with the tests.
#[path = "../../tests/support/canon.rs"]
mod canon;

use std::cell::{Cell, RefCell};
use std::io::{Read, Write as _};
use std::process::ExitCode;

use agui_stream::rewrite::{self, OnViolation, Rewriter};
use agui_stream::sse::Framer;
use agui_stream::{
    Config, Dialect, Event, FrameInfo, Pipeline, Stage, encode, json::Limits, legacy::Minting,
    verify::Entity,
};

struct Options {
    dialect: Dialect,
    chunk: usize,
    buffer: usize,
    check_tool_args: bool,
    file: String,
    /// `gateway` only.
    rewrite: rewrite::Options,
    deny_tools: Vec<String>,
}

/// The smallest `--buffer` accepted.
const MIN_BUFFER: usize = 64;

const USAGE: &str = "usage: agui check|count|gateway [OPTIONS] FILE|-   (agui COMMAND --help)";

fn help(cmd: &str) -> String {
    let common = "  --dialect v1|v0     protocol version (default v1)
  --chunk N           read and push N bytes at a time (default 65536)
  --buffer N          frame buffer bytes, at least 64 (default 16 MiB)
  --check-tool-args   check each tool call's arguments are one JSON value";
    match cmd {
        "check" => format!(
            "agui check [OPTIONS] FILE|-
  One canonical JSON line per event, then the reference oracle's result line.
{common}"
        ),
        "count" => format!(
            "agui count [OPTIONS] FILE|-
  Events per type and the verdict; the pipeline's time on stderr.
{common}"
        ),
        _ => format!(
            "agui gateway [OPTIONS] FILE|-
  The rewritten stream on stdout; statistics as one JSON line on stderr.
{common}
  --on-violation stop|drop|pass   (default stop: a final RUN_ERROR)
  --no-repair         leave a stream cut mid-run as it is
  --close-open        close what is open before a final RUN_ERROR
  --max-event-bytes N end with RUN_ERROR AGUI_EVENT_TOO_LARGE at a block over N bytes
  --canonical         re-encode every event in the dialect's stripped form
  --drop-raw          drop RAW events and rawEvent members
  --deny-tool NAME    remove every event of calls to tool NAME (repeatable)"
        ),
    }
}

enum Parsed {
    Run(String, Options),
    Help(String),
}

fn parse_args() -> Result<Parsed, lexopt::Error> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let cmd = match parser.next()? {
        Some(Value(cmd)) => cmd.string()?,
        Some(Long("help") | Short('h')) => return Ok(Parsed::Help(USAGE.to_owned())),
        Some(arg) => return Err(arg.unexpected()),
        None => return Err("missing command".into()),
    };
    if !matches!(cmd.as_str(), "check" | "count" | "gateway") {
        return Err(format!("unknown command {cmd:?}").into());
    }
    let gateway = cmd == "gateway";
    let mut o = Options {
        dialect: Dialect::V1,
        chunk: 65536,
        buffer: 16 << 20,
        check_tool_args: false,
        file: String::new(),
        rewrite: rewrite::Options::new(),
        deny_tools: Vec::new(),
    };
    while let Some(arg) = parser.next()? {
        match arg {
            Long("help") | Short('h') => return Ok(Parsed::Help(help(&cmd))),
            Long("dialect") => {
                o.dialect = match parser.value()?.string()?.as_str() {
                    "v1" | "V1" | "1.0.0" => Dialect::V1,
                    "v0" | "V0" | "0.0.59" => Dialect::V0,
                    d => return Err(format!("unknown dialect {d:?}").into()),
                }
            }
            Long("chunk") => {
                o.chunk = parser.value()?.parse()?;
                if o.chunk == 0 {
                    return Err("--chunk must be at least 1".into());
                }
            }
            Long("buffer") => {
                o.buffer = parser.value()?.parse()?;
                if o.buffer < MIN_BUFFER {
                    return Err(format!("--buffer must be at least {MIN_BUFFER}").into());
                }
            }
            Long("check-tool-args") => o.check_tool_args = true,
            Long("on-violation") if gateway => {
                let policy = match parser.value()?.string()?.as_str() {
                    "stop" => OnViolation::Stop,
                    "drop" => OnViolation::Drop,
                    "pass" => OnViolation::Pass,
                    p => return Err(format!("unknown --on-violation {p:?}").into()),
                };
                o.rewrite = o.rewrite.on_violation(policy);
            }
            Long("no-repair") if gateway => o.rewrite = o.rewrite.repair(false),
            Long("close-open") if gateway => o.rewrite = o.rewrite.close_open(true),
            Long("canonical") if gateway => o.rewrite = o.rewrite.canonical(true),
            Long("drop-raw") if gateway => o.rewrite = o.rewrite.drop_raw(true),
            Long("deny-tool") if gateway => o.deny_tools.push(parser.value()?.string()?),
            Long("max-event-bytes") if gateway => {
                o.rewrite = o.rewrite.max_event_bytes(parser.value()?.parse()?);
            }
            Value(file) if o.file.is_empty() => o.file = file.string()?,
            arg => return Err(arg.unexpected()),
        }
    }
    if o.file.is_empty() {
        return Err("missing FILE (or - for stdin)".into());
    }
    Ok(Parsed::Run(cmd, o))
}

/// Reads `file` (`-` for stdin) as a stream, handing `each` pieces of
/// `chunk` bytes (the last may be shorter) until it returns false.
fn read_pieces(
    file: &str,
    chunk: usize,
    mut each: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<()> {
    let mut input: Box<dyn Read> = if file == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(file)?)
    };
    let mut piece = vec![0u8; chunk];
    loop {
        let mut filled = 0;
        while filled < chunk {
            match input.read(&mut piece[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if filled == 0 || !each(&piece[..filled]) || filled < chunk {
            return Ok(());
        }
    }
}

/// The result line's message, as a JSON string.
fn json_string(s: &str) -> String {
    canon::js_string(&s.encode_utf16().collect::<Vec<u16>>())
}

fn check(o: &Options) -> std::io::Result<()> {
    let mut buffer = vec![0u8; o.buffer];
    // Minted ids follow the reference oracle's sequence so outputs compare.
    let config = Config::new()
        .dialect(o.dialect)
        .minting(Minting::Deterministic)
        .check_tool_args(o.check_tool_args);
    let mut pipeline = Pipeline::new(&mut buffer, config);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut json = Vec::new();
    let mut io_error = None;
    // The input since the last event (`window_at` is its stream offset):
    // where a spilled frame's members are read from.
    let window = RefCell::new(Vec::new());
    let (window_at, last_end) = (Cell::new(0u64), Cell::new(0u64));
    let mut sink = |ev: &Event<'_>, f: &FrameInfo| {
        json.clear();
        last_end.set(f.end);
        if encode(ev, &mut json).is_ok() {
            let line = if f.stand_ins.is_empty() {
                canon::canonicalize(&json)
            } else {
                let window = window.borrow();
                let at = |o: u64| (o.saturating_sub(window_at.get()) as usize).min(window.len());
                let whole = as_encoded(&payload_of(&window[at(f.start)..at(f.end)]), o.dialect);
                canon::canonicalize_with(&json, &whole, |name| f.stand_ins.covers(name))
            };
            let line = line.unwrap_or_else(|e| format!("<encoder bug: {e}>"));
            if let Err(e) = writeln!(out, "{line}") {
                io_error.get_or_insert(e);
            }
        }
    };
    let mut verdict = Ok(());
    read_pieces(&o.file, o.chunk, |piece| {
        window.borrow_mut().extend_from_slice(piece);
        verdict = pipeline.push(piece, &mut sink).map(drop);
        let drop = last_end.get().saturating_sub(window_at.get()) as usize;
        let mut w = window.borrow_mut();
        let drop = drop.min(w.len());
        w.drain(..drop);
        window_at.set(window_at.get() + drop as u64);
        verdict.is_ok()
    })?;
    let verdict = verdict.and_then(|_| pipeline.finish(&mut sink));
    if let Some(e) = io_error {
        return Err(e);
    }
    match verdict {
        Ok(summary) => {
            writeln!(out, "{{\"result\":\"ok\"}}")?;
            out.flush()?;
            report(&pipeline, &summary);
        }
        Err(e) => {
            let message = pipeline.message(&e).to_string();
            writeln!(
                out,
                "{{\"result\":\"error\",\"index\":{},\"stage\":\"{}\",\"message\":{}}}",
                e.frame,
                e.stage.reference_name(),
                json_string(&message)
            )?;
            out.flush()?;
            if e.is_capacity() {
                eprintln!("agui: capacity exceeded, not a protocol violation: {e}");
            }
        }
    }
    Ok(())
}

/// The payload of one SSE frame's bytes.
fn payload_of(frame: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; frame.len()];
    let mut framer = Framer::new(&mut buf);
    let mut pos = 0;
    if let Ok(Some(f)) = framer.feed(frame, &mut pos) {
        return f.payload.to_vec();
    }
    match framer.finish() {
        Ok(Some(f)) => f.payload.to_vec(),
        _ => Vec::new(),
    }
}

/// `payload` decoded and encoded again (as its members are written), or
/// as it is if it does not decode.
fn as_encoded(payload: &[u8], dialect: Dialect) -> Vec<u8> {
    let mut out = Vec::new();
    match agui_stream::decode(payload, dialect, Limits::new()) {
        Ok(Some(event)) if encode(&event, &mut out).is_ok() => out,
        _ => payload.to_vec(),
    }
}

/// The end-of-stream report, on stderr: what the reference does not say.
fn report(pipeline: &Pipeline, s: &agui_stream::Summary) {
    eprintln!(
        "agui: {} frames, {} events, {} bytes; run {:?}{}",
        s.frames,
        s.events,
        s.bytes,
        s.run,
        if s.is_complete() {
            "; complete"
        } else {
            "; INCOMPLETE"
        }
    );
    if s.unterminated_frame {
        eprintln!("agui:   the last frame was not terminated (stream cut?)");
    }
    let v = pipeline.verifier();
    for (kind, label) in [
        (Entity::TextMessage, "text messages"),
        (Entity::ToolCall, "tool calls"),
        (Entity::Step, "steps"),
        (Entity::ReasoningSpan, "reasoning spans"),
        (Entity::ReasoningMessage, "reasoning messages"),
        (Entity::Subagent, "subagents"),
    ] {
        let ids: Vec<String> = v.open_ids(kind).map(|id| id.to_string()).collect();
        if !ids.is_empty() {
            eprintln!("agui:   open {label}: {}", ids.join(", "));
        }
    }
    if s.open.chunk_lanes > 0 {
        eprintln!("agui:   chunk streams never closed: {}", s.open.chunk_lanes);
    }
    if s.open.thinking {
        eprintln!("agui:   a thinking step or message is still open");
    }
}

/// `count`: the full pipeline with a sink that only counts, for measuring
/// the whole-process cost against other tools.
fn count(o: &Options) -> std::io::Result<()> {
    let mut buffer = vec![0u8; o.buffer];
    let config = Config::new()
        .dialect(o.dialect)
        .check_tool_args(o.check_tool_args);
    let mut pipeline = Pipeline::new(&mut buffer, config);
    let mut counts = [0u64; agui_stream::EventType::ALL.len()];
    let mut sink = |ev: &Event<'_>, _: &FrameInfo| {
        if let Some(n) = counts.get_mut(ev.event_type() as usize) {
            *n += 1;
        }
    };
    let start = std::time::Instant::now();
    let mut bytes = 0usize;
    let mut verdict = Ok(());
    read_pieces(&o.file, o.chunk, |piece| {
        bytes += piece.len();
        verdict = pipeline.push(piece, &mut sink).map(drop);
        verdict.is_ok()
    })?;
    let verdict = verdict.and_then(|_| pipeline.finish(&mut sink));
    let elapsed = start.elapsed();
    for (ty, n) in agui_stream::EventType::ALL.iter().zip(counts) {
        if n > 0 {
            println!("{ty}\t{n}");
        }
    }
    match verdict {
        Ok(s) => println!("verdict\tok ({} frames, {} events)", s.frames, s.events),
        Err(e) => println!(
            "verdict\terror at frame {} ({}): {}",
            e.frame,
            e.stage.reference_name(),
            pipeline.message(&e)
        ),
    }
    let secs = elapsed.as_secs_f64();
    eprintln!(
        "agui: {} bytes in {:.1} ms: {:.0} MB/s",
        bytes,
        secs * 1e3,
        bytes as f64 / 1e6 / secs
    );
    Ok(())
}

/// `gateway`: the rewriter, from the input to stdout; its statistics as
/// one JSON line on stderr.
fn gateway(o: &Options) -> std::io::Result<()> {
    let (mut frames, mut raw) = (vec![0u8; o.buffer], vec![0u8; o.buffer]);
    let config = Config::new()
        .dialect(o.dialect)
        .minting(Minting::Deterministic)
        .check_tool_args(o.check_tool_args);
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, config, o.rewrite);
    for name in &o.deny_tools {
        rewriter
            .deny_tool(name)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    let stdout = std::io::stdout();
    let mut stdout = stdout.lock();
    let mut out = Vec::new();
    let mut failure = None;
    read_pieces(&o.file, o.chunk, |piece| {
        out.clear();
        match rewriter.push(piece, &mut out) {
            Ok(pushed) => {
                failure = stdout.write_all(&out).err().map(|e| e.to_string());
                failure.is_none() && !pushed.ended
            }
            Err(e) => {
                failure = Some(e.to_string());
                false
            }
        }
    })?;
    if failure.is_none() {
        out.clear();
        match rewriter.finish(&mut out) {
            Ok(_) => failure = stdout.write_all(&out).err().map(|e| e.to_string()),
            Err(e) => failure = Some(e.to_string()),
        }
    }
    stdout.flush()?;
    let s = rewriter.stats();
    let error = failure.map_or("null".to_owned(), |e| json_string(&e));
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
    let mut fields: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    // Per type and per stage, what is not zero.
    let by_type = |counts: &[u64]| {
        let items: Vec<String> = agui_stream::EventType::ALL
            .iter()
            .zip(counts)
            .filter(|(_, n)| **n > 0)
            .map(|(ty, n)| format!("\"{ty}\":{n}"))
            .collect();
        format!("{{{}}}", items.join(","))
    };
    fields.push(format!("\"events_in\":{}", by_type(&s.events_in)));
    fields.push(format!("\"events_out\":{}", by_type(&s.events_out)));
    let stages = [
        Stage::Sse,
        Stage::Json,
        Stage::Schema,
        Stage::Chunks,
        Stage::Verify,
        Stage::End,
    ];
    let by_stage: Vec<String> = stages
        .iter()
        .filter_map(|st| {
            let n = s.violations_by_stage[st.index()];
            (n > 0).then(|| format!("\"{st}\":{n}"))
        })
        .collect();
    fields.push(format!(
        "\"violations_by_stage\":{{{}}}",
        by_stage.join(",")
    ));
    eprintln!("{{{},\"error\":{error}}}", fields.join(","));
    Ok(())
}

fn main() -> ExitCode {
    let (cmd, options) = match parse_args() {
        Ok(Parsed::Run(cmd, options)) => (cmd, options),
        Ok(Parsed::Help(text)) => {
            println!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("agui: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let run = match cmd.as_str() {
        "check" => check(&options),
        "count" => count(&options),
        _ => gateway(&options),
    };
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agui: {e}");
            ExitCode::from(1)
        }
    }
}
