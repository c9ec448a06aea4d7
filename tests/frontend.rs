//! The front ends' shared module (`examples/shared/frontend.rs`): the
//! configuration read from the proxy-wasm filter's JSON and from flags,
//! its mapping to the library's types, the header policy and the stats
//! line; and the filters' buffer pool (`examples/shared/pool.rs`).
#![cfg(feature = "serde")]

#[path = "../examples/shared/frontend.rs"]
mod frontend;
#[path = "../examples/shared/pool.rs"]
mod pool;

use agui_stream::Dialect;
use agui_stream::Minting;
use agui_stream::rewrite::{OnViolation, Rewriter, Stats, ToolTables};
use frontend::{ConfigError, Gateway};

/// The filter's documented configuration reads, every key as written.
#[test]
fn the_filters_json_reads() {
    let json = br#"{"dialect": "v0", "on_violation": "drop", "repair": false, "close_open": true,
        "canonical": true, "drop_raw": true, "max_event_bytes": 1000,
        "check_tool_args": true, "deny_tools": ["get_weather", "sh\u0065ll"],
        "deterministic_ids": true, "buffer": 4096, "keepalive_ms": 0,
        "request_identity": false, "log_streams": false,
        "check_requests": false, "max_request_bytes": 5000, "request_path": "/agent"}"#;
    let g = Gateway::from_json(json).expect("the filter's keys");
    assert_eq!(g.dialect, Dialect::V0);
    assert_eq!(g.on_violation, OnViolation::Drop);
    assert!(!g.repair && g.close_open && g.canonical && g.drop_raw && g.check_tool_args);
    assert_eq!(g.max_event_bytes, 1000);
    assert_eq!(
        g.deny_tools.iter().collect::<Vec<_>>(),
        ["get_weather", "shell"]
    );
    assert!(g.deterministic_ids && !g.request_identity && !g.log_streams);
    assert!(!g.check_requests);
    assert_eq!(
        (g.max_request_bytes, g.request_path.as_str()),
        (5000, "/agent")
    );
    assert_eq!((g.buffer, g.keepalive_ms()), (4096, None));
    let config = g.config();
    assert_eq!(config.minting, Minting::Deterministic);
    assert!(config.check_tool_args);
    let options = g.options();
    assert!(options.close_open && !options.repair && options.drop_raw);

    assert_eq!(Gateway::from_json(b"  \n"), Ok(Gateway::default()));
    assert_eq!(Gateway::from_json(b"{}"), Ok(Gateway::default()));
    assert_eq!(Gateway::default().config().minting, Minting::PerRun);
    for bad in [
        &br#"{"dialect":"v2"}"#[..],
        br#"{"on_violation":"ignore"}"#,
        br#"{"unknown":1}"#,
        br#"{"repair":"yes"}"#,
        br#"{"deny_tools":"x"}"#,
    ] {
        assert!(
            matches!(Gateway::from_json(bad), Err(ConfigError::Json(_))),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    assert_eq!(
        Gateway::from_json(br#"{"buffer":63}"#),
        Err(ConfigError::Buffer(63))
    );
    let many = format!(
        "{{\"deny_tools\":[{}]}}",
        (0..17)
            .map(|i| format!("\"t{i}\""))
            .collect::<Vec<_>>()
            .join(",")
    );
    assert!(Gateway::from_json(many.as_bytes()).is_err());
}

/// Flags set what the JSON keys set; each flag in the table is taken.
#[test]
fn flags_set_the_same() {
    let mut g = Gateway::default();
    for (flag, value) in [
        ("dialect", Some("v0")),
        ("on-violation", Some("drop")),
        ("no-repair", None),
        ("close-open", None),
        ("max-event-bytes", Some("1000")),
        ("canonical", None),
        ("drop-raw", None),
        ("deny-tool", Some("get_weather")),
        ("deny-tool", Some("shell")),
        ("check-tool-args", None),
        ("deterministic-ids", None),
        ("buffer", Some("4096")),
        ("buffer-budget", Some("1048576")),
        ("hold-bytes", Some("0")),
        ("keepalive-ms", Some("0")),
        ("no-request-check", None),
        ("max-request-bytes", Some("5000")),
        ("request-path", Some("/agent")),
    ] {
        g.set(flag, value)
            .unwrap_or_else(|e| panic!("--{flag}: {e}"));
    }
    let json = Gateway::from_json(
        br#"{"dialect":"v0","on_violation":"drop","repair":false,"close_open":true,
            "max_event_bytes":1000,"canonical":true,"drop_raw":true,
            "deny_tools":["get_weather","shell"],"check_tool_args":true,
            "deterministic_ids":true,"buffer":4096,"buffer_budget":1048576,"hold_bytes":0,"keepalive_ms":0,
            "check_requests":false,"max_request_bytes":5000,"request_path":"/agent"}"#,
    )
    .expect("json");
    assert_eq!(g, json);
    assert_eq!(frontend::FLAGS.len(), 17);
    assert!(
        frontend::FLAGS
            .iter()
            .all(|f| Gateway::flag(f.name).is_some())
    );
    let mut g = Gateway::default();
    assert_eq!(g.set("bogus", None), Err(ConfigError::UnknownFlag));
    assert_eq!(g.set("dialect", None), Err(ConfigError::MissingValue));
    assert_eq!(
        g.set("drop-raw", Some("1")),
        Err(ConfigError::UnexpectedValue)
    );
    assert!(matches!(
        g.set("dialect", Some("v9")),
        Err(ConfigError::Name(_))
    ));
    assert_eq!(g.set("buffer", Some("x")), Err(ConfigError::Number));
    assert_eq!(
        g.set("buffer", Some("17000000")),
        Err(ConfigError::Buffer(17_000_000))
    );
    // What `set` takes the rewriter takes.
    for i in 0..16 {
        g.set("deny-tool", Some(&format!("tool-{i:02}")))
            .expect("16 names");
    }
    assert_eq!(
        g.set("deny-tool", Some("one-more")),
        Err(ConfigError::DeniedTools)
    );
    let (mut frames, mut raw) = ([0u8; 64], [0u8; 64]);
    let mut tables = ToolTables::new();
    assert!(g.rewriter(&mut frames, &mut raw, Some(&mut tables)).is_ok());
    // Denied tools need the tables.
    assert!(g.rewriter(&mut frames, &mut raw, None).is_err());
}

/// Which requests are agent requests, whose bodies are checked.
#[test]
fn agent_requests() {
    let sse = b"text/event-stream";
    let g = Gateway::default();
    assert!(g.is_agent_request(b"POST", b"/run", sse));
    assert!(g.is_agent_request(b"post", b"/", b"application/json, text/event-stream"));
    assert!(!g.is_agent_request(b"GET", b"/run", sse));
    assert!(!g.is_agent_request(b"POST", b"/run", b"application/json"));
    let mut g = Gateway::default();
    g.set("request-path", Some("/agent")).unwrap();
    assert!(g.is_agent_request(b"POST", b"/agent/run", b"*/*"));
    assert!(!g.is_agent_request(b"POST", b"/other", sse));
    g.set("no-request-check", None).unwrap();
    assert!(!g.is_agent_request(b"POST", b"/agent/run", sse));
}

/// The header policy: which responses are rewritten.
#[test]
fn the_header_policy() {
    use frontend::{is_event_stream, is_identity};
    assert!(is_event_stream(b"text/event-stream"));
    assert!(is_event_stream(b" Text/Event-Stream ; charset=utf-8"));
    assert!(!is_event_stream(b"text/event-streams"));
    assert!(!is_event_stream(b"application/json"));
    assert!(is_identity([]));
    assert!(is_identity([&b"identity"[..]]));
    assert!(is_identity([&b"identity, IDENTITY"[..], b""]));
    assert!(!is_identity([&b"gzip"[..]]));
    assert!(!is_identity([&b"identity"[..], b"br"]));
    assert!(!is_identity([&b"identity, gzip"[..]]));
    assert!(frontend::accepts_event_stream(
        b"application/json, text/event-stream"
    ));
    assert!(
        frontend::RESPONSE_EDITS.contains(&frontend::HeaderEdit::SetIfAbsent(
            "cache-control",
            "no-cache"
        ))
    );
}

/// The stats line is `Stats`' serialization, then the fields added.
#[test]
fn the_stats_line_is_the_serialization() {
    let (mut frames, mut raw) = ([0u8; 4096], [0u8; 4096]);
    let mut rewriter = Rewriter::new(
        &mut frames,
        &mut raw,
        Default::default(),
        Default::default(),
    );
    let mut out = Vec::new();
    let input = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
                  data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"x\"}\n\n";
    rewriter.push(input, &mut out).expect("push");
    rewriter.finish(&mut out).expect("finish");
    let stats: &Stats = rewriter.stats();
    assert!(stats.violations > 0 && stats.events > 0);
    let mut line = frontend::StatsLine::new(stats);
    line.field("error", &None::<&str>).field("path", "/a\"b");
    let want = serde_json::to_string(stats).expect("serde_json");
    let want = format!(
        "{},\"error\":null,\"path\":\"/a\\\"b\"}}",
        &want[..want.len() - 1]
    );
    assert_eq!(line.as_str(), want);
    let v: serde_json::Value = serde_json::from_str(line.as_str()).expect("JSON");
    assert_eq!(v["violations_by_stage"]["verify"], 1);
}

/// The pool allocates `size`-byte pairs within its budget, small ones past
/// it, and reuses what comes back; an empty pair is not kept.
#[test]
fn the_pool_keeps_its_budget() {
    // (The pool is per thread: this test's own.)
    let mut sizes = Vec::new();
    let mut take = |size| {
        let pair = pool::take(size, 3 * 2 * 4096, |n| sizes.push(n));
        assert_eq!(pair.0.len(), pair.1.len(), "a pair is of one size");
        pair
    };
    let pairs: Vec<_> = (0..5).map(|_| take(4096)).collect();
    let lens: Vec<_> = pairs.iter().map(|p| p.0.len()).collect();
    assert_eq!(lens, [4096, 4096, 4096, pool::SMALL, pool::SMALL]);
    for pair in pairs {
        pool::give_back(pair);
    }
    pool::give_back((&mut [], &mut []));
    // Back from the pool: nothing new, the large pairs first.
    let again: Vec<_> = (0..5).map(|_| take(4096)).collect();
    let lens: Vec<_> = again.iter().map(|p| p.0.len()).collect();
    assert_eq!(lens, [4096, 4096, 4096, pool::SMALL, pool::SMALL]);
    assert_eq!(sizes, [4096, 4096, 4096, pool::SMALL, pool::SMALL]);
    for pair in again {
        pool::give_back(pair);
    }
}

/// A rewriter holds a lent pair only while a push ended inside a block.
#[test]
fn a_rewriter_holds_a_pair_only_inside_a_block() {
    let gateway = Gateway::default();
    let mut rewriter = gateway.rewriter(&mut [], &mut [], None).expect("rewriter");
    let mut allocated = 0;
    let mut out = Vec::new();
    let stream: &[u8] = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
    let ping: &[u8] = b": ping\n\n";
    for (piece, inside) in [(&stream[..20], true), (&stream[20..], false), (ping, false)] {
        pool::lend(&mut rewriter, 2048, 1 << 20, |_| allocated += 1);
        rewriter.push(piece, &mut out).expect("push");
        pool::reclaim(&mut rewriter);
        assert_eq!(rewriter.holds_block(), inside);
        match rewriter.put_buffers(&mut [], &mut []) {
            // Between blocks: the buffers it has are the empty ones.
            Ok((frames, raw)) => assert!(!inside && frames.is_empty() && raw.is_empty()),
            Err(_) => assert!(inside),
        }
    }
    // One pair, lent three times.
    assert_eq!(allocated, 1);
    assert_eq!(out, [stream, ping].concat());
}

/// Tool tables come from the pool only for a gateway that denies tools,
/// and go back with the rewriter's pair: the next stream gets the same,
/// cleared and given the names again.
#[test]
fn tool_tables_go_back_to_the_pool() {
    let mut gateway = Gateway::default();
    gateway.set("deny-tool", Some("shell")).expect("a name");
    assert!(gateway.denies_tools() && !Gateway::default().denies_tools());
    let stream: &[u8] = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n\
        data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c\",\"toolCallName\":\"shell\"}\n\n";
    let mut seen = Vec::new();
    for _ in 0..2 {
        let tables = pool::take_tables();
        seen.push(std::ptr::from_ref::<ToolTables>(tables));
        let mut rewriter = gateway
            .rewriter(&mut [], &mut [], Some(tables))
            .expect("rewriter");
        let mut out = Vec::new();
        pool::lend(&mut rewriter, 1024, 1 << 20, |_| ());
        rewriter.push(stream, &mut out).expect("push");
        pool::reclaim(&mut rewriter);
        // The call to the denied tool is gone, every time.
        assert_eq!(out, &stream[..57]);
        pool::give_back_parts(rewriter);
    }
    assert_eq!(seen[0], seen[1]);
}

/// A block larger than the buffers is held whole (its raw buffer grown
/// from the pool, `pool::push_all`) up to `hold_bytes`, within the
/// budget; past either it goes ahead of its verdict. Whole or ahead, the
/// client gets the same bytes; cut, a held block never reaches it.
#[test]
fn held_blocks_grow_from_the_pool() {
    let start = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
    let large = format!(
        "data: {{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"result\":\"{}\"}}\n\n",
        "x".repeat(300_000)
    );
    let stream = format!("{start}{large}");
    // (hold_bytes, budget) → streamed ahead?
    for (hold, budget, ahead) in [
        (1 << 20, 64 << 20, false),
        (128 << 10, 64 << 20, true),
        (1 << 20, 4 * 4096 + 8192, true),
        (0, 64 << 20, true),
    ] {
        let mut gateway = Gateway::default();
        gateway
            .set("hold-bytes", Some(&hold.to_string()))
            .expect("a number");
        for cut in [stream.len(), start.len() + 200_000] {
            let mut out_bytes = Vec::new();
            let mut rewriter = gateway.rewriter(&mut [], &mut [], None).expect("rewriter");
            for piece in stream.as_bytes()[..cut].chunks(1460) {
                pool::lend(&mut rewriter, 4096, budget, |_| ());
                let ended = pool::push_all(&mut rewriter, piece, &mut out_bytes, hold, budget);
                assert_eq!(ended, Ok(false));
                pool::reclaim(&mut rewriter);
            }
            pool::lend(&mut rewriter, 4096, budget, |_| ());
            rewriter.finish(&mut out_bytes).expect("finish");
            let streamed = rewriter.stats().streamed;
            pool::give_back_parts(rewriter);
            assert_eq!(
                streamed,
                u64::from(ahead),
                "hold {hold}, budget {budget}, cut {cut}"
            );
            let out = String::from_utf8(out_bytes).expect("UTF-8");
            if cut == stream.len() {
                assert_eq!(out, stream);
            } else if ahead {
                assert!(
                    out.contains("\ndata: \u{1}\n\n"),
                    "the part that went ahead is cut"
                );
            } else {
                assert_eq!(
                    out,
                    format!(
                        "{start}data: {{\"type\":\"RUN_ERROR\",\"message\":\"the stream ended before the run finished\",\"code\":\"AGUI_STREAM_TRUNCATED\"}}\n\n"
                    )
                );
            }
        }
    }
}
