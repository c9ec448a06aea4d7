//! The timing child of `scripts/wasm-throughput.mjs`: one stream, rewritten
//! on request by the native rewriter or by the wasm plugin under wasmi, each
//! run timed alone.
//!
//! ```text
//! cargo build --release --example rewrite_rounds
//! target/release/examples/rewrite_rounds --stream S.sse [--module P.wasm] [--push 16384]
//!     [--buffer 65536] [--lend]
//! ```
//!
//! It reads the stream into memory, allocates every buffer once, checks once
//! that the native rewriter and the module (under wasmi, if `--module` is
//! given) write the same bytes for it (exit status 1 if not), prints `ready
//! BYTES`, then answers one line of stdin at a time:
//!
//! | request | answer |
//! |---------|--------|
//! | `native` | nanoseconds of one native rewrite of the whole stream |
//! | `wasmi` | nanoseconds of one run of the module under wasmi |
//! | `native N`, `wasmi N` | the same over the stream's first `N` bytes (rounded up to a push) |
//! | `output PATH` | writes the native output of the whole stream to `PATH`; `ok LEN` |
//!
//! Only the rewrite loop is timed. `native` is the library's [`Rewriter`]
//! with the default `Config` and `Options` and the plugin's buffer sizes
//! (64 KiB frame and raw buffers), fed pushes of `--push` bytes into a
//! reused `Vec` cleared after each push.
//!
//! `--buffer N` gives `native` `N`-byte frame and raw buffers instead (64
//! to 16 MiB, as the front ends' `--buffer`), and `--lend` lends them per
//! push as the Envoy filters and `http_proxy` do: the rewriter starts with
//! empty buffers (`Rewriter::new(&mut [], &mut [], …)`), each push (and the
//! finish) is preceded by `pool::lend` of a `N`-byte pair (the pool's
//! default 16 MiB budget) and followed by `pool::reclaim`
//! (`examples/shared/pool.rs`; its pairs are allocated on the first run and
//! reused after). With either, the start-up check also rewrites the stream
//! with 64 KiB buffers of its own, and the output must be the same (exit
//! status 1 if not): `scripts/buffer-curve.py` times rows of these. It is
//! for a stream whose every frame is valid or fits both buffer sizes: a bad
//! frame larger than the buffer goes out ahead of its verdict as it spills,
//! and is cut where the verdict found it, so how much of it went out
//! depends on the size (the verdict does not).
//!
//! `wasmi` is the module instantiated once, and per run: `agui_init_v1(0)`
//! (the defaults), then for each push the bytes copied to `agui_input_ptr()`
//! (at most `agui_input_cap()`), `agui_push`, the output's length read,
//! `agui_push(0)` while input is pending, and `agui_finish()`: what a host
//! does, without sending the output anywhere.
//!
//! wasmi is built with the `portable-dispatch` feature the test suite asks
//! for (features are shared by every dev-dependency user), so its numbers
//! are those of its loop dispatch, not of its default tail-call one.

use std::io::{BufRead, Write as _};
use std::path::PathBuf;
use std::time::Instant;

use agui_stream::Config;
use agui_stream::rewrite::{Options, Rewriter};
use wasmi::{Engine, Module};

#[path = "../tests/support/wasm_host.rs"]
mod wasm_host;
use wasm_host::Host;

#[path = "shared/pool.rs"]
mod pool;

/// The plugin's frame and raw buffers (`FRAME_CAP`, `RAW_CAP`): `native`'s
/// without `--buffer`, and the reference the other sizes are checked against.
const BUFFER: usize = 64 * 1024;

/// `--buffer`'s range: the front ends' (`MIN_BUFFER`, `MAX_BUFFER` in
/// `examples/shared/frontend.rs`).
const BUFFERS: std::ops::RangeInclusive<usize> = 64..=16 << 20;

/// The pool's budget with `--lend`: the front ends' default `buffer_budget`
/// (`DEFAULT_BUFFER_BUDGET`).
const BUDGET: usize = 16 << 20;

