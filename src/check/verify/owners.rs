//! Who owns each message, tool call, activity and reasoning message of a
//! run — kept exactly while it fits, then forgotten.
//!
//! The ownership rules compare an attributed event with the owner of what
//! it refers to, so a run's records are needed only as long as some later
//! event might refer back. A run can have any number of them; this table
//! keeps the newest (and always those of open entities) and lets the oldest
//! go. What it let go is remembered in two ways: a filter of the forgotten
//! ids (no false negatives) and the set of owners they had. A lookup that
//! misses the table and hits the filter answers [`OwnerOf::Forgotten`]: the
//! id is unknown or was owned by one of the [`Lost`] owners. A rule whose
//! verdict is the same for each of those possibilities goes on; any other
//! reports [`Capacity::Owners`](crate::Capacity::Owners), never a guess.
//!
//! A run whose records all belong to the parent agent therefore never needs
//! a forgotten one: an event the parent sends is never checked against an
//! owner, and the owner it records is the parent whatever was forgotten.

use crate::store::{Full, Pool, Span, pack_owner, unpack_owner};
use crate::view::string::JsonStr;

/// Which kind of entity an owner record is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owned {
    Message,
    ToolCall,
    Activity,
    Reasoning,
}

impl Owned {
    /// How the reference's ownership messages name it.
    pub(super) const fn label(self) -> &'static str {
        match self {
            Owned::Message => "message",
            Owned::ToolCall => "tool call",
            Owned::Activity => "activity",
            Owned::Reasoning => "reasoning message",
        }
    }
}

/// What the verifier knows of an id's owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OwnerOf {
    /// Never recorded in this run.
    Unknown,
    /// Recorded: the parent agent (`None`) or a subagent (its index).
    Known(Option<u16>),
    /// Unknown, or forgotten with one of the [`Lost`] owners.
    Forgotten,
    /// One of several owners (a lookup that fell back from a forgotten
    /// record to another): any check of it is undecidable.
    Uncertain,
}

/// The owners forgotten records had: a superset, never missing one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Lost {
    parent: bool,
    /// Subagents by index, below 64.
    subagents: u64,
    /// Some subagent with index 64 or above, or one whose index is not
    /// known (a [`Staged`] record's).
    high: bool,
}

impl Lost {
    fn add(&mut self, owner: Option<u16>) {
        match owner {
            None => self.parent = true,
            Some(i) if i < 64 => self.subagents |= 1 << i,
            Some(_) => self.high = true,
        }
    }

    /// Every lost owner is `owner` (or none was lost).
    pub(super) fn only(&self, owner: Option<u16>) -> bool {
        match owner {
            None => self.subagents == 0 && !self.high,
            Some(i) if i < 64 => !self.parent && !self.high && self.subagents & !(1 << i) == 0,
            Some(_) => !self.parent && self.subagents == 0 && !self.high,
        }
    }

    /// The single lost owner, if there is exactly one (or none: `Some(None)`
    /// is the parent).
    pub(super) fn single(&self) -> Option<Option<u16>> {
        match (self.parent, self.subagents.count_ones(), self.high) {
            (true, 0, false) => Some(None),
            (false, 1, false) => u16::try_from(self.subagents.trailing_zeros())
                .ok()
                .map(Some),
            _ => None,
        }
    }
}

/// Bits of the filter of forgotten ids.
const FILTER_BITS: usize = 1024;
const FILTER_WORDS: usize = FILTER_BITS / 64;

/// Bytes of a [`Staged`] filter.
pub(crate) const STAGED_BYTES: usize = FILTER_BITS / 8;

/// Records let go before they reached the verifier (the messages of a
/// spilled MESSAGES_SNAPSHOT): a filter of their ids, in the layout of
/// [`Owners`]' own, kept in the caller's bytes, and whether the parent or
/// some subagent owned one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Staged<'a> {
    /// [`STAGED_BYTES`] bytes (see [`stage_record`]).
    pub(crate) filter: &'a [u8],
    pub(crate) parent: bool,
    pub(crate) subagents: bool,
}

/// Adds `id` of `kind` to a [`Staged`] filter (zeroed before the first).
pub(super) fn stage_record(filter: &mut [u8], kind: Owned, id: JsonStr<'_>) {
    for bit in filter_bits(kind, id.text_hash()) {
        if let Some(b) = filter.get_mut(bit / 8) {
            *b |= 1 << (bit % 8);
        }
    }
}

impl Staged<'_> {
    /// `id` of `kind` may be one of the records.
    pub(super) fn may_hold(&self, kind: Owned, id: JsonStr<'_>) -> bool {
        filter_bits(kind, id.text_hash()).iter().all(|&bit| {
            self.filter
                .get(bit / 8)
                .is_some_and(|b| b & (1 << (bit % 8)) != 0)
        })
    }
}

/// At most `O` owner records, their ids in the verifier's pool, in the
/// order they were first recorded.
#[derive(Clone, Debug)]
pub(super) struct Owners<const O: usize> {
    records: heapless::Vec<Record, O>,
    /// The low half of each record's id hash, at the same position.
    hashes: heapless::Vec<u16, O>,
    filter: [u64; FILTER_WORDS],
    lost: Lost,
}

