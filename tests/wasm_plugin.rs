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
//! read from `AGUI_WASM_MODULE` (`.ci/run` runs it twice: on the speed
//! build after `wasm-opt -O3`, with simd128, and on the size build after
//! `wasm-opt -Oz`, the two modules shipped).

mod support;
use support as common;
use support::Rng;

use std::path::{Path, PathBuf};
use std::process::Command;

use agui_stream::Minting;
use agui_stream::rewrite::{OnViolation, Options, RewriteError, Rewriter, ToolTables};
use agui_stream::{Config, Dialect};
use wasmi::{Engine, Module};

#[path = "support/wasm_host.rs"]
mod wasm_host;
use wasm_host::{EXPORTS, Host};

/// The module's buffer sizes (`FRAME_CAP`, `RAW_CAP`).
const BUFFER: usize = 64 * 1024;

/// One configuration: the JSON the module is given, and the same settings
/// for the native rewriter, written out independently.
#[derive(Clone, Copy, Debug)]
struct Setting {
    dialect: Dialect,
    on_violation: OnViolation,
    repair: bool,
    close_open: bool,
    canonical: bool,
    drop_raw: bool,
    check_tool_args: bool,
    deny_tool: Option<&'static str>,
    deterministic_ids: bool,
}

impl Setting {
    const DEFAULT: Setting = Setting {
        dialect: Dialect::V1,
        on_violation: OnViolation::Stop,
        repair: true,
        close_open: false,
        canonical: false,
        drop_raw: false,
        check_tool_args: false,
        deny_tool: None,
        deterministic_ids: false,
    };