fn main() {
    let args = Args::parse();
    let stream = std::fs::read(&args.stream)
        .unwrap_or_else(|e| fail(&format!("reading {}: {e}", args.stream.display())));
    let mut native = Native::new(args.push, args.buffer, args.lend);
    let mut plugin = args.module.as_ref().map(|path| {
        let wasm = std::fs::read(path)
            .unwrap_or_else(|e| fail(&format!("reading {}: {e}", path.display())));
        Plugin::new(&wasm).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())))
    });

    // The check: the same bytes from both, for the whole stream.
    let mut want = Vec::new();
    native.run(&stream, Some(&mut want));
    // And from the 64 KiB rewriter, with another buffer or lent buffers.
    if args.buffer != BUFFER || args.lend {
        let mut reference = Vec::new();
        Native::new(args.push, BUFFER, false).run(&stream, Some(&mut reference));
        if want != reference {
            let at = want
                .iter()
                .zip(&reference)
                .take_while(|(a, b)| a == b)
                .count();
            fail(&format!(
                "the output with {}{}-byte buffers differs from the one with {BUFFER}-byte buffers: {} bytes against {}, first difference at byte {at}",
                if args.lend { "lent " } else { "" },
                args.buffer,
                want.len(),
                reference.len()
            ));
        }
    }
    if let Some(plugin) = plugin.as_mut() {
        let mut got = Vec::new();
        plugin
            .run(&stream, args.push, Some(&mut got))
            .unwrap_or_else(|e| fail(&format!("wasmi: {e}")));
        if got != want {
            let at = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
            fail(&format!(
                "wasmi's output differs from the native rewriter's: {} bytes against {}, first difference at byte {at}",
                got.len(),
                want.len()
            ));
        }
    }

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let reply = |out: &mut std::io::StdoutLock<'_>, line: String| {
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .unwrap_or_else(|e| fail(&format!("writing stdout: {e}")));
    };
    reply(&mut out, format!("ready {}", stream.len()));
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap_or_else(|e| fail(&format!("reading stdin: {e}")));
        let mut words = line.split_whitespace();
        let (row, arg) = (words.next(), words.next());
        let prefix = |arg: Option<&str>| match arg {
            None => &stream[..],
            Some(n) => {
                let n: usize = n
                    .parse()
                    .unwrap_or_else(|_| fail(&format!("not a byte count: {line}")));
                &stream[..n
                    .div_ceil(args.push)
                    .saturating_mul(args.push)
                    .min(stream.len())]
            }
        };
        match row {
            None => continue,
            Some("native") => {
                let input = prefix(arg);
                let start = Instant::now();
                native.run(input, None);
                reply(&mut out, start.elapsed().as_nanos().to_string());
            }
            Some("wasmi") => {
                let input = prefix(arg);
                let plugin = plugin
                    .as_mut()
                    .unwrap_or_else(|| fail("wasmi: no --module given"));
                let start = Instant::now();
                plugin
                    .run(input, args.push, None)
                    .unwrap_or_else(|e| fail(&format!("wasmi: {e}")));
                reply(&mut out, start.elapsed().as_nanos().to_string());
            }
            Some("output") => {
                let path = arg.unwrap_or_else(|| fail("output: no path"));
                std::fs::write(path, &want)
                    .unwrap_or_else(|e| fail(&format!("writing {path}: {e}")));
                reply(&mut out, format!("ok {}", want.len()));
            }
            Some(other) => fail(&format!("unknown request {other:?}")),
        }
    }
}

fn fail(message: &str) -> ! {
    eprintln!("rewrite_rounds: {message}");
    std::process::exit(1)
}

struct Args {
    stream: PathBuf,
    module: Option<PathBuf>,
    push: usize,
    buffer: usize,
    lend: bool,
}

impl Args {
    fn parse() -> Args {
        let usage = "usage: rewrite_rounds --stream S.sse [--module P.wasm] [--push 16384] \
                     [--buffer 65536] [--lend]";
        let mut stream = None;
        let mut module = None;
        let mut push = 16 * 1024;
        let mut buffer = BUFFER;
        let mut lend = false;
        let mut args = std::env::args_os().skip(1);
        while let Some(flag) = args.next() {
            let mut value = || args.next().unwrap_or_else(|| fail(usage));
            match flag.to_str() {
                Some("--stream") => stream = Some(PathBuf::from(value())),
                Some("--module") => module = Some(PathBuf::from(value())),
                Some("--push") => {
                    push = value()
                        .to_str()
                        .and_then(|v| v.parse().ok())
                        .filter(|&n| n > 0)
                        .unwrap_or_else(|| fail("--push: a positive byte count"));
                }
                Some("--buffer") => {
                    buffer = value()
                        .to_str()
                        .and_then(|v| v.parse().ok())
                        .filter(|n| BUFFERS.contains(n))
                        .unwrap_or_else(|| {
                            fail(&format!(
                                "--buffer: a byte count from {} to {}",
                                BUFFERS.start(),
                                BUFFERS.end()
                            ))
                        });
                }
                Some("--lend") => lend = true,
                _ => fail(usage),
            }
        }
        Args {
            stream: stream.unwrap_or_else(|| fail(usage)),
            module,
            push,
            buffer,
            lend,
        }
    }
}

