//! The reference's words for a [`VerifyError`].

use core::fmt;

use super::*;

/// Renders a [`VerifyError`] in the reference's words; see
/// [`Verifier::describe`].
#[derive(Debug)]
pub struct Describe<'v, const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize> {
    pub(super) verifier: &'v Verifier<OPEN, OWNERS, ID_BYTES>,
    pub(super) error: VerifyError,
}

impl<const OPEN: usize, const OWNERS: usize, const ID_BYTES: usize> fmt::Display
    for Describe<'_, OPEN, OWNERS, ID_BYTES>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.verifier;
        let (event, rule) = match self.error {
            VerifyError::Capacity(c) => return c.fmt(f),
            VerifyError::Violation { event, rule } => (event, rule),
        };
        let s = |i: usize| v.detail.text(i);
        let text = |i: usize| s(i).unwrap_or(EMPTY);
        let a = text(0);
        let owner = |i: usize| Who(s(i));
        match rule {
            Rule::FirstEvent => f.write_str("First event must be 'RUN_STARTED'"),
            Rule::AfterRunError => write!(
                f,
                "Cannot send event type '{event}': The run has already errored with 'RUN_ERROR'. No further events can be sent."
            ),
            Rule::AfterRunFinished => write!(
                f,
                "Cannot send event type '{event}': The run has already finished with 'RUN_FINISHED'. Start a new run with 'RUN_STARTED'."
            ),
            Rule::RunStillActive => f.write_str(
                "Cannot send 'RUN_STARTED' while a run is still active. The previous run must be finished with 'RUN_FINISHED' before starting a new run.",
            ),
            Rule::NullSubagentRunId => write!(
                f,
                "Cannot send '{event}' with 'subagentRunId: null'. The field is optional — omit it entirely."
            ),
            Rule::AlreadyOpen(Entity::Step) => {
                write!(f, "Step \"{a}\" is already active for 'STEP_STARTED'")?;
                match s(1) {
                    Some(o) => write!(f, " in subagent '{o}'"),
                    None => Ok(()),
                }
            }
            Rule::AlreadyOpen(kind) => {
                let (what, end) = match kind {
                    Entity::ToolCall => ("A tool call", "TOOL_CALL_END"),
                    Entity::ReasoningSpan => ("A reasoning span", "REASONING_END"),
                    Entity::ReasoningMessage => ("A reasoning message", "REASONING_MESSAGE_END"),
                    _ => ("A text message", "TEXT_MESSAGE_END"),
                };
                write!(
                    f,
                    "Cannot send '{event}' event: {what} with ID '{a}' is already in progress. Complete it with '{end}' first."
                )
            }
            Rule::NotOpen(Entity::Step) => write!(
                f,
                "Cannot send 'STEP_FINISHED' for step \"{a}\" that was not started"
            ),
            Rule::NotOpen(kind) => {
                let (what, start) = match kind {
                    Entity::ToolCall => ("tool call", "TOOL_CALL_START"),
                    Entity::ReasoningSpan => ("reasoning span", "REASONING_START"),
                    Entity::ReasoningMessage => ("reasoning message", "REASONING_MESSAGE_START"),
                    _ => ("text message", "TEXT_MESSAGE_START"),
                };
                let closing = matches!(
                    event,
                    EventType::TextMessageEnd | EventType::ToolCallEnd | EventType::ReasoningEnd
                );
                write!(f, "Cannot send '{event}' event: No active {what} found with ID '{a}'. ")?;
                if closing {
                    write!(f, "A '{start}' event must be sent first.")
                } else {
                    let noun = match kind {
                        Entity::ToolCall => "a tool call",
                        Entity::ReasoningMessage => "a reasoning message",
                        _ => "a text message",
                    };
                    write!(f, "Start {noun} with '{start}' first.")
                }
            }
            Rule::StepOwnedElsewhere => write!(
                f,
                "Cannot send 'STEP_FINISHED' for step \"{a}\" attributed to {}: that step is open under {}. A step must be finished by whoever started it.",
                Attributed(s(1)),
                Attributed(s(2)),
            ),
            Rule::OpenAtRunFinished(kind) => {
                write!(f, "Cannot send 'RUN_FINISHED' while {} are still active: ", kind.plural())?;
                let mut sep = "";
                let mut item = |id: JsonStr<'_>, owner: Option<u16>| -> fmt::Result {
                    write!(f, "{sep}{id}")?;
                    sep = ", ";
                    match v.name(owner) {
                        Some(o) => write!(f, " (subagent '{o}')"),
                        None => Ok(()),
                    }
                };
                if kind == Entity::Step {
                    for (id, owner) in v.open_steps() {
                        item(id, owner)?;
                    }
                } else {
                    for (id, e) in v.open.iter().filter(|(_, e)| e.kind == Open::Entity(kind)) {
                        item(v.pool.text(id), e.owner)?;
                    }
                }
                Ok(())
            }
            Rule::OwnerMismatch => write!(
                f,
                "Cannot send '{event}': subagentRunId '{a}' does not match the {} '{}' opener's subagent '{}'.",
                v.detail.label,
                text(1),
                owner(2)
            ),
            Rule::ParentOwnerMismatch => write!(
                f,
                "Cannot send 'TOOL_CALL_START': subagentRunId '{a}' does not match its parent message '{}' owner '{}'. A tool call belongs to the message that carries it.",
                text(1),
                owner(2)
            ),
            Rule::ToolCallParentConflict => write!(
                f,
                "Cannot send 'TOOL_CALL_START': tool call '{a}' is owned by '{}' but its parent message '{}' is owned by '{}'. A tool call belongs to the message that carries it.",
                owner(1),
                text(2),
                owner(3)
            ),
            Rule::SubagentActive => write!(
                f,
                "Cannot send 'SUBAGENT_STARTED': subagent '{a}' is already active. Finish it with 'SUBAGENT_FINISHED' first."
            ),
            Rule::SubagentReused => write!(
                f,
                "Cannot send 'SUBAGENT_STARTED': subagent '{a}' has already finished in this run. Subagent IDs are per-invocation and cannot be reused."
            ),
            Rule::UnknownParentSubagent => write!(
                f,
                "Cannot send 'SUBAGENT_STARTED': parentSubagentRunId '{a}' has not been started in this run."
            ),
            Rule::SubagentNotActive => write!(
                f,
                "Cannot send '{event}': no active subagent found with ID '{a}'. A 'SUBAGENT_STARTED' event must be sent first."
            ),
            Rule::ToolCallArgs => {
                write!(f, "Cannot send '{event}' event: the arguments of tool call '{a}' are not ")?;
                match v.detail.json {
                    Some(e) if event == EventType::ToolCallEnd => {
                        write!(f, "one complete JSON value: {e}")?;
                        if e.kind == JsonErrorKind::UnexpectedEnd {
                            write!(f, " after {} bytes", e.offset)?;
                        }
                        f.write_str(".")
                    }
                    Some(e) => write!(f, "valid JSON: {e}."),
                    None => f.write_str("valid JSON."),
                }
            }
            Rule::ThinkingStepActive => f.write_str(
                "Cannot send 'THINKING_START' event: A thinking step is already in progress. End it with 'THINKING_END' first.",
            ),
            Rule::NoThinkingStep if event == EventType::ThinkingEnd => f.write_str(
                "Cannot send 'THINKING_END' event: No active thinking step found. A 'THINKING_START' event must be sent first.",
            ),
            Rule::NoThinkingStep => f.write_str(
                "Cannot send 'THINKING_TEXT_MESSAGE_START' event: A thinking step is not in progress. Create one with 'THINKING_START' first.",
            ),
            Rule::ThinkingMessageActive => f.write_str(
                "Cannot send 'THINKING_TEXT_MESSAGE_START' event: A thinking message is already in progress. Complete it with 'THINKING_TEXT_MESSAGE_END' first.",
            ),
            Rule::NoThinkingMessage if event == EventType::ThinkingTextMessageEnd => f.write_str(
                "Cannot send 'THINKING_TEXT_MESSAGE_END' event: No active thinking message found. A 'THINKING_TEXT_MESSAGE_START' event must be sent first.",
            ),
            Rule::NoThinkingMessage => f.write_str(
                "Cannot send 'THINKING_TEXT_MESSAGE_CONTENT' event: No active thinking message found. Start a message with 'THINKING_TEXT_MESSAGE_START' first.",
            ),
        }
    }
}

