//! The V1 (`@ag-ui/core@1.0.0`) shapes.

use super::*;

const STR_ARRAY: Shape = Shape::Array(&Str);

// Content parts. Inside messages the compatibility boundary turns a
// media part's `metadata: null` into absence; in TOOL_CALL_RESULT it
// does not, so there are two copies of the media parts.
const TEXT_PART: Obj = obj(
    "TextPart",
    Strip,
    &[opt("id", Str), req("text", Str), opt("metadata", NonNull)],
);
const DATA_SOURCE: Obj = obj(
    "DataSource",
    Strip,
    &[req("value", Str), req("mimeType", Str)],
);
const URL_SOURCE: Obj = obj(
    "UrlSource",
    Strip,
    &[req("value", Str), opt("mimeType", Str)],
);
const FILE_SOURCE: Obj = obj(
    "FileSource",
    Strip,
    &[
        req("value", Str),
        opt("provider", Str),
        opt("mimeType", Str),
    ],
);
const SOURCE: Union = Union {
    tag: "type",
    variants: &[
        ("data", &DATA_SOURCE),
        ("url", &URL_SOURCE),
        ("file", &FILE_SOURCE),
    ],
    drop_unknown: true,
};
const MEDIA_FIELDS_IN_MESSAGE: &[Field] = &[
    opt("id", Str),
    req("source", Shape::Union(&SOURCE)),
    nul("metadata", NonNull),
];
const MEDIA_FIELDS_IN_RESULT: &[Field] = &[
    opt("id", Str),
    req("source", Shape::Union(&SOURCE)),
    opt("metadata", NonNull),
];
const IMAGE_M: Obj = obj("ImagePart", Strip, MEDIA_FIELDS_IN_MESSAGE);
const AUDIO_M: Obj = obj("AudioPart", Strip, MEDIA_FIELDS_IN_MESSAGE);
const VIDEO_M: Obj = obj("VideoPart", Strip, MEDIA_FIELDS_IN_MESSAGE);
const DOCUMENT_M: Obj = obj("DocumentPart", Strip, MEDIA_FIELDS_IN_MESSAGE);
const IMAGE_R: Obj = obj("ImagePart", Strip, MEDIA_FIELDS_IN_RESULT);
const AUDIO_R: Obj = obj("AudioPart", Strip, MEDIA_FIELDS_IN_RESULT);
const VIDEO_R: Obj = obj("VideoPart", Strip, MEDIA_FIELDS_IN_RESULT);
const DOCUMENT_R: Obj = obj("DocumentPart", Strip, MEDIA_FIELDS_IN_RESULT);
const LEGACY_BINARY: Obj = Obj {
    name: "BinaryInputContent",
    fields: &[],
    extra: Strip,
    special: Special::LegacyBinary,
};
pub(super) const PART_IN_MESSAGE: Union = Union {
    tag: "type",
    variants: &[
        ("text", &TEXT_PART),
        ("image", &IMAGE_M),
        ("audio", &AUDIO_M),
        ("video", &VIDEO_M),
        ("document", &DOCUMENT_M),
        ("binary", &LEGACY_BINARY),
    ],
    drop_unknown: true,
};
const PART_IN_RESULT: Union = Union {
    tag: "type",
    variants: &[
        ("text", &TEXT_PART),
        ("image", &IMAGE_R),
        ("audio", &AUDIO_R),
        ("video", &VIDEO_R),
        ("document", &DOCUMENT_R),
    ],
    drop_unknown: true,
};
const MESSAGE_CONTENT: Shape = Shape::StrOr(&Shape::Array(&Shape::Union(&PART_IN_MESSAGE)));
pub(super) const RESULT_CONTENT: Shape =
    Shape::StrOr(&Shape::Array(&Shape::Union(&PART_IN_RESULT)));

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
        opt("metadata", Record),
    ],
);
const DEVELOPER: Obj = obj(
    "DeveloperMessage",
    Strip,
    &[
        opt("subagentRunId", Str),
        req("id", Str),
        opt("name", Str),
        opt("encryptedValue", Str),
        opt("metadata", Record),
        req("content", Str),
    ],
);
const SYSTEM: Obj = obj("SystemMessage", Strip, DEVELOPER.fields);
const ASSISTANT: Obj = obj(
    "AssistantMessage",
    Strip,
    &[
        opt("subagentRunId", Str),
        req("id", Str),
        opt("name", Str),
        opt("encryptedValue", Str),
        opt("metadata", Record),
        opt("content", Str),
        opt("toolCalls", Shape::Array(&Shape::Object(&TOOL_CALL))),
    ],
);
const USER: Obj = obj(
    "UserMessage",
    Strip,
    &[
        opt("subagentRunId", Str),
        req("id", Str),
        opt("name", Str),
        opt("encryptedValue", Str),
        opt("metadata", Record),
        req("content", MESSAGE_CONTENT),
    ],
);
const TOOL: Obj = obj(
    "ToolMessage",
    Strip,
    &[
        opt("subagentRunId", Str),
        req("id", Str),
        req("content", MESSAGE_CONTENT),
        req("toolCallId", Str),
        opt("error", Str),
        opt("encryptedValue", Str),
        opt("metadata", Record),
    ],
);
const ACTIVITY: Obj = obj(
    "ActivityMessage",
    Strip,
    &[
        opt("subagentRunId", Str),
        req("id", Str),
        req("activityType", Str),
        req("content", Record),
        opt("metadata", Record),
    ],
);
const REASONING: Obj = obj(
    "ReasoningMessage",
    Strip,
    &[
        opt("subagentRunId", Str),
        req("id", Str),
        req("content", Str),
        opt("encryptedValue", Str),
        opt("metadata", Record),
    ],
);
pub(super) const MESSAGE: Union = Union {
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
    drop_unknown: true,
};
pub(super) const MESSAGES: Shape = Shape::Array(&Shape::Union(&MESSAGE));

