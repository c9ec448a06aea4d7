//! A request body — the `RunAgentInput` JSON a client POSTs to run an
//! agent — checked as it streams past, in any split, in fixed memory: the
//! verdict of the reference's `RunAgentInputSchema.parse` (`@ag-ui/core`
//! 1.0.0 for [`Dialect::V1`], 0.0.59 for [`Dialect::V0`]).
//!
//! A body that fits the buffer is held whole and checked at its end: the
//! one-shot validator, then the schema over the decoded body. One that
//! outgrows it (or fails) goes through the spilled-frame machinery rooted
//! at `RunAgentInput`, which also finds where a failing body fails: the JSON's
//! syntax is checked with V8's messages and positions, and a stand-in is
//! written into the caller's buffer. Each element of an array the schema
//! reads (messages, their content parts and tool calls, tools, context,
//! resume entries) is checked as it ends and let go if it passes; one that
//! fails stays and is marked with its path and offset. A value no rule reads
//! (a tool result, a base64 image, a tool's `parameters`, `state`) becomes
//! the empty value of its kind where it does not fit. At the end the
//! stand-in — the top-level members, with every array emptied but for a
//! failing element — is checked whole, so duplicate members resolve as
//! `JSON.parse` resolves them (the last wins).

mod path;

use core::fmt;

pub use path::{MemberPath, Step};

use crate::capacity::{Capacity, saturate};
use crate::check::schema::{self, Fault, SchemaProblem, Site, describe};
use crate::check::spilled::{Found, Marks, RequestEnd, Spilling};
use crate::input::json::{self, ErrorKind as JsonErrorKind, Limits, V8Message};
use crate::protocol::dialect::Dialect;
use crate::protocol::event_type::Member;
use crate::protocol::schema::{self as tables, SchemaObject, Shape};
use crate::view::json::RawJson;

/// Checks a request body pushed in pieces of any size, in the buffer it is
/// given (which bounds the members a rule reads, not the body): `push`
/// every piece, then [`finish`](Self::finish).
///
/// ```
/// use agui_stream::{Dialect, RequestChecker, RequestErrorKind};
/// let body = br#"{"threadId":"t","runId":"r","messages":[
///   {"id":"1","role":"user","content":"hi"},
///   {"id":"2","role":"user","content":[{"type":"image"}]}]}"#;
/// let mut buf = [0u8; 1024];
/// let mut checker = RequestChecker::new(&mut buf, Dialect::V1);
/// for piece in body.chunks(7) {
///     checker.push(piece).unwrap();
/// }
/// let e = checker.finish().unwrap_err();
/// assert!(matches!(e.kind, RequestErrorKind::Schema { .. }));
/// assert_eq!(e.path.to_string(), "messages[1].content[0]");
/// assert_eq!(e.offset, 121); // where that part starts
/// ```
#[derive(Debug)]
pub struct RequestChecker<'b> {
    buf: &'b mut [u8],
    /// The body's bytes held whole in `buf`, while they fit (`None`: it
    /// streams through `body`).
    whole: Option<usize>,
    body: Spilling<Marks>,
    dialect: Dialect,
    bom: Bom,
    /// V8's message for the last JSON error.
    message: Option<V8Message>,
}

/// A leading byte order mark, which the reference's decoder drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bom {
    /// This many of its bytes matched so far (held back).
    Matching(u8),
    /// Dropped: offsets in the text are 3 less than in the body.
    Dropped,
    /// None.
    Absent,
}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Why a request body is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RequestError {
    /// What is wrong.
    pub kind: RequestErrorKind,
    /// The body offset: of a JSON error's byte; of the value the path names
    /// (for a missing member, of the last byte of its object); of where a
    /// capacity ran out.
    pub offset: u64,
    /// Where in the body (empty for JSON errors).
    pub path: MemberPath,
}

/// What a [`RequestError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RequestErrorKind {
    /// The body is not JSON (the reference's stage `json`).
    Json(json::Error),
    /// The JSON breaks a rule of `RunAgentInputSchema` (stage `schema`):
    /// `object.field` is where, as the schema names it.
    Schema {
        /// The object the rule is about.
        object: SchemaObject,
        /// Its member (`None`: the object itself).
        field: Option<Member>,
        /// The rule.
        problem: SchemaProblem,
    },
    /// A fixed capacity ran out before a verdict.
    Capacity(Capacity),
}

