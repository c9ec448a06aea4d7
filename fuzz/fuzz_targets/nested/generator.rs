//! A structure-aware generator for the `buffers` target: input bytes → an
//! AG-UI run (RUN_STARTED … RUN_FINISHED) whose frames carry nested values
//! from a few bytes to about 20 KB, in the shapes of both dialects, with
//! member order sometimes shuffled and sometimes one mutation.
//!
//! The bytes are read front to back as draws (`Bytes`); running out is not
//! an error: every draw is then 0, which means "the smallest, no, stop"
//! (as `arbitrary`'s `Unstructured` has it), so a short input makes a short
//! run and every input makes one. Long strings repeat a drawn chunk, so a
//! few bytes of input can make kilobytes of stream; the stream is capped at
//! [`MAX_STREAM`] bytes.

/// The most bytes a generated stream has (about; one last frame may pass it
/// by its closing events).
pub const MAX_STREAM: usize = 56 * 1024;

/// Draws from the fuzzer's bytes; 0 once they run out.
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data }
    }

    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// `0..n` (0 for `n` ≤ 1).
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 | 1 => 0,
            2..=256 => usize::from(self.u8()) % n,
            _ => usize::from(self.u16()) % n,
        }
    }

    /// True `num` times in `den` (false once the bytes run out).
    pub fn ratio(&mut self, num: u8, den: u8) -> bool {
        self.u8() % den >= den - num
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// An object's members, in order (duplicates kept).
type Members = Vec<(String, J)>;

/// A JSON value as it will be written: strings hold their JSON text
/// (escapes included) without the quotes, numbers theirs; `Raw` is any
/// text (a mutation's). `Obj`'s flag marks an object a schema reads (an
/// event, a message, a part…), which mutations prefer to a value's.
#[derive(Clone, Debug)]
pub enum J {
    Lit(&'static str),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Members, bool),
    Raw(Vec<u8>),
}

fn s(text: impl Into<String>) -> J {
    J::Str(text.into())
}

fn num(n: impl ToString) -> J {
    J::Num(n.to_string())
}

/// A schema object from its members.
fn obj(members: Vec<(&str, J)>) -> J {
    J::Obj(
        members
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        true,
    )
}

impl J {
    /// Bytes of its JSON text.
    pub fn size(&self) -> usize {
        match self {
            J::Lit(t) => t.len(),
            J::Num(t) => t.len(),
            J::Str(t) => t.len() + 2,
            J::Raw(t) => t.len(),
            J::Arr(v) => 2 + v.iter().map(|e| e.size() + 1).sum::<usize>(),
            J::Obj(m, _) => 2 + m.iter().map(|(k, v)| k.len() + 4 + v.size()).sum::<usize>(),
        }
    }

    fn push(&mut self, key: &str, value: J) {
        if let J::Obj(m, _) = self {
            m.push((key.to_string(), value));
        }
    }
}

/// A frame's JSON text, with where its large values are and where a data
/// line may be broken (after a comma between members or elements).
#[derive(Default)]
pub struct Text {
    pub bytes: Vec<u8>,
    /// `(start, end, string)` of every value of 200 bytes or more.
    pub spans: Vec<(usize, usize, bool)>,
    pub commas: Vec<usize>,
}

pub fn write(j: &J, t: &mut Text) {
    let start = t.bytes.len();
    match j {
        J::Lit(x) => t.bytes.extend_from_slice(x.as_bytes()),
        J::Num(x) => t.bytes.extend_from_slice(x.as_bytes()),
        J::Raw(x) => t.bytes.extend_from_slice(x),
        J::Str(x) => {
            t.bytes.push(b'"');
            t.bytes.extend_from_slice(x.as_bytes());
            t.bytes.push(b'"');
        }
        J::Arr(v) => {
            t.bytes.push(b'[');
            for (i, e) in v.iter().enumerate() {
                if i > 0 {
                    t.bytes.push(b',');
                    t.commas.push(t.bytes.len());
                }
                write(e, t);
            }
            t.bytes.push(b']');
        }
        J::Obj(m, _) => {
            t.bytes.push(b'{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    t.bytes.push(b',');
                    t.commas.push(t.bytes.len());
                }
                t.bytes.push(b'"');
                t.bytes.extend_from_slice(k.as_bytes());
                t.bytes.extend_from_slice(b"\":");
                write(v, t);
            }
            t.bytes.push(b'}');
        }
    }
    let end = t.bytes.len();
    if end - start >= 200 {
        t.spans.push((start, end, matches!(j, J::Str(_))));
    }
}

/// `text` as the content of a JSON string.
pub fn escape(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// What a chunk of a generated string is made of: words, every escape,
/// two- and three-byte characters, astral ones raw and as surrogate pairs,
/// lone surrogates, and text that looks like JSON or SSE.
const PIECES: &[&str] = &[
    "a",
    "lorem ",
    "ipsum",
    " ",
    "x",
    "Zz",
    "\\n",
    "\\\"",
    "\\\\",
    "\\/",
    "\\t",
    "\\r",
    "\\b",
    "\\f",
    "\\u00e9",
    "\\u0000",
    "\\u001f",
    "\\u2028",
    "\\ud83d\\ude00",
    "\\uD834\\uDD1E",
    "\\ud800",
    "\\udc00",
    "\\u0041",
    "é",
    "—",
    "€",
    "😀",
    "𝄞",
    "日本語",
    "{\\\"k\\\":[1,2]}",
    "data: ",
    ",",
    "}",
    "]",
    ":",
    "0123456789",
    "~1",
    "/",
    "'",
    "<>&",
];
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const WORDS: &[&str] = &[
    "id", "name", "value", "items", "data", "k", "type", "role", "content", "text", "path", "op",
    "state", "nested", "list", "é", "",
];
const MIME: &[&str] = &[
    "image/png",
    "audio/wav",
    "video/mp4",
    "application/pdf",
    "text/plain",
];
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "3.5",
    "1e3",
    "2.0",
    "9007199254740991",
    "-0",
    "1E-7",
    "42",
    "0.1",
    "123456789012345678901234567890",
    "-2.5e-3",
];
const POINTERS: &[&str] = &[
    "",
    "/a",
    "/a/0",
    "/x~1y",
    "/~0",
    "/-",
    "/state/items/-",
    "/é/0/k",
];
const BAD_POINTERS: &[&str] = &["a", "draft", "/a/~2", "/~", "/x/~x", "a/b", "~1"];

/// The generated run: its frames (trees, with their texts) before framing.
pub struct Run {
    pub frames: Vec<J>,
    /// SSE framing variations: `data:` without the space, CRLF line ends,
    /// comments and `id:`/`event:` lines between frames, JSON over several
    /// `data:` lines.
    framing: u8,
    /// Where to cut the stream, inside the last frame's JSON (a truncation).
    cut: Option<(usize, usize)>,
    /// A text mutation of one frame: `(frame, at, insert, delete)`.
    edit: Option<(usize, usize, &'static [u8], usize)>,
}

/// Which features a stream uses (swarm testing: each input turns some off).
#[derive(Clone, Copy)]
struct Swarm {
    shuffle: bool,
    mutate: bool,
    subagents: bool,
    large: bool,
    base_members: bool,
}

pub struct Gen<'a> {
    b: Bytes<'a>,
    swarm: Swarm,
    /// Bytes of string content left to generate.
    left: usize,
    next_id: usize,
    /// Ids of messages in histories and run inputs, reused now and then.
    history: Vec<String>,
    subagent: Option<String>,
}

/// Generates a run from `data`.
pub fn generate(data: &[u8]) -> Run {
    let mut b = Bytes::new(data);
    let flags = b.u8();
    let swarm = Swarm {
        shuffle: flags & 1 != 0,
        mutate: flags & 2 != 0,
        subagents: flags & 4 != 0,
        large: flags & 8 == 0,
        base_members: flags & 16 != 0,
    };
    let framing = b.u8();
    let mut g = Gen {
        b,
        swarm,
        left: MAX_STREAM - 2048,
        next_id: 0,
        history: Vec::new(),
        subagent: None,
    };
    let mut frames = vec![g.run_started()];
    let mut total = frames[0].size();
    while total < MAX_STREAM - 4096 && !g.b.is_empty() {
        let before = frames.len();
        if !g.episode(&mut frames) {
            break;
        }
        total += frames[before..].iter().map(|f| f.size() + 8).sum::<usize>();
    }
    if let Some(sub) = g.subagent.take() {
        frames.push(obj(vec![
            ("type", s("SUBAGENT_FINISHED")),
            ("subagentRunId", s(sub)),
        ]));
    }
    let end = g.run_finished();
    frames.push(end);
    let mut run = Run {
        frames,
        framing,
        cut: None,
        edit: None,
    };
    if g.swarm.mutate {
        g.mutate(&mut run);
    }
    run
}

impl Run {
    /// The SSE stream.
    pub fn stream(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let f = self.framing;
        let eol: &[u8] = if f & 0x07 == 1 { b"\r\n" } else { b"\n" };
        let data: &[u8] = if f & 0x18 == 0x08 {
            b"data:"
        } else {
            b"data: "
        };
        for (i, frame) in self.frames.iter().enumerate() {
            let mut t = Text::default();
            write(frame, &mut t);
            let mut json = t.bytes;
            let mut commas = t.commas;
            if let Some((k, at, insert, delete)) = self.edit
                && k == i
            {
                let at = at.min(json.len());
                let end = (at + delete).min(json.len());
                json.splice(at..end, insert.iter().copied());
                commas.retain(|&c| c <= at);
            }
            if let Some((k, at)) = self.cut
                && k == i
            {
                out.extend_from_slice(data);
                out.extend_from_slice(&json[..at.min(json.len())]);
                return out;
            }
            if f & 0x20 != 0 && i % 3 == 1 {
                out.extend_from_slice(b": ping");
                out.extend_from_slice(eol);
                out.extend_from_slice(eol);
            }
            if f & 0x40 != 0 && i % 2 == 0 {
                out.extend_from_slice(format!("id: {i}").as_bytes());
                out.extend_from_slice(eol);
                out.extend_from_slice(b"event: message");
                out.extend_from_slice(eol);
            }
            out.extend_from_slice(data);
            if f & 0x80 != 0 && !commas.is_empty() {
                // One event over several data lines, broken after commas.
                let step = commas.len() / 3 + 1;
                let mut from = 0;
                for &c in commas.iter().step_by(step) {
                    out.extend_from_slice(&json[from..c]);
                    out.extend_from_slice(eol);
                    out.extend_from_slice(data);
                    from = c;
                }
                out.extend_from_slice(&json[from..]);
            } else {
                out.extend_from_slice(&json);
            }
            out.extend_from_slice(eol);
            out.extend_from_slice(eol);
        }
        out
    }
}

impl Gen<'_> {
    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        match self.b.u8() % 8 {
            // UUID-sized, as real producers write them
            0 => format!("{prefix}-3f9c2a7e-0000-4000-8000-{:012}", self.next_id),
            // an escape in an id
            1 => format!("{prefix}\\u00e9{}", self.next_id),
            _ => format!("{prefix}{}", self.next_id),
        }
    }

    /// An id for a message: now and then one from a history (an owner
    /// record a rule may look up).
    fn message_id(&mut self) -> String {
        if !self.history.is_empty() && self.b.ratio(1, 6) {
            let i = self.b.below(self.history.len());
            return self.history[i].clone();
        }
        self.id("m")
    }

    /// A length for a string: tiny to about 20 KB, within what is left.
    fn length(&mut self) -> usize {
        let n = match self.b.u8() % 32 {
            0..=11 => self.b.below(9),
            12..=19 => 9 + self.b.below(56),
            20..=25 => 64 + self.b.below(900),
            26..=29 if self.swarm.large => 900 + self.b.below(5200),
            _ if self.swarm.large => 6000 + self.b.below(14000),
            _ => 64 + self.b.below(400),
        };
        let n = n.min(self.left);
        self.left -= n;
        n
    }

    /// How many of `n` copies of a value of `size` bytes fit what is left
    /// (at least one), which they spend.
    fn copies(&mut self, n: usize, size: usize) -> usize {
        let n = n.min(1 + self.left / (size + 1));
        self.left -= n.saturating_sub(1) * (size + 1);
        n
    }

    /// A count of members or elements.
    fn count(&mut self) -> usize {
        match self.b.u8() % 16 {
            0..=7 => self.b.below(4),
            8..=12 => 4 + self.b.below(8),
            13..=14 => 12 + self.b.below(30),
            _ => 42 + self.b.below(160),
        }
    }

    /// A string of JSON text of about `len` bytes: a drawn chunk, repeated.
    fn text_of(&mut self, len: usize) -> String {
        let pieces: Vec<&str> = (0..1 + self.b.below(12))
            .map(|_| self.b.pick(PIECES))
            .collect();
        let mut out = String::with_capacity(len + 16);
        let mut i = 0;
        while out.len() < len {
            out.push_str(pieces[i % pieces.len()]);
            i += 1;
        }
        out
    }

    fn text(&mut self) -> J {
        let len = self.length();
        J::Str(self.text_of(len))
    }

    /// The text of an event the pipeline synthesizes others from (a
    /// chunk, V0's `THINKING_*`): mostly small, as a gateway must
    /// re-encode those and stops where one outgrew its buffers (a
    /// documented limit, which would end most comparisons early).
    fn synthesized_text(&mut self) -> J {
        if self.b.ratio(1, 8) {
            return self.text();
        }
        let len = self.length().min(600);
        J::Str(self.text_of(len))
    }

    fn base64(&mut self) -> J {
        let len = self.length();
        let chunk: Vec<u8> = (0..4 + self.b.below(60))
            .map(|_| self.b.pick(BASE64))
            .collect();
        let mut out = String::with_capacity(len + 4);
        let mut i = 0;
        while out.len() < len {
            out.push(char::from(chunk[i % chunk.len()]));
            i += 1;
        }
        J::Str(out)
    }

    /// Any JSON value, nested.
    fn any(&mut self, depth: usize) -> J {
        let kind = self.b.u8() % 16;
        match kind {
            0 => J::Lit("null"),
            1 => J::Lit(if self.b.ratio(1, 2) { "true" } else { "false" }),
            2 | 3 => J::Num(self.b.pick(NUMBERS).to_string()),
            4..=7 => self.text(),
            8..=11 if depth < 8 => self.any_object(depth),
            12..=14 if depth < 8 => self.any_array(depth),
            15 => self.deep(),
            _ => self.text(),
        }
    }

    fn any_object(&mut self, depth: usize) -> J {
        let n = self.count();
        let mut m = Vec::with_capacity(n);
        for i in 0..n {
            let key = format!(
                "{}{}",
                self.b.pick(WORDS),
                if i % 3 == 2 { "" } else { "_" }
            );
            let key = if self.b.ratio(1, 8) {
                format!("{key}{i}")
            } else {
                key
            };
            m.push((key, self.any(depth + 1)));
            if self.left == 0 && self.b.is_empty() {
                break;
            }
        }
        J::Obj(m, false)
    }

    fn any_array(&mut self, depth: usize) -> J {
        let n = self.count();
        if self.b.ratio(1, 3) {
            // one element, repeated: large arrays from few bytes
            let e = self.any(depth + 1);
            let n = self.copies(n, e.size());
            return J::Arr(vec![e; n]);
        }
        J::Arr((0..n).map(|_| self.any(depth + 1)).collect())
    }

    /// Nesting 1 to 40 levels deep, or now and then to 200 (past the 64
    /// a small buffer keeps without room to spare).
    fn deep(&mut self) -> J {
        let depth = if self.b.ratio(1, 4) {
            1 + self.b.below(200)
        } else {
            1 + self.b.below(40)
        };
        let arrays = self.b.ratio(1, 2);
        let mut j = self.text();
        for _ in 0..depth {
            j = if arrays {
                J::Arr(vec![j])
            } else {
                J::Obj(vec![("k".to_string(), j)], false)
            };
        }
        j
    }

    /// Any object (for `metadata`, `content`, `responseSchema`…).
    fn record(&mut self) -> J {
        match self.any_object(1) {
            J::Obj(m, _) if m.is_empty() && self.b.ratio(1, 2) => {
                let t = self.text();
                J::Obj(vec![("body".to_string(), t)], false)
            }
            o => o,
        }
    }

    /// A JSON Schema-looking object of drawn size.
    fn schema(&mut self) -> J {
        let n = self.count();
        let mut props = Vec::new();
        for i in 0..n {
            let p = match self.b.u8() % 4 {
                0 => obj(vec![("type", s("string")), ("description", self.text())]),
                1 => obj(vec![
                    ("type", s("array")),
                    ("items", obj(vec![("type", s("number"))])),
                ]),
                2 => obj(vec![("type", s("object")), ("properties", self.record())]),
                _ => obj(vec![("enum", J::Arr(vec![s("a"), num(1), J::Lit("null")]))]),
            };
            props.push((format!("p{i}"), p));
        }
        obj(vec![
            ("type", s("object")),
            ("properties", J::Obj(props, false)),
            ("required", J::Arr(vec![s("p0")])),
        ])
    }

    /// A JSON text, as a string's content (tool-call arguments).
    fn arguments(&mut self) -> J {
        let v = self.any(2);
        let mut t = Text::default();
        write(&v, &mut t);
        J::Str(escape(&t.bytes))
    }

    /// Shuffles a schema object's members, now and then: the largest
    /// first (before the tag a union is read by), the tag (`type`, `role`,
    /// `op`) last, or in a drawn order.
    fn arrange(&mut self, j: &mut J) {
        if !self.swarm.shuffle {
            return;
        }
        let J::Obj(m, _) = j else { return };
        if m.len() < 2 {
            return;
        }
        match self.b.u8() % 8 {
            0 | 1 => {
                let largest = (0..m.len()).max_by_key(|&i| m[i].1.size()).unwrap_or(0);
                let member = m.remove(largest);
                m.insert(0, member);
            }
            2 | 3 => {
                if let Some(i) = m
                    .iter()
                    .position(|(k, _)| k == "type" || k == "role" || k == "op")
                {
                    let member = m.remove(i);
                    m.push(member);
                }
            }
            4 => {
                for i in (1..m.len()).rev() {
                    let k = self.b.below(i + 1);
                    m.swap(i, k);
                }
            }
            _ => {}
        }
    }

    // ------------------------------------------------------------ shapes

    fn source(&mut self) -> J {
        let mut src = match self.b.u8() % 4 {
            0 | 1 => obj(vec![
                ("type", s("data")),
                ("value", self.base64()),
                ("mimeType", s(self.b.pick(MIME))),
            ]),
            2 => {
                let mut o = obj(vec![("type", s("url")), ("value", self.text())]);
                if self.b.ratio(1, 2) {
                    o.push("mimeType", s(self.b.pick(MIME)));
                }
                o
            }
            _ => {
                let mut o = obj(vec![("type", s("file")), ("value", s(self.id("file")))]);
                if self.b.ratio(1, 2) {
                    o.push("provider", s("openai"));
                }
                o
            }
        };
        self.arrange(&mut src);
        src
    }

    /// A content part, of either dialect (V0's `binary` among them).
    fn part(&mut self, in_message: bool) -> J {
        let kinds: &[&str] = if in_message {
            &[
                "text", "text", "image", "audio", "video", "document", "binary",
            ]
        } else {
            &["text", "text", "image", "audio", "video", "document"]
        };
        let kind = self.b.pick(kinds);
        let mut p = match kind {
            "text" => obj(vec![("type", s("text")), ("text", self.text())]),
            "binary" => {
                let mut o = obj(vec![
                    ("type", s("binary")),
                    ("mimeType", s(self.b.pick(MIME))),
                ]);
                match self.b.u8() % 3 {
                    0 => o.push("data", self.base64()),
                    1 => o.push("url", self.text()),
                    _ => o.push("id", s(self.id("bin"))),
                }
                if self.b.ratio(1, 2) {
                    o.push("filename", s("trace.png"));
                }
                o
            }
            media => obj(vec![("type", s(media)), ("source", self.source())]),
        };
        if self.b.ratio(1, 4) {
            p.push("id", s(self.id("part")));
        }
        if kind != "binary" && self.b.ratio(1, 4) {
            let meta = if self.b.ratio(1, 4) {
                J::Lit("null")
            } else {
                self.record()
            };
            p.push("metadata", meta);
        }
        self.arrange(&mut p);
        p
    }

    fn parts(&mut self, in_message: bool) -> J {
        let n = 1 + self.b.below(6);
        J::Arr((0..n).map(|_| self.part(in_message)).collect())
    }

    /// A user or tool message's content: a string, or parts.
    fn content(&mut self, in_message: bool) -> J {
        if self.b.ratio(1, 2) {
            self.parts(in_message)
        } else {
            self.text()
        }
    }

    fn tool_call(&mut self) -> J {
        let mut f = obj(vec![
            ("name", s("read_file")),
            ("arguments", self.arguments()),
        ]);
        self.arrange(&mut f);
        let id = self.id("call_");
        let mut c = obj(vec![
            ("id", s(id)),
            ("type", s("function")),
            ("function", f),
        ]);
        if self.b.ratio(1, 6) {
            c.push("encryptedValue", self.base64());
        }
        if self.b.ratio(1, 6) {
            c.push("metadata", self.record());
        }
        self.arrange(&mut c);
        c
    }

    /// A history message of any role.
    fn message(&mut self) -> J {
        let role = self.b.pick(&[
            "user",
            "assistant",
            "tool",
            "system",
            "developer",
            "activity",
            "reasoning",
            "user",
            "assistant",
            "tool",
        ]);
        let id = self.id("h");
        self.history.push(id.clone());
        let mut m = obj(vec![("id", s(id)), ("role", s(role))]);
        match role {
            "user" => m.push("content", self.content(true)),
            "assistant" => {
                if self.b.ratio(2, 3) {
                    m.push("content", self.text());
                }
                if self.b.ratio(1, 2) {
                    let n = 1 + self.b.below(4);
                    let calls = (0..n).map(|_| self.tool_call()).collect();
                    m.push("toolCalls", J::Arr(calls));
                }
            }
            "tool" => {
                m.push("content", self.content(true));
                m.push("toolCallId", s(self.id("call_")));
                if self.b.ratio(1, 6) {
                    m.push("error", self.text());
                }
            }
            "activity" => {
                m.push("activityType", s("plan"));
                m.push("content", self.record());
            }
            _ => m.push("content", self.text()),
        }
        if self.b.ratio(1, 8) {
            m.push("name", s("agent"));
        }
        if self.b.ratio(1, 8) {
            m.push("encryptedValue", self.base64());
        }
        if self.b.ratio(1, 8) {
            m.push("metadata", self.record());
        }
        if self.b.ratio(1, 6) {
            let sub = self
                .subagent
                .clone()
                .unwrap_or_else(|| "sub-history".to_string());
            m.push("subagentRunId", s(sub));
        }
        self.arrange(&mut m);
        m
    }

    fn messages(&mut self) -> J {
        let n = self.count();
        let distinct = 1 + self.b.below(n.clamp(1, 12));
        let mut out: Vec<J> = (0..distinct).map(|_| self.message()).collect();
        // The rest repeat the drawn ones under fresh ids: long histories
        // from few bytes.
        for i in distinct..n {
            let mut m = out[i % distinct].clone();
            if self.copies(2, m.size()) < 2 {
                break;
            }
            if let J::Obj(members, _) = &mut m {
                for (k, v) in members.iter_mut() {
                    if k == "id" {
                        self.next_id += 1;
                        let id = format!("r{}", self.next_id);
                        self.history.push(id.clone());
                        *v = s(id);
                    }
                }
            }
            out.push(m);
        }
        J::Arr(out)
    }

    fn patch(&mut self) -> J {
        let n = 1 + self.count();
        let mut ops = Vec::with_capacity(n);
        for _ in 0..n {
            let op = self
                .b
                .pick(&["add", "remove", "replace", "move", "copy", "test", "add"]);
            let mut o = obj(vec![("op", s(op)), ("path", s(self.b.pick(POINTERS)))]);
            match op {
                "add" | "replace" | "test" => o.push("value", self.any(1)),
                "move" | "copy" => o.push("from", s(self.b.pick(POINTERS))),
                _ => {}
            }
            self.arrange(&mut o);
            ops.push(o);
        }
        J::Arr(ops)
    }

    fn usage(&mut self) -> J {
        let n = 1 + self.b.below(3);
        J::Arr(
            (0..n)
                .map(|_| {
                    obj(vec![
                        ("provider", s("openai")),
                        ("model", s("gpt")),
                        ("inputTokens", num(self.b.u16())),
                        ("outputTokens", num(self.b.u8())),
                        ("totalTokens", num(self.b.u16())),
                    ])
                })
                .collect(),
        )
    }

    fn interrupt(&mut self) -> J {
        let mut i = obj(vec![("id", s(self.id("int-"))), ("reason", s("approval"))]);
        if self.b.ratio(2, 3) {
            i.push("message", self.text());
        }
        if self.b.ratio(1, 2) {
            i.push("toolCallId", s(self.id("call_")));
        }
        if self.b.ratio(2, 3) {
            i.push("responseSchema", self.schema());
        }
        if self.b.ratio(1, 3) {
            i.push("expiresAt", s("2026-12-31T00:00:00Z"));
        }
        if self.b.ratio(1, 3) {
            i.push("metadata", self.record());
        }
        self.arrange(&mut i);
        i
    }

    // ------------------------------------------------------------ events

    /// An event of `ty` with `members`, the base members now and then,
    /// attributed to the open subagent if `attributed`.
    fn event(&mut self, ty: &str, members: Vec<(&str, J)>, attributed: bool) -> J {
        let mut e = obj(vec![("type", s(ty))]);
        for (k, v) in members {
            e.push(k, v);
        }
        if self.swarm.base_members {
            if self.b.ratio(1, 6) {
                e.push(
                    "timestamp",
                    num(1_700_000_000_000u64 + u64::from(self.b.u16())),
                );
            }
            if self.b.ratio(1, 8) {
                e.push("rawEvent", self.any(1));
            }
            if self.b.ratio(1, 8) {
                e.push("metadata", self.record());
            }
        }
        if attributed && let Some(sub) = self.subagent.clone() {
            e.push("subagentRunId", s(sub));
        }
        self.arrange(&mut e);
        e
    }

    fn run_started(&mut self) -> J {
        let mut members = vec![("threadId", s("t1")), ("runId", s("r1"))];
        if self.b.ratio(1, 2) {
            let mut input = obj(vec![
                ("threadId", s("t1")),
                ("runId", s("r1")),
                ("messages", self.messages()),
            ]);
            if self.b.ratio(3, 4) {
                let n = self.b.below(4);
                let tools = (0..n)
                    .map(|i| {
                        let mut t = obj(vec![
                            ("name", s(format!("tool{i}"))),
                            ("description", self.text()),
                            ("parameters", self.schema()),
                        ]);
                        self.arrange(&mut t);
                        t
                    })
                    .collect();
                input.push("tools", J::Arr(tools));
            }
            if self.b.ratio(3, 4) {
                let n = self.b.below(4);
                let context = (0..n)
                    .map(|_| obj(vec![("description", s("the log")), ("value", self.text())]))
                    .collect();
                input.push("context", J::Arr(context));
            }
            if self.b.ratio(1, 2) {
                input.push("state", self.any(1));
            }
            if self.b.ratio(1, 2) {
                input.push("forwardedProps", self.record());
            }
            if self.b.ratio(1, 3) {
                let n = 1 + self.b.below(3);
                let resume = (0..n)
                    .map(|_| {
                        let mut r = obj(vec![
                            ("interruptId", s(self.id("int-"))),
                            ("status", s(self.b.pick(&["resolved", "cancelled"]))),
                        ]);
                        if self.b.ratio(1, 2) {
                            r.push("payload", self.any(1));
                        }
                        r
                    })
                    .collect();
                input.push("resume", J::Arr(resume));
            }
            self.arrange(&mut input);
            members.push(("input", input));
        }
        if self.b.ratio(1, 6) {
            members.push(("parentRunId", s("r0")));
        }
        self.event("RUN_STARTED", members, false)
    }

    fn run_finished(&mut self) -> J {
        let mut members = vec![("threadId", s("t1")), ("runId", s("r1"))];
        if self.b.ratio(1, 2) {
            members.push(("result", self.any(0)));
        }
        match self.b.u8() % 6 {
            0 | 1 => {}
            2 => {
                let mut o = obj(vec![("type", s("success"))]);
                if self.b.ratio(1, 2) {
                    o.push("pendingToolCallIds", J::Arr(vec![s("call_1")]));
                }
                members.push(("outcome", o));
            }
            3 | 4 => {
                let n = 1 + self.b.below(3);
                let interrupts = (0..n).map(|_| self.interrupt()).collect();
                let mut o = obj(vec![
                    ("type", s("interrupt")),
                    ("interrupts", J::Arr(interrupts)),
                ]);
                self.arrange(&mut o);
                members.push(("outcome", o));
            }
            _ => members.push(("outcome", obj(vec![("type", s("cancelled"))]))),
        }
        if self.b.ratio(1, 3) {
            members.push(("usage", self.usage()));
        }
        self.event("RUN_FINISHED", members, false)
    }

    /// One self-contained piece of a run (a message, a tool call, a
    /// snapshot…). False to stop.
    fn episode(&mut self, frames: &mut Vec<J>) -> bool {
        let choice = self.b.u8() % 20;
        let attributed = self.subagent.is_some() && self.b.ratio(1, 2);
        match choice {
            0 => return false,
            1 | 2 => {
                let id = self.message_id();
                let mut start = vec![("messageId", s(id.clone()))];
                if self.b.ratio(1, 2) {
                    start.push((
                        "role",
                        s(self.b.pick(&["assistant", "user", "system", "developer"])),
                    ));
                }
                frames.push(self.event("TEXT_MESSAGE_START", start, attributed));
                for _ in 0..1 + self.b.below(3) {
                    let delta = self.text();
                    let e = self.event(
                        "TEXT_MESSAGE_CONTENT",
                        vec![("messageId", s(id.clone())), ("delta", delta)],
                        attributed,
                    );
                    frames.push(e);
                }
                frames.push(self.event("TEXT_MESSAGE_END", vec![("messageId", s(id))], attributed));
            }
            3 | 4 => {
                let call = self.id("call_");
                let mut start = vec![
                    ("toolCallId", s(call.clone())),
                    ("toolCallName", s("search")),
                ];
                if self.b.ratio(1, 2) {
                    start.push(("parentMessageId", s(self.message_id())));
                }
                frames.push(self.event("TOOL_CALL_START", start, attributed));
                for _ in 0..self.b.below(3) {
                    let delta = self.arguments();
                    let e = self.event(
                        "TOOL_CALL_ARGS",
                        vec![("toolCallId", s(call.clone())), ("delta", delta)],
                        attributed,
                    );
                    frames.push(e);
                }
                frames.push(self.event(
                    "TOOL_CALL_END",
                    vec![("toolCallId", s(call.clone()))],
                    attributed,
                ));
                if self.b.ratio(3, 4) {
                    let mut members = vec![
                        ("messageId", s(self.message_id())),
                        ("toolCallId", s(call)),
                        ("content", self.content(false)),
                    ];
                    if self.b.ratio(1, 3) {
                        members.push(("role", s("tool")));
                    }
                    frames.push(self.event("TOOL_CALL_RESULT", members, attributed));
                }
            }
            5..=7 => {
                let messages = self.messages();
                frames.push(self.event("MESSAGES_SNAPSHOT", vec![("messages", messages)], false));
            }
            8 => {
                let snapshot = self.any(0);
                frames.push(self.event("STATE_SNAPSHOT", vec![("snapshot", snapshot)], attributed));
            }
            9 | 10 => {
                let delta = self.patch();
                frames.push(self.event("STATE_DELTA", vec![("delta", delta)], attributed));
            }
            11 | 12 => {
                let id = self.message_id();
                let content = self.record();
                let mut members = vec![
                    ("messageId", s(id.clone())),
                    ("activityType", s("plan")),
                    ("content", content),
                ];
                if self.b.ratio(1, 3) {
                    members.push(("replace", J::Lit("true")));
                }
                frames.push(self.event("ACTIVITY_SNAPSHOT", members, attributed));
                if self.b.ratio(2, 3) {
                    let patch = self.patch();
                    let e = self.event(
                        "ACTIVITY_DELTA",
                        vec![
                            ("messageId", s(id)),
                            ("activityType", s("plan")),
                            ("patch", patch),
                        ],
                        attributed,
                    );
                    frames.push(e);
                }
            }
            13 => {
                let value = self.any(0);
                frames.push(self.event(
                    "CUSTOM",
                    vec![("name", s("report")), ("value", value)],
                    attributed,
                ));
            }
            14 => {
                let event = self.any(0);
                let mut members = vec![("event", event)];
                if self.b.ratio(1, 2) {
                    members.push(("source", s("upstream")));
                }
                frames.push(self.event("RAW", members, attributed));
            }
            15 => {
                // Reasoning, or V0's THINKING_* (which V1 translates).
                if self.b.ratio(1, 2) {
                    let span = self.id("rs");
                    let msg = self.message_id();
                    frames.push(self.event(
                        "REASONING_START",
                        vec![("messageId", s(span.clone()))],
                        attributed,
                    ));
                    frames.push(self.event(
                        "REASONING_MESSAGE_START",
                        vec![("messageId", s(msg.clone())), ("role", s("reasoning"))],
                        attributed,
                    ));
                    let delta = self.text();
                    frames.push(self.event(
                        "REASONING_MESSAGE_CONTENT",
                        vec![("messageId", s(msg.clone())), ("delta", delta)],
                        attributed,
                    ));
                    frames.push(self.event(
                        "REASONING_MESSAGE_END",
                        vec![("messageId", s(msg))],
                        attributed,
                    ));
                    if self.b.ratio(1, 2) {
                        let value = self.base64();
                        let entity = self.message_id();
                        frames.push(self.event(
                            "REASONING_ENCRYPTED_VALUE",
                            vec![
                                ("subtype", s("message")),
                                ("entityId", s(entity)),
                                ("encryptedValue", value),
                            ],
                            attributed,
                        ));
                    }
                    frames.push(self.event(
                        "REASONING_END",
                        vec![("messageId", s(span))],
                        attributed,
                    ));
                } else {
                    let title = self.synthesized_text();
                    frames.push(self.event("THINKING_START", vec![("title", title)], false));
                    frames.push(self.event("THINKING_TEXT_MESSAGE_START", vec![], false));
                    let delta = self.synthesized_text();
                    frames.push(self.event(
                        "THINKING_TEXT_MESSAGE_CONTENT",
                        vec![("delta", delta)],
                        false,
                    ));
                    frames.push(self.event("THINKING_TEXT_MESSAGE_END", vec![], false));
                    frames.push(self.event("THINKING_END", vec![], false));
                }
            }
            16 => {
                let name = self.id("step");
                frames.push(self.event(
                    "STEP_STARTED",
                    vec![("stepName", s(name.clone()))],
                    attributed,
                ));
                frames.push(self.event("STEP_FINISHED", vec![("stepName", s(name))], attributed));
            }
            17 => {
                // Chunks: expanded into START/CONTENT/END (re-encoded).
                if self.b.ratio(1, 2) {
                    let id = self.message_id();
                    for i in 0..1 + self.b.below(3) {
                        let mut members = vec![("delta", self.synthesized_text())];
                        if i == 0 {
                            members.push(("messageId", s(id.clone())));
                        }
                        frames.push(self.event("TEXT_MESSAGE_CHUNK", members, attributed));
                    }
                } else {
                    let call = self.id("call_");
                    for i in 0..1 + self.b.below(3) {
                        let delta = if self.b.ratio(1, 8) {
                            self.arguments()
                        } else {
                            self.synthesized_text()
                        };
                        let mut members = vec![("delta", delta)];
                        if i == 0 {
                            members.push(("toolCallId", s(call.clone())));
                            members.push(("toolCallName", s("search")));
                        }
                        frames.push(self.event("TOOL_CALL_CHUNK", members, attributed));
                    }
                }
                // A closing explicit event ends the lane.
                frames.push(self.event(
                    "STEP_STARTED",
                    vec![("stepName", s("after-chunks"))],
                    false,
                ));
                frames.push(self.event(
                    "STEP_FINISHED",
                    vec![("stepName", s("after-chunks"))],
                    false,
                ));
            }
            _ => {
                // A subagent opens or closes.
                if !self.swarm.subagents {
                    return true;
                }
                match self.subagent.take() {
                    None => {
                        let id = self.id("sub");
                        let mut members =
                            vec![("subagentRunId", s(id.clone())), ("name", s("helper"))];
                        if self.b.ratio(1, 3) {
                            members.push(("description", self.text()));
                        }
                        frames.push(self.event("SUBAGENT_STARTED", members, false));
                        self.subagent = Some(id);
                    }
                    Some(id) => {
                        let mut members = vec![("subagentRunId", s(id))];
                        if self.b.ratio(1, 3) {
                            members.push(("result", self.any(0)));
                        }
                        frames.push(self.event("SUBAGENT_FINISHED", members, false));
                    }
                }
            }
        }
        true
    }

    // ------------------------------------------------------------ mutations

    /// One mutation of one frame (preferably one with a large value).
    fn mutate(&mut self, run: &mut Run) {
        let n = run.frames.len();
        // A frame with a large value, if the draw finds one.
        let mut k = self.b.below(n);
        for _ in 0..4 {
            if run.frames[k].size() >= 1024 {
                break;
            }
            k = self.b.below(n);
        }
        let frame = &mut run.frames[k];
        match self.b.u8() % 10 {
            // Syntax errors, in the text: inside or after a large value.
            0..=2 => {
                let mut t = Text::default();
                write(frame, &mut t);
                let (start, end, string) = match t.spans.len() {
                    0 => (0, t.bytes.len(), false),
                    len => t.spans[self.b.below(len)],
                };
                let inside = self.b.ratio(1, 2);
                let mut at = if inside && end - start > 2 {
                    start + 1 + self.b.below(end - start - 2)
                } else {
                    end
                };
                // At a character boundary, not inside an escape's letters
                // (a bad escape is one of the inserts).
                while at < t.bytes.len() && (t.bytes[at] & 0xc0 == 0x80) {
                    at += 1;
                }
                let inserts: &[&[u8]] = if inside && string {
                    &[
                        b"\\q", b"\\x41", b"\\u12G4", b"\t", b"\x01", b"\"", b"\\", b"\xff",
                    ]
                } else {
                    &[b",", b",}", b"]", b"}", b" x", b"\"", b":", b"}}", b"{"]
                };
                let insert = self.b.pick(inserts);
                let delete = self.b.below(2);
                match self.b.u8() % 4 {
                    0 => run.cut = Some((k, at)),
                    _ => run.edit = Some((k, at, insert, delete)),
                }
                if let Some((k, _)) = run.cut {
                    run.frames.truncate(k + 1);
                }
            }
            // The rest change the tree, at one of its schema objects.
            op => {
                let objects = count_objects(frame, true);
                let any = count_objects(frame, false);
                let target = if objects > 0 && self.b.ratio(3, 4) {
                    (true, self.b.below(objects))
                } else {
                    (false, self.b.below(any.max(1)))
                };
                let pick = self.b.u16() as usize;
                let kind = self.b.u8();
                let mut index = target.1;
                visit_object(frame, target.0, &mut index, &mut |m| {
                    mutate_members(m, op, pick, kind)
                });
            }
        }
    }
}

