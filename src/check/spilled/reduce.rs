//! A stand-in for a payload that outgrew the frame buffer, written into the
//! buffer as the payload streams past: the payload without whitespace
//! outside strings, reduced wherever it does not fit by one mechanism that
//! follows the schema tables ([`place`]) at any depth:
//!
//! - a value only whose kind is read (a `delta`, a message's `content`, a
//!   tool's `parameters`, a patch operation's `value`, …) becomes the empty
//!   value of its kind, the largest first (the one being read, or the
//!   largest one already read);
//! - an array whose elements the schema checks (a message history, content
//!   parts, tools, a JSON Patch, …) lets go of the elements it holds: each
//!   is checked on its reduced form as it goes ([`elements`]), and the
//!   first that fails stays, with the rest of its array dropped.
//!
//! What a rule reads (types, ids, roles, tags, enums, pointers, numbers)
//! is never reduced: where it does not fit, the frame is a capacity error.
//! The stand-in then goes through the stages like any frame, so the verdict
//! is the reference's. It reads JSON only as far as it needs to: the syntax
//! is checked beside it, and a stand-in is used only for well-formed JSON.

use super::elements::{self, Element, FILTER, MIN_BUFFER};
use super::marks::{EventRoot, Found, Marks, Root};
use super::place::{self, Ctx, List, Named, Place, Treat, Variant};
use super::stand_ins::{ESCAPED, ROOT, StandIns, UNLISTED};
use crate::check::request::{MemberPath, Step};
use crate::check::schema::{self, Site};
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::{EventType, Key};
use crate::protocol::schema::{SchemaObject, Shape};
use crate::view::json::RawJson;
use crate::view::shaped::{LEGACY_COMPARISON_BUDGET, has_legacy_parts};

/// Most objects and arrays the schema reads that are open at once: an
/// event, a run's input, its history, a message, its content, a part and
/// its source are seven.
pub(super) const FRAMES: usize = 7;

/// The frames open, innermost last.
#[derive(Clone, Copy, Debug)]
struct Stack {
    frames: [Frame; FRAMES],
    len: usize,
}

impl Stack {
    const fn new() -> Self {
        const NONE: Frame = Frame {
            start: 0,
            item: 0,
            cuts: 0,
            kind: Kind::Object {
                ctx: Ctx::Event,
                place: Place::Other,
                want_name: false,
                staged_calls: false,
            },
        };
        Stack {
            frames: [NONE; FRAMES],
            len: 0,
        }
    }

    fn as_slice(&self) -> &[Frame] {
        self.frames.get(..self.len).unwrap_or_default()
    }

    fn as_mut_slice(&mut self) -> &mut [Frame] {
        self.frames.get_mut(..self.len).unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.len
    }

    fn last(&self) -> Option<&Frame> {
        self.as_slice().last()
    }

    fn last_mut(&mut self) -> Option<&mut Frame> {
        self.as_mut_slice().last_mut()
    }

    fn get(&self, i: usize) -> Option<&Frame> {
        self.as_slice().get(i)
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut Frame> {
        self.as_mut_slice().get_mut(i)
    }

    fn iter(&self) -> core::slice::Iter<'_, Frame> {
        self.as_slice().iter()
    }

    fn push(&mut self, frame: Frame) -> Result<(), ()> {
        let slot = self.frames.get_mut(self.len).ok_or(())?;
        *slot = frame;
        self.len = self.len.saturating_add(1);
        Ok(())
    }

    fn pop(&mut self) -> Option<Frame> {
        let f = self.last().copied()?;
        self.len = self.len.saturating_sub(1);
        Some(f)
    }

    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

/// An object or array the schema reads, open in the stand-in.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// Where its `{` or `[` is.
    start: u32,
    /// Where the current member's name (object) or element (array) starts.
    item: u32,
    /// Reductions made before it opened.
    cuts: u32,
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Object {
        ctx: Ctx,
        place: Place,
        want_name: bool,
        /// A history message whose tool calls were let go.
        staged_calls: bool,
    },
    Array {
        item: &'static Shape,
        list: List,
        /// Where the elements that may be let go start.
        floor: u32,
        /// Elements let go, and the legacy binary parts among them.
        dropped: u32,
        legacy: u32,
        /// A `NonEmpty` array kept its first element.
        kept: bool,
    },
}

/// What the value being read is, if it is no [`Frame`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    None,
    /// A string or scalar a rule reads.
    Keep,
    /// Only its kind is read.
    Opaque,
    /// Not looked into, not replaced.
    Whole,
}

#[derive(Clone, Copy, Debug)]
struct Open {
    value: Value,
    /// A string stand-in stays non-empty.
    truthy: bool,
    /// The event's member it is in.
    bit: u8,
    start: u32,
    /// Containers open inside it, its own included.
    depth: u32,
}

const NOTHING: Open = Open {
    value: Value::None,
    truthy: false,
    bit: ROOT,
    start: 0,
    depth: 0,
};

/// A closed value that may be replaced.
#[derive(Clone, Copy, Debug)]
struct Closed {
    start: u32,
    end: u32,
    truthy: bool,
    bit: u8,
}

/// How many closed values and closed arrays are remembered for
/// replacing later.
const KEPT: usize = 4;

/// A closed array whose elements may be let go.
#[derive(Clone, Copy, Debug)]
struct Done {
    /// Where its elements start and its `]` is.
    floor: u32,
    end: u32,
    item: &'static Shape,
    list: List,
    kept: bool,
    bit: u8,
}

/// The elements of an open array frame, or of a remembered closed array.
#[derive(Clone, Copy, Debug)]
enum Region {
    Open(usize),
    Closed(usize),
}

/// Input being skipped: a replaced value, or the rest of an array whose
/// element failed (its `]` is written).
#[derive(Clone, Copy, Debug)]
struct Skip {
    depth: u32,
    string: bool,
    escape: bool,
    array: bool,
}

/// A finished stand-in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reduced {
    pub(crate) len: usize,
    pub(crate) stand_ins: StandIns,
    /// Records were let go: the buffer's last [`FILTER`] bytes hold them.
    pub(crate) staged: bool,
    /// The records let go were owned by the parent / some subagent.
    pub(crate) parent: bool,
    pub(crate) subagents: bool,
}

