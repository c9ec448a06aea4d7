//! The fuzzer's bytes as draws, with `arbitrary`'s semantics: a cursor
//! that has run out gives the start of every range and `false`, so a
//! generator reading zeros stops and closes up.

/// A cursor over the input bytes.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// A cursor over `bytes`.
    pub const fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes }
    }

    /// The bytes not drawn yet.
    pub const fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    /// Nothing is left to draw.
    pub const fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    /// An integer in `lo..=hi` (`lo` once the input has run out), from as
    /// many bytes as the range needs.
    pub fn int_in_range(&mut self, lo: u32, hi: u32) -> u32 {
        let span = u64::from(hi.saturating_sub(lo)).saturating_add(1);
        if span == 1 {
            return lo;
        }
        let mut value = 0u64;
        let mut need = span.saturating_sub(1);
        while need > 0 && !self.is_empty() {
            value = value.wrapping_shl(8) | u64::from(self.byte());
            need = need.wrapping_shr(8);
        }
        let offset = value.checked_rem(span).unwrap_or(0);
        lo.saturating_add(u32::try_from(offset).unwrap_or(0))
    }

    /// `true` with probability about `num / den` (`false` once the input
    /// has run out).
    pub fn ratio(&mut self, num: u8, den: u8) -> bool {
        if self.is_empty() || den == 0 {
            return false;
        }
        let b = self.byte();
        u32::from(b).checked_rem(u32::from(den)).unwrap_or(0) < u32::from(num)
    }

    /// A bool (`false` once the input has run out).
    pub fn bool(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    /// An index below `n` (`0` once the input has run out, or if `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let hi = u32::try_from(n.saturating_sub(1)).unwrap_or(u32::MAX);
        self.int_in_range(0, hi) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_cursor_gives_the_start_of_every_range() {
        let mut c = Cursor::new(&[]);
        assert_eq!(c.int_in_range(3, 9), 3);
        assert!(!c.bool() && !c.ratio(1, 1));
        assert_eq!(c.index(5), 0);
    }

    #[test]
    fn draws_stay_in_range() {
        let bytes: [u8; 64] = core::array::from_fn(|i| (i * 37) as u8);
        let mut c = Cursor::new(&bytes);
        while !c.is_empty() {
            let n = c.int_in_range(2, 7);
            assert!((2..=7).contains(&n));
            assert!(c.index(3) < 3);
        }
    }
}
