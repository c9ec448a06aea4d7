//! The schema checker: a decoded object against the tables of
//! `protocol::schema`, and the error it gives.
//!
//! Recursion here follows the *schema* (at most six levels: an event, its
//! messages, their content parts, a part's source), never the JSON nesting:
//! opaque values (`snapshot`, `rawEvent`, …) are not descended into.

use core::fmt;

use crate::protocol::event_type::{EventType, Member};
use crate::protocol::schema::SchemaObject;
use crate::view::json::JsonKind;

/// Why an event failed validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SchemaError {
    /// The event type, once known.
    pub event: Option<EventType>,
    /// The object the problem is in: the event or a nested shape
    /// (`UserMessage`, `TokenUsage`, …).
    pub object: SchemaObject,
    /// The member concerned (`None` when the problem is the whole value).
    pub field: Option<Member>,
    /// What is wrong.
    pub problem: SchemaProblem,
}

/// The JSON kind a [`SchemaProblem::WrongKind`] expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ExpectedKind {
    /// `string`
    String,
    /// `boolean`
    Boolean,
    /// `number`
    Number,
    /// `object`
    Object,
    /// `array`
    Array,
    /// `string or array`
    StringOrArray,
}

impl ExpectedKind {
    /// The words the error uses: `"string"`, `"boolean"`, `"number"`,
    /// `"object"`, `"array"` or `"string or array"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ExpectedKind::String => "string",
            ExpectedKind::Boolean => "boolean",
            ExpectedKind::Number => "number",
            ExpectedKind::Object => "object",
            ExpectedKind::Array => "array",
            ExpectedKind::StringOrArray => "string or array",
        }
    }
}

impl fmt::Display for ExpectedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rule a [`SchemaError`] broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SchemaProblem {
    /// The frame's JSON is not an object.
    NotAnObject,
    /// `type` is missing, empty or not a string.
    MissingType,
    /// `type` names no event (V0 only; V1 drops such events).
    UnknownType,
    /// A required member is absent.
    Missing,
    /// A member is `null` where null is not allowed.
    Null,
    /// A member has the wrong JSON kind.
    WrongKind {
        /// What was expected.
        expected: ExpectedKind,
        /// What was found.
        found: JsonKind,
    },
    /// A number that must be an integer is not one.
    NotInteger,
    /// An integer outside ±(2^53−1).
    NotSafeInteger,
    /// A count below zero.
    Negative,
    /// A string outside the allowed values.
    NotAllowed,
    /// A string that is not a JSON Pointer.
    BadPointer,
    /// A member a strict object does not allow.
    UnknownMember,
    /// An array that must not be empty is.
    Empty,
    /// A discriminated union's tag names no variant (V0).
    UnknownVariant,
    /// A V0 binary content part with none of id, url or data.
    BinaryPayload,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.event {
            Some(t) => write!(f, "Invalid {t} event: ")?,
            // The reference's transport check words it this way.
            None => f.write_str("Invalid event: ")?,
        }
        describe(f, self.object, self.field, self.problem)
    }
}

/// The words of a rule broken at `object.field` (events and requests).
pub(crate) fn describe(
    f: &mut fmt::Formatter<'_>,
    object: SchemaObject,
    field: Option<Member>,
    problem: SchemaProblem,
) -> fmt::Result {
    let field = field.map_or("", Member::as_str);
    if field.is_empty()
        && let SchemaProblem::WrongKind { expected, found } = problem
    {
        return write!(
            f,
            "{object}: expected {expected}, received {}",
            found.name()
        );
    }
    match problem {
        SchemaProblem::NotAnObject => f.write_str("the frame is not a JSON object."),
        SchemaProblem::MissingType => f.write_str("the frame carries no event type."),
        SchemaProblem::UnknownType => f.write_str("unknown event type"),
        SchemaProblem::Missing => write!(f, "{object}.{field} is required"),
        SchemaProblem::Null => write!(f, "{object}.{field} must not be null"),
        SchemaProblem::WrongKind { expected, found } => write!(
            f,
            "{object}.{field}: expected {expected}, received {}",
            found.name()
        ),
        SchemaProblem::NotInteger => write!(f, "{object}.{field}: expected an integer"),
        SchemaProblem::NotSafeInteger => {
            write!(f, "{object}.{field}: integer outside the safe range")
        }
        SchemaProblem::Negative => write!(f, "{object}.{field}: must be >= 0"),
        SchemaProblem::NotAllowed => write!(f, "{object}.{field}: value not allowed"),
        SchemaProblem::BadPointer => {
            write!(f, "{object}.{field}: not a JSON Pointer (RFC 6901)")
        }
        SchemaProblem::UnknownMember => write!(f, "{object}: unrecognized member"),
        SchemaProblem::Empty => write!(f, "{object}.{field}: must not be empty"),
        SchemaProblem::UnknownVariant => {
            write!(f, "{object}.{field}: invalid discriminator value")
        }
        SchemaProblem::BinaryPayload => write!(
            f,
            "{object}: BinaryInputContent requires at least one of id, url, or data"
        ),
    }
}

