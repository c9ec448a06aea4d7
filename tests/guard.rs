//! Guard rules on a lane of text: the streaming matcher against a
//! whole-text reference written from the rules' definitions (each a
//! predicate on a candidate match, tried at every position for every
//! length), on generated texts with planted matches, at random splits.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod support;

use agui_stream::guard::{
    Action, Blocked, Detector, Lane, MAX_MATCH, Pattern, Piece, Rule, Rules, RulesError,
};
use support::Rng;

// ------------------------------------------------------------- reference

fn all(s: &[u8], f: impl Fn(u8) -> bool) -> bool {
    s.iter().all(|&b| f(b))
}

fn email(s: &[u8]) -> bool {
    let Some(at) = s.iter().position(|&b| b == b'@') else {
        return false;
    };
    let (local, domain) = (&s[..at], &s[at + 1..]);
    let labels: Vec<&[u8]> = domain.split(|&b| b == b'.').collect();
    let last = labels[labels.len() - 1];
    s.len() <= 254
        && (1..=64).contains(&local.len())
        && all(local, |b| {
            b.is_ascii_alphanumeric() || b"._%+-".contains(&b)
        })
        && labels.len() >= 2
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len()) && all(l, |b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && (2..=24).contains(&last.len())
        && all(last, |b| b.is_ascii_alphabetic())
}

fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d - b'0');
            match i % 2 {
                0 => d,
                _ if d * 2 > 9 => d * 2 - 9,
                _ => d * 2,
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn card(s: &[u8]) -> bool {
    let digits: Vec<u8> = s.iter().copied().filter(u8::is_ascii_digit).collect();
    !s.is_empty()
        && s[0].is_ascii_digit()
        && s[s.len() - 1].is_ascii_digit()
        && all(s, |b| b.is_ascii_digit() || b == b' ' || b == b'-')
        && !s
            .windows(2)
            .any(|w| !w[0].is_ascii_digit() && !w[1].is_ascii_digit())
        && (13..=19).contains(&digits.len())
        && luhn(&digits)
}

fn ssn(s: &[u8]) -> bool {
    s.len() == 11
        && s.iter().enumerate().all(|(i, &b)| {
            if i == 3 || i == 6 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
}

fn aws(s: &[u8]) -> bool {
    s.len() == 20
        && (s.starts_with(b"AKIA") || s.starts_with(b"ASIA"))
        && all(&s[4..], |b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

fn github(s: &[u8]) -> bool {
    s.len() == 40
        && s.starts_with(b"gh")
        && b"pousr".contains(&s[2])
        && s[3] == b'_'
        && all(&s[4..], |b| b.is_ascii_alphanumeric())
}

fn slack(s: &[u8]) -> bool {
    (15..=53).contains(&s.len())
        && s.starts_with(b"xox")
        && b"abprs".contains(&s[3])
        && s[4] == b'-'
        && all(&s[5..], |b| b.is_ascii_alphanumeric() || b == b'-')
}

fn full_match(rule: &Rule<'_>, s: &[u8]) -> bool {
    match rule.pattern {
        Pattern::Literal { text, ignore_case } => match ignore_case {
            true => s.eq_ignore_ascii_case(text),
            false => s == text,
        },
        Pattern::Builtin(Detector::Email) => email(s),
        Pattern::Builtin(Detector::CreditCard) => card(s),
        Pattern::Builtin(Detector::UsSsn) => ssn(s),
        Pattern::Builtin(Detector::AwsAccessKeyId) => aws(s),
        Pattern::Builtin(Detector::GithubToken) => github(s),
        Pattern::Builtin(Detector::SlackToken) => slack(s),
        Pattern::Builtin(_) => unimplemented!("a detector the reference lacks"),
    }
}

/// A match: the rule's index, where it starts, its length.
type Match = (usize, usize, usize);

/// What the whole text comes to: the output, the matches, and the rule
/// that blocked, if one did.
fn reference(rules: &[Rule<'_>], text: &[u8]) -> (Vec<u8>, Vec<Match>, Option<usize>) {
    let (mut out, mut matches) = (Vec::new(), Vec::new());
    let mut p = 0;
    while p < text.len() {
        let mut best: Option<(usize, usize)> = None;
        for (i, rule) in rules.iter().enumerate() {
            let most = MAX_MATCH.min(text.len() - p);
            if let Some(len) = (1..=most)
                .rev()
                .find(|&l| full_match(rule, &text[p..p + l]))
                && len > best.map_or(0, |b| b.1)
            {
                best = Some((i, len));
            }
        }
        match best {
            None => {
                out.push(text[p]);
                p += 1;
            }
            Some((i, len)) => {
                matches.push((i, p, len));
                match rules[i].action {
                    Action::Mask => out.extend_from_slice(rules[i].replacement.as_bytes()),
                    Action::Monitor => out.extend_from_slice(&text[p..p + len]),
                    Action::Block => return (out, matches, Some(i)),
                }
                p += len;
            }
        }
    }
    (out, matches, None)
}

// ------------------------------------------------------------- streaming

struct Streamed {
    out: Vec<u8>,
    matched: Vec<usize>,
    blocked: Option<usize>,
    most_held: usize,
}

fn stream(rules: &Rules<'_>, text: &[u8], sizes: &[usize]) -> Streamed {
    let mut lane = Lane::new();
    let (mut out, mut matched) = (Vec::new(), Vec::new());
    let mut sink = |p: Piece<'_>| match p {
        Piece::Text(t) => out.extend_from_slice(t),
        Piece::Matched { rule, .. } => matched.push(rule),
    };
    let (mut at, mut most_held, mut blocked) = (0, 0, None);
    for &n in sizes {
        match lane.push(rules, &text[at..at + n], &mut sink) {
            Ok(()) => {}
            Err(Blocked { rule }) => {
                blocked = Some(rule);
                break;
            }
        }
        at += n;
        most_held = most_held.max(lane.held());
    }
    if blocked.is_none()
        && let Err(Blocked { rule }) = lane.finish(rules, &mut sink)
    {
        blocked = Some(rule);
    }
    assert_eq!(lane.held(), 0);
    Streamed {
        out,
        matched,
        blocked,
        most_held,
    }
}

// ------------------------------------------------------------- texts

// Ties: `falcon` and `Falcon`, and the literal SSN with `us_ssn`.
const LITERALS: [(&str, bool); 8] = [
    ("Project Falcon", true),
    ("Falcon", false),
    ("falcon", true),
    ("123-45-6789", false),
    ("fal", true),
    ("ada@example", false),
    ("4111", false),
    ("naïve café", false),
];

fn valid_card(rng: &mut Rng) -> Vec<u8> {
    let n = 13 + rng.below(7);
    let mut digits: Vec<u8> = (0..n - 1).map(|_| b'0' + rng.below(10) as u8).collect();
    let check = (0..10u8)
        .find(|&c| {
            let mut d = digits.clone();
            d.push(b'0' + c);
            luhn(&d)
        })
        .unwrap();
    digits.push(b'0' + check);
    let mut out = Vec::new();
    for (i, d) in digits.iter().enumerate() {
        if i > 0 {
            match rng.below(6) {
                0 => out.push(b' '),
                1 => out.push(b'-'),
                _ => {}
            }
        }
        out.push(*d);
    }
    out
}

fn word(rng: &mut Rng, alphabet: &[u8], min: usize, max: usize) -> Vec<u8> {
    let n = min + rng.below(max - min + 1);
    (0..n)
        .map(|_| alphabet[rng.below(alphabet.len())])
        .collect()
}

const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
const UPPER_DIGIT: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A text of planted matches, near misses and noise.
fn text(rng: &mut Rng, parts: usize) -> Vec<u8> {
    let mut t = Vec::new();
    for _ in 0..parts {
        let part: Vec<u8> = match rng.below(16) {
            0 | 1 => {
                let mut e = word(rng, b"abc.x_%+-09", 1, 12);
                e.push(b'@');
                e.extend(word(rng, b"abcdef-09", 1, 8));
                for _ in 0..rng.below(3) + 1 {
                    e.push(b'.');
                    let alphabet = if rng.below(3) == 0 { b"ab1-" } else { LOWER };
                    e.extend(word(rng, alphabet, 1, 6));
                }
                e
            }
            2 => valid_card(rng),
            3 => word(rng, b"0123456789 -", 5, 30),
            4 => {
                let n = word(rng, b"0123456789", 9, 9);
                [&n[..3], b"-", &n[3..5], b"-", &n[5..]].concat()
            }
            5 => [
                if rng.below(2) == 0 {
                    &b"AKIA"[..]
                } else {
                    b"ASIA"
                },
                &word(rng, UPPER_DIGIT, 14, 18),
            ]
            .concat(),
            6 => [
                &b"gh"[..],
                &[b"pousr"[rng.below(5)]],
                b"_",
                &word(rng, ALNUM, 34, 38),
            ]
            .concat(),
            7 => [
                &b"xox"[..],
                &[b"abprsz"[rng.below(6)]],
                b"-",
                &word(rng, ALNUM, 8, 50),
            ]
            .concat(),
            8 | 9 => {
                let (lit, _) = LITERALS[rng.below(LITERALS.len())];
                let mut l = lit.as_bytes().to_vec();
                if rng.below(2) == 0 {
                    l.iter_mut().for_each(|b| {
                        if rng.below(2) == 0 {
                            *b = b.to_ascii_uppercase()
                        }
                    });
                }
                if rng.below(4) == 0 {
                    l.truncate(rng.below(l.len()));
                }
                l
            }
            10 => word(rng, b"@.-_ 1aZ", 1, 10),
            11 => "é ✓ 😀".as_bytes().to_vec(),
            12 => word(rng, LOWER, 70, 90),
            _ => word(rng, LOWER, 1, 9),
        };
        t.extend(part);
        t.extend_from_slice([&b" "[..], b"", b".", b"\n", b"-", b"@", b"9"][rng.below(7)]);
    }
    t
}

fn rule_set(rng: &mut Rng) -> Vec<Rule<'static>> {
    let mut rules = Vec::new();
    for d in Detector::ALL {
        if rng.below(4) != 0 {
            rules.push(Rule::builtin(d, Action::Mask));
        }
    }
    for (lit, fold) in LITERALS {
        if rng.below(2) == 0 {
            let r = Rule::literal(lit, Action::Mask).replacement("<lit>");
            rules.push(if fold { r.ignore_case() } else { r });
        }
    }
    // Shuffled: ties go to the first listed.
    for i in (1..rules.len()).rev() {
        rules.swap(i, rng.below(i + 1));
    }
    for r in &mut rules {
        r.action = match rng.below(8) {
            0 => Action::Monitor,
            1 => Action::Block,
            _ => Action::Mask,
        };
    }
    rules
}

// ------------------------------------------------------------- tests

#[test]
fn streaming_finds_what_the_whole_text_has_at_every_split() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut by_rule = std::collections::HashMap::<&str, usize>::new();
    for case in 0..300 {
        let rules_list = rule_set(&mut rng);
        let rules: Rules<'_> = Rules::new(&rules_list).unwrap();
        let parts = 4 + rng.below(24);
        let text = text(&mut rng, parts);
        let (want, found, blocked) = reference(&rules_list, &text);
        for m in &found {
            let name = match rules_list[m.0].pattern {
                Pattern::Literal { .. } => "literal",
                Pattern::Builtin(d) => d.name(),
            };
            *by_rule.entry(name).or_default() += 1;
        }
        for round in 0..6 {
            let sizes: Vec<usize> = match round {
                0 => vec![text.len()],
                1 => vec![1; text.len()],
                _ => {
                    let mut s = Vec::new();
                    let mut left = text.len();
                    while left > 0 {
                        let n = (1 + rng.below([3, 8, 40, 400][round - 2])).min(left);
                        s.push(n);
                        left -= n;
                    }
                    s
                }
            };
            let got = stream(&rules, &text, &sizes);
            assert_eq!(
                String::from_utf8_lossy(&got.out),
                String::from_utf8_lossy(&want),
                "case {case} round {round}: {:?} over {:?}",
                rules_list,
                String::from_utf8_lossy(&text)
            );
            assert_eq!(
                got.matched,
                found.iter().map(|m| m.0).collect::<Vec<_>>(),
                "case {case}"
            );
            assert_eq!(got.blocked, blocked, "case {case}");
            assert!(got.most_held < rules.max_len().max(1), "case {case}");
        }
    }
    // The texts plant matches of every kind.
    let kinds = Detector::ALL.map(|d| d.name());
    for name in kinds.iter().chain(&["literal"]) {
        assert!(by_rule.get(name).copied().unwrap_or(0) >= 20, "{by_rule:?}");
    }
}

#[test]
fn the_definitions_by_example() {
    let rules = [
        Rule::builtin(Detector::Email, Action::Mask),
        Rule::builtin(Detector::CreditCard, Action::Mask).replacement("[CARD]"),
    ];
    let compiled: Rules<'_> = Rules::new(&rules).unwrap();
    let cases: [(&str, &str); 10] = [
        ("mail ada@example.org now", "mail [REDACTED] now"),
        // The longest match: the top-level domain takes every letter.
        ("x@a.comx1", "[REDACTED]1"),
        // Two labels at least; a top-level domain of letters only.
        ("ada@localhost ada@a.b1", "ada@localhost ada@a.b1"),
        // The local part's last 64 bytes.
        (
            &format!("{}@a.io", "a".repeat(70)),
            &format!("{}[REDACTED]", "a".repeat(6)),
        ),
        ("4111 1111 1111 1111", "[CARD]"),
        // No word boundaries: the last 13 digits pass.
        ("4111-1111-1111-1112", "411[CARD]"),
        ("4111-1111-1111-1113", "4111-1111-1111-1113"),
        // Two separators in a row end a number.
        ("4111  1111 1111 1111", "4111  1111 1111 1111"),
        // The longest that passes Luhn: 16 of the 17 digits.
        ("41111111111111111", "[CARD]1"),
        ("card 4111111111111111.", "card [CARD]."),
    ];
    for (text, want) in cases {
        assert_eq!(
            reference(&rules, text.as_bytes()).0,
            want.as_bytes(),
            "{text}"
        );
        let got = stream(&compiled, text.as_bytes(), &vec![1; text.len()]);
        assert_eq!(String::from_utf8_lossy(&got.out), want, "{text}");
    }
}

#[test]
fn a_lane_holds_back_only_what_could_still_match() {
    let rules: Rules<'_> = Rules::new(&[
        Rule::builtin(Detector::Email, Action::Mask),
        Rule::literal("Falcon", Action::Block),
    ])
    .unwrap();
    let mut lane = Lane::new();
    let mut out = Vec::new();
    let mut sink = |p: Piece<'_>| {
        if let Piece::Text(t) = p {
            out.extend_from_slice(t)
        }
    };
    // Nothing can start at a space: nothing held.
    lane.push(&rules, b"hello world ", &mut sink).unwrap();
    assert_eq!(lane.held(), 0);
    // `ada@exa` may become an address; `Fal` may become the literal.
    lane.push(&rules, b"mail ada@exa", &mut sink).unwrap();
    assert_eq!(lane.held(), "ada@exa".len());
    lane.push(&rules, b"mple.org and Fal", &mut sink).unwrap();
    // The address ended at the space; `Fal` may still become the literal.
    assert_eq!(lane.held(), "Fal".len());
    lane.push(&rules, b"se ", &mut sink).unwrap();
    assert_eq!(lane.held(), 0);
    // A block lets no byte of the match out, nor anything after.
    lane.push(&rules, b"then Falc", &mut sink).unwrap();
    assert_eq!(
        lane.push(&rules, b"on!", &mut sink),
        Err(Blocked { rule: 1 })
    );
    assert_eq!(
        lane.push(&rules, b"more", &mut sink),
        Err(Blocked { rule: 1 })
    );
    assert_eq!(out, b"hello world mail [REDACTED] and False then ");
}

