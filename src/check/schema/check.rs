//! Checking a value against a shape.

use super::*;
use crate::protocol::event_type::Member;
use crate::protocol::schema::{Extra, Obj, Presence, Shape, Special};
use crate::view::json::{JsonKind, RawJson};
use crate::view::shaped::{
    LEGACY_COMPARISON_BUDGET, LegacyBinary, collect, is_legacy_binary, required_member_drops,
    variant,
};
use Shape::Str;

/// Whether a value is kept or, under V1's stripping rules, dropped as an
/// unrecognised union member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Keep,
    Drop,
}

/// Where a problem is, for the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Site {
    pub(crate) object: SchemaObject,
    pub(crate) field: Option<Member>,
}

/// Why a check failed: the value breaks a rule, or checking it would
/// exceed a fixed budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    Schema(Site, SchemaProblem),
    /// More legacy-part comparisons than [`LEGACY_COMPARISON_BUDGET`].
    LegacyPartBudget,
}

pub(crate) type Check = Result<Verdict, Fault>;

fn fail(site: Site, problem: SchemaProblem) -> Check {
    Err(Fault::Schema(site, problem))
}

fn wrong(site: Site, expected: ExpectedKind, v: RawJson<'_>) -> Check {
    fail(
        site,
        SchemaProblem::WrongKind {
            expected,
            found: v.kind(),
        },
    )
}

/// Applies a member's presence rule; `None` means "treat as absent".
/// Returns `Err` for a missing required member.
pub(crate) fn present<'a>(
    value: Option<RawJson<'a>>,
    presence: Presence,
    site: Site,
) -> Result<Option<RawJson<'a>>, Fault> {
    match (value, presence) {
        (Some(v), Presence::NullAbsent) if v.is_null() => Ok(None),
        (Some(v), _) => Ok(Some(v)),
        (None, Presence::Required) => Err(Fault::Schema(site, SchemaProblem::Missing)),
        (None, Presence::Default(d)) => Ok(Some(RawJson::exact(d))),
        (None, _) => Ok(None),
    }
}

const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

fn is_integral(x: f64) -> bool {
    x.is_finite() && (x.abs() >= 4_503_599_627_370_496.0 || (x as i64) as f64 == x)
}

/// True if `v` certainly passes `shape` unchanged, decided cheaply: the
/// shapes of most members (strings, timestamps, anything). `false` means
/// "ask [`check`]".
#[inline]
pub(crate) fn passes_quickly(v: RawJson<'_>, shape: &Shape) -> bool {
    match shape {
        Shape::Any => true,
        Shape::Str => v.kind() == JsonKind::String,
        Shape::Number => v.kind() == JsonKind::Number,
        // A short non-negative integer is a safe one.
        Shape::SafeInt | Shape::Count | Shape::NonNegInt => {
            matches!(v.short_int(), Some((false, _)))
        }
        _ => false,
    }
}

