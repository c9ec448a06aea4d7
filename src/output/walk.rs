//! The one walk that decides what is written; [`super::encode`] (JSON text)
//! and `serde_impl` (a `serde::Serializer`) only write it.
//!
//! It follows the schema tables the decoder checks against: for
//! [`Dialect::V1`] only the members the schema knows, at every depth, with
//! unrecognised union members left out; for [`Dialect::V0`] the event's
//! unknown top-level members too (nested objects are stripped, as zod v3
//! strips them; a dict drops `__proto__`). Legacy binary parts are written
//! as the media parts they upgrade to, superseded ones left out.
//!
//! Members and elements are handed to the writer's callback in output
//! order, each value as a [`Node`] (an event's members after its `type`,
//! which the writer puts first). A writer recurses once per schema level (at
//! most six), never per JSON level: [`Node::Raw`] is a leaf.

use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::Key;
use crate::protocol::schema::{self, Extra, Obj, Shape, Special};
use crate::view::event::Event;
use crate::view::json::{JsonKind, RawJson};
use crate::view::shaped::{self, LegacyBinary};
use crate::view::string::JsonStr;

/// A member name: from the schema tables, or as the input spells it.
pub(crate) enum Name<'v> {
    Key(Key),
    Known(&'static str),
    Json(JsonStr<'v>),
}

/// What a value is written as.
pub(crate) enum Node<'v> {
    /// Any value as received, not descended into.
    Raw(RawJson<'v>),
    /// A string from the tables (a part's or a source's type).
    Known(&'static str),
    /// An object, its members from [`Object::members`].
    Object(Object<'v>),
    /// An array's elements through their shape, from [`elements`].
    Array(RawJson<'v>, &'static Shape),
}

/// An object to write, by where its members come from.
pub(crate) enum Object<'v> {
    /// Through one of its shapes (and a union's tag): the tag, the shape's
    /// fields in table order, then, if the shape keeps them, the other
    /// members as received.
    Shaped(RawJson<'v>, &'static Obj, Option<&'static str>),
    /// A dict: its members as received, but `__proto__`.
    Dict(RawJson<'v>),
    /// A legacy binary part, as the media part it is upgraded to.
    Upgraded(LegacyBinary<'v>),
    /// An upgraded part's `source`.
    Source(&'v LegacyBinary<'v>),
    /// An upgraded part's `metadata`: its filename.
    Metadata(RawJson<'v>),
}

impl<'v> Node<'v> {
    /// `v` as the schema describes it by `shape`.
    #[inline] // Not generic: marked so that the writers' loops can inline it.
    pub(crate) fn shaped(v: RawJson<'v>, shape: &'static Shape) -> Self {
        match *shape {
            Shape::Object(o) if v.kind() == JsonKind::Object => Self::object(v, o, None),
            Shape::Union(u) if v.kind() == JsonKind::Object => match shaped::variant(v, u) {
                Some(o) => Self::object(v, o, Some(u.tag.as_str())),
                None => Node::Raw(v),
            },
            Shape::Array(item) | Shape::NonEmptyArray(item) if v.kind() == JsonKind::Array => {
                Node::Array(v, item)
            }
            Shape::StrOr(inner) if v.kind() != JsonKind::String => Self::shaped(v, inner),
            Shape::Dict if v.kind() == JsonKind::Object => Node::Object(Object::Dict(v)),
            _ => Node::Raw(v),
        }
    }

    fn object(v: RawJson<'v>, o: &'static Obj, tag: Option<&'static str>) -> Self {
        let legacy = (o.special == Special::LegacyBinary).then(|| LegacyBinary::read(v));
        Node::Object(match legacy.flatten() {
            Some(b) => Object::Upgraded(b),
            None => Object::Shaped(v, o, tag),
        })
    }
}

impl Object<'_> {
    /// How many members, when known in advance (serde's length hint).
    #[cfg(feature = "serde")]
    pub(crate) fn len(&self) -> Option<usize> {
        match self {
            Object::Source(_) => Some(3),
            Object::Metadata(_) => Some(1),
            _ => None,
        }
    }

    /// Hands each member to `f`, in order.
    pub(crate) fn members<E>(
        &self,
        mut f: impl FnMut(Name<'_>, Node<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            &Object::Shaped(v, o, tag) => {
                if let Some((tag, t)) = tag.and_then(|tag| Some((tag, v.get(tag)?))) {
                    f(Name::Known(tag), Node::Raw(t))?;
                }
                for (field, value) in shaped::written_fields(v, o) {
                    f(
                        Name::Known(field.name.as_str()),
                        Node::shaped(value, &field.shape),
                    )?;
                }
                if o.extra == Extra::Keep {
                    for (name, value) in v.members() {
                        if shaped::kept_unlisted(name, o, tag) {
                            f(Name::Json(name), Node::Raw(value))?;
                        }
                    }
                }
            }
            Object::Dict(v) => {
                for (name, x) in v.members().filter(|(k, _)| !k.eq_str("__proto__")) {
                    f(Name::Json(name), Node::Raw(x))?;
                }
            }
            Object::Upgraded(b) => {
                f(Name::Known("type"), Node::Known(b.part_type))?;
                f(Name::Known("source"), Node::Object(Object::Source(b)))?;
                if let Some(filename) = b.filename {
                    f(
                        Name::Known("metadata"),
                        Node::Object(Object::Metadata(filename)),
                    )?;
                }
            }
            Object::Source(b) => {
                f(Name::Known("type"), Node::Known(b.source_type()))?;
                f(Name::Known("value"), Node::Raw(b.value))?;
                f(Name::Known("mimeType"), Node::Raw(b.mime_type))?;
            }
            &Object::Metadata(filename) => f(Name::Known("filename"), Node::Raw(filename))?,
        }
        Ok(())
    }
}

/// Hands each member of `event` after `type` (which a writer writes first)
/// to `f`, in order: the schema's members in table order, then (V0) the
/// unknown top-level members as received.
pub(crate) fn event<E>(
    event: &Event<'_>,
    mut f: impl FnMut(Name<'_>, Node<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let dialect = event.dialect();
    let fields = schema::event_fields(dialect, event.event_type());
    for field in fields {
        if let Some(v) = event.get(field.key) {
            f(Name::Key(field.key), Node::shaped(v, &field.shape))?;
        }
    }
    if let (Dialect::V0, Some(object)) = (dialect, event.object()) {
        for (name, v) in object.members() {
            if shaped::passes_through(name, fields) {
                f(Name::Json(name), Node::Raw(v))?;
            }
        }
    }
    Ok(())
}

/// Hands each element of `array` that is written to `f`, through `item`.
pub(crate) fn elements<E>(
    array: RawJson<'_>,
    item: &'static Shape,
    mut f: impl FnMut(Node<'_>) -> Result<(), E>,
) -> Result<(), E> {
    for e in array.elements() {
        if !shaped::omitted(e, item, array) {
            f(Node::shaped(e, item))?;
        }
    }
    Ok(())
}
