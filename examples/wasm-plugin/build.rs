//! A 64 KiB stack instead of the linker's 1 MiB: the rewriter's deepest
//! push takes about 11 KiB (measured on a Cortex-M4, see docs/firmware.md).
fn main() {
    if std::env::var("TARGET").is_ok_and(|t| t.starts_with("wasm32")) {
        println!("cargo:rustc-cdylib-link-arg=-zstack-size=65536");
    }
}
