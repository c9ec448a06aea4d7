//! Guard rules on the text lanes ([`Rewriter::guard`](super::Rewriter::guard)):
//! each text message, reasoning message and V0 thinking message is one
//! lane of decoded text, across all its deltas (chunk forms after the
//! normalizer), through a [`Lane`] of its own. A content event goes out
//! with its delta replaced by what the lane lets out (a masked match, the
//! text held back before it), or not at all if that is nothing; what is
//! held back at the message's end goes out as one more content event just
//! before the end event. A blocking match ends the run: the text before
//! it goes out, then what is open is closed and `RUN_ERROR` with code
//! `AGUI_GUARDRAIL` names the rule (never the text).

use core::fmt;
use core::ops::ControlFlow;

use crate::check::guard::{Action, Blocked, DEFAULT_RULES, Lane, Piece, Rules};
use crate::check::spilled::StandIns;
use crate::output::encode::{Write, encode_replacing, write_decoded};
use crate::pipeline::FrameInfo;
use crate::protocol::event_type::{EventType, Key};
use crate::view::event::Event;
use crate::view::json::RawJson;
use crate::view::string::{JsonStr, encode_wtf8};

use super::forward::Forward;
use super::stats::count_in;

/// Text lanes guarded at once (one more ends the stream with
/// `AGUI_STREAM_CAPACITY`).
pub const GUARD_LANES: usize = 8;
/// The longest message id a guarded lane holds, decoded.
pub const GUARD_ID_BYTES: usize = 128;
/// The code of the `RUN_ERROR` that ends a run a rule blocked.
pub const GUARDRAIL_CODE: &str = "AGUI_GUARDRAIL";

/// What one rule did in a stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleCounts {
    /// Matches found.
    pub matched: u64,
    /// Matches masked.
    pub masked: u64,
    /// Matches that ended the run.
    pub blocked: u64,
}

/// A guarded lane: the content type it streams, its message id
/// (decoded), and its text held back.
#[derive(Clone, Debug)]
struct Slot {
    content: EventType,
    id: heapless::Vec<u8, GUARD_ID_BYTES>,
    lane: Lane,
}

/// The rules of a rewriter that guards text, its lanes, and what each
/// rule did: the caller's, lent with [`Rewriter::guard`](super::Rewriter::guard)
/// (about 4 KB), so that a rewriter without rules holds none.
#[derive(Clone, Debug)]
pub struct GuardLanes<'r> {
    rules: &'r Rules<'r>,
    slots: heapless::Vec<Slot, GUARD_LANES>,
    counts: [RuleCounts; DEFAULT_RULES],
}

impl<'r> GuardLanes<'r> {
    /// Lanes for `rules`: none open, nothing counted.
    pub const fn new(rules: &'r Rules<'r>) -> Self {
        GuardLanes {
            rules,
            slots: heapless::Vec::new(),
            counts: [RuleCounts {
                matched: 0,
                masked: 0,
                blocked: 0,
            }; DEFAULT_RULES],
        }
    }

    /// What each rule did, by its index.
    pub fn counts(&self) -> &[RuleCounts] {
        &self.counts
    }

    /// The text held back now, over all lanes, in bytes.
    pub fn held(&self) -> usize {
        self.slots.iter().map(|s| s.lane.held()).sum()
    }

    /// The rules.
    pub const fn rules(&self) -> &'r Rules<'r> {
        self.rules
    }

    /// Starts over, for another stream.
    pub fn clear(&mut self) {
        *self = GuardLanes::new(self.rules);
    }
}

/// Counts a match of rule `rule`.
fn count(counts: &mut [RuleCounts], rule: usize, action: Action) {
    if let Some(c) = counts.get_mut(rule) {
        c.matched = c.matched.saturating_add(1);
        match action {
            Action::Mask => c.masked = c.masked.saturating_add(1),
            Action::Block => c.blocked = c.blocked.saturating_add(1),
            Action::Monitor => {}
        }
    }
}

/// The lanes (and rules) a rewriter was lent.
#[derive(Debug)]
pub(super) struct Lent<'b>(pub(super) Option<&'b mut GuardLanes<'b>>);

impl Lent<'_> {
    /// The rules and the lanes, for one chunk.
    pub(super) fn reborrow(&mut self) -> Guard<'_> {
        Guard(self.0.as_deref_mut().map(|g| {
            let rules: &Rules<'_> = g.rules;
            (rules, &mut g.slots, &mut g.counts)
        }))
    }

    pub(super) const fn is_off(&self) -> bool {
        self.0.is_none()
    }

    /// The most bytes of JSON text a byte of text can become (1 without
    /// rules).
    pub(super) const fn expansion(&self) -> usize {
        match &self.0 {
            Some(g) => g.rules.expansion(),
            None => 1,
        }
    }
}

