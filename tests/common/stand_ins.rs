//! Comparing an event of a spilled frame with the same event read whole
//! (shared with the `pipeline` fuzz target).

use agui_stream::{
    StandIns,
    json::MAX_DEPTH,
    json::{JsonKind, Limits, RawJson},
};

/// `small` (an encoded event with `stand_ins`) is `whole` but for its
/// stand-ins, each the empty value of the kind `whole` has there (a run's
/// `input` stands in with its `messages` emptied); members are compared as
/// the encoder wrote them.
pub fn same_but_stand_ins(whole: &[u8], small: &[u8], stand_ins: StandIns) -> bool {
    let members = |json: &[u8], empty: bool| -> Option<Vec<(String, Vec<u8>)>> {
        let limits = Limits {
            max_depth: MAX_DEPTH,
        };
        let object = RawJson::parse(json, limits).ok()?;
        let members = object.members().map(|(name, value)| {
            let name = name.to_string();
            let stood_in = stand_ins.covers(&name);
            let bytes: Vec<u8> = match value.kind() {
                JsonKind::Object if stood_in && name == "input" => without_messages(value),
                JsonKind::String if stood_in && empty => b"\"\"".to_vec(),
                JsonKind::Array if stood_in && empty => b"[]".to_vec(),
                JsonKind::Object if stood_in && empty => b"{}".to_vec(),
                _ => value.as_bytes().to_vec(),
            };
            (name, bytes)
        });
        Some(members.collect())
    };
    !stand_ins.is_empty() && members(small, false).is_some_and(|m| Some(m) == members(whole, true))
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
