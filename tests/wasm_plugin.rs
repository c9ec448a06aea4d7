//! The wasm module of `examples/wasm-plugin` in a real host (wasmi): every
//! corpus stream and real capture, under several policies and both
//! dialects, pushed through its ABI in random chunk sizes, must come out
//! byte for byte as the native rewriter writes it for the same pushes, with
//! the same statistics in its report; and the hostile streams of the test
//! suite never make it trap.
//!
//! The module is built first with
//! `$CARGO build --release --target wasm32-unknown-unknown` in its own
//! package (its path taken from cargo's `compiler-artifact` message), or
//! read from `AGUI_WASM_MODULE` (`.ci/run` points it at the `wasm-opt -Oz`
//! output, the module as shipped).

mod support;
use support as common;

use std::path::{Path, PathBuf};
use std::process::Command;

use agui_stream::Minting;
use agui_stream::rewrite::{OnViolation, Options, RewriteError, Rewriter};
use agui_stream::{Config, Dialect};
use wasmi::{Engine, Linker, Memory, Module, Store, TypedFunc};

// `agui_init`'s flags.
const DROP: i32 = 1;
const PASS: i32 = 1 << 1;
const NO_REPAIR: i32 = 1 << 2;
const CLOSE_OPEN: i32 = 1 << 3;
const CANONICAL: i32 = 1 << 4;
const DROP_RAW: i32 = 1 << 5;
const CHECK_TOOL_ARGS: i32 = 1 << 6;

/// The module's buffer sizes (`agui_frame_cap`, `agui_raw_cap`).
const BUFFER: usize = 64 * 1024;

