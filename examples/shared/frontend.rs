//! What the gateway front ends share — `agui gateway`,
//! `examples/http_proxy.rs`, the proxy-wasm filter, the Envoy dynamic
//! module and the wasm plugin —
//! so that they take the same options, spelled the same way, and treat a
//! response the same way.
//!
//! Included as a module (`#[path = "…/shared/frontend.rs"] mod frontend;`),
//! not a package: the front ends depend on the library, and the library's
//! tests on some of them. It needs only `core`, `agui_stream` (with its
//! `serde` feature), `heapless`, `serde` (derive) and `serde-json-core`: no
//! allocator, so the `#![no_std]` wasm plugin includes it too.
//!
//! - [`Gateway`]: the configuration — the JSON object the proxy-wasm filter
//!   takes ([`Gateway::from_json`], its keys below) and the command-line
//!   flags of `agui gateway` and `http_proxy` ([`Gateway::set`], the
//!   [`FLAGS`] table) — and its mapping to the library's [`Config`] and
//!   [`rewrite::Options`].
//! - The response-header policy: which responses are rewritten
//!   ([`is_event_stream`], [`is_identity`]) and what a rewritten one's
//!   headers become ([`RESPONSE_EDITS`]).
//! - [`StatsLine`]: the statistics of one rewritten stream as one JSON
//!   object (`Stats`' own serialization), and any fields a front end adds.
//!
//! The JSON configuration (every key optional; an unknown key or a bad
//! value is an error):
//!
//! ```json
//! {"dialect": "v1", "on_violation": "stop", "repair": true, "close_open": false,
//!  "canonical": false, "drop_raw": false, "max_event_bytes": 0,
//!  "check_tool_args": false, "deny_tools": [],
//!  "deterministic_ids": false, "buffer": 65536, "buffer_budget": 67108864,
//!  "hold_bytes": 16777216, "keepalive_ms": 15000,
//!  "request_identity": true, "log_streams": true,
//!  "check_requests": true, "max_request_bytes": 16777216, "request_path": "",
//!  "guard": {"rules": [{"builtin": "email", "action": "mask"},
//!                      {"literal": "Project Falcon", "ignore_case": true, "action": "block"}]}}
//! ```
//!
//! `guard`: content rules over the text of every message (docs/guardrails.md),
//! at most [`GUARD_RULES`]; each a `literal` (with `ignore_case`) or a
//! `builtin` detector, an `action` (`mask`, `block`, `monitor`), and
//! optionally a `name` and a `replacement` (default `[REDACTED]`).
//!
//! The request side ([`Gateway::is_agent_request`]): an agent request — a
//! POST whose `accept` names `text/event-stream`, as `HttpAgent` sends it,
//! or, with `request_path`, a POST whose path starts with it — has its
//! `RunAgentInput` body checked as it streams upstream
//! ([`Gateway::request_rewriter`]): refused with 400 or 413 and a JSON
//! problem, its denied tools taken out of `tools`.
//!
//! A front end ignores the keys it has no use for: `keepalive_ms` is
//! `http_proxy`'s (the filter and the plugin never write on their own),
//! `request_identity` and `log_streams` the filter's, `buffer` is fixed in
//! the plugin, `buffer_budget` is the pools' (the filters' and
//! `http_proxy`'s: examples/shared/pool.rs).
#![allow(dead_code)]

use core::fmt;

use agui_stream::Minting;
use agui_stream::guard::{self, Action, Detector, Rule, Rules, RulesError};
use agui_stream::rewrite::{
    self, OnViolation, Refusal, RequestRewriter, RequestStats, RewriteError, Rewriter, Stats,
    ToolTables,
};
use agui_stream::{Config, Dialect, UnknownName};
use serde::Deserialize;

/// Denied tool names one rewriter holds, and their bytes together: the
/// library's limits (`Rewriter::deny_tool`).
pub const DENIED_NAMES: usize = rewrite::DENIED_TOOLS;
/// See [`DENIED_NAMES`].
pub const DENIED_NAME_BYTES: usize = rewrite::DENIED_TOOL_BYTES;
/// The smallest and largest `buffer` (bytes of the frame buffer and of the
/// raw buffer each, per stream).
pub const MIN_BUFFER: usize = 64;
/// See [`MIN_BUFFER`].
pub const MAX_BUFFER: usize = 16 << 20;
/// The proxies' default `buffer`.
pub const DEFAULT_BUFFER: usize = 64 << 10;
/// The pools' default `buffer_budget`: room for one event held to
/// [`DEFAULT_HOLD_BYTES`] (its raw buffers 128 KiB … 16 MiB, 32 MiB) beside
/// the pairs of 256 blocks in flight at once.
pub const DEFAULT_BUFFER_BUDGET: usize = 64 << 20;
/// The default `hold_bytes`.
pub const DEFAULT_HOLD_BYTES: usize = 16 << 20;
/// `http_proxy`'s default keep-alive interval.
pub const DEFAULT_KEEPALIVE_MS: u64 = 15_000;

