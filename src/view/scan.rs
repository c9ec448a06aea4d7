//! The byte scanners the JSON validator and the cursors over valid JSON
//! share: whitespace, digit runs, and the one SWAR search for the bytes
//! that end a string's plain run.

// Positions here are indices into a slice (at most `isize::MAX`), advanced
// by at most eight bytes past a byte just read, so `i + k` cannot overflow.
#![allow(clippy::arithmetic_side_effects)]

#[inline]
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[inline(always)]
pub(crate) fn skip_ws(src: &[u8], mut i: usize) -> usize {
    // Every whitespace byte is at most b' ': one comparison settles the
    // usual case, a token right here.
    while let Some(&b) = src.get(i) {
        if b > b' ' || !is_ws(b) {
            break;
        }
        i += 1;
    }
    i
}

/// Position after the run of ASCII digits starting at `i`. Eight bytes
/// are tested at a time (timestamps have 13 digits): a byte is a digit if
/// its high nibble is 3 and adding 6 does not carry out of its low nibble.
pub(crate) fn digits_end(src: &[u8], mut i: usize) -> usize {
    const NIBBLES: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    const SIXES: u64 = 0x0606_0606_0606_0606;
    while let Some(chunk) = src.get(i..i + 8) {
        let w = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or([0; 8]));
        if w & NIBBLES != THREES || (w.wrapping_add(SIXES)) & NIBBLES != THREES {
            break;
        }
        i += 8;
    }
    while src.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// wasm32 with SIMD: [`special_byte`]'s search sixteen bytes at a time
/// (the wasm intrinsics are safe functions; the two words compile to one
/// `v128.load`). Returns the hit, or where fewer than sixteen bytes are
/// left (the word loop goes on from there).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn special_block(src: &[u8], mut j: usize, controls: bool) -> usize {
    use core::arch::wasm32::{i8x16_bitmask, i8x16_eq, u8x16_lt, u8x16_splat, u64x2, v128_or};
    while let Some(block) = src.get(j..j + 16) {
        let (lo, hi) = block.split_at(8);
        let word = |w: &[u8]| u64::from_le_bytes(<[u8; 8]>::try_from(w).unwrap_or([0; 8]));
        let v = u64x2(word(lo), word(hi));
        let mut hits = v128_or(
            i8x16_eq(v, u8x16_splat(b'"')),
            i8x16_eq(v, u8x16_splat(b'\\')),
        );
        if controls {
            hits = v128_or(hits, u8x16_lt(v, u8x16_splat(0x20)));
        }
        let mask = i8x16_bitmask(hits);
        if mask != 0 {
            return j + mask.trailing_zeros() as usize;
        }
        j += 16;
    }
    j
}

/// Position of the first byte at or after `j` that is a quote, a backslash
/// or (with `controls`) below 0x20; `src.len()` if none.
///
/// Strings in AG-UI traffic are short (ids, deltas of a few characters), so
/// a call into a vectorized search costs more than it saves; this tests
/// eight bytes at a time in a `u64` instead (SWAR). The classic zero-byte
/// test can flag bytes above a real hit, never below it, so the lowest flag
/// is exact.
#[inline(always)]
pub(crate) fn special_byte(src: &[u8], mut j: usize, controls: bool) -> usize {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        j = special_block(src, j, controls);
    }
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(chunk) = src.get(j..j + 8) {
        let w = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or([0; 8]));
        let mut hits =
            zero_byte(w ^ (ONES * u64::from(b'"'))) | zero_byte(w ^ (ONES * u64::from(b'\\')));
        if controls {
            hits |= w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        }
        if hits != 0 {
            return j + (hits.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    while let Some(&b) = src.get(j) {
        if b == b'"' || b == b'\\' || (controls && b < 0x20) {
            return j;
        }
        j += 1;
    }
    j
}

/// True if `bytes` holds no backslash and no byte above 0x7F: JSON string
/// contents that are their own text, and already in `JSON.stringify`
/// form. Eight bytes at a time; the zero-byte test flags a byte above a
/// real backslash at worst, never one where there is none.
#[inline]
pub(crate) fn plain_ascii(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(<[u8; 8]>::try_from(word).unwrap_or([0; 8]));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        if (w | (backslash.wrapping_sub(ONES) & !backslash)) & HIGH != 0 {
            return false;
        }
    }
    words.remainder().iter().all(|&b| b < 0x80 && b != b'\\')
}

/// `a == b`, sixteen bytes at a time (wasm has no vectorized `memcmp`: a
/// slice comparison there is a call to a byte loop). The last block
/// overlaps the one before it where the length is not a multiple of 16.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let block = |s: &[u8], i: usize| {
        s.get(i..i + 16)
            .and_then(|w| <[u8; 16]>::try_from(w).ok())
            .map(u128::from_le_bytes)
    };
    let Some(last) = a.len().checked_sub(16) else {
        let word = |s: &[u8], i: usize| {
            s.get(i..i + 8)
                .and_then(|w| <[u8; 8]>::try_from(w).ok())
                .map(u64::from_le_bytes)
        };
        if let Some(last) = a.len().checked_sub(8) {
            return word(a, 0) == word(b, 0) && word(a, last) == word(b, last);
        }
        // Shorter than a word: every byte, without an early exit (which
        // the compiler would turn back into a `memcmp` call).
        return a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0;
    };
    let mut i = 0;
    while i < last {
        if block(a, i) != block(b, i) {
            return false;
        }
        i += 16;
    }
    block(a, last) == block(b, last)
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_bytes_is_slice_equality() {
        let text = b"0123456789abcdefghijklmnopqrstuvwxyz";
        for len in 0..text.len() {
            for at in 0..len {
                let a = &text[..len];
                let mut b = a.to_vec();
                assert!(super::same_bytes(a, &b));
                b[at] ^= 1;
                assert!(!super::same_bytes(a, &b), "{len} {at}");
            }
            assert!(!super::same_bytes(&text[..len], &text[..len + 1]));
        }
    }
}
