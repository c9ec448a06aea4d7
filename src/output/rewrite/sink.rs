//! The sink: each verdict of the pipeline → what the client gets (the
//! frame's bytes, an encoded event, nothing, or the end of the stream).
//! What is written, and how, is the [emitter](super::emit)'s.

use core::fmt;
use core::ops::ControlFlow;

use crate::check::spilled::StandIns;
use crate::check::verify::Rule;
use crate::output::encode::Write;
use crate::pipeline::error::{Error, ErrorKind};
use crate::pipeline::{FrameInfo, Sink, Skipped};
use crate::protocol::event_type::{EventType, Key};
use crate::view::event::Event;

use super::OnViolation;
use super::filter::Filtered;
use super::forward::Forward;
use super::guard::guarded_type;
use super::repair::code_of;
use super::stats::count_in;

impl<W: Write + ?Sized> Sink for Forward<'_, W> {
    /// The fast path ([`Forward::forwarded_as_is`]) inline, where the
    /// pipeline calls the sink; the rest out of line.
    #[inline(always)]
    fn event(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
        if !self.stop.stopped()
            && (self.guard.is_off() || !guarded_type(event.event_type()))
            && self.forwarded_as_is(frame)
        {
            let ty = event.event_type().index();
            self.stats.events = self.stats.events.saturating_add(1);
            count_in(&mut self.stats.events_in, ty);
            count_in(&mut self.stats.events_out, ty);
            return ControlFlow::Continue(());
        }
        self.event_general(event, frame)
    }

    fn violation(
        &mut self,
        error: &Error,
        frame: &FrameInfo,
        message: &dyn fmt::Display,
    ) -> ControlFlow<()> {
        if self.stop.stopped() {
            return ControlFlow::Break(());
        }
        let policy = self.options.on_violation;
        self.begin(frame);
        if frame.cut_in_json && self.options.repair {
            // The stream was cut inside its last frame's JSON: that is the
            // truncation the repair reports, not a violation to stop on,
            // whether the frame fit the buffers or went out ahead of its
            // verdict (then what went out of it is cut, so that no client
            // reads it as an event).
            if self.frame.streamed {
                self.end_streamed();
            }
            self.stop.set_cut();
            self.stats.dropped = self.stats.dropped.saturating_add(1);
            return ControlFlow::Continue(());
        }
        if self.frame.streamed {
            self.stats.violations = self.stats.violations.saturating_add(1);
            count_in(&mut self.stats.violations_by_stage, error.stage.index());
            return self.cut(code_of(error), message);
        }
        if policy != OnViolation::Pass && second_terminal(error) {
            self.begin(frame);
            self.stats.duplicate_terminals = self.stats.duplicate_terminals.saturating_add(1);
            return ControlFlow::Continue(());
        }
        self.stats.violations = self.stats.violations.saturating_add(1);
        count_in(&mut self.stats.violations_by_stage, error.stage.index());
        match policy {
            OnViolation::Stop => {
                self.stop.set(error, message);
                return ControlFlow::Break(());
            }
            OnViolation::Pass if frame.original => {
                self.begin(frame);
                self.frame_bytes(frame);
                self.stats.passed = self.stats.passed.saturating_add(1);
                if let Some(ty) = frame.input_type {
                    count_in(&mut self.stats.events_out, ty.index());
                }
            }
            OnViolation::Pass | OnViolation::Drop => {
                self.begin(frame);
                self.stats.dropped = self.stats.dropped.saturating_add(1);
            }
        }
        ControlFlow::Continue(())
    }

    fn skipped(&mut self, skipped: &Skipped) -> ControlFlow<()> {
        if self.stop.stopped() {
            return ControlFlow::Break(());
        }
        match *skipped {
            Skipped::NoData { end, .. } => {
                self.frame.index = None;
                let from = self.gap_start();
                let relined = self.forward(from, end.max(from));
                self.marks.accounted = end.max(from);
                self.marks.streamed = 0;
                self.count(relined);
            }
            Skipped::Ignored(info) => {
                self.begin(&info);
                if self.frame.streamed && self.options.canonical {
                    return self.cut_unencodable();
                }
                if !self.options.canonical {
                    self.frame_bytes(&info);
                }
            }
            // Replaced by nothing: its stream goes on in later events.
            Skipped::Absorbed(info) => {
                self.begin(&info);
                if self.frame.streamed {
                    return self.cut_unencodable();
                }
            }
        }
        ControlFlow::Continue(())
    }
}