/// How a gateway rewrites streams: the options every front end takes.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gateway {
    /// `--dialect v1|v0`.
    pub dialect: Dialect,
    /// `--on-violation stop|drop|pass`.
    pub on_violation: OnViolation,
    /// `--no-repair` clears it.
    pub repair: bool,
    /// `--close-open`.
    pub close_open: bool,
    /// `--canonical`.
    pub canonical: bool,
    /// `--drop-raw`.
    pub drop_raw: bool,
    /// `--max-event-bytes N` (0: no limit).
    pub max_event_bytes: u64,
    /// `--check-tool-args`.
    pub check_tool_args: bool,
    /// `--deny-tool NAME`, repeatable.
    pub deny_tools: DeniedTools,
    /// `--deterministic-ids`: ids minted for translated legacy events
    /// follow the reference oracle's sequence (for comparing outputs byte
    /// for byte) instead of being unique per run.
    pub deterministic_ids: bool,
    /// `--buffer N`.
    pub buffer: usize,
    /// `--buffer-budget N`: bytes of buffers a pool allocates (per worker
    /// thread); past it, streams get small pairs, and held blocks go ahead.
    pub buffer_budget: usize,
    /// `--hold-bytes N`: a block larger than the raw buffer is held whole
    /// until its verdict up to this many bytes (its raw buffer grown from
    /// the pool), so that a client never gets part of an event; a larger
    /// delta is split into complete events of its lane, any other larger
    /// block goes out ahead of its verdict (0: nothing is held or split).
    pub hold_bytes: usize,
    /// `--keepalive-ms N` (0: never).
    pub keepalive_ms: u64,
    /// The filter: a request that accepts `text/event-stream` asks the
    /// upstream for `accept-encoding: identity`.
    pub request_identity: bool,
    /// The filter: one log line per rewritten stream.
    pub log_streams: bool,
    /// `--no-request-check` clears it: agent requests' bodies are checked.
    pub check_requests: bool,
    /// `--max-request-bytes N`: a longer agent request body is refused
    /// with 413.
    pub max_request_bytes: u64,
    /// `--request-path PREFIX`: agent requests are POSTs whose path starts
    /// with it (empty: POSTs that accept `text/event-stream`).
    pub request_path: RequestPath,
    /// `guard`: content rules (JSON only).
    pub guard: GuardConfig,
}

/// Bytes of `request_path` at most.
pub const REQUEST_PATH_BYTES: usize = 128;
/// The default `max_request_bytes`.
pub const DEFAULT_MAX_REQUEST_BYTES: u64 = 16 << 20;

impl Default for Gateway {
    fn default() -> Self {
        Gateway {
            dialect: Dialect::V1,
            on_violation: OnViolation::Stop,
            repair: true,
            close_open: false,
            canonical: false,
            drop_raw: false,
            max_event_bytes: 0,
            check_tool_args: false,
            deny_tools: DeniedTools::default(),
            deterministic_ids: false,
            buffer: DEFAULT_BUFFER,
            buffer_budget: DEFAULT_BUFFER_BUDGET,
            hold_bytes: DEFAULT_HOLD_BYTES,
            keepalive_ms: DEFAULT_KEEPALIVE_MS,
            request_identity: true,
            log_streams: true,
            check_requests: true,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            request_path: RequestPath::default(),
            guard: GuardConfig::default(),
        }
    }
}

/// A command-line flag [`Gateway::set`] takes.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    /// Its name, without `--`.
    pub name: &'static str,
    /// What its value is called (`None`: a switch, no value).
    pub value: Option<&'static str>,
    /// One line of help.
    pub help: &'static str,
}

