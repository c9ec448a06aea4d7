//! What the reducer is rooted at: an event ([`EventRoot`], which marks
//! nothing), or a request body ([`Marks`]: where its values start, and the
//! first array element that failed its check, for the error's path and
//! offset).

use core::fmt;

use super::reduce::FRAMES;
use crate::check::request::MemberPath;
use crate::check::schema::Fault;
use crate::protocol::event_type::Member;
use crate::protocol::schema::Obj;

/// The reducer's root: what is marked as the payload is read.
pub(crate) trait Root: Copy + fmt::Debug {
    /// A request body's marks (`None`: the payload is an event).
    fn marks(&self) -> Option<&Marks>;
    fn marks_mut(&mut self) -> Option<&mut Marks>;
}

/// An event: nothing is marked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventRoot;

impl Root for EventRoot {
    #[inline(always)]
    fn marks(&self) -> Option<&Marks> {
        None
    }

    #[inline(always)]
    fn marks_mut(&mut self) -> Option<&mut Marks> {
        None
    }
}

/// Most top-level members a request's shape has.
pub(crate) const REQUEST_FIELDS: usize = 10;

/// A request body of shape `shape`, and what reading it marked. Each of
/// its arrays' elements is checked as it ends and let go if it passes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Marks {
    pub(crate) shape: &'static Obj,
    /// Bytes read.
    pub(crate) at: u64,
    /// Where the top-level value starts and ends (its first and last byte).
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// The top-level member being read (its index in the shape's fields).
    field: Option<u8>,
    /// Where each top-level member's (last) value starts.
    pub(crate) fields: [u64; REQUEST_FIELDS],
    /// The member whose name closed last.
    member: Option<Member>,
    /// Per open frame: the member it is the value of (`None`: an element).
    pub(crate) members: [Option<Member>; FRAMES],
    /// Per open array frame: where its current element starts.
    pub(crate) origins: [u64; FRAMES],
    pub(crate) found: Option<Found>,
}

/// An array element of a request that failed its check: where it is (its
/// path and first byte), and why. It is kept in the stand-in, so the
/// stand-in fails too, unless a later duplicate member replaces it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub(crate) path: MemberPath,
    pub(crate) offset: u64,
    pub(crate) fault: Fault,
}

impl Root for Marks {
    fn marks(&self) -> Option<&Marks> {
        Some(self)
    }

    fn marks_mut(&mut self) -> Option<&mut Marks> {
        Some(self)
    }
}

impl Marks {
    pub(crate) const fn new(shape: &'static Obj) -> Self {
        Marks {
            shape,
            at: 0,
            start: 0,
            end: 0,
            field: None,
            fields: [0; REQUEST_FIELDS],
            member: None,
            members: [None; FRAMES],
            origins: [0; FRAMES],
            found: None,
        }
    }

    /// A value opens at the current byte, with `depth` frames open (the
    /// innermost an array if `in_array`).
    pub(super) fn value_opens(&mut self, depth: usize, in_array: bool) {
        let at = self.at;
        let slot = match (depth, in_array) {
            (0, _) => Some(&mut self.start),
            (d, true) => self.origins.get_mut(d.saturating_sub(1)),
            (1, false) => self.field.and_then(|i| self.fields.get_mut(usize::from(i))),
            _ => None,
        };
        if let Some(slot) = slot {
            *slot = at;
        }
    }

    /// Frame `depth` opens, a member's value if `in_object`.
    pub(super) fn frame_opens(&mut self, depth: usize, in_object: bool) {
        if let Some(slot) = self.members.get_mut(depth) {
            *slot = if in_object { self.member } else { None };
        }
    }

    /// A member's name closed (its raw bytes), in frame `depth - 1`.
    pub(super) fn name_closed(&mut self, name: &[u8], depth: usize) {
        self.member = Member::from_bytes(name);
        if depth == 1 {
            self.field = self
                .shape
                .fields
                .iter()
                .position(|f| f.name.as_str().as_bytes() == name)
                .and_then(|i| u8::try_from(i).ok());
        }
    }
}
