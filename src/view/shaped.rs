//! A JSON value read through the schema tables, without checking it: the
//! variant a union's tag selects, the members that are written and those
//! V1's stripper drops, and the legacy binary part V1's compatibility
//! boundary upgrades. The checker (`check::schema`) and the writer
//! (`output::walk`) both read values this way.

use crate::protocol::event_type::Key;
use crate::protocol::schema::{
    EventField, Extra, Field, Obj, Presence, SchemaObject, Shape, Special, Union, v1,
};
use crate::view::json::{JsonKind, RawJson};
use crate::view::string::JsonStr;

/// A message role some message schema has (V1's list, which V0's is
/// within): the messages a snapshot's owners come from.
pub(crate) fn is_message_role(role: JsonStr<'_>) -> bool {
    v1::MESSAGE
        .variants
        .iter()
        .any(|(name, _)| role.eq_str(name))
}

/// The variant a union value's tag selects (last tag member wins).
pub(crate) fn variant(v: RawJson<'_>, u: &Union) -> Option<&'static Obj> {
    let tag = v.get(u.tag.as_str())?.as_str()?;
    u.variants
        .iter()
        .find(|(name, _)| tag.eq_str(name))
        .map(|&(_, o)| o)
}

/// The members of `v` that are written for shape `o`, in the table's
/// order: the last value of each field, defaults filled in, with
/// null-means-absent members and dropped union members left out.
pub(crate) fn written_fields<'a>(
    v: RawJson<'a>,
    o: &'static Obj,
) -> impl Iterator<Item = (&'static Field, RawJson<'a>)> {
    let (slots, _) = collect(v, o);
    o.fields.iter().zip(slots).filter_map(move |(f, slot)| {
        let value = match (slot, f.presence) {
            (Some(s), Presence::NullAbsent) if s.is_null() => None,
            (None, Presence::Default(d)) => Some(RawJson::exact(d)),
            (s, _) => s,
        }?;
        (!drops(value, &f.shape)).then_some((f, value))
    })
}

/// Whether a member named `name` of an open object (`Extra::Keep`) is
/// carried over as received: not a listed field, not the union's tag, and
/// not `__proto__` (which V1's stripper turns into the prototype, see
/// [`collect`]).
pub(crate) fn kept_unlisted(name: JsonStr<'_>, o: &Obj, tag: Option<&str>) -> bool {
    !(tag.is_some_and(|t| name.eq_str(t))
        || name.eq_str("__proto__")
        || o.fields.iter().any(|f| name.eq_str(f.name.as_str())))
}

/// Whether a top-level member of a V0 event passes through as received:
/// not `type`, not a member the schema names, and not `__proto__` (zod v3
/// copies passthrough members by assignment, so it sets the prototype).
pub(crate) fn passes_through(name: JsonStr<'_>, fields: &[EventField]) -> bool {
    !(name.eq_str(Key::Type.as_str())
        || name.eq_str("__proto__")
        || fields.iter().any(|f| name.eq_str(f.key.as_str())))
}

/// The most members a nested object shape names.
pub(crate) const MAX_OBJECT_FIELDS: usize = 12;

/// Collects the last value of each named member of `v` into slots aligned
/// with `o.fields`; reports whether any other member exists.
///
/// For the open RFC 6902 operations, V1's stripper copies members onto a
/// fresh object by assignment, so an object-valued `__proto__` member
/// becomes that object's prototype and supplies the members it lacks.
pub(crate) fn collect<'a>(
    v: RawJson<'a>,
    o: &Obj,
) -> ([Option<RawJson<'a>>; MAX_OBJECT_FIELDS], bool) {
    let mut slots = [None; MAX_OBJECT_FIELDS];
    let mut extra = false;
    let mut proto = None;
    for (k, val) in v.members() {
        match o.fields.iter().position(|f| k.eq_str(f.name.as_str())) {
            Some(i) => {
                if let Some(s) = slots.get_mut(i) {
                    *s = Some(val);
                }
            }
            // A union's tag is a member its variants do not list.
            None => {
                extra = true;
                if o.extra == Extra::Keep && k.eq_str("__proto__") {
                    proto = Some(val);
                }
            }
        }
    }
    if let Some(proto) = proto.filter(|p| p.kind() == JsonKind::Object) {
        for (f, slot) in o.fields.iter().zip(slots.iter_mut()) {
            if slot.is_none() {
                *slot = proto.get(f.name.as_str());
            }
        }
    }
    (slots, extra)
}

/// Whether V1's stripper removes `v` whole: it is an unrecognised union
/// member, or a required member of it is. Stripping runs before validation,
/// so this wins over anything invalid beside it.
pub(crate) fn drops(v: RawJson<'_>, shape: &Shape) -> bool {
    if v.kind() != JsonKind::Object {
        return false;
    }
    let o = match *shape {
        Shape::Union(u) => match variant(v, u) {
            Some(o) => o,
            None => return u.drop_unknown,
        },
        Shape::Object(o) => o,
        _ => return false,
    };
    if o.special == Special::LegacyBinary {
        return LegacyBinary::read(v).is_none();
    }
    let (slots, _) = collect(v, o);
    required_member_drops(o, &slots)
}

/// True if a required member (of `o`, collected into `slots`) is dropped,
/// which drops the whole object.
pub(crate) fn required_member_drops(o: &Obj, slots: &[Option<RawJson<'_>>]) -> bool {
    o.fields.iter().zip(slots).any(|(f, slot)| {
        matches!(f.presence, Presence::Required) && slot.is_some_and(|x| drops(x, &f.shape))
    })
}

/// A legacy `{"type":"binary", mimeType, data?, url?, filename?}` content
/// part as the 1.0 compatibility boundary upgrades it: to an image, audio,
/// video or document part (by mime type prefix) whose source is `data` if
/// truthy, else `url` if truthy, with `metadata.filename` if the filename
/// is truthy. Without a string `mimeType`, or with neither data nor url, it
/// stays a binary part, which nothing recognises, and is dropped.
///
/// The boundary also drops an upgraded part when an identical modern part
/// sits in the same array ([`superseded`]). That compares each upgraded part
/// with every sibling, so an array may hold at most
/// [`LEGACY_COMPARISON_BUDGET`] such comparisons; more is a capacity error.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LegacyBinary<'a> {
    pub(crate) part_type: &'static str,
    pub(crate) from_data: bool,
    pub(crate) value: RawJson<'a>,
    pub(crate) mime_type: RawJson<'a>,
    pub(crate) filename: Option<RawJson<'a>>,
}

impl<'a> LegacyBinary<'a> {
    pub(crate) fn read(v: RawJson<'a>) -> Option<Self> {
        let mime_type = v.get("mimeType")?;
        let mime = mime_type.as_str()?;
        let part_type = ["image", "audio", "video"]
            .into_iter()
            .find(|t| starts_with(mime, t) && mime.chars().nth(t.len()) == Some(u32::from('/')))
            .unwrap_or("document");
        let data = v.get("data").filter(|x| truthy(*x));
        let url = v.get("url").filter(|x| truthy(*x));
        let (from_data, value) = match (data, url) {
            (Some(d), _) => (true, d),
            (None, Some(u)) => (false, u),
            (None, None) => return None,
        };
        Some(LegacyBinary {
            part_type,
            from_data,
            value,
            mime_type,
            filename: v.get("filename").filter(|x| truthy(*x)),
        })
    }

    pub(crate) fn source_type(&self) -> &'static str {
        if self.from_data { "data" } else { "url" }
    }

    pub(crate) fn source_name(&self) -> SchemaObject {
        if self.from_data {
            SchemaObject::DataSource
        } else {
            SchemaObject::UrlSource
        }
    }
}

