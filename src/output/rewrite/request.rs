//! The request side of a gateway: a `RunAgentInput` body on its way to the
//! agent, checked as it streams ([`RequestChecker`]), held to a size limit,
//! with the entries of denied tools taken out of its top-level `tools` — and
//! its last byte held back until the verdict, so an agent never receives a
//! whole body that was refused.

use core::fmt;

use super::RewriteError;
use super::filter::ToolTables;
use super::repair::Escaped;
use crate::check::request::{RequestChecker, RequestError, RequestErrorKind};
use crate::input::json::Limits;
use crate::output::encode::Write;
use crate::protocol::dialect::Dialect;
use crate::view::json::RawJson;
use crate::view::string::JsonStr;

/// A request body → what goes upstream, in fixed memory: a checker's
/// buffer, and a buffer that holds one entry of `tools` while its name is
/// read (used only when a tool is denied).
///
/// Every byte goes out as it came in, at once — but for the entries of
/// denied tools, and the body's last byte, which [`finish`](Self::finish)
/// writes only if the body passes. A refused body (`push` or `finish`
/// returns a [`Refusal`]) never reaches its end upstream: the caller
/// answers [`Refusal::status`] with [`write_problem`](Self::write_problem)'s
/// body, and resets (or never completes) the upstream request.
///
/// ```
/// use agui_stream::{Dialect, rewrite::RequestRewriter};
/// let (mut check, mut hold) = ([0u8; 1024], [0u8; 1024]);
/// let mut request = RequestRewriter::new(&mut check, &mut hold, Dialect::V1);
/// request.deny_tool("shell")?;
/// let body = br#"{"threadId":"t","runId":"r","messages":[],
///   "tools":[{"name":"shell","description":"runs anything"}, {"name":"search","description":"finds"}]}"#;
/// let mut upstream = Vec::new();
/// for piece in body.chunks(10) {
///     request.push(piece, &mut upstream).unwrap();
/// }
/// request.finish(&mut upstream).unwrap();
/// assert_eq!(
///     upstream,
///     br#"{"threadId":"t","runId":"r","messages":[],
///   "tools":[ {"name":"search","description":"finds"}]}"#
/// );
/// assert_eq!(request.stats().tools_removed, 1);
/// # Ok::<(), agui_stream::rewrite::RewriteError>(())
/// ```
#[derive(Debug)]
pub struct RequestRewriter<'b> {
    checker: RequestChecker<'b>,
    hold: &'b mut [u8],
    filter: ToolTables,
    denying: bool,
    limit: u64,
    splice: Splice,
    /// The last byte of output so far, held back.
    last: Option<u8>,
    stats: RequestStats,
    state: State,
}

/// What went through a [`RequestRewriter`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RequestStats {
    /// Body bytes read.
    pub bytes_in: u64,
    /// Bytes written upstream.
    pub bytes_out: u64,
    /// Entries of denied tools removed from `tools`.
    pub tools_removed: u32,
}

/// Why a request body is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Refusal {
    /// The body is not a valid `RunAgentInput` (or a capacity of the
    /// checker ran out before a verdict).
    Invalid(RequestError),
    /// The body is longer than the limit ([`RequestRewriter::limit`]).
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// An entry of `tools` is larger than the buffer that holds it while
    /// its name is read.
    ToolTooLarge {
        /// That buffer's size.
        capacity: usize,
    },
    /// The writer had no room for the output.
    OutputFull,
}

impl Refusal {
    /// The HTTP status to answer: 400 for an invalid body, 413 for one
    /// over a limit or a capacity, 500 for a writer without room.
    pub const fn status(&self) -> u16 {
        match self {
            Refusal::Invalid(e) if matches!(e.kind, RequestErrorKind::Capacity(_)) => 413,
            Refusal::Invalid(_) => 400,
            Refusal::TooLarge { .. } | Refusal::ToolTooLarge { .. } => 413,
            Refusal::OutputFull => 500,
        }
    }

