//! Differential conformance: the library against the reference oracle's
//! stored answers (`tests/corpus/conformance`, see `../shared/oracle`).
//!
//! For the categories the library implements so far, every case's output in
//! the oracle's form (canonical event lines, then result/index/stage) must
//! equal `NAME.expected` under V1 and `NAME.expected-0.0.59` under V0.
//! Cases with `*_CHUNK` or `THINKING_*` events are skipped (and counted):
//! their answers depend on the chunk normalizer. The remaining categories
//! (chunks, lifecycle, multi-run, ... whose answers depend on verification)
//! are only run, to check that nothing panics.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use agui_stream::Dialect;
use common::{Case, dialect_name, manifest, needs_chunk_normalizer, run};

/// Categories whose answers need only framing, decoding and encoding.
const COMPARED: &[&str] = &[
    "events",
    "passthrough",
    "field-order",
    "escapes",
    "numbers",
    "nesting",
    "json-edge",
    "sse",
    "schema",
];

/// Minimum number of compared cases per dialect, so the test cannot pass
/// vacuously (e.g. on an empty or mis-copied corpus).
const MIN_COMPARED: usize = 100;

/// The push size the `check` tool and the oracle use.
const CHUNK: usize = 65536;

fn conformance(dialect: Dialect) {
    let cases = manifest();
    let mut compared = 0;
    let mut skipped = Vec::new();
    let mut failures = Vec::new();
    for case in cases
        .iter()
        .filter(|c| COMPARED.contains(&c.category.as_str()))
    {
        let stream = case.stream();
        if needs_chunk_normalizer(&stream) {
            skipped.push(case.name.as_str());
            continue;
        }
        compared += 1;
        let expected = case.expected(dialect);
        let got = match catch_unwind(AssertUnwindSafe(|| run(&stream, dialect, CHUNK))) {
            Ok(got) => got,
            Err(_) => {
                failures.push(format!("{} [{}]: panicked", case.name, case.category));
                continue;
            }
        };
        if let Some(diff) = expected.first_difference(&got) {
            failures.push(format!("{} [{}]: {diff}", case.name, case.category));
        }
    }
    eprintln!(
        "conformance {}: {compared} compared, {} skipped (need the chunk normalizer): {}",
        dialect_name(dialect),
        skipped.len(),
        skipped.join(" ")
    );
    assert!(
        failures.is_empty(),
        "{} of {compared} cases differ from the oracle under {}:\n{}",
        failures.len(),
        dialect_name(dialect),
        failures.join("\n")
    );
    assert!(
        compared >= MIN_COMPARED,
        "only {compared} cases compared under {} (expected at least {MIN_COMPARED})",
        dialect_name(dialect)
    );
}

#[test]
fn conformance_v1() {
    conformance(Dialect::V1);
}

#[test]
fn conformance_v0() {
    conformance(Dialect::V0);
}

/// Every other case (verification is not built, so the answers are not
/// compared yet) still runs to completion in both dialects without a panic.
#[test]
fn uncompared_cases_do_not_panic() {
    let cases: Vec<Case> = manifest()
        .into_iter()
        .filter(|c| !COMPARED.contains(&c.category.as_str()))
        .collect();
    assert!(!cases.is_empty());
    let mut panics = Vec::new();
    for case in &cases {
        let stream = case.stream();
        for dialect in [Dialect::V1, Dialect::V0] {
            if catch_unwind(AssertUnwindSafe(|| run(&stream, dialect, CHUNK))).is_err() {
                panics.push(format!(
                    "{} [{}] {}",
                    case.name,
                    case.category,
                    dialect_name(dialect)
                ));
            }
        }
    }
    eprintln!("ran {} uncompared cases in both dialects", cases.len());
    assert!(panics.is_empty(), "panicked:\n{}", panics.join("\n"));
}

/// The manifest and the copied corpus agree: every case has its `.sse` and
/// both answers, and every `.sse` is in the manifest.
#[test]
fn corpus_is_complete() {
    let cases = manifest();
    let names: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), cases.len(), "duplicate names in MANIFEST.tsv");
    for case in &cases {
        for dialect in [Dialect::V1, Dialect::V0] {
            let path = case.expected_path(dialect);
            assert!(path.is_file(), "{}: missing {}", case.name, path.display());
            case.expected(dialect); // parses
        }
    }
    for path in common::sse_files(&common::conformance_dir()) {
        let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
        assert!(
            names.contains(stem.as_str()),
            "{stem}.sse is not in MANIFEST.tsv"
        );
    }
}
