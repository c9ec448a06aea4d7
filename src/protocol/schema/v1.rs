//! The V1 (`@ag-ui/core@1.0.0`) shapes.

use super::*;

const STR_ARRAY: Shape = Shape::Array(&Str);

// Content parts. Inside messages the compatibility boundary turns a
// media part's `metadata: null` into absence; in TOOL_CALL_RESULT it
// does not, so there are two copies of the media parts.
const TEXT_PART: Obj = obj(
    O::TextPart,
    Strip,
    &[
        opt(M::Id, Str),
        req(M::Text, Str),
        opt(M::Metadata, NonNull),
    ],
);
const DATA_SOURCE: Obj = obj(
    O::DataSource,
    Strip,
    &[req(M::Value, Str), req(M::MimeType, Str)],
);
const URL_SOURCE: Obj = obj(
    O::UrlSource,
    Strip,
    &[req(M::Value, Str), opt(M::MimeType, Str)],
);
const FILE_SOURCE: Obj = obj(
    O::FileSource,
    Strip,
    &[
        req(M::Value, Str),
        opt(M::Provider, Str),
        opt(M::MimeType, Str),
    ],
);
const SOURCE: Union = Union {
    name: O::PartSource,
    tag: M::Type,
    variants: &[
        ("data", &DATA_SOURCE),
        ("url", &URL_SOURCE),
        ("file", &FILE_SOURCE),
    ],
    drop_unknown: true,
};
const MEDIA_FIELDS_IN_MESSAGE: &[Field] = &[
    opt(M::Id, Str),
    req(M::Source, Shape::Union(&SOURCE)),
    nul(M::Metadata, NonNull),
];
const MEDIA_FIELDS_IN_RESULT: &[Field] = &[
    opt(M::Id, Str),
    req(M::Source, Shape::Union(&SOURCE)),
    opt(M::Metadata, NonNull),
];
const IMAGE_M: Obj = obj(O::ImagePart, Strip, MEDIA_FIELDS_IN_MESSAGE);
const AUDIO_M: Obj = obj(O::AudioPart, Strip, MEDIA_FIELDS_IN_MESSAGE);
const VIDEO_M: Obj = obj(O::VideoPart, Strip, MEDIA_FIELDS_IN_MESSAGE);
const DOCUMENT_M: Obj = obj(O::DocumentPart, Strip, MEDIA_FIELDS_IN_MESSAGE);
const IMAGE_R: Obj = obj(O::ImagePart, Strip, MEDIA_FIELDS_IN_RESULT);
const AUDIO_R: Obj = obj(O::AudioPart, Strip, MEDIA_FIELDS_IN_RESULT);
const VIDEO_R: Obj = obj(O::VideoPart, Strip, MEDIA_FIELDS_IN_RESULT);
const DOCUMENT_R: Obj = obj(O::DocumentPart, Strip, MEDIA_FIELDS_IN_RESULT);
const LEGACY_BINARY: Obj = Obj {
    name: O::BinaryInputContent,
    fields: &[],
    extra: Strip,
    special: Special::LegacyBinary,
};
pub(crate) const PART_IN_MESSAGE: Union = Union {
    name: O::ContentPart,
    tag: M::Type,
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
    name: O::ContentPart,
    tag: M::Type,
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
pub(crate) const RESULT_CONTENT: Shape =
    Shape::StrOr(&Shape::Array(&Shape::Union(&PART_IN_RESULT)));

const FUNCTION_CALL: Obj = obj(
    O::FunctionCall,
    Strip,
    &[req(M::Name, Str), req(M::Arguments, Str)],
);
const TOOL_CALL: Obj = obj(
    O::ToolCall,
    Strip,
    &[
        req(M::Id, Str),
        req(M::Type, Shape::OneOf(&["function"])),
        req(M::Function, Shape::Object(&FUNCTION_CALL)),
        opt(M::EncryptedValue, Str),
        opt(M::Metadata, Record),
    ],
);
const DEVELOPER: Obj = obj(
    O::DeveloperMessage,
    Strip,
    &[
        opt(M::SubagentRunId, Str),
        req(M::Id, Str),
        opt(M::Name, Str),
        opt(M::EncryptedValue, Str),
        opt(M::Metadata, Record),
        req(M::Content, Str),
    ],
);
const SYSTEM: Obj = obj(O::SystemMessage, Strip, DEVELOPER.fields);
const ASSISTANT: Obj = obj(
    O::AssistantMessage,
    Strip,
    &[
        opt(M::SubagentRunId, Str),
        req(M::Id, Str),
        opt(M::Name, Str),
        opt(M::EncryptedValue, Str),
        opt(M::Metadata, Record),
        opt(M::Content, Str),
        opt(M::ToolCalls, Shape::Array(&Shape::Object(&TOOL_CALL))),
    ],
);
const USER: Obj = obj(
    O::UserMessage,
    Strip,
    &[
        opt(M::SubagentRunId, Str),
        req(M::Id, Str),
        opt(M::Name, Str),
        opt(M::EncryptedValue, Str),
        opt(M::Metadata, Record),
        req(M::Content, MESSAGE_CONTENT),
    ],
);
const TOOL: Obj = obj(
    O::ToolMessage,
    Strip,
    &[
        opt(M::SubagentRunId, Str),
        req(M::Id, Str),
        req(M::Content, MESSAGE_CONTENT),
        req(M::ToolCallId, Str),
        opt(M::Error, Str),
        opt(M::EncryptedValue, Str),
        opt(M::Metadata, Record),
    ],
);
const ACTIVITY: Obj = obj(
    O::ActivityMessage,
    Strip,
    &[
        opt(M::SubagentRunId, Str),
        req(M::Id, Str),
        req(M::ActivityType, Str),
        req(M::Content, Record),
        opt(M::Metadata, Record),
    ],
);
const REASONING: Obj = obj(
    O::ReasoningMessage,
    Strip,
    &[
        opt(M::SubagentRunId, Str),
        req(M::Id, Str),
        req(M::Content, Str),
        opt(M::EncryptedValue, Str),
        opt(M::Metadata, Record),
    ],
);
pub(crate) const MESSAGE: Union = Union {
    name: O::Message,
    tag: M::Role,
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
pub(crate) const MESSAGES: Shape = Shape::Array(&Shape::Union(&MESSAGE));

const TOOL_DEF: Obj = obj(
    O::Tool,
    Strip,
    &[
        req(M::Name, Str),
        req(M::Description, Str),
        nul(M::Parameters, NonNull),
        opt(M::Metadata, Record),
    ],
);
const CONTEXT: Obj = obj(
    O::Context,
    Strip,
    &[req(M::Description, Str), req(M::Value, Str)],
);
const RESUME: Obj = obj(
    O::ResumeEntry,
    Strip,
    &[
        req(M::InterruptId, Str),
        req(M::Status, Shape::OneOf(&["resolved", "cancelled"])),
        nul(M::Payload, NonNull),
        opt(M::Metadata, Record),
    ],
);
pub(crate) const RUN_AGENT_INPUT: Obj = obj(
    O::RunAgentInput,
    Strip,
    &[
        req(M::ThreadId, Str),
        req(M::RunId, Str),
        opt(M::ProtocolVersion, Str),
        opt(M::ParentRunId, Str),
        nul(M::State, Any),
        req(M::Messages, MESSAGES),
        dflt(M::Tools, Shape::Array(&Shape::Object(&TOOL_DEF)), b"[]"),
        dflt(M::Context, Shape::Array(&Shape::Object(&CONTEXT)), b"[]"),
        nul(M::ForwardedProps, NonNull),
        opt(M::Resume, Shape::Array(&Shape::Object(&RESUME))),
    ],
);

// A request body (`RunAgentInputSchema.parse`, without the event
// pipeline's compatibility boundary and enforcement): an unknown role,
// part type or source type is rejected, not stripped; there is no legacy
// `binary` part; and `null` is refused where a member is
// `z.any().refine(v => v !== null).optional()`.
const REQUEST_SOURCE: Union = Union {
    drop_unknown: false,
    ..SOURCE
};
const REQUEST_MEDIA_FIELDS: &[Field] = &[
    opt(M::Id, Str),
    req(M::Source, Shape::Union(&REQUEST_SOURCE)),
    opt(M::Metadata, NonNull),
];
const REQUEST_IMAGE: Obj = obj(O::ImagePart, Strip, REQUEST_MEDIA_FIELDS);
const REQUEST_AUDIO: Obj = obj(O::AudioPart, Strip, REQUEST_MEDIA_FIELDS);
const REQUEST_VIDEO: Obj = obj(O::VideoPart, Strip, REQUEST_MEDIA_FIELDS);
const REQUEST_DOCUMENT: Obj = obj(O::DocumentPart, Strip, REQUEST_MEDIA_FIELDS);
const REQUEST_PART: Union = Union {
    name: O::ContentPart,
    tag: M::Type,
    variants: &[
        ("text", &TEXT_PART),
        ("image", &REQUEST_IMAGE),
        ("audio", &REQUEST_AUDIO),
        ("video", &REQUEST_VIDEO),
        ("document", &REQUEST_DOCUMENT),
    ],
    drop_unknown: false,
};
const REQUEST_CONTENT: Shape = Shape::StrOr(&Shape::Array(&Shape::Union(&REQUEST_PART)));
const REQUEST_USER: Obj = obj(
    O::UserMessage,
    Strip,
    &[
        opt(M::SubagentRunId, Str),
        req(M::Id, Str),
        opt(M::Name, Str),
        opt(M::EncryptedValue, Str),
        opt(M::Metadata, Record),
        req(M::Content, REQUEST_CONTENT),
    ],
);
const REQUEST_TOOL_MESSAGE: Obj = obj(
    O::ToolMessage,
    Strip,
    &[
        opt(M::SubagentRunId, Str),
        req(M::Id, Str),
        req(M::Content, REQUEST_CONTENT),
        req(M::ToolCallId, Str),
        opt(M::Error, Str),
        opt(M::EncryptedValue, Str),
        opt(M::Metadata, Record),
    ],
);
const REQUEST_MESSAGE: Union = Union {
    name: O::Message,
    tag: M::Role,
    variants: &[
        ("developer", &DEVELOPER),
        ("system", &SYSTEM),
        ("assistant", &ASSISTANT),
        ("user", &REQUEST_USER),
        ("tool", &REQUEST_TOOL_MESSAGE),
        ("activity", &ACTIVITY),
        ("reasoning", &REASONING),
    ],
    drop_unknown: false,
};
const REQUEST_TOOL: Obj = obj(
    O::Tool,
    Strip,
    &[
        req(M::Name, Str),
        req(M::Description, Str),
        opt(M::Parameters, NonNull),
        opt(M::Metadata, Record),
    ],
);
const REQUEST_RESUME: Obj = obj(
    O::ResumeEntry,
    Strip,
    &[
        req(M::InterruptId, Str),
        req(M::Status, Shape::OneOf(&["resolved", "cancelled"])),
        opt(M::Payload, NonNull),
        opt(M::Metadata, Record),
    ],
);
/// `RunAgentInputSchema`, for a request body.
pub(crate) const REQUEST: Obj = obj(
    O::RunAgentInput,
    Strip,
    &[
        req(M::ThreadId, Str),
        req(M::RunId, Str),
        opt(M::ProtocolVersion, Str),
        opt(M::ParentRunId, Str),
        nul(M::State, Any),
        req(M::Messages, Shape::Array(&Shape::Union(&REQUEST_MESSAGE))),
        dflt(M::Tools, Shape::Array(&Shape::Object(&REQUEST_TOOL)), b"[]"),
        dflt(M::Context, Shape::Array(&Shape::Object(&CONTEXT)), b"[]"),
        opt(M::ForwardedProps, NonNull),
        opt(M::Resume, Shape::Array(&Shape::Object(&REQUEST_RESUME))),
    ],
);

const INTERRUPT: Obj = obj(
    O::Interrupt,
    Strip,
    &[
        opt(M::SubagentRunId, Str),
        req(M::Id, Str),
        req(M::Reason, Str),
        opt(M::Message, Str),
        opt(M::ToolCallId, Str),
        opt(M::ResponseSchema, Record),
        opt(M::ExpiresAt, Str),
        opt(M::Metadata, Record),
    ],
);
const SUCCESS: Obj = obj(
    O::SuccessOutcome,
    Strip,
    &[opt(M::PendingToolCallIds, STR_ARRAY)],
);
const INTERRUPTED: Obj = obj(
    O::InterruptOutcome,
    Strip,
    &[req(
        M::Interrupts,
        Shape::NonEmptyArray(&Shape::Object(&INTERRUPT)),
    )],
);
const CANCELLED: Obj = obj(O::CancelledOutcome, Strip, &[]);
pub(crate) const RUN_OUTCOME: Union = Union {
    name: O::RunFinishedOutcome,
    tag: M::Type,
    variants: &[
        ("success", &SUCCESS),
        ("interrupt", &INTERRUPTED),
        ("cancelled", &CANCELLED),
    ],
    drop_unknown: true,
};
const SUB_SUCCESS: Obj = obj(O::SuccessOutcome, Strip, &[]);
const SUSPENDED: Obj = obj(
    O::SuspendedOutcome,
    Strip,
    &[opt(M::InterruptIds, STR_ARRAY)],
);
pub(crate) const SUBAGENT_OUTCOME: Union = Union {
    name: O::SubagentFinishedOutcome,
    tag: M::Type,
    variants: &[("success", &SUB_SUCCESS), ("suspended", &SUSPENDED)],
    drop_unknown: true,
};
const TOKEN_USAGE: Obj = obj(
    O::TokenUsage,
    Strip,
    &[
        opt(M::Provider, Str),
        opt(M::Model, Str),
        opt(M::InputTokens, Count),
        opt(M::OutputTokens, Count),
        opt(M::TotalTokens, Count),
        opt(M::ReasoningTokens, Count),
        opt(M::CachedInputTokens, Count),
        opt(M::CacheWriteInputTokens, Count),
    ],
);
pub(crate) const USAGE: Shape = Shape::Array(&Shape::Object(&TOKEN_USAGE));

// RFC 6902 operations are open: extra members stay.
pub(crate) const ADD: Obj = obj(
    O::AddOperation,
    Keep,
    &[req(M::Path, Pointer), req(M::Value, Any)],
);
const REMOVE: Obj = obj(O::RemoveOperation, Keep, &[req(M::Path, Pointer)]);
const REPLACE: Obj = obj(
    O::ReplaceOperation,
    Keep,
    &[req(M::Path, Pointer), req(M::Value, Any)],
);
const MOVE: Obj = obj(
    O::MoveOperation,
    Keep,
    &[req(M::From, Pointer), req(M::Path, Pointer)],
);
const COPY: Obj = obj(
    O::CopyOperation,
    Keep,
    &[req(M::From, Pointer), req(M::Path, Pointer)],
);
const TEST: Obj = obj(
    O::TestOperation,
    Keep,
    &[req(M::Path, Pointer), req(M::Value, Any)],
);
const OPERATION: Union = Union {
    name: O::JsonPatchOperation,
    tag: M::Op,
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
pub(crate) const PATCH: Shape = Shape::Array(&Shape::Union(&OPERATION));
