//! How a [`Rewriter`](super::Rewriter) rewrites: [`Options`] and the
//! violation policy [`OnViolation`].

/// What the rewriter does with an event that breaks a rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum OnViolation {
    /// Forward what came before, then a final `RUN_ERROR` (code
    /// `AGUI_STREAM_VIOLATION`, or `AGUI_STREAM_CAPACITY` where a fixed
    /// capacity was exceeded) with the error's message; nothing after it.
    #[default]
    Stop,
    /// Drop the offending event, count it, go on.
    Drop,
    /// Forward the offending frame unchanged, count it, go on (an event
    /// the pipeline synthesized has no bytes of its own: it is dropped).
    Pass,
}

impl core::str::FromStr for OnViolation {
    type Err = crate::protocol::dialect::UnknownName;

    /// `stop`, `drop` or `pass`.
    ///
    /// ```
    /// use agui_stream::rewrite::OnViolation;
    /// assert_eq!("drop".parse(), Ok(OnViolation::Drop));
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "stop" => Ok(OnViolation::Stop),
            "drop" => Ok(OnViolation::Drop),
            "pass" => Ok(OnViolation::Pass),
            _ => Err(crate::protocol::dialect::UnknownName {
                what: "violation policy",
                expected: "stop, drop or pass",
            }),
        }
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for OnViolation {
    /// From a string, as [`FromStr`](core::str::FromStr) reads it.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::protocol::dialect::deserialize_name(d)
    }
}

/// How a [`Rewriter`](super::Rewriter) rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Options {
    /// On a violation (default stop).
    pub on_violation: OnViolation,
    /// End a stream cut mid-run with `RUN_ERROR` (`AGUI_STREAM_TRUNCATED`),
    /// and terminate a cut last frame (default on). A last frame cut inside
    /// its JSON is dropped — or cut, if it was going out ahead of its
    /// verdict — as the truncation it is, whatever the buffers' size; a
    /// JSON error in the bytes that did arrive is a violation.
    pub repair: bool,
    /// Before a repair's or the stop policy's `RUN_ERROR`, close what is
    /// open — tool calls, text messages, reasoning messages and spans,
    /// V0's thinking, steps, innermost first — so that a stored replay
    /// stays readable (default off).
    pub close_open: bool,
    /// A block larger than this many bytes (its raw bytes, all its lines;
    /// 0 for no limit) ends the stream with a `RUN_ERROR` (code
    /// `AGUI_EVENT_TOO_LARGE`) instead of reaching a client that would
    /// throw on it (browsers do over 10 MiB).
    pub max_event_bytes: u64,
    /// Write every event re-encoded in the dialect's stripped form (unknown
    /// members removed; `event:`/`id:` lines and frames V1 ignores are not
    /// written), for strict clients.
    pub canonical: bool,
    /// Drop `RAW` events and the `rawEvent` member of every event (what an
    /// agent framework saw upstream, often larger than the answer).
    pub drop_raw: bool,
    /// Hold a block that outgrows the raw buffer instead of streaming it
    /// ahead of its verdict (default off): `push` stops at it
    /// ([`Pushed::held`](super::Pushed::held)) until the caller gives a
    /// larger raw buffer ([`Rewriter::grow_raw`](super::Rewriter::grow_raw))
    /// or lets it go ahead ([`Rewriter::let_ahead`](super::Rewriter::let_ahead)).
    /// A client then never gets part of an event: a stream cut inside a
    /// held block ends in the repair's `RUN_ERROR` alone.
    pub hold: bool,
    /// A `TEXT_MESSAGE_CONTENT`, `TOOL_CALL_ARGS` or
    /// `REASONING_MESSAGE_CONTENT` that outgrows the raw buffer and is not
    /// held goes out as several complete events of its lane, each with a
    /// part of its delta, instead of as part of one event ahead of its
    /// verdict (default off). It takes an event written `{"type":…,
    /// "<id key>":"<id>","delta":"…` (its id without escapes) for an open
    /// message or call, as agent frameworks write them; others go ahead
    /// as before. The pieces are out before the event's end is read: if
    /// that turns out bad, they stay, and the violation ends the stream
    /// as the policy says.
    pub split: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl Options {
    /// Stop on violations, repair the end.
    pub const fn new() -> Self {
        Options {
            on_violation: OnViolation::Stop,
            repair: true,
            close_open: false,
            max_event_bytes: 0,
            canonical: false,
            drop_raw: false,
            hold: false,
            split: false,
        }
    }

    /// The same options with another violation policy.
    pub const fn on_violation(mut self, on_violation: OnViolation) -> Self {
        self.on_violation = on_violation;
        self
    }

    /// The same options, repairing (or not) the end of the stream.
    pub const fn repair(mut self, repair: bool) -> Self {
        self.repair = repair;
        self
    }

    /// The same options, closing (or not) what is open before a final
    /// `RUN_ERROR`.
    pub const fn close_open(mut self, close_open: bool) -> Self {
        self.close_open = close_open;
        self
    }

    /// The same options with another largest block (0: no limit).
    pub const fn max_event_bytes(mut self, max: u64) -> Self {
        self.max_event_bytes = max;
        self
    }

    /// The same options, writing (or not) events in canonical form.
    pub const fn canonical(mut self, canonical: bool) -> Self {
        self.canonical = canonical;
        self
    }

    /// The same options, dropping (or not) `RAW` events and `rawEvent`s.
    pub const fn drop_raw(mut self, drop_raw: bool) -> Self {
        self.drop_raw = drop_raw;
        self
    }

    /// The same options, holding (or not) a block that outgrows the raw
    /// buffer.
    pub const fn hold(mut self, hold: bool) -> Self {
        self.hold = hold;
        self
    }

    /// The same options, splitting (or not) a delta that outgrows the raw
    /// buffer into complete events.
    ///
    /// ```
    /// use agui_stream::{Config, rewrite::{Options, Rewriter}};
    /// let (mut frames, mut raw) = ([0u8; 1024], [0u8; 256]);
    /// let options = Options::new().split(true);
    /// let mut rewriter = Rewriter::new(&mut frames, &mut raw, Config::new(), options);
    /// let stream = format!(
    ///     "data: {{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}}\n\n\
    ///      data: {{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}}\n\n\
    ///      data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"{}\"}}\n\n",
    ///     "word ".repeat(200)
    /// );
    /// let mut out = Vec::new();
    /// for piece in stream.as_bytes().chunks(300) {
    ///     rewriter.push(piece, &mut out)?;
    /// }
    /// rewriter.finish(&mut out)?; // cut before TEXT_MESSAGE_END: repaired
    /// let out = String::from_utf8(out).unwrap();
    /// // The 1,000-byte delta came as several whole events, then the repair.
    /// assert!(out.matches("\"type\":\"TEXT_MESSAGE_CONTENT\"").count() > 2);
    /// assert!(!out.contains('\u{1}'));
    /// assert!(out.ends_with("\"code\":\"AGUI_STREAM_TRUNCATED\"}\n\n"));
    /// # Ok::<(), agui_stream::rewrite::RewriteError>(())
    /// ```
    pub const fn split(mut self, split: bool) -> Self {
        self.split = split;
        self
    }
}