/// Every flag of [`Gateway::set`], in the order help lists them.
pub const FLAGS: [Flag; 17] = [
    Flag {
        name: "dialect",
        value: Some("v1|v0"),
        help: "protocol version (default v1)",
    },
    Flag {
        name: "on-violation",
        value: Some("stop|drop|pass"),
        help: "(default stop: a final RUN_ERROR)",
    },
    Flag {
        name: "no-repair",
        value: None,
        help: "leave a stream cut mid-run as it is",
    },
    Flag {
        name: "close-open",
        value: None,
        help: "close what is open before a final RUN_ERROR",
    },
    Flag {
        name: "max-event-bytes",
        value: Some("N"),
        help: "end with RUN_ERROR AGUI_EVENT_TOO_LARGE at a block over N bytes",
    },
    Flag {
        name: "canonical",
        value: None,
        help: "re-encode every event in the dialect's stripped form",
    },
    Flag {
        name: "drop-raw",
        value: None,
        help: "drop RAW events and rawEvent members",
    },
    Flag {
        name: "deny-tool",
        value: Some("NAME"),
        help: "remove every event of calls to tool NAME (repeatable, 16 at most)",
    },
    Flag {
        name: "check-tool-args",
        value: None,
        help: "check each tool call's arguments are one JSON value",
    },
    Flag {
        name: "deterministic-ids",
        value: None,
        help: "mint ids as the reference oracle does (for comparing outputs)",
    },
    Flag {
        name: "buffer",
        value: Some("N"),
        help: "frame and raw buffer bytes each, 64 to 16 MiB",
    },
    Flag {
        name: "buffer-budget",
        value: Some("N"),
        help: "bytes of buffers the pool allocates; past them, 1 KiB pairs (default 64 MiB)",
    },
    Flag {
        name: "hold-bytes",
        value: Some("N"),
        help: "hold a block whole until its verdict up to N bytes (default 16 MiB; 0: stream it ahead)",
    },
    Flag {
        name: "keepalive-ms",
        value: Some("N"),
        help: "`: ping` after N ms without output (default 15000; 0: never)",
    },
    Flag {
        name: "no-request-check",
        value: None,
        help: "pass agent requests' bodies upstream unchecked",
    },
    Flag {
        name: "max-request-bytes",
        value: Some("N"),
        help: "answer 413 to an agent request body over N bytes (default 16 MiB)",
    },
    Flag {
        name: "request-path",
        value: Some("PREFIX"),
        help: "agent requests: POSTs under PREFIX (default: POSTs accepting text/event-stream)",
    },
];

/// What is wrong with a flag or a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Not a flag of [`FLAGS`].
    UnknownFlag,
    /// A flag that takes a value had none.
    MissingValue,
    /// A switch was given a value.
    UnexpectedValue,
    /// A dialect or a policy spelled some other way.
    Name(UnknownName),
    /// A number that does not parse.
    Number,
    /// `buffer` outside `MIN_BUFFER..=MAX_BUFFER`.
    Buffer(usize),
    /// More denied tool names than a rewriter holds.
    DeniedTools,
    /// A `request_path` over [`REQUEST_PATH_BYTES`].
    RequestPath,
    /// The JSON configuration does not read.
    Json(serde_json_core::de::Error),
    /// A guard rule names no pattern or two, or an unknown detector.
    GuardRule(usize),
    /// The guard rules do not compile.
    Guard(RulesError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::UnknownFlag => f.write_str("unknown option"),
            ConfigError::MissingValue => f.write_str("missing value"),
            ConfigError::UnexpectedValue => f.write_str("takes no value"),
            ConfigError::Name(e) => write!(f, "{e}"),
            ConfigError::Number => f.write_str("not a number"),
            ConfigError::Buffer(n) => {
                write!(f, "buffer {n} is outside {MIN_BUFFER}..={MAX_BUFFER}")
            }
            ConfigError::DeniedTools => write!(
                f,
                "more denied tools than fit ({DENIED_NAMES} names, {DENIED_NAME_BYTES} bytes)"
            ),
            ConfigError::RequestPath => {
                write!(f, "a request path over {REQUEST_PATH_BYTES} bytes")
            }
            ConfigError::Json(e) => write!(f, "{e}"),
            ConfigError::GuardRule(i) => write!(
                f,
                "guard rule {i}: give a literal or a builtin detector (one of {})",
                DETECTOR_NAMES
            ),
            ConfigError::Guard(e) => write!(f, "{e}"),
        }
    }
}

impl From<UnknownName> for ConfigError {
    fn from(e: UnknownName) -> Self {
        ConfigError::Name(e)
    }
}

