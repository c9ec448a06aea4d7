//! A toy AG-UI consumer: the kind of reducer a chat frontend has. It reads
//! Server-Sent Events by itself, parses each event with serde_json and
//! folds it into a [`Conversation`]: text messages, tool calls with their
//! argument text, and the run's status.
//!
//! It is the code under test in this example: written without agui-stream,
//! as someone else's consumer would be, and fuzzed with agui-stream's
//! generator (the fuzz target in `fuzz/`, and `tests/generated.rs`).
//!
//! It checks only some of the protocol's rules — the ones it needs to stay
//! consistent — and rejects a stream that breaks one with an [`Error`]:
//! - a payload that is not JSON ([`ErrorKind::Json`]); one that is not an
//!   object with a string `type`, or lacks a string field it reads
//!   ([`ErrorKind::Event`]);
//! - the run: the first event is `RUN_STARTED` or `RUN_ERROR`; no
//!   `RUN_STARTED` while a run is active; after `RUN_FINISHED` only a new
//!   run or `RUN_ERROR`, after `RUN_ERROR` only a new run; no
//!   `RUN_FINISHED` while a text message or tool call is open
//!   ([`ErrorKind::Protocol`]);
//! - text messages and tool calls: START for an id already open,
//!   CONTENT/ARGS/END for an id not open ([`ErrorKind::Protocol`]).
//!
//! Steps, reasoning, state, activity, subagents, custom and raw events are
//! ignored. Chunks are folded simply: a chunk with a new id starts a message
//! (or call), one without an id continues its sender's last one of the kind;
//! they are never "open" (their END is implicit).

use serde_json::{Map, Value};

/// Why the consumer rejected a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The frame (dispatched SSE event) it stopped at, from 0.
    pub frame: u64,
    /// What was wrong with it.
    pub kind: ErrorKind,
}

/// What was wrong with a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The payload is not JSON.
    Json(String),
    /// The JSON is not an event this consumer can read.
    Event(String),
    /// The event breaks one of the rules above.
    Protocol(String),
}

/// Where the run is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Run {
    /// No event yet.
    #[default]
    NotStarted,
    /// After `RUN_STARTED`.
    Running,
    /// After `RUN_FINISHED`.
    Finished,
    /// After `RUN_ERROR`.
    Errored,
}

/// A text message or a tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `TEXT_MESSAGE_*`, and a tool result or snapshot message.
    Message,
    /// `TOOL_CALL_*`.
    ToolCall,
}

/// Where a message or tool call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Started, not ended: more text may come.
    Streaming,
    /// Ended, or given whole (a tool result, a snapshot's, a chunk's).
    Done,
    /// Its run errored before it ended.
    Interrupted,
}

/// One entry of the conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    /// `messageId` or `toolCallId` (two namespaces).
    pub id: String,
    /// A message's role, or a tool call's tool name.
    pub label: String,
    /// A message's text, or a tool call's arguments (JSON text).
    pub text: String,
    pub status: Status,
}

/// What the frontend shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conversation {
    pub run: Run,
    /// Messages and tool calls, in the order they started.
    pub entries: Vec<Entry>,
    /// Where a chunk without an id goes: per kind and sender (`None`: the
    /// agent, else a subagent's run id), an index into `entries`.
    lanes: Vec<(Kind, Option<String>, usize)>,
}

impl Conversation {
    /// Whether nothing is still streaming.
    pub fn all_closed(&self) -> bool {
        self.entries.iter().all(|e| e.status != Status::Streaming)
    }

    fn open(&mut self, kind: Kind, id: &str) -> Option<&mut Entry> {
        let open = |e: &&mut Entry| e.kind == kind && e.id == id && e.status == Status::Streaming;
        self.entries.iter_mut().find(open)
    }