#[derive(Clone, Copy, Debug)]
struct Record {
    id: Span,
    kind: Owned,
    /// Packed (see [`pack_owner`]).
    owner: u16,
}

/// The two filter bits of `kind`'s id with hash `hash`.
fn filter_bits(kind: Owned, hash: u32) -> [usize; 2] {
    let key = hash ^ (kind as u32).wrapping_mul(0x9E37_79B9);
    let a = key.wrapping_mul(0x85EB_CA6B);
    let b = key.rotate_left(16).wrapping_mul(0xC2B2_AE35);
    [a as usize % FILTER_BITS, b as usize % FILTER_BITS]
}

impl<const O: usize> Owners<O> {
    pub(super) const fn new() -> Self {
        Owners {
            records: heapless::Vec::new(),
            hashes: heapless::Vec::new(),
            filter: [0; FILTER_WORDS],
            lost: Lost {
                parent: false,
                subagents: 0,
                high: false,
            },
        }
    }

    /// Forgets everything, forgotten records included (a new run).
    pub(super) fn clear(&mut self) {
        *self = Self::new();
    }

    pub(super) fn lost(&self) -> Lost {
        self.lost
    }

    fn position<const B: usize>(
        &self,
        pool: &Pool<B>,
        kind: Owned,
        id: JsonStr<'_>,
        hash: u32,
    ) -> Option<usize> {
        let low = hash as u16;
        (0..self.hashes.len()).find(|&i| {
            self.hashes.get(i) == Some(&low)
                && self
                    .records
                    .get(i)
                    .is_some_and(|r| r.kind == kind && pool.text(r.id) == id)
        })
    }

    fn maybe_forgotten(&self, kind: Owned, hash: u32) -> bool {
        filter_bits(kind, hash).iter().all(|&bit| {
            self.filter
                .get(bit / 64)
                .is_some_and(|w| w & (1 << (bit % 64)) != 0)
        })
    }

    pub(super) fn owner_of<const B: usize>(
        &self,
        pool: &Pool<B>,
        kind: Owned,
        id: JsonStr<'_>,
    ) -> OwnerOf {
        let hash = id.text_hash();
        match self.position(pool, kind, id, hash) {
            Some(i) => OwnerOf::Known(self.records.get(i).and_then(|r| unpack_owner(r.owner))),
            None if self.maybe_forgotten(kind, hash) => OwnerOf::Forgotten,
            None => OwnerOf::Unknown,
        }
    }

    /// Remembers only that `id` of `kind` may have had one of `owners`.
    pub(super) fn forget(&mut self, kind: Owned, id: JsonStr<'_>, owners: &[Option<u16>]) {
        for bit in filter_bits(kind, id.text_hash()) {
            if let Some(w) = self.filter.get_mut(bit / 64) {
                *w |= 1 << (bit % 64);
            }
        }
        owners.iter().for_each(|&o| self.lost.add(o));
    }

    /// Records `owner` for `id`: replacing a recorded one if `overwrite`,
    /// else only for an id not recorded yet (as the reference's `set` and
    /// `has`-then-`set` do). `Err` asks the caller to make room (evict)
    /// and call again.
    pub(super) fn record<const B: usize>(
        &mut self,
        pool: &mut Pool<B>,
        kind: Owned,
        id: JsonStr<'_>,
        owner: Option<u16>,
        overwrite: bool,
    ) -> Result<(), Full> {
        let hash = id.text_hash();
        if let Some(i) = self.position(pool, kind, id, hash) {
            if let Some(r) = self.records.get_mut(i).filter(|_| overwrite) {
                r.owner = pack_owner(owner);
            }
            return Ok(());
        }
        // A forgotten id keeps its old owner unless this one replaces it;
        // if the old one may differ, only the filter can hold the answer.
        if !overwrite && self.maybe_forgotten(kind, hash) && !self.lost.only(owner) {
            self.forget(kind, id, &[owner]);
            return Ok(());
        }
        if self.records.is_full() {
            return Err(Full::Entries);
        }
        let span = pool.alloc_text(id)?;
        let record = Record {
            id: span,
            kind,
            owner: pack_owner(owner),
        };
        if self.records.push(record).is_err() || self.hashes.push(hash as u16).is_err() {
            pool.release(span);
            return Err(Full::Entries);
        }
        Ok(())
    }