#[test]
fn rules_are_checked_when_configured() {
    let long = "x".repeat(MAX_MATCH + 1);
    let too_long: Result<Rules<'_>, _> = Rules::new(&[Rule::literal(&long, Action::Mask)]);
    assert_eq!(too_long.unwrap_err(), RulesError::TooLong { rule: 0 });
    let empty: Result<Rules<'_>, _> = Rules::new(&[Rule::literal("", Action::Mask)]);
    assert_eq!(empty.unwrap_err(), RulesError::Empty { rule: 0 });
    let many = [Rule::literal("a", Action::Mask); 3];
    assert_eq!(
        Rules::<'_, 2>::new(&many).unwrap_err(),
        RulesError::TooMany { capacity: 2 }
    );
    let names: Vec<_> = Detector::ALL
        .iter()
        .map(|d| Detector::from_name(d.name()))
        .collect();
    assert!(names.iter().zip(Detector::ALL).all(|(n, d)| *n == Some(d)));
}

// ------------------------------------------------------------- the rewriter

/// A JSON string literal of `s`, some characters as `\u` escapes.
fn json_str(rng: &mut Rng, s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if (c as u32) < 0x10000 && rng.below(8) == 0 {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            let one = serde_json::to_string(&c.to_string()).unwrap();
            out.push_str(&one[1..one.len() - 1]);
        }
    }
    out.push('"');
    out
}