/// Writes a spilling payload's stand-in into the frame buffer: an
/// event's, or (with [`Marks`] as its root) a request body's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reducer<R: Root = EventRoot> {
    /// Bytes of stand-in written.
    out: u32,
    frames: Stack,
    open: Open,
    /// The largest closed opaque values.
    bests: [Option<Closed>; KEPT],
    /// The largest closed arrays whose elements may still be let go.
    closed: [Option<Done>; KEPT],
    skip: Option<Skip>,
    /// Reductions so far.
    cuts: u32,
    /// The innermost object's current member, once its name closed.
    named: Named,
    /// The event's current member's bit.
    bit: u8,
    /// History arrays open (their records may need the filter).
    history: u8,
    in_string: bool,
    escape: bool,
    /// The current string is a member's name.
    name: bool,
    scalar: bool,
    failed: bool,
    /// The buffer's last [`FILTER`] bytes hold the syntax check's levels
    /// past 64 / the records let go.
    deep: bool,
    staged: bool,
    parent: bool,
    subagents: bool,
    /// A name with escapes was read: nothing more is replaced.
    escaped: bool,
    ty: Option<EventType>,
    ty_read: bool,
    dialect: Dialect,
    stand_ins: StandIns,
    root: R,
}

impl Reducer {
    pub(crate) const fn new(dialect: Dialect) -> Self {
        Reducer::with_root(dialect, EventRoot)
    }
}

impl<R: Root> Reducer<R> {
    pub(crate) const fn with_root(dialect: Dialect, root: R) -> Self {
        Reducer {
            out: 0,
            frames: Stack::new(),
            open: NOTHING,
            bests: [None; KEPT],
            closed: [None; KEPT],
            skip: None,
            cuts: 0,
            named: Named::Whole,
            bit: ROOT,
            history: 0,
            in_string: false,
            escape: false,
            name: false,
            scalar: false,
            failed: false,
            deep: false,
            staged: false,
            parent: false,
            subagents: false,
            escaped: false,
            ty: None,
            ty_read: false,
            dialect,
            stand_ins: StandIns::none(),
            root,
        }
    }

    /// What reading a request body marked.
    pub(crate) fn marks(&self) -> Option<&Marks> {
        self.root.marks()
    }

    pub(crate) const fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The syntax check keeps its levels past 64 in the buffer's last bytes.
    pub(crate) const fn deep(&self) -> bool {
        self.deep
    }

