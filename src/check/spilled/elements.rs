//! The arrays of a spilled frame read element by element: a message
//! history (MESSAGES_SNAPSHOT `messages`, RUN_STARTED `input.messages`) or
//! a JSON Patch (STATE_DELTA `delta`, ACTIVITY_DELTA `patch`) that does not
//! fit the buffer. Each
//! element is checked against the array's item shape as it closes and let
//! go; a message's owner records are kept as forgotten ones
//! ([`verify::stage`]). The first element that fails stays in the stand-in
//! (the rest of the array is dropped), so the stand-in fails the same
//! check, at the same member, as the whole frame would.

use crate::check::schema::{self, Dialect, SchemaObject, Shape, Site};
use crate::check::verify;
use crate::event_type::{EventType, Key, Member};
use crate::input::json::RawJson;

/// Bytes at the end of the frame buffer that hold the forgotten records'
/// filter while an array is read element by element.
pub(super) const FILTER: usize = verify::STAGED_BYTES;

/// The smallest buffer an array is read element by element in.
pub(super) const MIN_BUFFER: usize = 512;

/// The member of `ty` that is read element by element.
pub(super) const fn element_key(ty: EventType) -> Option<Key> {
    match ty {
        EventType::MessagesSnapshot => Some(Key::Messages),
        EventType::StateDelta => Some(Key::Delta),
        EventType::ActivityDelta => Some(Key::Patch),
        // A run's input: its `messages`.
        EventType::RunStarted => Some(Key::Input),
        _ => None,
    }
}

/// The item shape of member `key` of `ty`, if it is read element by
/// element.
pub(super) fn item(dialect: Dialect, ty: EventType, key: Key) -> Option<&'static Shape> {
    if element_key(ty) != Some(key) {
        return None;
    }
    let field = schema::event_fields(dialect, ty)
        .iter()
        .find(|f| f.key == key)?;
    let shape = match field.shape {
        Shape::Object(input) => {
            &input
                .fields
                .iter()
                .find(|f| f.name == Member::Messages)?
                .shape
        }
        ref shape => shape,
    };
    match shape {
        Shape::Array(item) => Some(item),
        _ => None,
    }
}

/// What checking one element came to.
pub(super) enum Element {
    /// It passes; a message made records owned by the parent (`Some(false)`)
    /// or a subagent (`Some(true)`).
    Passes(Option<bool>),
    /// It fails: the stand-in keeps it.
    Fails,
}

/// Checks `element` (one whole, well-formed element of `ty`'s array, of
/// items `item`) and adds a message's records to `filter`.
pub(super) fn check(element: &[u8], item: &Shape, ty: EventType, filter: &mut [u8]) -> Element {
    let v = RawJson::trusted(element);
    let site = Site {
        object: SchemaObject::Event,
        field: None,
    };
    if schema::check(v, item, site).is_err() {
        return Element::Fails;
    }
    match ty {
        EventType::MessagesSnapshot | EventType::RunStarted => {
            Element::Passes(verify::stage(v, filter))
        }
        _ => Element::Passes(None),
    }
}
