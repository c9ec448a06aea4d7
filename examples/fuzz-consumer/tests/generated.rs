//! The fuzz target's property over seeded cases, without cargo-fuzz: a few
//! seconds on stable, for CI. `CASES=200000 cargo test --release` for more;
//! `CASE=fuzz/artifacts/consumer/crash-… cargo test replay` to replay what
//! the fuzzer found (the artifact is the generator's input).

mod property;

use agui_stream::generator::{GenOptions, GeneratedStream};
use std::path::Path;

/// xorshift64: the bytes a fuzzer would give.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// The case `input` drives, as the fuzz target's `Arbitrary` impl makes it.
fn case(input: &[u8]) -> GeneratedStream {
    GeneratedStream::new(input, GenOptions::new().violations(true))
}

/// Checks the property; on a failure, writes the input and the stream
/// (`NAME.input`, `NAME.sse`) into `target/tmp` first.
fn check(name: &str, input: &[u8], case: &GeneratedStream) {
    if let Err(panic) = std::panic::catch_unwind(|| property::check(case)) {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(format!("{name}.input")), input).unwrap();
        std::fs::write(dir.join(format!("{name}.sse")), &case.bytes).unwrap();
        let expected = case.expected;
        eprintln!("{name}: {expected:?}; {name}.sse in {}", dir.display());
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn generated_streams() {
    let cases: u64 = std::env::var("CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3000);
    let (mut valid, mut invalid) = (0, 0);
    for seed in 0..cases {
        // From a few bytes (short runs) to 4 KiB (long ones).
        let input = bytes(seed, [16, 64, 256, 1024, 4096][(seed % 5) as usize]);
        let case = case(&input);
        check(&format!("seed-{seed}"), &input, &case);
        if case.expected.is_valid() {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    eprintln!("{valid} valid and {invalid} invalid cases");
}

#[test]
fn replay() {
    let Ok(path) = std::env::var("CASE") else {
        return;
    };
    let input = std::fs::read(&path).unwrap();
    check("replay", &input, &case(&input));
}
