//! Storage for the ids the later stages must remember, sized by the bytes
//! the ids take rather than by slots.
//!
//! A [`Pool`] keeps ids back to back as they were written (escapes
//! included, so a stored id compares by decoded text, as JavaScript
//! compares strings); a [`Span`] says where one lies. Several tables can
//! share one pool: releasing a span compacts the pool, and every table
//! sharing it shifts its spans ([`IdTable::shift`]).

use crate::view::json::RawJson;
use crate::view::string::JsonStr;

/// No room: too many entries, or too few free bytes in the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    Entries,
    Bytes,
}

/// Where one stored string lies in a [`Pool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    start: u16,
    len: u16,
}

impl Span {
    pub(crate) const fn new(start: u16, len: u16) -> Self {
        Span { start, len }
    }

    pub(crate) const fn start(self) -> u16 {
        self.start
    }

    pub(crate) const fn len(self) -> usize {
        self.len as usize
    }

    /// The same string after `freed` was released from its pool.
    pub(crate) fn shifted(self, freed: Span) -> Span {
        if self.start > freed.start {
            Span {
                start: self.start.saturating_sub(freed.len),
                len: self.len,
            }
        } else {
            self
        }
    }
}

/// `B` bytes of strings, stored back to back in allocation order.
#[derive(Clone, Debug)]
pub(crate) struct Pool<const B: usize> {
    bytes: [u8; B],
    used: u16,
}

impl<const B: usize> Pool<B> {
    pub(crate) const fn new() -> Self {
        const { assert!(B <= u16::MAX as usize, "a pool holds at most 65535 bytes") };
        Pool {
            bytes: [0; B],
            used: 0,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.used = 0;
    }

    pub(crate) fn free(&self) -> usize {
        B.saturating_sub(usize::from(self.used))
    }

    /// Copies `parts` (concatenated) to the end of the pool.
    pub(crate) fn alloc(&mut self, parts: &[&[u8]]) -> Result<Span, Full> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.free() {
            return Err(Full::Bytes);
        }
        let start = self.used;
        let mut at = usize::from(start);
        for part in parts {
            let end = at.saturating_add(part.len());
            let dst = self.bytes.get_mut(at..end).ok_or(Full::Bytes)?;
            dst.copy_from_slice(part);
            at = end;
        }
        // `len` ≤ free space < 2^16.
        let len = u16::try_from(len).map_err(|_| Full::Bytes)?;
        self.used = start.saturating_add(len);
        Ok(Span { start, len })
    }

    /// Copies the text of `s` (its JSON text without quotes).
    pub(crate) fn alloc_text(&mut self, s: JsonStr<'_>) -> Result<Span, Full> {
        self.alloc(&[s.raw()])
    }

    /// Releases `span`, moving the bytes after it down: every span after it
    /// (in any table sharing the pool) must be [`Span::shifted`].
    pub(crate) fn release(&mut self, span: Span) {
        let (start, len) = (usize::from(span.start), usize::from(span.len));
        let end = start.saturating_add(len);
        let used = usize::from(self.used);
        if end > used {
            return;
        }
        self.bytes.copy_within(end..used, start);
        crate::testing::count_work(used.saturating_sub(end));
        self.used = self.used.saturating_sub(span.len);
    }

    pub(crate) fn bytes(&self, span: Span) -> &[u8] {
        let start = usize::from(span.start);
        let end = start.saturating_add(usize::from(span.len));
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// A string stored with [`alloc_text`](Self::alloc_text).
    pub(crate) fn text(&self, span: Span) -> JsonStr<'_> {
        JsonStr::from_escaped(self.bytes(span))
    }
}

/// Up to `K` strings of `B` bytes in all, kept for an error message while
/// the event they came from is gone (a string that does not fit only
/// shortens the message).
#[derive(Clone, Debug)]
pub(crate) struct Kept<const B: usize, const K: usize> {
    pool: Pool<B>,
    strs: [Option<Span>; K],
}

impl<const B: usize, const K: usize> Kept<B, K> {
    pub(crate) const fn new() -> Self {
        Kept {
            pool: Pool::new(),
            strs: [None; K],
        }
    }

    /// Replaces the kept strings with `strs`.
    pub(crate) fn keep(&mut self, strs: [Option<JsonStr<'_>>; K]) {
        self.pool.clear();
        for (slot, s) in self.strs.iter_mut().zip(strs) {
            *slot = s.and_then(|s| self.pool.alloc_text(s).ok());
        }
    }

    /// The `i`th kept string.
    pub(crate) fn get(&self, i: usize) -> Option<JsonStr<'_>> {
        let span = (*self.strs.get(i)?)?;
        Some(self.pool.text(span))
    }
}