impl Gateway {
    /// The flag `name` (without `--`), if [`set`](Gateway::set) takes it.
    pub fn flag(name: &str) -> Option<&'static Flag> {
        FLAGS.iter().find(|f| f.name == name)
    }

    /// Sets what the flag `name` (without `--`) says: `value` is its
    /// argument (`None` for a switch, see [`Flag::value`]).
    ///
    /// # Errors
    ///
    /// An unknown flag, a value missing or unexpected, a value that does
    /// not read.
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<(), ConfigError> {
        let flag = Gateway::flag(name).ok_or(ConfigError::UnknownFlag)?;
        let value = match (flag.value, value) {
            (Some(_), Some(value)) => value,
            (Some(_), None) => return Err(ConfigError::MissingValue),
            (None, Some(_)) => return Err(ConfigError::UnexpectedValue),
            (None, None) => "",
        };
        let number = |v: &str| v.parse::<u64>().map_err(|_| ConfigError::Number);
        match name {
            "dialect" => self.dialect = value.parse()?,
            "on-violation" => self.on_violation = value.parse()?,
            "no-repair" => self.repair = false,
            "close-open" => self.close_open = true,
            "max-event-bytes" => self.max_event_bytes = number(value)?,
            "canonical" => self.canonical = true,
            "drop-raw" => self.drop_raw = true,
            "deny-tool" => self.deny_tools.push(value)?,
            "check-tool-args" => self.check_tool_args = true,
            "deterministic-ids" => self.deterministic_ids = true,
            "buffer" => {
                let n = usize::try_from(number(value)?).map_err(|_| ConfigError::Number)?;
                self.buffer = n;
                self.check_buffer()?;
            }
            "buffer-budget" => {
                self.buffer_budget =
                    usize::try_from(number(value)?).map_err(|_| ConfigError::Number)?;
            }
            "hold-bytes" => {
                self.hold_bytes =
                    usize::try_from(number(value)?).map_err(|_| ConfigError::Number)?;
            }
            "keepalive-ms" => self.keepalive_ms = number(value)?,
            "no-request-check" => self.check_requests = false,
            "max-request-bytes" => self.max_request_bytes = number(value)?,
            "request-path" => self.request_path = RequestPath::new(value)?,
            _ => return Err(ConfigError::UnknownFlag),
        }
        Ok(())
    }

    /// The configuration a JSON object gives (the keys above; empty or
    /// blank text: the defaults), checked.
    ///
    /// # Errors
    ///
    /// JSON that does not read as the configuration, or a value out of
    /// range.
    pub fn from_json(json: &[u8]) -> Result<Gateway, ConfigError> {
        if json.iter().all(u8::is_ascii_whitespace) {
            return Ok(Gateway::default());
        }
        // Room to unescape one string (a tool name, a literal).
        let mut unescaped = [0u8; guard::MAX_MATCH];
        let (gateway, _) = serde_json_core::from_slice_escaped::<Gateway>(json, &mut unescaped)
            .map_err(ConfigError::Json)?;
        gateway.check_buffer()?;
        gateway.guard.rules()?;
        Ok(gateway)
    }

    fn check_buffer(&self) -> Result<(), ConfigError> {
        if (MIN_BUFFER..=MAX_BUFFER).contains(&self.buffer) {
            Ok(())
        } else {
            Err(ConfigError::Buffer(self.buffer))
        }
    }

    /// The pipeline's configuration.
    pub fn config(&self) -> Config {
        let minting = if self.deterministic_ids {
            Minting::Deterministic
        } else {
            Minting::PerRun
        };
        Config::new()
            .dialect(self.dialect)
            .minting(minting)
            .check_tool_args(self.check_tool_args)
    }

    /// The rewriter's options.
    pub fn options(&self) -> rewrite::Options {
        rewrite::Options::new()
            .on_violation(self.on_violation)
            .repair(self.repair)
            .close_open(self.close_open)
            .canonical(self.canonical)
            .drop_raw(self.drop_raw)
            .max_event_bytes(self.max_event_bytes)
            .hold(self.hold_bytes > 0)
            .split(self.hold_bytes > 0)
    }

    /// A rewriter with this configuration over `frames` and `raw`; with
    /// denied tools, over `tables` too ([`Gateway::deny`]: a rewriter that
    /// denies no tool borrows none).
    ///
    /// # Errors
    ///
    /// [`RewriteError::DeniedTools`] if the names do not fit (they do when
    /// [`DeniedTools::push`] took them), or tools are denied and no
    /// `tables` are given.
    pub fn rewriter<'b>(
        &self,
        frames: &'b mut [u8],
        raw: &'b mut [u8],
        tables: Option<&'b mut ToolTables>,
    ) -> Result<Rewriter<'b>, RewriteError> {
        let mut rewriter = Rewriter::new(frames, raw, self.config(), self.options());
        if self.denies_tools() {
            let tables = tables.ok_or(RewriteError::DeniedTools)?;
            self.deny(tables)?;
            rewriter.deny_tools(tables);
        }
        Ok(rewriter)
    }

    /// Whether tools are denied: a rewriter needs [`ToolTables`].
    pub fn denies_tools(&self) -> bool {
        !self.deny_tools.is_empty()
    }

    /// Clears `tables`, then denies the denied tools in them.
    ///
    /// # Errors
    ///
    /// As [`Gateway::rewriter`].
    pub fn deny(&self, tables: &mut ToolTables) -> Result<(), RewriteError> {
        tables.clear();
        self.deny_tools
            .iter()
            .try_for_each(|name| tables.deny(name))
    }

    /// Whether a request is an agent request whose body is checked: a
    /// POST to a path under `request_path`, or (without one) a POST whose
    /// `accept` names `text/event-stream`.
    pub fn is_agent_request(&self, method: &[u8], path: &[u8], accept: &[u8]) -> bool {
        self.check_requests
            && method.eq_ignore_ascii_case(b"POST")
            && match self.request_path.0.as_bytes() {
                [] => accepts_event_stream(accept),
                prefix => path.starts_with(prefix),
            }
    }

    /// The request side's rewriter over `check` (the checker's buffer) and
    /// `hold` (a `tools` entry while its name is read): the dialect, the
    /// size limit and the denied tools.
    ///
    /// # Errors
    ///
    /// As [`Gateway::rewriter`].
    pub fn request_rewriter<'b>(
        &self,
        check: &'b mut [u8],
        hold: &'b mut [u8],
    ) -> Result<RequestRewriter<'b>, RewriteError> {
        let mut r = RequestRewriter::new(check, hold, self.dialect).limit(self.max_request_bytes);
        self.deny_tools
            .iter()
            .try_for_each(|name| r.deny_tool(name))?;
        Ok(r)
    }

    /// The keep-alive interval in milliseconds (`None`: never).
    pub fn keepalive_ms(&self) -> Option<u64> {
        (self.keepalive_ms > 0).then_some(self.keepalive_ms)
    }
}