/// Checks `v` against `shape`.
pub(crate) fn check(v: RawJson<'_>, shape: &Shape, site: Site) -> Check {
    let keep = Ok(Verdict::Keep);
    match *shape {
        Shape::Any => keep,
        Shape::NonNull if v.is_null() => fail(site, SchemaProblem::Null),
        Shape::NonNull => keep,
        Shape::Str => match v.kind() {
            JsonKind::String => keep,
            _ => wrong(site, ExpectedKind::String, v),
        },
        Shape::Bool => match v.kind() {
            JsonKind::Bool => keep,
            _ => wrong(site, ExpectedKind::Boolean, v),
        },
        // A valid JSON number always reads as a double (1e400 as infinity).
        Shape::Number if v.kind() == JsonKind::Number => keep,
        Shape::Number | Shape::SafeInt | Shape::Count | Shape::NonNegInt => {
            let Some(x) = v.as_f64() else {
                return wrong(site, ExpectedKind::Number, v);
            };
            match *shape {
                Shape::Number => keep,
                Shape::NonNegInt if !is_integral(x) => fail(site, SchemaProblem::NotInteger),
                Shape::NonNegInt if x < 0.0 => fail(site, SchemaProblem::Negative),
                Shape::NonNegInt => keep,
                _ if !is_integral(x) => fail(site, SchemaProblem::NotInteger),
                _ if x.abs() > MAX_SAFE => fail(site, SchemaProblem::NotSafeInteger),
                Shape::Count if x < 0.0 => fail(site, SchemaProblem::Negative),
                _ => keep,
            }
        }
        Shape::OneOf(allowed) => match v.as_str() {
            Some(s) if allowed.iter().any(|a| s.eq_str(a)) => keep,
            Some(_) => fail(site, SchemaProblem::NotAllowed),
            None => wrong(site, ExpectedKind::String, v),
        },
        Shape::Pointer => match v.as_str() {
            Some(s) if is_json_pointer(s.chars()) => keep,
            Some(_) => fail(site, SchemaProblem::BadPointer),
            None => wrong(site, ExpectedKind::String, v),
        },
        Shape::Record | Shape::Dict => match v.kind() {
            JsonKind::Object => keep,
            _ => wrong(site, ExpectedKind::Object, v),
        },
        Shape::Object(o) => match v.kind() {
            JsonKind::Object => check_object(v, o),
            _ => wrong(site, ExpectedKind::Object, v),
        },
        Shape::Array(item) | Shape::NonEmptyArray(item) => {
            if v.kind() != JsonKind::Array {
                return wrong(site, ExpectedKind::Array, v);
            }
            let (mut kept, mut elements, mut legacy) = (0usize, 0usize, 0usize);
            for e in v.elements() {
                elements = elements.saturating_add(1);
                if check(e, item, site)? == Verdict::Keep {
                    kept = kept.saturating_add(1);
                    legacy = legacy.saturating_add(usize::from(is_legacy_binary(e, item)));
                }
            }
            if kept == 0 && matches!(shape, Shape::NonEmptyArray(_)) {
                return fail(site, SchemaProblem::Empty);
            }
            // Writing this array compares every upgraded legacy part with
            // every sibling (see `superseded`); keep that bounded.
            if legacy.saturating_mul(elements) > LEGACY_COMPARISON_BUDGET {
                return Err(Fault::LegacyPartBudget);
            }
            keep
        }
        Shape::Union(u) => {
            if v.kind() != JsonKind::Object {
                return wrong(site, ExpectedKind::Object, v);
            }
            match variant(v, u) {
                Some(o) => check_object(v, o),
                None if u.drop_unknown => Ok(Verdict::Drop),
                None => fail(
                    Site {
                        object: site.object,
                        field: Some(u.tag),
                    },
                    SchemaProblem::UnknownVariant,
                ),
            }
        }
        Shape::StrOr(inner) => match v.kind() {
            JsonKind::String => keep,
            _ => match check(v, inner, site) {
                Err(Fault::Schema(s, SchemaProblem::WrongKind { .. })) => {
                    wrong(s, ExpectedKind::StringOrArray, v)
                }
                other => other,
            },
        },
    }
}

fn check_object(v: RawJson<'_>, o: &Obj) -> Check {
    if o.special == Special::LegacyBinary {
        return match LegacyBinary::read(v) {
            None => Ok(Verdict::Drop),
            Some(b) => check(
                b.value,
                &Str,
                Site {
                    object: b.source_name(),
                    field: Some(Member::Value),
                },
            ),
        };
    }
    let (slots, extra) = collect(v, o);
    if extra && o.extra == Extra::Reject && has_unlisted(v, o) {
        return fail(
            Site {
                object: o.name,
                field: None,
            },
            SchemaProblem::UnknownMember,
        );
    }
    if required_member_drops(o, &slots) {
        return Ok(Verdict::Drop);
    }
    for (f, slot) in o.fields.iter().zip(slots) {
        let site = Site {
            object: o.name,
            field: Some(f.name),
        };
        if let Some(value) = present(slot, f.presence, site)? {
            check(value, &f.shape, site)?;
        }
    }
    if o.special == Special::BinaryPayload && !binary_payload(v) {
        return fail(
            Site {
                object: o.name,
                field: None,
            },
            SchemaProblem::BinaryPayload,
        );
    }
    Ok(Verdict::Keep)
}

/// True if `v` has a member that is neither a listed field nor the `type` tag.
fn has_unlisted(v: RawJson<'_>, o: &Obj) -> bool {
    v.members()
        .any(|(k, _)| !k.eq_str("type") && !o.fields.iter().any(|f| k.eq_str(f.name.as_str())))
}

fn binary_payload(v: RawJson<'_>) -> bool {
    ["id", "url", "data"].iter().any(|k| {
        v.get(k)
            .and_then(|x| x.as_str())
            .is_some_and(|s| !s.is_empty())
    })
}

/// `^(/([^/~]|~[01])*)*$` over the decoded text.
pub(super) fn is_json_pointer(mut chars: impl Iterator<Item = u32>) -> bool {
    let Some(first) = chars.next() else {
        return true;
    };
    if first != u32::from('/') {
        return false;
    }
    while let Some(c) = chars.next() {
        if c == u32::from('~') && !matches!(chars.next(), Some(0x30 | 0x31)) {
            return false;
        }
    }
    true
}
