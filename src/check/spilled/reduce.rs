//! A stand-in for a payload that outgrew the frame buffer, written into the
//! buffer as the payload streams past: the payload without whitespace
//! outside strings, and with the values of *opaque* root members (the ones
//! no rule reads: `delta`, `content`, `snapshot`, …) that did not fit
//! replaced by empty values of the same kind (`""`, `{}`, `[]`). The
//! stand-in then goes through the stages like any frame; where a stand-in
//! could change a verdict (a member whose shape looks inside the value),
//! the pipeline reports the buffer's capacity instead
//! ([`allowed`]).
//!
//! It reads JSON only as far as it needs to (strings, nesting, root
//! members): the syntax is checked beside it, and a stand-in is used only
//! for well-formed JSON.

use core::fmt;

use super::elements::{self, Element, FILTER, MIN_BUFFER};
use crate::check::schema::{self, Dialect, Shape};
use crate::event_type::{EventType, Key};
use crate::input::json::{JsonKind, RawJson};

/// The root members of a spilled frame whose values are stand-ins: the
/// event's views show them as empty values of the same kind (see
/// [`FrameInfo::stand_ins`](crate::FrameInfo::stand_ins)). An array read
/// element by element (`messages`, a JSON Patch's `delta` or `patch`) shows
/// empty, each element checked as it passed; a run's `input` shows its
/// `messages` empty.
///
/// ```
/// use agui_stream::{Config, Event, FrameInfo, Key, Pipeline};
/// let delta = "x".repeat(10_000);
/// let stream = format!(
///     "data: {{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}}\n\n\
///      data: {{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}}\n\n\
///      data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"{delta}\"}}\n\n"
/// );
/// let mut buf = [0u8; 256]; // far smaller than the last frame
/// let mut pipeline = Pipeline::new(&mut buf, Config::new());
/// let mut last = None;
/// let mut sink = |ev: &Event<'_>, f: &FrameInfo| last = Some((ev.delta().map(|d| d.raw().len()), *f));
/// for piece in stream.as_bytes().chunks(1460) {
///     pipeline.push(piece, &mut sink).unwrap();
/// }
/// let (delta_len, frame) = last.unwrap();
/// assert!(frame.spilled && frame.stand_ins.contains(Key::Delta));
/// assert_eq!(delta_len, Some(0)); // the delta's 10,000 bytes are in the stream, at frame.start..frame.end
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StandIns(u64);

/// The bit of members whose name is no [`Key`] (V1 strips them; V0 passes
/// them through).
const UNLISTED: u8 = 63;
/// The bit of a root value that is not an object (a schema error whatever
/// it holds).
const ROOT: u8 = 62;
/// A name with escapes (never cut).
const ESCAPED: u8 = 61;
/// No member.
const NONE: u8 = u8::MAX;
const _: () = assert!(crate::event_type::Key::COUNT < ESCAPED as usize);

/// Members no stage reads the content of (only their kind, which a
/// stand-in keeps). `delta` of a tool call is read when its arguments are
/// checked ([`allowed`]).
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

impl StandIns {
    /// No member was replaced: the event's views are the whole event.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// `key`'s value is a stand-in.
    pub const fn contains(self, key: Key) -> bool {
        self.has(key as u8)
    }

    /// The value of a member whose name is no [`Key`] (an unknown member,
    /// which V0 passes through) is a stand-in. One bit holds them all: with
    /// several such members, each is its value or a stand-in.
    pub const fn unlisted(self) -> bool {
        self.has(UNLISTED)
    }

    /// The member called `name` is a stand-in (by its [`Key`]), or may be
    /// one (an unlisted member, see [`unlisted`](Self::unlisted)).
    pub fn covers(self, name: &str) -> bool {
        match Key::from_bytes(name.as_bytes()) {
            Some(k) => self.contains(k),
            None => self.unlisted(),
        }
    }

    /// The keys whose values are stand-ins.
    pub fn keys(self) -> impl Iterator<Item = Key> {
        Key::ALL.iter().copied().filter(move |&k| self.contains(k))
    }

