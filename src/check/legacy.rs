//! V1's translation of the legacy `THINKING_*` events into `REASONING_*`,
//! as `@ag-ui/client@1.0.0`'s compatibility boundary does it.
//!
//! THINKING_START opens a reasoning span and THINKING_TEXT_MESSAGE_START a
//! reasoning message, each under a freshly minted id that the matching
//! continuation and end events reuse (`title` is dropped). A continuation
//! with no opener before it gets a minted id of its own.

use crate::protocol::event_type::{EventType, Key};
use crate::protocol::roles::REASONING_ROLE;
use crate::store::StoredStr;
use crate::view::event::Event;
use crate::view::json::RawJson;

/// How minted ids are made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Minting {
    /// Unique within a thread: UUID-shaped, from a hash of the current
    /// run id and a counter.
    #[default]
    PerRun,
    /// The reference oracle's deterministic sequence
    /// `00000000-0000-4000-8000-000000000001`, `…002`, … (for comparing
    /// outputs byte for byte).
    Deterministic,
}

/// `"` + 36 characters + `"`.
const ID_LEN: usize = 38;

/// The translator's state: the open span's and message's ids.
///
/// ```
/// use agui_stream::legacy::{Minting, Translator};
/// use agui_stream::{decode, Dialect, EventType, json::Limits};
/// let mut t = Translator::new(Minting::Deterministic);
/// let start = decode(br#"{"type":"THINKING_START"}"#, Dialect::V1, Limits::new())
///     .unwrap()
///     .unwrap();
/// // V1 reads the legacy event as its reasoning counterpart, with a minted id.
/// let translated = t.translate(&start).unwrap();
/// assert_eq!(translated.event_type(), EventType::ReasoningStart);
/// assert!(translated.message_id().is_some());
/// ```
#[derive(Clone, Debug)]
pub struct Translator {
    minting: Minting,
    counter: u64,
    run_hash: u64,
    span: Option<StoredStr<ID_LEN>>,
    message: Option<StoredStr<ID_LEN>>,
    /// Scratch for an id minted for a continuation without an opener.
    orphan: StoredStr<ID_LEN>,
}

