//! `agui`: check AG-UI streams from the command line.
//!
//! ```text
//! agui check [--dialect v1|v0] [--chunk N] [--buffer N] [--check-tool-args]
//!            [--strict-end] [--exit-zero] FILE|-
//! agui count [the same] FILE|-
//! agui input [--dialect v1|v0] [--buffer N] [--chunk N] [--exit-zero] FILE|-
//! agui gen [--dialect v1|v0] [--seed N] [--count N] [--violations] [--framing lf|any] DIR
//! agui gateway [--dialect v1|v0] [--on-violation stop|drop|pass] [--no-repair] [--close-open]
//!              [--max-event-bytes N] [--canonical] [--drop-raw] [--deny-tool NAME]...
//!              [--check-tool-args] [--strict-end] [--deterministic-ids]
//!              [--chunk N] [--buffer N] [--exit-zero] FILE|-
//! ```
//!
//! Installed with `cargo install --path examples/agui` from a clone (the
//! package `agui-cli`, binary `agui`), or run there with
//! `cargo run --release -p agui-cli -- check FILE`.
//!
//! `check` prints one canonical JSON line per event that passes, then a
//! result line — exactly the reference oracle's output contract
//! (`{"result":"ok"}` or `{"result":"error","index":N,"stage":"S","message":"M"}`).
//! The input is read as a stream and pushed in pieces of `--chunk` bytes
//! (default 65536): memory stays flat whatever its length. Any piece size
//! gives the same output. `--buffer` (default and most 16 MiB, at least
//! 64) is the frame buffer, which holds a frame that spans two pieces.
//! `--check-tool-args` also checks that each tool call's arguments are one
//! JSON value by its TOOL_CALL_END (the reference does not);
//! `--strict-end` makes a stream that ends with its run unfinished (or
//! anything open) an error of stage `end` (`Config::strict_end`). A
//! summary goes to stderr.
//! `input` checks a request body (the `RunAgentInput` JSON a client POSTs)
//! with [`RequestChecker`], pushed in `--chunk`-byte pieces through a
//! `--buffer`-byte buffer, and prints the reference oracle's request-mode
//! output: the parsed input as one canonical line and `{"result":"ok"}`, or
//! only the result line (`index` 0, stage `json` or `schema`; `capacity`
//! when a capacity ran out before a verdict). The canonical line is built
//! from the whole body, with the reference's transforms: 1.0.0 keeps
//! members it does not know, fills `tools` and `context` with `[]` when
//! absent and drops `state: null`; 0.0.59 strips what its schema does not
//! name, at every depth (as the V0 encoder writes `RUN_STARTED.input`).
//! `gen` writes `--count` generated streams (`agui_stream::generator`,
//! 2,048 input bytes each from a seeded xorshift, seeds `--seed`,
//! `--seed`+1, …) to DIR as `gen-SEED.sse`, each with its expected verdict
//! beside it in `gen-SEED.expected` (one line in the oracle's result-line
//! format; the message is rendered by this crate's pipeline, which must
//! agree with the generator on the frame and stage). `--violations` lets
//! about half of them carry one injected violation. Framing is drawn per
//! stream: `data:` with or without a space, `event:`/`id:`/`retry:` lines,
//! comments and keep-alives, an event over several `data:` lines, and a
//! closing `: agui-gen <hex>` comment with the generator's input; line
//! ends are LF with `--framing lf` (the default: the reference reads those
//! as this crate does), or also CRLF and CR with `any` (the verdict is
//! this crate's; the reference splits only on `\n\n`). Without
//! `--dialect`, each stream's dialect is drawn.
//! `count` runs the same pipeline but only counts events per type and
//! prints the verdict. `gateway` writes what the rewriter makes of the
//! stream to stdout, and its statistics as one JSON line to stderr; its
//! options are `http_proxy`'s and the proxy-wasm filter's
//! (`examples/shared/frontend.rs`), ids minted per run unless
//! `--deterministic-ids` asks for the reference oracle's sequence (`check`
//! always mints that); its `--strict-end` fails (exit 1) an input that
//! ends with its run unfinished, and leaves the output as it is (a cut run
//! is repaired).
//!
//! Exit status ([`Exit`]): 0 the stream is valid (`gateway`: no violation
//! found, whatever the policy made of one); 1 it is not (`check`/`count`:
//! the error verdict; `gateway`: at least one violation); 2 usage; 3 an
//! I/O error (the message names the file); 4 a capacity exceeded before a
//! verdict (`check`/`count`), or a rewriter that could not go on
//! (`gateway`). `--exit-zero` exits 0 whenever the verdict is printed
//! (statuses 1 and 4), as the reference oracle does.
//!
//! A frame larger than the buffer is checked as it streams past, and its
//! event's large members (those no rule reads) reach the sink as stand-ins
//! ([`FrameInfo::stand_ins`]). `check` prints the event whole: it keeps the
//! input since the last event and reads those members from the frame's
//! bytes there.

