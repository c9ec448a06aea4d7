//! One violation after a valid prefix: the ones the state allows, one
//! chosen by the input, written as the stream's last frame with the
//! verdict the reference gives it.

use super::cursor::Cursor;
use super::stream::{Generator, Item, Lane};
use super::{Expected, Reason};
use crate::check::normalize::{ChunkError, LaneKind};
use crate::check::verify::{Entity, Rule};
use crate::protocol::event_type::Key;

/// The violations [`Generator::inject`] knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Violation {
    RunStillActive,
    AfterRunFinished,
    AfterRunError,
    TextAlreadyOpen,
    TextNotOpen,
    ToolAlreadyOpen,
    ToolNotOpen,
    StepAlreadyOpen,
    StepNotOpen,
    StepOwnedElsewhere,
    OpenAtRunFinished,
    SpanAlreadyOpen,
    SpanNotOpen,
    ReasoningMessageAlreadyOpen,
    ReasoningMessageNotOpen,
    OwnerMismatch,
    ParentOwnerMismatch,
    SubagentActive,
    SubagentReused,
    UnknownParentSubagent,
    SubagentNotActive,
    ThinkingStepActive,
    NoThinkingStep,
    ThinkingMessageActive,
    NoThinkingMessage,
    NullSubagentRunId,
    ChunkMissingId,
    ChunkMissingToolCallName,
    ChunkMismatch,
    ChunkSubagentMismatch,
    ChunkAmbiguous,
    SchemaWrongType,
    SchemaMissing,
    SchemaNull,
    SchemaEnum,
    SchemaTimestamp,
    SchemaUnknownType,
    SchemaNotAnObject,
    JsonSyntax,
    JsonTruncated,
    JsonSplitString,
}

const VIOLATIONS: usize = 41;