    /// The bits of the members that may be cut.
    const fn opaque() -> u64 {
        let mut mask = (1u64 << UNLISTED) | (1u64 << ROOT);
        let mut rest = OPAQUE;
        while let [key, tail @ ..] = rest {
            mask |= 1u64 << (*key as u8);
            rest = tail;
        }
        mask
    }

    const fn has(self, bit: u8) -> bool {
        bit < 64 && self.0 & (1u64 << bit) != 0
    }

    fn add(&mut self, bit: u8) {
        if bit < 64 {
            self.0 |= 1u64 << bit;
        }
    }
}

impl fmt::Debug for StandIns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_set();
        list.entries(self.keys());
        if self.unlisted() {
            list.entry(&"(unlisted)");
        }
        list.finish()
    }
}

/// Whether the stand-ins of `payload` (a stand-in the reducer wrote) leave
/// its verdict the reference's: each replaced member's shape looks only at
/// the kind of its value, and no rule reads it.
/// `checked` is the member read element by element, if any.
pub(crate) fn allowed(
    stand_ins: StandIns,
    checked: Option<Key>,
    payload: &[u8],
    dialect: Dialect,
    check_tool_args: bool,
) -> bool {
    if stand_ins.is_empty() || stand_ins.has(ROOT) {
        return true;
    }
    let Some(ty) = RawJson::trusted(payload)
        .get("type")
        .and_then(|t| t.as_str())
        .and_then(|t| t.as_str())
        .and_then(|t| EventType::from_bytes(t.as_bytes()))
    else {
        // No (known) type: the verdict is about the type alone.
        return true;
    };
    let args = matches!(ty, EventType::ToolCallArgs | EventType::ToolCallChunk);
    let fields = schema::event_fields(dialect, ty);
    stand_ins.keys().all(|key| {
        if key == Key::Delta && args && check_tool_args {
            return false;
        }
        if checked == Some(key) && elements::element_key(ty) == checked {
            // Its elements were checked one by one.
            return true;
        }
        let string = || {
            RawJson::trusted(payload)
                .get(key.as_str())
                .is_some_and(|v| v.kind() == JsonKind::String)
        };
        fields
            .iter()
            .filter(|f| f.key == key)
            .all(|f| match f.shape {
                Shape::Any
                | Shape::NonNull
                | Shape::Str
                | Shape::Record
                | Shape::Array(Shape::Any) => true,
                // A string passes whatever it holds; anything else is looked into.
                Shape::StrOr(_) => string(),
                _ => false,
            })
    })
}

/// Where the reducer is in the payload's structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the root value.
    Root,
    /// In the root object, before a member's name (or in it).
    Key,
    /// After a name, before its colon.
    Colon,
    /// After a colon, before the value.
    BeforeValue,
    /// In a root member's value.
    Value,
    /// In a root value that is not an object.
    RootValue,
    /// After a member's value.
    After,
    /// After the root value.
    Done,
}

/// Flag bits.
const IN_STRING: u8 = 1;
const ESCAPE: u8 = 2;
/// The current value was replaced: its bytes are not written.
const SKIPPING: u8 = 4;
/// Something a rule needs did not fit.
const FAILED: u8 = 8;
/// An array is read element by element ([`elements`]): the buffer's last
/// [`FILTER`] bytes hold the records of the elements let go.
const ELEMENTS: u8 = 16;
/// An element failed its check: the stand-in keeps it and drops the rest
/// of its array.
const FAULTED: u8 = 32;
/// The elements let go made records the parent owns / a subagent owns.
const PARENT: u8 = 64;
const SUBAGENT: u8 = 128;

/// Where the reducer is inside a run's `input` (its `messages` are read
/// element by element too).
const INNER_NONE: u8 = 0;
/// Before a member's name, or in it.
const INNER_NAME: u8 = 1;
/// After another member's name.
const INNER_AFTER: u8 = 2;
/// After the name `messages`.
const INNER_MESSAGES: u8 = 3;
/// In the `messages` array.
const INNER_ARRAY: u8 = 4;

/// A finished stand-in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reduced {
    pub(crate) len: usize,
    pub(crate) stand_ins: StandIns,
    /// The member read element by element, if one was.
    pub(crate) checked: Option<Key>,
    /// The elements let go made records the parent owns / a subagent owns.
    pub(crate) parent: bool,
    pub(crate) subagents: bool,
}

