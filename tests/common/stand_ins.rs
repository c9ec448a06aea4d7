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
    let (Some(whole), Some(small)) = (members(whole), members(small)) else {
        return false;
    };
    // The empty value of its kind, if the member is covered.
    let stood_in = |name: &str, value: RawJson<'_>| -> Option<Vec<u8>> {
        if !stand_ins.covers(name) {
            return None;
        }
        Some(match value.kind() {
            JsonKind::Object if name == "input" => without_messages(value),
            JsonKind::String => b"\"\"".to_vec(),
            JsonKind::Array => b"[]".to_vec(),
            JsonKind::Object => b"{}".to_vec(),
            _ => return None,
        })
    };
    !stand_ins.is_empty()
        && whole.len() == small.len()
        && whole
            .iter()
            .zip(&small)
            .all(|((name, whole), (small_name, s))| {
                let (w, s) = (whole.as_bytes(), s.as_bytes());
                name == small_name
                    && match stood_in(name, *whole) {
                        // A key's bit is its own: a stand-in.
                        Some(empty) if Key::from_bytes(name.as_bytes()).is_some() => empty == s,
                        // One bit covers every member whose name is no key.
                        Some(empty) => empty == s || w == s,
                        None => w == s,
                    }
            })
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
