//! Differential conformance: the library against the reference oracle's
//! stored answers (`tests/corpus/conformance`, see `../shared/oracle`).
//!
//! Every case's output in the oracle's form (canonical event lines, then
//! result/index/stage) must equal `NAME.expected` under V1 and
//! `NAME.expected-0.0.59` under V0 — every category but `sse-quirk`, where
//! we follow WHATWG framing on purpose (checked separately below). The
//! shared corpus is completed by `tests/corpus/extra`: a case for each
//! lifecycle and chunk rule the shared corpus lacks, answered by the same
//! oracle.

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};

use agui_stream::Dialect;
use support::{Output, dialect_name, extra_dir, manifest, manifest_in, run};

/// Cases where the reference's framing differs from WHATWG's on purpose.
const QUIRKS: &str = "sse-quirk";

/// Minimum number of compared cases per dialect, so the test cannot pass
/// vacuously (e.g. on an empty or mis-copied corpus).
const MIN_COMPARED: usize = 200;

/// The push size the `check` tool and the oracle use.
const CHUNK: usize = 65536;

fn conformance(dialect: Dialect) {
    let mut cases = manifest();
    cases.extend(manifest_in(&extra_dir()));
    let mut compared = 0;
    let mut failures = Vec::new();
    for case in cases.iter().filter(|c| c.category != QUIRKS) {
        let stream = case.stream();
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
    eprintln!("conformance {}: {compared} compared", dialect_name(dialect));
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

/// The `sse-quirk` cases: WHATWG framing reads the CR/CRLF streams the
/// reference cannot split, and an empty `data:` payload is rejected as JSON
/// like the reference rejects it.
#[test]
fn quirk_cases_follow_whatwg_framing() {
    let quirks: Vec<_> = manifest()
        .into_iter()
        .filter(|c| c.category == QUIRKS)
        .collect();
    assert_eq!(quirks.len(), 4, "the corpus's sse-quirk cases");
    for case in &quirks {
        for dialect in [Dialect::V1, Dialect::V0] {
            let got: Output = run(&case.stream(), dialect, CHUNK);
            let text = got.result.to_string();
            if case.name == "sse-empty-data" {
                assert_eq!(
                    text, r#"{"result":"error","index":1,"stage":"sse"}"#,
                    "{}",
                    case.name
                );
                assert_eq!(got.events.len(), 1, "{}", case.name);
            } else {
                assert_eq!(
                    text,
                    r#"{"result":"ok"}"#,
                    "{} {}",
                    case.name,
                    dialect_name(dialect)
                );
                assert!(got.events.len() >= 2, "{}", case.name);
            }
        }
    }
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
    for path in support::sse_files(&support::conformance_dir()) {
        let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
        assert!(
            names.contains(stem.as_str()),
            "{stem}.sse is not in MANIFEST.tsv"
        );
    }
}

/// The reference's `verify` and `chunks` messages are stable English that
/// callers grep for: ours must be the same words, ids included.
#[test]
fn verify_chunk_and_json_messages_match_the_reference_word_for_word() {
    use agui_stream::{Config, Event, FrameInfo, Minting, Pipeline, Stage};
    let mut cases = manifest();
    cases.extend(manifest_in(&extra_dir()));
    let mut checked = 0;
    let mut failures = Vec::new();
    for case in cases.iter().filter(|c| c.category != QUIRKS) {
        for dialect in [Dialect::V1, Dialect::V0] {
            let expected = String::from_utf8(support::read(&case.expected_path(dialect))).unwrap();
            let last = expected
                .trim_end()
                .lines()
                .last()
                .unwrap_or_default()
                .to_owned();
            let stages = [
                r#""stage":"verify""#,
                r#""stage":"chunks""#,
                r#""stage":"sse""#,
            ];
            if !stages.iter().any(|s| last.contains(s)) {
                continue;
            }
            let mut buf = vec![0u8; 1 << 20];
            let config = Config::new()
                .dialect(dialect)
                .minting(Minting::Deterministic);
            let mut p = Pipeline::new(&mut buf, config);
            let mut sink = |_: &Event<'_>, _: &FrameInfo| {};
            let stream = case.stream();
            let err = stream
                .chunks(CHUNK)
                .try_for_each(|piece| p.push(piece, &mut sink).map(drop))
                .and_then(|_| p.finish(&mut sink).map(|_| ()))
                .expect_err("the oracle rejected this stream");
            assert!(matches!(
                err.stage,
                Stage::Verify | Stage::Chunks | Stage::Json
            ));
            let message = p.message(&err).to_string();
            let units: Vec<u16> = message.encode_utf16().collect();
            let ours = format!(r#""message":{}}}"#, support::canon::js_string(&units));
            checked += 1;
            if !last.ends_with(&ours) {
                failures.push(format!(
                    "{} {}:\n  expected {last}\n  got      {ours}",
                    case.name,
                    dialect_name(dialect)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 100, "only {checked} messages checked");
}

/// The `serde` feature's `Serialize` writes what the encoder writes, for
/// every event of the corpus in both dialects (numbers compared by value:
/// serde re-formats `1e2` or `-0`, the encoder keeps them as written).
#[cfg(feature = "serde")]
#[test]
fn serde_serializes_like_the_encoder() {
    use agui_stream::{Config, Event, FrameInfo, Pipeline, encode};
    use serde_json::Value;

    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.keys().eq(y.keys()) && x.values().zip(y.values()).all(|(x, y)| same(x, y))
            }
            _ => a == b,
        }
    }

    let (mut compared, mut skipped) = (0, 0);
    for case in manifest() {
        for dialect in [Dialect::V1, Dialect::V0] {
            let mut buf = vec![0u8; 1 << 20];
            let mut pipeline = Pipeline::new(&mut buf, Config::new().dialect(dialect));
            let mut sink = |ev: &Event<'_>, _: &FrameInfo| {
                let mut encoded = Vec::new();
                encode(ev, &mut encoded).unwrap();
                // serde_json cannot hold a lone surrogate; those are skipped.
                let Ok(encoded) = serde_json::from_slice::<Value>(&encoded) else {
                    skipped += 1;
                    return;
                };
                let serialized = serde_json::to_value(ev).unwrap();
                assert!(
                    same(&encoded, &serialized),
                    "{}: {encoded} vs {serialized}",
                    case.name
                );
                compared += 1;
            };
            let _ = pipeline.push(&case.stream(), &mut sink);
        }
    }
    assert!(compared > 5000, "only {compared} events compared");
    assert!(skipped < 20, "{skipped} events skipped");
}
