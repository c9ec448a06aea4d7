//! The request side of the gateway (`rewrite::RequestRewriter`): what goes
//! upstream of every request corpus body, the tools it removes, its limits
//! and the problem it answers a refused body with.

mod support;

use agui_stream::rewrite::{Refusal, RequestRewriter};
use agui_stream::{Dialect, RequestErrorKind};

/// What goes upstream of `body` in `piece`-byte pieces, and the verdict.
fn run(
    body: &[u8],
    dialect: Dialect,
    deny: &[&str],
    piece: usize,
    hold: usize,
    limit: u64,
) -> (Vec<u8>, Result<(), Refusal>, Vec<u8>) {
    let (mut check, mut held) = (vec![0u8; 1 << 16], vec![0u8; hold]);
    let mut r = RequestRewriter::new(&mut check, &mut held, dialect).limit(limit);
    for name in deny {
        r.deny_tool(name).unwrap();
    }
    let mut out = Vec::new();
    let mut verdict = body
        .chunks(piece.max(1))
        .try_for_each(|p| r.push(p, &mut out));
    if verdict.is_ok() {
        verdict = r.finish(&mut out).map(drop);
    }
    let mut problem = Vec::new();
    if let Err(refusal) = &verdict {
        r.write_problem(refusal, &mut problem).unwrap();
    }
    (out, verdict, problem)
}

/// The reference's stage for `name` in `dialect` (`None`: valid).
fn stage(name: &str, dialect: Dialect) -> Option<String> {
    support::request_answer(name, dialect).0
}

#[test]
fn valid_bodies_go_upstream_byte_for_byte_and_refused_ones_never_whole() {
    let mut refused = 0;
    for (name, body) in support::request_bodies() {
        for dialect in [Dialect::V1, Dialect::V0] {
            let want = stage(&name, dialect);
            for piece in [1, 7, 1460, body.len()] {
                let (out, verdict, problem) = run(&body, dialect, &[], piece, 1024, u64::MAX);
                match (&verdict, want.as_deref()) {
                    (Ok(()), None) => assert_eq!(out, body, "{name}"),
                    (Err(r @ Refusal::Invalid(e)), Some(stage)) => {
                        let capacity = matches!(e.kind, RequestErrorKind::Capacity(_));
                        assert!(r.reason() == stage || capacity, "{name}: {r} for {stage}");
                        assert!(
                            body.is_empty() || (out.len() < body.len() && body.starts_with(&out)),
                            "{name}"
                        );
                        let p: serde_json::Value = serde_json::from_slice(&problem).unwrap();
                        assert_eq!(p["status"], r.status(), "{name}");
                        assert_eq!(
                            p["code"],
                            if capacity {
                                "AGUI_INPUT_TOO_LARGE"
                            } else {
                                "AGUI_INVALID_INPUT"
                            }
                        );
                        assert!(!p["message"].as_str().unwrap().is_empty());
                        assert_eq!(
                            p["path"],
                            e.path
                                .steps()
                                .first()
                                .map_or(String::new(), |_| e.path.to_string())
                        );
                        refused += 1;
                    }
                    _ => {
                        panic!("{name} {dialect:?} pieces {piece}: {verdict:?}, reference {want:?}")
                    }
                }
            }
        }
    }
    assert!(refused > 400, "{refused}");
}

/// `body` with each `tools` entry named in `deny` removed, as a JSON value.
fn without(body: &[u8], deny: &[&str]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(body).unwrap();
    if let Some(tools) = v.get_mut("tools").and_then(|t| t.as_array_mut()) {
        tools.retain(|t| !t["name"].as_str().is_some_and(|n| deny.contains(&n)));
    }
    v
}

#[test]
fn denied_tools_leave_the_request_and_nothing_else_changes() {
    let mut removed_total = 0;
    for (name, body) in support::request_bodies() {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else {
            continue;
        };
        let names: Vec<String> = v["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if names.is_empty() || stage(&name, Dialect::V1).is_some() {
            continue;
        }
        // The first tool, the last, and all of them.
        let first = [names[0].as_str()];
        let last = [names[names.len() - 1].as_str()];
        let all: Vec<&str> = names.iter().map(String::as_str).collect();
        for deny in [&first[..], &last[..], &all[..]] {
            for piece in [1, 7, 1460] {
                let (out, verdict, _) = run(&body, Dialect::V1, deny, piece, 1 << 20, u64::MAX);
                assert!(verdict.is_ok(), "{name}: {verdict:?}");
                let got: serde_json::Value = serde_json::from_slice(&out).unwrap_or_else(|e| {
                    panic!("{name}: not JSON ({e}): {}", String::from_utf8_lossy(&out))
                });
                assert_eq!(got, without(&body, deny), "{name} deny {deny:?}");
                assert!(out.len() < body.len(), "{name}");
            }
            removed_total += 1;
        }
    }
    assert!(removed_total >= 6, "{removed_total} cases");
}