// The oracle's canonical form, shared with the tests.
#[path = "../../../tests/support/canon.rs"]
mod canon;
// The options every gateway front end shares.
#[path = "../../shared/frontend.rs"]
mod frontend;
// The buffer pool, for a held block's raw buffer.
#[path = "../../shared/pool.rs"]
mod pool;

use std::cell::{Cell, RefCell};
use std::io::{Read, Write as _};
use std::process::ExitCode;

use agui_stream::sse::Framer;
use agui_stream::{
    Dialect, Event, FrameInfo, Minting, Pipeline, RequestChecker, RequestErrorKind, encode,
    json::Limits, verify::Entity,
};

/// The exit statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exit {
    /// The stream is valid.
    Valid = 0,
    /// The stream is not (a gateway found a violation).
    Invalid = 1,
    /// The command line is wrong.
    Usage = 2,
    /// Reading the input or writing the output failed.
    Io = 3,
    /// A capacity was exceeded before a verdict; a rewriter could not go on.
    Capacity = 4,
}

struct Options {
    /// The options `gateway` shares with the other front ends (`check`
    /// and `count` read the dialect, buffer and tool-argument ones).
    gateway: frontend::Gateway,
    chunk: usize,
    file: String,
    exit_zero: bool,
    strict_end: bool,
}

/// What `check` and `count` take of the shared flags (`gateway` takes all
/// but `keepalive-ms`: it writes no keep-alives).
const COMMON: [&str; 3] = ["dialect", "buffer", "check-tool-args"];

const USAGE: &str = "usage: agui check|count|input|gateway [OPTIONS] FILE|-
       agui gen [OPTIONS] DIR   (agui COMMAND --help)";

fn help(cmd: &str) -> String {
    let gateway = cmd == "gateway";
    let mut text = match cmd {
        "check" => {
            "agui check [OPTIONS] FILE|-
  One canonical JSON line per event, then the reference oracle's result line."
        }
        "count" => {
            "agui count [OPTIONS] FILE|-
  Events per type and the verdict; the pipeline's time on stderr."
        }
        "input" => {
            "agui input [OPTIONS] FILE|-
  A request body (RunAgentInput): the parsed input as one canonical JSON line,
  then the reference oracle's result line."
        }
        _ => {
            "agui gateway [OPTIONS] FILE|-
  The rewritten stream on stdout; statistics as one JSON line on stderr."
        }
    }
    .to_owned();
    let line = |text: &mut String, name: String, help: &str| {
        text.push_str(&format!("\n  {name:<29} {help}"));
    };
    for f in frontend::FLAGS.iter().filter(|f| takes(cmd, f.name)) {
        let name = match f.value {
            Some(value) => format!("--{} {value}", f.name),
            None => format!("--{}", f.name),
        };
        let help = match f.name {
            "buffer" if gateway => "frame and raw buffer bytes each, 64 to 16 MiB (default 16 MiB)",
            "buffer" if cmd == "input" => {
                "the checker's buffer bytes, 64 to 16 MiB (default 16 MiB)"
            }
            "buffer" => "frame buffer bytes, 64 to 16 MiB (default 16 MiB)",
            _ => f.help,
        };
        line(&mut text, name, help);
    }
    if gateway || cmd == "input" {
        line(
            &mut text,
            "--config FILE".into(),
            "the gateway's JSON configuration (docs/gateway.md; flags override it)",
        );
    }
    line(
        &mut text,
        "--chunk N".into(),
        "read and push N bytes at a time (default 65536)",
    );
    if cmd != "input" {
        line(
            &mut text,
            "--strict-end".into(),
            if gateway {
                "exit 1 if the input ends with its run unfinished (the output is repaired as always)"
            } else {
                "a stream that ends with its run unfinished is an error (stage end)"
            },
        );
    }
    line(
        &mut text,
        "--exit-zero".into(),
        "exit 0 whatever the verdict (usage and I/O errors keep theirs)",
    );
    text.push_str(
        "\n  Exit status: 0 valid, 1 invalid (gateway: a violation found), 2 usage,
  3 I/O error, 4 a capacity exceeded before a verdict (gateway: the rewriter
  could not go on).",
    );
    text
}

