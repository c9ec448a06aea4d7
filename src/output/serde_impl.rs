//! `serde::Serialize` for the views (feature `serde`).
//!
//! An [`Event`] serializes to the same members [`crate::encode`] writes.
//! Nested values are serialized through serde's nested serializers, so
//! serialization recurses once per JSON nesting level — bounded by the
//! [`Limits::max_depth`](crate::json::Limits::max_depth) the value was validated with. Numbers that
//! are integer literals within `i64`/`u64` serialize as integers, others as
//! `f64`; strings serialize decoded (a lone surrogate as U+FFFD).

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::check::schema::{self, Dialect, Extra, LegacyBinary, Obj, Shape, Special};
use crate::event::Event;
use crate::input::json::{JsonKind, RawJson};

impl<'a> RawJson<'a> {
    /// Deserializes this value with `serde-json-core` (no allocation): typed
    /// access to nested values such as `usage` entries or interrupts.
    ///
    /// Its limits apply: a `&str` field receives the text undecoded
    /// (`a\nb` stays four bytes; borrow a [`crate::JsonStr`] view via
    /// [`RawJson::get`] instead when escapes matter), a surrogate pair escape
    /// is rejected, and an integer written `1e3` does not parse into an
    /// integer type (use `f64`).
    ///
    /// ```
    /// use agui_stream::{decode, Dialect, json::Limits};
    /// #[derive(serde::Deserialize)]
    /// #[serde(rename_all = "camelCase")]
    /// struct Usage<'a> { model: Option<&'a str>, input_tokens: Option<u64> }
    /// let ev = decode(br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r",
    ///     "usage":[{"model":"m","inputTokens":12}]}"#, Dialect::V1, Limits::new()).unwrap().unwrap();
    /// let first = ev.usage().unwrap().elements().next().unwrap();
    /// let usage: Usage<'_> = first.deserialize().unwrap();
    /// assert_eq!((usage.model, usage.input_tokens), (Some("m"), Some(12)));
    /// ```
    ///
    /// # Errors
    ///
    /// `serde_json_core`'s error if the value does not deserialize into `T`.
    pub fn deserialize<T: serde::Deserialize<'a>>(&self) -> Result<T, serde_json_core::de::Error> {
        serde_json_core::from_slice(self.as_bytes()).map(|(value, _)| value)
    }
}

impl Serialize for RawJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.kind() {
            JsonKind::Null => s.serialize_unit(),
            JsonKind::Bool => s.serialize_bool(self.as_bool().unwrap_or_default()),
            JsonKind::Number => {
                let text = core::str::from_utf8(self.as_bytes()).unwrap_or_default();
                if let Ok(i) = text.parse::<i64>() {
                    s.serialize_i64(i)
                } else if let Ok(u) = text.parse::<u64>() {
                    s.serialize_u64(u)
                } else {
                    s.serialize_f64(self.as_f64().unwrap_or_default())
                }
            }
            JsonKind::String => match self.as_str() {
                Some(text) => text.serialize(s),
                None => s.serialize_unit(),
            },
            JsonKind::Array => {
                let mut seq = s.serialize_seq(None)?;
                for e in self.elements() {
                    seq.serialize_element(&e)?;
                }
                seq.end()
            }
            JsonKind::Object => {
                let mut map = s.serialize_map(None)?;
                for (k, v) in self.members() {
                    map.serialize_entry(&k, &v)?;
                }
                map.end()
            }
        }
    }
}

/// A value seen through its schema shape: serialized stripped, as the
/// encoder writes it.
struct Shaped<'a> {
    value: RawJson<'a>,
    shape: &'static Shape,
}

/// An object seen through one of its shapes (and a union's tag).
struct ShapedObject<'a> {
    value: RawJson<'a>,
    obj: &'static Obj,
    tag: Option<&'static str>,
}