/// FNV-1a, enough to spread run ids over the minted ids' hex digits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl Translator {
    /// A translator with nothing open.
    pub const fn new(minting: Minting) -> Self {
        Translator {
            minting,
            counter: 0,
            run_hash: 0,
            span: None,
            message: None,
            orphan: StoredStr::EMPTY,
        }
    }

    fn mint(&mut self) -> StoredStr<ID_LEN> {
        self.counter = self.counter.wrapping_add(1);
        let mut text = [0u8; 36];
        let digits = |mut v: u64, radix: u64, out: &mut [u8]| {
            for b in out.iter_mut().rev() {
                let digit = v.checked_rem(radix).unwrap_or(0);
                *b = b"0123456789abcdef"
                    .get(digit as usize)
                    .copied()
                    .unwrap_or(b'0');
                v = v.checked_div(radix).unwrap_or(0);
            }
        };
        let hex = |v, out: &mut [u8]| digits(v, 16, out);
        let (a, rest) = text.split_at_mut(8);
        let (d1, rest) = rest.split_at_mut(1);
        let (b, rest) = rest.split_at_mut(4);
        let (d2, rest) = rest.split_at_mut(1);
        let (c, rest) = rest.split_at_mut(4);
        let (d3, rest) = rest.split_at_mut(1);
        let (d, rest) = rest.split_at_mut(4);
        let (d4, e) = rest.split_at_mut(1);
        for dash in [d1, d2, d3, d4] {
            dash.fill(b'-');
        }
        match self.minting {
            Minting::Deterministic => {
                a.fill(b'0');
                b.fill(b'0');
                c.copy_from_slice(b"4000");
                d.copy_from_slice(b"8000");
                // Decimal, as the reference pads it.
                digits(self.counter, 10, e);
            }
            Minting::PerRun => {
                let h = self.run_hash;
                hex(h >> 32, a);
                hex(h >> 16, b);
                hex(0x4000 | ((h >> 4) & 0x0FFF), c);
                hex(0x8000 | (h & 0x0FFF), d);
                hex(self.counter, e);
            }
        }
        let mut id = StoredStr::EMPTY;
        // 36 ASCII characters always fit.
        let _ = id.set_ascii(&text);
        id
    }

    /// Translates a THINKING_* event (`None` for any other type, which
    /// passes unchanged). The result borrows from `event` and from the
    /// translator.
    pub fn translate<'s, 'e: 's>(&'s mut self, event: &Event<'e>) -> Option<Event<'s>> {
        use EventType as T;
        let ty = event.event_type();
        if ty == T::RunStarted {
            self.run_hash = event.run_id().map_or(0, |r| fnv1a(r.raw()));
        }
        let (new_type, id): (EventType, &StoredStr<ID_LEN>) = match ty {
            T::ThinkingStart => {
                let id = self.mint();
                (T::ReasoningStart, self.span.insert(id))
            }
            T::ThinkingTextMessageStart => {
                let id = self.mint();
                (T::ReasoningMessageStart, self.message.insert(id))
            }
            // Content of the open message borrows its id; content without
            // one, and the ends (which close it), use `orphan`.
            T::ThinkingTextMessageContent if self.message.is_some() => {
                (T::ReasoningMessageContent, self.message.as_ref()?)
            }
            T::ThinkingTextMessageContent | T::ThinkingTextMessageEnd => {
                self.orphan = match self.message.take() {
                    Some(id) => id,
                    None => self.mint(),
                };
                let t = if ty == T::ThinkingTextMessageEnd {
                    T::ReasoningMessageEnd
                } else {
                    T::ReasoningMessageContent
                };
                (t, &self.orphan)
            }
            T::ThinkingEnd => {
                self.orphan = match self.span.take() {
                    Some(id) => id,
                    None => self.mint(),
                };
                (T::ReasoningEnd, &self.orphan)
            }
            _ => return None,
        };
        let mut out = Event::empty(new_type, event.dialect(), None);
        for key in [
            Key::Timestamp,
            Key::RawEvent,
            Key::Metadata,
            Key::SubagentRunId,
            Key::Delta,
        ] {
            out.set(key, event.get(key));
        }
        out.set(Key::MessageId, Some(id.json()));
        if new_type == T::ReasoningMessageStart {
            out.set(Key::Role, Some(RawJson::exact(REASONING_ROLE)));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::json::Limits;
    use crate::{Dialect, decode};

    fn ev(s: &str) -> Event<'_> {
        decode(s.as_bytes(), Dialect::V1, Limits::new())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn deterministic_sequence_matches_the_oracle() {
        let mut t = Translator::new(Minting::Deterministic);
        let start = t
            .translate(&ev(r#"{"type":"THINKING_START","title":"x"}"#))
            .unwrap();
        assert_eq!(start.event_type(), EventType::ReasoningStart);
        assert_eq!(
            start.message_id().unwrap().raw(),
            b"00000000-0000-4000-8000-000000000001"
        );
        let m = t
            .translate(&ev(r#"{"type":"THINKING_TEXT_MESSAGE_START"}"#))
            .unwrap();
        assert_eq!(m.role().unwrap().raw(), b"reasoning");
        assert!(
            m.message_id()
                .unwrap()
                .eq_str("00000000-0000-4000-8000-000000000002")
        );
        let c = t
            .translate(&ev(
                r#"{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"d"}"#,
            ))
            .unwrap();
        assert!(
            c.message_id()
                .unwrap()
                .eq_str("00000000-0000-4000-8000-000000000002")
        );
        assert!(c.delta().unwrap().eq_str("d"));
        let _ = t
            .translate(&ev(r#"{"type":"THINKING_TEXT_MESSAGE_END"}"#))
            .unwrap();
        // A continuation with no opener gets an id of its own, not kept.
        let orphan = t
            .translate(&ev(r#"{"type":"THINKING_TEXT_MESSAGE_END"}"#))
            .unwrap();
        assert!(
            orphan
                .message_id()
                .unwrap()
                .eq_str("00000000-0000-4000-8000-000000000003")
        );
        let end = t.translate(&ev(r#"{"type":"THINKING_END"}"#)).unwrap();
        assert!(
            end.message_id()
                .unwrap()
                .eq_str("00000000-0000-4000-8000-000000000001")
        );
    }

    #[test]
    fn continuations_without_an_opener_and_copied_members() {
        let mut t = Translator::new(Minting::Deterministic);
        let id = |t: &mut Translator, s: &str| {
            let out = t.translate(&ev(s)).unwrap();
            let mut text = [0u8; 36];
            text.copy_from_slice(out.message_id().unwrap().raw());
            (out.event_type(), text[35])
        };
        let content = r#"{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"d"}"#;
        // Each content without an open message mints an id, kept by none.
        assert_eq!(
            id(&mut t, content),
            (EventType::ReasoningMessageContent, b'1')
        );
        assert_eq!(
            id(&mut t, content),
            (EventType::ReasoningMessageContent, b'2')
        );
        let end = r#"{"type":"THINKING_END"}"#;
        assert_eq!(id(&mut t, end), (EventType::ReasoningEnd, b'3'));
        // With an opener, content and end share its id; then it is closed.
        let start = r#"{"type":"THINKING_TEXT_MESSAGE_START"}"#;
        assert_eq!(id(&mut t, start), (EventType::ReasoningMessageStart, b'4'));
        assert_eq!(
            id(&mut t, content),
            (EventType::ReasoningMessageContent, b'4')
        );
        let close = r#"{"type":"THINKING_TEXT_MESSAGE_END"}"#;
        assert_eq!(id(&mut t, close), (EventType::ReasoningMessageEnd, b'4'));
        assert_eq!(
            id(&mut t, content),
            (EventType::ReasoningMessageContent, b'5')
        );
        // The base members come along.
        let out = t
            .translate(&ev(r#"{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"d","timestamp":7,"metadata":{"k":1},"subagentRunId":"s"}"#))
            .unwrap();
        assert_eq!(out.timestamp(), Some(7.0));
        assert_eq!(out.metadata().unwrap().as_bytes(), br#"{"k":1}"#);
        assert!(out.subagent_run_id().unwrap().eq_str("s"));
        assert!(out.delta().unwrap().eq_str("d"));
    }

    #[test]
    fn per_run_ids_differ_between_runs() {
        let mut t = Translator::new(Minting::PerRun);
        assert!(
            t.translate(&ev(r#"{"type":"RUN_STARTED","threadId":"t","runId":"r1"}"#))
                .is_none()
        );
        let mut a = [0u8; 36];
        let id = t
            .translate(&ev(r#"{"type":"THINKING_START"}"#))
            .unwrap()
            .message_id()
            .unwrap();
        a.copy_from_slice(id.raw());
        assert!(
            t.translate(&ev(r#"{"type":"RUN_STARTED","threadId":"t","runId":"r2"}"#))
                .is_none()
        );
        let b = t
            .translate(&ev(r#"{"type":"THINKING_START"}"#))
            .unwrap()
            .message_id()
            .unwrap();
        assert_eq!(b.raw().len(), 36);
        assert_ne!(&a[..], b.raw());
        assert_eq!(b.raw().get(14), Some(&b'4'));
    }
}