/// Writes a spilling payload's stand-in into the frame buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reducer {
    /// Bytes of stand-in written.
    out: u32,
    /// Where the current member's name (phase `Key`) or value (`Value`)
    /// starts in the stand-in.
    mark: u32,
    /// The largest closed value that may be replaced (start, end; equal
    /// for none), and its member's bit.
    best: (u32, u32),
    best_bit: u8,
    /// The bit of the current member: its [`Key`], `UNLISTED`, `ROOT` or
    /// `ESCAPED`.
    bit: u8,
    /// The first byte of the current value.
    kind: u8,
    depth: u16,
    flags: u8,
    /// The buffer's last [`FILTER`] bytes hold the syntax check's levels
    /// past 64.
    deep: bool,
    phase: Phase,
    /// The event's type as far as read (an unescaped `type` member's).
    ty: Option<EventType>,
    /// The bit of the member whose array may be read element by element
    /// (`NONE` if the current one may not).
    checked: u8,
    /// Inside `input`: where (`INNER_*`), and where the current name or
    /// the `messages` array starts.
    inner: u8,
    inner_mark: u32,
    dialect: Dialect,
    stand_ins: StandIns,
}

impl Reducer {
    pub(crate) const fn new(dialect: Dialect) -> Self {
        Reducer {
            out: 0,
            mark: 0,
            best: (0, 0),
            best_bit: NONE,
            bit: NONE,
            kind: 0,
            depth: 0,
            flags: 0,
            deep: false,
            phase: Phase::Root,
            ty: None,
            checked: NONE,
            inner: INNER_NONE,
            inner_mark: 0,
            dialect,
            stand_ins: StandIns(0),
        }
    }

    pub(crate) const fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The syntax check keeps its levels past 64 in the buffer's last bytes.
    pub(crate) const fn deep(&self) -> bool {
        self.deep
    }

    /// Gives the last [`FILTER`] bytes of a `len`-byte buffer to the syntax
    /// check, if no array is read element by element and the stand-in has
    /// not reached them.
    pub(crate) fn claim_deep(&mut self, len: usize) -> bool {
        let free = self.flags & ELEMENTS == 0
            && !self.in_elements()
            && len >= MIN_BUFFER
            && (self.out as usize) <= len.saturating_sub(2).saturating_sub(FILTER);
        self.deep |= free;
        free
    }

    /// Reads the first `held` bytes of the payload, which are `buf`'s own
    /// (rewritten in place: the stand-in never gets more than one byte
    /// ahead of what has been read, and the next byte is read first).
    pub(crate) fn feed_held(&mut self, buf: &mut [u8], held: usize) {
        let mut next = buf.first().copied().filter(|_| held > 0);
        let mut i = 0usize;
        while let Some(b) = next {
            i = i.saturating_add(1);
            next = buf.get(i).copied().filter(|_| i < held);
            self.byte(b, buf);
        }
    }

    /// Reads the payload's next bytes.
    pub(crate) fn feed(&mut self, bytes: &[u8], buf: &mut [u8]) {
        let mut i = 0usize;
        while let Some(&b) = bytes.get(i) {
            if self.flags & FAILED != 0 {
                return;
            }
            if self.flags & (IN_STRING | ESCAPE) == IN_STRING {
                // A run of string bytes that change nothing but the output.
                let rest = bytes.get(i..).unwrap_or_default();
                let n = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
                if n > 0 {
                    self.plain(rest.get(..n).unwrap_or_default(), buf);
                    i = i.saturating_add(n);
                    continue;
                }
            }
            self.byte(b, buf);
            i = i.saturating_add(1);
        }
    }

    /// String bytes other than a quote or backslash.
    fn plain(&mut self, run: &[u8], buf: &mut [u8]) {
        crate::work::add(run.len());
        if self.flags & SKIPPING != 0 {
            return;
        }
        let out = self.out as usize;
        if let Some(end) = out.checked_add(run.len())
            && end <= self.room(buf.len())
            && let Some(dst) = buf.get_mut(out..end)
        {
            dst.copy_from_slice(run);
            self.out = u32::try_from(end).unwrap_or(u32::MAX);
            return;
        }
        for &b in run {
            if self.flags & (SKIPPING | FAILED) != 0 {
                return;
            }
            self.emit(b, buf);
        }
    }