impl RequestErrorKind {
    /// The reference's stage for this verdict: `"json"` or `"schema"`
    /// (`None`: no verdict, a capacity ran out).
    pub const fn stage(&self) -> Option<&'static str> {
        match self {
            RequestErrorKind::Json(_) => Some("json"),
            RequestErrorKind::Schema { .. } => Some("schema"),
            RequestErrorKind::Capacity(_) => None,
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            RequestErrorKind::Json(e) => write!(f, "request body is not JSON: {e}"),
            RequestErrorKind::Schema {
                object,
                field,
                problem,
            } => {
                write!(f, "invalid RunAgentInput at {}: ", self.path)?;
                describe(f, object, field, problem)?;
                write!(f, " (byte {})", self.offset)
            }
            RequestErrorKind::Capacity(c) => write!(f, "{c} (byte {})", self.offset),
        }
    }
}

impl core::error::Error for RequestError {}

impl<'b> RequestChecker<'b> {
    /// A checker of one body in `dialect`, whose stand-in goes in `buf`.
    /// Whatever its size, any body whose members a rule reads (ids, roles,
    /// tags) fit is checked; 1 KiB holds ordinary ones. JSON nested deeper
    /// than 1,024 levels (64 in a buffer under 512 bytes) is a
    /// [`Capacity::JsonDepth`] error.
    pub fn new(buf: &'b mut [u8], dialect: Dialect) -> Self {
        RequestChecker {
            buf,
            whole: Some(0),
            body: Spilling::request(dialect, tables::request(dialect), Limits::new()),
            dialect,
            bom: Bom::Matching(0),
            message: None,
        }
    }

    /// Reads the next bytes of the body. An error here is the verdict
    /// whatever follows (a JSON syntax error); others come from
    /// [`finish`](Self::finish).
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), RequestError> {
        while let (Bom::Matching(n), Some(&b)) = (self.bom, bytes.first()) {
            if BOM.get(usize::from(n)) == Some(&b) {
                bytes = bytes.get(1..).unwrap_or_default();
                self.bom = match n {
                    2 => Bom::Dropped,
                    n => Bom::Matching(n.saturating_add(1)),
                };
            } else {
                self.release_bom();
            }
        }
        self.feed(bytes);
        if self.whole.is_none() && self.body.failed() {
            return self.verdict();
        }
        Ok(())
    }

    /// Holds `bytes` while the body fits the buffer; streams them after.
    fn feed(&mut self, bytes: &[u8]) {
        if let Some(len) = self.whole {
            let end = len.saturating_add(bytes.len());
            match self.buf.get_mut(len..end) {
                Some(dst) => {
                    dst.copy_from_slice(bytes);
                    self.whole = Some(end);
                    return;
                }
                None => self.stream_held(),
            }
        }
        self.body.feed(bytes, self.buf);
    }

    /// Streams what is held through the spilled-frame machinery.
    fn stream_held(&mut self) {
        if let Some(len) = self.whole.take() {
            self.body.begin_held(self.buf, len);
        }
    }

    /// The body ended: the reference's verdict on it.
    pub fn finish(&mut self) -> Result<(), RequestError> {
        if let Bom::Matching(_) = self.bom {
            self.release_bom();
        }
        self.verdict()
    }

    /// V8's message for a JSON error `finish` or `push` returned, as the
    /// reference's result line has it (positions in UTF-16 units of the
    /// decoded text).
    pub fn json_message(&self) -> Option<impl fmt::Display + '_> {
        self.message.as_ref()
    }

    /// Ends the checker and gives its buffer back, for the next body.
    pub fn into_buffer(self) -> &'b mut [u8] {
        self.buf
    }

    /// A prefix of a BOM that was not one: its bytes are the body's.
    fn release_bom(&mut self) {
        if let Bom::Matching(n) = self.bom {
            self.bom = Bom::Absent;
            let held = BOM.get(..usize::from(n)).unwrap_or_default();
            self.feed(held);
        }
    }

    /// Body offset of text offset `at`.
    fn offset(&self, at: u64) -> u64 {
        match self.bom {
            Bom::Dropped => at.saturating_add(3),
            _ => at,
        }
    }

    fn verdict(&mut self) -> Result<(), RequestError> {
        if let Some(len) = self.whole {
            let text = self.buf.get(..len).unwrap_or_default();
            match json::validate(text, Limits::new()) {
                Err(e) if !matches!(e.kind, JsonErrorKind::TooDeep { .. }) => {
                    self.message = Some(V8Message::new(text, e));
                    return Err(RequestError {
                        kind: RequestErrorKind::Json(e),
                        offset: self.offset(u64::from(e.offset)),
                        path: MemberPath::root(),
                    });
                }
                Ok(()) => {
                    let shape = Shape::Object(tables::request(self.dialect));
                    if schema::check(RawJson::trusted(text), &shape, SITE).is_ok() {
                        return Ok(());
                    }
                }
                Err(_) => {}
            }
            // Where it fails (or too deep for the one-shot validator): the
            // streaming check says, with the path and offset.
            self.stream_held();
        }
        let capacity = saturate(self.buf.len());
        let (kind, at, path) = match self.body.request_end(self.buf) {
            RequestEnd::Json(e, message) => {
                self.message = message;
                let kind = match e.kind {
                    JsonErrorKind::TooDeep { limit } => {
                        RequestErrorKind::Capacity(Capacity::JsonDepth {
                            limit: u32::from(limit),
                        })
                    }
                    _ => RequestErrorKind::Json(e.json()),
                };
                (kind, e.offset as u64, MemberPath::root())
            }
            RequestEnd::TooLarge { at } => (
                RequestErrorKind::Capacity(Capacity::RequestBuffer { capacity }),
                at,
                MemberPath::root(),
            ),
            RequestEnd::StandIn { stand_in, marks } => {
                let shape = Shape::Object(tables::request(self.dialect));
                match schema::check(RawJson::trusted(stand_in), &shape, SITE) {
                    Ok(_) => return Ok(()),
                    Err(fault) => locate(fault, marks, self.dialect),
                }
            }
        };
        Err(RequestError {
            kind,
            offset: self.offset(at),
            path,
        })
    }
}

