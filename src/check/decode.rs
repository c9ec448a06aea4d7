//! One frame's JSON text → a validated [`Event`].

use core::fmt;

use crate::capacity::{Capacity, saturate};
use crate::check::delta::decode_delta;
use crate::check::schema::{self, Fault, SchemaError, SchemaProblem, Site, Verdict};
use crate::input::json::{self, Error as JsonError, Limits};
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key, Member};
use crate::protocol::schema::{Presence, SchemaObject, event_fields};
use crate::view::event::Event;
use crate::view::json::{JsonKind, RawJson};
use crate::view::shaped::LEGACY_COMPARISON_BUDGET;
use crate::view::string::JsonStr;

/// Why a payload did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DecodeError {
    /// Not JSON (or nested deeper than the limit).
    Json(JsonError),
    /// JSON, but not an acceptable event.
    Schema(SchemaError),
    /// Checking the event would exceed a fixed budget.
    Capacity(Capacity),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Json(e) => e.fmt(f),
            DecodeError::Schema(e) => e.fmt(f),
            DecodeError::Capacity(c) => c.fmt(f),
        }
    }
}

impl core::error::Error for DecodeError {}

/// Longest member name we bother decoding when it is written with escapes;
/// every name the protocol defines is shorter.
const MAX_KEY_LEN: usize = 32;

/// What `lookup` finds for a name, decoding its escapes if there are any
/// (member names and event types).
#[inline(always)]
fn by_name<T>(name: JsonStr<'_>, lookup: fn(&[u8]) -> Option<T>) -> Option<T> {
    match lookup(name.raw()) {
        Some(t) => Some(t),
        None => by_escaped_name(name, lookup),
    }
}

/// [`by_name`] for a name not found as written.
#[cold]
fn by_escaped_name<T>(name: JsonStr<'_>, lookup: fn(&[u8]) -> Option<T>) -> Option<T> {
    memchr::memchr(b'\\', name.raw())?;
    let mut buf = [0u8; MAX_KEY_LEN];
    let text = name.unescape_into(&mut buf).ok()?;
    lookup(text.as_bytes())
}

/// Decodes and validates one event. `Ok(None)` is an event the dialect
/// ignores (V1 drops unknown event types).
///
/// ```
/// use agui_stream::{decode, DecodeError, Dialect, json::Limits};
/// let ok = decode(br#"{"runId":"r","type":"RUN_STARTED","threadId":"t"}"#, Dialect::V1, Limits::new());
/// assert!(ok.unwrap().is_some());
/// let unknown = decode(br#"{"type":"custom"}"#, Dialect::V1, Limits::new());
/// assert!(unknown.unwrap().is_none());
/// let bad = decode(br#"{"type":"RUN_STARTED","threadId":1,"runId":"r"}"#, Dialect::V1, Limits::new());
/// assert!(matches!(bad, Err(DecodeError::Schema(_))));
/// ```
///
/// # Errors
///
/// [`DecodeError::Json`] if the payload is not JSON,
/// [`DecodeError::Schema`] if it is not an acceptable event,
/// [`DecodeError::Capacity`] if checking it needs more than a fixed budget.
pub fn decode(
    payload: &[u8],
    dialect: Dialect,
    limits: Limits,
) -> Result<Option<Event<'_>>, DecodeError> {
    if crate::testing::fast_paths()
        && let Some(event) = decode_delta(payload, dialect, limits)
    {
        return Ok(Some(event));
    }
    // Validation reports each member of the root object as it passes it:
    // the last value of each known name is kept, and nothing is walked
    // twice.
    let mut values: [Option<RawJson<'_>>; Key::COUNT] = [None; Key::COUNT];
    json::validate_members(payload, limits, &mut |(ka, kb), (va, vb)| {
        let name = JsonStr::from_escaped(payload.get(ka..kb).unwrap_or_default());
        if let Some(slot) = by_name(name, Key::from_bytes).and_then(|k| values.get_mut(k as usize))
        {
            *slot = payload.get(va..vb).map(RawJson::exact);
        }
    })
    .map_err(DecodeError::Json)?;
    let root = RawJson::trusted(payload);
    if root.kind() != JsonKind::Object {
        return Err(schema_err(None, SchemaProblem::NotAnObject));
    }
    let type_value = values
        .get(Key::Type as usize)
        .copied()
        .flatten()
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty());
    let Some(type_name) = type_value else {
        return Err(schema_err(Some(Member::Type), SchemaProblem::MissingType));
    };
    let Some(ty) = by_name(type_name, EventType::from_bytes) else {
        return match dialect {
            Dialect::V1 => Ok(None),
            Dialect::V0 => Err(schema_err(Some(Member::Type), SchemaProblem::UnknownType)),
        };
    };
    let mut event = Event::empty(ty, dialect, Some(root));
    let fields = event_fields(dialect, ty);
    if dialect == Dialect::V0 && !event.names(Key::SubagentRunId) {
        event.set_passthrough_tag(values.get(Key::SubagentRunId as usize).copied().flatten());
    }
    for f in fields {
        let site = || Site {
            object: SchemaObject::Event,
            field: Some(Member::from(f.key)),
        };
        let value = values.get(f.key as usize).copied().flatten();
        let kept = match (value, f.presence) {
            // Most members are strings or timestamps, or absent and
            // optional: decided here.
            (Some(v), Presence::Required | Presence::Optional)
                if schema::passes_quickly(v, &f.shape) =>
            {
                Some(v)
            }
            (None, Presence::Optional | Presence::NullAbsent) => continue,
            (value, presence) => {
                let checked = schema::present(value, presence, site()).and_then(|v| match v {
                    Some(v) => schema::check(v, &f.shape, site()).map(|verdict| match verdict {
                        Verdict::Keep => Some(v),
                        Verdict::Drop => None,
                    }),
                    None => Ok(None),
                });
                match checked {
                    Ok(v) => v,
                    Err(Fault::Schema(site, problem)) => {
                        return Err(DecodeError::Schema(SchemaError {
                            event: Some(ty),
                            object: site.object,
                            field: site.field,
                            problem,
                        }));
                    }
                    Err(Fault::LegacyPartBudget) => {
                        return Err(DecodeError::Capacity(Capacity::LegacyParts {
                            budget: saturate(LEGACY_COMPARISON_BUDGET),
                        }));
                    }
                }
            }
        };
        event.set(f.key, kept);
    }
    Ok(Some(event))
}