/// `cmd` takes the shared flag `name`.
fn takes(cmd: &str, name: &str) -> bool {
    match cmd {
        "gateway" => !matches!(
            name,
            "keepalive-ms"
                | "no-request-check"
                | "max-request-bytes"
                | "request-path"
                | "buffer-budget"
        ),
        "input" => matches!(name, "dialect" | "buffer"),
        _ => COMMON.contains(&name),
    }
}

enum Parsed {
    Run(String, Box<Options>),
    Gen(GenArgs),
    Help(String),
}

/// `agui gen`'s options.
struct GenArgs {
    dialect: Option<Dialect>,
    seed: u64,
    count: u64,
    violations: bool,
    any_framing: bool,
    dir: String,
}

const GEN_HELP: &str = "agui gen [OPTIONS] DIR
  Generated streams (agui_stream::generator) with their expected verdicts:
  DIR/gen-SEED.sse and DIR/gen-SEED.expected.
  --dialect v1|v0               the dialect (default: drawn per stream)
  --seed N                      the first seed (default 1)
  --count N                     how many streams (default 100)
  --violations                  about half carry one injected violation
  --framing lf|any              LF line ends (default), or also CRLF and CR";

fn parse_gen(mut parser: lexopt::Parser) -> Result<Parsed, lexopt::Error> {
    use lexopt::prelude::*;
    let mut g = GenArgs {
        dialect: None,
        seed: 1,
        count: 100,
        violations: false,
        any_framing: false,
        dir: String::new(),
    };
    while let Some(arg) = parser.next()? {
        match arg {
            Long("help") | Short('h') => return Ok(Parsed::Help(GEN_HELP.to_owned())),
            Long("dialect") => {
                g.dialect = Some(
                    parser
                        .value()?
                        .string()?
                        .parse()
                        .map_err(|e| format!("--dialect: {e}"))?,
                )
            }
            Long("seed") => g.seed = parser.value()?.parse()?,
            Long("count") => g.count = parser.value()?.parse()?,
            Long("violations") => g.violations = true,
            Long("framing") => {
                g.any_framing = match parser.value()?.string()?.as_str() {
                    "lf" => false,
                    "any" => true,
                    other => return Err(format!("--framing {other:?}: lf or any").into()),
                }
            }
            Value(dir) if g.dir.is_empty() => g.dir = dir.string()?,
            arg => return Err(arg.unexpected()),
        }
    }
    if g.dir.is_empty() {
        return Err("missing DIR".into());
    }
    Ok(Parsed::Gen(g))
}