/// One string of at most `L` bytes of JSON text, inline.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StoredStr<const L: usize> {
    len: u16,
    bytes: [u8; L],
}

impl<const L: usize> StoredStr<L> {
    pub(crate) const EMPTY: Self = StoredStr {
        len: 0,
        bytes: [0; L],
    };

    /// Replaces the contents with `text` (as `"…"`), which must be valid
    /// JSON string contents; `None` if it does not fit.
    pub(crate) fn set_ascii(&mut self, text: &[u8]) -> Option<()> {
        let len = text.len().checked_add(2)?;
        let stored_len = u16::try_from(len).ok()?;
        let dst = self.bytes.get_mut(..len)?;
        let (open, rest) = dst.split_first_mut()?;
        let (close, middle) = rest.split_last_mut()?;
        *open = b'"';
        *close = b'"';
        middle.copy_from_slice(text);
        self.len = stored_len;
        Some(())
    }

    /// The stored string as a JSON value.
    pub(crate) fn json(&self) -> RawJson<'_> {
        RawJson::trusted(self.bytes.get(..usize::from(self.len)).unwrap_or_default())
    }
}

/// What an entry of an [`IdTable`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry<K> {
    pub(crate) kind: K,
    /// Index of the owning subagent's id in the run's table of subagent
    /// names, or `None` for the parent agent.
    pub(crate) owner: Option<u16>,
}

/// A fixed-capacity, insertion-ordered table of at most `N` ids, each with
/// a kind and an owner, whose text lives in a [`Pool`] the caller passes.
///
/// Tables of up to [`INDEXED_CAPACITY`] entries keep a hash index, so a
/// lookup costs one hash and a probe or two whatever the number of
/// entries; larger tables scan a dense array of 32-bit hashes. A table of
/// four entries or fewer compares ids directly.
#[derive(Clone, Debug)]
pub(crate) struct IdTable<K: Copy, const N: usize> {
    /// Each id's place in the pool, with its entry.
    ids: heapless::Vec<Slot<K>, N>,
    /// The low half of the hash of each id's decoded text, at the same
    /// position.
    hashes: heapless::Vec<u16, N>,
    /// Open addressing with linear probing: a slot holds a position in
    /// `ids`, or [`NO_ENTRY`]. Rebuilt when positions shift (removal).
    index: [u8; INDEX_SLOTS],
}

/// An entry as a table stores it (the owner packed into a `u16`).
#[derive(Clone, Copy, Debug)]
struct Slot<K> {
    span: Span,
    kind: K,
    owner: u16,
}

/// A packed owner: the parent agent.
const PARENT: u16 = u16::MAX;

pub(crate) const fn pack_owner(owner: Option<u16>) -> u16 {
    match owner {
        Some(i) if i < PARENT => i,
        _ => PARENT,
    }
}

pub(crate) const fn unpack_owner(owner: u16) -> Option<u16> {
    if owner == PARENT { None } else { Some(owner) }
}

impl<K: Copy> Slot<K> {
    const fn new(span: Span, entry: Entry<K>) -> Self {
        Slot {
            span,
            kind: entry.kind,
            owner: pack_owner(entry.owner),
        }
    }

    const fn entry(&self) -> (Span, Entry<K>) {
        (
            self.span,
            Entry {
                kind: self.kind,
                owner: unpack_owner(self.owner),
            },
        )
    }
}

/// Slots of the hash index (a power of two, at most 2^16: a slot is chosen
/// by the low bits of the hash the table keeps).
const INDEX_SLOTS: usize = 64;
/// Largest table that keeps an index: the index is at most half full.
pub(crate) const INDEXED_CAPACITY: usize = INDEX_SLOTS / 2;
/// An empty index slot.
const NO_ENTRY: u8 = u8::MAX;

impl<K: Copy + PartialEq, const N: usize> IdTable<K, N> {
    const INDEXED: bool = N <= INDEXED_CAPACITY;

    pub(crate) const fn new() -> Self {
        IdTable {
            ids: heapless::Vec::new(),
            hashes: heapless::Vec::new(),
            index: [NO_ENTRY; INDEX_SLOTS],
        }
    }

