//! `impl Arbitrary` (feature `arbitrary`, with `std`): a cargo-fuzz target
//! takes a configuration or a whole generated case as its input type.

extern crate std;

use std::vec;
use std::vec::Vec;

use arbitrary::{Arbitrary, Result, Unstructured};

use super::{Cursor, Expected, GenConfig, GenOptions, Generated, Pieces, generate_with};
use crate::protocol::dialect::Dialect;

/// Bytes a configuration draws at most.
const CONFIG_BYTES: usize = 16;

/// Output room for one case: the largest large value, and long runs.
const CASE_BYTES: usize = 256 << 10;

impl<'a> Arbitrary<'a> for GenConfig {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let bytes = u.bytes(u.len().min(CONFIG_BYTES))?;
        Ok(GenConfig::draw(&mut Cursor::new(bytes)))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (0, Some(CONFIG_BYTES))
    }
}

/// A generated stream with its verdict: the input type of a fuzz target
/// for an AG-UI consumer. It takes all the fuzzer's bytes; about half the
/// cases carry one violation ([`Expected`] says which, and where).
///
/// ```
/// use agui_stream::generator::GeneratedStream;
/// use arbitrary::{Arbitrary, Unstructured};
/// let case = GeneratedStream::arbitrary_take_rest(Unstructured::new(&[9u8; 64])).unwrap();
/// let mut seen = Vec::new();
/// for piece in case.pieces() {
///     seen.extend_from_slice(piece);
/// }
/// assert_eq!(seen, case.bytes);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedStream {
    /// The stream's bytes (SSE).
    pub bytes: Vec<u8>,
    /// The dialect it is valid in (up to its violation).
    pub dialect: Dialect,
    /// The configuration drawn.
    pub config: GenConfig,
    /// Event frames.
    pub events: u32,
    /// The verdict it must get.
    pub expected: Expected,
}

impl GeneratedStream {
    /// The case `input` drives, with `options`.
    pub fn new(input: &[u8], options: GenOptions) -> Self {
        let mut out = vec![0u8; CASE_BYTES];
        let g: Generated = generate_with(input, &mut out, options);
        out.truncate(g.len);
        GeneratedStream {
            bytes: out,
            dialect: g.dialect,
            config: g.config,
            events: g.events,
            expected: g.expected,
        }
    }

    /// The stream cut into pushes ([`Generated::pieces`]).
    pub fn pieces(&self) -> Pieces<'_> {
        self.config.pieces(&self.bytes)
    }
}

impl<'a> Arbitrary<'a> for GeneratedStream {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let input = u.bytes(u.len())?;
        Ok(GeneratedStream::new(
            input,
            GenOptions::new().violations(true),
        ))
    }

    fn arbitrary_take_rest(mut u: Unstructured<'a>) -> Result<Self> {
        Self::arbitrary(&mut u)
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (0, None)
    }
}