/// Splits `s` into non-empty pieces at characters.
fn pieces_of(rng: &mut Rng, s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let most = [2, 6, 30][rng.below(3)];
        let n = (1 + rng.below(most)).min(chars.len() - at);
        out.push(chars[at..at + n].iter().collect());
        at += n;
    }
    out
}

/// A V1 run of text messages (explicit and chunk forms) and reasoning
/// messages, each text from [`text`]; with the text of each message id.
fn guarded_run(rng: &mut Rng) -> (Vec<u8>, Vec<(String, String)>) {
    let mut events = vec![support::RUN_STARTED.to_owned()];
    let mut texts = Vec::new();
    for m in 0..1 + rng.below(4) {
        let parts = 1 + rng.below(8);
        let body = String::from_utf8(text(rng, parts)).unwrap();
        let id = format!("m{m}");
        let deltas = pieces_of(rng, &body);
        match rng.below(3) {
            0 => {
                events.push(format!(
                    r#"{{"type":"TEXT_MESSAGE_START","messageId":"{id}","role":"assistant"}}"#
                ));
                for d in &deltas {
                    let d = json_str(rng, d);
                    events.push(format!(
                        r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"{id}","delta":{d}}}"#
                    ));
                }
                events.push(format!(
                    r#"{{"type":"TEXT_MESSAGE_END","messageId":"{id}"}}"#
                ));
            }
            1 => {
                for d in &deltas {
                    let d = json_str(rng, d);
                    events.push(format!(
                        r#"{{"type":"TEXT_MESSAGE_CHUNK","messageId":"{id}","delta":{d}}}"#
                    ));
                }
            }
            _ => {
                events.push(format!(
                    r#"{{"type":"REASONING_START","messageId":"r{id}"}}"#
                ));
                events.push(format!(
                    r#"{{"type":"REASONING_MESSAGE_START","messageId":"{id}","role":"reasoning"}}"#
                ));
                for d in &deltas {
                    let d = json_str(rng, d);
                    events.push(format!(
                        r#"{{"type":"REASONING_MESSAGE_CONTENT","messageId":"{id}","delta":{d}}}"#
                    ));
                }
                events.push(format!(
                    r#"{{"type":"REASONING_MESSAGE_END","messageId":"{id}"}}"#
                ));
                events.push(format!(r#"{{"type":"REASONING_END","messageId":"r{id}"}}"#));
            }
        }
        texts.push((id, body));
    }
    events.push(support::RUN_FINISHED.to_owned());
    (support::sse(&events), texts)
}