/// Most legacy-part-against-sibling comparisons one content array may
/// need (e.g. 64 legacy parts among 64 parts).
pub(crate) const LEGACY_COMPARISON_BUDGET: usize = 4096;

/// True if the writer leaves element `e` of `array` (whose items are `item`)
/// out: V1 strips it, or it is a legacy part a modern sibling supersedes.
pub(crate) fn omitted(e: RawJson<'_>, item: &Shape, array: RawJson<'_>) -> bool {
    drops(e, item)
        || (is_legacy_binary(e, item)
            && LegacyBinary::read(e).is_some_and(|b| superseded(&b, array)))
}

/// True if `e` is a legacy binary part the boundary upgrades.
pub(crate) fn is_legacy_binary(e: RawJson<'_>, item: &Shape) -> bool {
    match *item {
        // Only a union with a legacy variant (content parts) is worth
        // reading the element's tag for.
        Shape::Union(u) if has_legacy_parts(item) => variant(e, u)
            .is_some_and(|o| o.special == Special::LegacyBinary && LegacyBinary::read(e).is_some()),
        _ => false,
    }
}

/// Whether elements of shape `item` may be legacy binary parts (a union
/// with a legacy variant).
pub(crate) fn has_legacy_parts(item: &Shape) -> bool {
    match *item {
        Shape::Union(u) => u
            .variants
            .iter()
            .any(|(_, o)| o.special == Special::LegacyBinary),
        _ => false,
    }
}

/// True if `siblings` (the part's own array) holds a modern part identical
/// to what `b` upgrades to: same part type, same source type, value and
/// mime type (`===`), and the same `metadata.filename` if `b` has one.
pub(crate) fn superseded(b: &LegacyBinary<'_>, siblings: RawJson<'_>) -> bool {
    siblings.elements().any(|part| {
        let same_type = part
            .get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| t.eq_str(b.part_type));
        let Some(source) = part.get("source").filter(|s| s.kind() == JsonKind::Object) else {
            return false;
        };
        let same_source = source
            .get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| t.eq_str(b.source_type()))
            && source.get("value").is_some_and(|x| strict_eq(x, b.value))
            && source
                .get("mimeType")
                .is_some_and(|x| strict_eq(x, b.mime_type));
        let same_name = match b.filename {
            None => true,
            Some(f) => part
                .get("metadata")
                .filter(|m| m.kind() == JsonKind::Object)
                .and_then(|m| m.get("filename"))
                .is_some_and(|x| strict_eq(x, f)),
        };
        same_type && same_source && same_name
    })
}

/// JavaScript's `===` on two JSON values (objects and arrays are never
/// identical: each parse makes a new one).
fn strict_eq(a: RawJson<'_>, b: RawJson<'_>) -> bool {
    match (a.kind(), b.kind()) {
        (JsonKind::String, JsonKind::String) => a.as_str() == b.as_str(),
        (JsonKind::Number, JsonKind::Number) => a.as_f64() == b.as_f64(),
        (JsonKind::Bool, JsonKind::Bool) => a.as_bool() == b.as_bool(),
        (JsonKind::Null, JsonKind::Null) => true,
        _ => false,
    }
}

fn starts_with(s: JsonStr<'_>, prefix: &str) -> bool {
    let mut chars = s.chars();
    prefix.chars().all(|p| chars.next() == Some(u32::from(p)))
}

/// JavaScript truthiness of a JSON value.
fn truthy(v: RawJson<'_>) -> bool {
    match v.kind() {
        JsonKind::Null => false,
        JsonKind::Bool => v.as_bool() == Some(true),
        JsonKind::Number => v.as_f64().is_some_and(|x| x != 0.0),
        JsonKind::String => v.as_str().is_some_and(|s| !s.is_empty()),
        JsonKind::Array | JsonKind::Object => true,
    }
}