type Slots = heapless::Vec<Slot, GUARD_LANES>;

/// The rules, lanes and counts, while a chunk runs.
pub(super) struct Guard<'a>(
    Option<(
        &'a Rules<'a>,
        &'a mut Slots,
        &'a mut [RuleCounts; DEFAULT_RULES],
    )>,
);

impl Guard<'_> {
    #[inline(always)]
    pub(super) const fn is_off(&self) -> bool {
        self.0.is_none()
    }
}

/// The slot of lane `content`/`id` in `slots`, opened if need be; `None`
/// if no slot is left.
fn slot(slots: &mut Slots, content: EventType, id: &[u8]) -> Option<usize> {
    let found = slots
        .iter()
        .position(|s| s.content == content && s.id == id);
    if found.is_some() {
        return found;
    }
    let slot = Slot {
        content,
        id: heapless::Vec::from_slice(id).ok()?,
        lane: Lane::new(),
    };
    slots.push(slot).ok()?;
    Some(slots.len().saturating_sub(1))
}

/// Where an event stands in a guarded lane.
enum Role {
    Content,
    End,
}

/// The lane `ty` is part of (its content type), and its role there.
fn lane_of(ty: EventType) -> Option<(EventType, Role)> {
    use EventType as T;
    Some(match ty {
        T::TextMessageContent => (T::TextMessageContent, Role::Content),
        T::TextMessageEnd => (T::TextMessageContent, Role::End),
        T::ReasoningMessageContent => (T::ReasoningMessageContent, Role::Content),
        T::ReasoningMessageEnd => (T::ReasoningMessageContent, Role::End),
        T::ThinkingTextMessageContent => (T::ThinkingTextMessageContent, Role::Content),
        T::ThinkingTextMessageEnd => (T::ThinkingTextMessageContent, Role::End),
        _ => return None,
    })
}

/// Whether the guard looks at events of type `ty` (the others take the
/// rewriter's fast path).
#[inline(always)]
pub(super) fn guarded_type(ty: EventType) -> bool {
    lane_of(ty).is_some()
}

/// The message of the `RUN_ERROR` of a block.
struct BlockedBy<'r>(&'r str);

impl fmt::Display for BlockedBy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the guard rule \"{}\" blocked the run", self.0)
    }
}