/// `agui gen`: the streams and their expected verdicts.
fn generate(g: &GenArgs) -> Result<Exit, IoError> {
    use agui_stream::EventType;
    use agui_stream::generator::{Expected, GenOptions, LineEnds, Reason, generate_with};
    use agui_stream::normalize::ChunkError;
    let failed = |what: String| move |error| IoError { what, error };
    std::fs::create_dir_all(&g.dir).map_err(failed(g.dir.clone()))?;
    let mut out = vec![0u8; 256 << 10];
    let mut disagreements = 0u64;
    // What the streams reach: event types written, and verdicts.
    let mut types = std::collections::BTreeSet::new();
    let mut reasons = std::collections::BTreeMap::<String, u64>::new();
    for seed in g.seed..g.seed.saturating_add(g.count) {
        // xorshift64*: the generator's input.
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let input: Vec<u8> = (0..2048)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
            })
            .collect();
        let mut options = GenOptions::new().violations(g.violations);
        if let Some(d) = g.dialect {
            options = options.dialect(d);
        }
        if !g.any_framing {
            // Comments, fields, split data lines: LF line ends only, as the
            // reference reads them.
            options = options.line_ends(LineEnds::Lf);
        }
        let generated = generate_with(&input, &mut out, options);
        let stream = &out[..generated.len];
        // The pipeline renders the verdict (and must agree).
        let mut buffer = vec![0u8; 1 << 20];
        let config = agui_stream::Config::new()
            .dialect(generated.dialect)
            .minting(Minting::Deterministic);
        let mut pipeline = Pipeline::new(&mut buffer, config);
        let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
        let verdict = pipeline
            .push(stream, &mut sink)
            .and_then(|_| pipeline.finish(&mut sink).map(drop));
        let line = match &verdict {
            Ok(()) if generated.expected.matches(None) => "{\"result\":\"ok\"}".to_owned(),
            Err(e) if generated.expected.matches(Some(e)) => {
                format!(
                    "{{\"result\":\"error\",\"index\":{},\"stage\":\"{}\",\"message\":{}}}",
                    e.frame,
                    e.stage.reference_name(),
                    json_string(&pipeline.message(e).to_string())
                )
            }
            got => {
                eprintln!(
                    "agui gen: seed {seed}: the generator expects {:?}, the pipeline says {got:?}",
                    generated.expected
                );
                disagreements += 1;
                continue;
            }
        };
        for ty in EventType::ALL {
            let needle = format!("\"type\":\"{}\"", ty.as_str());
            if stream.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                types.insert(ty.as_str());
            }
        }
        let reason = match generated.expected {
            Expected::Valid => "valid".to_owned(),
            Expected::Violation { reason, .. } => match reason {
                Reason::Chunk(ChunkError::Ambiguous { kind, .. }) => {
                    format!("Chunk(Ambiguous({kind:?}))")
                }
                other => format!("{other:?}"),
            },
        };
        *reasons.entry(reason).or_default() += 1;
        let name = format!("gen-{seed}");
        let path = std::path::Path::new(&g.dir).join(&name);
        let sse = path.with_extension("sse");
        std::fs::write(&sse, stream).map_err(failed(sse.display().to_string()))?;
        let expected = path.with_extension("expected");
        std::fs::write(&expected, format!("{line}\n"))
            .map_err(failed(expected.display().to_string()))?;
    }
    let valid = reasons.remove("valid").unwrap_or(0);
    eprintln!(
        "agui gen: {} streams in {} (seeds {}..{}): {valid} valid, {} invalid; \
         {} event types; {} reasons: {}",
        g.count - disagreements,
        g.dir,
        g.seed,
        g.seed.saturating_add(g.count),
        reasons.values().sum::<u64>(),
        types.len(),
        reasons.len(),
        reasons
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(if disagreements > 0 {
        Exit::Invalid
    } else {
        Exit::Valid
    })
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
    if cmd == "gen" {
        return parse_gen(parser);
    }
    if !matches!(cmd.as_str(), "check" | "count" | "input" | "gateway") {
        return Err(format!("unknown command {cmd:?}").into());
    }
    let mut o = Options {
        gateway: frontend::Gateway {
            buffer: frontend::MAX_BUFFER,
            ..frontend::Gateway::default()
        },
        chunk: 65536,
        file: String::new(),
        exit_zero: false,
        strict_end: false,
    };
    let mut config = None;
    let mut flags = Vec::new();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("help") | Short('h') => return Ok(Parsed::Help(help(&cmd))),
            Long("chunk") => {
                o.chunk = parser.value()?.parse()?;
                if o.chunk == 0 {
                    return Err("--chunk must be at least 1".into());
                }
            }
            Long("exit-zero") => o.exit_zero = true,
            Long("strict-end") if cmd != "input" => o.strict_end = true,
            Long("config") if cmd == "gateway" || cmd == "input" => {
                config = Some(parser.value()?.string()?);
            }
            Long(name) if takes(&cmd, name) && frontend::Gateway::flag(name).is_some() => {
                let name = name.to_owned();
                let takes_value = frontend::Gateway::flag(&name).is_some_and(|f| f.value.is_some());
                let value = if takes_value {
                    Some(parser.value()?.string()?)
                } else {
                    None
                };
                flags.push((name, value));
            }
            Value(file) if o.file.is_empty() => o.file = file.string()?,
            arg => return Err(arg.unexpected()),
        }
    }
    if o.file.is_empty() {
        return Err("missing FILE (or - for stdin)".into());
    }
    // The configuration file first, then the flags over it.
    if let Some(path) = config {
        let json = std::fs::read(&path).map_err(|e| format!("--config {path}: {e}"))?;
        o.gateway =
            frontend::Gateway::from_json(&json).map_err(|e| format!("--config {path}: {e}"))?;
    }
    for (name, value) in flags {
        o.gateway
            .set(&name, value.as_deref())
            .map_err(|e| format!("--{name}: {e}"))?;
    }
    Ok(Parsed::Run(cmd, Box::new(o)))
}