    /// Forgets every entry (the caller clears or compacts the pool).
    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        self.hashes.clear();
        self.index = [NO_ENTRY; INDEX_SLOTS];
    }

    /// Position of `id` with kind `kind`.
    pub(crate) fn find<const B: usize>(
        &self,
        pool: &Pool<B>,
        kind: K,
        id: JsonStr<'_>,
    ) -> Option<usize> {
        self.find_where(pool, id, |k| k == kind)
    }

    /// First position of `id` with a kind matching `pred`.
    pub(crate) fn find_where<const B: usize>(
        &self,
        pool: &Pool<B>,
        id: JsonStr<'_>,
        pred: impl Fn(K) -> bool,
    ) -> Option<usize> {
        // A few entries (the usual open-id table) are cheaper to compare
        // than to hash.
        if self.ids.len() <= 4 {
            return self
                .ids
                .iter()
                .position(|s| pred(s.kind) && pool.text(s.span) == id);
        }
        self.find_hashed(pool, id, id.text_hash(), pred)
    }

    /// [`find_where`](Self::find_where) with the id's hash known.
    pub(crate) fn find_hashed<const B: usize>(
        &self,
        pool: &Pool<B>,
        id: JsonStr<'_>,
        hash: u32,
        pred: impl Fn(K) -> bool,
    ) -> Option<usize> {
        let matches = |i: usize| {
            self.ids
                .get(i)
                .is_some_and(|s| pred(s.kind) && pool.text(s.span) == id)
        };
        let low = hash as u16;
        let same_hash = |i: usize| self.hashes.get(i) == Some(&low);
        if Self::INDEXED {
            // Every entry with this hash is in the probe run that starts at
            // its slot; the first position among the matches is the answer.
            let mut first = None;
            for slot in probe(hash) {
                let i = match self.index.get(slot) {
                    Some(&NO_ENTRY) | None => break,
                    Some(&i) => usize::from(i),
                };
                if same_hash(i) && first.is_none_or(|f| i < f) && matches(i) {
                    first = Some(i);
                }
            }
            return first;
        }
        (0..self.hashes.len()).find(|&i| same_hash(i) && matches(i))
    }

    pub(crate) fn get(&self, i: usize) -> Option<(Span, Entry<K>)> {
        self.ids.get(i).map(Slot::entry)
    }

    pub(crate) fn set_entry(&mut self, i: usize, entry: Entry<K>) {
        if let Some(s) = self.ids.get_mut(i) {
            *s = Slot::new(s.span, entry);
        }
    }

    /// Whether another entry fits (bytes aside).
    pub(crate) fn is_full(&self) -> bool {
        self.ids.is_full()
    }

    /// Appends `id`, copying its text into `pool`; returns its position.
    pub(crate) fn push<const B: usize>(
        &mut self,
        pool: &mut Pool<B>,
        id: JsonStr<'_>,
        entry: Entry<K>,
    ) -> Result<usize, Full> {
        if self.ids.is_full() {
            return Err(Full::Entries);
        }
        let span = pool.alloc_text(id)?;
        let hash = id.text_hash();
        let position = self.ids.len();
        if self.ids.push(Slot::new(span, entry)).is_err() || self.hashes.push(hash as u16).is_err()
        {
            self.ids.truncate(position);
            pool.release(span);
            return Err(Full::Entries);
        }
        if Self::INDEXED {
            self.index_entry(position, hash);
        }
        Ok(position)
    }

    /// Records position `i` (holding `hash`) in the first free slot of its
    /// probe run (the index is never more than half full).
    fn index_entry(&mut self, i: usize, hash: u32) {
        let Ok(i) = u8::try_from(i) else { return };
        for slot in probe(hash) {
            if let Some(free @ &mut NO_ENTRY) = self.index.get_mut(slot) {
                *free = i;
                return;
            }
        }
    }

    /// Rebuilds the index after positions changed (a slot depends only on
    /// a hash's low bits, which the table keeps).
    fn reindex(&mut self) {
        if Self::INDEXED {
            self.index = [NO_ENTRY; INDEX_SLOTS];
            for i in 0..self.hashes.len() {
                if let Some(&low) = self.hashes.get(i) {
                    self.index_entry(i, u32::from(low));
                }
            }
        }
    }

    /// Removes the entry at `i`, keeping the others in order; returns its
    /// span, which the caller releases from the pool.
    #[must_use]
    pub(crate) fn remove(&mut self, i: usize) -> Option<Span> {
        if i >= self.ids.len() || i >= self.hashes.len() {
            return None;
        }
        let slot = self.ids.remove(i);
        self.hashes.remove(i);
        self.reindex();
        Some(slot.span)
    }

    /// Follows the pool's compaction after `freed` was released.
    pub(crate) fn shift(&mut self, freed: Span) {
        for s in &mut self.ids {
            s.span = s.span.shifted(freed);
        }
    }

    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (Span, Entry<K>)> + '_ {
        self.ids.iter().map(Slot::entry)
    }
}