#[test]
fn only_the_entry_and_one_comma_go() {
    let cases = [
        // (body, what goes upstream)
        (
            r#"{"tools":[{"name":"a"},{"name":"shell"},{"name":"b"}]}"#,
            r#"{"tools":[{"name":"a"},{"name":"b"}]}"#,
        ),
        (
            r#"{"tools":[ {"name":"shell"} , {"name":"b"} ]}"#,
            r#"{"tools":[  {"name":"b"} ]}"#,
        ),
        (
            r#"{"tools":[{"name":"a"}, {"name":"shell"}]}"#,
            r#"{"tools":[{"name":"a"}]}"#,
        ),
        (
            "{\"tools\" : [\n  {\"parameters\":{\"name\":\"x\"},\"name\":\"\\u0073hell\"}\n]}",
            "{\"tools\" : [\n]}",
        ),
        // The last of duplicate names counts, as `JSON.parse` has it.
        (
            r#"{"tools":[{"name":"shell","name":"ok"},{"name":"ok","name":"shell"}]}"#,
            r#"{"tools":[{"name":"shell","name":"ok"}]}"#,
        ),
        // Every top-level `tools` (the last is the one that counts), and
        // only those: not a message's, not a string that says `tools`.
        (
            r#"{"a":"tools","tools":[{"name":"shell"}],"messages":[{"tools":[{"name":"shell"}]}],"t\u006fols":[{"name":"shell"},{"name":"b"}]}"#,
            r#"{"a":"tools","tools":[],"messages":[{"tools":[{"name":"shell"}]}],"t\u006fols":[{"name":"b"}]}"#,
        ),
    ];
    for (body, want) in cases {
        for piece in [1, 2, 7, body.len()] {
            let (mut check, mut hold) = (vec![0u8; 1024], vec![0u8; 1024]);
            let mut r = RequestRewriter::new(&mut check, &mut hold, Dialect::V1);
            r.deny_tool("shell").unwrap();
            let mut out = Vec::new();
            for p in body.as_bytes().chunks(piece) {
                r.push(p, &mut out).unwrap();
            }
            // Not a valid RunAgentInput: what went upstream is all but the
            // last byte, which is held back.
            assert!(r.finish(&mut out).is_err());
            assert_eq!(
                String::from_utf8_lossy(&out),
                want[..want.len() - 1],
                "{body} in {piece}-byte pieces"
            );
        }
    }
}

#[test]
fn limits_are_413() {
    let (_, body) = support::request_bodies()
        .into_iter()
        .find(|(n, _)| n == "valid-large-tool-result-100kb")
        .unwrap();
    let (out, verdict, problem) = run(&body, Dialect::V1, &[], 1460, 1024, 50_000);
    assert_eq!(verdict, Err(Refusal::TooLarge { limit: 50_000 }));
    assert!(out.len() <= 50_000);
    let p: serde_json::Value = serde_json::from_slice(&problem).unwrap();
    assert_eq!(
        (p["status"].as_u64(), p["code"].as_str()),
        (Some(413), Some("AGUI_INPUT_TOO_LARGE"))
    );
    // A tools entry larger than the hold buffer, with a tool denied.
    let big = format!(
        r#"{{"threadId":"t","runId":"r","messages":[],"tools":[{{"name":"a","description":"{}"}}]}}"#,
        "d".repeat(5000)
    );
    let (_, verdict, _) = run(
        big.as_bytes(),
        Dialect::V1,
        &["shell"],
        1460,
        1024,
        u64::MAX,
    );
    assert_eq!(verdict, Err(Refusal::ToolTooLarge { capacity: 1024 }));
    assert_eq!(Refusal::ToolTooLarge { capacity: 1024 }.status(), 413);
    // Without a denied tool nothing is held: the same body passes.
    let (out, verdict, _) = run(big.as_bytes(), Dialect::V1, &[], 1460, 1024, u64::MAX);
    assert_eq!((verdict, out), (Ok(()), big.into_bytes()));
}
