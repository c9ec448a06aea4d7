//! `serde::Serialize` for the views (feature `serde`).
//!
//! An [`Event`] serializes through the same [`walk`] as [`crate::encode`],
//! so to the same members. A [`RawJson`] is serialized through serde's
//! nested serializers, so it recurses once per JSON nesting level — bounded
//! by the [`Limits::max_depth`](crate::json::Limits::max_depth) it was
//! validated with. Numbers that are integer literals within `i64`/`u64`
//! serialize as integers, others as `f64`; strings serialize decoded (a lone
//! surrogate as U+FFFD).

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::walk::{self, Name, Node};
use crate::view::event::Event;
use crate::view::json::{JsonKind, RawJson};

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

impl Serialize for Name<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Name::Key(key) => s.serialize_str(key.as_str()),
            Name::Known(name) => s.serialize_str(name),
            Name::Json(name) => name.serialize(s),
        }
    }
}

/// A node of the walk, written through serde.
impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Raw(v) => v.serialize(s),
            Node::Known(text) => s.serialize_str(text),
            Node::Object(o) => {
                let mut map = s.serialize_map(o.len())?;
                o.members(|name, value| map.serialize_entry(&name, &value))?;
                map.end()
            }
            &Node::Array(array, item) => {
                let mut seq = s.serialize_seq(None)?;
                walk::elements(array, item, |e| seq.serialize_element(&e))?;
                seq.end()
            }
        }
    }
}

impl Serialize for Event<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", self.event_type().as_str())?;
        walk::event(self, |name, value| map.serialize_entry(&name, &value))?;
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

    #[test]
    fn upgrades_dicts_and_passthrough_serialize_like_the_encoder() {
        let v1 = br#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[
            {"type":"binary","mimeType":"image/png","data":"aGk=","filename":"a.png"},
            {"type":"binary","mimeType":"text/plain","url":"u"},
            {"type":"document","source":{"type":"url","value":"u","mimeType":"text/plain"}}]}]}"#;
        let v0 = br#"{"type":"CUSTOM","name":"n","value":1,"x\u0031":2,"__proto__":3,
            "metadata":{"__proto__":1,"k":{"__proto__":2}}}"#;
        for (src, dialect) in [(&v1[..], Dialect::V1), (&v0[..], Dialect::V0)] {
            let ev = decode(src, dialect, Limits::new()).unwrap().unwrap();
            let (mut ser, mut enc) = ([0u8; 512], [0u8; 512]);
            let n = serde_json_core::to_slice(&ev, &mut ser).unwrap();
            let m = crate::encode_to_slice(&ev, &mut enc).unwrap();
            assert_eq!(ser.get(..n), enc.get(..m));
        }
    }
}
