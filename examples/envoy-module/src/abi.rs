//! Envoy's dynamic-module C ABI, the part this filter uses, and safe
//! wrappers over it: the only `unsafe` code of the filter.
//!
//! Declared by hand from Envoy's
//! `source/extensions/dynamic_modules/abi/abi.h`, for Envoy 1.40.0, whose
//! current ABI version is `v0.2.0` ([`ABI_VERSION`]): the event hooks
//! Envoy calls (`envoy_dynamic_module_on_*`, exported from exports.rs)
//! and the callbacks the filter calls (`envoy_dynamic_module_callback_*`,
//! exported by the Envoy binary and bound when Envoy `dlopen`s the
//! module).
//!
//! From `v0.1.0` (what this module first declared; Envoy 1.40 still loads
//! it, with a "deprecated" warning) to `v0.2.0` nothing this module
//! declares changed: the header promises that a `v0.1.y` module works
//! with a `v0.2.x` Envoy, and Envoy 1.40 calls a module's hooks and
//! serves its callbacks the same whatever version it returns (one symbol,
//! one signature each; the version only chooses the log line). What
//! `v0.2.0` has besides is new, and optional to a module: hooks Envoy
//! 1.40 looks up but does not require (`on_http_filter_local_reply`,
//! `on_http_filter_per_route_config_*`, the `on_http_filter_config_*`
//! callout, stream and scheduler hooks), none of which this filter needs,
//! and more callbacks. So the move is the version string, and the
//! declarations this module added with it (the request body kinds,
//! `send_response`, the request hooks' stop statuses in exports.rs).
//!
//! How the declarations were checked: against the header's text (the
//! version whose symbols the 1.40.0 binary exports) and against the
//! binary itself: every callback declared is one of its exported symbols,
//! every hook one of the names it looks up, and five callbacks
//! (`get_body_chunks_size`, `define_counter`, `increment_counter`, `log`,
//! `send_response`) against its code (which registers and stack slots
//! hold which argument: `send_response`'s `details` buffer is its 7th and
//! 8th words, on the stack). The end to end test exercises every one.
//!
//! The rules the wrappers rely on (abi.h): a filter's Envoy pointer is valid
//! from `on_http_filter_new` to `on_http_filter_destroy`, and is used only
//! on the worker thread that calls its hooks; a buffer Envoy lends (a header
//! value, a body slice) is valid until the hook that got it returns, so a
//! [`Hook`] borrows it no longer than itself, and a `Hook` is made inside a
//! hook and dropped before it returns.

#![allow(unsafe_code)]

use core::ffi::c_void;
use core::marker::PhantomData;

/// `envoy_dynamic_module_type_envoy_buffer`: bytes Envoy owns.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EnvoyBuffer {
    ptr: *const u8,
    length: usize,
}

impl EnvoyBuffer {
    /// An empty buffer, to fill.
    pub const EMPTY: EnvoyBuffer = EnvoyBuffer {
        ptr: core::ptr::null(),
        length: 0,
    };

    /// The bytes (none for a null pointer).
    ///
    /// # Safety
    /// Envoy's buffer, valid for `'a` (the hook it came with).
    pub unsafe fn as_slice<'a>(self) -> &'a [u8] {
        if self.ptr.is_null() {
            &[]
        } else {
            // SAFETY: the caller's contract.
            unsafe { core::slice::from_raw_parts(self.ptr, self.length) }
        }
    }
}

/// `envoy_dynamic_module_type_envoy_http_header`: a header Envoy owns.
#[repr(C)]
#[derive(Clone, Copy)]
struct EnvoyHeader {
    key: EnvoyBuffer,
    value: EnvoyBuffer,
}

/// `envoy_dynamic_module_type_module_buffer`: bytes the module owns, lent
/// for one call.
#[repr(C)]
#[derive(Clone, Copy)]
struct ModuleBuffer {
    ptr: *const u8,
    length: usize,
}

impl ModuleBuffer {
    fn of(bytes: &[u8]) -> ModuleBuffer {
        ModuleBuffer {
            ptr: bytes.as_ptr(),
            length: bytes.len(),
        }
    }

    /// `{NULL, 0}`: "no value" (a header to remove).
    const NONE: ModuleBuffer = ModuleBuffer {
        ptr: core::ptr::null(),
        length: 0,
    };
}

