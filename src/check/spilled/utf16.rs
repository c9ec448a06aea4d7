//! Where a byte of a spilling payload is, in the UTF-16 units the
//! reference counts positions in.

/// UTF-16 units of bytes decoded as the WHATWG UTF-8 decoder decodes them
/// (each maximal invalid subpart is one U+FFFD), fed in pieces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Utf16Count {
    units: u32,
    /// Continuation bytes the current sequence still needs, and the range
    /// its next one must be in.
    needed: u8,
    lower: u8,
    upper: u8,
    /// The current sequence is four bytes long (two units).
    astral: bool,
}

impl Utf16Count {
    pub(crate) const fn new() -> Self {
        Utf16Count {
            units: 0,
            needed: 0,
            lower: 0x80,
            upper: 0xBF,
            astral: false,
        }
    }

    fn add(&mut self, units: u32) {
        self.units = self.units.saturating_add(units);
    }

    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        loop {
            if self.needed == 0 {
                let n = ascii_prefix(bytes);
                self.add(u32::try_from(n).unwrap_or(u32::MAX));
                bytes = bytes.get(n..).unwrap_or_default();
            }
            let Some((&b, rest)) = bytes.split_first() else {
                return;
            };
            self.byte(b);
            bytes = rest;
        }
    }

    fn byte(&mut self, b: u8) {
        if self.needed > 0 {
            if (self.lower..=self.upper).contains(&b) {
                self.needed = self.needed.saturating_sub(1);
                (self.lower, self.upper) = (0x80, 0xBF);
                if self.needed == 0 {
                    self.add(if self.astral { 2 } else { 1 });
                }
                return;
            }
            // The sequence is cut short: one U+FFFD, and `b` starts anew.
            self.add(1);
            *self = Utf16Count {
                units: self.units,
                ..Utf16Count::new()
            };
        }
        match b {
            0x00..=0x7F => self.add(1),
            0xC2..=0xDF => {
                self.needed = 1;
                self.astral = false;
            }
            0xE0..=0xEF => {
                self.needed = 2;
                self.astral = false;
                self.lower = if b == 0xE0 { 0xA0 } else { 0x80 };
                self.upper = if b == 0xED { 0x9F } else { 0xBF };
            }
            0xF0..=0xF4 => {
                self.needed = 3;
                self.astral = true;
                self.lower = if b == 0xF0 { 0x90 } else { 0x80 };
                self.upper = if b == 0xF4 { 0x8F } else { 0xBF };
            }
            _ => self.add(1),
        }
    }

    /// Units before the next byte: an unfinished sequence there is cut
    /// short by it (a U+FFFD) unless it continues it, which an error byte
    /// of JSON text never does.
    pub(crate) fn before_next(&self) -> u32 {
        self.units.saturating_add(u32::from(self.needed > 0))
    }
}

/// The length of the ASCII run `bytes` starts with.
fn ascii_prefix(bytes: &[u8]) -> usize {
    let mut n = 0usize;
    for word in bytes.chunks_exact(8) {
        let w = word.iter().fold(0u64, |w, &b| w << 8 | u64::from(b));
        if w & 0x8080_8080_8080_8080 != 0 {
            break;
        }
        n = n.saturating_add(8);
    }
    let rest = bytes.get(n..).unwrap_or_default();
    n.saturating_add(rest.iter().take_while(|b| b.is_ascii()).count())
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::vec::Vec;

    /// The count agrees with the standard library's lossy decoding (which
    /// replaces maximal subparts, as WHATWG does) however the bytes are cut.
    #[test]
    fn utf16_count_is_the_lossy_decoding_under_every_split() {
        let texts: [&[u8]; 7] = [
            "abcdefghijklmnop\u{e9}qrstuvwxyz012345678\u{1F600}9abcdefgh".as_bytes(),
            "a\u{e9}\u{20ac}\u{1F600}z".as_bytes(),
            b"\xff\x80\xc3\xe2\x82\xf0\x9f\x98x",
            b"\xe0\x80\xed\xa0\x80\xf4\x90\x80\x80",
            b"\xc3\xa9\xc3",
            b"\xf0\x9f\x98\x80\xf0\x9f",
            b"",
        ];
        for text in texts {
            let lossy = std::string::String::from_utf8_lossy(text);
            let want = lossy.encode_utf16().count() as u32;
            for cut in 0..=text.len() {
                let mut c = Utf16Count::new();
                c.feed(&text[..cut]);
                c.feed(&text[cut..]);
                let ends_open = c.needed > 0;
                assert_eq!(
                    c.units + u32::from(ends_open),
                    want,
                    "{text:?} cut at {cut}"
                );
            }
            let ones: Vec<&[u8]> = text.chunks(1).collect();
            let mut c = Utf16Count::new();
            ones.iter().for_each(|b| c.feed(b));
            assert_eq!(c.before_next(), want);
        }
    }
}