fn module_path() -> PathBuf {
    if let Some(path) = std::env::var_os("AGUI_WASM_MODULE") {
        return PathBuf::from(path);
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/wasm-plugin/Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--target", "wasm32-unknown-unknown"])
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["--message-format", "json"])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building the wasm module failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .flat_map(|m| {
            m["filenames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|f| f.as_str().map(PathBuf::from))
        })
        .find(|f| f.extension().is_some_and(|x| x == "wasm"))
        .expect("cargo names the .wasm it built")
}

/// One instance of the module, and its exports.
struct Plugin {
    store: Store<()>,
    memory: Memory,
    init: TypedFunc<(i32, i32), i32>,
    input_ptr: TypedFunc<(), i32>,
    input_cap: TypedFunc<(), i32>,
    push: TypedFunc<i32, i32>,
    pending: TypedFunc<(), i32>,
    finish: TypedFunc<(), i32>,
    output_ptr: TypedFunc<(), i32>,
    output_len: TypedFunc<(), i32>,
    report_ptr: TypedFunc<(), i32>,
    report_len: TypedFunc<(), i32>,
}

impl Plugin {
    fn new(wasm: &[u8]) -> Plugin {
        let engine = Engine::default();
        let module = Module::new(&engine, wasm).expect("a valid module");
        assert_eq!(module.imports().count(), 0, "the module imports nothing");
        let mut store = Store::new(&engine, ());
        let instance = Linker::new(&engine)
            .instantiate_and_start(&mut store, &module)
            .expect("instantiates");
        let memory = instance.get_memory(&store, "memory").expect("memory");
        macro_rules! f {
            ($name:literal) => {
                instance.get_typed_func(&store, $name).expect($name)
            };
        }
        Plugin {
            init: f!("agui_init"),
            input_ptr: f!("agui_input_ptr"),
            input_cap: f!("agui_input_cap"),
            push: f!("agui_push"),
            pending: f!("agui_pending"),
            finish: f!("agui_finish"),
            output_ptr: f!("agui_output_ptr"),
            output_len: f!("agui_output_len"),
            report_ptr: f!("agui_report_ptr"),
            report_len: f!("agui_report_len"),
            memory,
            store,
        }
    }

    fn call0(&mut self, f: TypedFunc<(), i32>) -> i32 {
        f.call(&mut self.store, ()).expect("no trap")
    }

    fn take_output(&mut self, into: &mut Vec<u8>) {
        let (ptr, len) = (self.call0(self.output_ptr), self.call0(self.output_len));
        let data = self.memory.data(&self.store);
        into.extend_from_slice(&data[ptr as usize..][..len as usize]);
    }

    fn report(&mut self) -> serde_json::Value {
        let len = self.call0(self.report_len);
        let ptr = self.call0(self.report_ptr);
        let data = self.memory.data(&self.store);
        serde_json::from_slice(&data[ptr as usize..][..len as usize]).expect("the report is JSON")
    }

    /// Pushes `pieces` of `stream` as a host would, then finishes: the
    /// output, the last code, and the report.
    fn run(&mut self, stream: &[u8], pieces: &[usize], dialect: i32, flags: i32) -> Run {
        assert_eq!(
            self.init.call(&mut self.store, (dialect, flags)).unwrap(),
            0
        );
        let mut output = Vec::new();
        let mut pushed = Vec::new();
        let mut at = 0;
        let mut code = 0;
        for &n in pieces {
            let piece = &stream[at..at + n];
            at += n;
            let mut rest = piece;
            while !rest.is_empty() && code == 0 {
                let cap = self.call0(self.input_cap) as usize;
                let take = rest.len().min(cap);
                let ptr = self.call0(self.input_ptr) as usize;
                self.memory.data_mut(&mut self.store)[ptr..][..take].copy_from_slice(&rest[..take]);
                rest = &rest[take..];
                pushed.push(take);
                code = self
                    .push
                    .call(&mut self.store, take as i32)
                    .expect("no trap");
                self.take_output(&mut output);
                while code == 0 && self.call0(self.pending) > 0 {
                    code = self.push.call(&mut self.store, 0).expect("no trap");
                    self.take_output(&mut output);
                }
            }
            if code != 0 {
                break;
            }
        }
        if code >= 0 {
            code = self.call0(self.finish);
            self.take_output(&mut output);
        }
        Run {
            output,
            code,
            report: self.report(),
            pushed,
        }
    }
}

/// What a stream came to.
#[derive(Debug, PartialEq)]
struct Run {
    output: Vec<u8>,
    /// 0 finished, 1 ended by the policy; negative: the module's error code.
    code: i32,
    report: serde_json::Value,
    /// The lengths given to `agui_push` (at most `agui_input_cap`).
    pushed: Vec<usize>,
}

fn settings(dialect: i32, flags: i32) -> (Config, Options) {
    let config = Config::new()
        .dialect(if dialect == 1 {
            Dialect::V1
        } else {
            Dialect::V0
        })
        .minting(Minting::Deterministic)
        .check_tool_args(flags & CHECK_TOOL_ARGS != 0);
    let on_violation = match flags & (DROP | PASS) {
        DROP => OnViolation::Drop,
        PASS => OnViolation::Pass,
        _ => OnViolation::Stop,
    };
    let options = Options::new()
        .on_violation(on_violation)
        .repair(flags & NO_REPAIR == 0)
        .close_open(flags & CLOSE_OPEN != 0)
        .canonical(flags & CANONICAL != 0)
        .drop_raw(flags & DROP_RAW != 0);
    (config, options)
}

/// The native rewriter on the same pushes, as `agui gateway` drives it.
fn native(stream: &[u8], pieces: &[usize], dialect: i32, flags: i32) -> Run {
    let (config, options) = settings(dialect, flags);
    let (mut frames, mut raw) = (vec![0u8; BUFFER], vec![0u8; BUFFER]);
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, config, options);
    let mut output = Vec::new();
    let mut result: Result<bool, RewriteError> = Ok(false);
    let mut at = 0;
    for &n in pieces {
        let piece = &stream[at..at + n];
        at += n;
        result = rewriter.push(piece, &mut output).map(|p| p.ended);
        if result != Ok(false) {
            break;
        }
    }
    if result.is_ok() {
        result = rewriter.finish(&mut output).map(|_| result == Ok(true));
    }
    let mut report = serde_json::to_value(rewriter.stats()).unwrap();
    report["error"] = match &result {
        Ok(_) => serde_json::Value::Null,
        Err(e) => e.to_string().into(),
    };
    Run {
        output,
        code: match result {
            Ok(ended) => i32::from(ended),
            Err(_) => -1,
        },
        report,
        pushed: pieces.to_vec(),
    }
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    /// Piece sizes covering `len`: tiny, packet-sized or large, at random.
    fn pieces(&mut self, len: usize) -> Vec<usize> {
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

fn compare(
    plugin: &mut Plugin,
    name: &str,
    stream: &[u8],
    pieces: &[usize],
    dialect: i32,
    flags: i32,
) {
    let got = plugin.run(stream, pieces, dialect, flags);
    // The native rewriter gets the pieces the module got: a block larger
    // than the raw buffer goes out as its pieces arrive.
    let want = native(stream, &got.pushed, dialect, flags);
    if got.output != want.output {
        let at = got
            .output
            .iter()
            .zip(&want.output)
            .take_while(|(a, b)| a == b)
            .count();
        let around = |o: &[u8]| {
            String::from_utf8_lossy(&o[at.saturating_sub(100)..o.len().min(at + 200)]).into_owned()
        };
        panic!(
            "{name} (dialect {dialect}, flags {flags:#x}): output differs at byte {at} (module {} bytes, native {})\n module: {:?}\n native: {:?}",
            got.output.len(),
            want.output.len(),
            around(&got.output),
            around(&want.output),
        );
    }
    assert_eq!(
        (got.code.clamp(-1, 1), &got.report),
        (want.code, &want.report),
        "{name} (dialect {dialect}, flags {flags:#x})"
    );
}

#[test]
fn the_module_rewrites_every_stream_as_the_native_rewriter_does() {
    let wasm = std::fs::read(module_path()).expect("the module");
    let mut plugin = Plugin::new(&wasm);
    let mut rng = Rng(0x5eed_a601);
    let mut files = common::sse_files(&common::conformance_dir());
    assert!(files.len() > 200, "{} files", files.len());
    files.extend(common::sse_files(&common::corpus_dir().join("extra")));
    files.extend(common::sse_files(&common::real_dir()));
    let flag_sets = [
        0,
        DROP | CLOSE_OPEN,
        PASS | NO_REPAIR,
        CANONICAL | DROP_RAW | CHECK_TOOL_ARGS,
    ];
    for file in &files {
        let stream = common::read(file);
        let name = file.file_name().unwrap().to_string_lossy();
        for dialect in [1, 0] {
            for flags in flag_sets {
                let pieces = rng.pieces(stream.len());
                compare(&mut plugin, &name, &stream, &pieces, dialect, flags);
            }
        }
    }
}

#[test]
fn hostile_streams_never_make_the_module_trap() {
    let wasm = std::fs::read(module_path()).expect("the module");
    let mut plugin = Plugin::new(&wasm);
    let mut rng = Rng(0x0bad_5eed);
    for (name, stream) in common::hostile::streams() {
        for flags in [0, DROP | CLOSE_OPEN] {
            let pieces = rng.pieces(stream.len());
            compare(&mut plugin, &name, &stream, &pieces, 1, flags);
        }
    }
}

#[test]
fn the_abi_refuses_bad_calls_with_codes() {
    let wasm = std::fs::read(module_path()).expect("the module");
    let mut plugin = Plugin::new(&wasm);
    // Before agui_init.
    assert_eq!(plugin.push.call(&mut plugin.store, 0).unwrap(), -1);
    assert_eq!(plugin.call0(plugin.finish), -1);
    // Bad dialect, unknown flags, drop and pass at once.
    for (dialect, flags) in [(2, 0), (1, 1 << 20), (1, DROP | PASS)] {
        assert_eq!(
            plugin
                .init
                .call(&mut plugin.store, (dialect, flags))
                .unwrap(),
            -2
        );
    }
    assert_eq!(plugin.init.call(&mut plugin.store, (1, 0)).unwrap(), 0);
    let cap = plugin.call0(plugin.input_cap);
    for len in [-1, cap + 1, i32::MAX] {
        assert_eq!(
            plugin.push.call(&mut plugin.store, len).unwrap(),
            -2,
            "length {len}"
        );
    }
    assert_eq!(plugin.report()["error"], "bad argument");
    // A bad argument does not end the stream; finish does.
    assert_eq!(plugin.call0(plugin.finish), 0);
    assert_eq!(plugin.call0(plugin.finish), -3);
    assert_eq!(plugin.push.call(&mut plugin.store, 0).unwrap(), -3);
    // agui_init starts over.
    assert_eq!(plugin.init.call(&mut plugin.store, (0, 0)).unwrap(), 0);
    assert_eq!(plugin.report()["bytes_in"], 0);
}