impl Serialize for Shaped<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.value;
        match *self.shape {
            Shape::Object(obj) if v.kind() == JsonKind::Object => ShapedObject {
                value: v,
                obj,
                tag: None,
            }
            .serialize(s),
            Shape::Union(u) if v.kind() == JsonKind::Object => match schema::variant(v, u) {
                Some(obj) => ShapedObject {
                    value: v,
                    obj,
                    tag: Some(u.tag.as_str()),
                }
                .serialize(s),
                None => v.serialize(s),
            },
            Shape::Array(item) | Shape::NonEmptyArray(item) if v.kind() == JsonKind::Array => {
                let mut seq = s.serialize_seq(None)?;
                for e in v.elements() {
                    if !schema::omitted(e, item, v) {
                        seq.serialize_element(&Shaped {
                            value: e,
                            shape: item,
                        })?;
                    }
                }
                seq.end()
            }
            Shape::StrOr(inner) if v.kind() != JsonKind::String => Shaped {
                value: v,
                shape: inner,
            }
            .serialize(s),
            Shape::Dict if v.kind() == JsonKind::Object => {
                let mut map = s.serialize_map(None)?;
                for (k, x) in v.members().filter(|(k, _)| !k.eq_str("__proto__")) {
                    map.serialize_entry(&k, &x)?;
                }
                map.end()
            }
            _ => v.serialize(s),
        }
    }
}

/// A legacy binary part, serialized as the media part it is upgraded to.
struct Upgraded<'a>(LegacyBinary<'a>);

impl Serialize for Upgraded<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Source<'a>(&'a LegacyBinary<'a>);
        impl Serialize for Source<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(3))?;
                map.serialize_entry("type", self.0.source_type())?;
                map.serialize_entry("value", &self.0.value)?;
                map.serialize_entry("mimeType", &self.0.mime_type)?;
                map.end()
            }
        }
        struct Filename<'a>(RawJson<'a>);
        impl Serialize for Filename<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("filename", &self.0)?;
                map.end()
            }
        }
        let b = &self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", b.part_type)?;
        map.serialize_entry("source", &Source(b))?;
        if let Some(f) = b.filename {
            map.serialize_entry("metadata", &Filename(f))?;
        }
        map.end()
    }
}

impl Serialize for ShapedObject<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (v, o) = (self.value, self.obj);
        if let Some(b) = (o.special == Special::LegacyBinary)
            .then(|| LegacyBinary::read(v))
            .flatten()
        {
            return Upgraded(b).serialize(s);
        }
        let mut map = s.serialize_map(None)?;
        if let Some((tag, t)) = self.tag.and_then(|tag| Some((tag, v.get(tag)?))) {
            map.serialize_entry(tag, &t)?;
        }
        for (f, value) in schema::written_fields(v, o) {
            map.serialize_entry(
                f.name.as_str(),
                &Shaped {
                    value,
                    shape: &f.shape,
                },
            )?;
        }
        if o.extra == Extra::Keep {
            for (name, value) in v.members() {
                if schema::kept_unlisted(name, o, self.tag) {
                    map.serialize_entry(&name, &value)?;
                }
            }
        }
        map.end()
    }
}

impl Serialize for Event<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = schema::event_fields(self.dialect(), self.event_type());
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", self.event_type().as_str())?;
        for f in fields {
            if let Some(value) = self.get(f.key) {
                map.serialize_entry(
                    f.key.as_str(),
                    &Shaped {
                        value,
                        shape: &f.shape,
                    },
                )?;
            }
        }
        if let (Dialect::V0, Some(object)) = (self.dialect(), self.object()) {
            for (name, value) in object.members() {
                if schema::passes_through(name, fields) {
                    map.serialize_entry(&name, &value)?;
                }
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use crate::input::json::Limits;
    use crate::{Dialect, decode};

    #[test]
    fn serializes_like_the_encoder() {
        let src = br#"{"type":"RUN_FINISHED","threadId":"t\u0031","runId":"r","x":1,
            "usage":[{"inputTokens":10,"junk":true}],"outcome":{"type":"success","extra":2}}"#;
        let ev = decode(src, Dialect::V1, Limits::new()).unwrap().unwrap();
        let mut buf = [0u8; 256];
        let n = serde_json_core::to_slice(&ev, &mut buf).unwrap();
        let mut enc = [0u8; 256];
        let m = crate::encode_to_slice(&ev, &mut enc).unwrap();
        assert_eq!(buf.get(..n), enc.get(..m));
        assert_eq!(
            buf.get(..n).unwrap(),
            br#"{"type":"RUN_FINISHED","threadId":"t1","runId":"r","outcome":{"type":"success"},"usage":[{"inputTokens":10}]}"#
        );
    }
}
