//! Fixed-capacity storage for ids the later stages must remember.
//!
//! An id is kept as the JSON string it arrived as, quotes included, so a
//! stored id is itself a [`RawJson`] value that synthesized events can
//! borrow. Ids compare by decoded text, as JavaScript compares strings.

use crate::json::RawJson;
use crate::string::JsonStr;

/// An id longer than the storage allows (its JSON text, quotes included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLong;

/// One string of at most `L` bytes of JSON text.
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

    /// Copies `s` (as `"…"`).
    pub(crate) fn new(s: JsonStr<'_>) -> Result<Self, TooLong> {
        let mut out = Self::EMPTY;
        out.set(s)?;
        Ok(out)
    }

    /// Replaces the contents with `s` (as `"…"`).
    /// Whether `s`, quotes included, fits `L` bytes.
    pub(crate) fn fits(s: JsonStr<'_>) -> bool {
        s.raw().len().saturating_add(2) <= L
    }

    pub(crate) fn set(&mut self, s: JsonStr<'_>) -> Result<(), TooLong> {
        let raw = s.raw();
        let len = raw.len().checked_add(2).ok_or(TooLong)?;
        let stored_len = u16::try_from(len).map_err(|_| TooLong)?;
        let dst = self.bytes.get_mut(..len).ok_or(TooLong)?;
        let (open, rest) = dst.split_first_mut().ok_or(TooLong)?;
        let (close, middle) = rest.split_last_mut().ok_or(TooLong)?;
        *open = b'"';
        *close = b'"';
        middle.copy_from_slice(raw);
        self.len = stored_len;
        Ok(())
    }

    /// Replaces the contents with plain ASCII text needing no escapes.
    pub(crate) fn set_ascii(&mut self, text: &[u8]) -> Result<(), TooLong> {
        self.set(JsonStr::from_escaped(text))
    }

    /// The stored string as a JSON value.
    pub(crate) fn json(&self) -> RawJson<'_> {
        RawJson::trusted(self.bytes.get(..usize::from(self.len)).unwrap_or_default())
    }

    /// The stored string.
    pub(crate) fn text(&self) -> JsonStr<'_> {
        let end = usize::from(self.len).saturating_sub(1);
        let inner = self.bytes.get(1..end).unwrap_or_default();
        JsonStr::from_escaped(inner)
    }
}

/// What an entry of an [`IdTable`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry<K> {
    pub(crate) kind: K,
    /// Index of the owning subagent's id in the run's [`IdTable`] of
    /// subagent names, or `None` for the parent agent.
    pub(crate) owner: Option<u16>,
}

/// A fixed-capacity, insertion-ordered table of ids, each with a kind and
/// an owner.
///
/// Tables of up to [`INDEXED_CAPACITY`] entries (the open-id tables) keep a
/// hash index, so a lookup costs one hash and a probe or two whatever the
/// number of entries; larger tables (the owner table) scan a dense array of
/// 32-bit hashes. A table of four entries or fewer compares ids directly.
#[derive(Clone, Debug)]
pub(crate) struct IdTable<K: Copy, const N: usize, const L: usize> {
    /// Each id with its entry.
    ids: heapless::Vec<(StoredStr<L>, Entry<K>), N>,
    /// The hash of each id's decoded text, at the same position.
    hashes: heapless::Vec<u32, N>,
    /// Open addressing with linear probing: a slot holds a position in
    /// `ids`, or [`NO_ENTRY`]. Rebuilt when positions shift (removal).
    index: [u8; INDEX_SLOTS],
}

/// Slots of the hash index (a power of two).
const INDEX_SLOTS: usize = 64;
/// Largest table that keeps an index: the index is at most half full.
pub(crate) const INDEXED_CAPACITY: usize = INDEX_SLOTS / 2;
/// An empty index slot.
const NO_ENTRY: u8 = u8::MAX;

/// The table is full or the id is too long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    Entries,
    IdLength,
}

impl From<TooLong> for Full {
    fn from(_: TooLong) -> Self {
        Full::IdLength
    }
}

impl<K: Copy + PartialEq, const N: usize, const L: usize> IdTable<K, N, L> {
    const INDEXED: bool = N <= INDEXED_CAPACITY;

