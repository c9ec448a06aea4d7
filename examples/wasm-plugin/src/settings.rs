//! The configuration (placeholder until `examples/shared/frontend.rs`).
use agui_stream::legacy::Minting;
use agui_stream::rewrite::{OnViolation, Options};
use agui_stream::{Config, Dialect};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings<'a> {
    dialect: Dialect,
    on_violation: OnViolation,
    repair: bool,
    close_open: bool,
    canonical: bool,
    drop_raw: bool,
    max_event_bytes: u64,
    check_tool_args: bool,
    #[serde(borrow)]
    deny_tools: heapless::Vec<&'a str, 16>,
    deterministic_ids: bool,
}

impl Default for Settings<'_> {
    fn default() -> Self {
        Settings {
            dialect: Dialect::V1,
            on_violation: OnViolation::Stop,
            repair: true,
            close_open: false,
            canonical: false,
            drop_raw: false,
            max_event_bytes: 0,
            check_tool_args: false,
            deny_tools: heapless::Vec::new(),
            deterministic_ids: false,
        }
    }
}

pub struct Plan<'a> {
    pub config: Config,
    pub options: Options,
    deny_tools: heapless::Vec<&'a str, 16>,
}

#[derive(Clone, Copy, Debug)]
pub struct Error(serde_json_core::de::Error);

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

impl<'a> Plan<'a> {
    pub fn from_json(json: &'a [u8]) -> Result<Plan<'a>, Error> {
        let s: Settings<'a> = if json.iter().all(u8::is_ascii_whitespace) {
            Settings::default()
        } else {
            serde_json_core::from_slice(json).map_err(Error)?.0
        };
        let minting = if s.deterministic_ids {
            Minting::Deterministic
        } else {
            Minting::PerRun
        };
        Ok(Plan {
            config: Config::new()
                .dialect(s.dialect)
                .minting(minting)
                .check_tool_args(s.check_tool_args),
            options: Options::new()
                .on_violation(s.on_violation)
                .repair(s.repair)
                .close_open(s.close_open)
                .canonical(s.canonical)
                .drop_raw(s.drop_raw)
                .max_event_bytes(s.max_event_bytes),
            deny_tools: s.deny_tools,
        })
    }

    pub fn deny_tools(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.deny_tools.iter().copied()
    }
}