/// An owner as the reference prints it.
struct Who<'a>(Option<JsonStr<'a>>);

impl fmt::Display for Who<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(s) => s.fmt(f),
            None => f.write_str(PARENT),
        }
    }
}

/// "subagent 'x'" or "the parent agent".
struct Attributed<'a>(Option<JsonStr<'a>>);

impl fmt::Display for Attributed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(s) => write!(f, "subagent '{s}'"),
            None => f.write_str("the parent agent"),
        }
    }
}

impl fmt::Display for Entity {
    /// `text message`, `tool call`, `reasoning span`, `reasoning message`,
    /// `step` or `subagent`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Entity::TextMessage => "text message",
            Entity::ToolCall => "tool call",
            Entity::ReasoningSpan => "reasoning span",
            Entity::ReasoningMessage => "reasoning message",
            Entity::Step => "step",
            Entity::Subagent => "subagent",
        })
    }
}

impl fmt::Display for Rule {
    /// The rule in a few words (without the ids: [`Verifier::describe`] has
    /// them, in the reference's words).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rule::FirstEvent => f.write_str("the first event must be RUN_STARTED"),
            Rule::AfterRunError => f.write_str("no event after RUN_ERROR"),
            Rule::AfterRunFinished => f.write_str("no event after RUN_FINISHED but a new run"),
            Rule::RunStillActive => f.write_str("RUN_STARTED while a run is active"),
            Rule::NullSubagentRunId => f.write_str("subagentRunId must not be null"),
            Rule::AlreadyOpen(e) => write!(f, "the {e} is already open"),
            Rule::NotOpen(e) => write!(f, "the {e} is not open"),
            Rule::StepOwnedElsewhere => f.write_str("the step is open for another owner"),
            Rule::OpenAtRunFinished(e) => write!(f, "RUN_FINISHED while {} are open", e.plural()),
            Rule::OwnerMismatch => f.write_str("the id belongs to another owner"),
            Rule::ParentOwnerMismatch => {
                f.write_str("the tool call's parent message belongs to another owner")
            }
            Rule::ToolCallParentConflict => {
                f.write_str("the tool call and its parent message have other owners")
            }
            Rule::SubagentActive => f.write_str("the subagent is already active"),
            Rule::SubagentReused => f.write_str("a finished subagent's id is reused"),
            Rule::UnknownParentSubagent => f.write_str("the parent subagent is not active"),
            Rule::SubagentNotActive => f.write_str("the subagent is not active"),
            Rule::ThinkingStepActive => f.write_str("a thinking step is already active"),
            Rule::NoThinkingStep => f.write_str("no thinking step is active"),
            Rule::ThinkingMessageActive => f.write_str("a thinking message is already active"),
            Rule::NoThinkingMessage => f.write_str("no thinking message is active"),
            Rule::ToolCallArgs => f.write_str("the tool call's arguments are not one JSON value"),
        }
    }
}

impl fmt::Display for VerifyError {
    /// `EVENT_TYPE: the rule`, or the capacity.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Violation { event, rule } => write!(f, "{event}: {rule}"),
            VerifyError::Capacity(c) => c.fmt(f),
        }
    }
}

impl core::error::Error for VerifyError {}

impl fmt::Display for RunPhase {
    /// `not started`, `active`, `finished` or `errored`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RunPhase::NotStarted => "not started",
            RunPhase::Active => "active",
            RunPhase::Finished => "finished",
            RunPhase::Errored => "errored",
        })
    }
}
