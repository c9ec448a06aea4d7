//! Guard rules on a lane of text: pushed in pieces (the first byte of the
//! input picks their sizes and the rules' actions), a lane lets out exactly
//! what one push of the whole text does, holds back less than the longest
//! match, and under a block lets out nothing after the text before it.
#![no_main]

use agui_stream::guard::{Action, Blocked, Detector, Lane, Piece, Rule, Rules};
use libfuzzer_sys::fuzz_target;

const LITERALS: [(&str, bool); 4] = [
    ("Falcon", true),
    ("fal", false),
    ("4111", false),
    ("@x.io", true),
];

/// What a lane lets out for `text` in `sizes`, and the rule that blocked.
fn run(
    rules: &Rules<'_>,
    text: &[u8],
    sizes: &mut impl FnMut() -> usize,
) -> (Vec<u8>, Vec<usize>, Option<usize>) {
    let mut lane = Lane::new();
    let (mut out, mut matched) = (Vec::new(), Vec::new());
    let mut sink = |p: Piece<'_>| match p {
        Piece::Text(t) => out.extend_from_slice(t),
        Piece::Matched { rule, .. } => matched.push(rule),
    };
    let mut rest = text;
    let mut blocked = None;
    while !rest.is_empty() {
        let (piece, tail) = rest.split_at(sizes().min(rest.len()));
        if let Err(Blocked { rule }) = lane.push(rules, piece, &mut sink) {
            blocked = Some(rule);
            break;
        }
        assert!(lane.held() < rules.max_len().max(1));
        rest = tail;
    }
    if blocked.is_none()
        && let Err(Blocked { rule }) = lane.finish(rules, &mut sink)
    {
        blocked = Some(rule);
    }
    (out, matched, blocked)
}

fuzz_target!(|input: &[u8]| {
    let Some((&seed, text)) = input.split_first() else {
        return;
    };
    let mut list = Vec::new();
    for (i, d) in Detector::ALL.into_iter().enumerate() {
        let action = match (seed >> (i % 4)) & 3 {
            0 => Action::Block,
            1 => Action::Monitor,
            _ => Action::Mask,
        };
        list.push(Rule::builtin(d, action));
    }
    for (text, fold) in LITERALS {
        let rule = Rule::literal(text, Action::Mask).replacement("<lit>");
        list.push(if fold { rule.ignore_case() } else { rule });
    }
    let rules: Rules<'_> = Rules::new(&list).expect("the rules compile");
    let whole = run(&rules, text, &mut || usize::MAX);
    let mut state = u32::from(seed) | 1;
    let mut sizes = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state % 16 + 1) as usize
    };
    let split = run(&rules, text, &mut sizes);
    assert_eq!(split, whole, "{:?}", text.escape_ascii().to_string());
});