    /// The problem's code: `AGUI_INVALID_INPUT` (400) or
    /// `AGUI_INPUT_TOO_LARGE` (413); `AGUI_GATEWAY_ERROR` (500).
    pub const fn code(&self) -> &'static str {
        match self.status() {
            400 => "AGUI_INVALID_INPUT",
            413 => "AGUI_INPUT_TOO_LARGE",
            _ => "AGUI_GATEWAY_ERROR",
        }
    }

    /// A word for statistics: `json`, `schema`, `too_large` or `capacity`
    /// (`output` for a writer without room).
    pub const fn reason(&self) -> &'static str {
        match self {
            Refusal::Invalid(e) => match e.kind {
                RequestErrorKind::Json(_) => "json",
                RequestErrorKind::Schema { .. } => "schema",
                _ => "capacity",
            },
            Refusal::TooLarge { .. } => "too_large",
            Refusal::ToolTooLarge { .. } => "capacity",
            Refusal::OutputFull => "output",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Invalid(e) => e.fmt(f),
            Refusal::TooLarge { limit } => write!(f, "request body over {limit} bytes"),
            Refusal::ToolTooLarge { capacity } => write!(
                f,
                "an entry of tools is larger than the {capacity}-byte buffer that holds it while its name is read"
            ),
            Refusal::OutputFull => f.write_str("the gateway's output buffer is full"),
        }
    }
}

impl core::error::Error for Refusal {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    Refused(Refusal),
    Finished,
}

/// Bytes of a top-level member's name kept to compare it with `tools`
/// (which, written with escapes, takes 30).
const NAME: usize = 32;

/// Where the splice stands in the body's JSON (a tokenizer of depth,
/// strings and the top-level member names; the checker checks the syntax).
#[derive(Clone, Copy, Debug)]
struct Splice {
    depth: u32,
    in_string: bool,
    escape: bool,
    /// At depth 1, the next string is a member's name.
    want_name: bool,
    name: [u8; NAME],
    name_len: usize,
    /// The name being read (or last read) is `tools`.
    tools_name: bool,
    /// The current member's value is the `tools` array: its elements are
    /// held one by one.
    in_tools: bool,
    /// Inside `tools`: bytes held (an entry's separator, then the entry
    /// from `element` on).
    held: usize,
    element: Option<usize>,
    /// Some entry of this `tools` went out.
    kept_one: bool,
}

impl Splice {
    const fn new() -> Self {
        Splice {
            depth: 0,
            in_string: false,
            escape: false,
            want_name: false,
            name: [0; NAME],
            name_len: 0,
            tools_name: false,
            in_tools: false,
            held: 0,
            element: None,
            kept_one: false,
        }
    }
}

impl<'b> RequestRewriter<'b> {
    /// A rewriter of one body in `dialect`: `check` is the checker's
    /// buffer ([`RequestChecker::new`]), `hold` holds one entry of `tools`
    /// (with the whitespace and comma before it) while a tool is denied.
    /// No limit but the checker's.
    pub fn new(check: &'b mut [u8], hold: &'b mut [u8], dialect: Dialect) -> Self {
        RequestRewriter {
            checker: RequestChecker::new(check, dialect),
            hold,
            filter: ToolTables::new(),
            denying: false,
            limit: u64::MAX,
            splice: Splice::new(),
            last: None,
            stats: RequestStats::default(),
            state: State::Open,
        }
    }

    /// Refuses a body longer than `bytes` ([`Refusal::TooLarge`]).
    pub const fn limit(mut self, bytes: u64) -> Self {
        self.limit = bytes;
        self
    }

    /// Removes the entry of the tool `name` from the body's `tools` (the
    /// names [`Rewriter::deny_tool`](super::Rewriter::deny_tool) takes).
    ///
    /// # Errors
    ///
    /// [`RewriteError::DeniedTools`] if the names do not fit.
    pub fn deny_tool(&mut self, name: &str) -> Result<(), RewriteError> {
        self.filter.deny(name)?;
        self.denying = true;
        Ok(())
    }

    /// Ends the rewriter and gives its buffers back (the checker's, then
    /// the hold buffer), for the next body.
    pub fn into_buffers(self) -> (&'b mut [u8], &'b mut [u8]) {
        (self.checker.into_buffer(), self.hold)
    }

    /// What went through so far.
    pub const fn stats(&self) -> &RequestStats {
        &self.stats
    }