/// Feeds a delta's decoded text to `lane`.
fn feed<const N: usize>(
    lane: &mut Lane,
    rules: &Rules<'_, N>,
    delta: JsonStr<'_>,
    out: &mut impl FnMut(Piece<'_>),
) -> Result<(), Blocked> {
    if delta.is_plain() {
        return lane.push(rules, delta.raw(), out);
    }
    let mut buf = [0u8; 256];
    let mut len = 0usize;
    for c in delta.code_points() {
        let mut one = [0u8; 4];
        let bytes = encode_wtf8(c, &mut one);
        if len.saturating_add(bytes.len()) > buf.len() {
            lane.push(rules, buf.get(..len).unwrap_or_default(), out)?;
            len = 0;
        }
        let end = len.saturating_add(bytes.len());
        if let Some(dst) = buf.get_mut(len..end) {
            dst.copy_from_slice(bytes);
        }
        len = end;
    }
    lane.push(rules, buf.get(..len).unwrap_or_default(), out)
}

impl<W: Write + ?Sized> Forward<'_, W> {
    /// What the guard does with `event`: `None` where it writes it as
    /// usual. Out of line: its frames (the event kept back) are on the
    /// stack only when the guard runs.
    #[inline(never)]
    pub(super) fn guarded(
        &mut self,
        event: &Event<'_>,
        frame: &FrameInfo,
    ) -> Option<ControlFlow<()>> {
        let (content, role) = lane_of(event.event_type())?;
        if self.guard.is_off() {
            return None;
        }
        let mut id = [0u8; GUARD_ID_BYTES];
        let id = match event.str(Key::MessageId) {
            None => &[][..],
            Some(s) => match s.unescape_into(&mut id) {
                Ok(text) => text.as_bytes(),
                Err(_) => {
                    let message = "a message id longer than the guard holds";
                    return Some(self.guard_stop("AGUI_STREAM_CAPACITY", &message));
                }
            },
        };
        match role {
            Role::Content => self.guarded_content(event, frame, content, id),
            Role::End => self.guarded_end(event, content, id),
        }
    }

    /// Counts an event the guard wrote.
    fn wrote(&mut self, ty: EventType) {
        count_in(&mut self.stats.events_out, ty.index());
        self.stats.encoded = self.stats.encoded.saturating_add(1);
    }

    fn guard_stop(&mut self, code: &'static str, message: &dyn fmt::Display) -> ControlFlow<()> {
        if self.frame.streamed {
            self.end_streamed();
        }
        self.stop.set_code(code, message);
        ControlFlow::Break(())
    }

    fn guarded_content(
        &mut self,
        event: &Event<'_>,
        frame: &FrameInfo,
        content: EventType,
        id: &[u8],
    ) -> Option<ControlFlow<()>> {
        let delta = event.str(Key::Delta)?;
        if self.frame.streamed || frame.stand_ins != StandIns::default() {
            // Its bytes went ahead, or its delta is a stand-in.
            let message = "a text delta larger than the buffers cannot be guarded";
            return Some(self.guard_stop("AGUI_STREAM_CAPACITY", &message));
        }
        let (rules, slots, counts) = self.guard.0.as_mut()?;
        let rules: &Rules<'_> = rules;
        let Some(index) = slot(slots, content, id) else {
            let message = "more text lanes open at once than the guard holds";
            return Some(self.guard_stop("AGUI_STREAM_CAPACITY", &message));
        };
        let slot = slots.get_mut(index)?;
        let lane = &mut slot.lane;
        let held_before = lane.held();
        let (mut text, mut matched, mut blocked) = (0usize, false, None);
        // Written as it goes, but kept back while it may be dropped: an
        // event whose text is all held back, or as it came.
        let mut out = self.emit.lazy();
        let written = out
            .write_bytes(b"data: ")
            .and_then(|()| {
                encode_replacing(event, Key::Delta, &mut out, |out| {
                    out.write_bytes(b"\"")?;
                    let mut result = Ok(());
                    let fed = feed(lane, rules, delta, &mut |p| match p {
                        Piece::Text(t) => {
                            text = text.saturating_add(t.len());
                            if result.is_ok() {
                                result = write_decoded(t, out);
                            }
                        }
                        Piece::Matched { rule, action } => {
                            matched = true;
                            count(counts.as_mut_slice(), rule, action);
                        }
                    });
                    blocked = fed.err();
                    result?;
                    out.write_bytes(b"\"")
                })
            })
            .and_then(|()| out.write_bytes(b"\n\n"));
        let changed = held_before > 0 || matched || lane.held() > 0 || blocked.is_some();
        let write = out.committed() || (changed && text > 0);
        if write {
            out.commit();
        }
        if written.is_err() {
            self.emit.failed = true;
        }
        if let Some(Blocked { rule }) = blocked {
            if write {
                self.wrote(event.event_type());
            }
            let name = rules.rules().get(rule).map_or("", |r| r.name);
            return Some(self.guard_stop(GUARDRAIL_CODE, &BlockedBy(name)));
        }
        if !write && !changed {
            // The text goes out as it came: the event as usual.
            return None;
        }
        if write {
            self.wrote(event.event_type());
        }
        Some(ControlFlow::Continue(()))
    }

    fn guarded_end(
        &mut self,
        event: &Event<'_>,
        content: EventType,
        id: &[u8],
    ) -> Option<ControlFlow<()>> {
        let (rules, slots, counts) = self.guard.0.as_mut()?;
        let rules: &Rules<'_> = rules;
        let index = slots
            .iter()
            .position(|s| s.content == content && s.id == id)?;
        let mut slot = slots.swap_remove(index);
        // The text held back, as one more content event (none if it
        // comes to nothing).
        let mut last = Event::empty(content, event.dialect(), None);
        last.set(Key::MessageId, event.get(Key::MessageId));
        last.set(Key::Delta, Some(RawJson::trusted(b"\"\"")));
        let (mut text, mut blocked) = (0usize, None);
        let mut out = self.emit.lazy();
        let written = out
            .write_bytes(b"data: ")
            .and_then(|()| {
                encode_replacing(&last, Key::Delta, &mut out, |out| {
                    out.write_bytes(b"\"")?;
                    let mut result = Ok(());
                    let fed = slot.lane.finish(rules, &mut |p| match p {
                        Piece::Text(t) => {
                            text = text.saturating_add(t.len());
                            if result.is_ok() {
                                result = write_decoded(t, out);
                            }
                        }
                        Piece::Matched { rule, action } => {
                            count(counts.as_mut_slice(), rule, action)
                        }
                    });
                    blocked = fed.err();
                    result?;
                    out.write_bytes(b"\"")
                })
            })
            .and_then(|()| out.write_bytes(b"\n\n"));
        let write = out.committed() || text > 0;
        if write {
            out.commit();
        }
        if written.is_err() {
            self.emit.failed = true;
        }
        if write {
            self.wrote(content);
        }
        if let Some(Blocked { rule }) = blocked {
            // The end event still goes out, as the text before the match
            // did (the verifier has closed its message); then the run ends.
            let name = rules.rules().get(rule).map_or("", |r| r.name);
            self.emit.encoded(event);
            self.wrote(event.event_type());
            return Some(self.guard_stop(GUARDRAIL_CODE, &BlockedBy(name)));
        }
        None
    }
}
