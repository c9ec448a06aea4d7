//! The framing layer: how a generated event's JSON becomes SSE bytes
//! (line ends, fields, comments, split `data:` lines), the envelope that
//! ends a stream, and the push cut points — each drawn apart from the
//! events, so one stream of events can be framed and cut many ways.

use super::write::Out;

/// Line ends a stream's frames use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LineEnds {
    /// `\n` (what the reference splits on).
    Lf,
    /// `\r\n`.
    CrLf,
    /// A lone `\r`.
    Cr,
    /// Each frame one of the three.
    Mixed,
}

/// How a stream's events are framed. Each option is used at some frames,
/// chosen by `seed`. The reference reads only LF line ends as WHATWG does
/// (it splits on `\n\n`); this crate reads all three.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Framing {
    /// The line ends.
    pub line_ends: LineEnds,
    /// `data:` without the space after the colon.
    pub no_space: bool,
    /// `event:`, `id:` and `retry:` lines in a frame.
    pub fields: bool,
    /// Comment lines in a frame, and keep-alive blocks between frames.
    pub comments: bool,
    /// An event's JSON over several `data:` lines (split between members).
    pub split: bool,
    /// A byte order mark before the first frame.
    pub bom: bool,
    /// Picks the frames each option is used at, and the push cut points.
    pub seed: u32,
}

impl Framing {
    /// `data: {json}` and a blank line, every frame, LF line ends.
    pub const PLAIN: Framing = Framing {
        line_ends: LineEnds::Lf,
        no_space: false,
        fields: false,
        comments: false,
        split: false,
        bom: false,
        seed: 0,
    };
}

/// xorshift32: the framing's own draws, apart from the input's.
pub(super) fn next(seed: &mut u32) -> u32 {
    let mut x = *seed | 1;
    x ^= x.wrapping_shl(13);
    x ^= x.wrapping_shr(17);
    x ^= x.wrapping_shl(5);
    *seed = x;
    x
}

/// Writes frames as a [`Framing`] says.
pub(super) struct Framer {
    framing: Framing,
    /// The line end of the frame being written.
    nl: &'static [u8],
}

impl Framer {
    pub(super) fn new(framing: Framing) -> Self {
        Framer { framing, nl: b"\n" }
    }

    fn draw(&mut self) -> u32 {
        next(&mut self.framing.seed)
    }

    /// Picks the next frame's line end.
    fn line_end(&mut self) {
        let ends: [&'static [u8]; 3] = [b"\n", b"\r\n", b"\r"];
        let i = match self.framing.line_ends {
            LineEnds::Lf => 0,
            LineEnds::CrLf => 1,
            LineEnds::Cr => 2,
            LineEnds::Mixed => (self.draw() % 3) as usize,
        };
        self.nl = ends.get(i).copied().unwrap_or(b"\n");
    }

    fn line(&self, out: &mut Out<'_>, bytes: &[u8]) {
        out.raw(bytes);
        out.raw(self.nl);
    }

    /// Everything of a frame before its JSON: keep-alives, fields and
    /// comments, and the first `data:`.
    pub(super) fn open(&mut self, out: &mut Out<'_>, index: u32) {
        self.line_end();
        let f = self.framing;
        if f.comments && self.draw() & 3 == 0 {
            self.line(out, b": keep-alive");
            out.raw(self.nl);
        }
        if f.fields && self.draw() & 1 == 0 {
            self.line(out, b"event: agui");
            out.raw(b"id: ");
            out.number(index);
            out.raw(self.nl);
            self.line(out, b"retry: 1000");
        }
        if f.comments && self.draw() & 3 == 0 {
            self.line(out, b": a comment");
        }
        out.raw(self.data());
    }

    fn data(&self) -> &'static [u8] {
        if self.framing.no_space {
            b"data:"
        } else {
            b"data: "
        }
    }

    /// The stream's start: a byte order mark, if the framing has one.
    pub(super) fn start(&self, out: &mut Out<'_>) {
        if self.framing.bom {
            out.raw("\u{feff}".as_bytes());
        }
    }

    /// Ends a `data:` line and starts the next one.
    pub(super) fn next_data_line(&self, out: &mut Out<'_>) {
        out.raw(self.nl);
        out.raw(self.data());
    }

    /// A frame's end: the blank line.
    pub(super) fn close(&self, out: &mut Out<'_>) {
        out.raw(self.nl);
        out.raw(self.nl);
    }