/// An I/O error, and what it happened to (a file's name, `stdin`,
/// `stdout`).
struct IoError {
    what: String,
    error: std::io::Error,
}

impl IoError {
    fn stdout(error: std::io::Error) -> Self {
        IoError {
            what: "stdout".to_owned(),
            error,
        }
    }
}

/// The name an input is reported by.
fn input_name(file: &str) -> &str {
    if file == "-" { "stdin" } else { file }
}

/// Reads `file` (`-` for stdin) as a stream, handing `each` pieces of
/// `chunk` bytes (the last may be shorter) until it returns false.
fn read_pieces(
    file: &str,
    chunk: usize,
    mut each: impl FnMut(&[u8]) -> bool,
) -> Result<(), IoError> {
    let failed = |error| IoError {
        what: input_name(file).to_owned(),
        error,
    };
    let mut input: Box<dyn Read> = if file == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(file).map_err(failed)?)
    };
    let mut piece = vec![0u8; chunk];
    loop {
        let mut filled = 0;
        while filled < chunk {
            match input.read(&mut piece[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(failed(e)),
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

fn check(o: &Options) -> Result<Exit, IoError> {
    let mut buffer = vec![0u8; o.gateway.buffer];
    // Minted ids follow the reference oracle's sequence so outputs compare.
    let config = o
        .gateway
        .config()
        .minting(Minting::Deterministic)
        .strict_end(o.strict_end);
    let dialect = config.dialect;
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
                let whole = as_encoded(&payload_of(&window[at(f.start)..at(f.end)]), dialect);
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
        return Err(IoError::stdout(e));
    }
    let exit = match verdict {
        Ok(summary) => {
            writeln!(out, "{{\"result\":\"ok\"}}").map_err(IoError::stdout)?;
            out.flush().map_err(IoError::stdout)?;
            report(&pipeline, &summary);
            Exit::Valid
        }
        Err(e) => {
            let message = pipeline.message(&e).to_string();
            writeln!(
                out,
                "{{\"result\":\"error\",\"index\":{},\"stage\":\"{}\",\"message\":{}}}",
                e.frame,
                e.stage.reference_name(),
                json_string(&message)
            )
            .map_err(IoError::stdout)?;
            out.flush().map_err(IoError::stdout)?;
            if e.is_capacity() {
                eprintln!("agui: capacity exceeded, not a protocol violation: {e}");
                Exit::Capacity
            } else {
                Exit::Invalid
            }
        }
    };
    Ok(exit)
}

/// `input`: a request body's verdict, and its parsed form when valid.
fn input(o: &Options) -> Result<Exit, IoError> {
    let dialect = o.gateway.dialect;
    let mut buffer = vec![0u8; o.gateway.buffer];
    let mut checker = RequestChecker::new(&mut buffer, dialect);
    let mut body = Vec::new();
    let mut verdict = Ok(());
    read_pieces(&o.file, o.chunk, |piece| {
        body.extend_from_slice(piece);
        verdict = checker.push(piece);
        verdict.is_ok()
    })?;
    let verdict = verdict.and_then(|()| checker.finish());
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let exit = match verdict {
        Ok(()) => {
            let line = parsed_input(&body, dialect).unwrap_or_else(|e| format!("<bug: {e}>"));
            writeln!(out, "{line}\n{{\"result\":\"ok\"}}").map_err(IoError::stdout)?;
            Exit::Valid
        }
        Err(e) => {
            let (stage, message) = match e.kind {
                RequestErrorKind::Json(_) => (
                    "json",
                    checker
                        .json_message()
                        .map_or_else(|| e.to_string(), |m| m.to_string()),
                ),
                RequestErrorKind::Schema { .. } => ("schema", e.to_string()),
                _ => ("capacity", e.to_string()),
            };
            writeln!(
                out,
                "{{\"result\":\"error\",\"index\":0,\"stage\":\"{stage}\",\"message\":{}}}",
                json_string(&message)
            )
            .map_err(IoError::stdout)?;
            if stage == "capacity" {
                eprintln!("agui: capacity exceeded, not a verdict: {e}");
                Exit::Capacity
            } else {
                eprintln!("agui: {e}");
                Exit::Invalid
            }
        }
    };
    out.flush().map_err(IoError::stdout)?;
    Ok(exit)
}

/// A valid request body as the reference's `RunAgentInputSchema.parse`
/// returns it, in canonical form.
fn parsed_input(body: &[u8], dialect: Dialect) -> Result<String, String> {
    // The reference's decoder drops a leading byte order mark.
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    match dialect {
        // A loose object: kept as it is, but for the defaults, `state:
        // null` and a top-level `__proto__`.
        Dialect::V1 => canon::canonicalize_edited(
            body,
            |name, null| name == "__proto__" || (name == "state" && null),
            &[("tools", "[]"), ("context", "[]")],
        ),
        // Stripped at every depth, as the V0 encoder writes a
        // `RUN_STARTED`'s input: the same schema.
        _ => {
            let event = [
                &br#"{"type":"RUN_STARTED","threadId":"t","runId":"r","input":"#[..],
                body,
                b"}",
            ]
            .concat();
            let limits = Limits {
                max_depth: agui_stream::json::MAX_DEPTH,
            };
            let decoded = agui_stream::decode(&event, dialect, limits)
                .map_err(|e| e.to_string())?
                .ok_or("no event")?;
            let mut json = Vec::new();
            encode(&decoded, &mut json).map_err(|e| format!("{e:?}"))?;
            let line = canon::canonicalize(&json)?;
            line.strip_prefix(r#"{"input":"#)
                .and_then(|l| {
                    l.strip_suffix(r#","runId":"r","threadId":"t","type":"RUN_STARTED"}"#)
                })
                .map(str::to_owned)
                .ok_or(line)
        }
    }
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
fn count(o: &Options) -> Result<Exit, IoError> {
    let mut buffer = vec![0u8; o.gateway.buffer];
    let config = o.gateway.config().strict_end(o.strict_end);
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
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (ty, n) in agui_stream::EventType::ALL.iter().zip(counts) {
        if n > 0 {
            writeln!(out, "{ty}\t{n}").map_err(IoError::stdout)?;
        }
    }
    let exit = match verdict {
        Ok(s) => {
            writeln!(
                out,
                "verdict\tok ({} frames, {} events)",
                s.frames, s.events
            )
            .map_err(IoError::stdout)?;
            Exit::Valid
        }
        Err(e) => {
            writeln!(
                out,
                "verdict\terror at frame {} ({}): {}",
                e.frame,
                e.stage.reference_name(),
                pipeline.message(&e)
            )
            .map_err(IoError::stdout)?;
            if e.is_capacity() {
                Exit::Capacity
            } else {
                Exit::Invalid
            }
        }
    };
    let secs = elapsed.as_secs_f64();
    eprintln!(
        "agui: {} bytes in {:.1} ms: {:.0} MB/s",
        bytes,
        secs * 1e3,
        bytes as f64 / 1e6 / secs
    );
    Ok(exit)
}

/// `gateway`: the rewriter, from the input to stdout; its statistics as
/// one JSON line on stderr.
fn gateway(o: &Options) -> Result<Exit, IoError> {
    let buffer = o.gateway.buffer;
    // The rewriter lives as long as the process, and so do its buffers
    // and tables: the pool (the proxies') grows the raw buffer for a held
    // block (`--hold-bytes`; one stream, no budget).
    let (frames, raw) = (vec![0u8; buffer].leak(), vec![0u8; buffer].leak());
    let tables = Box::leak(Box::new(agui_stream::rewrite::ToolTables::new()));
    // The denied names fit: `set` took them.
    let mut rewriter = match o.gateway.rewriter(frames, raw, Some(tables)) {
        Ok(rewriter) => rewriter,
        Err(e) => {
            eprintln!("agui: {e}");
            return Ok(Exit::Usage);
        }
    };
    // Guard rules: compiled once (`from_json` checked that they compile).
    if let Some(rules) = pool::leak_rules(&o.gateway.guard, |g| g.rules().ok()) {
        rewriter.guard(pool::take_lanes(rules));
    }
    let stdout = std::io::stdout();
    let mut stdout = stdout.lock();
    let mut out = Vec::new();
    let mut failure = None;
    let mut write_error = None;
    read_pieces(&o.file, o.chunk, |piece| {
        out.clear();
        match pool::push_all(
            &mut rewriter,
            piece,
            &mut out,
            o.gateway.hold_bytes,
            usize::MAX,
        ) {
            Ok(ended) => {
                write_error = stdout.write_all(&out).err();
                write_error.is_none() && !ended
            }
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    })?;
    // The input ended with its run unfinished (or something open).
    let mut incomplete = false;
    if failure.is_none() && write_error.is_none() {
        out.clear();
        match rewriter.finish(&mut out) {
            Ok(summary) => {
                incomplete = summary.is_some_and(|s| !s.is_complete());
                write_error = stdout.write_all(&out).err();
            }
            Err(e) => failure = Some(e),
        }
    }
    if let Some(e) = write_error {
        return Err(IoError::stdout(e));
    }
    stdout.flush().map_err(IoError::stdout)?;
    let s = rewriter.stats();
    let error = failure.map(|e| e.to_string());
    let mut line = frontend::StatsLine::new(s);
    if let Some(lanes) = rewriter.guard_lanes() {
        line.field("guard", &frontend::GuardCounts(lanes));
    }
    line.field("error", &error.as_deref());
    eprintln!("{}", line.as_str());
    Ok(if failure.is_some() {
        Exit::Capacity
    } else if s.violations > 0 || (o.strict_end && incomplete) {
        Exit::Invalid
    } else {
        Exit::Valid
    })
}

fn main() -> ExitCode {
    let (cmd, options) = match parse_args() {
        Ok(Parsed::Run(cmd, options)) => (cmd, options),
        Ok(Parsed::Gen(g)) => {
            return ExitCode::from(match generate(&g) {
                Ok(exit) => exit as u8,
                Err(IoError { what, error }) => {
                    eprintln!("agui: {what}: {error}");
                    Exit::Io as u8
                }
            });
        }
        Ok(Parsed::Help(text)) => {
            println!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("agui: {e}\n{USAGE}");
            return ExitCode::from(Exit::Usage as u8);
        }
    };
    let run = match cmd.as_str() {
        "check" => check(&options),
        "count" => count(&options),
        "input" => input(&options),
        _ => gateway(&options),
    };
    let exit = match run {
        Ok(Exit::Invalid | Exit::Capacity) if options.exit_zero => Exit::Valid,
        Ok(exit) => exit,
        Err(IoError { what, error }) => {
            eprintln!("agui: {what}: {error}");
            Exit::Io
        }
    };
    ExitCode::from(exit as u8)
}