    fn push(&mut self, kind: Kind, id: &str, label: &str, text: &str, status: Status) -> usize {
        let (id, label, text) = (id.to_owned(), label.to_owned(), text.to_owned());
        let entry = Entry {
            kind,
            id,
            label,
            text,
            status,
        };
        self.entries.push(entry);
        self.entries.len() - 1
    }

    /// Folds one event in.
    fn apply(&mut self, event: &Map<String, Value>) -> Result<(), ErrorKind> {
        let get = |key: &str| event.get(key).and_then(Value::as_str);
        let field = |key| get(key).ok_or_else(|| ErrorKind::Event(format!("no string `{key}`")));
        let ty = field("type")?;
        let rule = |what: &str| Err(ErrorKind::Protocol(format!("{ty}: {what}")));
        match (self.run, ty) {
            (Run::Running, "RUN_STARTED") => return rule("a run is active"),
            (_, "RUN_STARTED") | (Run::NotStarted | Run::Running | Run::Finished, "RUN_ERROR") => {}
            (Run::NotStarted, _) => return rule("the first event must be RUN_STARTED"),
            (Run::Finished | Run::Errored, _) => return rule("the run is over"),
            (Run::Running, _) => {}
        }
        let (kind, id_key) = match ty.starts_with("TOOL_CALL") {
            true => (Kind::ToolCall, "toolCallId"),
            false => (Kind::Message, "messageId"),
        };
        match ty {
            "RUN_STARTED" => {
                self.run = Run::Running;
                self.lanes.clear();
            }
            "RUN_FINISHED" if !self.all_closed() => return rule("a message or tool call is open"),
            "RUN_FINISHED" => self.run = Run::Finished,
            "RUN_ERROR" => {
                self.run = Run::Errored;
                for e in self
                    .entries
                    .iter_mut()
                    .filter(|e| e.status == Status::Streaming)
                {
                    e.status = Status::Interrupted;
                }
            }
            "TEXT_MESSAGE_START" | "TOOL_CALL_START" => {
                let id = field(id_key)?;
                let label = match kind {
                    Kind::Message => get("role").unwrap_or("assistant"),
                    Kind::ToolCall => field("toolCallName")?,
                };
                if self.open(kind, id).is_some() {
                    return rule(&format!("{id} is already open"));
                }
                self.push(kind, id, label, "", Status::Streaming);
            }
            "TEXT_MESSAGE_CONTENT" | "TOOL_CALL_ARGS" | "TEXT_MESSAGE_END" | "TOOL_CALL_END" => {
                let id = field(id_key)?;
                let end = ty.ends_with("_END");
                let delta = if end { "" } else { field("delta")? };
                let Some(entry) = self.open(kind, id) else {
                    return rule(&format!("{id} is not open"));
                };
                entry.text.push_str(delta);
                if end {
                    entry.status = Status::Done;
                }
            }
            "TEXT_MESSAGE_CHUNK" | "TOOL_CALL_CHUNK" => {
                let sender = get("subagentRunId").map(String::from);
                let lane = self.lanes.iter().position(|l| l.0 == kind && l.1 == sender);
                let last = lane.and_then(|l| self.lanes.get(l)).map(|l| l.2);
                let same = |i: usize, id| self.entries.get(i).is_some_and(|e| e.id == id);
                let index = match (get(id_key), last) {
                    (Some(id), Some(i)) if same(i, id) => i,
                    (None, Some(i)) => i,
                    (None, None) => return rule(&format!("the first chunk needs a {id_key}")),
                    (Some(id), _) => {
                        let label = match kind {
                            Kind::Message => get("role").unwrap_or("assistant"),
                            Kind::ToolCall => field("toolCallName")?,
                        };
                        let i = self.push(kind, id, label, "", Status::Done);
                        self.lanes.retain(|l| !(l.0 == kind && l.1 == sender));
                        self.lanes.push((kind, sender, i));
                        i
                    }
                };
                if let Some(entry) = self.entries.get_mut(index) {
                    entry.text.push_str(get("delta").unwrap_or(""));
                }
            }
            "TOOL_CALL_RESULT" => {
                let id = field("messageId")?;
                let content = match event.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    Some(parts) => parts.to_string(),
                    None => return Err(ErrorKind::Event("no `content`".into())),
                };
                self.push(Kind::Message, id, "tool", &content, Status::Done);
            }
            "MESSAGES_SNAPSHOT" => {
                // The snapshot is the message history from now on; tool
                // calls, and messages still streaming, stay.
                let Some(Value::Array(list)) = event.get("messages") else {
                    return Err(ErrorKind::Event("no `messages` array".into()));
                };
                self.entries
                    .retain(|e| e.kind == Kind::ToolCall || e.status == Status::Streaming);
                self.lanes.clear(); // Their indices moved.
                for m in list {
                    let get = |key| m.get(key).and_then(Value::as_str);
                    if let (Some(id), Some(role)) = (get("id"), get("role")) {
                        let text = get("content").unwrap_or("");
                        self.push(Kind::Message, id, role, text, Status::Done);
                    }
                }
            }
            _ => {} // Steps, reasoning, state, activity, subagents, custom, raw.
        }
        Ok(())
    }
}