    /// A whole frame holding `json`, split over `data:` lines (between
    /// members) where the framing says.
    pub(super) fn frame(&mut self, out: &mut Out<'_>, index: u32, json: &[u8]) {
        self.open(out, index);
        let mut from = 0usize;
        if self.framing.split {
            // After a comma outside strings, before a member's name.
            let (mut in_string, mut escape) = (false, false);
            for (i, w) in json.windows(2).enumerate() {
                let (Some(&b), Some(&after)) = (w.first(), w.get(1)) else {
                    continue;
                };
                if in_string {
                    match b {
                        _ if escape => escape = false,
                        b'\\' => escape = true,
                        b'"' => in_string = false,
                        _ => {}
                    }
                    continue;
                }
                if b == b'"' {
                    in_string = true;
                } else if b == b',' && after == b'"' && self.draw() & 1 == 0 {
                    let at = i.saturating_add(1);
                    out.raw(json.get(from..at).unwrap_or_default());
                    self.next_data_line(out);
                    from = at;
                }
            }
        }
        out.raw(json.get(from..).unwrap_or_default());
        self.close(out);
    }

    /// The envelope: `: agui-gen <hex of input>` and a blank line.
    pub(super) fn envelope(&mut self, out: &mut Out<'_>, input: &[u8]) {
        self.line_end();
        out.raw(ENVELOPE);
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for &b in input {
            let hi = HEX.get(usize::from(b >> 4)).copied().unwrap_or(b'0');
            let lo = HEX.get(usize::from(b & 15)).copied().unwrap_or(b'0');
            out.raw(&[hi, lo]);
        }
        self.close(out);
    }
}

/// How the envelope comment starts.
pub(super) const ENVELOPE: &[u8] = b": agui-gen ";

/// The bytes an envelope for `input` takes (CRLF line ends).
pub(super) const fn envelope_len(input: usize) -> usize {
    ENVELOPE
        .len()
        .saturating_add(input.saturating_mul(2))
        .saturating_add(4)
}

/// The generator input a stream's envelope carries, decoded into `into`;
/// its length. `None` if `stream` has no envelope, or `into` is too small.
///
/// ```
/// # use agui_stream::generator::{self, GenOptions};
/// let input = [3u8, 141, 59, 26, 5, 35, 89, 79];
/// let mut out = [0u8; 8192];
/// let g = generator::generate(&input, &mut out);
/// let mut back = [0u8; 8];
/// let n = generator::envelope(&out[..g.len], &mut back).unwrap();
/// assert_eq!(&back[..n], &input);
/// ```
pub fn envelope(stream: &[u8], into: &mut [u8]) -> Option<usize> {
    let at = memchr::memmem::rfind(stream, ENVELOPE)?;
    let hex = stream.get(at.saturating_add(ENVELOPE.len())..)?;
    let end = hex
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(hex.len());
    let hex = hex.get(..end)?;
    let n = hex.len() / 2;
    let into = into.get_mut(..n)?;
    for (dst, pair) in into.iter_mut().zip(hex.chunks_exact(2)) {
        let digit = |b: u8| match b {
            b'0'..=b'9' => b.saturating_sub(b'0'),
            _ => (b | 0x20).saturating_sub(b'a').saturating_add(10),
        };
        let (hi, lo) = (pair.first()?, pair.get(1)?);
        *dst = digit(*hi).wrapping_shl(4) | digit(*lo);
    }
    Some(n)
}

/// A stream cut into pushes: single bytes, short and long pieces, and
/// the whole rest, drawn from a seed (see [`Generated::pieces`]).
///
/// [`Generated::pieces`]: super::Generated::pieces
#[derive(Clone, Debug)]
pub struct Pieces<'s> {
    rest: &'s [u8],
    seed: u32,
}

impl<'s> Pieces<'s> {
    /// `stream` cut at the points `seed` draws.
    pub const fn new(stream: &'s [u8], seed: u32) -> Self {
        Pieces { rest: stream, seed }
    }
}

impl<'s> Iterator for Pieces<'s> {
    type Item = &'s [u8];

    fn next(&mut self) -> Option<&'s [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let r = next(&mut self.seed);
        let len = match r & 7 {
            0 => 1,
            1..=3 => ((r >> 3) % 16).saturating_add(1),
            4..=6 => ((r >> 3) % 512).saturating_add(1),
            _ => u32::MAX,
        };
        let at = (len as usize).min(self.rest.len());
        let (piece, rest) = self.rest.split_at(at);
        self.rest = rest;
        Some(piece)
    }
}
