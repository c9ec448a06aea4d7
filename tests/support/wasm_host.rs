//! The wasm plugin's ABI (version 1, `examples/wasm-plugin`) driven from a
//! wasmi host: one instance, its memory and its exports. Shared by
//! `tests/wasm_plugin.rs` and `examples/rewrite_rounds.rs` (included by
//! path), which each loop over pushes their own way.

// Each includer uses part of it.
#![allow(dead_code)]

use wasmi::{Engine, Linker, Memory, Module, Store, TypedFunc};

/// The exports, the whole ABI (version 1).
pub const EXPORTS: [&str; 13] = [
    "agui_init_v1",
    "agui_input_ptr",
    "agui_input_cap",
    "agui_push",
    "agui_pending",
    "agui_finish",
    "agui_output_ptr",
    "agui_output_len",
    "agui_report_ptr",
    "agui_report_len",
    "agui_request_begin",
    "agui_request_push",
    "agui_request_finish",
];

/// One instance of the module.
pub struct Host {
    store: Store<()>,
    memory: Memory,
    init: TypedFunc<i32, i32>,
    input_ptr: TypedFunc<(), i32>,
    input_cap: TypedFunc<(), i32>,
    push: TypedFunc<i32, i32>,
    pending: TypedFunc<(), i32>,
    finish: TypedFunc<(), i32>,
    output_ptr: TypedFunc<(), i32>,
    output_len: TypedFunc<(), i32>,
    report_ptr: TypedFunc<(), i32>,
    report_len: TypedFunc<(), i32>,
    request_begin: TypedFunc<(), i32>,
    request_push: TypedFunc<i32, i32>,
    request_finish: TypedFunc<(), i32>,
}

impl Host {
    /// Instantiates `module` (which imports nothing).
    pub fn new(engine: &Engine, module: &Module) -> Result<Host, wasmi::Error> {
        let mut store = Store::new(engine, ());
        let instance = Linker::new(engine).instantiate_and_start(&mut store, module)?;
        let memory = instance
            .get_memory(&store, "memory")
            .ok_or_else(|| wasmi::Error::new("no memory export"))?;
        macro_rules! f {
            ($name:literal) => {
                instance.get_typed_func(&store, $name)?
            };
        }
        Ok(Host {
            init: f!("agui_init_v1"),
            input_ptr: f!("agui_input_ptr"),
            input_cap: f!("agui_input_cap"),
            push: f!("agui_push"),
            pending: f!("agui_pending"),
            finish: f!("agui_finish"),
            output_ptr: f!("agui_output_ptr"),
            output_len: f!("agui_output_len"),
            report_ptr: f!("agui_report_ptr"),
            report_len: f!("agui_report_len"),
            request_begin: f!("agui_request_begin"),
            request_push: f!("agui_request_push"),
            request_finish: f!("agui_request_finish"),
            memory,
            store,
        })
    }

    fn call0(&mut self, f: TypedFunc<(), i32>) -> Result<i32, wasmi::Error> {
        f.call(&mut self.store, ())
    }

    /// Copies as much of `bytes` as fits to `agui_input_ptr()`; how much.
    fn write_input(&mut self, bytes: &[u8]) -> Result<usize, wasmi::Error> {
        let cap = self.call0(self.input_cap)? as usize;
        let ptr = self.call0(self.input_ptr)? as usize;
        let take = bytes.len().min(cap);
        self.memory.data_mut(&mut self.store)[ptr..][..take].copy_from_slice(&bytes[..take]);
        Ok(take)
    }

    /// `agui_init_v1` with `config` (JSON; `""` for the defaults), which
    /// must fit the input buffer.
    pub fn init(&mut self, config: &[u8]) -> Result<i32, wasmi::Error> {
        if self.write_input(config)? < config.len() {
            return Err(wasmi::Error::new("the configuration does not fit"));
        }
        self.init_len(config.len() as i32)
    }

    /// Writes the first bytes of `bytes` that fit and pushes them: how many
    /// were taken, and the code.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(usize, i32), wasmi::Error> {
        let take = self.write_input(bytes)?;
        Ok((take, self.push_len(take as i32)?))
    }

    /// `agui_push(len)` as it is (`0` reads on what is pending).
    pub fn push_len(&mut self, len: i32) -> Result<i32, wasmi::Error> {
        self.push.call(&mut self.store, len)
    }

    /// `agui_init_v1(len)` as it is.
    pub fn init_len(&mut self, len: i32) -> Result<i32, wasmi::Error> {
        self.init.call(&mut self.store, len)
    }

    /// `agui_input_cap()`.
    pub fn input_cap(&mut self) -> Result<i32, wasmi::Error> {
        self.call0(self.input_cap)
    }

    /// `agui_pending()`.
    pub fn pending(&mut self) -> Result<i32, wasmi::Error> {
        self.call0(self.pending)
    }

    /// `agui_finish()`.
    pub fn finish(&mut self) -> Result<i32, wasmi::Error> {
        self.call0(self.finish)
    }

    /// `agui_request_begin()`.
    pub fn request_begin(&mut self) -> Result<i32, wasmi::Error> {
        self.call0(self.request_begin)
    }

    /// Writes the first bytes of `bytes` that fit and calls
    /// `agui_request_push`: how many were taken, and the code.
    pub fn request_push(&mut self, bytes: &[u8]) -> Result<(usize, i32), wasmi::Error> {
        let take = self.write_input(bytes)?;
        Ok((take, self.request_push_len(take as i32)?))
    }

    /// `agui_request_push(len)` as it is.
    pub fn request_push_len(&mut self, len: i32) -> Result<i32, wasmi::Error> {
        self.request_push.call(&mut self.store, len)
    }

    /// `agui_request_finish()`.
    pub fn request_finish(&mut self) -> Result<i32, wasmi::Error> {
        self.call0(self.request_finish)
    }

    /// The last call's output.
    pub fn output(&mut self) -> Result<&[u8], wasmi::Error> {
        let (ptr, len) = (self.call0(self.output_ptr)?, self.call0(self.output_len)?);
        Ok(&self.memory.data(&self.store)[ptr as usize..][..len as usize])
    }

    /// The report (JSON).
    pub fn report(&mut self) -> Result<&[u8], wasmi::Error> {
        let (ptr, len) = (self.call0(self.report_ptr)?, self.call0(self.report_len)?);
        Ok(&self.memory.data(&self.store)[ptr as usize..][..len as usize])
    }
}