impl<W: Write + ?Sized> Forward<'_, W> {
    /// [`Sink::event`] past its fast path.
    #[inline(never)]
    fn event_general(&mut self, event: &Event<'_>, frame: &FrameInfo) -> ControlFlow<()> {
        if self.stop.stopped() {
            return ControlFlow::Break(());
        }
        self.begin(frame);
        self.stats.events = self.stats.events.saturating_add(1);
        count_in(&mut self.stats.events_in, event.event_type().index());
        // Written by the encoder rather than as its bytes; or perhaps left
        // out (its bytes never written).
        let encoded = !frame.original
            || self.options.canonical
            || (self.options.drop_raw
                && event.event_type() != EventType::Raw
                && event.get(Key::RawEvent).is_some());
        // (The filter is asked here only for a streamed frame: `check`
        // below asks it again.)
        let left_out = || {
            !self.filter.keeps(event)
                || (self.options.drop_raw && event.event_type() == EventType::Raw)
        };
        if self.frame.streamed && (encoded || left_out()) {
            // Part of its bytes went out already.
            return self.cut_unencodable();
        }
        if encoded && frame.stand_ins != StandIns::default() {
            // The frame outgrew the frame buffer: its event shows members
            // that did not fit as stand-ins, and an encoder would write
            // those, not the real values. Nothing of it was written.
            self.stats.cut = self.stats.cut.saturating_add(1);
            let message = "an event larger than the frame buffer cannot be re-encoded";
            self.stop.set_code("AGUI_STREAM_CAPACITY", &message);
            return ControlFlow::Break(());
        }
        if !self.filter.is_empty() {
            match self.filter.check(event) {
                Filtered::Keep => {}
                Filtered::Drop => {
                    self.stats.tool_events_dropped =
                        self.stats.tool_events_dropped.saturating_add(1);
                    return ControlFlow::Continue(());
                }
                Filtered::Full => {
                    let message = "more calls to denied tools in this run than the filter holds";
                    self.stop.set_code("AGUI_STREAM_CAPACITY", &message);
                    return ControlFlow::Break(());
                }
            }
        }
        if !self.guard.is_off() {
            let mut event = *event;
            let strip = self.options.drop_raw && event.get(Key::RawEvent).is_some();
            if strip {
                event.set(Key::RawEvent, None);
            }
            if let Some(flow) = self.guarded(&event, frame) {
                if strip {
                    self.stats.raw_dropped = self.stats.raw_dropped.saturating_add(1);
                }
                return flow;
            }
        }
        if self.options.drop_raw {
            if event.event_type() == EventType::Raw {
                self.stats.raw_dropped = self.stats.raw_dropped.saturating_add(1);
                return ControlFlow::Continue(());
            }
            if event.get(Key::RawEvent).is_some() {
                let mut event = *event;
                event.set(Key::RawEvent, None);
                self.stats.raw_dropped = self.stats.raw_dropped.saturating_add(1);
                count_in(&mut self.stats.events_out, event.event_type().index());
                // Re-encoded without it.
                return self.encoded(&event);
            }
        }
        count_in(&mut self.stats.events_out, event.event_type().index());
        if frame.original && !self.options.canonical {
            self.frame_bytes(frame);
            return ControlFlow::Continue(());
        }
        self.encoded(event)
    }
}
/// A RUN_FINISHED or RUN_ERROR the run's end already had.
fn second_terminal(error: &Error) -> bool {
    matches!(
        error.kind,
        ErrorKind::Verify {
            event: EventType::RunFinished | EventType::RunError,
            rule: Rule::AfterRunError | Rule::AfterRunFinished,
        }
    )
}

impl<W: Write + ?Sized> Forward<'_, W> {
    /// Writes `event` with the encoder.
    fn encoded(&mut self, event: &Event<'_>) -> ControlFlow<()> {
        self.emit.encoded(event);
        self.stats.encoded = self.stats.encoded.saturating_add(1);
        ControlFlow::Continue(())
    }
}