/// A problem with the event's top level before its type is known.
fn schema_err(field: Option<Member>, problem: SchemaProblem) -> DecodeError {
    DecodeError::Schema(SchemaError {
        event: None,
        object: SchemaObject::Event,
        field,
        problem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(s: &str) -> Result<Option<Event<'_>>, DecodeError> {
        decode(s.as_bytes(), Dialect::V1, Limits::new())
    }
    fn v0(s: &str) -> Result<Option<Event<'_>>, DecodeError> {
        decode(s.as_bytes(), Dialect::V0, Limits::new())
    }
    fn problem(r: Result<Option<Event<'_>>, DecodeError>) -> SchemaProblem {
        match r {
            Err(DecodeError::Schema(e)) => e.problem,
            other => panic!("expected a schema error, got {other:?}"),
        }
    }

    #[test]
    fn type_anywhere_and_last_wins() {
        let e =
            v1(r#"{"messageId":"a","type":"CUSTOM","type":"TEXT_MESSAGE_END","messageId":"b"}"#)
                .unwrap()
                .unwrap();
        assert_eq!(e.event_type(), EventType::TextMessageEnd);
        assert!(e.message_id().unwrap().eq_str("b"));
        let e = v1(r#"{"\u0074ype":"TEXT_MESSAGE_\u0045ND","message\u0049d":"x"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(e.event_type(), EventType::TextMessageEnd);
        assert!(e.message_id().is_some());
    }

    #[test]
    fn frame_shape_errors() {
        assert_eq!(problem(v1("[]")), SchemaProblem::NotAnObject);
        assert_eq!(problem(v1("null")), SchemaProblem::NotAnObject);
        assert_eq!(problem(v1("{}")), SchemaProblem::MissingType);
        assert_eq!(problem(v1(r#"{"type":""}"#)), SchemaProblem::MissingType);
        assert_eq!(problem(v1(r#"{"type":5}"#)), SchemaProblem::MissingType);
        assert!(v1(r#"{"type":"custom"}"#).unwrap().is_none());
        assert_eq!(
            problem(v0(r#"{"type":"custom"}"#)),
            SchemaProblem::UnknownType
        );
        assert!(matches!(v1("{"), Err(DecodeError::Json(_))));
    }

    #[test]
    fn null_rules() {
        // rawEvent: null is absent in V1, kept in V0.
        let s = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","rawEvent":null}"#;
        assert!(v1(s).unwrap().unwrap().raw_event().is_none());
        assert!(v0(s).unwrap().unwrap().raw_event().unwrap().is_null());
        // metadata: null is an error in both.
        let s = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","metadata":null}"#;
        assert_eq!(
            problem(v1(s)),
            SchemaProblem::WrongKind {
                expected: schema::ExpectedKind::Object,
                found: JsonKind::Null
            }
        );
        assert!(v0(s).is_err());
        // parentMessageId: null means absent in both.
        let s = r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f","parentMessageId":null}"#;
        assert!(v1(s).unwrap().unwrap().parent_message_id().is_none());
        assert!(v0(s).unwrap().unwrap().parent_message_id().is_none());
        // subagentRunId: null is an error in V1.
        let s = r#"{"type":"TEXT_MESSAGE_END","messageId":"m","subagentRunId":null}"#;
        assert!(v1(s).is_err());
        // outcome: null is absent.
        let s = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":null}"#;
        assert!(v1(s).unwrap().unwrap().outcome().is_none());
        assert!(v0(s).unwrap().unwrap().outcome().is_none());
        // timestamp: null is an error in both.
        let s = r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":null}"#;
        assert!(v1(s).is_err());
        assert!(v0(s).is_err());
    }

    #[test]
    fn defaults() {
        let s = r#"{"type":"TEXT_MESSAGE_START","messageId":"m"}"#;
        assert!(v1(s).unwrap().unwrap().role().is_none());
        assert!(v0(s).unwrap().unwrap().role().unwrap().eq_str("assistant"));
        let s = r#"{"type":"ACTIVITY_SNAPSHOT","messageId":"m","activityType":"a","content":{}}"#;
        assert_eq!(v1(s).unwrap().unwrap().replace(), None);
        assert_eq!(v0(s).unwrap().unwrap().replace(), Some(true));
    }

    #[test]
    fn integers_in_v1_only() {
        let s = r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":1.5}"#;
        assert_eq!(problem(v1(s)), SchemaProblem::NotInteger);
        assert!(v0(s).is_ok());
        let s = r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":9007199254740993}"#;
        assert_eq!(problem(v1(s)), SchemaProblem::NotSafeInteger);
        let s = r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":2.0}"#;
        assert_eq!(v1(s).unwrap().unwrap().timestamp(), Some(2.0));
    }

    /// The names an error holds as enums print as the reference spells them.
    #[test]
    fn schema_errors_in_words() {
        extern crate std;
        use std::string::ToString;
        let words = |r: Result<Option<Event<'_>>, DecodeError>| r.unwrap_err().to_string();
        assert_eq!(
            words(v1("[]")),
            "Invalid event: the frame is not a JSON object."
        );
        assert_eq!(
            words(v1(r#"{"type":"RUN_STARTED","threadId":1,"runId":"r"}"#)),
            "Invalid RUN_STARTED event: event.threadId: expected string, received number"
        );
        assert_eq!(
            words(v0(
                r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"context":[]}}"#
            )),
            "Invalid RUN_STARTED event: RunAgentInput.tools is required"
        );
        assert_eq!(
            words(v1(
                r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":5}]}"#
            )),
            "Invalid MESSAGES_SNAPSHOT event: UserMessage.content: expected string or array, received number"
        );
        assert_eq!(
            words(v0(
                r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","x":1}}"#
            )),
            "Invalid RUN_FINISHED event: SuccessOutcome: unrecognized member"
        );
        let e = match v0(
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"x"}}"#,
        ) {
            Err(DecodeError::Schema(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            (e.object, e.field, e.problem),
            (
                SchemaObject::Event,
                Some(Member::Type),
                SchemaProblem::UnknownVariant
            )
        );
    }

    #[test]
    fn unknown_outcome_reads_as_absent_in_v1() {
        let s = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"paused"}}"#;
        assert!(v1(s).unwrap().unwrap().outcome().is_none());
        assert_eq!(problem(v0(s)), SchemaProblem::UnknownVariant);
    }
}