    /// Reads the next bytes of the body and writes what goes upstream now
    /// to `out` (at most `bytes.len()` and the `hold` buffer's bytes).
    ///
    /// # Errors
    ///
    /// The body is refused: nothing more goes upstream.
    pub fn push<W: Write + ?Sized>(&mut self, bytes: &[u8], out: &mut W) -> Result<(), Refusal> {
        if let State::Refused(r) = self.state {
            return Err(r);
        }
        self.stats.bytes_in = self.stats.bytes_in.saturating_add(bytes.len() as u64);
        if self.stats.bytes_in > self.limit {
            return self.refuse(Refusal::TooLarge { limit: self.limit });
        }
        if let Err(e) = self.checker.push(bytes) {
            return self.refuse(Refusal::Invalid(e));
        }
        let result = if self.denying {
            self.splice(bytes, out)
        } else {
            self.emit(bytes, out)
        };
        result.or_else(|r| self.refuse(r))
    }

    /// The body ended: its verdict. If it passes, its last byte goes to
    /// `out`.
    ///
    /// # Errors
    ///
    /// The body is refused.
    pub fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> Result<RequestStats, Refusal> {
        match self.state {
            State::Refused(r) => return Err(r),
            State::Finished => return Ok(self.stats),
            State::Open => {}
        }
        if let Err(e) = self.checker.finish() {
            return self.refuse(Refusal::Invalid(e)).map(|()| self.stats);
        }
        // A valid body holds nothing back but its last byte.
        if let Some(b) = self.last.take() {
            if out.write_bytes(&[b]).is_err() {
                return self.refuse(Refusal::OutputFull).map(|()| self.stats);
            }
            self.stats.bytes_out = self.stats.bytes_out.saturating_add(1);
        }
        self.state = State::Finished;
        Ok(self.stats)
    }

    /// The body of the answer to a refused request, `application/json`:
    /// `{"status":400,"code":"AGUI_INVALID_INPUT","message":"…","path":"messages[3]","offset":120}`
    /// (`path` empty where the problem is not a member's; for a JSON
    /// error, the message is `JSON.parse`'s).
    ///
    /// # Errors
    ///
    /// [`crate::BufferFull`] if `out` has no room.
    pub fn write_problem<W: Write + ?Sized>(
        &self,
        refusal: &Refusal,
        out: &mut W,
    ) -> Result<(), crate::BufferFull> {
        let mut text = [0u8; 512];
        let mut escaped = Escaped::new(&mut text);
        let json = match refusal {
            Refusal::Invalid(e) if matches!(e.kind, RequestErrorKind::Json(_)) => {
                self.checker.json_message()
            }
            _ => None,
        };
        // A message longer than the buffer is cut (at a character).
        let _ = match json {
            Some(m) => fmt::write(&mut escaped, format_args!("{m}")),
            None => fmt::write(&mut escaped, format_args!("{refusal}")),
        };
        let len = escaped.len();
        out.write_bytes(b"{\"status\":")?;
        write_u64(u64::from(refusal.status()), out)?;
        out.write_bytes(b",\"code\":\"")?;
        out.write_bytes(refusal.code().as_bytes())?;
        out.write_bytes(b"\",\"message\":\"")?;
        out.write_bytes(text.get(..len).unwrap_or_default())?;
        out.write_bytes(b"\",\"path\":\"")?;
        if let Refusal::Invalid(e) = refusal
            && !e.path.steps().is_empty()
        {
            let mut path = [0u8; 128];
            let mut w = Escaped::new(&mut path);
            let _ = fmt::write(&mut w, format_args!("{}", e.path));
            let n = w.len();
            out.write_bytes(path.get(..n).unwrap_or_default())?;
        }
        out.write_bytes(b"\"")?;
        if let Refusal::Invalid(e) = refusal {
            out.write_bytes(b",\"offset\":")?;
            write_u64(e.offset, out)?;
        }
        out.write_bytes(b"}")
    }

    fn refuse(&mut self, refusal: Refusal) -> Result<(), Refusal> {
        self.state = State::Refused(refusal);
        Err(refusal)
    }