    /// The stand-in, or `None` if something a rule needs did not fit.
    pub(crate) fn finish(&self) -> Option<Reduced> {
        let checked = Key::ALL
            .iter()
            .copied()
            .find(|&k| k as u8 == self.checked)
            .filter(|_| self.flags & ELEMENTS != 0);
        (self.flags & FAILED == 0).then_some(Reduced {
            len: self.out as usize,
            stand_ins: self.stand_ins,
            checked,
            parent: self.flags & PARENT != 0,
            subagents: self.flags & SUBAGENT != 0,
        })
    }

    fn byte(&mut self, b: u8, buf: &mut [u8]) {
        crate::work::add(1);
        if self.flags & IN_STRING != 0 {
            if self.flags & ESCAPE != 0 {
                self.flags &= !ESCAPE;
            } else if b == b'\\' {
                self.flags |= ESCAPE;
            } else if b == b'"' {
                self.flags &= !IN_STRING;
            }
            self.emit(b, buf);
            if self.flags & IN_STRING == 0 {
                self.string_closed(buf);
            }
            return;
        }
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'"' => {
                match self.phase {
                    Phase::Key if self.depth == 1 => self.mark = self.out,
                    Phase::Root | Phase::BeforeValue => self.start_value(b),
                    Phase::Value if self.depth == 2 => self.inner_value(b),
                    _ => {}
                }
                self.flags |= IN_STRING;
                self.emit(b, buf);
            }
            b'{' if self.phase == Phase::Root => {
                self.depth = 1;
                self.phase = Phase::Key;
                self.emit(b, buf);
            }
            b'{' | b'[' => {
                if matches!(self.phase, Phase::Root | Phase::BeforeValue) {
                    self.start_value(b);
                } else if self.phase == Phase::Value && self.depth == 2 {
                    self.inner_value(b);
                }
                self.depth = self.depth.saturating_add(1);
                self.emit(b, buf);
            }
            b',' if self.depth == self.element_depth() && self.reading_elements() => {
                self.element_closed(buf);
            }
            b',' if self.depth == 2 && self.inner != INNER_NONE => {
                self.inner = INNER_NAME;
                self.emit(b, buf);
            }
            b'}' | b']' => {
                if b == b']' && self.depth == self.element_depth() && self.reading_elements() {
                    self.element_closed(buf);
                    self.flags &= !(FAULTED | SKIPPING);
                }
                if self.depth == 3 && self.inner == INNER_ARRAY {
                    self.inner = INNER_AFTER;
                }
                self.depth = self.depth.saturating_sub(1);
                self.emit(b, buf);
                match (self.depth, self.phase) {
                    (0, Phase::RootValue) | (1, Phase::Value) => self.value_closed(),
                    (0, _) => self.phase = Phase::Done,
                    _ => {}
                }
            }
            b':' if self.depth == 1 && self.phase == Phase::Colon => {
                self.phase = Phase::BeforeValue;
                self.emit(b, buf);
            }
            b',' if self.depth == 1 && self.phase != Phase::RootValue => {
                if self.phase == Phase::Value {
                    // A number or literal ends.
                    self.value_closed();
                }
                self.phase = Phase::Key;
                self.emit(b, buf);
            }
            _ => {
                if matches!(self.phase, Phase::Root | Phase::BeforeValue) {
                    self.start_value(b);
                } else if self.phase == Phase::Value && self.depth == 2 {
                    self.inner_value(b);
                }
                self.emit(b, buf);
            }
        }
    }

    /// A name or value starts inside `input` (not yet written).
    fn inner_value(&mut self, b: u8) {
        match self.inner {
            INNER_NAME if b == b'"' => self.inner_mark = self.out,
            INNER_MESSAGES if b == b'[' => {
                self.inner = INNER_ARRAY;
                self.inner_mark = self.out;
            }
            INNER_MESSAGES if b != b':' => self.inner = INNER_AFTER,
            _ => {}
        }
    }

    /// The depth of the elements of the array read element by element.
    fn element_depth(&self) -> u16 {
        if self.inner == INNER_ARRAY { 3 } else { 2 }
    }

    /// Where the elements of the array read element by element start.
    fn array_start(&self) -> usize {
        let bracket = if self.inner == INNER_ARRAY {
            self.inner_mark
        } else {
            self.mark
        };
        (bracket as usize).saturating_add(1)
    }

    fn start_value(&mut self, b: u8) {
        self.phase = if self.phase == Phase::Root {
            self.bit = ROOT;
            Phase::RootValue
        } else {
            Phase::Value
        };
        self.mark = self.out;
        self.kind = b;
        self.inner = INNER_NONE;
        if matches!(b, b'[' | b'{') && self.phase == Phase::Value {
            if self.flags & ELEMENTS == 0 {
                let item = self.ty.and_then(|ty| {
                    let key = Key::ALL.get(usize::from(self.bit)).copied()?;
                    elements::item(self.dialect, ty, key)
                });
                self.checked = if item.is_some() { self.bit } else { NONE };
            }
            if b == b'{' && self.bit == self.checked {
                self.inner = INNER_NAME;
            }
        }
    }

    fn string_closed(&mut self, buf: &[u8]) {
        let text = |r: &Self| {
            buf.get((r.mark as usize).saturating_add(1)..r.out.saturating_sub(1) as usize)
                .unwrap_or_default()
        };
        match self.phase {
            Phase::Key if self.depth == 1 => {
                let name = text(self);
                self.bit = if name.contains(&b'\\') {
                    ESCAPED
                } else {
                    Key::from_bytes(name).map_or(UNLISTED, |k| k as u8)
                };
                self.phase = Phase::Colon;
            }
            Phase::Value if self.depth == 1 && self.kind == b'"' => {
                if self.bit == Key::Type as u8 && self.flags & SKIPPING == 0 {
                    self.ty = EventType::from_bytes(text(self));
                }
                self.value_closed();
            }
            Phase::Value if self.depth == 2 && self.inner == INNER_NAME => {
                let at = (self.inner_mark as usize).saturating_add(1);
                let name = buf.get(at..self.out.saturating_sub(1) as usize);
                self.inner = if name == Some(b"messages") {
                    INNER_MESSAGES
                } else {
                    INNER_AFTER
                };
            }
            Phase::RootValue if self.depth == 0 && self.kind == b'"' => self.value_closed(),
            _ => {}
        }
    }

    fn value_closed(&mut self) {
        self.inner = INNER_NONE;
        self.phase = match self.phase {
            Phase::RootValue => Phase::Done,
            _ => Phase::After,
        };
        if self.flags & SKIPPING != 0 {
            self.flags &= !SKIPPING;
            return;
        }
        let len = self.out.saturating_sub(self.mark);
        if self.cuttable() && len > 2 && len > self.best.1.saturating_sub(self.best.0) {
            self.best = (self.mark, self.out);
            self.best_bit = self.bit;
        }
    }

    /// The current value may be replaced.
    fn cuttable(&self) -> bool {
        self.bit < 64
            && StandIns::opaque() & (1u64 << self.bit) != 0
            && matches!(self.kind, b'"' | b'{' | b'[')
            && !(self.flags & ELEMENTS != 0 && self.bit == self.checked)
    }

    /// In an array whose elements may be checked one by one.
    fn in_elements(&self) -> bool {
        self.phase == Phase::Value
            && self.checked != NONE
            && self.bit == self.checked
            && match self.kind {
                b'[' => self.out > self.mark,
                b'{' => self.inner == INNER_ARRAY && self.out > self.inner_mark,
                _ => false,
            }
    }

    /// In an array whose elements are checked one by one as they close.
    fn reading_elements(&self) -> bool {
        self.flags & ELEMENTS != 0 && self.in_elements()
    }

    /// Where the stand-in must end: two bytes are kept free for an empty
    /// value, and the last [`FILTER`] bytes for an array read element by
    /// element.
    fn room(&self, len: usize) -> usize {
        let filter = if self.deep || self.flags & ELEMENTS != 0 || self.in_elements() {
            FILTER
        } else {
            0
        };
        len.saturating_sub(2).saturating_sub(filter)
    }

    /// Writes `b`, keeping room for a stand-in; where it does not fit,
    /// replaces the longer of the current value and the longest closed one
    /// that may be replaced, or starts reading an array element by element.
    fn emit(&mut self, b: u8, buf: &mut [u8]) {
        if self.flags & (SKIPPING | FAILED) != 0 {
            return;
        }
        let out = self.out as usize;
        if out < self.room(buf.len())
            && let Some(slot) = buf.get_mut(out)
        {
            *slot = b;
            self.out = self.out.saturating_add(1);
            return;
        }
        let current = self.out.saturating_sub(self.mark);
        let best = self.best.1.saturating_sub(self.best.0);
        let open = matches!(self.phase, Phase::Value | Phase::RootValue) && self.cuttable();
        if self.in_elements() {
            if best > 0 {
                self.cut_best(b, buf);
            } else if self.flags & ELEMENTS == 0 && self.start_elements(buf) {
                self.emit(b, buf);
            } else {
                self.flags |= FAILED;
            }
        } else if open && current >= best {
            // The current value: `b` is part of it.
            self.out = self.mark;
            self.write_empty(self.kind, buf);
            self.stand_ins.add(self.bit);
            self.flags |= SKIPPING;
        } else if best > 0 {
            self.cut_best(b, buf);
        } else {
            self.flags |= FAILED;
        }
    }

    /// Replaces the longest closed value that may be replaced, then writes `b`.
    fn cut_best(&mut self, b: u8, buf: &mut [u8]) {
        let (start, end) = self.best;
        let best = end.saturating_sub(start);
        let kind = buf.get(start as usize).copied().unwrap_or(b'"');
        let tail = (end as usize)..(self.out as usize);
        let to = (start as usize).saturating_add(2);
        if tail.end > buf.len() || to > tail.start {
            self.flags |= FAILED;
            return;
        }
        let moved = tail.len();
        buf.copy_within(tail, to);
        self.out = start;
        self.write_empty(kind, buf);
        self.out = u32::try_from(to.saturating_add(moved)).unwrap_or(u32::MAX);
        self.mark = self.mark.saturating_sub(best.saturating_sub(2));
        if self.inner != INNER_NONE {
            self.inner_mark = self.inner_mark.saturating_sub(best.saturating_sub(2));
        }
        self.stand_ins.add(self.best_bit);
        self.best = (0, 0);
        self.emit(b, buf);
    }

    /// Starts reading the current array element by element: checks and
    /// lets go of the elements it holds, keeping the one being read (or
    /// the first that fails). False if that leaves no room.
    fn start_elements(&mut self, buf: &mut [u8]) -> bool {
        let Some((item, ty)) = self.item() else {
            return false;
        };
        // The bytes before the array's must be clear of the filter.
        let start = self.array_start();
        if self.deep || buf.len() < MIN_BUFFER || start > self.room(buf.len()) {
            return false;
        }
        let Some((head, filter)) = buf.split_at_mut_checked(buf.len().saturating_sub(FILTER))
        else {
            return false;
        };
        filter.fill(0);
        self.flags |= ELEMENTS;
        let end = self.out as usize;
        crate::work::add(end.saturating_sub(start));
        let (mut from, mut depth, mut in_string, mut escape) = (start, 0u32, false, false);
        let mut failed = None;
        for (i, &c) in head
            .get(..end)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .skip(start)
        {
            if in_string {
                match c {
                    _ if escape => escape = false,
                    b'\\' => escape = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                b'"' => in_string = true,
                b'{' | b'[' => depth = depth.saturating_add(1),
                b'}' | b']' => depth = depth.saturating_sub(1),
                b',' if depth == 0 => {
                    let element = head.get(from..i).unwrap_or_default();
                    match elements::check(element, item, ty, filter) {
                        Element::Passes(owner) => self.owned_by(owner),
                        Element::Fails => {
                            failed = Some((from, i));
                            break;
                        }
                    }
                    from = i.saturating_add(1);
                }
                _ => {}
            }
        }
        let (from, to) = failed.unwrap_or((from, end));
        if to > head.len() || from > to {
            return false;
        }
        head.copy_within(from..to, start);
        self.out = u32::try_from(start.saturating_add(to.saturating_sub(from))).unwrap_or(u32::MAX);
        self.stand_ins.add(self.bit);
        if failed.is_some() {
            self.flags |= FAULTED | SKIPPING;
            return true;
        }
        (self.out as usize) < self.room(buf.len())
    }

    /// An element of an array read element by element closed (the
    /// stand-in holds it after the array's `[`): checked and let go, or
    /// kept if it fails.
    fn element_closed(&mut self, buf: &mut [u8]) {
        let start = self.array_start();
        let end = self.out as usize;
        if self.flags & FAULTED != 0 || end <= start {
            return;
        }
        let Some((item, ty)) = self.item() else {
            self.flags |= FAILED;
            return;
        };
        let Some((head, filter)) = buf.split_at_mut_checked(buf.len().saturating_sub(FILTER))
        else {
            self.flags |= FAILED;
            return;
        };
        let element = head.get(start..end).unwrap_or_default();
        match elements::check(element, item, ty, filter) {
            Element::Passes(owner) => {
                self.owned_by(owner);
                self.out = u32::try_from(start).unwrap_or(u32::MAX);
            }
            Element::Fails => self.flags |= FAULTED | SKIPPING,
        }
    }

    /// The current array's item shape and the event type it is for.
    fn item(&self) -> Option<(&'static Shape, EventType)> {
        let ty = self.ty?;
        let key = Key::ALL.get(usize::from(self.checked)).copied()?;
        Some((elements::item(self.dialect, ty, key)?, ty))
    }

    fn owned_by(&mut self, owner: Option<bool>) {
        match owner {
            Some(false) => self.flags |= PARENT,
            Some(true) => self.flags |= SUBAGENT,
            None => {}
        }
    }

    /// Writes the empty value of the kind `first` begins (two bytes).
    fn write_empty(&mut self, first: u8, buf: &mut [u8]) {
        let empty: &[u8; 2] = match first {
            b'{' => b"{}",
            b'[' => b"[]",
            _ => b"\"\"",
        };
        let at = self.out as usize;
        match buf.get_mut(at..at.saturating_add(2)) {
            Some(dst) => {
                dst.copy_from_slice(empty);
                self.out = self.out.saturating_add(2);
            }
            None => self.flags |= FAILED,
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::string::String;
    use std::vec::Vec;

    /// The stand-in for `payload` through a `cap`-byte buffer, read in
    /// `piece`-byte pieces after the first `held`.
    fn reduce(payload: &str, cap: usize, held: usize, piece: usize) -> Option<(String, StandIns)> {
        let mut buf = std::vec![0u8; cap];
        let held = held.min(cap).min(payload.len());
        buf[..held].copy_from_slice(&payload.as_bytes()[..held]);
        let mut r = Reducer::new(Dialect::V1);
        r.feed_held(&mut buf, held);
        for p in payload.as_bytes()[held..].chunks(piece.max(1)) {
            r.feed(p, &mut buf);
        }
        let done = r.finish()?;
        let text = String::from_utf8(buf[..done.len].to_vec()).unwrap();
        Some((text, done.stand_ins))
    }

    #[test]
    fn opaque_members_that_do_not_fit_become_empty_values() {
        let big = "x".repeat(500);
        let payload = std::format!(
            "{{ \"type\": \"TEXT_MESSAGE_CONTENT\",\n \"messageId\": \"m1\", \"delta\": \"{big}\", \"rawEvent\": {{\"a\": [1, \"{big}\"]}} }}"
        );
        for cap in [80, 100, 300] {
            for held in [0, 10, cap] {
                for piece in [1, 7, 1460] {
                    let (text, s) = reduce(&payload, cap, held, piece).unwrap();
                    assert_eq!(
                        text,
                        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"","rawEvent":{}}"#,
                        "{cap} {held} {piece}"
                    );
                    assert!(s.contains(Key::Delta) && s.contains(Key::RawEvent));
                    assert_eq!(s.keys().count(), 2);
                }
            }
        }
        // With room, nothing is replaced; only whitespace goes.
        let (text, s) = reduce(&payload, 4096, 0, 1460).unwrap();
        assert!(s.is_empty());
        assert_eq!(text.len(), payload.len() - 12);
    }

    #[test]
    fn a_closed_value_is_replaced_when_a_later_member_does_not_fit() {
        let payload = std::format!(
            r#"{{"type":"TOOL_CALL_RESULT","content":"{}","messageId":"{}","toolCallId":"t"}}"#,
            "c".repeat(40),
            "m".repeat(30)
        );
        let (text, s) = reduce(&payload, 128, 0, 1).unwrap();
        let want = std::format!(
            r#"{{"type":"TOOL_CALL_RESULT","content":"","messageId":"{}","toolCallId":"t"}}"#,
            "m".repeat(30)
        );
        assert_eq!(text, want);
        assert!(s.contains(Key::Content));
    }

    #[test]
    fn members_a_rule_reads_are_never_replaced() {
        let id = "i".repeat(100);
        for payload in [
            std::format!(r#"{{"type":"TEXT_MESSAGE_START","messageId":"{id}"}}"#),
            std::format!(r#"{{"type":"RUN_STARTED","input":{{"messages":["{id}"]}}}}"#),
            std::format!(r#"{{"type":"CUSTOM","d\u0065lta":"{id}"}}"#),
        ] {
            assert_eq!(reduce(&payload, 64, 64, 7), None, "{payload}");
        }
        // An unknown member is replaced; a string root too.
        let (text, s) = reduce(&std::format!(r#"{{"type":"X","zz":["{id}"]}}"#), 64, 0, 3).unwrap();
        assert_eq!(
            (text.as_str(), s.unlisted()),
            (r#"{"type":"X","zz":[]}"#, true)
        );
        let (text, _) = reduce(&std::format!(r#""{id}""#), 64, 64, 3).unwrap();
        assert_eq!(text, r#""""#);
    }

    #[test]
    fn strings_with_structure_characters_and_escapes_are_read_as_strings() {
        let big = "a\\\"{[,:]}".repeat(40);
        let payload =
            std::format!(r#"{{"delta":"{big}","type":"TEXT_MESSAGE_CONTENT","messageId":"m"}}"#);
        let (text, s) = reduce(&payload, 80, 30, 5).unwrap();
        assert_eq!(
            text,
            r#"{"delta":"","type":"TEXT_MESSAGE_CONTENT","messageId":"m"}"#
        );
        assert!(s.contains(Key::Delta));
    }

    #[test]
    fn stand_ins_are_allowed_only_where_a_kind_decides() {
        let all = |keys: &[Key]| {
            let mut s = StandIns::default();
            keys.iter().for_each(|&k| s.add(k as u8));
            s
        };
        let ok = |keys: &[Key], payload: &str, args: bool| {
            allowed(all(keys), None, payload.as_bytes(), Dialect::V1, args)
        };
        let content = r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}"#;
        assert!(ok(&[Key::Delta], content, true));
        let args = r#"{"type":"TOOL_CALL_ARGS","toolCallId":"t","delta":""}"#;
        assert!(ok(&[Key::Delta], args, false));
        assert!(!ok(&[Key::Delta], args, true));
        // A JSON Patch is checked operation by operation.
        assert!(!ok(
            &[Key::Delta],
            r#"{"type":"STATE_DELTA","delta":[]}"#,
            false
        ));
        assert!(ok(
            &[Key::Snapshot],
            r#"{"type":"STATE_SNAPSHOT","snapshot":{}}"#,
            false
        ));
        // A V1 tool result's content is a string or a list of parts.
        let result = |content: &str| {
            std::format!(
                r#"{{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"t","content":{content}}}"#
            )
        };
        assert!(ok(&[Key::Content], &result(r#""""#), false));
        assert!(!ok(&[Key::Content], &result("[]"), false));
        let v: Vec<Key> = all(&[Key::Delta, Key::Content]).keys().collect();
        assert_eq!(v, [Key::Delta, Key::Content]);
    }
}
