//! [`Forward`], the pipeline's sink while one chunk runs, and what it does
//! with a frame's bytes: the gap before it, the frame's own bytes once, a
//! frame that went out ahead of its verdict and must be cut.

use core::fmt;
use core::ops::ControlFlow;

use crate::output::encode::Write;
use crate::pipeline::FrameInfo;

use super::emit::{BOM, Emitter};
use super::filter::Tools;
use super::guard::Guard;
use super::relines;
use super::repair::Stop;
use super::spool::{CUT, Marks};
use super::{Options, Stats};

/// The frame whose output is being written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Current {
    /// Its index ([`FrameInfo::index`]).
    pub(super) index: Option<u64>,
    /// Its bytes were written (or need not be).
    pub(super) written: bool,
    /// Its bytes went out ahead of its verdict (see [`Marks::streamed`]).
    pub(super) streamed: bool,
}

/// The pipeline's sink while one chunk runs: writes each block's output.
/// It borrows the rewriter's parts whole.
pub(super) struct Forward<'a, W: ?Sized> {
    pub(super) emit: Emitter<'a, W>,
    pub(super) marks: &'a mut Marks,
    /// A split delta's head, while one is going out in pieces (else empty).
    pub(super) head: &'a [u8],
    pub(super) stats: &'a mut Stats,
    pub(super) options: Options,
    pub(super) filter: Tools<'a>,
    /// The guard's rules and lanes ([`Rewriter::guard`](super::Rewriter::guard)).
    pub(super) guard: Guard<'a>,
    /// Set when the stop policy stops: nothing more is written.
    pub(super) stop: &'a mut Stop,
    pub(super) frame: Current,
}

impl<'a, W: Write + ?Sized> Forward<'a, W> {
    /// Writes what is pending and counts the bytes written; returns
    /// whether the writer failed.
    pub(super) fn end(mut self) -> bool {
        self.emit.flush();
        self.stats.bytes_out = self.emit.bytes_out;
        self.emit.failed
    }

    /// Writes stream bytes `a..b` (see [`Emitter::forward`]).
    pub(super) fn forward(&mut self, a: u64, b: u64) -> bool {
        self.emit.forward(a, b)
    }

    /// Counts a block written as it was, or re-lined.
    pub(super) fn count(&mut self, relined: bool) {
        let n = if relined {
            &mut self.stats.relined
        } else {
            &mut self.stats.forwarded
        };
        *n = n.saturating_add(1);
    }

    /// Where the bytes before a block start: past a leading BOM, which is
    /// not forwarded (clients drop it; forwarding it would depend on what
    /// follows).
    pub(super) fn gap_start(&self) -> u64 {
        let from = self.marks.accounted;
        if from == 0 {
            let [a, b] = self.emit.parts(0, 3);
            if a.iter().chain(b).eq(BOM) {
                return 3;
            }
        }
        from
    }

    /// Before the first output of frame `info`: the bytes before it.
    pub(super) fn begin(&mut self, info: &FrameInfo) {
        if self.frame.index == Some(info.index) {
            return;
        }
        self.frame = Current {
            index: Some(info.index),
            written: false,
            streamed: self.marks.streamed > info.start,
        };
        if !self.frame.streamed {
            let from = self.gap_start();
            self.forward(from, info.start.max(from));
        }
        self.marks.accounted = info.end.max(self.marks.accounted);
    }

    /// The current frame went out ahead of its verdict and cannot be what
    /// the client gets: it is cut (the client's parse fails) and the
    /// stream stops with `code` and `message`.
    pub(super) fn cut(
        &mut self,
        code: &'static str,
        message: &dyn fmt::Display,
    ) -> ControlFlow<()> {
        self.end_streamed();
        self.stop.set_code(code, message);
        ControlFlow::Break(())
    }

    /// Ends what went out of the current frame ahead of its verdict with a
    /// data line no JSON can hold, so that the client's parse of it fails
    /// (a split delta's pieces are whole events: they stay as they are).
    pub(super) fn end_streamed(&mut self) {
        self.frame.streamed = false;
        if !self.head.is_empty() {
            self.marks.streamed = 0;
            return;
        }
        let lines = self.emit.lines();
        let at_line_start = lines.line == relines::LINE_START;
        lines.line = relines::LINE_START;
        self.emit
            .write(CUT.get(usize::from(at_line_start)..).unwrap_or_default());
        self.marks.streamed = 0;
        self.stats.cut = self.stats.cut.saturating_add(1);
    }

    /// A streamed frame that must be re-encoded: its bytes are gone.
    pub(super) fn cut_unencodable(&mut self) -> ControlFlow<()> {
        let message = "an event larger than the raw buffer cannot be re-encoded";
        self.cut("AGUI_STREAM_CAPACITY", &message)
    }

    /// At the end of input, the bytes no block took, up to `end`: blank
    /// lines, or a block without data that never ended (terminated, with
    /// the repair, as a cut frame is).
    pub(super) fn rest(&mut self, end: u64) {
        let from = self.gap_start();
        if from >= end {
            return;
        }
        let parts = self.emit.parts(from, end);
        let blank = parts
            .iter()
            .all(|p| p.iter().all(|&b| b == b'\n' || b == b'\r'));
        let last = parts.iter().rev().find_map(|p| p.last()).copied();
        self.forward(from, end);
        self.marks.accounted = end;
        self.marks.streamed = 0;
        if !blank && self.options.repair {
            self.terminate(last);
        }
    }

    /// Ends a block the stream cut after its byte `last` (a repair).
    fn terminate(&mut self, last: Option<u8>) {
        self.emit.write(if matches!(last, Some(b'\n' | b'\r')) {
            b"\n"
        } else {
            b"\n\n"
        });
        self.stats.repairs = self.stats.repairs.saturating_add(1);
    }

    /// The frame's own bytes, once (terminated if the stream cut it).
    pub(super) fn frame_bytes(&mut self, info: &FrameInfo) {
        if core::mem::replace(&mut self.frame.written, true) {
            return;
        }
        let from = if self.frame.streamed {
            // A split delta's last piece: its head, then its rest.
            self.emit.write(self.head);
            core::mem::replace(&mut self.marks.streamed, 0)
        } else {
            info.start
        };
        let relined = self.forward(from, info.end);
        self.count(relined);
        if !info.terminated && self.options.repair {
            let parts = self.emit.parts(info.start, info.end);
            let last = parts.iter().rev().find_map(|p| p.last()).copied();
            self.terminate(last);
        }
    }
}