fn count_objects(j: &J, schema_only: bool) -> usize {
    match j {
        J::Obj(m, schema) => {
            usize::from(*schema || !schema_only)
                + m.iter()
                    .map(|(_, v)| count_objects(v, schema_only))
                    .sum::<usize>()
        }
        J::Arr(v) => v.iter().map(|e| count_objects(e, schema_only)).sum(),
        _ => 0,
    }
}

/// Calls `f` on the members of the `index`-th object (counting schema
/// objects only, if `schema_only`). True once it was found.
fn visit_object(
    j: &mut J,
    schema_only: bool,
    index: &mut usize,
    f: &mut dyn FnMut(&mut Members),
) -> bool {
    match j {
        J::Obj(m, schema) => {
            if *schema || !schema_only {
                if *index == 0 {
                    f(m);
                    return true;
                }
                *index -= 1;
            }
            m.iter_mut()
                .any(|(_, v)| visit_object(v, schema_only, index, f))
        }
        J::Arr(v) => v.iter_mut().any(|e| visit_object(e, schema_only, index, f)),
        _ => false,
    }
}

/// One change to an object's members: a wrong kind, a missing member, an
/// unknown tag, a bad pointer, a duplicate key, a missing value.
fn mutate_members(m: &mut Members, op: u8, pick: usize, kind: u8) {
    let wrong: [J; 7] = [
        J::Num("7".into()),
        J::Str("x".into()),
        J::Arr(vec![]),
        J::Obj(vec![], false),
        J::Lit("null"),
        J::Lit("true"),
        J::Arr(vec![J::Str("not".into()), J::Str("a".into())]),
    ];
    let kind = usize::from(kind);
    match op {
        // a member of the wrong kind
        3 | 4 if !m.is_empty() => {
            let i = pick % m.len();
            m[i].1 = wrong[kind % wrong.len()].clone();
        }
        // a member missing
        5 if !m.is_empty() => {
            m.remove(pick % m.len());
        }
        // an unknown role, part type, op, status
        6 => {
            let unknown = [
                "critic", "sticker", "binary", "merge", "accepted", "", "TYPE",
            ];
            for (k, v) in m.iter_mut() {
                if matches!(k.as_str(), "role" | "type" | "op" | "status" | "subtype") {
                    *v = J::Str(unknown[kind % unknown.len()].into());
                    return;
                }
            }
            m.push(("role".into(), J::Str("critic".into())));
        }
        // a bad JSON Pointer
        7 => {
            let bad = J::Str(BAD_POINTERS[kind % BAD_POINTERS.len()].into());
            for (k, v) in m.iter_mut() {
                if k == "path" || k == "from" {
                    *v = bad;
                    return;
                }
            }
            m.push(("path".into(), bad));
        }
        // a duplicate key: the same name again with another value, after
        // or before (the last one wins)
        8 if !m.is_empty() => {
            let i = pick % m.len();
            let name = m[i].0.clone();
            let value = wrong[kind % wrong.len()].clone();
            if kind & 0x80 != 0 {
                m.insert(i, (name, value));
            } else {
                m.insert(i + 1, (name, value));
            }
        }
        // a missing value (a syntax error in the tree)
        _ if !m.is_empty() => {
            let i = pick % m.len();
            m[i].1 = J::Raw(Vec::new());
        }
        _ => {}
    }
}