/// `envoy_dynamic_module_type_http_header_type`.
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Headers {
    Request = 0,
    Response = 2,
}

/// `envoy_dynamic_module_type_http_body_type`.
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Body {
    /// The request body chunk the hook is called with.
    ReceivedRequest = 0,
    /// The request body Envoy buffers; where the filter does not buffer,
    /// adding to it adds data after the last chunk (`addDecodedData`: in
    /// the trailers hook, body before the trailers).
    BufferedRequest = 1,
    /// The response body chunk the hook is called with.
    ReceivedResponse = 2,
    /// The response body Envoy buffers; where the filter does not buffer,
    /// adding to it adds data after the last chunk (`addEncodedData`: in
    /// the trailers hook, body before the trailers).
    BufferedResponse = 3,
}

/// `envoy_dynamic_module_type_module_http_header`: a header the module
/// owns, lent for one call.
#[repr(C)]
struct ModuleHeader {
    key: ModuleBuffer,
    value: ModuleBuffer,
}

/// `envoy_dynamic_module_type_log_level`.
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Level {
    Info = 2,
    Warn = 3,
    Error = 4,
}

/// The ABI version this module was written against (`abi.h`'s
/// `ENVOY_DYNAMIC_MODULES_ABI_VERSION`: Envoy 1.40.0's is `v0.2.0`),
/// returned by `envoy_dynamic_module_on_program_init`. Envoy logs "ABI
/// version … matched" when it is its own, and a warning that it "is
/// deprecated" (then goes on) when it is not; the end to end test fails on
/// the warning.
pub const ABI_VERSION: &core::ffi::CStr = c"v0.2.0";

/// `envoy_dynamic_module_type_metrics_result_Success`.
const METRICS_SUCCESS: u32 = 0;

