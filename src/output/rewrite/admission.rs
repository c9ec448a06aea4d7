//! Admission: how much of a push goes to the pipeline. Before a block is
//! read, its end is found ([`BlockEnd`], a look-ahead that agrees with the
//! framer), the writer's room is checked against the block's worst case
//! ([`Rewriter::frame_bound`]), and its size against
//! [`Options::max_event_bytes`](super::Options::max_event_bytes): take the
//! blocks that fit, wait for room, or end a block too large.

use crate::check::guard::MAX_MATCH;
use crate::output::encode::Write;
use crate::pipeline::{LANE_BYTES, LANES};

use super::relines;
use super::repair::{CLOSE_EVENT_BYTES, RUN_ERROR_BYTES};
use super::{Pushed, RewriteError, Rewriter, State};

/// Room a synthesized event may need beyond its share of the frame's
/// bytes: its members and ids (at most [`LANE_BYTES`] of them across a
/// frame's events), for each of up to `LANES + 3` events of one frame, and
/// a final `RUN_ERROR` with its message.
const FRAME_SLACK: usize = (LANES + 3) * 192 + 3 * LANE_BYTES + RUN_ERROR_BYTES;

/// What admission lets through of a push's input from where it stands.
enum Admit {
    /// The input up to `end`: the blocks that complete in it and fit the
    /// room, and after them the start of one that does not complete.
    /// `stop`: why it stopped short of the input's end, if it did.
    Take {
        end: usize,
        scan: BlockEnd,
        stop: Option<Stop>,
    },
    /// The first block needs more room than the writer has, and nothing
    /// was read yet.
    Full { needed: usize },
    /// The first block is larger than the limit (at least `len` bytes), or
    /// outgrows the raw buffer while guard rules are on (`unguarded`: its
    /// text cannot go out ahead of the rules).
    TooLarge { len: usize, unguarded: bool },
}

/// Why admission stopped short of a push's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Before a block the writer has no room for.
    Room,
    /// Where a block outgrew the raw buffer ([`Options::hold`](super::Options::hold)).
    Held,
}

/// A block-end scanner that runs ahead of the framer: where the next blank
/// line is, so that the room a block needs is known before it is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct BlockEnd {
    /// The last byte seen ended a line (or nothing was seen).
    at_line_start: bool,
    /// The last byte seen was a CR (a following LF belongs to it).
    after_cr: bool,
}

impl BlockEnd {
    pub(super) const fn new() -> Self {
        BlockEnd {
            at_line_start: true,
            after_cr: false,
        }
    }

    /// The scanner's state after any bytes that end in `last`.
    pub(super) const fn after(last: u8) -> Self {
        BlockEnd {
            at_line_start: matches!(last, b'\n' | b'\r'),
            after_cr: last == b'\r',
        }
    }

    /// The length of `bytes`' prefix that ends the current block (at its
    /// blank line), or `None` if the block goes on past `bytes`. With
    /// `no_cr`, the caller knows `bytes` has no CR.
    pub(super) fn next(&mut self, bytes: &[u8], no_cr: bool) -> Option<usize> {
        if no_cr && !self.after_cr {
            return self.next_lf(bytes);
        }
        let mut from = 0;
        loop {
            let rest = bytes.get(from..)?;
            let Some(k) = memchr::memchr2(b'\n', b'\r', rest) else {
                if !rest.is_empty() {
                    self.at_line_start = false;
                    self.after_cr = false;
                }
                return None;
            };
            let i = from.saturating_add(k);
            let c = rest.get(k).copied();
            if k == 0 && c == Some(b'\n') && self.after_cr {
                // The LF of a CRLF.
                self.after_cr = false;
                from = i.saturating_add(1);
                continue;
            }
            let blank = k == 0 && self.at_line_start;
            self.at_line_start = true;
            self.after_cr = c == Some(b'\r');
            from = i.saturating_add(1);
            if blank {
                return Some(from);
            }
        }
    }