/// The rewriter's output for `input` pushed in `sizes`, guarded by
/// `rules` (or not).
fn rewritten(input: &[u8], sizes: &[usize], rules: Option<&Rules<'_>>, buffer: usize) -> Vec<u8> {
    use agui_stream::Config;
    use agui_stream::rewrite::{GuardLanes, Options, Rewriter};
    let (mut frames, mut raw) = (vec![0u8; buffer], vec![0u8; buffer]);
    let mut lanes = rules.map(GuardLanes::new);
    let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), Options::new());
    if let Some(lanes) = lanes.as_mut() {
        rewriter.guard(lanes);
    }
    let mut out = Vec::new();
    let mut at = 0;
    for &n in sizes {
        let pushed = rewriter.push(&input[at..at + n], &mut out).unwrap();
        assert_eq!(pushed.read, n);
        at += n;
    }
    rewriter.finish(&mut out).unwrap();
    out
}

/// Each message's text in `out`, by id (its deltas decoded and joined),
/// and the run's events, checked by the pipeline.
fn texts_of(out: &[u8]) -> (Vec<(String, String)>, Vec<serde_json::Value>) {
    let run = support::run(out, agui_stream::Dialect::V1, out.len().max(1));
    assert_eq!(
        run.result,
        support::Verdict::Ok,
        "{}",
        String::from_utf8_lossy(out)
    );
    let events: Vec<serde_json::Value> = run
        .events
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let mut texts: Vec<(String, String)> = Vec::new();
    for e in &events {
        let ty = e["type"].as_str().unwrap();
        if ty == "TEXT_MESSAGE_START" || ty == "REASONING_MESSAGE_START" {
            texts.push((e["messageId"].as_str().unwrap().to_owned(), String::new()));
        }
        if ty == "TEXT_MESSAGE_CONTENT" || ty == "REASONING_MESSAGE_CONTENT" {
            let delta = e["delta"].as_str().unwrap();
            assert!(!delta.is_empty(), "an empty delta");
            let id = e["messageId"].as_str().unwrap();
            let text = texts.iter_mut().find(|t| t.0 == id).unwrap();
            text.1.push_str(delta);
        }
    }
    (texts, events)
}

