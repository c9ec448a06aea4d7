//! The V0 (`@ag-ui/core@0.0.59`) shapes.

use super::*;

const NON_NEG: Shape = Shape::NonNegInt;

const DATA_SOURCE: Obj = obj(
    "InputContentDataSource",
    Strip,
    &[req("value", Str), req("mimeType", Str)],
);
const URL_SOURCE: Obj = obj(
    "InputContentUrlSource",
    Strip,
    &[req("value", Str), opt("mimeType", Str)],
);
const SOURCE: Union = Union {
    tag: "type",
    variants: &[("data", &DATA_SOURCE), ("url", &URL_SOURCE)],
    drop_unknown: false,
};
const TEXT: Obj = obj("TextInputContent", Strip, &[req("text", Str)]);
const MEDIA_FIELDS: &[Field] = &[req("source", Shape::Union(&SOURCE)), opt("metadata", Any)];
const IMAGE: Obj = obj("ImageInputContent", Strip, MEDIA_FIELDS);
const AUDIO: Obj = obj("AudioInputContent", Strip, MEDIA_FIELDS);
const VIDEO: Obj = obj("VideoInputContent", Strip, MEDIA_FIELDS);
const DOCUMENT: Obj = obj("DocumentInputContent", Strip, MEDIA_FIELDS);
const BINARY: Obj = Obj {
    name: "BinaryInputContent",
    fields: &[
        req("mimeType", Str),
        opt("id", Str),
        opt("url", Str),
        opt("data", Str),
        opt("filename", Str),
    ],
    extra: Strip,
    special: Special::BinaryPayload,
};
const INPUT_CONTENT: Union = Union {
    tag: "type",
    variants: &[
        ("text", &TEXT),
        ("image", &IMAGE),
        ("audio", &AUDIO),
        ("video", &VIDEO),
        ("document", &DOCUMENT),
        ("binary", &BINARY),
    ],
    drop_unknown: false,
};

const FUNCTION_CALL: Obj = obj(
    "FunctionCall",
    Strip,
    &[req("name", Str), req("arguments", Str)],
);
const TOOL_CALL: Obj = obj(
    "ToolCall",
    Strip,
    &[
        req("id", Str),
        req("type", Shape::OneOf(&["function"])),
        req("function", Shape::Object(&FUNCTION_CALL)),
        opt("encryptedValue", Str),
        opt("metadata", Shape::Dict),
    ],
);
const DEVELOPER: Obj = obj(
    "DeveloperMessage",
    Strip,
    &[
        req("id", Str),
        req("content", Str),
        opt("name", Str),
        opt("encryptedValue", Str),
        opt("subagentRunId", Str),
        opt("metadata", Shape::Dict),
    ],
);
const SYSTEM: Obj = obj("SystemMessage", Strip, DEVELOPER.fields);
const ASSISTANT: Obj = obj(
    "AssistantMessage",
    Strip,
    &[
        req("id", Str),
        opt("content", Str),
        opt("name", Str),
        opt("encryptedValue", Str),
        opt("subagentRunId", Str),
        opt("metadata", Shape::Dict),
        opt("toolCalls", Shape::Array(&Shape::Object(&TOOL_CALL))),
    ],
);
const USER: Obj = obj(
    "UserMessage",
    Strip,
    &[
        req("id", Str),
        req(
            "content",
            Shape::StrOr(&Shape::Array(&Shape::Union(&INPUT_CONTENT))),
        ),
        opt("name", Str),
        opt("encryptedValue", Str),
        opt("subagentRunId", Str),
        opt("metadata", Shape::Dict),
    ],
);
const TOOL: Obj = obj(
    "ToolMessage",
    Strip,
    &[
        req("id", Str),
        req("content", Str),
        req("toolCallId", Str),
        opt("error", Str),
        opt("encryptedValue", Str),
        opt("subagentRunId", Str),
        opt("metadata", Shape::Dict),
    ],
);
const ACTIVITY: Obj = obj(
    "ActivityMessage",
    Strip,
    &[
        req("id", Str),
        req("activityType", Str),
        req("content", Shape::Dict),
        opt("subagentRunId", Str),
        opt("metadata", Shape::Dict),
    ],
);
const REASONING: Obj = obj(
    "ReasoningMessage",
    Strip,
    &[
        req("id", Str),
        req("content", Str),
        opt("encryptedValue", Str),
        opt("subagentRunId", Str),
        opt("metadata", Shape::Dict),
    ],
);
const MESSAGE: Union = Union {
    tag: "role",
    variants: &[
        ("developer", &DEVELOPER),
        ("system", &SYSTEM),
        ("assistant", &ASSISTANT),
        ("user", &USER),
        ("tool", &TOOL),
        ("activity", &ACTIVITY),
        ("reasoning", &REASONING),
    ],
    drop_unknown: false,
};
pub(super) const MESSAGES: Shape = Shape::Array(&Shape::Union(&MESSAGE));