    /// [`BlockEnd::next`] for bytes without CR (and not after one): one
    /// search for LF per line instead of one for LF or CR per line end.
    fn next_lf(&mut self, bytes: &[u8]) -> Option<usize> {
        if bytes.is_empty() {
            return None;
        }
        if self.at_line_start && bytes.first() == Some(&b'\n') {
            return Some(1);
        }
        let mut from = 0;
        loop {
            let Some(k) = bytes
                .get(from..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
            else {
                self.at_line_start = false;
                return None;
            };
            let i = from.saturating_add(k);
            self.at_line_start = true;
            from = i.saturating_add(1);
            match bytes.get(from) {
                Some(b'\n') => return Some(from.saturating_add(1)),
                Some(_) => {}
                None => return None,
            }
        }
    }
}

impl<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize>
    Rewriter<'_, OPEN, OWNERS, ID_BYTES>
{
    /// The most output one block of `len` bytes (counting the bytes it
    /// had in the raw buffer) can give: three times its bytes (a string
    /// re-encoded as `JSON.stringify` writes it takes at most three times
    /// the bytes it had) plus a constant for the events the pipeline may
    /// synthesize and a final `RUN_ERROR` — with [`Options::close_open`](super::Options::close_open),
    /// also the events that close what may be open (`OPEN` of them, their
    /// ids up to six times their `ID_BYTES` when escaped). A writer with
    /// room for this for the largest block of a stream never holds the
    /// stream up.
    pub const fn frame_bound(&self, len: usize) -> usize {
        let close = if self.options.close_open {
            OPEN.saturating_mul(CLOSE_EVENT_BYTES)
                .saturating_add(ID_BYTES.saturating_mul(12))
        } else {
            0
        };
        // With guard rules, a byte of text may become several (a masked
        // match), and a block may let out text held back before it.
        let (expansion, held) = match self.guard.is_off() {
            true => (1, 0),
            false => (
                self.guard.expansion(),
                MAX_MATCH
                    .saturating_mul(6)
                    .saturating_add(CLOSE_EVENT_BYTES),
            ),
        };
        len.saturating_mul(3)
            .saturating_mul(expansion)
            .saturating_add(held.saturating_mul(expansion))
            .saturating_add(FRAME_SLACK)
            .saturating_add(close)
    }

    /// The most output a push of `len` bytes can give, whatever its blocks
    /// (each is at least one byte), counting the block the raw buffer
    /// holds.
    const fn push_bound(&self, len: usize) -> usize {
        let per_block = self.frame_bound(1);
        self.frame_bound(self.spool.len().saturating_add(len))
            .saturating_add(len.saturating_mul(per_block))
    }

    /// Reads `input` and writes the output of every block it completes.
    ///
    /// # Errors
    ///
    /// [`RewriteError::OutputFull`] if `out` has no room for the next
    /// block's worst case and nothing could be read;
    /// [`RewriteError::RawBuffer`] if a block outgrew a raw buffer of under
    /// 16 bytes; [`RewriteError::Write`] if `out` failed.
    pub fn push<W: Write + ?Sized>(
        &mut self,
        input: &[u8],
        out: &mut W,
    ) -> Result<Pushed, RewriteError> {
        let mut pos = 0;
        while pos < input.len() {
            if self.state == State::Ended {
                self.stats.bytes_in = self
                    .stats
                    .bytes_in
                    .saturating_add(input.len().saturating_sub(pos) as u64);
                return Ok(Pushed {
                    read: input.len(),
                    ended: true,
                    held: false,
                });
            }
            let room = out.room();
            let rest = input.get(pos..).unwrap_or_default();
            if self.options.max_event_bytes == 0
                && room >= self.push_bound(rest.len())
                && (!self.options.hold
                    || self.spool.len().saturating_add(rest.len()) <= self.spool.capacity())
            {
                // Fast path, where the block-by-block scan below would read
                // everything: room for the worst case of every block that
                // can be in the input, and no size cap. The scanner's state
                // after the input depends only on its last byte.
                if let Some(&last) = rest.last() {
                    self.scan = BlockEnd::after(last);
                }
                // Whether `rest` is plain is looked at only if a block
                // needs it (`Emitter::chunk_plain`).
                self.run(rest, None, out)?;
                pos = input.len();
                continue;
            }
            let no_cr = memchr::memchr(b'\r', rest).is_none();
            let plain = no_cr && relines::no_bare_data(rest);
            let (end, stop) = match self.admit(input, pos, room, no_cr) {
                Admit::Take { end, scan, stop } => {
                    if end == pos {
                        return Ok(Pushed {
                            read: pos,
                            ended: false,
                            held: stop == Some(Stop::Held),
                        });
                    }
                    self.scan = scan;
                    (end, stop)
                }
                Admit::Full { needed } => return Err(RewriteError::OutputFull { needed }),
                Admit::TooLarge { len, unguarded } => {
                    return self.too_large(len, unguarded, out).map(|()| Pushed {
                        read: input.len(),
                        ended: true,
                        held: false,
                    });
                }
            };
            let chunk = input.get(pos..end).unwrap_or_default();
            self.run(chunk, Some(plain), out)?;
            pos = end;
            if stop.is_some() && self.state == State::Open {
                return Ok(Pushed {
                    read: pos,
                    ended: false,
                    held: stop == Some(Stop::Held),
                });
            }
        }
        Ok(Pushed {
            read: pos,
            ended: self.state == State::Ended,
            held: false,
        })
    }

    /// The blocks of `input` from `pos` that complete and fit `room` (and
    /// the start of one that does not complete), block by block.
    fn admit(&self, input: &[u8], pos: usize, room: usize, no_cr: bool) -> Admit {
        let max = self.options.max_event_bytes;
        let mut scan = self.scan;
        let mut end = pos;
        let mut needed = 0usize;
        // Bytes of the current block before `end` (in the raw buffer).
        let mut carried = self.spool.len();
        loop {
            let rest = input.get(end..).unwrap_or_default();
            if rest.is_empty() {
                break;
            }
            let before = scan;
            let found = scan.next(rest, no_cr);
            let len = found.unwrap_or(rest.len()).saturating_add(carried);
            if max > 0 && len as u64 > max {
                if end > pos {
                    // The blocks before it first.
                    scan = before;
                    break;
                }
                return Admit::TooLarge {
                    len,
                    unguarded: false,
                };
            }
            if found.is_none() && len > self.spool.capacity() && self.holding() {
                if end > pos {
                    // The blocks before it first: then the raw buffer
                    // holds just what is not accounted for.
                    scan = before;
                    break;
                }
                // As much of it as the raw buffer holds.
                let fits = self
                    .spool
                    .capacity()
                    .saturating_sub(carried)
                    .min(rest.len());
                let scan = match rest.get(..fits).and_then(<[u8]>::last) {
                    Some(&last) => BlockEnd::after(last),
                    None => before,
                };
                return Admit::Take {
                    end: end.saturating_add(fits),
                    scan,
                    stop: Some(Stop::Held),
                };
            }
            if found.is_none() && len > self.spool.capacity() && !self.guard.is_off() {
                if end > pos {
                    scan = before;
                    break;
                }
                return Admit::TooLarge {
                    len,
                    unguarded: true,
                };
            }
            // The room this block needs: a block that completes, or one
            // that outgrows the raw buffer (it goes out as it comes).
            let need = match found {
                Some(k) => Some(self.frame_bound(k.saturating_add(carried))),
                None if len > self.spool.capacity() => Some(self.frame_bound(len)),
                None => None,
            };
            if let Some(need) = need
                && needed.saturating_add(need) > room
            {
                if end == pos && pos == 0 {
                    return Admit::Full { needed: need };
                }
                return Admit::Take {
                    end,
                    scan: before,
                    stop: Some(Stop::Room),
                };
            }
            match found {
                Some(k) => {
                    needed = needed.saturating_add(need.unwrap_or(0));
                    carried = 0;
                    end = end.saturating_add(k);
                    if self.ahead_from != 0 {
                        // The block let ahead ends here: the next is held.
                        break;
                    }
                }
                None => {
                    end = input.len();
                    break;
                }
            }
        }
        Admit::Take {
            end,
            scan,
            stop: None,
        }
    }

    /// Whether a block that outgrows the raw buffer is held
    /// ([`Options::hold`](super::Options::hold), and not let ahead).
    pub(super) const fn holding(&self) -> bool {
        self.options.hold && self.ahead_from == 0
    }
}