    /// Writes `bytes` upstream, holding back the last one.
    fn emit<W: Write + ?Sized>(&mut self, bytes: &[u8], out: &mut W) -> Result<(), Refusal> {
        emit(&mut self.last, &mut self.stats, bytes, out)
    }

    /// Passes `bytes` through, holding each `tools` entry (with the
    /// separator before it) until it ends, then writing or dropping it.
    fn splice<W: Write + ?Sized>(&mut self, bytes: &[u8], out: &mut W) -> Result<(), Refusal> {
        // Bytes of `bytes` from `pass` on are passed through at once.
        let mut pass = 0usize;
        let mut i = 0usize;
        while let Some(&b) = bytes.get(i) {
            if self.splice.skimming() {
                // Inside a string outside `tools`: on to its next quote or
                // backslash at once.
                let rest = bytes.get(i..).unwrap_or_default();
                let n = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
                crate::testing::count_work(n.max(1));
                if n > 0 {
                    i = i.saturating_add(n);
                    continue;
                }
            } else {
                crate::testing::count_work(1);
            }
            i = i.saturating_add(1);
            if self.splice.holding(b) {
                let at = i.saturating_sub(1);
                if pass < at {
                    self.emit(bytes.get(pass..at).unwrap_or_default(), out)?;
                }
                pass = i;
                match self.hold_byte(b)? {
                    Held::More => {}
                    Held::Element => self.decide(out)?,
                    // Not an object: the body is invalid (the checker
                    // says so at its end); what is held goes out as it is.
                    Held::NotAnObject => {
                        self.release(out)?;
                        self.splice.in_tools = false;
                    }
                }
                continue;
            }
            if self.splice.in_tools {
                // `tools` ends: the whitespace held before its `]` goes out.
                self.release(out)?;
                self.splice.in_tools = false;
            }
            self.splice.track(b);
        }
        self.emit(bytes.get(pass..).unwrap_or_default(), out)
    }

    /// Holds a byte inside `tools`: what it came to.
    fn hold_byte(&mut self, b: u8) -> Result<Held, Refusal> {
        let capacity = self.hold.len();
        let s = &mut self.splice;
        let slot = self
            .hold
            .get_mut(s.held)
            .ok_or(Refusal::ToolTooLarge { capacity })?;
        *slot = b;
        s.held = s.held.saturating_add(1);
        Ok(s.step_held(b))
    }

    /// An entry of `tools` ended: the held separator and entry go out,
    /// unless the entry names a denied tool.
    fn decide<W: Write + ?Sized>(&mut self, out: &mut W) -> Result<(), Refusal> {
        let (start, held, kept_one) = (
            self.splice.element.unwrap_or(0),
            self.splice.held,
            self.splice.kept_one,
        );
        let element = self.hold.get(start..held).unwrap_or_default();
        let denied = RawJson::parse(element, Limits::new())
            .ok()
            .and_then(|v| v.get("name"))
            .and_then(|n| n.as_str())
            .is_some_and(|n| self.filter.denies(n));
        if denied {
            self.stats.tools_removed = self.stats.tools_removed.saturating_add(1);
        } else {
            // The first entry that goes out has no comma before it (those
            // before it were removed).
            let comma = self
                .hold
                .get(..start)
                .and_then(|sep| sep.iter().position(|&c| c == b','));
            match comma {
                Some(k) if !kept_one => {
                    self.emit_held(0, k, out)?;
                    self.emit_held(k.saturating_add(1), held, out)?;
                }
                _ => self.emit_held(0, held, out)?,
            }
            self.splice.kept_one = true;
        }
        self.splice.held = 0;
        self.splice.element = None;
        Ok(())
    }

    /// Writes out what is held.
    fn release<W: Write + ?Sized>(&mut self, out: &mut W) -> Result<(), Refusal> {
        let held = self.splice.held;
        self.emit_held(0, held, out)?;
        self.splice.held = 0;
        self.splice.element = None;
        Ok(())
    }

    /// Writes held bytes `from..to`.
    fn emit_held<W: Write + ?Sized>(
        &mut self,
        from: usize,
        to: usize,
        out: &mut W,
    ) -> Result<(), Refusal> {
        let held = self.hold.get(from..to).unwrap_or_default();
        emit(&mut self.last, &mut self.stats, held, out)
    }
}