/// Denied tool names, stored end to end as the rewriter stores them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeniedTools {
    bytes: heapless::Vec<u8, DENIED_NAME_BYTES>,
    ends: heapless::Vec<u16, DENIED_NAMES>,
}

impl DeniedTools {
    /// Adds `name`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::DeniedTools`] past [`DENIED_NAMES`] names or
    /// [`DENIED_NAME_BYTES`] bytes.
    pub fn push(&mut self, name: &str) -> Result<(), ConfigError> {
        let end = self
            .bytes
            .len()
            .checked_add(name.len())
            .and_then(|end| u16::try_from(end).ok())
            .ok_or(ConfigError::DeniedTools)?;
        if self.ends.is_full() || self.bytes.extend_from_slice(name.as_bytes()).is_err() {
            return Err(ConfigError::DeniedTools);
        }
        self.ends.push(end).map_err(|_| ConfigError::DeniedTools)
    }

    /// The names, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let mut start = 0usize;
        self.ends.iter().map(move |&end| {
            let end = usize::from(end);
            let name = self.bytes.get(start..end).unwrap_or_default();
            start = end;
            // Whole `str`s went in.
            core::str::from_utf8(name).unwrap_or_default()
        })
    }

    /// No name.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl<'de> Deserialize<'de> for DeniedTools {
    /// From an array of strings.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Names;
        impl<'de> serde::de::Visitor<'de> for Names {
            type Value = DeniedTools;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of tool names")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<DeniedTools, A::Error> {
                let mut tools = DeniedTools::default();
                while let Some(Name(name)) = seq.next_element::<Name>()? {
                    tools
                        .push(&name)
                        .map_err(|_| serde::de::Error::custom("too many denied tools"))?;
                }
                Ok(tools)
            }
        }
        d.deserialize_seq(Names)
    }
}

/// `request_path`: a path prefix, copied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestPath(heapless::String<REQUEST_PATH_BYTES>);

impl RequestPath {
    /// The prefix `path`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::RequestPath`] past [`REQUEST_PATH_BYTES`].
    pub fn new(path: &str) -> Result<Self, ConfigError> {
        let mut s = heapless::String::new();
        s.push_str(path).map_err(|_| ConfigError::RequestPath)?;
        Ok(RequestPath(s))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for RequestPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = RequestPath;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a path prefix")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RequestPath, E> {
                RequestPath::new(v).map_err(|_| E::custom("a request path over 128 bytes"))
            }
        }
        d.deserialize_str(Visit)
    }
}

/// One tool name, copied.
struct Name(heapless::String<DENIED_NAME_BYTES>);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Name, E> {
                let mut name = heapless::String::new();
                name.push_str(v)
                    .map_err(|_| E::custom("a tool name over 256 bytes"))?;
                Ok(Name(name))
            }
        }
        d.deserialize_str(Visit)
    }
}

// ------------------------------------------------------------------ guard

/// Guard rules a configuration holds.
pub const GUARD_RULES: usize = 16;
/// Bytes of the rules' strings (literals, names, replacements) together.
pub const GUARD_BYTES: usize = 1024;
/// The built-in detectors' names, for messages.
const DETECTOR_NAMES: &str =
    "email, credit_card, us_ssn, aws_access_key_id, github_token, slack_token";

