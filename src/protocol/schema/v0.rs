//! The V0 (`@ag-ui/core@0.0.59`) shapes.

use super::*;

const NON_NEG: Shape = Shape::NonNegInt;

const DATA_SOURCE: Obj = obj(
    O::InputContentDataSource,
    Strip,
    &[req(M::Value, Str), req(M::MimeType, Str)],
);
const URL_SOURCE: Obj = obj(
    O::InputContentUrlSource,
    Strip,
    &[req(M::Value, Str), opt(M::MimeType, Str)],
);
const SOURCE: Union = Union {
    name: O::InputContentSource,
    tag: M::Type,
    variants: &[("data", &DATA_SOURCE), ("url", &URL_SOURCE)],
    drop_unknown: false,
};
const TEXT: Obj = obj(O::TextInputContent, Strip, &[req(M::Text, Str)]);
const MEDIA_FIELDS: &[Field] = &[req(M::Source, Shape::Union(&SOURCE)), opt(M::Metadata, Any)];
const IMAGE: Obj = obj(O::ImageInputContent, Strip, MEDIA_FIELDS);
const AUDIO: Obj = obj(O::AudioInputContent, Strip, MEDIA_FIELDS);
const VIDEO: Obj = obj(O::VideoInputContent, Strip, MEDIA_FIELDS);
const DOCUMENT: Obj = obj(O::DocumentInputContent, Strip, MEDIA_FIELDS);
const BINARY: Obj = Obj {
    name: O::BinaryInputContent,
    fields: &[
        req(M::MimeType, Str),
        opt(M::Id, Str),
        opt(M::Url, Str),
        opt(M::Data, Str),
        opt(M::Filename, Str),
    ],
    extra: Strip,
    special: Special::BinaryPayload,
};
const INPUT_CONTENT: Union = Union {
    name: O::InputContent,
    tag: M::Type,
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
        opt(M::Metadata, Shape::Dict),
    ],
);
const DEVELOPER: Obj = obj(
    O::DeveloperMessage,
    Strip,
    &[
        req(M::Id, Str),
        req(M::Content, Str),
        opt(M::Name, Str),
        opt(M::EncryptedValue, Str),
        opt(M::SubagentRunId, Str),
        opt(M::Metadata, Shape::Dict),
    ],
);
const SYSTEM: Obj = obj(O::SystemMessage, Strip, DEVELOPER.fields);
const ASSISTANT: Obj = obj(
    O::AssistantMessage,
    Strip,
    &[
        req(M::Id, Str),
        opt(M::Content, Str),
        opt(M::Name, Str),
        opt(M::EncryptedValue, Str),
        opt(M::SubagentRunId, Str),
        opt(M::Metadata, Shape::Dict),
        opt(M::ToolCalls, Shape::Array(&Shape::Object(&TOOL_CALL))),
    ],
);
const USER: Obj = obj(
    O::UserMessage,
    Strip,
    &[
        req(M::Id, Str),
        req(
            M::Content,
            Shape::StrOr(&Shape::Array(&Shape::Union(&INPUT_CONTENT))),
        ),
        opt(M::Name, Str),
        opt(M::EncryptedValue, Str),
        opt(M::SubagentRunId, Str),
        opt(M::Metadata, Shape::Dict),
    ],
);
const TOOL: Obj = obj(
    O::ToolMessage,
    Strip,
    &[
        req(M::Id, Str),
        req(M::Content, Str),
        req(M::ToolCallId, Str),
        opt(M::Error, Str),
        opt(M::EncryptedValue, Str),
        opt(M::SubagentRunId, Str),
        opt(M::Metadata, Shape::Dict),
    ],
);
const ACTIVITY: Obj = obj(
    O::ActivityMessage,
    Strip,
    &[
        req(M::Id, Str),
        req(M::ActivityType, Str),
        req(M::Content, Shape::Dict),
        opt(M::SubagentRunId, Str),
        opt(M::Metadata, Shape::Dict),
    ],
);
const REASONING: Obj = obj(
    O::ReasoningMessage,
    Strip,
    &[
        req(M::Id, Str),
        req(M::Content, Str),
        opt(M::EncryptedValue, Str),
        opt(M::SubagentRunId, Str),
        opt(M::Metadata, Shape::Dict),
    ],
);
const MESSAGE: Union = Union {
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
    drop_unknown: false,
};
pub(crate) const MESSAGES: Shape = Shape::Array(&Shape::Union(&MESSAGE));

const TOOL_DEF: Obj = obj(
    O::Tool,
    Strip,
    &[
        req(M::Name, Str),
        req(M::Description, Str),
        opt(M::Parameters, Any),
        opt(M::Metadata, Shape::Dict),
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
        opt(M::Payload, Any),
        opt(M::Metadata, Shape::Dict),
    ],
);
pub(crate) const RUN_AGENT_INPUT: Obj = obj(
    O::RunAgentInput,
    Strip,
    &[
        req(M::ThreadId, Str),
        req(M::RunId, Str),
        opt(M::ParentRunId, Str),
        nul(M::State, Any),
        req(M::Messages, MESSAGES),
        req(M::Tools, Shape::Array(&Shape::Object(&TOOL_DEF))),
        req(M::Context, Shape::Array(&Shape::Object(&CONTEXT))),
        opt(M::ForwardedProps, Any),
        opt(M::Resume, Shape::Array(&Shape::Object(&RESUME))),
    ],
);
/// `RunAgentInputSchema`, for a request body: the same as `RUN_STARTED.input`.
pub(crate) const REQUEST: Obj = RUN_AGENT_INPUT;
const INTERRUPT: Obj = obj(
    O::Interrupt,
    Strip,
    &[
        req(M::Id, Str),
        req(M::Reason, Str),
        opt(M::Message, Str),
        opt(M::ToolCallId, Str),
        opt(M::ResponseSchema, Shape::Dict),
        opt(M::ExpiresAt, Str),
        opt(M::Metadata, Shape::Dict),
        opt(M::SubagentRunId, Str),
    ],
);
const SUCCESS: Obj = obj(O::SuccessOutcome, Reject, &[]);
const INTERRUPTED: Obj = obj(
    O::InterruptOutcome,
    Reject,
    &[req(
        M::Interrupts,
        Shape::NonEmptyArray(&Shape::Object(&INTERRUPT)),
    )],
);
pub(crate) const RUN_OUTCOME: Union = Union {
    name: O::RunFinishedOutcome,
    tag: M::Type,
    variants: &[("success", &SUCCESS), ("interrupt", &INTERRUPTED)],
    drop_unknown: false,
};
const SUSPENDED: Obj = obj(
    O::SuspendedOutcome,
    Reject,
    &[opt(M::InterruptIds, Shape::Array(&Str))],
);
pub(crate) const SUBAGENT_OUTCOME: Union = Union {
    name: O::SubagentFinishedOutcome,
    tag: M::Type,
    variants: &[("success", &SUCCESS), ("suspended", &SUSPENDED)],
    drop_unknown: false,
};
const TOKEN_USAGE: Obj = obj(
    O::TokenUsage,
    Strip,
    &[
        opt(M::Provider, Str),
        opt(M::Model, Str),
        opt(M::InputTokens, NON_NEG),
        opt(M::OutputTokens, NON_NEG),
        opt(M::TotalTokens, NON_NEG),
        opt(M::ReasoningTokens, NON_NEG),
        opt(M::CachedInputTokens, NON_NEG),
    ],
);
pub(crate) const USAGE: Shape = Shape::Array(&Shape::Object(&TOKEN_USAGE));