    /// The configuration as the module takes it: only what is not the
    /// default is written.
    fn json(&self) -> String {
        let d = Setting::DEFAULT;
        let mut members = Vec::new();
        if self.dialect != d.dialect {
            members.push(r#""dialect":"v0""#.to_string());
        }
        if self.on_violation != d.on_violation {
            let name = match self.on_violation {
                OnViolation::Drop => "drop",
                OnViolation::Pass => "pass",
                _ => "stop",
            };
            members.push(format!(r#""on_violation":"{name}""#));
        }
        for (name, value, default) in [
            ("repair", self.repair, d.repair),
            ("close_open", self.close_open, d.close_open),
            ("canonical", self.canonical, d.canonical),
            ("drop_raw", self.drop_raw, d.drop_raw),
            ("check_tool_args", self.check_tool_args, d.check_tool_args),
            (
                "deterministic_ids",
                self.deterministic_ids,
                d.deterministic_ids,
            ),
        ] {
            if value != default {
                members.push(format!(r#""{name}":{value}"#));
            }
        }
        if let Some(tool) = self.deny_tool {
            members.push(format!(r#""deny_tools":["{tool}"]"#));
        }
        format!("{{{}}}", members.join(","))
    }

    fn native(&self) -> (Config, Options) {
        let config = Config::new()
            .dialect(self.dialect)
            .minting(if self.deterministic_ids {
                Minting::Deterministic
            } else {
                Minting::PerRun
            })
            .check_tool_args(self.check_tool_args);
        let options = Options::new()
            .on_violation(self.on_violation)
            .repair(self.repair)
            .close_open(self.close_open)
            .canonical(self.canonical)
            .drop_raw(self.drop_raw)
            // The module holds nothing (its buffers are fixed), but splits
            // a delta larger than its raw buffer (`hold_bytes` > 0).
            .split(true);
        (config, options)
    }
}

/// The settings every stream is rewritten with, in both dialects.
fn settings() -> Vec<Setting> {
    let d = Setting::DEFAULT;
    let sets = [
        d,
        Setting {
            on_violation: OnViolation::Drop,
            close_open: true,
            deterministic_ids: true,
            ..d
        },
        Setting {
            on_violation: OnViolation::Pass,
            repair: false,
            deny_tool: Some("get_weather"),
            ..d
        },
        Setting {
            canonical: true,
            drop_raw: true,
            check_tool_args: true,
            deterministic_ids: true,
            ..d
        },
    ];
    [Dialect::V1, Dialect::V0]
        .into_iter()
        .flat_map(|dialect| sets.map(|s| Setting { dialect, ..s }))
        .collect()
}

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

/// One instance of the module (`support/wasm_host.rs`), every call
/// unwrapped: a trap fails the test.
struct Plugin {
    host: Host,
}

impl Plugin {
    fn new(wasm: &[u8]) -> Plugin {
        let engine = Engine::default();
        let module = Module::new(&engine, wasm).expect("a valid module");
        assert_eq!(module.imports().count(), 0, "the module imports nothing");
        let mut exports: Vec<_> = module
            .exports()
            .map(|e| e.name().to_string())
            .filter(|name| name != "memory" && !name.starts_with("__"))
            .collect();
        exports.sort();
        let mut abi = EXPORTS.map(String::from).to_vec();
        abi.sort();
        assert_eq!(exports, abi, "the module's exports are the ABI");
        Plugin {
            host: Host::new(&engine, &module).expect("instantiates"),
        }
    }

    fn report(&mut self) -> serde_json::Value {
        let report = self.host.report().expect("no trap");
        serde_json::from_slice(report).expect("the report is JSON")
    }

    /// Writes `config` at the input pointer and calls `agui_init_v1`.
    fn init(&mut self, config: &str) -> i32 {
        self.host.init(config.as_bytes()).expect("no trap")
    }

    /// Pushes `pieces` of `stream` as a host would, then finishes: the
    /// output, the last code, and the report.
    fn run(&mut self, stream: &[u8], pieces: &[usize], setting: &Setting) -> Run {
        let config = setting.json();
        assert_eq!(
            self.init(&config),
            0,
            "{config}: {}",
            self.report()["error"]
        );
        self.run_initialized(stream, pieces)
    }

    /// [`Plugin::run`] on a module initialized already.
    fn run_initialized(&mut self, stream: &[u8], pieces: &[usize]) -> Run {
        let host = &mut self.host;
        let mut output = Vec::new();
        let mut pushed = Vec::new();
        let mut at = 0;
        let mut code = 0;
        for &n in pieces {
            let mut rest = &stream[at..at + n];
            at += n;
            while !rest.is_empty() && code == 0 {
                let (took, c) = host.push(rest).expect("no trap");
                code = c;
                rest = &rest[took..];
                pushed.push(took);
                output.extend_from_slice(host.output().expect("no trap"));
                while code == 0 && host.pending().expect("no trap") > 0 {
                    code = host.push_len(0).expect("no trap");
                    output.extend_from_slice(host.output().expect("no trap"));
                }
            }
            if code != 0 {
                break;
            }
        }
        if code >= 0 {
            code = host.finish().expect("no trap");
            output.extend_from_slice(host.output().expect("no trap"));
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

/// The native rewriter on the same pushes, as `agui gateway` drives it.
fn native(stream: &[u8], pieces: &[usize], setting: &Setting) -> Run {
    let (config, options) = setting.native();
    let (mut frames, mut raw) = (vec![0u8; BUFFER], vec![0u8; BUFFER]);
    let mut tables = ToolTables::new();
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, config, options);
    if let Some(tool) = setting.deny_tool {
        tables.deny(tool).unwrap();
        rewriter.deny_tools(&mut tables);
    }
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

fn compare(plugin: &mut Plugin, name: &str, stream: &[u8], pieces: &[usize], setting: &Setting) {
    let got = plugin.run(stream, pieces, setting);
    // The native rewriter gets the pieces the module got: a block larger
    // than the raw buffer goes out as its pieces arrive.
    let want = native(stream, &got.pushed, setting);
    same_run(&got, &want, &format!("{name} ({})", setting.json()));
}

/// The module's run is the native one: output, code (any error as -1) and
/// report.
fn same_run(got: &Run, want: &Run, what: &str) {
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
            "{what}: output differs at byte {at} (module {} bytes, native {})\n module: {:?}\n native: {:?}",
            got.output.len(),
            want.output.len(),
            around(&got.output),
            around(&want.output),
        );
    }
    assert_eq!(
        (got.code.clamp(-1, 1), &got.report),
        (want.code, &want.report),
        "{what}"
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
    let settings = settings();
    for file in &files {
        let stream = common::read(file);
        let name = file.file_name().unwrap().to_string_lossy();
        for setting in &settings {
            let pieces = rng.pieces(stream.len());
            compare(&mut plugin, &name, &stream, &pieces, setting);
        }
    }
}

#[test]
fn hostile_streams_never_make_the_module_trap() {
    let wasm = std::fs::read(module_path()).expect("the module");
    let mut plugin = Plugin::new(&wasm);
    let mut rng = Rng(0x0bad_5eed);
    let settings = settings();
    for (name, stream) in common::hostile::streams() {
        for setting in &settings[..2] {
            let pieces = rng.pieces(stream.len());
            compare(&mut plugin, &name, &stream, &pieces, setting);
        }
    }
}

#[test]
fn the_abi_refuses_bad_calls_with_codes() {
    let wasm = std::fs::read(module_path()).expect("the module");
    let mut plugin = Plugin::new(&wasm);
    // Before agui_init_v1.
    assert_eq!(plugin.host.push_len(0).unwrap(), -1);
    assert_eq!(plugin.host.finish().unwrap(), -1);
    assert_eq!(
        plugin.report()["error"],
        "not initialized: call agui_init_v1 first"
    );
    assert_eq!(plugin.init("{}"), 0);
    let cap = plugin.host.input_cap().unwrap();
    for len in [-1, cap + 1, i32::MAX] {
        assert_eq!(plugin.host.push_len(len).unwrap(), -2, "length {len}");
    }
    assert_eq!(plugin.report()["error"], "bad argument");
    // A bad argument does not end the stream; finish does.
    assert_eq!(plugin.host.finish().unwrap(), 0);
    assert_eq!(plugin.report()["error"], serde_json::Value::Null);
    assert_eq!(plugin.host.finish().unwrap(), -3);
    assert_eq!(plugin.host.push_len(0).unwrap(), -3);
    // agui_init_v1 starts over; an empty configuration is the defaults.
    assert_eq!(plugin.init(""), 0);
    assert_eq!(plugin.report()["bytes_in"], 0);
    for len in [-1, cap + 1] {
        assert_eq!(plugin.host.init_len(len).unwrap(), -2);
        // A failed init leaves the module not initialized.
        assert_eq!(plugin.host.push_len(0).unwrap(), -1);
    }
}

/// Configurations the module refuses, each with what its report says.
const BAD_CONFIGS: [&str; 14] = [
    "not json",
    "[]",
    r#"{"dialect":"v2"}"#,
    r#"{"on_violation":"ignore"}"#,
    r#"{"repair":"yes"}"#,
    r#"{"max_event_bytes":-1}"#,
    r#"{"unknown":1}"#,
    r#"{"deny_tools":"calc"}"#,
    r#"{"deny_tools":[1]}"#,
    // The module's buffers are fixed.
    r#"{"buffer":1024}"#,
    // One name more than the rewriter holds (16).
    r#"{"deny_tools":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}"#,
    // Guard rules: bad ones, and good ones this module does not apply.
    r#"{"guard":{"rules":[{"builtin":"phone","action":"mask"}]}}"#,
    r#"{"guard":{"rules":[{"literal":"","action":"mask"}]}}"#,
    r#"{"guard":{"rules":[{"builtin":"email","action":"mask"}]}}"#,
];

#[test]
fn a_bad_configuration_is_refused_and_the_next_good_one_works() {
    let wasm = std::fs::read(module_path()).expect("the module");
    let mut plugin = Plugin::new(&wasm);
    let stream = common::read(&common::real_dir().join("langgraph-tool-call.sse"));
    let mut rng = Rng(0x1417);
    let good = Setting {
        deny_tool: Some("get_weather"),
        deterministic_ids: true,
        ..Setting::DEFAULT
    };
    // A bad configuration first of all (the module has never held a
    // rewriter), then after a stream, then several in a row: every time
    // the next good one works and rewrites as the native rewriter does.
    for (round, bad) in BAD_CONFIGS.iter().enumerate() {
        for _ in 0..=round % 3 {
            assert_eq!(plugin.init(bad), -2, "{bad}");
            let error = plugin.report()["error"].as_str().unwrap_or("").to_string();
            assert!(error.starts_with("bad configuration"), "{bad}: {error}");
            assert_eq!(plugin.host.push_len(0).unwrap(), -1, "{bad}");
            assert_eq!(plugin.host.finish().unwrap(), -1, "{bad}");
        }
        let pieces = rng.pieces(stream.len());
        compare(
            &mut plugin,
            "langgraph-tool-call.sse",
            &stream,
            &pieces,
            &good,
        );
    }
    // Sixteen names fit; the proxies' keys are taken (and ignored).
    let names: Vec<String> = (0..16).map(|i| format!("\"tool{i}\"")).collect();
    assert_eq!(
        plugin.init(&format!(r#"{{"deny_tools":[{}]}}"#, names.join(","))),
        0
    );
    let proxies =
        r#"{"buffer":65536,"keepalive_ms":0,"request_identity":false,"log_streams":false}"#;
    assert_eq!(plugin.init(proxies), 0, "{}", plugin.report()["error"]);
}

#[test]
fn the_defaults_mint_ids_per_run() {
    // The library's default, as every front end: the oracle's
    // deterministic sequence only when asked for.
    let wasm = std::fs::read(module_path()).expect("the module");
    let mut plugin = Plugin::new(&wasm);
    // THINKING_* events become REASONING_* ones with minted ids.
    let stream = common::read(&common::conformance_dir().join("ev-thinking-full.sse"));
    let mut outputs = Vec::new();
    for config in ["{}", r#"{"deterministic_ids":true}"#] {
        assert_eq!(plugin.init(config), 0);
        let run = plugin.run_initialized(&stream, &[stream.len()]);
        outputs.push(String::from_utf8(run.output).unwrap());
    }
    let deterministic = "00000000-0000-4000-8000-000000000001";
    assert!(outputs[0].contains("REASONING_START"), "{}", outputs[0]);
    assert!(!outputs[0].contains(deterministic), "{}", outputs[0]);
    assert!(outputs[1].contains(deterministic), "{}", outputs[1]);
}

/// A request body through the module's request ABI in `piece`-byte pushes:
/// what went upstream, the last code, and the last output (the problem, if
/// refused).
fn request_through_module(
    plugin: &mut Plugin,
    body: &[u8],
    piece: usize,
) -> (Vec<u8>, i32, Vec<u8>) {
    let host = &mut plugin.host;
    assert_eq!(host.request_begin().expect("no trap"), 0);
    let mut upstream = Vec::new();
    let mut rest = body;
    let mut code = 0;
    while !rest.is_empty() && code == 0 {
        let n = piece.min(rest.len());
        let (took, c) = host.request_push(&rest[..n]).expect("no trap");
        code = c;
        rest = &rest[took..];
        if code == 0 {
            upstream.extend_from_slice(host.output().expect("no trap"));
        }
    }
    if code == 0 {
        code = host.request_finish().expect("no trap");
        if code == 0 {
            upstream.extend_from_slice(host.output().expect("no trap"));
        }
    }
    let last = host.output().expect("no trap").to_vec();
    (upstream, code, last)
}

/// The native `RequestRewriter` on the same pushes (the module's buffers).
fn request_native(
    body: &[u8],
    piece: usize,
    dialect: Dialect,
    deny: Option<&str>,
) -> (Vec<u8>, i32, Vec<u8>) {
    use agui_stream::rewrite::RequestRewriter;
    let (mut check, mut hold) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let mut r = RequestRewriter::new(&mut check, &mut hold, dialect).limit(16 << 20);
    if let Some(name) = deny {
        r.deny_tool(name).unwrap();
    }
    let mut upstream = Vec::new();
    let verdict = body
        .chunks(piece)
        .try_for_each(|p| r.push(p, &mut upstream))
        .and_then(|()| r.finish(&mut upstream).map(drop));
    match verdict {
        Ok(()) => (upstream, 0, Vec::new()),
        Err(refusal) => {
            let mut problem = Vec::new();
            r.write_problem(&refusal, &mut problem).unwrap();
            (upstream, i32::from(refusal.status()), problem)
        }
    }
}

/// Every request corpus body through `agui_request_*`, both dialects, a
/// tool denied or not: what goes upstream, the code and the problem are
/// the native request rewriter's; a valid body goes upstream whole.
#[test]
fn requests_are_checked_through_the_abi_as_natively() {
    let wasm = std::fs::read(module_path()).expect("the module");
    let mut plugin = Plugin::new(&wasm);
    let bodies = common::request_bodies();
    let (mut passed, mut refused) = (0, 0);
    for (dialect, deny) in [
        (Dialect::V1, None),
        (Dialect::V0, None),
        (Dialect::V1, Some("get_weather")),
    ] {
        let config = match (dialect, deny) {
            (Dialect::V0, _) => r#"{"dialect":"v0"}"#.to_owned(),
            (_, Some(name)) => format!(r#"{{"deny_tools":["{name}"]}}"#),
            _ => "{}".to_owned(),
        };
        assert_eq!(plugin.init(&config), 0);
        for (name, body) in &bodies {
            let body = body.as_slice();
            for piece in [7, 16 * 1024] {
                let got = request_through_module(&mut plugin, body, piece);
                let want = request_native(body, piece, dialect, deny);
                assert_eq!(got.1, want.1, "{name} {dialect:?} {deny:?}: code");
                assert_eq!(got.0, want.0, "{name}: upstream bytes");
                if got.1 == 0 {
                    if deny.is_none() {
                        assert_eq!(got.0, body, "{name}: whole");
                    }
                    passed += 1;
                } else {
                    assert_eq!(got.2, want.2, "{name}: the problem");
                    let problem: serde_json::Value = serde_json::from_slice(&got.2).unwrap();
                    assert_eq!(problem["status"], got.1);
                    assert!(
                        body.is_empty() || got.0.len() < body.len(),
                        "{name}: went upstream whole"
                    );
                    refused += 1;
                    // Refused for good: later calls answer the same.
                    assert_eq!(plugin.host.request_finish().unwrap(), got.1);
                }
                let report = plugin.report();
                assert_eq!(report["request_bytes_out"], got.0.len(), "{name}");
            }
        }
    }
    assert!(
        passed > 400 && refused > 600,
        "{passed} passed, {refused} refused"
    );
    // Codes: no request begun; a bad length; no configuration.
    let mut fresh = Plugin::new(&wasm);
    assert_eq!(fresh.host.request_push_len(0).unwrap(), -8);
    assert_eq!(fresh.host.request_finish().unwrap(), -8);
    assert_eq!(fresh.host.request_begin().unwrap(), -1);
    assert_eq!(fresh.init("{}"), 0);
    assert_eq!(fresh.host.request_begin().unwrap(), 0);
    assert_eq!(fresh.host.request_push_len(-1).unwrap(), -2);
    assert_eq!(fresh.host.request_push_len(i32::MAX).unwrap(), -2);
}