/// `guard`: the content rules.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardConfig {
    pub rules: GuardRules,
}

/// `guard.rules`, compact: each rule's strings (literal, name,
/// replacement) end to end in one store, so that a configuration stays
/// small (the wasm plugin parses it on a 64 KiB stack).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuardRules {
    bytes: heapless::Vec<u8, GUARD_BYTES>,
    rules: heapless::Vec<Spec, GUARD_RULES>,
}

/// A string in [`GuardRules`]' store: start and length.
type Span = (u16, u16);

/// One rule, its strings in the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Spec {
    literal: Option<Span>,
    ignore_case: bool,
    /// A detector's name: the detector, `None` if unknown.
    builtin: Option<Option<Detector>>,
    action: GuardAction,
    name: Option<Span>,
    replacement: Option<Span>,
}

impl GuardRules {
    /// Adds `rule`, its strings copied into the store; `None` if they do
    /// not fit.
    fn push(&mut self, rule: &GuardRule) -> Option<()> {
        let mut keep = |text: &Option<Text<{ guard::MAX_MATCH }>>| -> Option<Option<Span>> {
            let Some(text) = text else {
                return Some(None);
            };
            let start = u16::try_from(self.bytes.len()).ok()?;
            self.bytes
                .extend_from_slice(text.as_str().as_bytes())
                .ok()?;
            Some(Some((start, u16::try_from(text.as_str().len()).ok()?)))
        };
        let spec = Spec {
            literal: keep(&rule.literal)?,
            ignore_case: rule.ignore_case,
            builtin: rule
                .builtin
                .as_ref()
                .map(|n| Detector::from_name(n.as_str())),
            action: rule.action,
            name: keep(&rule.name)?,
            replacement: keep(&rule.replacement)?,
        };
        self.rules.push(spec).ok()
    }

    fn text(&self, span: Span) -> &str {
        let (start, len) = (usize::from(span.0), usize::from(span.1));
        self.bytes
            .get(start..start.saturating_add(len))
            .and_then(|b| core::str::from_utf8(b).ok())
            .unwrap_or_default()
    }
}

impl<'de> Deserialize<'de> for GuardRules {
    /// From an array of rules.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = GuardRules;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "an array of at most {GUARD_RULES} rules, their strings {GUARD_BYTES} bytes together"
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<GuardRules, A::Error> {
                let mut rules = GuardRules::default();
                while let Some(rule) = seq.next_element::<GuardRule>()? {
                    rules
                        .push(&rule)
                        .ok_or_else(|| serde::de::Error::invalid_length(GUARD_RULES + 1, &self))?;
                }
                Ok(rules)
            }
        }
        d.deserialize_seq(Visit)
    }
}

/// One rule as read (then kept in [`GuardRules`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GuardRule {
    #[serde(default)]
    literal: Option<Text<{ guard::MAX_MATCH }>>,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default)]
    builtin: Option<Text<32>>,
    action: GuardAction,
    #[serde(default)]
    name: Option<Text<{ guard::MAX_MATCH }>>,
    #[serde(default)]
    replacement: Option<Text<{ guard::MAX_MATCH }>>,
}

/// A rule's `action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardAction {
    Mask,
    Block,
    Monitor,
}

impl GuardConfig {
    /// Whether there are rules: a rewriter then needs guard lanes.
    pub fn is_on(&self) -> bool {
        !self.rules.rules.is_empty()
    }

    /// The rules, over this configuration's strings.
    ///
    /// # Errors
    ///
    /// A rule with no pattern or two, an unknown detector, or rules that
    /// do not compile.
    pub fn rules(&self) -> Result<heapless::Vec<Rule<'_>, GUARD_RULES>, ConfigError> {
        let mut rules = heapless::Vec::new();
        let store = &self.rules;
        for (i, r) in store.rules.iter().enumerate() {
            let action = match r.action {
                GuardAction::Mask => Action::Mask,
                GuardAction::Block => Action::Block,
                GuardAction::Monitor => Action::Monitor,
            };
            let mut rule = match (r.literal, r.builtin) {
                (Some(text), None) => {
                    let rule = Rule::literal(store.text(text), action);
                    if r.ignore_case {
                        rule.ignore_case()
                    } else {
                        rule
                    }
                }
                (None, Some(Some(d))) => Rule::builtin(d, action),
                _ => return Err(ConfigError::GuardRule(i)),
            };
            if let Some(name) = r.name {
                rule = rule.named(store.text(name));
            }
            if let Some(replacement) = r.replacement {
                rule = rule.replacement(store.text(replacement));
            }
            // (Never full: as many as the configuration holds.)
            let _ = rules.push(rule);
        }
        Rules::<'_, { guard::DEFAULT_RULES }>::check(&rules).map_err(ConfigError::Guard)?;
        Ok(rules)
    }
}