/// The native rewriter's buffers, allocated once (or the pool's size, with
/// `--lend`: pairs allocated on the first run, lent again after).
struct Native {
    frames: Vec<u8>,
    raw: Vec<u8>,
    out: Vec<u8>,
    push: usize,
    /// The size of the pairs lent per push, if lent.
    lend: Option<usize>,
}

impl Native {
    fn new(push: usize, buffer: usize, lend: bool) -> Native {
        let own = if lend { 0 } else { buffer };
        Native {
            frames: vec![0; own],
            raw: vec![0; own],
            // Room for any push's output: no growth while timed.
            out: Vec::with_capacity(4 * (buffer.max(BUFFER) + push)),
            push,
            lend: lend.then_some(buffer),
        }
    }

    /// Rewrites `stream` in pushes; the output goes to `keep` if given.
    fn run(&mut self, stream: &[u8], keep: Option<&mut Vec<u8>>) -> u64 {
        let (push, out) = (self.push, &mut self.out);
        match self.lend {
            None => {
                let mut r = Rewriter::new(
                    &mut self.frames,
                    &mut self.raw,
                    Config::new(),
                    Options::new(),
                );
                rewrite(&mut r, stream, push, out, keep, |_| (), |_| ())
            }
            Some(size) => {
                // No buffers until a push (`pool::lend`), as in the filters.
                let mut r = Rewriter::new(&mut [], &mut [], Config::new(), Options::new());
                rewrite(
                    &mut r,
                    stream,
                    push,
                    out,
                    keep,
                    |r| pool::lend(r, size, BUDGET, |_| ()),
                    pool::reclaim,
                )
            }
        }
    }
}

/// Rewrites `stream` with `r` in pushes of `push` bytes into `out` (cleared
/// after each), `lend` called before each push and the finish and `reclaim`
/// after; the output goes to `keep` if given. Its length.
fn rewrite<'b>(
    r: &mut Rewriter<'b>,
    stream: &[u8],
    push: usize,
    out: &mut Vec<u8>,
    mut keep: Option<&mut Vec<u8>>,
    mut lend: impl FnMut(&mut Rewriter<'b>),
    mut reclaim: impl FnMut(&mut Rewriter<'b>),
) -> u64 {
    let mut written = 0;
    for chunk in stream.chunks(push) {
        let mut rest = chunk;
        while !rest.is_empty() {
            out.clear();
            lend(r);
            let pushed = r.push(rest, out).expect("the native rewriter rewrites");
            reclaim(r);
            rest = &rest[pushed.read..];
            written += out.len() as u64;
            if let Some(keep) = keep.as_deref_mut() {
                keep.extend_from_slice(out);
            }
            std::hint::black_box(&*out);
        }
    }
    out.clear();
    lend(r);
    r.finish(out).expect("the native rewriter finishes");
    reclaim(r);
    if let Some(keep) = keep {
        keep.extend_from_slice(out);
    }
    written + out.len() as u64
}

/// The module, instantiated once under wasmi (`tests/support/wasm_host.rs`).
struct Plugin {
    host: Host,
}

impl Plugin {
    fn new(wasm: &[u8]) -> Result<Plugin, wasmi::Error> {
        let engine = Engine::default();
        let module = Module::new(&engine, wasm)?;
        Ok(Plugin {
            host: Host::new(&engine, &module)?,
        })
    }

    /// The last call's output: its length, and its bytes appended to
    /// `keep` if given.
    fn output(&mut self, keep: &mut Option<&mut Vec<u8>>) -> Result<u64, wasmi::Error> {
        let out = self.host.output()?;
        if let Some(keep) = keep.as_deref_mut() {
            keep.extend_from_slice(out);
        }
        Ok(out.len() as u64)
    }

    /// One stream with the default configuration, in pushes of `push`
    /// bytes: the output's length.
    fn run(
        &mut self,
        stream: &[u8],
        push: usize,
        mut keep: Option<&mut Vec<u8>>,
    ) -> Result<u64, wasmi::Error> {
        let code = |what: &str, code: i32| match code {
            0 => Ok(()),
            c => Err(wasmi::Error::new(format!("{what} returned {c}"))),
        };
        code("agui_init_v1(0)", self.host.init(b"")?)?;
        let mut written = 0;
        for chunk in stream.chunks(push) {
            let mut rest = chunk;
            while !rest.is_empty() {
                let (took, c) = self.host.push(rest)?;
                rest = &rest[took..];
                code("agui_push", c)?;
                written += self.output(&mut keep)?;
                while self.host.pending()? > 0 {
                    code("agui_push(0)", self.host.push_len(0)?)?;
                    written += self.output(&mut keep)?;
                }
            }
        }
        code("agui_finish", self.host.finish()?)?;
        written += self.output(&mut keep)?;
        Ok(written)
    }
}