const TOOL_DEF: Obj = obj(
    "Tool",
    Strip,
    &[
        req("name", Str),
        req("description", Str),
        nul("parameters", NonNull),
        opt("metadata", Record),
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
        nul("payload", NonNull),
        opt("metadata", Record),
    ],
);
pub(super) const RUN_AGENT_INPUT: Obj = obj(
    "RunAgentInput",
    Strip,
    &[
        req("threadId", Str),
        req("runId", Str),
        opt("protocolVersion", Str),
        opt("parentRunId", Str),
        nul("state", Any),
        req("messages", MESSAGES),
        dflt("tools", Shape::Array(&Shape::Object(&TOOL_DEF)), b"[]"),
        dflt("context", Shape::Array(&Shape::Object(&CONTEXT)), b"[]"),
        nul("forwardedProps", NonNull),
        opt("resume", Shape::Array(&Shape::Object(&RESUME))),
    ],
);

const INTERRUPT: Obj = obj(
    "Interrupt",
    Strip,
    &[
        opt("subagentRunId", Str),
        req("id", Str),
        req("reason", Str),
        opt("message", Str),
        opt("toolCallId", Str),
        opt("responseSchema", Record),
        opt("expiresAt", Str),
        opt("metadata", Record),
    ],
);
const SUCCESS: Obj = obj(
    "SuccessOutcome",
    Strip,
    &[opt("pendingToolCallIds", STR_ARRAY)],
);
const INTERRUPTED: Obj = obj(
    "InterruptOutcome",
    Strip,
    &[req(
        "interrupts",
        Shape::NonEmptyArray(&Shape::Object(&INTERRUPT)),
    )],
);
const CANCELLED: Obj = obj("CancelledOutcome", Strip, &[]);
pub(super) const RUN_OUTCOME: Union = Union {
    tag: "type",
    variants: &[
        ("success", &SUCCESS),
        ("interrupt", &INTERRUPTED),
        ("cancelled", &CANCELLED),
    ],
    drop_unknown: true,
};
const SUB_SUCCESS: Obj = obj("SuccessOutcome", Strip, &[]);
const SUSPENDED: Obj = obj("SuspendedOutcome", Strip, &[opt("interruptIds", STR_ARRAY)]);
pub(super) const SUBAGENT_OUTCOME: Union = Union {
    tag: "type",
    variants: &[("success", &SUB_SUCCESS), ("suspended", &SUSPENDED)],
    drop_unknown: true,
};
const TOKEN_USAGE: Obj = obj(
    "TokenUsage",
    Strip,
    &[
        opt("provider", Str),
        opt("model", Str),
        opt("inputTokens", Count),
        opt("outputTokens", Count),
        opt("totalTokens", Count),
        opt("reasoningTokens", Count),
        opt("cachedInputTokens", Count),
        opt("cacheWriteInputTokens", Count),
    ],
);
pub(super) const USAGE: Shape = Shape::Array(&Shape::Object(&TOKEN_USAGE));

// RFC 6902 operations are open: extra members stay.
pub(super) const ADD: Obj = obj(
    "AddOperation",
    Keep,
    &[req("path", Pointer), req("value", Any)],
);
const REMOVE: Obj = obj("RemoveOperation", Keep, &[req("path", Pointer)]);
const REPLACE: Obj = obj(
    "ReplaceOperation",
    Keep,
    &[req("path", Pointer), req("value", Any)],
);
const MOVE: Obj = obj(
    "MoveOperation",
    Keep,
    &[req("from", Pointer), req("path", Pointer)],
);
const COPY: Obj = obj(
    "CopyOperation",
    Keep,
    &[req("from", Pointer), req("path", Pointer)],
);
const TEST: Obj = obj(
    "TestOperation",
    Keep,
    &[req("path", Pointer), req("value", Any)],
);
const OPERATION: Union = Union {
    tag: "op",
    variants: &[
        ("add", &ADD),
        ("remove", &REMOVE),
        ("replace", &REPLACE),
        ("move", &MOVE),
        ("copy", &COPY),
        ("test", &TEST),
    ],
    drop_unknown: true,
};
pub(super) const PATCH: Shape = Shape::Array(&Shape::Union(&OPERATION));
