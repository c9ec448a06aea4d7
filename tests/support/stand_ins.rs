//! Comparing an event of a spilled frame with the same event read whole
//! (shared with the `pipeline` fuzz target).

use agui_stream::{
    StandIns,
    json::MAX_DEPTH,
    json::{JsonKind, Limits, RawJson},
};

/// `small` (an encoded event with `stand_ins`) is `whole` but for its
/// stand-ins: each covered member is a reduction of its whole value
/// ([`reduction_of`]); members are compared as the encoder wrote them. One
/// bit holds every member whose name is no key, so each of those is either
/// its value or a reduction of it.
pub fn same_but_stand_ins(whole: &[u8], small: &[u8], stand_ins: StandIns) -> bool {
    let (Some(whole), Some(small)) = (members(whole), members(small)) else {
        return false;
    };
    !stand_ins.is_empty()
        && whole.len() == small.len()
        && whole
            .iter()
            .zip(&small)
            .all(|((name, whole), (small_name, s))| {
                name == small_name
                    && match stand_ins.covers(name) {
                        true => reduction_of(*whole, *s),
                        false => whole.as_bytes() == s.as_bytes(),
                    }
            })
}

/// `small` is `whole` with values replaced by the empty value of their kind
/// (`""`, or `" "` for a non-empty string whose truthiness a rule reads,
/// `{}`, `[]`) and elements of arrays let go, at any depth: an object has
/// the same members, each a reduction; an array's elements are reductions
/// of a subsequence of the whole's.
pub fn reduction_of(whole: RawJson<'_>, small: RawJson<'_>) -> bool {
    if whole.as_bytes() == small.as_bytes() {
        return true;
    }
    match (whole.kind(), small.kind()) {
        (JsonKind::String, JsonKind::String) => {
            matches!(small.as_bytes(), b"\"\"" | b"\" \"")
        }
        (JsonKind::Object, JsonKind::Object) => {
            if small.as_bytes() == b"{}" {
                return true;
            }
            let w: Vec<_> = whole.members().collect();
            let s: Vec<_> = small.members().collect();
            w.len() == s.len()
                && w.iter()
                    .zip(&s)
                    .all(|((wn, wv), (sn, sv))| wn.raw() == sn.raw() && reduction_of(*wv, *sv))
        }
        (JsonKind::Array, JsonKind::Array) => {
            let mut w = whole.elements();
            small
                .elements()
                .all(|s| w.by_ref().any(|candidate| reduction_of(candidate, s)))
        }
        _ => false,
    }
}

/// The members of the object `json` (encoded), by name.
fn members(json: &[u8]) -> Option<Vec<(String, RawJson<'_>)>> {
    let limits = Limits {
        max_depth: MAX_DEPTH,
    };
    let object = RawJson::parse(json, limits).ok()?;
    Some(
        object
            .members()
            .map(|(name, value)| (name.to_string(), value))
            .collect(),
    )
}

/// Events (frame index, encoded, stand-ins) and the verdict with its
/// message: what a pipeline made of a stream.
pub type Run = (
    Vec<(u64, Vec<u8>, agui_stream::StandIns)>,
    Result<(), (agui_stream::Error, String)>,
);

/// `stream` through a pipeline with a `buffer`-byte frame buffer in
/// `push`-byte pushes (ids minted as the reference oracle mints them).
pub fn run(stream: &[u8], dialect: agui_stream::Dialect, buffer: usize, push: usize) -> Run {
    use agui_stream::{Config, Event, FrameInfo, Minting, Pipeline, encode};
    let mut buf = vec![0u8; buffer];
    let config = Config::new()
        .dialect(dialect)
        .minting(Minting::Deterministic);
    let mut p = Pipeline::new(&mut buf, config);
    let mut events = Vec::new();
    let mut sink = |ev: &Event<'_>, f: &FrameInfo| {
        let mut json = Vec::new();
        encode(ev, &mut json).expect("a Vec never fills");
        events.push((f.index, json, f.stand_ins));
    };
    let verdict = stream
        .chunks(push.max(1))
        .try_for_each(|piece| p.push(piece, &mut sink).map(drop))
        .and_then(|_| p.finish(&mut sink).map(|_| ()));
    (events, verdict.map_err(|e| (e, p.message(&e).to_string())))
}