    /// Gives the last [`FILTER`] bytes of a `len`-byte buffer to the syntax
    /// check, if no history is being read and the stand-in has not reached
    /// them.
    pub(crate) fn claim_deep(&mut self, len: usize) -> bool {
        let free = !self.staged
            && self.history == 0
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
            if self.failed {
                return;
            }
            self.byte(b, buf);
            self.advance(1);
        }
    }

    /// Reads the payload's next bytes.
    pub(crate) fn feed(&mut self, bytes: &[u8], buf: &mut [u8]) {
        let mut i = 0usize;
        while let Some(&b) = bytes.get(i) {
            if self.failed {
                return;
            }
            let n = self.string_run(bytes.get(i..).unwrap_or_default(), buf);
            if n > 0 {
                i = i.saturating_add(n);
                self.advance(n);
                continue;
            }
            self.byte(b, buf);
            self.advance(1);
            i = i.saturating_add(1);
        }
    }

    /// The stand-in, or `None` if something a rule reads did not fit.
    pub(crate) fn finish(&self) -> Option<Reduced> {
        (!self.failed).then_some(Reduced {
            len: self.out as usize,
            stand_ins: self.stand_ins,
            staged: self.staged,
            parent: self.parent,
            subagents: self.subagents,
        })
    }

    /// String bytes other than a quote or backslash at the start of
    /// `rest`, skipped or copied at once (as many as fit); how many.
    fn string_run(&mut self, rest: &[u8], buf: &mut [u8]) -> usize {
        let skipping = match self.skip {
            Some(s) if s.string && !s.escape => true,
            Some(_) => return 0,
            None if self.in_string && !self.escape => false,
            None => return 0,
        };
        let out = self.out as usize;
        let room = self.room(buf.len()).saturating_sub(out);
        let rest = match skipping {
            true => rest,
            // What does not fit goes byte by byte, making room.
            false => rest.get(..room).unwrap_or(rest),
        };
        let n = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
        crate::testing::count_work(n);
        if !skipping
            && let (Some(dst), Some(src)) = (buf.get_mut(out..out.saturating_add(n)), rest.get(..n))
        {
            dst.copy_from_slice(src);
            self.out = to_u32(out.saturating_add(n));
        }
        n
    }

    fn byte(&mut self, b: u8, buf: &mut [u8]) {
        crate::testing::count_work(1);
        if self.skip.is_some() {
            return self.skip_byte(b, buf);
        }
        if self.in_string {
            if !self.ensure(1, buf) {
                return;
            }
            if self.skip.is_some() {
                return self.skip_byte(b, buf);
            }
            self.put(b, buf);
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                self.string_closed(buf);
            }
            return;
        }
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            if self.scalar {
                self.scalar_closed();
            }
            return;
        }
        let opens = matches!(b, b'"' | b'{' | b'[')
            || (!self.scalar && !matches!(b, b',' | b':' | b'}' | b']'));
        if !self.ensure(if opens { 2 } else { 1 }, buf) {
            return;
        }
        if self.skip.is_some() {
            return self.skip_byte(b, buf);
        }
        if self.open.depth > 0 {
            return self.inside(b, buf);
        }
        match b {
            b'"' if self.wants_name() => {
                if let Some(f) = self.frames.last_mut() {
                    f.item = self.out;
                }
                self.name = true;
                self.in_string = true;
                self.put(b, buf);
            }
            b'"' | b'{' | b'[' => {
                self.value_opens(b);
                self.in_string = b == b'"';
                self.put(b, buf);
            }
            b'}' | b']' => {
                if self.scalar {
                    self.scalar_closed();
                }
                if b == b']' && self.element_done(buf) {
                    return self.skip_byte(b, buf);
                }
                self.put(b, buf);
                self.frame_closed(buf);
                if let (None, Some(m)) = (self.frames.last(), self.root.marks_mut()) {
                    m.end = m.at;
                }
            }
            b',' => {
                if self.scalar {
                    self.scalar_closed();
                }
                if self.root.marks().is_some() && self.in_array() {
                    // The element before it is gone (or failed, and the
                    // rest of the array is skipped): no comma is written.
                    if !self.element_done(buf) {
                        let out = self.out;
                        if let Some(f) = self.frames.last_mut() {
                            f.item = out;
                        }
                    }
                    return;
                }
                self.put(b, buf);
                let out = self.out;
                match self.frames.last_mut().map(|f| (&mut f.kind, &mut f.item)) {
                    Some((Kind::Object { want_name, .. }, _)) => *want_name = true,
                    Some((Kind::Array { .. }, item)) => *item = out,
                    None => {}
                }
            }
            b':' => self.put(b, buf),
            _ => {
                if !self.scalar {
                    self.value_opens(b);
                    self.scalar = true;
                }
                self.put(b, buf);
            }
        }
    }

    /// A byte inside an opaque or whole container (not in a string).
    fn inside(&mut self, b: u8, buf: &mut [u8]) {
        self.put(b, buf);
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.open.depth = self.open.depth.saturating_add(1),
            b'}' | b']' => {
                self.open.depth = self.open.depth.saturating_sub(1);
                if self.open.depth == 0 {
                    self.opaque_closed();
                }
            }
            _ => {}
        }
    }

    fn skip_byte(&mut self, b: u8, buf: &mut [u8]) {
        let Some(mut s) = self.skip else {
            return;
        };
        if s.string {
            if s.escape {
                s.escape = false;
            } else if b == b'\\' {
                s.escape = true;
            } else if b == b'"' {
                s.string = false;
                if s.depth == 0 && !s.array {
                    self.skip = None;
                    return;
                }
            }
            self.skip = Some(s);
            return;
        }
        match b {
            b'"' => s.string = true,
            b'{' | b'[' => s.depth = s.depth.saturating_add(1),
            b'}' | b']' if s.depth == 0 => {
                // The faulted array's own end.
                self.skip = None;
                if self.ensure(1, buf) {
                    self.put(b, buf);
                    self.frame_closed(buf);
                }
                return;
            }
            b'}' | b']' => {
                s.depth = s.depth.saturating_sub(1);
                if s.depth == 0 && !s.array {
                    self.skip = None;
                    return;
                }
            }
            _ => {}
        }
        self.skip = Some(s);
    }

    fn wants_name(&self) -> bool {
        matches!(
            self.frames.last(),
            Some(Frame {
                kind: Kind::Object {
                    want_name: true,
                    ..
                },
                ..
            })
        )
    }

    /// The innermost frame is an array.
    fn in_array(&self) -> bool {
        matches!(
            self.frames.last(),
            Some(Frame {
                kind: Kind::Array { .. },
                ..
            })
        )
    }

    /// A request's array element ended (before its `,` or `]` is
    /// written): checked, and let go if it passes; if it fails, it stays,
    /// the first failure is marked, and the rest of the array is skipped
    /// (true).
    fn element_done(&mut self, buf: &[u8]) -> bool {
        let Some(&Frame {
            kind:
                Kind::Array {
                    item,
                    floor,
                    dropped,
                    ..
                },
            ..
        }) = self.frames.last()
        else {
            return false;
        };
        let Some(marks) = self.root.marks() else {
            return false;
        };
        if self.out <= floor {
            return false;
        }
        let depth = self.frames.len().saturating_sub(1);
        let origin = marks.origins.get(depth).copied().unwrap_or(0);
        let element = buf
            .get(floor as usize..self.out as usize)
            .unwrap_or_default();
        crate::testing::count_work(element.len());
        let site = Site {
            object: match *item {
                Shape::Object(o) => o.name,
                Shape::Union(u) => u.name,
                _ => SchemaObject::RunAgentInput,
            },
            field: None,
        };
        match schema::check(RawJson::trusted(element), item, site) {
            Ok(_) => {
                let out = self.out;
                self.moved(floor, out, out.saturating_sub(floor));
                if let Some(Frame {
                    kind: Kind::Array { dropped, .. },
                    ..
                }) = self.frames.last_mut()
                {
                    *dropped = dropped.saturating_add(1);
                }
                false
            }
            Err(fault) => {
                let path = self.path(dropped);
                if let Some(m) = self.root.marks_mut()
                    && m.found.is_none()
                {
                    m.found = Some(Found {
                        path,
                        offset: origin,
                        fault,
                    });
                }
                self.skip = Some(Skip {
                    depth: 0,
                    string: false,
                    escape: false,
                    array: true,
                });
                true
            }
        }
    }

    /// The path of the innermost array's element `index`.
    fn path(&self, index: u32) -> MemberPath {
        let mut path = MemberPath::root();
        let last = self.frames.len().saturating_sub(1);
        let members = self.root.marks().map(|m| m.members);
        for (i, f) in self.frames.iter().enumerate() {
            if let Kind::Array { dropped, .. } = f.kind {
                path.push(Step {
                    member: members.and_then(|m| m.get(i).copied().flatten()),
                    index: Some(if i == last { index } else { dropped }),
                });
            }
        }
        path
    }

    /// `n` more bytes were read.
    fn advance(&mut self, n: usize) {
        if let Some(m) = self.root.marks_mut() {
            m.at = m.at.saturating_add(n as u64);
        }
    }

    /// A value opens with `b` (not yet written).
    fn value_opens(&mut self, b: u8) {
        let in_array = self.in_array();
        if let Some(m) = self.root.marks_mut() {
            m.value_opens(self.frames.len(), in_array);
        }
        let container = matches!(b, b'{' | b'[');
        let (treat, place) = match self.frames.last() {
            _ if self.escaped => (
                if container { Treat::Whole } else { Treat::Keep },
                Place::Other,
            ),
            None if b == b'{' => match self.root.marks() {
                Some(m) => (Treat::Object(Ctx::Obj(m.shape)), Place::Other),
                None => (Treat::Object(Ctx::Event), Place::Other),
            },
            None => (place::Named::Kind { truthy: false }.treat(b), Place::Other),
            Some(f) => match f.kind {
                Kind::Object { ctx, .. } => {
                    let treat = self.named.treat(b);
                    let place = match (treat, ctx) {
                        (Treat::Object(Ctx::Obj(o)), Ctx::Event) => Place::of(o),
                        _ => Place::Other,
                    };
                    (treat, place)
                }
                Kind::Array { item, list, .. } => {
                    let place = if list == List::History {
                        Place::Message
                    } else {
                        Place::Other
                    };
                    (place::by_shape(item, b, List::Plain, false), place)
                }
            },
        };
        let start = self.out;
        let value = |value, truthy| Open {
            value,
            truthy,
            bit: self.bit,
            start,
            depth: u32::from(container),
        };
        match treat {
            Treat::Keep => self.open = value(Value::Keep, false),
            Treat::Opaque { truthy } => self.open = value(Value::Opaque, truthy),
            Treat::Whole => self.open = value(Value::Whole, false),
            Treat::Object(ctx) => self.push(Kind::Object {
                ctx,
                place,
                want_name: true,
                staged_calls: false,
            }),
            Treat::Array(item, list) => {
                if matches!(list, List::History | List::Calls) {
                    self.history = self.history.saturating_add(1);
                }
                self.push(Kind::Array {
                    item,
                    list,
                    floor: start.saturating_add(1),
                    dropped: 0,
                    legacy: 0,
                    kept: false,
                });
            }
        }
    }

    fn push(&mut self, kind: Kind) {
        let in_object = self.frames.last().is_some() && !self.in_array();
        if let Some(m) = self.root.marks_mut() {
            m.frame_opens(self.frames.len(), in_object);
        }
        let frame = Frame {
            start: self.out,
            item: self.out.saturating_add(1),
            cuts: self.cuts,
            kind,
        };
        if self.frames.push(frame).is_err() {
            self.failed = true;
        }
    }

    fn scalar_closed(&mut self) {
        self.scalar = false;
        self.open = NOTHING;
    }

    fn string_closed(&mut self, buf: &[u8]) {
        if self.name {
            self.name = false;
            return self.name_closed(buf);
        }
        match self.open.value {
            _ if self.open.depth > 0 => {}
            Value::Keep => {
                self.kept_closed(buf);
                self.open = NOTHING;
            }
            Value::Opaque | Value::Whole => self.opaque_closed(),
            Value::None => {}
        }
    }

    /// A member's name closed: what its value will be.
    fn name_closed(&mut self, buf: &[u8]) {
        let Some(&Frame {
            item,
            kind: Kind::Object { ctx, place, .. },
            ..
        }) = self.frames.last()
        else {
            return;
        };
        if let Some(Frame {
            kind: Kind::Object { want_name, .. },
            ..
        }) = self.frames.last_mut()
        {
            *want_name = false;
        }
        let text = buf
            .get((item as usize).saturating_add(1)..(self.out as usize).saturating_sub(1))
            .unwrap_or_default();
        let event = matches!(ctx, Ctx::Event);
        let depth = self.frames.len();
        if let Some(m) = self.root.marks_mut() {
            m.name_closed(text, depth);
        }
        if text.contains(&b'\\') {
            // It may be any member, the tag among them: nothing more is
            // replaced, and what was may not stand.
            self.escaped = true;
            self.failed |= self.cuts > 0;
            if event {
                self.bit = ESCAPED;
            }
            self.named = Named::Whole;
            return;
        }
        self.named = match ctx {
            Ctx::Event => {
                let key = Key::from_bytes(text);
                self.bit = key.map_or(UNLISTED, |k| k as u8);
                place::event_member(self.dialect, self.ty, key)
            }
            Ctx::Obj(o) => place::object_member(o, text, false, place),
            Ctx::Proto(o) => place::object_member(o, text, true, place),
            Ctx::Union(u, v) => place::union_member(u, v, text, place),
        };
    }

    /// A string a rule reads closed: the event's type, or a union's tag.
    fn kept_closed(&mut self, buf: &[u8]) {
        let text = buf
            .get(
                (self.open.start as usize).saturating_add(1)..(self.out as usize).saturating_sub(1),
            )
            .unwrap_or_default();
        let (cuts, named) = (self.cuts, self.named);
        let Some(Frame {
            cuts: before,
            kind: Kind::Object { ctx, .. },
            ..
        }) = self.frames.last_mut()
        else {
            return;
        };
        match (ctx, named) {
            (Ctx::Event, Named::Read) if self.bit == Key::Type as u8 => {
                let ty = EventType::from_bytes(text);
                // A second type (the last one counts): what was replaced
                // must be what that type would have replaced.
                if self.ty_read && ty != self.ty && cuts > 0 {
                    let (dialect, before) = (self.dialect, self.ty);
                    self.failed |= !self.stand_ins.keys().all(|key| {
                        place::same_reduction(
                            place::event_member(dialect, before, Some(key)),
                            place::event_member(dialect, ty, Some(key)),
                        )
                    });
                }
                self.ty = ty;
                self.ty_read = true;
            }
            (Ctx::Union(u, v), Named::Tag) => {
                let chosen = if text.contains(&b'\\') {
                    // Not decided here: nothing was replaced as its variant
                    // would have it.
                    self.escaped = true;
                    Variant::Other
                } else {
                    place::variant(u, text)
                };
                if (self.escaped || *v != Variant::Unknown && *v != chosen) && cuts > *before {
                    self.failed = true;
                }
                *v = chosen;
            }
            _ => {}
        }
    }

    /// An opaque or whole value closed: the largest opaque ones are the
    /// first to be replaced.
    fn opaque_closed(&mut self) {
        let o = self.open;
        self.open = NOTHING;
        if o.value != Value::Opaque || self.out.saturating_sub(o.start) <= stand_in_len(o.truthy) {
            return;
        }
        let closed = Closed {
            start: o.start,
            end: self.out,
            truthy: o.truthy,
            bit: o.bit,
        };
        let len = |c: &Option<Closed>| c.map_or(0, |c| c.end.saturating_sub(c.start));
        if let Some(slot) = self.bests.iter_mut().min_by_key(|c| len(c))
            && len(slot) < closed.end.saturating_sub(closed.start)
        {
            *slot = Some(closed);
        }
    }

    /// The `}` or `]` just written closed the innermost frame.
    fn frame_closed(&mut self, buf: &[u8]) {
        let Some(f) = self.frames.pop() else {
            return;
        };
        let body = buf
            .get(f.start as usize..self.out as usize)
            .unwrap_or_default();
        match f.kind {
            Kind::Array {
                item,
                list,
                floor,
                dropped,
                legacy,
                kept,
            } => {
                if matches!(list, List::History | List::Calls) {
                    self.history = self.history.saturating_sub(1);
                }
                let end = self.out.saturating_sub(1);
                let rest = buf.get(floor as usize..end as usize).unwrap_or_default();
                if has_legacy_parts(item) {
                    // The budget counts the parts let go with the rest.
                    let (mut n, mut l) = (dropped, legacy);
                    for_each_element(rest, |e| {
                        n = n.saturating_add(1);
                        l = l.saturating_add(u32::from(elements::legacy(e, item)));
                    });
                    if (l as usize).saturating_mul(n as usize) > LEGACY_COMPARISON_BUDGET {
                        // Read whole, the array is over the budget.
                        self.failed |= dropped > 0;
                        return;
                    }
                }
                // Its elements may still be let go (not a history's tool
                // calls: their message's owner would be needed).
                if list != List::Calls && !rest.is_empty() {
                    let done = Done {
                        floor,
                        end,
                        item,
                        list,
                        kept,
                        bit: self.bit,
                    };
                    let len = |d: &Option<Done>| d.map_or(0, |d| d.end.saturating_sub(d.floor));
                    if let Some(slot) = self.closed.iter_mut().min_by_key(|d| len(d))
                        && len(slot) < end.saturating_sub(floor)
                    {
                        *slot = Some(done);
                    }
                }
            }
            Kind::Object {
                staged_calls: true, ..
            } => {
                if elements::owned_by_subagent(body) {
                    self.subagents = true;
                } else {
                    self.parent = true;
                }
            }
            Kind::Object { .. } => {}
        }
    }

    /// The last [`FILTER`] bytes hold the records let go, or may: a
    /// history is open, or the event has one.
    fn filter_held(&self) -> bool {
        self.staged
            || self.history > 0
            || matches!(
                self.ty,
                Some(EventType::MessagesSnapshot | EventType::RunStarted)
            )
    }

    /// The buffer's last [`FILTER`] bytes may take the records let go: the
    /// buffer is large enough, and neither the syntax check nor the
    /// stand-in holds them.
    fn filter_free(&self, len: usize) -> bool {
        len >= MIN_BUFFER
            && !self.deep
            && (self.out as usize) <= len.saturating_sub(FILTER).saturating_sub(2)
    }

    /// Where the stand-in must end: two bytes are kept free for an empty
    /// value, and the last [`FILTER`] bytes for the records a history lets
    /// go (or the syntax check's levels past 64).
    fn room(&self, len: usize) -> usize {
        let filter = if self.deep || self.filter_held() {
            FILTER
        } else {
            0
        };
        len.saturating_sub(2).saturating_sub(filter)
    }

    /// Makes room for `need` more bytes; false (and failed) if nothing can
    /// be reduced. A reduction may start skipping the current value.
    fn ensure(&mut self, need: u32, buf: &mut [u8]) -> bool {
        loop {
            if (self.out.saturating_add(need) as usize) <= self.room(buf.len()) {
                return true;
            }
            if self.failed || !self.reduce(buf) {
                self.failed = true;
                return false;
            }
            if self.skip.is_some() {
                return true;
            }
        }
    }

    /// One reduction, the one that frees the most: the open opaque value,
    /// a closed one, or the elements an array holds (open or closed).
    fn reduce(&mut self, buf: &mut [u8]) -> bool {
        if self.escaped {
            return false;
        }
        let open = (self.open.value == Value::Opaque
            && self.out.saturating_sub(self.open.start) >= 2)
            .then(|| gain(self.out.saturating_sub(self.open.start), self.open.truthy));
        let best = self
            .bests
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                Some((
                    i,
                    gain(
                        c.as_ref()?.end.saturating_sub(c.as_ref()?.start),
                        c.as_ref()?.truthy,
                    ),
                ))
            })
            .max_by_key(|&(_, g)| g);
        // The records' filter takes the buffer's last bytes, which the
        // stand-in must have left free.
        let records_free = self.staged || self.filter_free(buf.len());
        let droppable = |list: List| !matches!(list, List::History | List::Calls) || records_free;
        let mut array: Option<(Region, i64)> = None;
        let mut consider = |region: Region, len: u32| {
            if len > 0 && i64::from(len) > array.map_or(0, |(_, l)| l) {
                array = Some((region, i64::from(len)));
            }
        };
        for (i, f) in self.frames.iter().enumerate() {
            if let Kind::Array { list, floor, .. } = f.kind
                && droppable(list)
            {
                consider(Region::Open(i), f.item.saturating_sub(floor));
            }
        }
        for (i, d) in self.closed.iter().enumerate() {
            if let Some(d) = d
                && droppable(d.list)
            {
                consider(Region::Closed(i), d.end.saturating_sub(d.floor));
            }
        }
        let (best_gain, elements) = (best.map_or(0, |b| b.1), array.map_or(0, |a| a.1));
        match open {
            Some(g) if g >= best_gain.max(elements) => self.cut_open(buf),
            _ if best_gain > 0 && best_gain >= elements => match best {
                Some((i, _)) => self.cut_best(i, buf),
                None => false,
            },
            _ if elements > 0 => match array {
                Some((region, _)) => self.let_go(region, buf),
                None => false,
            },
            Some(_) => self.cut_open(buf),
            None => false,
        }
    }

    /// Replaces the open opaque value and skips the rest of it.
    fn cut_open(&mut self, buf: &mut [u8]) -> bool {
        let o = self.open;
        let kind = buf.get(o.start as usize).copied().unwrap_or(b'"');
        let Some(len) = write_empty(buf, o.start, kind, o.truthy) else {
            return false;
        };
        self.out = o.start.saturating_add(len);
        self.skip = Some(Skip {
            depth: o.depth,
            string: self.in_string,
            escape: self.escape,
            array: false,
        });
        self.in_string = false;
        self.escape = false;
        self.open = NOTHING;
        self.replaced(o.bit);
        true
    }

    /// Replaces closed opaque value `i`.
    fn cut_best(&mut self, i: usize, buf: &mut [u8]) -> bool {
        let Some(c) = self.bests.get_mut(i).and_then(Option::take) else {
            return false;
        };
        let kind = buf.get(c.start as usize).copied().unwrap_or(b'"');
        let Some(len) = write_empty(buf, c.start, kind, c.truthy) else {
            return false;
        };
        let to = c.start.saturating_add(len);
        if !move_within(buf, c.end, self.out, to) {
            return false;
        }
        self.moved(to, c.end, c.end.saturating_sub(to));
        self.replaced(c.bit);
        true
    }

    /// Checks and lets go of the elements an array holds (an open one's
    /// before its current element); the first that fails stays, with the
    /// rest of its array dropped (an open array's skipped).
    fn let_go(&mut self, region: Region, buf: &mut [u8]) -> bool {
        let spec = match region {
            Region::Open(i) => match self.frames.get(i) {
                Some(&Frame {
                    item: end,
                    kind:
                        Kind::Array {
                            item,
                            list,
                            floor,
                            kept,
                            ..
                        },
                    ..
                }) => (floor, end, item, list, kept, true, self.bit),
                _ => return false,
            },
            Region::Closed(i) => match self.closed.get_mut(i).and_then(Option::take) {
                Some(d) => (d.floor, d.end, d.item, d.list, d.kept, false, d.bit),
                None => return false,
            },
        };
        let (floor, end, item, list, mut kept, open, bit) = spec;
        let records = matches!(list, List::History | List::Calls);
        if records && !self.staged {
            if !self.filter_free(buf.len()) {
                return false;
            }
            if let Some(tail) = buf.get_mut(buf.len().saturating_sub(FILTER)..) {
                tail.fill(0);
            }
            self.staged = true;
        }
        let split = if records {
            buf.len().saturating_sub(FILTER)
        } else {
            buf.len()
        };
        let (head, filter) = buf.split_at_mut(split);
        let region_end = (end as usize).min(head.len());
        crate::testing::count_work(region_end.saturating_sub(floor as usize));
        let (mut to, mut from) = (floor as usize, floor as usize);
        let (mut owners, mut dropped, mut legacy) = ((false, false, false), 0u32, 0u32);
        let mut failed = None;
        let mut scan = Scan::default();
        // A closed array's last element ends at its `]`.
        for at in floor as usize..=region_end {
            let boundary = match head.get(at) {
                _ if at == region_end => !open && from < at,
                Some(&c) => scan.step(c),
                None => false,
            };
            if !boundary {
                continue;
            }
            let element = head.get(from..at).unwrap_or_default();
            match elements::check(element, item) {
                Element::Fails => {
                    failed = Some((from, at));
                    break;
                }
                Element::Passes(keep) if list == List::NonEmpty && keep && !kept => {
                    // Kept with the comma after it (a closed array's last
                    // element has none).
                    kept = true;
                    let next = if at < region_end {
                        at.saturating_add(1)
                    } else {
                        at
                    };
                    head.copy_within(from..next, to);
                    to = to.saturating_add(next.saturating_sub(from));
                }
                Element::Passes(keep) => {
                    match elements::stage(element, list, filter) {
                        Some(true) => owners.1 = true,
                        Some(false) => owners.0 = true,
                        None => {}
                    }
                    owners.2 |= list == List::Calls;
                    legacy =
                        legacy.saturating_add(u32::from(keep && elements::legacy(element, item)));
                    dropped = dropped.saturating_add(1);
                }
            }
            from = at.saturating_add(1);
        }
        self.parent |= owners.0;
        self.subagents |= owners.1;
        if let Region::Open(i) = region {
            if owners.2
                && let Some(Frame {
                    kind: Kind::Object { staged_calls, .. },
                    ..
                }) = i.checked_sub(1).and_then(|p| self.frames.get_mut(p))
            {
                *staged_calls = true;
            }
            if let Some(Frame {
                kind:
                    Kind::Array {
                        floor: f,
                        dropped: d,
                        legacy: l,
                        kept: k,
                        ..
                    },
                ..
            }) = self.frames.get_mut(i)
            {
                *f = to_u32(to);
                *d = d.saturating_add(dropped);
                *l = l.saturating_add(legacy);
                *k = kept;
            }
        }
        self.replaced(bit);
        // The kept elements stay, each followed by its comma (as the
        // elements before `floor` are), then a failing one or an open
        // array's current element; a closed array's last comma goes.
        match (failed, open) {
            (Some((start, stop)), true) => {
                let Region::Open(i) = region else {
                    return false;
                };
                self.fault(i, start, stop, to, buf)
            }
            (failed, _) => {
                if let Some((start, stop)) = failed {
                    if start > buf.len() || stop > buf.len() {
                        return false;
                    }
                    buf.copy_within(start..stop, to);
                    to = to.saturating_add(stop.saturating_sub(start));
                } else if !open && to.checked_sub(1).and_then(|i| buf.get(i)) == Some(&b',') {
                    to = to.saturating_sub(1);
                }
                let to = to_u32(to);
                if !move_within(buf, end, self.out, to) {
                    return false;
                }
                self.moved(floor, end, end.saturating_sub(to));
                true
            }
        }
    }

    /// Array frame `i`'s element `start..stop` failed: it stays (at `to`),
    /// what the array held after it goes, and the rest of the array is
    /// skipped.
    fn fault(&mut self, i: usize, start: usize, stop: usize, to: usize, buf: &mut [u8]) -> bool {
        let end = to.saturating_add(stop.saturating_sub(start));
        if stop > buf.len() || end > stop.max(to) {
            return false;
        }
        buf.copy_within(start..stop, to);
        let above = self.frames.len().saturating_sub(i.saturating_add(1));
        for f in self.frames.iter().skip(i.saturating_add(1)) {
            if matches!(
                f.kind,
                Kind::Array {
                    list: List::History | List::Calls,
                    ..
                }
            ) {
                self.history = self.history.saturating_sub(1);
            }
        }
        self.frames.truncate(i.saturating_add(1));
        self.skip = Some(Skip {
            depth: to_u32(above).saturating_add(self.open.depth),
            string: self.in_string,
            escape: self.escape,
            array: true,
        });
        (self.in_string, self.escape, self.name, self.scalar) = (false, false, false, false);
        self.open = NOTHING;
        // Everything after the failing element is gone.
        let out = self.out;
        self.moved(to_u32(start.min(to)), out, 0);
        self.out = to_u32(end);
        true
    }

    /// The stand-in's bytes `from..to` were rewritten and what followed
    /// them moved `by` bytes back: positions after move with them; closed
    /// values and arrays inside are forgotten (a frame's positions are
    /// never inside).
    fn moved(&mut self, from: u32, to: u32, by: u32) {
        let at = |p: u32| if p >= to { p.saturating_sub(by) } else { p };
        for f in self.frames.as_mut_slice() {
            f.start = at(f.start);
            f.item = at(f.item);
            if let Kind::Array { floor, .. } = &mut f.kind {
                *floor = at(*floor);
            }
        }
        self.open.start = at(self.open.start);
        let inside = |p: u32| p >= from && p < to;
        for slot in &mut self.bests {
            *slot = slot
                .filter(|c| !inside(c.start) && !inside(c.end.saturating_sub(1)))
                .map(|c| Closed {
                    start: at(c.start),
                    end: at(c.end),
                    ..c
                });
        }
        for slot in &mut self.closed {
            *slot = slot
                .filter(|d| !inside(d.floor) && !inside(d.end))
                .map(|d| Done {
                    floor: at(d.floor),
                    end: at(d.end),
                    ..d
                });
        }
        self.out = at(self.out);
    }

    fn replaced(&mut self, bit: u8) {
        self.stand_ins.add(bit);
        self.cuts = self.cuts.saturating_add(1);
    }

    fn put(&mut self, b: u8, buf: &mut [u8]) {
        match buf.get_mut(self.out as usize) {
            Some(slot) => {
                *slot = b;
                self.out = self.out.saturating_add(1);
            }
            None => self.failed = true,
        }
    }
}

