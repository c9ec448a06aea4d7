//! Comparing an event of a spilled frame with the same event read whole
//! (shared with the `pipeline` fuzz target).

use agui_stream::{JsonKind, Limits, RawJson, StandIns, json::MAX_DEPTH};

/// `small` (an encoded event with `stand_ins`) is `whole` but for its
/// stand-ins, each the empty value of the kind `whole` has there; members
/// are compared as the encoder wrote them.
pub fn same_but_stand_ins(whole: &[u8], small: &[u8], stand_ins: StandIns) -> bool {
    let members = |json: &[u8], empty: bool| -> Option<Vec<(String, Vec<u8>)>> {
        let limits = Limits {
            max_depth: MAX_DEPTH,
        };
        let object = RawJson::parse(json, limits).ok()?;
        let members = object.members().map(|(name, value)| {
            let name = name.to_string();
            let stood_in = empty && stand_ins.covers(&name);
            let bytes: &[u8] = match value.kind() {
                JsonKind::String if stood_in => b"\"\"",
                JsonKind::Array if stood_in => b"[]",
                JsonKind::Object if stood_in => b"{}",
                _ => value.as_bytes(),
            };
            (name, bytes.to_vec())
        });
        Some(members.collect())
    };
    !stand_ins.is_empty() && members(small, false).is_some_and(|m| Some(m) == members(whole, true))
}