const TOOL_DEF: Obj = obj(
    "Tool",
    Strip,
    &[
        req("name", Str),
        req("description", Str),
        opt("parameters", Any),
        opt("metadata", Shape::Dict),
    ],
);
const CONTEXT: Obj = obj(
    "Context",
    Strip,
    &[req("description", Str), req("value", Str)],
);
const RESUME: Obj = obj(
    "ResumeEntry",
    Strip,
    &[
        req("interruptId", Str),
        req("status", Shape::OneOf(&["resolved", "cancelled"])),
        opt("payload", Any),
        opt("metadata", Shape::Dict),
    ],
);
pub(super) const RUN_AGENT_INPUT: Obj = obj(
    "RunAgentInput",
    Strip,
    &[
        req("threadId", Str),
        req("runId", Str),
        opt("parentRunId", Str),
        nul("state", Any),
        req("messages", MESSAGES),
        req("tools", Shape::Array(&Shape::Object(&TOOL_DEF))),
        req("context", Shape::Array(&Shape::Object(&CONTEXT))),
        opt("forwardedProps", Any),
        opt("resume", Shape::Array(&Shape::Object(&RESUME))),
    ],
);
const INTERRUPT: Obj = obj(
    "Interrupt",
    Strip,
    &[
        req("id", Str),
        req("reason", Str),
        opt("message", Str),
        opt("toolCallId", Str),
        opt("responseSchema", Shape::Dict),
        opt("expiresAt", Str),
        opt("metadata", Shape::Dict),
        opt("subagentRunId", Str),
    ],
);
const SUCCESS: Obj = obj("SuccessOutcome", Reject, &[]);
const INTERRUPTED: Obj = obj(
    "InterruptOutcome",
    Reject,
    &[req(
        "interrupts",
        Shape::NonEmptyArray(&Shape::Object(&INTERRUPT)),
    )],
);
pub(super) const RUN_OUTCOME: Union = Union {
    tag: "type",
    variants: &[("success", &SUCCESS), ("interrupt", &INTERRUPTED)],
    drop_unknown: false,
};
const SUSPENDED: Obj = obj(
    "SuspendedOutcome",
    Reject,
    &[opt("interruptIds", Shape::Array(&Str))],
);
pub(super) const SUBAGENT_OUTCOME: Union = Union {
    tag: "type",
    variants: &[("success", &SUCCESS), ("suspended", &SUSPENDED)],
    drop_unknown: false,
};
const TOKEN_USAGE: Obj = obj(
    "TokenUsage",
    Strip,
    &[
        opt("provider", Str),
        opt("model", Str),
        opt("inputTokens", NON_NEG),
        opt("outputTokens", NON_NEG),
        opt("totalTokens", NON_NEG),
        opt("reasoningTokens", NON_NEG),
        opt("cachedInputTokens", NON_NEG),
    ],
);
pub(super) const USAGE: Shape = Shape::Array(&Shape::Object(&TOKEN_USAGE));