/// The bytes a replaced value takes.
const fn stand_in_len(truthy: bool) -> u32 {
    if truthy { 3 } else { 2 }
}

/// Bytes freed by replacing a `len`-byte value.
fn gain(len: u32, truthy: bool) -> i64 {
    i64::from(len).saturating_sub(i64::from(stand_in_len(truthy)))
}

/// Writes the empty value of the kind `first` begins at `at`; its length.
fn write_empty(buf: &mut [u8], at: u32, first: u8, truthy: bool) -> Option<u32> {
    let empty: &[u8] = match first {
        b'{' => b"{}",
        b'[' => b"[]",
        _ if truthy => b"\" \"",
        _ => b"\"\"",
    };
    let at = at as usize;
    buf.get_mut(at..at.checked_add(empty.len())?)?
        .copy_from_slice(empty);
    Some(to_u32(empty.len()))
}

/// Moves `from..to` to `at` (not after `from`).
fn move_within(buf: &mut [u8], from: u32, to: u32, at: u32) -> bool {
    let (from, to, at) = (from as usize, to as usize, at as usize);
    if to > buf.len() || from > to || at > from {
        return false;
    }
    crate::testing::count_work(to.saturating_sub(from));
    buf.copy_within(from..to, at);
    true
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Where a scan of compact JSON is: `step` is true at a comma between
/// the elements of the array scanned.
#[derive(Default)]
struct Scan {
    depth: u32,
    string: bool,
    escape: bool,
}

impl Scan {
    fn step(&mut self, c: u8) -> bool {
        if self.string {
            match c {
                _ if self.escape => self.escape = false,
                b'\\' => self.escape = true,
                b'"' => self.string = false,
                _ => {}
            }
            return false;
        }
        match c {
            b'"' => self.string = true,
            b'{' | b'[' => self.depth = self.depth.saturating_add(1),
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' => return self.depth == 0,
            _ => {}
        }
        false
    }
}

/// Calls `f` with each element of `list` (an array's elements, without
/// its brackets).
fn for_each_element(list: &[u8], mut f: impl FnMut(&[u8])) {
    let mut scan = Scan::default();
    let mut from = 0usize;
    for (i, &c) in list.iter().enumerate() {
        if scan.step(c) {
            f(list.get(from..i).unwrap_or_default());
            from = i.saturating_add(1);
        }
    }
    if from < list.len() {
        f(list.get(from..).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::string::String;

    /// The stand-in for `payload` through a `cap`-byte buffer, read in
    /// `piece`-byte pieces after the first `held`.
    fn reduce(payload: &str, cap: usize, held: usize, piece: usize) -> Option<(String, StandIns)> {
        let mut buf = std::vec![0u8; cap];
        // As `JsonState::begin` has it: the buffer's last bytes are fed
        // from a copy.
        let held = held.min(cap.saturating_sub(FILTER)).min(payload.len());
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

    /// Ends of a spilled payload as they stream: the stand-in (or `None`)
    /// is the same whatever the pieces and the bytes held at the start.
    fn reduced(payload: &str, cap: usize) -> Option<(String, StandIns)> {
        let want = reduce(payload, cap, 0, 1460);
        // (Miri: one split is enough, and the others take minutes.)
        let splits: &[usize] = if cfg!(miri) { &[] } else { &[0, 10, cap] };
        for &held in splits {
            for piece in [1, 7] {
                assert_eq!(reduce(payload, cap, held, piece), want, "{held} {piece}");
            }
        }
        want
    }

    fn big(n: usize) -> String {
        "x".repeat(n)
    }

    #[test]
    fn values_only_whose_kind_is_read_become_empty_values() {
        let big = big(500);
        let payload = std::format!(
            "{{ \"type\": \"TEXT_MESSAGE_CONTENT\",\n \"messageId\": \"m1\", \"delta\": \"{big}\", \"rawEvent\": {{\"a\": [1, \"{big}\"]}} }}"
        );
        for cap in [80, 100, 300] {
            let (text, s) = reduced(&payload, cap).unwrap();
            assert_eq!(
                text,
                r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"","rawEvent":{}}"#,
                "{cap}"
            );
            assert!(s.contains(Key::Delta) && s.contains(Key::RawEvent));
            assert_eq!(s.keys().count(), 2);
        }
        // With room, nothing is replaced; only whitespace goes.
        let (text, s) = reduced(&payload, 4096).unwrap();
        assert!(s.is_empty());
        assert_eq!(text.len(), payload.len() - 12);
    }

    #[test]
    fn values_at_any_depth_are_replaced_and_the_structure_kept() {
        let big = big(600);
        // A tool result and a text part and an image's data in a history.
        let payload = std::format!(
            r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"id":"a","role":"tool","toolCallId":"c","content":"{big}"}},{{"id":"b","role":"user","content":[{{"type":"text","text":"{big}"}},{{"type":"image","source":{{"type":"data","value":"{big}","mimeType":"image/png"}}}}]}}]}}"#
        );
        let (text, s) = reduced(&payload, 700).unwrap();
        assert_eq!(
            text,
            r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"tool","toolCallId":"c","content":""},{"id":"b","role":"user","content":[{"type":"text","text":""},{"type":"image","source":{"type":"data","value":"","mimeType":"image/png"}}]}]}"#
        );
        assert_eq!(s.keys().collect::<std::vec::Vec<_>>(), [Key::Messages]);
        // An interrupt's message and response schema, in an outcome.
        let payload = std::format!(
            r#"{{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{{"type":"interrupt","interrupts":[{{"id":"i1","reason":"r","message":"{big}","responseSchema":{{"a":"{big}"}}}}]}}}}"#
        );
        let (text, _) = reduced(&payload, 300).unwrap();
        assert_eq!(
            text,
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"r","message":"","responseSchema":{}}]}}"#
        );
    }

    #[test]
    fn a_string_whose_truthiness_a_rule_reads_stays_non_empty() {
        // V0 binary content needs one of id, url or data non-empty.
        let payload = std::format!(
            r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"id":"u","role":"user","content":[{{"type":"binary","mimeType":"image/png","data":"{}"}}]}}]}}"#,
            big(700)
        );
        let (text, _) = reduced(&payload, 600).unwrap();
        assert!(
            text.contains(r#""mimeType":"image/png","data":" ""#),
            "{text}"
        );
    }

    #[test]
    fn members_before_their_tag_are_treated_as_every_variant_allows() {
        let big = big(600);
        let payload = std::format!(
            r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"content":"{big}","role":"user","id":"u"}},{{"content":[{{"text":"{big}","type":"text"}}],"role":"user","id":"v"}}]}}"#
        );
        let (text, _) = reduced(&payload, 600).unwrap();
        assert_eq!(
            text,
            r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"content":"","role":"user","id":"u"},{"content":[{"text":" ","type":"text"}],"role":"user","id":"v"}]}"#
        );
        // (The part could be a legacy binary one, whose text is read for
        // truthiness, until its type is read.)
        // Before the event's type too: only STATE_DELTA looks into an
        // array `delta`, as a JSON Patch.
        let payload = std::format!(
            r#"{{"delta":[{{"op":"add","path":"/a","value":"{big}"}}],"type":"STATE_DELTA"}}"#
        );
        let (text, _) = reduced(&payload, 200).unwrap();
        assert_eq!(
            text,
            r#"{"delta":[{"op":"add","path":"/a","value":""}],"type":"STATE_DELTA"}"#
        );
    }

    #[test]
    fn what_a_rule_reads_is_never_replaced() {
        let id = big(100);
        for payload in [
            std::format!(r#"{{"type":"TEXT_MESSAGE_START","messageId":"{id}"}}"#),
            std::format!(
                r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"id":"{id}","role":"user","content":"c"}}]}}"#
            ),
            // A history message's owner.
            std::format!(
                r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"id":"i","role":"user","content":"c","subagentRunId":"{id}"}}]}}"#
            ),
            std::format!(r#"{{"type":"STATE_DELTA","delta":[{{"op":"remove","path":"/{id}"}}]}}"#),
            // A name with escapes may be any member.
            std::format!(r#"{{"type":"CUSTOM","value":"{id}","n\u0061me":"n"}}"#),
            // A second type that reads what the first let go.
            std::format!(
                r#"{{"type":"TEXT_MESSAGE_CONTENT","delta":"{id}","type":"STATE_DELTA"}}"#
            ),
        ] {
            assert_eq!(reduced(&payload, 64), None, "{payload}");
        }
        // What a history's messages record is kept, however long.
        let id = big(700);
        for member in ["id", "subagentRunId"] {
            let payload = std::format!(
                r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"id":"i","role":"assistant","content":"c","{member}":"{id}","toolCalls":[{{"id":"{id}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}]}}"#
            );
            assert_eq!(reduced(&payload, 600), None, "{member}");
            let (text, _) = reduced(&payload, 4096).unwrap();
            assert!(text.contains(&id));
        }
        // A second type that reads it no more than the first did.
        let payload = std::format!(
            r#"{{"type":"CUSTOM","name":"n","value":"{id}","type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"x"}}"#
        );
        assert!(reduced(&payload, 160).is_some_and(|(_, s)| s.contains(Key::Value)));
        // A root value that is no object.
        let (text, _) = reduced(&std::format!(r#""{id}""#), 64).unwrap();
        assert_eq!(text, r#""""#);
    }

    /// A history of `n` messages, message `bad` (if any) of the wrong shape.
    fn history(n: usize, bad: Option<usize>) -> String {
        let messages: std::vec::Vec<String> = (0..n)
            .map(|i| match bad == Some(i) {
                true => std::format!(r#"{{"id":"m{i}","role":"user","content":{i}}}"#),
                false => std::format!(r#"{{"id":"m{i}","role":"user","content":"hello {i}"}}"#),
            })
            .collect();
        std::format!(
            r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{}]}}"#,
            messages.join(",")
        )
    }

    #[test]
    fn arrays_let_go_of_elements_that_pass_and_keep_the_first_that_fails() {
        let (text, s) = reduced(&history(40, None), 600).unwrap();
        assert!(text.ends_with(r#"{"id":"m39","role":"user","content":"hello 39"}]}"#));
        assert!(!text.contains(r#""m0""#) && s.contains(Key::Messages));
        let (text, _) = reduced(&history(40, Some(20)), 600).unwrap();
        assert_eq!(
            text,
            r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"m20","role":"user","content":20}]}"#
        );
        // An array that must not be empty keeps its first element.
        let interrupts: std::vec::Vec<String> = (0..40)
            .map(|i| std::format!(r#"{{"id":"i{i}","reason":"r"}}"#))
            .collect();
        let payload = std::format!(
            r#"{{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{{"type":"interrupt","interrupts":[{}]}}}}"#,
            interrupts.join(",")
        );
        let (text, _) = reduced(&payload, 300).unwrap();
        assert!(
            text.contains(r#""interrupts":[{"id":"i0","reason":"r"}"#),
            "{text}"
        );
        let limits = crate::input::json::Limits::new();
        assert!(
            crate::input::json::validate(text.as_bytes(), limits).is_ok(),
            "{text}"
        );
        // Let go of again once closed, past the element kept (a fuzz find:
        // the kept element's comma stayed before the `]`).
        let payload = std::format!(
            r#"{{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{{"type":"interrupt","interrupts":[{}]}},"result":"{}"}}"#,
            interrupts.join(","),
            big(300)
        );
        let (text, _) = reduced(&payload, 400).unwrap();
        assert!(
            crate::input::json::validate(text.as_bytes(), limits).is_ok(),
            "{text}"
        );
    }

    /// A history read before the event's type closes, the stand-in grows
    /// into the buffer's last bytes, and a later reduction lets the
    /// history's messages go: their records may not take those bytes (a
    /// fuzz find: the stand-in read as a syntax error).
    #[test]
    fn records_never_take_bytes_the_stand_in_holds() {
        let messages: std::vec::Vec<String> = (0..8)
            .map(|i| std::format!(r#"{{"id":"m{i}","role":"user","content":"{}"}}"#, big(30)))
            .collect();
        let payload = std::format!(
            r#"{{"messages":[{}],"rawEvent":"{}","type":"MESSAGES_SNAPSHOT"}}"#,
            messages.join(","),
            big(500)
        );
        let (text, _) = reduced(&payload, 1024).unwrap();
        let limits = crate::input::json::Limits::new();
        assert!(
            crate::input::json::validate(text.as_bytes(), limits).is_ok(),
            "{text}"
        );
    }

    #[test]
    fn the_records_of_messages_let_go_are_staged() {
        let payload = history(40, None);
        let mut buf = std::vec![0u8; 600];
        let mut r = Reducer::new(Dialect::V1);
        r.feed(payload.as_bytes(), &mut buf);
        let done = r.finish().unwrap();
        assert!(done.staged && done.parent && !done.subagents);
        let filter = &buf[buf.len() - FILTER..];
        assert!(filter.iter().any(|&b| b != 0));
    }
}
