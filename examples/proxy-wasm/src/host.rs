//! The proxy-wasm host calls the filter makes, in one place.
//!
//! Why not the SDK's context methods (`get_http_response_header`,
//! `set_http_response_body`, …): they `unwrap` the host's status
//! (proxy-wasm SDK `src/traits.rs`), and a status other than `Ok` is not
//! rare — Envoy answers a body edit in the trailers callback with
//! `BadArgument` — so they would panic, and a panic in a filter takes its
//! VM down with every stream it holds. These wrappers return what the host
//! gave (`None`, `false`, nothing on any other status), read header values
//! as bytes (the SDK's `String` getters unwrap UTF-8 too) and never panic.

use proxy_wasm::hostcalls;
use proxy_wasm::types::{BufferType, MapType, MetricType};

use crate::frontend::HeaderEdit;

/// The request header `name`'s value (`None` if absent or unreadable).
pub fn request_header(name: &str) -> Option<Vec<u8>> {
    hostcalls::get_map_value_bytes(MapType::HttpRequestHeaders, name)
        .ok()
        .flatten()
}

/// Sets the request header `name` (before the request goes upstream).
pub fn set_request_header(name: &str, value: &[u8]) {
    let _ = hostcalls::set_map_value_bytes(MapType::HttpRequestHeaders, name, Some(value));
}

/// Removes the request header `name` (before the request goes upstream).
pub fn remove_request_header(name: &str) {
    let _ = hostcalls::remove_map_value(MapType::HttpRequestHeaders, name);
}

/// The request body chunk the host holds (`size` bytes).
pub fn request_body(size: usize) -> Option<Vec<u8>> {
    if size == 0 {
        return Some(Vec::new());
    }
    hostcalls::get_buffer(BufferType::HttpRequestBody, 0, size)
        .ok()
        .flatten()
}

/// Replaces the whole request body chunk of `size` bytes with `bytes`.
pub fn replace_request_body(size: usize, bytes: &[u8]) {
    let _ = hostcalls::set_buffer(BufferType::HttpRequestBody, 0, size, bytes);
}

/// Answers the request locally with `status`, a JSON `body`. (The SDK's
/// call panics on a status other than `Ok`, which Envoy does not give in a
/// request callback: the reply is queued.)
pub fn send_json_response(status: u16, body: &[u8]) {
    let _ = hostcalls::send_http_response(
        u32::from(status),
        vec![("content-type", "application/json")],
        Some(body),
    );
}

/// The response header `name`'s value (the first, if repeated).
pub fn response_header(name: &str) -> Option<Vec<u8>> {
    hostcalls::get_map_value_bytes(MapType::HttpResponseHeaders, name)
        .ok()
        .flatten()
}

/// Every value of the response header `name`, one per line it has.
pub fn response_header_values(name: &str) -> Vec<Vec<u8>> {
    hostcalls::get_map_bytes(MapType::HttpResponseHeaders)
        .unwrap_or_default()
        .into_iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
        .collect()
}

/// Applies one edit to the response headers (in
/// `on_http_response_headers`, the last place they can change).
pub fn edit_response_header(edit: HeaderEdit) {
    let map = MapType::HttpResponseHeaders;
    match edit {
        HeaderEdit::Remove(name) => {
            let _ = hostcalls::remove_map_value(map, name);
        }
        // Added where it is absent (nearly always), not set: a set looks
        // the name up, and a lookup of a header Envoy keeps no slot for
        // makes it build a map of the stream's headers, about 1 KB for as
        // long as the stream is open. Going through every header does not.
        HeaderEdit::Set(name, value) | HeaderEdit::SetIfAbsent(name, value)
            if response_header_values(name).is_empty() =>
        {
            let _ = hostcalls::add_map_value_bytes(map, name, value.as_bytes());
        }
        HeaderEdit::Set(name, value) => {
            let _ = hostcalls::set_map_value_bytes(map, name, Some(value.as_bytes()));
        }
        HeaderEdit::SetIfAbsent(..) => {}
    }
}

/// The body chunk the host holds (`size` bytes; `None` if unreadable).
pub fn response_body(size: usize) -> Option<Vec<u8>> {
    if size == 0 {
        return Some(Vec::new());
    }
    hostcalls::get_buffer(BufferType::HttpResponseBody, 0, size)
        .ok()
        .flatten()
}

/// Replaces the whole body chunk of `size` bytes with `bytes` (start 0,
/// the chunk's size: "replace all", one of the three buffer edits Envoy
/// accepts).
pub fn replace_response_body(size: usize, bytes: &[u8]) {
    let _ = hostcalls::set_buffer(BufferType::HttpResponseBody, 0, size, bytes);
}

/// The plugin configuration (empty if there is none).
pub fn plugin_configuration() -> Vec<u8> {
    hostcalls::get_buffer(BufferType::PluginConfiguration, 0, usize::MAX)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Defines the metric `agui_stream.NAME` (`None` if the host will not).
pub fn define_metric(kind: MetricType, name: &str) -> Option<u32> {
    hostcalls::define_metric(kind, &format!("agui_stream.{name}")).ok()
}

/// Adds `n` to a metric (an unknown id is an error status: ignored).
pub fn increment_metric(id: Option<u32>, n: u64) {
    if let (Some(id), Ok(n)) = (id, i64::try_from(n))
        && n > 0
    {
        let _ = hostcalls::increment_metric(id, n);
    }
}
