//! Fuzzes the toy consumer with generated AG-UI streams: libFuzzer's bytes
//! become a valid stream (or one with a single violation) through
//! `GeneratedStream`'s `Arbitrary` impl, with the verdict it must get.

#![no_main]

use agui_stream::generator::GeneratedStream;
use libfuzzer_sys::fuzz_target;

// The property, shared with `tests/generated.rs`.
#[path = "../../tests/property/mod.rs"]
mod property;

fuzz_target!(|case: GeneratedStream| {
    property::check(&case);
});
