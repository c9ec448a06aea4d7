//! The event hooks Envoy calls (`envoy_dynamic_module_on_*`): pointers in,
//! the safe filter (lib.rs) called. With abi.rs, the only `unsafe` code.
//!
//! Ownership (abi.h): the pointer `on_http_filter_config_new` returns is
//! the module's until `on_http_filter_config_destroy`, which Envoy calls
//! after every filter made from it is destroyed; a filter's, from
//! `on_http_filter_new` to `on_http_filter_destroy`. Both are `Box`es (a
//! configuration is shared by every worker thread: it is only read). Every
//! hook is called on the thread that owns the filter, never reentrantly.
#![allow(unsafe_code)]

use core::ffi::{c_char, c_void};

use crate::abi::{self, ConfigHook, EnvoyBuffer, Hook};
use crate::request::Verdict;
use crate::{Filter, FilterConfig};

/// `envoy_dynamic_module_type_on_http_filter_*_status_Continue`: the
/// stream goes on (the response hooks never stop it: stopping would make
/// Envoy buffer it).
const CONTINUE: u32 = 0;
/// `…_request_headers_status_StopIteration` and
/// `…_request_trailers_status_StopIteration`: after a local answer.
const STOP_ITERATION: u32 = 1;
/// `…_request_body_status_StopIterationNoBuffer`: after a local answer,
/// nothing of the body is kept.
const STOP_ITERATION_NO_BUFFER: u32 = 3;

/// A request hook's status: `stop` after a local answer.
fn status(verdict: Option<Verdict>, stop: u32) -> u32 {
    match verdict {
        Some(Verdict::Stop) => stop,
        _ => CONTINUE,
    }
}

/// Called once, when Envoy loads the module: its ABI version.
#[unsafe(no_mangle)]
pub extern "C" fn envoy_dynamic_module_on_program_init() -> *const c_char {
    abi::ABI_VERSION.as_ptr()
}

/// A filter configuration (a `DynamicModuleFilter` in Envoy's
/// configuration): `config` is its `filter_config` (a `StringValue`'s
/// string). Null refuses it (Envoy fails the configuration).
///
/// # Safety
/// Envoy's pointers, valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_new(
    config_envoy_ptr: *mut c_void,
    _name: EnvoyBuffer,
    config: EnvoyBuffer,
) -> *const c_void {
    // SAFETY: the call's contract.
    let (hook, json) = unsafe { (ConfigHook::new(config_envoy_ptr), config.as_slice()) };
    match FilterConfig::new(&hook, json) {
        Some(config) => Box::into_raw(Box::new(config)).cast_const().cast(),
        None => core::ptr::null(),
    }
}

/// # Safety
/// A pointer `envoy_dynamic_module_on_http_filter_config_new` returned,
/// no filter made from it left.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_destroy(config: *const c_void) {
    if !config.is_null() {
        // SAFETY: the call's contract: ours, and no longer used.
        drop(unsafe { Box::from_raw(config.cast_mut().cast::<FilterConfig>()) });
    }
}

/// A filter for one HTTP stream.
///
/// # Safety
/// A live configuration pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_new(
    config: *const c_void,
    _filter_envoy_ptr: *mut c_void,
) -> *const c_void {
    // SAFETY: the configuration outlives its filters (Envoy's filter holds
    // it), and is only read.
    let Some(config) = (unsafe { config.cast::<FilterConfig>().as_ref() }) else {
        return core::ptr::null();
    };
    Box::into_raw(Box::new(Filter::new(config)))
        .cast_const()
        .cast()
}

/// # Safety
/// A pointer `envoy_dynamic_module_on_http_filter_new` returned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_destroy(filter: *const c_void) {
    if !filter.is_null() {
        // SAFETY: the call's contract: ours, and no longer used.
        drop(unsafe { Box::from_raw(filter.cast_mut().cast::<Filter>()) });
    }
}

