//! What went through a rewriter: [`Stats`], its counters and their serde
//! form.

use crate::pipeline::error::Stage;
use crate::protocol::event_type::EventType;

/// What went through a [`Rewriter`](super::Rewriter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Stats {
    /// Events the pipeline delivered, by type ([`EventType::index`]).
    /// The tables count in `u32` (saturating) so that a stream's state
    /// stays small; the totals below are `u64`.
    pub events_in: [u32; EventType::COUNT],
    /// Events written, by type (forwarded, encoded or repairs).
    pub events_out: [u32; EventType::COUNT],
    /// Violations by the stage that found them ([`Stage::index`]).
    pub violations_by_stage: [u32; Stage::COUNT],
    /// Input bytes read.
    pub bytes_in: u64,
    /// Output bytes written.
    pub bytes_out: u64,
    /// Events the pipeline delivered.
    pub events: u64,
    /// Blocks forwarded as their original bytes (frames, keep-alives).
    pub forwarded: u64,
    /// Blocks forwarded with LF line ends instead of their own.
    pub relined: u64,
    /// Events written by the encoder (synthesized ones).
    pub encoded: u64,
    /// Violations seen.
    pub violations: u64,
    /// Events or frames dropped ([`OnViolation::Drop`](super::OnViolation::Drop), or a synthesized
    /// event under [`OnViolation::Pass`](super::OnViolation::Pass)).
    pub dropped: u64,
    /// Frames forwarded despite a violation ([`OnViolation::Pass`](super::OnViolation::Pass)).
    pub passed: u64,
    /// Repair events written (closing events, `RUN_ERROR`s, terminated
    /// last frames).
    pub repairs: u64,
    /// Second terminal events of a run (RUN_FINISHED after RUN_ERROR, a
    /// repeated RUN_FINISHED) dropped where the dialect rejects them.
    pub duplicate_terminals: u64,
    /// `RAW` events dropped, and events written without their `rawEvent`
    /// ([`Options::drop_raw`](super::Options::drop_raw)).
    pub raw_dropped: u64,
    /// Blocks larger than [`Options::max_event_bytes`](super::Options::max_event_bytes) (at most one: it
    /// ends the stream).
    pub too_large: u64,
    /// Keep-alive comments written ([`Rewriter::keep_alive`](super::Rewriter::keep_alive)).
    pub keep_alives: u64,
    /// Events of denied tool calls removed ([`Rewriter::deny_tools`](super::Rewriter::deny_tools)).
    pub tool_events_dropped: u64,
    /// Blocks larger than the raw buffer, forwarded piece by piece ahead
    /// of their verdict (a delta split into events counts here too:
    /// [`Options::split`](super::Options::split)).
    pub streamed: u64,
    /// Blocks cut for the client: streamed ones found bad at their end or
    /// needing re-encoding, events that outgrew the frame buffer (shown
    /// with stand-ins) but would have to be re-encoded, and split deltas
    /// whose rest outgrew the raw buffer.
    pub cut: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            events_in: [0; EventType::COUNT],
            events_out: [0; EventType::COUNT],
            violations_by_stage: [0; Stage::COUNT],
            bytes_in: 0,
            bytes_out: 0,
            events: 0,
            forwarded: 0,
            relined: 0,
            encoded: 0,
            violations: 0,
            dropped: 0,
            passed: 0,
            repairs: 0,
            duplicate_terminals: 0,
            raw_dropped: 0,
            too_large: 0,
            keep_alives: 0,
            tool_events_dropped: 0,
            streamed: 0,
            cut: 0,
        }
    }
}

impl Stats {
    /// The names of the scalar counters, in [`counters`](Stats::counters)
    /// order.
    pub const COUNTER_NAMES: [&'static str; 17] = [
        "bytes_in",
        "bytes_out",
        "events",
        "forwarded",
        "relined",
        "encoded",
        "violations",
        "dropped",
        "passed",
        "repairs",
        "duplicate_terminals",
        "raw_dropped",
        "too_large",
        "keep_alives",
        "tool_events_dropped",
        "streamed",
        "cut",
    ];

    /// The scalar counters with their names (the tables `events_in`,
    /// `events_out` and `violations_by_stage` aside): what a front end logs
    /// or exports as metrics, in one order everywhere.
    ///
    /// ```
    /// use agui_stream::rewrite::Stats;
    /// let stats = Stats::default();
    /// assert_eq!(stats.counters().next(), Some(("bytes_in", 0)));
    /// assert_eq!(stats.counters().count(), Stats::COUNTER_NAMES.len());
    /// ```
    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> + use<> {
        let values = [
            self.bytes_in,
            self.bytes_out,
            self.events,
            self.forwarded,
            self.relined,
            self.encoded,
            self.violations,
            self.dropped,
            self.passed,
            self.repairs,
            self.duplicate_terminals,
            self.raw_dropped,
            self.too_large,
            self.keep_alives,
            self.tool_events_dropped,
            self.streamed,
            self.cut,
        ];
        Self::COUNTER_NAMES.into_iter().zip(values)
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Stats {
    /// The counters as fields (the `agui gateway` line's), the tables as
    /// maps of what is not zero, by type and stage name.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeStruct};
        struct Named<'a>(&'a [u32], &'a [&'static str]);
        impl serde::Serialize for Named<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(None)?;
                for (name, n) in self.1.iter().zip(self.0).filter(|(_, n)| **n > 0) {
                    map.serialize_entry(name, n)?;
                }
                map.end()
            }
        }
        let mut types = [""; EventType::COUNT];
        for (slot, ty) in types.iter_mut().zip(EventType::ALL) {
            *slot = ty.as_str();
        }
        let stages = Stage::ALL.map(Stage::name);
        let fields = Self::COUNTER_NAMES.len().saturating_add(3);
        let mut st = s.serialize_struct("Stats", fields)?;
        for (name, n) in self.counters() {
            st.serialize_field(name, &n)?;
        }
        st.serialize_field("events_in", &Named(&self.events_in, &types))?;
        st.serialize_field("events_out", &Named(&self.events_out, &types))?;
        st.serialize_field(
            "violations_by_stage",
            &Named(&self.violations_by_stage, &stages),
        )?;
        st.end()
    }
}

/// Adds one to the count of `index` in `counts`.
pub(super) fn count_in(counts: &mut [u32], index: usize) {
    if let Some(n) = counts.get_mut(index) {
        *n = n.saturating_add(1);
    }
}