/// What each guard rule did in a stream, for the stats line:
/// `[{"rule":"email","matched":2,"masked":2,"blocked":0}, …]`.
pub struct GuardCounts<'a>(pub &'a rewrite::GuardLanes<'a>);

impl serde::Serialize for GuardCounts<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        struct One<'a>(&'a str, &'a rewrite::RuleCounts);
        impl serde::Serialize for One<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut o = s.serialize_struct("RuleCounts", 4)?;
                o.serialize_field("rule", self.0)?;
                o.serialize_field("matched", &self.1.matched)?;
                o.serialize_field("masked", &self.1.masked)?;
                o.serialize_field("blocked", &self.1.blocked)?;
                o.end()
            }
        }
        let rules = self.0.rules().rules();
        let mut seq = s.serialize_seq(Some(rules.len()))?;
        for (rule, counts) in rules.iter().zip(self.0.counts()) {
            seq.serialize_element(&One(rule.name, counts))?;
        }
        seq.end()
    }
}

/// A string, copied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Text<const N: usize>(heapless::String<N>);

impl<const N: usize> Text<N> {
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl<'de, const N: usize> Deserialize<'de> for Text<N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<const N: usize>;
        impl<const N: usize> serde::de::Visitor<'_> for Visit<N> {
            type Value = Text<N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a string of at most {N} bytes")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text<N>, E> {
                let mut text = heapless::String::new();
                text.push_str(v)
                    .map_err(|_| E::invalid_length(v.len(), &self))?;
                Ok(Text(text))
            }
        }
        d.deserialize_str(Visit::<N>)
    }
}

// ------------------------------------------------------------ response headers

/// The media type of `content_type` is `text/event-stream` (parameters
/// such as `charset` aside).
pub fn is_event_stream(content_type: &[u8]) -> bool {
    content_type
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii()
        .eq_ignore_ascii_case(b"text/event-stream")
}

/// Every coding the `content-encoding` values list is `identity` (an
/// absent header, an empty value too): a body the rewriter can read. The
/// values are all the header's lines; each may list codings separated by
/// commas.
pub fn is_identity<'a>(content_encoding: impl IntoIterator<Item = &'a [u8]>) -> bool {
    content_encoding.into_iter().all(|v| {
        v.split(|&b| b == b',')
            .map(<[u8]>::trim_ascii)
            .all(|c| c.is_empty() || c.eq_ignore_ascii_case(b"identity"))
    })
}

/// The request's `accept` names `text/event-stream` (the filter then asks
/// the upstream for `accept-encoding: identity`).
pub fn accepts_event_stream(accept: &[u8]) -> bool {
    accept
        .windows(17)
        .any(|w| w.eq_ignore_ascii_case(b"text/event-stream"))
}

/// One change to a rewritten response's headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderEdit {
    /// Remove the header.
    Remove(&'static str),
    /// Set the header to the value, replacing any.
    Set(&'static str, &'static str),
    /// Set the header to the value if the response has none.
    SetIfAbsent(&'static str, &'static str),
}

/// What a rewritten response's headers become, in order:
///
/// - `content-length` goes: the rewritten body has another length.
/// - `x-accel-buffering: no`: a buffering proxy (nginx) in front passes
///   each event on at once.
/// - `cache-control: no-cache` only where the upstream set none: its own
///   directives (`no-store`, `private`, `no-transform`) say more than
///   `no-cache` and are kept; overwriting them could let a cache store a
///   stream the upstream said must not be.
///
/// `content-type` stays; a response whose `content-encoding` is not
/// identity ([`is_identity`]) is not rewritten at all (and keeps its
/// headers).
pub const RESPONSE_EDITS: [HeaderEdit; 3] = [
    HeaderEdit::Remove("content-length"),
    HeaderEdit::Set("x-accel-buffering", "no"),
    HeaderEdit::SetIfAbsent("cache-control", "no-cache"),
];

// ------------------------------------------------------- rewriting for a host

/// The rewriter's counters a host has added to its metrics so far, to add
/// what they gained since (the Envoy filters' metrics are running sums).
pub struct Reported([u64; Stats::COUNTER_NAMES.len()]);

impl Reported {
    pub const fn new() -> Self {
        Reported([0; Stats::COUNTER_NAMES.len()])
    }

    /// What each counter gained since the last call, in the order of
    /// `Stats::COUNTER_NAMES`.
    pub fn gains(&mut self, stats: &Stats) -> [u64; Stats::COUNTER_NAMES.len()] {
        let mut gains = [0; Stats::COUNTER_NAMES.len()];
        for ((gain, before), (_, now)) in gains.iter_mut().zip(&mut self.0).zip(stats.counters()) {
            *gain = now.saturating_sub(*before);
            *before = now;
        }
        gains
    }
}