    pub(crate) const fn new() -> Self {
        IdTable {
            ids: heapless::Vec::new(),
            hashes: heapless::Vec::new(),
            index: [NO_ENTRY; INDEX_SLOTS],
        }
    }

    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        self.hashes.clear();
        self.index = [NO_ENTRY; INDEX_SLOTS];
    }

    /// Position of `id` with kind `kind`.
    pub(crate) fn find(&self, kind: K, id: JsonStr<'_>) -> Option<usize> {
        self.find_where(id, |k| k == kind)
    }

    /// First position of `id` with a kind matching `pred`.
    pub(crate) fn find_where(&self, id: JsonStr<'_>, pred: impl Fn(K) -> bool) -> Option<usize> {
        // A few entries (the usual open-id table) are cheaper to compare
        // than to hash.
        if self.ids.len() <= 4 {
            return self
                .ids
                .iter()
                .position(|(s, e)| pred(e.kind) && s.text() == id);
        }
        let matches = |i: usize| {
            self.ids
                .get(i)
                .is_some_and(|(s, e)| pred(e.kind) && s.text() == id)
        };
        let hash = id.text_hash();
        let same_hash = |i: usize| self.hashes.get(i) == Some(&hash);
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

    pub(crate) fn get(&self, i: usize) -> Option<(&StoredStr<L>, Entry<K>)> {
        self.ids.get(i).map(|(s, e)| (s, *e))
    }

    pub(crate) fn set_entry(&mut self, i: usize, entry: Entry<K>) {
        if let Some((_, e)) = self.ids.get_mut(i) {
            *e = entry;
        }
    }

    /// Appends `id`; returns its position.
    pub(crate) fn push(&mut self, id: JsonStr<'_>, entry: Entry<K>) -> Result<usize, Full> {
        let s = StoredStr::new(id)?;
        let hash = id.text_hash();
        let position = self.ids.len();
        self.ids.push((s, entry)).map_err(|_| Full::Entries)?;
        if self.hashes.push(hash).is_err() {
            self.ids.truncate(position);
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

    /// Rebuilds the index after positions changed.
    fn reindex(&mut self) {
        if Self::INDEXED {
            self.index = [NO_ENTRY; INDEX_SLOTS];
            for i in 0..self.hashes.len() {
                if let Some(&hash) = self.hashes.get(i) {
                    self.index_entry(i, hash);
                }
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether `id` could be pushed now.
    pub(crate) fn room_for(&self, id: JsonStr<'_>) -> Result<(), Full> {
        if !StoredStr::<L>::fits(id) {
            return Err(Full::IdLength);
        }
        if self.ids.is_full() {
            return Err(Full::Entries);
        }
        Ok(())
    }

    /// Drops the entries from position `len` on.
    pub(crate) fn truncate(&mut self, len: usize) {
        if len < self.ids.len() {
            self.ids.truncate(len);
            self.hashes.truncate(len);
            self.reindex();
        }
    }

    /// Removes the entry at `i`, keeping the others in order.
    pub(crate) fn remove(&mut self, i: usize) {
        if i < self.ids.len() && i < self.hashes.len() {
            self.ids.remove(i);
            self.hashes.remove(i);
            self.reindex();
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&StoredStr<L>, Entry<K>)> {
        self.ids.iter().map(|(s, e)| (s, *e))
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

    #[test]
    fn stores_json_text_and_compares_decoded() {
        let s = StoredStr::<16>::new(JsonStr::from_escaped(br"a\u0062")).unwrap();
        assert_eq!(s.json().as_bytes(), br#""a\u0062""#);
        assert!(s.text().eq_str("ab"));
        assert!(StoredStr::<8>::new(JsonStr::from_escaped(b"1234567")).is_err());
        assert!(StoredStr::<8>::new(JsonStr::from_escaped(b"123456")).is_ok());
    }

    #[test]
    fn table_capacity_is_exact() {
        let mut t = IdTable::<u8, 2, 8>::new();
        let e = Entry {
            kind: 0,
            owner: None,
        };
        t.push(JsonStr::from_escaped(b"a"), e).unwrap();
        t.push(JsonStr::from_escaped(b"b"), e).unwrap();
        assert_eq!(t.push(JsonStr::from_escaped(b"c"), e), Err(Full::Entries));
        assert_eq!(t.find(0, JsonStr::from_escaped(br"\u0062")), Some(1));
        assert_eq!(t.find(1, JsonStr::from_escaped(b"b")), None);
        t.remove(0);
        assert_eq!(t.find(0, JsonStr::from_escaped(b"b")), Some(0));
    }

    fn text(raw: &[u8]) -> JsonStr<'_> {
        JsonStr::from_escaped(raw)
    }

    /// Random pushes, removals and truncations; every lookup must give the
    /// first matching position, as a plain scan would.
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
        let mut t = IdTable::<u8, N, 24>::new();
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
                    assert_eq!(t.push(text(id), e), Ok(model.len()));
                    model.push((id, kind));
                }
                5 if !model.is_empty() => {
                    let i = next(model.len());
                    t.remove(i);
                    model.remove(i);
                }
                6 => {
                    let len = next(model.len() + 1);
                    t.truncate(len);
                    model.truncate(len);
                }
                _ => {}
            }
            assert_eq!(t.len(), model.len());
            for id in ids {
                for kind in 0..3u8 {
                    let expected = model
                        .iter()
                        .position(|&(m, k)| k == kind && text(m) == text(id));
                    assert_eq!(t.find(kind, text(id)), expected);
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