/// Writes `bytes` upstream, holding back the last one in `last` (and
/// writing the one held before).
fn emit<W: Write + ?Sized>(
    last: &mut Option<u8>,
    stats: &mut RequestStats,
    bytes: &[u8],
    out: &mut W,
) -> Result<(), Refusal> {
    let Some((&next, head)) = bytes.split_last() else {
        return Ok(());
    };
    if let Some(b) = *last {
        out.write_bytes(&[b]).map_err(|_| Refusal::OutputFull)?;
    }
    out.write_bytes(head).map_err(|_| Refusal::OutputFull)?;
    let n = u64::from(last.is_some()).saturating_add(head.len() as u64);
    stats.bytes_out = stats.bytes_out.saturating_add(n);
    *last = Some(next);
    Ok(())
}

/// What a byte held inside `tools` came to.
enum Held {
    More,
    /// An entry (an object) ended.
    Element,
    /// An entry that is not an object began.
    NotAnObject,
}

impl Splice {
    /// Inside a string that is neither in `tools` nor a top-level
    /// member's name, past any escape: its bytes need no look.
    fn skimming(&self) -> bool {
        let name = self.want_name && self.depth == 1;
        let looked_at = self.escape || self.in_tools || name;
        self.in_string && !looked_at
    }

    /// `b` is inside the `tools` array (its `]` is not).
    fn holding(&self, b: u8) -> bool {
        self.in_tools && !(!self.in_string && self.depth == 2 && b == b']')
    }

    /// Follows a held byte.
    fn step_held(&mut self, b: u8) -> Held {
        if self.in_string {
            self.string_byte(b);
            return Held::More;
        }
        if self.element.is_none() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' | b',' => return Held::More,
                b'{' => self.element = Some(self.held.saturating_sub(1)),
                _ => return Held::NotAnObject,
            }
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth = self.depth.saturating_add(1),
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 2 {
                    return Held::Element;
                }
            }
            _ => {}
        }
        Held::More
    }

    /// Follows a byte outside `tools`: depth, strings, top-level member
    /// names, and where `tools`' array opens.
    /// A byte inside a string: true if it closed the string.
    fn string_byte(&mut self, b: u8) -> bool {
        match b {
            _ if self.escape => self.escape = false,
            b'\\' => self.escape = true,
            b'"' => {
                self.in_string = false;
                return true;
            }
            _ => {}
        }
        false
    }

    fn track(&mut self, b: u8) {
        if self.in_string {
            if self.string_byte(b) {
                if self.want_name && self.depth == 1 {
                    self.want_name = false;
                    let name = self.name.get(..self.name_len).unwrap_or_default();
                    self.tools_name =
                        self.name_len <= NAME && JsonStr::from_escaped(name).eq_str("tools");
                }
                return;
            }
            if self.want_name && self.depth == 1 {
                if let Some(slot) = self.name.get_mut(self.name_len) {
                    *slot = b;
                }
                self.name_len = self.name_len.saturating_add(1);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.name_len = 0;
            }
            b'{' | b'[' => {
                self.depth = self.depth.saturating_add(1);
                if self.depth == 1 {
                    self.want_name = b == b'{';
                } else if self.depth == 2 && b == b'[' && self.tools_name {
                    self.in_tools = true;
                    self.kept_one = false;
                }
                self.tools_name = false;
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => {
                self.want_name = true;
                self.tools_name = false;
            }
            b' ' | b'\t' | b'\n' | b'\r' | b':' => {}
            // A scalar value at the top level: not `tools`' array.
            _ if self.depth == 1 => self.tools_name = false,
            _ => {}
        }
    }
}

/// Writes `n` in decimal.
fn write_u64<W: Write + ?Sized>(n: u64, out: &mut W) -> Result<(), crate::BufferFull> {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i = i.saturating_sub(1);
        if let Some(d) = digits.get_mut(i) {
            *d = b'0'.saturating_add((n % 10) as u8);
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    out.write_bytes(digits.get(i..).unwrap_or_default())
}