/// The index slots a hash probes, in order (all of them, once).
fn probe(hash: u32) -> impl Iterator<Item = usize> {
    let start = hash as usize;
    (0..INDEX_SLOTS).map(move |k| start.wrapping_add(k) % INDEX_SLOTS)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;

    fn text(raw: &[u8]) -> JsonStr<'_> {
        JsonStr::from_escaped(raw)
    }

    #[test]
    fn stores_json_text_and_compares_decoded() {
        let mut s = StoredStr::<9>::EMPTY;
        s.set_ascii(br"a\u0062").unwrap();
        assert_eq!(s.json().as_bytes(), br#""a\u0062""#);
        assert!(s.json().as_str().unwrap().eq_str("ab"));
        assert!(s.set_ascii(b"12345678").is_none());
        let mut pool = Pool::<16>::new();
        let a = pool.alloc_text(text(br"a\u0062")).unwrap();
        assert!(pool.text(a).eq_str("ab"));
        let b = pool.alloc(&[b"\"", b"x", b"\""]).unwrap();
        assert_eq!(pool.bytes(b), br#""x""#);
    }

    #[test]
    fn a_pool_compacts_and_spans_follow() {
        let mut pool = Pool::<8>::new();
        let a = pool.alloc_text(text(b"abc")).unwrap();
        let b = pool.alloc_text(text(b"de")).unwrap();
        let c = pool.alloc_text(text(b"fgh")).unwrap();
        assert_eq!(pool.alloc_text(text(b"x")), Err(Full::Bytes));
        pool.release(b);
        let (a, c) = (a.shifted(b), c.shifted(b));
        assert!(pool.text(a).eq_str("abc") && pool.text(c).eq_str("fgh"));
        assert_eq!(pool.free(), 2);
        let d = pool.alloc_text(text(b"ij")).unwrap();
        assert!(pool.text(d).eq_str("ij"));
    }

    #[test]
    fn table_capacity_is_exact() {
        let mut pool = Pool::<8>::new();
        let mut t = IdTable::<u8, 2>::new();
        let e = Entry {
            kind: 0,
            owner: None,
        };
        t.push(&mut pool, text(b"a"), e).unwrap();
        t.push(&mut pool, text(b"b"), e).unwrap();
        assert_eq!(t.push(&mut pool, text(b"c"), e), Err(Full::Entries));
        assert_eq!(t.find(&pool, 0, text(br"\u0062")), Some(1));
        assert_eq!(t.find(&pool, 1, text(b"b")), None);
        let freed = t.remove(0).unwrap();
        pool.release(freed);
        t.shift(freed);
        assert_eq!(t.find(&pool, 0, text(b"b")), Some(0));
        let mut t = IdTable::<u8, 8>::new();
        assert_eq!(t.push(&mut pool, text(b"12345678"), e), Err(Full::Bytes));
    }

    /// Random pushes and removals; every lookup must give the first
    /// matching position, as a plain scan would.
    fn agrees_with_a_scan<const N: usize>() {
        let ids: [&[u8]; 12] = [
            b"a",
            b"b",
            b"call-1",
            b"call-2",
            br"call-\u0031",
            b"msg-0001",
            b"msg-0002",
            b"0123456789abcdef",
            b"0123456789abcdeg",
            br"\u00e9t\u00e9",
            "\u{e9}t\u{e9}".as_bytes(),
            b"",
        ];
        let mut pool = Pool::<1024>::new();
        let mut t = IdTable::<u8, N>::new();
        let mut model: std::vec::Vec<(&[u8], u8)> = std::vec::Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..5000 {
            match next(10) {
                0..=4 if model.len() < N => {
                    let (id, kind) = (ids[next(ids.len())], next(3) as u8);
                    let e = Entry { kind, owner: None };
                    assert_eq!(t.push(&mut pool, text(id), e), Ok(model.len()));
                    model.push((id, kind));
                }
                5 | 6 if !model.is_empty() => {
                    let i = next(model.len());
                    let freed = t.remove(i).unwrap();
                    pool.release(freed);
                    t.shift(freed);
                    model.remove(i);
                }
                _ => {}
            }
            assert_eq!(t.iter().count(), model.len());
            for (i, (id, _)) in model.iter().enumerate() {
                assert_eq!(pool.bytes(t.get(i).unwrap().0), *id);
            }
            for id in ids {
                for kind in 0..3u8 {
                    let expected = model
                        .iter()
                        .position(|&(m, k)| k == kind && text(m) == text(id));
                    assert_eq!(t.find(&pool, kind, text(id)), expected);
                }
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "thousands of lookups: too slow under miri")]
    fn lookups_agree_with_a_scan() {
        agrees_with_a_scan::<8>();
        agrees_with_a_scan::<INDEXED_CAPACITY>();
        agrees_with_a_scan::<40>();
    }
}
