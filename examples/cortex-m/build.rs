//! Puts `memory.x` where the linker finds it, passes the linker scripts,
//! and runs the firmware's work natively (the same `src/run.rs`, the same
//! capacities) to write the values the device must reproduce into
//! `$OUT_DIR/expected.rs`.

use std::fmt::Write as _;
use std::path::PathBuf;

#[allow(dead_code)]
#[path = "src/run.rs"]
mod run;

/// The host measures nothing.
struct Plain;

impl run::Meter for Plain {
    fn call<R>(&mut self, _: run::Call, f: impl FnOnce() -> R) -> R {
        f()
    }
}

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::copy("memory.x", out.join("memory.x")).expect("copy memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bins=--nmagic");
    println!("cargo:rustc-link-arg-bins=-Tlink.x");
    if std::env::var_os("CARGO_FEATURE_DEFMT").is_some() {
        println!("cargo:rustc-link-arg-bins=-Tdefmt.x");
    }
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=src/run.rs");
    println!("cargo:rerun-if-changed=../../src");
    println!("cargo:rerun-if-changed=../../tests/corpus/real");
    println!("cargo:rerun-if-changed=../../tests/corpus/conformance/life-finish-open-tool.sse");

    let mut code = String::from(
        "// Written by build.rs: the native run of src/run.rs.\n\
         /// The outcome of each bundled stream, as the host computed it.\n",
    );
    writeln!(
        code,
        "pub const EXPECTED: [Outcome; {}] = [",
        run::STREAMS.len()
    )
    .ok();
    let mut bufs = Box::new(run::Buffers::new());
    for (name, bytes) in run::STREAMS {
        let outcome = run::run(bytes, &mut bufs, &mut Plain, &mut |_, _| {}, &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        writeln!(code, "    // {name}\n    {outcome:?},").ok();
    }
    code.push_str("];\n");
    std::fs::write(out.join("expected.rs"), code).expect("write expected.rs");
}