    /// Forgets the oldest record that `keep` does not protect; returns the
    /// span its id took, which the caller releases from the pool.
    #[must_use]
    pub(super) fn evict<const B: usize>(
        &mut self,
        pool: &Pool<B>,
        keep: impl Fn(Owned, JsonStr<'_>) -> bool,
    ) -> Option<Span> {
        let i = self
            .records
            .iter()
            .position(|r| !keep(r.kind, pool.text(r.id)))?;
        let r = self.records.remove(i);
        self.hashes.remove(i);
        self.forget(r.kind, pool.text(r.id), &[unpack_owner(r.owner)]);
        Some(r.id)
    }

    /// Remembers `staged`'s records as forgotten ones (the caller has
    /// forgotten the kept records they may replace).
    pub(super) fn merge(&mut self, staged: &Staged<'_>) {
        for (w, bytes) in self.filter.iter_mut().zip(staged.filter.chunks(8)) {
            let mut word = [0u8; 8];
            word.iter_mut().zip(bytes).for_each(|(d, s)| *d = *s);
            *w |= u64::from_le_bytes(word);
        }
        // A subagent's index is not known here: any of them.
        self.lost.parent |= staged.parent;
        self.lost.high |= staged.subagents;
    }

    /// Follows the pool's compaction after `freed` was released.
    pub(super) fn shift(&mut self, freed: Span) {
        for r in &mut self.records {
            r.id = r.id.shifted(freed);
        }
    }

    pub(super) fn len(&self) -> usize {
        self.records.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(raw: &[u8]) -> JsonStr<'_> {
        JsonStr::from_escaped(raw)
    }

    #[test]
    fn lost_owners_answer_only_what_they_know() {
        let mut lost = Lost::default();
        assert!(lost.only(None) && lost.only(Some(3)));
        lost.add(None);
        assert!(lost.only(None) && !lost.only(Some(3)));
        assert_eq!(lost.single(), Some(None));
        let mut lost = Lost::default();
        lost.add(Some(3));
        assert!(lost.only(Some(3)) && !lost.only(Some(4)) && !lost.only(None));
        assert_eq!(lost.single(), Some(Some(3)));
        lost.add(Some(100));
        assert!(!lost.only(Some(3)) && !lost.only(Some(100)));
        assert_eq!(lost.single(), None);
    }

    /// The share of fresh ids the filter takes for forgotten ones, after
    /// `n` were forgotten (docs/capacities.md quotes these).
    #[test]
    #[cfg_attr(miri, ignore = "tens of thousands of lookups")]
    fn the_filter_mistakes_few_fresh_ids_for_forgotten_ones() {
        extern crate std;
        use std::format;
        let rate = |n: usize| {
            let mut owners = Owners::<1>::new();
            for i in 0..n {
                let id = format!("call_{i:08}");
                owners.forget(Owned::ToolCall, text(id.as_bytes()), &[None]);
            }
            let pool = Pool::<0>::new();
            let probes = 20_000;
            let hits = (0..probes)
                .filter(|i| {
                    let id = format!("fresh-{i}");
                    owners.owner_of(&pool, Owned::ToolCall, text(id.as_bytes()))
                        == OwnerOf::Forgotten
                })
                .count();
            hits as f64 / probes as f64
        };
        let (r100, r900) = (rate(100), rate(900));
        std::println!("filter: {r100:.3} of fresh ids after 100 forgotten, {r900:.3} after 900");
        assert!(r100 < 0.05, "{r100}");
        assert!((0.5..0.85).contains(&r900), "{r900}");
        assert_eq!(rate(0), 0.0);
    }

    #[test]
    fn an_evicted_record_is_forgotten_not_unknown() {
        let mut pool = Pool::<64>::new();
        let mut owners = Owners::<2>::new();
        let (a, b, c) = (text(b"a"), text(b"b"), text(b"c"));
        owners
            .record(&mut pool, Owned::Message, a, None, false)
            .unwrap();
        owners
            .record(&mut pool, Owned::Message, b, Some(1), false)
            .unwrap();
        assert_eq!(
            owners.record(&mut pool, Owned::Message, c, None, false),
            Err(Full::Entries)
        );
        // `a` is protected: `b` goes.
        let freed = owners.evict(&pool, |_, id| id == a).unwrap();
        pool.release(freed);
        owners.shift(freed);
        owners
            .record(&mut pool, Owned::Message, c, None, false)
            .unwrap();
        assert_eq!(
            owners.owner_of(&pool, Owned::Message, a),
            OwnerOf::Known(None)
        );
        assert_eq!(
            owners.owner_of(&pool, Owned::Message, c),
            OwnerOf::Known(None)
        );
        assert_eq!(
            owners.owner_of(&pool, Owned::Message, b),
            OwnerOf::Forgotten
        );
        assert_eq!(owners.owner_of(&pool, Owned::ToolCall, b), OwnerOf::Unknown);
        assert_eq!(owners.lost().single(), Some(Some(1)));
        // Recording a forgotten id again: exact only if the answer is sure.
        let freed = owners.evict(&pool, |_, _| false).unwrap();
        pool.release(freed);
        owners.shift(freed);
        owners
            .record(&mut pool, Owned::Message, b, None, false)
            .unwrap();
        assert_eq!(
            owners.owner_of(&pool, Owned::Message, b),
            OwnerOf::Forgotten
        );
        owners
            .record(&mut pool, Owned::Message, b, None, true)
            .unwrap();
        assert_eq!(
            owners.owner_of(&pool, Owned::Message, b),
            OwnerOf::Known(None)
        );
    }
}