// ------------------------------------------------------------ request counts

/// Agent requests a front end has seen: checked, refused (by
/// [`Refusal::reason`]) and rewritten (a denied tool taken out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequestCounts {
    pub checked: u64,
    pub refused_json: u64,
    pub refused_schema: u64,
    pub refused_too_large: u64,
    pub refused_capacity: u64,
    pub rewritten: u64,
}

impl RequestCounts {
    /// The counters' metric names (the filters' `agui_stream.NAME`), in
    /// [`values`](Self::values) order.
    pub const NAMES: [&'static str; 6] = [
        "requests_checked",
        "requests_refused_json",
        "requests_refused_schema",
        "requests_refused_too_large",
        "requests_refused_capacity",
        "requests_rewritten",
    ];

    /// The counts, in [`NAMES`](Self::NAMES) order.
    pub fn values(&self) -> [u64; 6] {
        [
            self.checked,
            self.refused_json,
            self.refused_schema,
            self.refused_too_large,
            self.refused_capacity,
            self.rewritten,
        ]
    }

    /// What one request's outcome adds to each counter, in
    /// [`NAMES`](Self::NAMES) order.
    pub fn of(outcome: Result<&RequestStats, &Refusal>) -> [u64; 6] {
        let mut one = RequestCounts::default();
        one.count(outcome);
        one.values()
    }

    /// Counts one request's outcome.
    pub fn count(&mut self, outcome: Result<&RequestStats, &Refusal>) {
        self.checked = self.checked.saturating_add(1);
        match outcome {
            Ok(stats) => {
                self.rewritten = self
                    .rewritten
                    .saturating_add(u64::from(stats.tools_removed > 0))
            }
            Err(r) => {
                let slot = match r.reason() {
                    "json" => &mut self.refused_json,
                    "schema" => &mut self.refused_schema,
                    "too_large" => &mut self.refused_too_large,
                    _ => &mut self.refused_capacity,
                };
                *slot = slot.saturating_add(1);
            }
        }
    }
}

// ------------------------------------------------------------- the stats line

/// The longest [`StatsLine`] (every counter and table entry at its
/// largest, and room for a front end's fields).
pub const STATS_LINE_BYTES: usize = 8 * 1024;

/// One stream's statistics as one JSON object: `Stats`' serialization (its
/// counters, then `events_in`, `events_out`, `violations_by_stage`), then
/// the fields a front end adds ([`field`](StatsLine::field)), e.g.
/// `"error"`. What does not fit [`STATS_LINE_BYTES`] is left out (the
/// object stays whole).
pub struct StatsLine {
    buf: [u8; STATS_LINE_BYTES],
    /// The bytes written, without the closing brace.
    len: usize,
}

impl StatsLine {
    /// The line of `stats`.
    pub fn new(stats: &Stats) -> Self {
        let mut line = StatsLine {
            buf: [0; STATS_LINE_BYTES],
            len: 0,
        };
        // `{…}`: keep `{…`, the brace goes back at the end.
        line.len = serde_json_core::to_slice(stats, &mut line.buf)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .unwrap_or(0);
        if line.len == 0 {
            // (Cannot happen: the statistics always fit.)
            line.buf = [0; STATS_LINE_BYTES];
            line.len = 1;
            if let Some(b) = line.buf.first_mut() {
                *b = b'{';
            }
        }
        line
    }

    /// Adds `"name":value` (nothing if it does not fit).
    pub fn field<T: serde::Serialize + ?Sized>(&mut self, name: &str, value: &T) -> &mut Self {
        let start = self.len;
        let written = (|| {
            let mut at = start;
            if at > 1 {
                *self.buf.get_mut(at)? = b',';
                at = at.checked_add(1)?;
            }
            at = at.checked_add(serde_json_core::to_slice(name, self.buf.get_mut(at..)?).ok()?)?;
            *self.buf.get_mut(at)? = b':';
            at = at.checked_add(1)?;
            at.checked_add(serde_json_core::to_slice(value, self.buf.get_mut(at..)?).ok()?)
        })();
        if let Some(end) = written {
            // Room for the closing brace.
            if end < self.buf.len() {
                self.len = end;
            }
        }
        self
    }

    /// The object.
    pub fn as_str(&mut self) -> &str {
        let end = self.len.saturating_add(1);
        if let Some(b) = self.buf.get_mut(self.len) {
            *b = b'}';
        }
        // Whole UTF-8 values went in.
        core::str::from_utf8(self.buf.get(..end).unwrap_or_default()).unwrap_or_default()
    }
}