unsafe extern "C" {
    fn envoy_dynamic_module_callback_log(level: u32, message: ModuleBuffer);
    fn envoy_dynamic_module_callback_http_get_header(
        filter: *mut c_void,
        kind: u32,
        key: ModuleBuffer,
        result: *mut EnvoyBuffer,
        index: usize,
        optional_size: *mut usize,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_get_headers_size(filter: *mut c_void, kind: u32)
    -> usize;
    fn envoy_dynamic_module_callback_http_get_headers(
        filter: *mut c_void,
        kind: u32,
        result: *mut EnvoyHeader,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_add_header(
        filter: *mut c_void,
        kind: u32,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_set_header(
        filter: *mut c_void,
        kind: u32,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_get_body_chunks_size(
        filter: *mut c_void,
        kind: u32,
    ) -> usize;
    fn envoy_dynamic_module_callback_http_get_body_chunks(
        filter: *mut c_void,
        kind: u32,
        result: *mut EnvoyBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_drain_body(
        filter: *mut c_void,
        kind: u32,
        bytes: usize,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_append_body(
        filter: *mut c_void,
        kind: u32,
        data: ModuleBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_send_response(
        filter: *mut c_void,
        status_code: u32,
        headers: *const ModuleHeader,
        headers_length: usize,
        body: ModuleBuffer,
        details: ModuleBuffer,
    );
    fn envoy_dynamic_module_callback_http_filter_config_define_counter(
        config: *mut c_void,
        name: ModuleBuffer,
        label_names: *const ModuleBuffer,
        label_names_length: usize,
        counter_id: *mut usize,
    ) -> u32;
    fn envoy_dynamic_module_callback_http_filter_increment_counter(
        filter: *mut c_void,
        id: usize,
        label_values: *const ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> u32;
}

/// Writes a line to Envoy's log (component `dynamic_modules`).
pub fn log(level: Level, message: &str) {
    // SAFETY: the message is valid for the call; Envoy copies it.
    unsafe { envoy_dynamic_module_callback_log(level as u32, ModuleBuffer::of(message.as_bytes())) }
}

/// `envoy_dynamic_module_type_http_filter_config_envoy_ptr`, during
/// `on_http_filter_config_new` (the only time counters can be defined).
pub struct ConfigHook {
    ptr: *mut c_void,
}

impl ConfigHook {
    /// # Safety
    /// `ptr` is the config pointer `on_http_filter_config_new` was called
    /// with, and the value is used only during that call.
    pub unsafe fn new(ptr: *mut c_void) -> ConfigHook {
        ConfigHook { ptr }
    }

    /// Defines the counter `NAME` (Envoy shows it as
    /// `dynamicmodulescustom.NAME`); `None` if Envoy will not.
    pub fn define_counter(&self, name: &str) -> Option<usize> {
        let mut id = 0usize;
        // SAFETY: a live config pointer (`new`'s contract), the name valid
        // for the call, no labels, `id` writable.
        let result = unsafe {
            envoy_dynamic_module_callback_http_filter_config_define_counter(
                self.ptr,
                ModuleBuffer::of(name.as_bytes()),
                core::ptr::null(),
                0,
                &mut id,
            )
        };
        (result == METRICS_SUCCESS).then_some(id)
    }
}

/// A filter's Envoy pointer, during one hook: what the filter may ask of
/// Envoy there. Buffers it returns borrow it, so none outlives the hook.
pub struct Hook<'h> {
    ptr: *mut c_void,
    hook: PhantomData<&'h mut ()>,
}

impl Hook<'_> {
    /// # Safety
    /// `ptr` is the filter pointer the current hook was called with, and
    /// the value is dropped before the hook returns.
    pub unsafe fn new(ptr: *mut c_void) -> Self {
        Hook {
            ptr,
            hook: PhantomData,
        }
    }

    /// Value number `index` of the header `name` (lower case) and how many
    /// values it has (0 and `None`: absent).
    pub fn header(&self, kind: Headers, name: &str, index: usize) -> (Option<&[u8]>, usize) {
        let mut value = EnvoyBuffer::EMPTY;
        let mut count = 0usize;
        // SAFETY: a live filter pointer (`new`'s contract); the key valid
        // for the call; `value` and `count` writable.
        let found = unsafe {
            envoy_dynamic_module_callback_http_get_header(
                self.ptr,
                kind as u32,
                ModuleBuffer::of(name.as_bytes()),
                &mut value,
                index,
                &mut count,
            )
        };
        // SAFETY: Envoy's header value, valid until the hook returns (and
        // `self` does not outlive it).
        let value = (found && !value.ptr.is_null())
            .then(|| unsafe { core::slice::from_raw_parts(value.ptr, value.length) });
        (value, count)
    }

    /// Whether the header `name` (lower case) is there, found by going
    /// through every header: a lookup by name ([`Hook::header`]) of a
    /// header Envoy keeps no slot for makes Envoy build a map of the
    /// stream's headers, about 1.1 KB of memory for as long as the stream
    /// is open.
    pub fn has_header(&self, kind: Headers, name: &str) -> bool {
        // SAFETY: a live filter pointer.
        let size =
            unsafe { envoy_dynamic_module_callback_http_get_headers_size(self.ptr, kind as u32) };
        let empty = EnvoyHeader {
            key: EnvoyBuffer::EMPTY,
            value: EnvoyBuffer::EMPTY,
        };
        let mut headers = vec![empty; size];
        // SAFETY: a live filter pointer; `headers` has room for `size`
        // entries, as many as Envoy writes.
        if !unsafe {
            envoy_dynamic_module_callback_http_get_headers(
                self.ptr,
                kind as u32,
                headers.as_mut_ptr(),
            )
        } {
            return false;
        }
        // SAFETY: Envoy's header names, valid until the hook returns.
        headers
            .iter()
            .any(|h| unsafe { h.key.as_slice() }.eq_ignore_ascii_case(name.as_bytes()))
    }

    /// Adds a value of the header `name` (lower case), keeping any it had.
    pub fn add_header(&self, kind: Headers, name: &str, value: &[u8]) -> bool {
        // SAFETY: a live filter pointer; both buffers valid for the call
        // (Envoy copies them).
        unsafe {
            envoy_dynamic_module_callback_http_add_header(
                self.ptr,
                kind as u32,
                ModuleBuffer::of(name.as_bytes()),
                ModuleBuffer::of(value),
            )
        }
    }

    /// Sets the header `name` (lower case) to `value`, replacing every
    /// value it had; `None` removes it.
    pub fn set_header(&self, kind: Headers, name: &str, value: Option<&[u8]>) -> bool {
        let value = value.map_or(ModuleBuffer::NONE, ModuleBuffer::of);
        // SAFETY: a live filter pointer; both buffers valid for the call
        // (Envoy copies them).
        unsafe {
            envoy_dynamic_module_callback_http_set_header(
                self.ptr,
                kind as u32,
                ModuleBuffer::of(name.as_bytes()),
                value,
            )
        }
    }

    /// The body's slices, in order (into `slices`, reused); `None` where
    /// the hook has no such body.
    pub fn body<'s>(
        &'s self,
        kind: Body,
        slices: &'s mut Vec<EnvoyBuffer>,
    ) -> Option<impl Iterator<Item = &'s [u8]> + Clone + 's> {
        // SAFETY: a live filter pointer.
        let n = unsafe {
            envoy_dynamic_module_callback_http_get_body_chunks_size(self.ptr, kind as u32)
        };
        slices.clear();
        slices.resize(n, EnvoyBuffer::EMPTY);
        // No slice: an empty body (nothing to ask for). SAFETY: `slices`
        // has room for the `n` buffers Envoy writes (the body cannot
        // change between the two calls: one thread, no call in between).
        let ok = n == 0
            || unsafe {
                envoy_dynamic_module_callback_http_get_body_chunks(
                    self.ptr,
                    kind as u32,
                    slices.as_mut_ptr(),
                )
            };
        ok.then(|| {
            slices.iter().map(|b| {
                if b.ptr.is_null() {
                    &[][..]
                } else {
                    // SAFETY: Envoy's body slice, valid until the hook
                    // returns or the body changes, neither of which can
                    // happen while `self` is borrowed here.
                    unsafe { core::slice::from_raw_parts(b.ptr, b.length) }
                }
            })
        })
    }

    /// Removes the first `bytes` bytes of the body.
    pub fn drain_body(&mut self, kind: Body, bytes: usize) -> bool {
        // SAFETY: a live filter pointer; `&mut self`: no body slice is
        // borrowed.
        unsafe { envoy_dynamic_module_callback_http_drain_body(self.ptr, kind as u32, bytes) }
    }

    /// Adds `data` at the end of the body (Envoy copies it).
    pub fn append_body(&mut self, kind: Body, data: &[u8]) -> bool {
        // SAFETY: a live filter pointer; `data` valid for the call;
        // `&mut self`: no body slice is borrowed.
        unsafe {
            envoy_dynamic_module_callback_http_append_body(
                self.ptr,
                kind as u32,
                ModuleBuffer::of(data),
            )
        }
    }

    /// Answers the request locally (Envoy's `sendLocalReply`): `status`,
    /// the headers `headers` (names in lower case), `body`; `details` is
    /// the response code details Envoy logs (one word). The hook that calls
    /// it then stops the request's iteration: the upstream request, if it
    /// started, is reset, its body never ended.
    pub fn send_response(
        &mut self,
        status: u16,
        headers: &[(&str, &[u8])],
        body: &[u8],
        details: &str,
    ) {
        let headers: Vec<ModuleHeader> = headers
            .iter()
            .map(|(name, value)| ModuleHeader {
                key: ModuleBuffer::of(name.as_bytes()),
                value: ModuleBuffer::of(value),
            })
            .collect();
        // SAFETY: a live filter pointer; the headers, body and details
        // valid for the call (Envoy copies them); `&mut self`: no body
        // slice is borrowed.
        unsafe {
            envoy_dynamic_module_callback_http_send_response(
                self.ptr,
                u32::from(status),
                headers.as_ptr(),
                headers.len(),
                ModuleBuffer::of(body),
                ModuleBuffer::of(details.as_bytes()),
            )
        }
    }

    /// Adds `n` to a counter `ConfigHook::define_counter` defined.
    pub fn increment_counter(&self, id: Option<usize>, n: u64) {
        if let Some(id) = id
            && n > 0
        {
            // SAFETY: a live filter pointer; no labels.
            let _ = unsafe {
                envoy_dynamic_module_callback_http_filter_increment_counter(
                    self.ptr,
                    id,
                    core::ptr::null(),
                    0,
                    n,
                )
            };
        }
    }
}
