//! What the schema tables make of a value at its place in a spilling
//! payload: read whole, only its kind, its members or its elements. The
//! reducer asks this when a member's name closes ([`Named`]) and when a
//! value opens ([`Treat`]); nothing here is specific to an event type, so a
//! new event or member needs no new spilling code.

use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key, Member};
use crate::protocol::schema::{self, Extra, Obj, SchemaObject, Shape, Special, Union};

/// What is done with a value, decided when it opens.
#[derive(Clone, Copy, Debug)]
pub(super) enum Treat {
    /// Read whole by a rule (ids, roles, tags, enums, pointers, numbers):
    /// never replaced.
    Keep,
    /// Only its kind is read: it may become the empty value of its kind
    /// (`truthy`: a string stays non-empty, `" "`).
    Opaque { truthy: bool },
    /// Neither replaced nor looked into (its shape is not known).
    Whole,
    /// An object whose members the schema reads.
    Object(Ctx),
    /// An array whose elements are checked against `item` one by one.
    Array(&'static Shape, List),
}

/// Whose members an object's are.
#[derive(Clone, Copy, Debug)]
pub(super) enum Ctx {
    /// The event's top level (its fields follow its type).
    Event,
    Obj(&'static Obj),
    /// The `__proto__` member of an open object, which supplies the
    /// members the object lacks (see `view::shaped::collect`).
    Proto(&'static Obj),
    /// A union, with the variant its tag chose so far.
    Union(&'static Union, Variant),
}

/// A union object's variant, as far as its tag has been read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Variant {
    /// No tag yet.
    Unknown,
    /// The variant at this index of the union's.
    Known(u8),
    /// A tag that names no variant: the object is dropped or rejected
    /// whatever else it holds.
    Other,
}

/// What an array's elements are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum List {
    Plain,
    /// At least one element must be kept (`NonEmptyArray`).
    NonEmpty,
    /// A message history: each message makes owner records.
    History,
    /// An assistant's tool calls inside a history: each makes a record.
    Calls,
}

/// A member, as its name decides, before its value opens.
#[derive(Clone, Copy, Debug)]
pub(super) enum Named {
    /// Its value is read whole by a rule (strings and scalars kept).
    Read,
    /// A union's tag.
    Tag,
    /// Neither replaced nor looked into.
    Whole,
    /// Only its kind is read.
    Kind { truthy: bool },
    /// As `shape` says, by the kind of its value.
    Shape(&'static Shape, List, bool),
    /// An open object's `__proto__`.
    Proto(&'static Obj),
    /// A member of a union read before its tag: treated as every variant
    /// that looks into it would (a reduction keeps a value's kind, which
    /// is all the others read), if they agree.
    Undecided(&'static Union, Member, Place),
    /// A top-level member read before the event's type: as every type
    /// that looks into it would, if they agree.
    AnyEvent(Dialect, Option<Key>),
}

impl Named {
    /// What is done with the value that opens with `first`.
    pub(super) fn treat(self, first: u8) -> Treat {
        let container = matches!(first, b'{' | b'[');
        if !container && first != b'"' {
            return Treat::Keep;
        }
        match self {
            Named::Read | Named::Tag | Named::Whole if first == b'"' => Treat::Keep,
            Named::Read | Named::Tag => Treat::Opaque { truthy: false },
            Named::Whole => Treat::Whole,
            Named::Kind { truthy } => Treat::Opaque { truthy },
            Named::Shape(shape, list, truthy) => by_shape(shape, first, list, truthy),
            Named::Proto(o) if first == b'{' => Treat::Object(Ctx::Proto(o)),
            Named::Proto(_) => Treat::Opaque { truthy: false },
            Named::Undecided(u, name, place) => agreed(u.variants.iter().map(|&(_, o)| {
                object_member(o, name.as_str().as_bytes(), false, place).treat(first)
            })),
            Named::AnyEvent(dialect, key) => agreed(
                EventType::ALL
                    .iter()
                    .map(|&ty| event_member(dialect, Some(ty), key).treat(first)),
            ),
        }
    }
}

/// The treatment every one of `treats` allows: a value only some look
/// into is treated as they do (a reduction keeps its kind, all the others
/// read), if they agree; one a rule reads is kept.
fn agreed(treats: impl Iterator<Item = Treat>) -> Treat {
    let (mut chosen, mut truthy) = (None, false);
    for t in treats {
        match t {
            Treat::Opaque { truthy: t } => truthy |= t,
            Treat::Keep | Treat::Whole => return t,
            t => match chosen {
                None => chosen = Some(t),
                Some(c) if same(c, t) => {}
                Some(_) => return Treat::Whole,
            },
        }
    }
    chosen.unwrap_or(Treat::Opaque { truthy })
}

/// What `shape` makes of a value that opens with `first`.
pub(super) fn by_shape(shape: &'static Shape, first: u8, list: List, truthy: bool) -> Treat {
    let opaque = Treat::Opaque { truthy };
    if !matches!(first, b'"' | b'{' | b'[') {
        return Treat::Keep;
    }
    match *shape {
        Shape::OneOf(_) | Shape::Pointer if first == b'"' => Treat::Keep,
        Shape::Object(o) if first == b'{' => Treat::Object(Ctx::Obj(o)),
        Shape::Union(u) if first == b'{' => Treat::Object(Ctx::Union(u, Variant::Unknown)),
        Shape::Array(Shape::Any) => opaque,
        Shape::Array(item) if first == b'[' => Treat::Array(item, list),
        Shape::NonEmptyArray(item) if first == b'[' => Treat::Array(item, List::NonEmpty),
        Shape::StrOr(inner) if first != b'"' => by_shape(inner, first, list, truthy),
        // A kind is all that is read, or the kind is wrong whatever it holds.
        _ => opaque,
    }
}

/// Top-level members no stage reads the content of (only their kind).
const OPAQUE: &[Key] = &[
    Key::Delta,
    Key::Content,
    Key::Snapshot,
    Key::Value,
    Key::RawEvent,
    Key::Result,
    Key::Event,
    Key::EncryptedValue,
    Key::Metadata,
    Key::Patch,
    Key::Description,
    Key::Title,
];

/// A top-level member no stage reads the content of.
pub(super) fn opaque_key(key: Option<Key>) -> bool {
    key.is_none_or(|k| OPAQUE.contains(&k))
}

/// Nested members a rule reads (a history message's owner records).
const READ: &[Member] = &[Member::Id, Member::Role, Member::SubagentRunId];

/// A top-level member `key` (`None`: a name that is no key) of an event
/// of type `ty` (`None` while unknown).
pub(super) fn event_member(dialect: Dialect, ty: Option<EventType>, key: Option<Key>) -> Named {
    let kind = Named::Kind { truthy: false };
    let Some(key) = key else {
        return kind;
    };
    if key == Key::Type {
        return Named::Read;
    }
    let Some(ty) = ty else {
        return Named::AnyEvent(dialect, Some(key));
    };
    let field = schema::event_fields(dialect, ty)
        .iter()
        .find(|f| f.key == key);
    match field {
        Some(f) if structured(&f.shape) => {
            let list = match (ty, key) {
                (EventType::MessagesSnapshot, Key::Messages) => List::History,
                _ => List::Plain,
            };
            Named::Shape(&f.shape, list, false)
        }
        _ if opaque_key(Some(key)) => kind,
        _ => Named::Read,
    }
}

/// A member called `name` of an object of shape `o`; `input` if the object
/// is a run's input (its `messages` are a history), `message` if it is a
/// message of a history (its `toolCalls` make records).
pub(super) fn object_member(o: &'static Obj, name: &[u8], proto: bool, place: Place) -> Named {
    let special = o.special != Special::None;
    if let Some(f) = o.fields.iter().find(|f| f.name.as_str().as_bytes() == name) {
        if READ.contains(&f.name) || (special && f.name == Member::MimeType) {
            return Named::Read;
        }
        let list = match (place, f.name) {
            (Place::Input, Member::Messages) => List::History,
            (Place::Message, Member::ToolCalls) => List::Calls,
            _ => List::Plain,
        };
        return Named::Shape(&f.shape, list, special);
    }
    if !proto && o.extra == Extra::Keep && name == b"__proto__" {
        return Named::Proto(o);
    }
    match o.special {
        // The upgrade reads the mime type, and data, url and filename for
        // truthiness.
        Special::LegacyBinary if name == b"mimeType" => Named::Read,
        _ => Named::Kind { truthy: special },
    }
}

/// Where an object sits, for the records its arrays make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    Other,
    /// A RUN_STARTED's `input`.
    Input,
    /// An element of a history.
    Message,
}

impl Place {
    /// An object member of the event of shape `o`.
    pub(super) fn of(o: &Obj) -> Place {
        if o.name == SchemaObject::RunAgentInput {
            Place::Input
        } else {
            Place::Other
        }
    }
}

/// A member called `name` of a union object whose variant is `variant`.
pub(super) fn union_member(
    u: &'static Union,
    variant: Variant,
    name: &[u8],
    place: Place,
) -> Named {
    if u.tag.as_str().as_bytes() == name {
        return Named::Tag;
    }
    match variant {
        Variant::Known(i) => match u.variants.get(usize::from(i)) {
            Some(&(_, o)) => object_member(o, name, false, place),
            None => Named::Whole,
        },
        Variant::Other => Named::Kind { truthy: false },
        Variant::Unknown => match Member::from_bytes(name) {
            Some(m) if READ.contains(&m) => Named::Read,
            Some(m) => Named::Undecided(u, m, place),
            // A name no variant lists.
            None => Named::Kind {
                truthy: u.variants.iter().any(|(_, o)| o.special != Special::None),
            },
        },
    }
}

/// The variant of `u` whose tag is `tag` (its raw bytes, unescaped).
pub(super) fn variant(u: &'static Union, tag: &[u8]) -> Variant {
    u.variants
        .iter()
        .position(|(name, _)| name.as_bytes() == tag)
        .and_then(|i| u8::try_from(i).ok())
        .map_or(Variant::Other, Variant::Known)
}

/// Whether what was reduced of a member as `before` says is reduced as
/// `after` says too: it reads only its kind, or has the same shape.
pub(super) fn same_reduction(before: Named, after: Named) -> bool {
    match (before, after) {
        (_, Named::Kind { .. }) => true,
        (Named::Shape(a, ..), Named::Shape(b, ..)) => core::ptr::eq(a, b),
        _ => false,
    }
}

/// The same treatment of a value.
fn same(a: Treat, b: Treat) -> bool {
    match (a, b) {
        (Treat::Object(Ctx::Obj(x)), Treat::Object(Ctx::Obj(y))) => core::ptr::eq(x, y),
        (Treat::Object(Ctx::Union(x, _)), Treat::Object(Ctx::Union(y, _))) => core::ptr::eq(x, y),
        (Treat::Array(x, l), Treat::Array(y, m)) => core::ptr::eq(x, y) && l == m,
        _ => false,
    }
}

/// A shape some kind of value is looked into under.
fn structured(shape: &Shape) -> bool {
    match *shape {
        Shape::Object(_) | Shape::Union(_) | Shape::NonEmptyArray(_) => true,
        Shape::Array(item) => !matches!(item, Shape::Any),
        Shape::StrOr(inner) => structured(inner),
        _ => false,
    }
}