fn random_sizes(rng: &mut Rng, len: usize) -> Vec<usize> {
    let max = [1, 7, 64, 1500, len.max(1)][rng.below(5)];
    let mut sizes = Vec::new();
    let mut left = len;
    while left > 0 {
        let n = (1 + rng.below(max)).min(left);
        sizes.push(n);
        left -= n;
    }
    sizes
}

#[test]
fn the_rewriter_masks_each_message_as_its_whole_text_at_every_split() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut masked = 0;
    for case in 0..150 {
        let mut rules_list = rule_set(&mut rng);
        rules_list.retain(|r| r.action != Action::Block);
        let rules: Rules<'_> = Rules::new(&rules_list).unwrap();
        let (input, texts) = guarded_run(&mut rng);
        let whole = rewritten(&input, &[input.len()], Some(&rules), 4096);
        let (got, _) = texts_of(&whole);
        assert_eq!(got.len(), texts.len(), "case {case}");
        for ((id, text), (got_id, got_text)) in texts.iter().zip(&got) {
            let (want, found, _) = reference(&rules_list, text.as_bytes());
            masked += found.len();
            assert_eq!(id, got_id);
            assert_eq!(got_text.as_bytes(), want, "case {case}: {rules_list:?}");
        }
        for _ in 0..3 {
            let sizes = random_sizes(&mut rng, input.len());
            let buffer = [1024, 4096, 65536][rng.below(3)];
            assert_eq!(
                rewritten(&input, &sizes, Some(&rules), buffer),
                whole,
                "case {case}: the same at every split"
            );
        }
        // No rules: today's output, byte for byte.
        let none: Rules<'_> = Rules::new(&[]).unwrap();
        let sizes = random_sizes(&mut rng, input.len());
        assert_eq!(
            rewritten(&input, &sizes, Some(&none), 4096),
            rewritten(&input, &sizes, None, 4096)
        );
    }
    assert!(masked > 300, "{masked}");
}

#[test]
fn a_block_lets_out_the_text_before_the_match_then_ends_the_run() {
    let mut rng = Rng(0x853c_49e6_748f_ea9b);
    let mut blocked = 0;
    for case in 0..150 {
        let rules_list = rule_set(&mut rng);
        let rules: Rules<'_> = Rules::new(&rules_list).unwrap();
        let (input, texts) = guarded_run(&mut rng);
        let whole = rewritten(&input, &[input.len()], Some(&rules), 4096);
        let (got, events) = texts_of(&whole);
        // Each message as the whole text has it, up to the block.
        let mut block = None;
        for (i, (id, text)) in texts.iter().enumerate() {
            let (want, _, by) = reference(&rules_list, text.as_bytes());
            if !want.is_empty() || by.is_none() {
                let (got_id, got_text) = &got[i];
                assert_eq!(id, got_id, "case {case}");
                assert_eq!(got_text.as_bytes(), want, "case {case}");
            }
            if by.is_some() {
                block = by;
                break;
            }
        }
        let last = events.last().unwrap();
        match block {
            Some(rule) => {
                blocked += 1;
                assert_eq!(last["type"], "RUN_ERROR", "case {case}");
                assert_eq!(last["code"], "AGUI_GUARDRAIL");
                let name = rules_list[rule].name;
                assert_eq!(
                    last["message"],
                    format!("the guard rule \"{name}\" blocked the run")
                );
                // What was open is closed: every START has its END.
                let starts = events
                    .iter()
                    .filter(|e| e["type"].as_str().unwrap().ends_with("_START"))
                    .count();
                let ends = events
                    .iter()
                    .filter(|e| e["type"].as_str().unwrap().ends_with("_END"))
                    .count();
                assert_eq!(
                    starts,
                    ends,
                    "case {case}: {}",
                    String::from_utf8_lossy(&whole)
                );
            }
            None => assert_eq!(last["type"], "RUN_FINISHED", "case {case}"),
        }
        let sizes = random_sizes(&mut rng, input.len());
        assert_eq!(
            rewritten(&input, &sizes, Some(&rules), 1024),
            whole,
            "case {case}"
        );
    }
    assert!(blocked > 30, "{blocked}");
}