impl core::error::Error for SchemaError {}

mod check;

pub(crate) use check::*;

#[cfg(test)]
mod tests {
    use super::check::is_json_pointer;
    use super::*;
    use crate::input::json::Limits;
    use crate::protocol::dialect::Dialect;
    use crate::protocol::schema::{MAX_EVENT_FIELDS, Shape, event_fields, v0, v1};
    use crate::view::json::RawJson;
    use crate::view::shaped::{LegacyBinary, collect, omitted, superseded};
    use crate::view::string::JsonStr;
    use Shape::{Count, SafeInt};

    fn raw(s: &str) -> RawJson<'_> {
        RawJson::parse(s.as_bytes(), Limits::new()).unwrap()
    }
    const SITE: Site = Site {
        object: SchemaObject::Event,
        field: Some(Member::Value),
    };

    #[test]
    fn pointers() {
        for p in ["", "/", "/a", "/a/b", "/~0/~1", "/-", "//"] {
            assert!(
                is_json_pointer(JsonStr::from_escaped(p.as_bytes()).code_points()),
                "{p}"
            );
        }
        for p in ["a", "/~", "/~2", "a/b", "/a~"] {
            assert!(
                !is_json_pointer(JsonStr::from_escaped(p.as_bytes()).code_points()),
                "{p}"
            );
        }
    }

    #[test]
    fn integers() {
        assert!(check(raw("1e3"), &SafeInt, SITE).is_ok());
        assert!(check(raw("2.0"), &SafeInt, SITE).is_ok());
        assert!(check(raw("-0"), &Count, SITE).is_ok());
        assert!(check(raw("1.5"), &SafeInt, SITE).is_err());
        assert!(check(raw("9007199254740991"), &SafeInt, SITE).is_ok());
        assert!(check(raw("9007199254740993"), &SafeInt, SITE).is_err());
        assert!(check(raw("-1"), &Count, SITE).is_err());
        // Plain integers up to 15 digits take a fast path; 16 and more are parsed.
        assert!(check(raw("-999999999999999"), &SafeInt, SITE).is_ok());
        assert!(check(raw("-999999999999999"), &Count, SITE).is_err());
        assert!(check(raw("-0"), &Shape::NonNegInt, SITE).is_ok());
        assert!(check(raw("-9007199254740991"), &SafeInt, SITE).is_ok());
        assert!(check(raw("-9007199254740992"), &SafeInt, SITE).is_err());
        assert!(check(raw("0"), &Count, SITE).is_ok());
        assert!(check(raw("\"1\""), &SafeInt, SITE).is_err());
        assert!(check(raw("1e300"), &Shape::NonNegInt, SITE).is_ok());
        assert!(check(raw("1e400"), &Shape::NonNegInt, SITE).is_err());
        assert!(check(raw("1e400"), &Shape::Number, SITE).is_ok());
        assert!(check(raw("\"1\""), &Shape::Number, SITE).is_err());
    }

    #[test]
    fn unions_drop_or_reject() {
        let v1 = Shape::Array(&Shape::Union(&v1::RUN_OUTCOME));
        let _ = v1;
        assert_eq!(
            check(
                raw(r#"{"type":"paused"}"#),
                &Shape::Union(&v1::RUN_OUTCOME),
                SITE
            ),
            Ok(Verdict::Drop)
        );
        assert!(
            check(
                raw(r#"{"type":"paused"}"#),
                &Shape::Union(&v0::RUN_OUTCOME),
                SITE
            )
            .is_err()
        );
        assert!(
            check(
                raw(r#"{"type":"success","x":1}"#),
                &Shape::Union(&v0::RUN_OUTCOME),
                SITE
            )
            .is_err()
        );
        assert_eq!(
            check(
                raw(r#"{"type":"success","x":1}"#),
                &Shape::Union(&v1::RUN_OUTCOME),
                SITE
            ),
            Ok(Verdict::Keep)
        );
        assert!(check(raw("null"), &Shape::Union(&v1::RUN_OUTCOME), SITE).is_err());
        assert!(
            check(
                raw(r#"{"type":"interrupt","interrupts":[]}"#),
                &Shape::Union(&v1::RUN_OUTCOME),
                SITE
            )
            .is_err()
        );
    }

    #[test]
    fn messages_v1_drop_unknown_roles_v0_rejects() {
        let msgs = raw(
            r#"[{"id":"a","role":"function","content":"x"},{"id":"b","role":"user","content":"hi"}]"#,
        );
        assert_eq!(check(msgs, &v1::MESSAGES, SITE), Ok(Verdict::Keep));
        assert!(check(msgs, &v0::MESSAGES, SITE).is_err());
        assert!(check(raw("[null]"), &v1::MESSAGES, SITE).is_err());
        // A media part whose source kind is unknown is dropped whole.
        let parts = raw(
            r#"[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"s3","value":"x"}}]}]"#,
        );
        assert_eq!(check(parts, &v1::MESSAGES, SITE), Ok(Verdict::Keep));
    }

    #[test]
    fn binary_needs_payload_in_v0() {
        let ok = raw(
            r#"[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"a/b","url":"x"}]}]"#,
        );
        let bad = raw(
            r#"[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"a/b","id":""}]}]"#,
        );
        assert!(check(ok, &v0::MESSAGES, SITE).is_ok());
        assert_eq!(
            check(bad, &v0::MESSAGES, SITE).map_err(|f| match f {
                Fault::Schema(_, p) => Some(p),
                Fault::LegacyPartBudget => None,
            }),
            Err(Some(SchemaProblem::BinaryPayload))
        );
    }

    #[test]
    fn stripping_runs_before_validation_in_v1() {
        // The image part's source kind is unknown, so the part is dropped
        // whole; its invalid `id` is never looked at.
        let content = raw(r#"[{"type":"image","id":1,"source":{"type":"zzz","value":"v"}}]"#);
        assert_eq!(check(content, &v1::RESULT_CONTENT, SITE), Ok(Verdict::Keep));
        let content = raw(r#"[{"type":"image","id":1,"source":{"type":"url","value":"v"}}]"#);
        assert!(check(content, &v1::RESULT_CONTENT, SITE).is_err());
    }

    #[test]
    fn legacy_binary_parts_upgrade_in_v1_messages() {
        let b = |s| LegacyBinary::read(raw(s));
        let up =
            b(r#"{"type":"binary","mimeType":"audio/wav","url":"u","data":"","filename":"f"}"#)
                .unwrap();
        assert_eq!((up.part_type, up.source_type()), ("audio", "url"));
        assert!(up.filename.is_some());
        assert_eq!(
            b(r#"{"type":"binary","mimeType":"imagex/png","data":"d"}"#)
                .unwrap()
                .part_type,
            "document"
        );
        assert!(b(r#"{"type":"binary","mimeType":"image/png","id":"only-id"}"#).is_none());
        assert!(b(r#"{"type":"binary","mimeType":5,"data":"d"}"#).is_none());
        // A truthy non-string payload upgrades, then fails validation.
        let msgs = raw(
            r#"[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"a/b","data":1}]}]"#,
        );
        assert!(check(msgs, &v1::MESSAGES, SITE).is_err());
        // An identical modern sibling supersedes the upgraded part.
        let parts = raw(r#"[{"type":"binary","mimeType":"image/png","data":"d"},
                {"type":"image","source":{"type":"data","value":"d","mimeType":"image/png"}}]"#);
        let first = parts.elements().next().unwrap();
        assert!(superseded(&LegacyBinary::read(first).unwrap(), parts));
        let item = Shape::Union(&v1::PART_IN_MESSAGE);
        assert!(omitted(first, &item, parts));
    }

    #[test]
    fn legacy_comparisons_are_budgeted() {
        let mut text = heapless::String::<{ 80 * 70 + 2 }>::new();
        text.push('[').unwrap();
        for i in 0..70 {
            if i > 0 {
                text.push(',').unwrap();
            }
            text.push_str(r#"{"type":"binary","mimeType":"a/b","data":"d"}"#)
                .unwrap();
        }
        text.push(']').unwrap();
        let shape = Shape::Array(&Shape::Union(&v1::PART_IN_MESSAGE));
        assert_eq!(
            check(raw(&text), &shape, SITE),
            Err(Fault::LegacyPartBudget)
        );
    }

    #[test]
    fn patch_operation_proto_member_acts_as_prototype() {
        let op = raw(r#"{"op":"add","path":"/a","__proto__":{"value":5,"path":"/x"}}"#);
        let (slots, _) = collect(op, &v1::ADD);
        assert_eq!(slots[0].unwrap().as_bytes(), br#""/a""#);
        assert_eq!(slots[1].unwrap().as_bytes(), b"5");
    }

    #[test]
    fn object_names_round_trip() {
        for (i, &o) in SchemaObject::ALL.iter().enumerate() {
            assert_eq!(o.index(), i);
            assert_eq!(SchemaObject::from_bytes(o.as_str().as_bytes()), Some(o));
        }
    }

    #[test]
    fn every_type_has_a_table_in_both_dialects() {
        for &d in &[Dialect::V1, Dialect::V0] {
            for &t in EventType::ALL {
                let fields = event_fields(d, t);
                assert!(fields.len() >= 3, "{t}");
                assert!(fields.len() <= MAX_EVENT_FIELDS, "{t}");
            }
        }
    }
}