/// The consumer: bytes in, in pieces of any size; a [`Conversation`] out.
#[derive(Debug, Default)]
pub struct Consumer {
    /// The line being read.
    line: Vec<u8>,
    /// The event being read: its `data` lines joined with `\n`.
    data: Vec<u8>,
    has_data: bool,
    /// The last byte was a CR: an LF right after it ends the same line.
    after_cr: bool,
    /// A line has ended (a BOM is skipped at the very start only).
    started: bool,
    frames: u64,
    conversation: Conversation,
    failed: Option<Error>,
}

impl Consumer {
    pub fn new() -> Self {
        Consumer::default()
    }

    /// Reads the next piece of the stream. After an error, returns it again.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), Error> {
        for &b in bytes {
            if self.failed.is_some() {
                break;
            }
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    self.end_line();
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                }
            }
        }
        self.failed.clone().map_or(Ok(()), Err)
    }

    /// The end of the stream: an unterminated last event is read too.
    pub fn finish(mut self) -> Result<Conversation, Error> {
        if self.failed.is_none() && !self.line.is_empty() {
            self.end_line();
        }
        if self.failed.is_none() {
            self.dispatch();
        }
        self.failed.map_or(Ok(self.conversation), Err)
    }

    fn end_line(&mut self) {
        let mut line = std::mem::take(&mut self.line);
        if !std::mem::replace(&mut self.started, true) && line.starts_with(b"\xef\xbb\xbf") {
            line.drain(..3);
        }
        match line.iter().position(|&b| b == b':') {
            _ if line.is_empty() => self.dispatch(),
            Some(0) => {} // A comment.
            Some(colon) if line.get(..colon) == Some(b"data") => {
                let value = line.get(colon + 1..).unwrap_or_default();
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data
                    .extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
                self.has_data = true;
            }
            _ => {} // `event:`, `id:`, `retry:`, …: not the payload.
        }
        line.clear();
        self.line = line; // Its allocation, again.
    }

    /// A blank line: the event read so far, if any, is one frame.
    fn dispatch(&mut self) {
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        let frame = self.frames;
        self.frames += 1;
        let result = match serde_json::from_slice::<Value>(&self.data) {
            Err(e) => Err(ErrorKind::Json(e.to_string())),
            Ok(Value::Object(event)) => self.conversation.apply(&event),
            Ok(_) => Err(ErrorKind::Event("not a JSON object".into())),
        };
        self.data.clear();
        if let Err(kind) = result {
            self.failed.get_or_insert(Error { frame, kind });
        }
    }
}

/// Reads a whole stream, pushed in `pieces`.
pub fn consume<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> Result<Conversation, Error> {
    let mut consumer = Consumer::new();
    for piece in pieces {
        consumer.push(piece)?;
    }
    consumer.finish()
}
