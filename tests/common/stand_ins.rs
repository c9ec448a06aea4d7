//! Comparing an event of a spilled frame with the same event read whole
//! (shared with the `pipeline` fuzz target).

use agui_stream::{
    Key, StandIns,
    json::MAX_DEPTH,
    json::{JsonKind, Limits, RawJson},
};

/// `small` (an encoded event with `stand_ins`) is `whole` but for its
/// stand-ins, each the empty value of the kind `whole` has there (a run's
/// `input` stands in with its `messages` emptied); members are compared as
/// the encoder wrote them. One bit holds every member whose name is no
/// key, so each of those is either its value or a stand-in.
pub fn same_but_stand_ins(whole: &[u8], small: &[u8], stand_ins: StandIns) -> bool {
    let members = |json: &[u8]| -> Option<Vec<(String, JsonKind, Vec<u8>)>> {
        let limits = Limits {
            max_depth: MAX_DEPTH,
        };
        let object = RawJson::parse(json, limits).ok()?;
        let members = object
            .members()
            .map(|(name, value)| (name.to_string(), value.kind(), value.as_bytes().to_vec()));
        Some(members.collect())
    };
    let (Some(whole), Some(small)) = (members(whole), members(small)) else {
        return false;
    };
    let stood_in = |name: &str, kind: JsonKind, whole: &[u8]| -> Option<Vec<u8>> {
        if !stand_ins.covers(name) {
            return None;
        }
        Some(match kind {
            JsonKind::Object if name == "input" => {
                without_messages(RawJson::parse(whole, Limits::new()).ok()?)
            }
            JsonKind::String => b"\"\"".to_vec(),
            JsonKind::Array => b"[]".to_vec(),
            JsonKind::Object => b"{}".to_vec(),
            _ => return None,
        })
    };
    !stand_ins.is_empty()
        && whole.len() == small.len()
        && whole.iter().zip(&small).all(|((wn, wk, wv), (sn, _, sv))| {
            let empty = stood_in(wn, *wk, wv);
            let keyed = Key::from_bytes(wn.as_bytes()).is_some();
            wn == sn
                && match empty {
                    // A key's bit is its own: a stand-in.
                    Some(empty) if keyed => &empty == sv,
                    Some(empty) => &empty == sv || wv == sv,
                    None => wv == sv,
                }
        })
}

/// An encoded object with its `messages` emptied.
fn without_messages(object: RawJson<'_>) -> Vec<u8> {
    let mut out = b"{".to_vec();
    for (i, (name, value)) in object.members().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(name.raw());
        out.extend_from_slice(b"\":");
        match name.to_string().as_str() {
            "messages" => out.extend_from_slice(b"[]"),
            _ => out.extend_from_slice(value.as_bytes()),
        }
    }
    out.push(b'}');
    out
}