/// Runs `f` on the filter with the hook's view of Envoy (nothing for a
/// null filter).
///
/// # Safety
/// The hook's own pointers: Envoy's filter and the module's (from
/// `envoy_dynamic_module_on_http_filter_new`), on the filter's thread.
unsafe fn call<R>(
    envoy: *mut c_void,
    filter: *const c_void,
    f: impl FnOnce(&mut Filter, &mut Hook<'_>) -> R,
) -> Option<R> {
    // SAFETY: the caller's contract; one hook at a time per filter, so the
    // `&mut` is the only reference, and the `Hook` is dropped before the
    // hook returns.
    let filter = unsafe { filter.cast_mut().cast::<Filter>().as_mut() }?;
    Some(f(filter, &mut unsafe { Hook::new(envoy) }))
}

/// # Safety
/// Envoy's hook contract (see [`call`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_headers(
    envoy: *mut c_void,
    filter: *const c_void,
    end_of_stream: bool,
) -> u32 {
    // SAFETY: the hook's contract.
    let verdict = unsafe {
        call(envoy, filter, |f, hook| {
            f.on_request_headers(hook, end_of_stream)
        })
    };
    status(verdict, STOP_ITERATION)
}

/// A chunk of the request body (an agent request's is checked).
///
/// # Safety
/// Envoy's hook contract (see [`call`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_body(
    envoy: *mut c_void,
    filter: *const c_void,
    end_of_stream: bool,
) -> u32 {
    // SAFETY: the hook's contract.
    let verdict = unsafe {
        call(envoy, filter, |f, hook| {
            f.on_request_body(hook, end_of_stream)
        })
    };
    status(verdict, STOP_ITERATION_NO_BUFFER)
}

/// The request's trailers: the end of a body that has them.
///
/// # Safety
/// Envoy's hook contract (see [`call`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_trailers(
    envoy: *mut c_void,
    filter: *const c_void,
) -> u32 {
    // SAFETY: the hook's contract.
    let verdict = unsafe { call(envoy, filter, |f, hook| f.on_request_trailers(hook)) };
    status(verdict, STOP_ITERATION)
}

/// # Safety
/// Envoy's hook contract (see [`call`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_response_headers(
    envoy: *mut c_void,
    filter: *const c_void,
    end_of_stream: bool,
) -> u32 {
    // SAFETY: the hook's contract.
    unsafe {
        call(envoy, filter, |f, hook| {
            f.on_response_headers(hook, end_of_stream)
        })
    };
    CONTINUE
}

/// # Safety
/// Envoy's hook contract (see [`call`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_response_body(
    envoy: *mut c_void,
    filter: *const c_void,
    end_of_stream: bool,
) -> u32 {
    // SAFETY: the hook's contract.
    unsafe {
        call(envoy, filter, |f, hook| {
            f.on_response_body(hook, end_of_stream)
        })
    };
    CONTINUE
}

/// # Safety
/// Envoy's hook contract (see [`call`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_response_trailers(
    envoy: *mut c_void,
    filter: *const c_void,
) -> u32 {
    // SAFETY: the hook's contract.
    unsafe { call(envoy, filter, |f, hook| f.on_response_trailers(hook)) };
    CONTINUE
}

/// The stream is over (its end, a reset, a client gone): called before
/// `destroy`, with Envoy's filter still there to count on.
///
/// # Safety
/// Envoy's hook contract (see [`call`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_stream_complete(
    envoy: *mut c_void,
    filter: *const c_void,
) {
    // SAFETY: the hook's contract.
    unsafe { call(envoy, filter, |f, hook| f.on_stream_complete(hook)) };
}

/// The filter never buffers, so the client's pace needs nothing of it:
/// Envoy's own flow control applies.
#[unsafe(no_mangle)]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark(
    _envoy: *mut c_void,
    _filter: *const c_void,
) {
}

#[unsafe(no_mangle)]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark(
    _envoy: *mut c_void,
    _filter: *const c_void,
) {
}

/// Hooks Envoy requires but never calls for this filter: they answer
/// callouts, streams and schedulers the filter never starts (their other
/// arguments are left out: nothing reads them).
macro_rules! never_called {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(_envoy: *mut c_void, _filter: *const c_void) {}
    )*};
}

never_called!(
    envoy_dynamic_module_on_http_filter_http_callout_done,
    envoy_dynamic_module_on_http_filter_http_stream_headers,
    envoy_dynamic_module_on_http_filter_http_stream_data,
    envoy_dynamic_module_on_http_filter_http_stream_trailers,
    envoy_dynamic_module_on_http_filter_http_stream_complete,
    envoy_dynamic_module_on_http_filter_http_stream_reset,
    envoy_dynamic_module_on_http_filter_scheduled,
);