/// The body's own site (a fault on it is the whole body's).
const SITE: Site = Site {
    object: SchemaObject::RunAgentInput,
    field: None,
};

/// Where the stand-in's `fault` is in the body: at the first failing
/// element, if the fault is in its top-level member; else at the
/// top-level member (or the body).
fn locate(fault: Fault, marks: &Marks, dialect: Dialect) -> (RequestErrorKind, u64, MemberPath) {
    let (site, problem) = match fault {
        Fault::Schema(site, problem) => (site, problem),
        Fault::LegacyPartBudget => {
            let c = Capacity::LegacyParts {
                budget: saturate(crate::view::shaped::LEGACY_COMPARISON_BUDGET),
            };
            return (RequestErrorKind::Capacity(c), marks.end, MemberPath::root());
        }
    };
    let schema = |site: Site, problem| RequestErrorKind::Schema {
        object: site.object,
        field: site.field,
        problem,
    };
    let fields = tables::request(dialect).fields;
    let index = fields.iter().position(|f| Some(f.name) == site.field);
    // The stand-in's fault is the first failing element's, unless it is
    // in another top-level member (a failing element a duplicate member
    // replaced does not count).
    let top = site.object == SchemaObject::RunAgentInput && index.is_some();
    match marks.found {
        Some(Found {
            path,
            offset,
            fault: Fault::Schema(at, p),
        }) if !top || path.steps().first().and_then(|s| s.member) == site.field => {
            (schema(at, p), offset, path)
        }
        _ => {
            let at = match (problem, index) {
                (SchemaProblem::Missing, _) => marks.end,
                (_, Some(i)) => marks.fields.get(i).copied().unwrap_or(marks.start),
                (_, None) => marks.start,
            };
            let path = match site.field {
                Some(m) if top => MemberPath::member(m),
                _ => MemberPath::root(),
            };
            (schema(site, problem), at, path)
        }
    }
}

const _: () = assert!(
    tables::v1::REQUEST.fields.len() <= crate::check::spilled::REQUEST_FIELDS
        && tables::v0::REQUEST.fields.len() <= crate::check::spilled::REQUEST_FIELDS
);