impl Generator<'_> {
    /// The first event is not RUN_STARTED.
    pub(super) fn inject_first(&mut self) {
        self.event(|o| {
            o.head("STEP_STARTED");
            o.raw(br#","stepName":"s0"}"#);
        });
        self.violated(Reason::Rule(Rule::FirstEvent));
    }

    /// The verdict: the last frame written breaks `reason`.
    fn violated(&mut self, reason: Reason) {
        self.violate = false;
        let frame = u64::from(self.events.saturating_sub(1));
        self.expected = Expected::Violation { frame, reason };
    }

    /// Something open of another sender than `owner`: a text or a call.
    fn other_than(&self, owner: u32) -> Option<(Item, bool)> {
        let text = self.texts.as_slice().iter().find(|t| t.owner != owner);
        let call = self.calls.as_slice().iter().find(|t| t.owner != owner);
        text.map(|t| (*t, true)).or(call.map(|c| (*c, false)))
    }

    /// The lane kinds no lane has (V1: of any sender; V0: the parent's
    /// lane is another kind or none).
    fn kinds_without_lane(&self) -> impl Iterator<Item = Lane> + '_ {
        let kinds: &[Lane] = if self.v1() {
            &[Lane::Text, Lane::Tool, Lane::Reasoning]
        } else {
            &[Lane::Text, Lane::Tool]
        };
        kinds
            .iter()
            .copied()
            .filter(|&k| !self.lanes.as_slice().iter().any(|l| l.lane == k))
    }

    /// An active subagent (one starts if none is).
    fn some_subagent(&mut self) -> Item {
        match self.subs.first() {
            Some(s) => s,
            None => self.subagent_start(0, false),
        }
    }

    /// Writes one violation the state allows, chosen by `c`, as the
    /// stream's last frame.
    pub(super) fn inject(&mut self, c: &mut Cursor<'_>) {
        use Violation as V;
        let v1 = self.v1();
        let v0 = !v1;
        let span = self.span;
        // Room for a few frames that set a violation up.
        let setup = self.room_for(super::stream::FRAME_MAX.saturating_mul(6));
        let candidates = [
            (V::RunStillActive, true),
            (V::AfterRunFinished, true),
            (V::AfterRunError, true),
            (V::TextAlreadyOpen, !self.texts.is_empty()),
            (V::TextNotOpen, true),
            (V::ToolAlreadyOpen, !self.calls.is_empty()),
            (V::ToolNotOpen, true),
            (V::StepAlreadyOpen, !self.steps.is_empty()),
            (V::StepNotOpen, true),
            (V::StepOwnedElsewhere, v1 && setup),
            (V::OpenAtRunFinished, setup),
            (V::SpanAlreadyOpen, v1),
            (V::SpanNotOpen, v1),
            (V::ReasoningMessageAlreadyOpen, v1),
            (V::ReasoningMessageNotOpen, v1),
            (V::OwnerMismatch, v1 && setup),
            (V::ParentOwnerMismatch, v1 && setup),
            (V::SubagentActive, v1 && !self.subs.is_empty()),
            (V::SubagentReused, v1 && setup),
            (V::UnknownParentSubagent, v1),
            (V::SubagentNotActive, v1),
            (V::ThinkingStepActive, v0 && span.is_some()),
            (V::NoThinkingStep, v0 && span.is_none()),
            (
                V::ThinkingMessageActive,
                v0 && span.is_some_and(|s| s.message.is_some()),
            ),
            (
                V::NoThinkingMessage,
                v0 && span.is_none_or(|s| s.message.is_none()),
            ),
            (V::NullSubagentRunId, v0),
            (
                V::ChunkMissingId,
                self.kinds_without_lane().next().is_some(),
            ),
            (V::ChunkMissingToolCallName, true),
            (V::ChunkMismatch, v1),
            (V::ChunkSubagentMismatch, v1),
            (
                V::ChunkAmbiguous,
                v1 && setup && self.lanes.len().saturating_add(2) <= super::MAX_OPEN,
            ),
            (V::SchemaWrongType, true),
            (V::SchemaMissing, true),
            (V::SchemaNull, true),
            (V::SchemaEnum, true),
            (V::SchemaTimestamp, v1),
            (V::SchemaUnknownType, v0),
            (V::SchemaNotAnObject, true),
            (V::JsonSyntax, true),
            (V::JsonTruncated, true),
            (V::JsonSplitString, true),
        ];
        let mut options = [V::RunStillActive; VIOLATIONS];
        let mut n = 0usize;
        for (v, ok) in candidates {
            if ok && let Some(slot) = options.get_mut(n) {
                *slot = v;
                n = n.saturating_add(1);
            }
        }
        // An input that has run out would always pick the first: the state
        // picks instead.
        let i = if c.is_empty() {
            (self.events as usize).checked_rem(n).unwrap_or(0)
        } else {
            c.index(n)
        };
        let Some(&v) = options.get(i) else {
            return;
        };
        let reason = self.write(v, c);
        self.violated(reason);
    }

    /// Writes violation `v` (its preconditions hold); why it is one.
    fn write(&mut self, v: Violation, c: &mut Cursor<'_>) -> Reason {
        use Violation as V;
        let fresh = self.fresh().saturating_add(1000);
        let rule = |r| Reason::Rule(r);
        let sub = self.subs.first();
        match v {
            V::RunStillActive => {
                self.run_started();
                rule(Rule::RunStillActive)
            }
            V::AfterRunFinished | V::AfterRunError => {
                if v == V::AfterRunFinished {
                    self.close_all();
                } else {
                    self.run_error();
                }
                self.event(|o| {
                    o.head("STEP_STARTED");
                    o.id("stepName", 's', fresh);
                    o.raw(b"}");
                });
                rule(if v == V::AfterRunFinished {
                    Rule::AfterRunFinished
                } else {
                    Rule::AfterRunError
                })
            }
            V::TextAlreadyOpen => {
                let t = self.texts.first().unwrap_or_default();
                self.event(|o| {
                    o.head("TEXT_MESSAGE_START");
                    o.id("messageId", 'm', t.id);
                    o.raw(br#","role":"assistant""#);
                    o.owner(t.owner);
                    o.raw(b"}");
                });
                rule(Rule::AlreadyOpen(Entity::TextMessage))
            }
            V::TextNotOpen => {
                let end = c.bool();
                self.event(|o| {
                    if end {
                        o.head("TEXT_MESSAGE_END");
                    } else {
                        o.head("TEXT_MESSAGE_CONTENT");
                    }
                    o.id("messageId", 'm', fresh);
                    if !end {
                        o.raw(br#","delta":"x""#);
                    }
                    o.raw(b"}");
                });
                rule(Rule::NotOpen(Entity::TextMessage))
            }
            V::ToolAlreadyOpen => {
                let t = self.calls.first().unwrap_or_default();
                self.event(|o| {
                    o.head("TOOL_CALL_START");
                    o.id("toolCallId", 'c', t.id);
                    o.raw(br#","toolCallName":"search""#);
                    o.owner(t.owner);
                    o.raw(b"}");
                });
                rule(Rule::AlreadyOpen(Entity::ToolCall))
            }
            V::ToolNotOpen => {
                let end = c.bool();
                self.event(|o| {
                    if end {
                        o.head("TOOL_CALL_END");
                    } else {
                        o.head("TOOL_CALL_ARGS");
                    }
                    o.id("toolCallId", 'c', fresh);
                    if !end {
                        o.raw(br#","delta":"{}""#);
                    }
                    o.raw(b"}");
                });
                rule(Rule::NotOpen(Entity::ToolCall))
            }
            V::StepAlreadyOpen => {
                let s = self.steps.first().unwrap_or_default();
                self.event(|o| {
                    o.head("STEP_STARTED");
                    o.id("stepName", 's', s.id);
                    o.owner(s.owner);
                    o.raw(b"}");
                });
                rule(Rule::AlreadyOpen(Entity::Step))
            }
            V::StepNotOpen => {
                self.step_end(Item {
                    id: fresh,
                    ..Item::default()
                });
                rule(Rule::NotOpen(Entity::Step))
            }
            V::StepOwnedElsewhere => {
                // Finished by another sender than its starter.
                let step = match self.steps.first() {
                    Some(s) => s,
                    None => self.step_start(0),
                };
                let other = if step.owner != 0 {
                    0
                } else {
                    self.some_subagent().id
                };
                self.step_end(Item {
                    owner: other,
                    ..step
                });
                rule(Rule::StepOwnedElsewhere)
            }
            V::OpenAtRunFinished => {
                // One kind left open (subagents come last in the order
                // the reference checks).
                let kinds: &[Entity] = if self.v1() {
                    &[
                        Entity::Step,
                        Entity::TextMessage,
                        Entity::ReasoningMessage,
                        Entity::ReasoningSpan,
                        Entity::ToolCall,
                        Entity::Subagent,
                    ]
                } else {
                    &[Entity::Step, Entity::TextMessage, Entity::ToolCall]
                };
                let entity = kinds
                    .get(c.index(kinds.len()))
                    .copied()
                    .unwrap_or(Entity::Step);
                self.close_explicit();
                match entity {
                    Entity::Step => drop(self.step_start(0)),
                    Entity::TextMessage => drop(self.text_start(0, true, false)),
                    Entity::Subagent => drop(self.some_subagent()),
                    _ => self.event(|o| {
                        match entity {
                            Entity::ToolCall => {
                                o.head("TOOL_CALL_START");
                                o.id("toolCallId", 'c', fresh);
                                o.raw(br#","toolCallName":"calc""#);
                            }
                            Entity::ReasoningSpan => {
                                o.head("REASONING_START");
                                o.id("messageId", 'r', fresh);
                            }
                            _ => {
                                o.head("REASONING_MESSAGE_START");
                                o.id("messageId", 'q', fresh);
                                o.raw(br#","role":"reasoning""#);
                            }
                        }
                        o.raw(b"}");
                    }),
                }
                let run = self.run.unwrap_or(0);
                self.event(|o| {
                    o.head("RUN_FINISHED");
                    o.raw(br#","threadId":"t1""#);
                    o.id("runId", 'u', run);
                    o.raw(b"}");
                });
                rule(Rule::OpenAtRunFinished(entity))
            }
            V::SpanAlreadyOpen | V::SpanNotOpen => {
                // A span started again (one starts first if none is open,
                // or the open one is legacy: its id is minted), or one
                // never started ended.
                let open = v == V::SpanAlreadyOpen;
                let id = match self.span {
                    Some(s) if open && !s.legacy => s.id,
                    _ if open => {
                        let id = self.fresh();
                        self.event(|o| {
                            o.head("REASONING_START");
                            o.id("messageId", 'r', id);
                            o.raw(b"}");
                        });
                        id
                    }
                    _ => fresh,
                };
                self.event(|o| {
                    o.head(if open {
                        "REASONING_START"
                    } else {
                        "REASONING_END"
                    });
                    o.id("messageId", 'r', id);
                    o.raw(b"}");
                });
                rule(if open {
                    Rule::AlreadyOpen(Entity::ReasoningSpan)
                } else {
                    Rule::NotOpen(Entity::ReasoningSpan)
                })
            }
            V::ReasoningMessageAlreadyOpen => {
                let open = self.span.filter(|s| !s.legacy).and_then(|s| s.message);
                let twice = if open.is_some() { 1 } else { 2 };
                let id = open.unwrap_or(fresh);
                for _ in 0..twice {
                    self.event(|o| {
                        o.head("REASONING_MESSAGE_START");
                        o.id("messageId", 'q', id);
                        o.raw(br#","role":"reasoning"}"#);
                    });
                }
                rule(Rule::AlreadyOpen(Entity::ReasoningMessage))
            }
            V::ReasoningMessageNotOpen => {
                self.event(|o| {
                    o.head("REASONING_MESSAGE_CONTENT");
                    o.id("messageId", 'q', fresh);
                    o.raw(br#","delta":"x"}"#);
                });
                rule(Rule::NotOpen(Entity::ReasoningMessage))
            }
            V::OwnerMismatch => {
                // A subagent continues what another sender opened.
                let by = self.some_subagent().id;
                let (item, text) = match self.other_than(by) {
                    Some(found) => found,
                    None => (self.text_start(0, true, false), true),
                };
                self.event(|o| {
                    if text {
                        o.head("TEXT_MESSAGE_CONTENT");
                        o.id("messageId", 'm', item.id);
                    } else {
                        o.head("TOOL_CALL_ARGS");
                        o.id("toolCallId", 'c', item.id);
                    }
                    o.raw(br#","delta":"x""#);
                    o.owner(by);
                    o.raw(b"}");
                });
                rule(Rule::OwnerMismatch)
            }
            V::ParentOwnerMismatch => {
                // A subagent's call names another sender's message.
                let by = self.some_subagent().id;
                let found = self
                    .texts
                    .as_slice()
                    .iter()
                    .find(|t| t.owner != by)
                    .copied();
                let parent = match found {
                    Some(t) => t,
                    None => self.text_start(0, true, false),
                };
                self.event(|o| {
                    o.head("TOOL_CALL_START");
                    o.id("toolCallId", 'c', fresh);
                    o.raw(br#","toolCallName":"calc""#);
                    o.id("parentMessageId", 'm', parent.id);
                    o.owner(by);
                    o.raw(b"}");
                });
                rule(Rule::ParentOwnerMismatch)
            }
            V::SubagentActive | V::SubagentReused | V::UnknownParentSubagent => {
                let (id, parent, r) = match v {
                    V::SubagentActive => (sub.map_or(0, |s| s.id), None, Rule::SubagentActive),
                    V::SubagentReused => {
                        // One finishes first if none has.
                        let done = match self.finished.first() {
                            Some(s) => s,
                            None => {
                                let s = self.subagent_start(0, false);
                                self.subagent_end(s, false);
                                s
                            }
                        };
                        (done.id, None, Rule::SubagentReused)
                    }
                    _ => (
                        fresh,
                        Some(fresh.saturating_add(1)),
                        Rule::UnknownParentSubagent,
                    ),
                };
                self.event(|o| {
                    o.head("SUBAGENT_STARTED");
                    o.id("subagentRunId", 'a', id);
                    o.raw(br#","name":"helper""#);
                    if let Some(p) = parent {
                        o.id("parentSubagentRunId", 'a', p);
                    }
                    o.raw(b"}");
                });
                rule(r)
            }
            V::SubagentNotActive => {
                let id = self.finished.first().map_or(fresh, |s| s.id);
                self.event(|o| {
                    o.head("SUBAGENT_FINISHED");
                    o.id("subagentRunId", 'a', id);
                    o.raw(b"}");
                });
                rule(Rule::SubagentNotActive)
            }
            V::ThinkingStepActive | V::NoThinkingStep => {
                let start = v == V::ThinkingStepActive;
                // With no step: its end, or a message in it.
                let message = !start && c.bool();
                self.event(|o| {
                    o.head(match (start, message) {
                        (true, _) => "THINKING_START",
                        (false, true) => "THINKING_TEXT_MESSAGE_START",
                        (false, false) => "THINKING_END",
                    });
                    o.raw(b"}");
                });
                rule(if start {
                    Rule::ThinkingStepActive
                } else {
                    Rule::NoThinkingStep
                })
            }
            V::ThinkingMessageActive => {
                self.event(|o| {
                    o.head("THINKING_TEXT_MESSAGE_START");
                    o.raw(b"}");
                });
                rule(Rule::ThinkingMessageActive)
            }
            V::NoThinkingMessage => {
                let end = c.bool();
                self.event(|o| {
                    if end {
                        o.head("THINKING_TEXT_MESSAGE_END");
                    } else {
                        o.head("THINKING_TEXT_MESSAGE_CONTENT");
                        o.raw(br#","delta":"x""#);
                    }
                    o.raw(b"}");
                });
                rule(Rule::NoThinkingMessage)
            }
            V::NullSubagentRunId => {
                // V0 passes unknown members through: the schema lets it by.
                self.event(|o| {
                    o.head("THINKING_START");
                    o.raw(br#","subagentRunId":null}"#);
                });
                rule(Rule::NullSubagentRunId)
            }
            V::ChunkMissingId => {
                let n = self.kinds_without_lane().count();
                let i = c.index(n);
                let lane = self.kinds_without_lane().nth(i).unwrap_or_default();
                self.event(|o| {
                    o.head(chunk_type(lane));
                    o.raw(br#","delta":"x"}"#);
                });
                Reason::Chunk(ChunkError::MissingId(lane_kind(lane)))
            }
            V::ChunkMissingToolCallName => {
                self.event(|o| {
                    o.head("TOOL_CALL_CHUNK");
                    o.id("toolCallId", 'c', fresh);
                    o.raw(br#","delta":"{}"}"#);
                });
                Reason::Chunk(ChunkError::MissingToolCallName)
            }
            V::ChunkMismatch => {
                // The parent's lane (opened first if it is not of the
                // kind), continued with another opener value.
                let kind = if c.bool() { Lane::Tool } else { Lane::Text };
                let lane = match self.lanes.as_slice().iter().find(|l| l.owner == 0) {
                    Some(l) if l.lane == kind => *l,
                    _ => self.lane_open(0, kind, c),
                };
                let field = self.event_mismatch(lane);
                Reason::Chunk(ChunkError::Mismatch {
                    kind: lane_kind(lane.lane),
                    field,
                })
            }
            V::ChunkSubagentMismatch => {
                // A lane's id (the parent opens one of the kind if none
                // is open), from a sender that is not its owner.
                let kinds = [Lane::Text, Lane::Tool, Lane::Reasoning];
                let kind = kinds.get(c.index(kinds.len())).copied().unwrap_or_default();
                let lane = match self.lanes.as_slice().iter().find(|l| l.lane == kind) {
                    Some(l) => *l,
                    None => self.lane_open(0, kind, c),
                };
                self.event(|o| {
                    o.head(chunk_type(lane.lane));
                    o.id(id_key(lane.lane), id_prefix(lane.lane), lane.id);
                    o.raw(br#","delta":"x""#);
                    o.owner(fresh);
                    o.raw(b"}");
                });
                Reason::Chunk(ChunkError::SubagentMismatch(lane_kind(lane.lane)))
            }
            V::ChunkAmbiguous => {
                // Two subagents' lanes of one kind, none of the parent's,
                // and a chunk that names neither.
                let kinds = [Lane::Text, Lane::Tool, Lane::Reasoning];
                let kind = kinds.get(c.index(kinds.len())).copied().unwrap_or_default();
                if self.lanes.as_slice().iter().any(|l| l.owner == 0) {
                    self.explicit(Some(0));
                    self.event(|o| {
                        o.head("CUSTOM");
                        o.raw(br#","name":"gen","value":0}"#);
                    });
                }
                let of_kind =
                    |g: &Self| g.lanes.as_slice().iter().filter(|l| l.lane == kind).count();
                while of_kind(self) < 2 {
                    let free = self
                        .subs
                        .as_slice()
                        .iter()
                        .find(|s| {
                            !self
                                .lanes
                                .as_slice()
                                .iter()
                                .any(|l| l.owner == s.id && l.lane == kind)
                        })
                        .copied();
                    let sub = match free {
                        Some(s) => s,
                        None if self.subs.len() < super::MAX_OPEN => self.subagent_start(0, false),
                        None => break,
                    };
                    self.lane_open(sub.id, kind, c);
                }
                let lanes = of_kind(self);
                self.event(|o| {
                    o.head(chunk_type(kind));
                    o.raw(br#","delta":"x"}"#);
                });
                Reason::Chunk(ChunkError::Ambiguous {
                    kind: lane_kind(kind),
                    lanes: u32::try_from(lanes).unwrap_or(u32::MAX),
                })
            }
            V::SchemaWrongType
            | V::SchemaMissing
            | V::SchemaNull
            | V::SchemaEnum
            | V::SchemaTimestamp
            | V::SchemaUnknownType
            | V::SchemaNotAnObject => {
                let bytes: &[u8] = match v {
                    V::SchemaWrongType => {
                        br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m0","delta":7}"#
                    }
                    V::SchemaMissing => br#"{"type":"TOOL_CALL_START","toolCallId":"c0"}"#,
                    V::SchemaNull => {
                        br#"{"type":"TEXT_MESSAGE_START","messageId":"m0","name":null}"#
                    }
                    V::SchemaEnum => {
                        br#"{"type":"TEXT_MESSAGE_START","messageId":"m0","role":"robot"}"#
                    }
                    V::SchemaTimestamp => {
                        br#"{"type":"CUSTOM","name":"gen","value":1,"timestamp":1.5}"#
                    }
                    V::SchemaUnknownType => br#"{"type":"NO_SUCH_EVENT"}"#,
                    _ => br#"["RUN_STARTED"]"#,
                };
                self.event(|o| o.raw(bytes));
                Reason::Schema
            }
            V::JsonSplitString => {
                // `data:` lines join with a newline, which a JSON string
                // may not hold raw (a consumer that joins without one
                // reads a valid event).
                self.event_split(br#"{"type":"CUSTOM","name":"ge"#, br#"n","value":1}"#);
                Reason::Json
            }
            V::JsonSyntax | V::JsonTruncated => {
                self.event(|o| {
                    o.head("CUSTOM");
                    if v == V::JsonSyntax {
                        o.raw(br#","name":"gen","value":[1,}"#);
                    } else {
                        o.raw(br#","name":"gen","value":{"n":"#);
                    }
                });
                Reason::Json
            }
        }
    }

    /// A continuation of `lane` (the parent's) that repeats an opener
    /// field with another value; the field.
    fn event_mismatch(&mut self, lane: Item) -> Key {
        let field = match lane.lane {
            Lane::Tool => Key::ToolCallName,
            _ => Key::Role,
        };
        self.event(|o| {
            o.head(chunk_type(lane.lane));
            match lane.lane {
                Lane::Tool => o.raw(br#","toolCallName":"no_such_tool""#),
                _ => o.raw(br#","role":"user""#),
            }
            o.raw(br#","delta":"x"}"#);
        });
        field
    }
}

fn chunk_type(lane: Lane) -> &'static str {
    match lane {
        Lane::Text => "TEXT_MESSAGE_CHUNK",
        Lane::Tool => "TOOL_CALL_CHUNK",
        Lane::Reasoning => "REASONING_MESSAGE_CHUNK",
    }
}

fn id_key(lane: Lane) -> &'static str {
    match lane {
        Lane::Tool => "toolCallId",
        _ => "messageId",
    }
}

fn id_prefix(lane: Lane) -> char {
    match lane {
        Lane::Text => 'm',
        Lane::Tool => 'c',
        Lane::Reasoning => 'q',
    }
}

fn lane_kind(lane: Lane) -> LaneKind {
    match lane {
        Lane::Text => LaneKind::Text,
        Lane::Tool => LaneKind::Tool,
        Lane::Reasoning => LaneKind::Reasoning,
    }
}
