//! Re-lining a block the reference client cannot read: CR and CRLF line
//! ends become LF, and a bare `data` line (a field without a colon)
//! becomes `data:`. The block may come in two parts (the raw buffer's and
//! the chunk's). And the search that tells a chunk needs none of it.

use crate::output::encode::{BufferFull, Write};

/// Whether `chunk` is plain: no CR, and no bare `data` line after a LF or
/// at its start ([`no_bare_data`]), so its blocks go out as they are.
pub(super) fn plain(chunk: &[u8]) -> bool {
    memchr::memchr(b'\r', chunk).is_none() && no_bare_data(chunk)
}

/// No bare `data` line starts in `chunk` after a LF or at its start (one
/// at the start of a forwarded part is checked there, see
/// [`Emitter::forward`](super::emit::Emitter::forward)).
///
/// Fast path: it used to search for `data` + LF, but `data` starts nearly
/// every block, and a search for it (or for LF + `data` + LF) stops at
/// every block; `a` + LF is rare in JSON lines (which end in `}`), and each
/// one is then checked for a bare `data` line before it: at the start of
/// `chunk` or after a LF (the only places, besides a part's start, where
/// one can start in bytes without CR). `tests::plain_chunks_need_no_relining`
/// compares it with `relines::check` on every part of its chunks.
pub(super) fn no_bare_data(chunk: &[u8]) -> bool {
    if !crate::testing::fast_paths() {
        return memchr::memmem::find(chunk, b"data\n").is_none();
    }
    no_bare_data_after_lf(chunk)
}

/// [`no_bare_data`]'s fast path.
pub(super) fn no_bare_data_after_lf(chunk: &[u8]) -> bool {
    !memchr::memmem::find_iter(chunk, b"a\n").any(|i| {
        let end = i.saturating_add(1);
        let line = end.checked_sub(4).and_then(|start| {
            let before = start.checked_sub(1).and_then(|b| chunk.get(b));
            matches!(before, None | Some(b'\n')).then(|| chunk.get(start..end))?
        });
        line == Some(b"data")
    })
}

/// What [`walk`] sees.
enum Piece<'a> {
    /// Bytes of a line.
    Line(&'a [u8]),
    /// A line end (a CRLF is one); the line was a bare `data`.
    End { bare_data: bool },
}

/// How far the line so far is a bare `data`: `Some(n)`, it is the
/// first `n` bytes of `data`; `None`, it cannot be one.
pub(super) type Progress = Option<usize>;

/// A line not begun yet.
pub(super) const LINE_START: Progress = Some(0);

/// Walks the lines of `parts`, the first of which is `line` so far
/// (with `skip_lf`, a leading LF ends no line). Stops at the first
/// `Err`; else returns how far the last line (unended) is a `data`.
fn walk<E>(
    parts: [&[u8]; 2],
    skip_lf: bool,
    line: Progress,
    mut visit: impl FnMut(Piece<'_>) -> Result<(), E>,
) -> Result<Progress, E> {
    let mut after_cr = skip_lf;
    let mut data = line;
    for part in parts {
        let mut rest = part;
        while !rest.is_empty() {
            let k = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
            let (line, tail) = rest.split_at(k);
            if !line.is_empty() {
                after_cr = false;
                data = data.and_then(|n| {
                    let m = n.checked_add(line.len())?;
                    (b"data".get(n..m) == Some(line)).then_some(m)
                });
                visit(Piece::Line(line))?;
            }
            let Some((&c, tail)) = tail.split_first() else {
                break;
            };
            if !(c == b'\n' && after_cr) {
                visit(Piece::End {
                    bare_data: data == Some(4),
                })?;
            }
            after_cr = c == b'\r';
            data = LINE_START;
            rest = tail;
        }
    }
    Ok(data)
}

/// The bytes read differently to the reference client than to a
/// WHATWG parser (or start with the LF of a CRLF already written).
pub(super) struct Needed;

/// `Ok` with how far the last line is a `data` if `parts` (after a
/// line that is `line` so far) can go out as they are.
pub(super) fn check(parts: [&[u8]; 2], skip_lf: bool, line: Progress) -> Result<Progress, Needed> {
    if parts.iter().any(|p| memchr::memchr(b'\r', p).is_some())
        || (skip_lf && parts.iter().find(|p| !p.is_empty()).and_then(|p| p.first()) == Some(&b'\n'))
    {
        return Err(Needed);
    }
    walk(parts, false, line, |piece| match piece {
        Piece::End { bare_data: true } => Err(Needed),
        _ => Ok(()),
    })
}

/// Writes `parts` (after a line that is `line` so far) with LF line
/// ends and bare `data` lines as `data:`; returns how far the last
/// line is a `data`.
pub(super) fn write<W: Write + ?Sized>(
    parts: [&[u8]; 2],
    skip_lf: bool,
    line: Progress,
    out: &mut W,
) -> Result<Progress, BufferFull> {
    walk(parts, skip_lf, line, |piece| match piece {
        Piece::Line(line) => out.write_bytes(line),
        Piece::End { bare_data } => {
            if bare_data {
                out.write_bytes(b":")?;
            }
            out.write_bytes(b"\n")
        }
    })
}
