#!/usr/bin/env bash
# refresh-requests.sh - regenerate the request-body corpus and its answers.
#
# usage: scripts/refresh-requests.sh [--large [DIR]]
#
# 1. scripts/gen_requests.py writes tests/corpus/requests/*.json and
#    MANIFEST.tsv (deterministic; stale bodies and answers are removed);
# 2. the reference oracle's request mode writes every body's answers beside
#    it: NAME.expected (--ref 1.0.0) and NAME.expected-0.0.59 (--ref 0.0.59);
# 3. the oracle runs again on a copy of the bodies and every answer must be
#    byte-identical (the answers are stable);
# 4. gen_requests.py --check verifies each answer is what the body's name
#    says (valid-*, valid-v1-*, valid-v0-*, schema-*, json-*) and prints the
#    counts table of tests/corpus/requests/README.md.
#
# --large also writes the multi-MB variants (2 MB tool result, 4 MB image,
# 11 MiB tool result, 5,000 messages, errors after 2 MB values) into DIR
# (default target/requests-large, not committed) and answers them the same
# way, for CI to generate on the fly.
#
# The oracle: ORACLE=/path/to/oracle.mjs (default /tmp/oracle/oracle.mjs),
# an `npm ci` install of tests/corpus/oracle (or ../shared/oracle):
#   cp -r tests/corpus/oracle /tmp/oracle && (cd /tmp/oracle && npm ci)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/tests/corpus/requests"
ORACLE="${ORACLE:-/tmp/oracle/oracle.mjs}"
large=""
if [ "${1:-}" = "--large" ]; then
    large="${2:-$ROOT/target/requests-large}"
elif [ $# -gt 0 ]; then
    echo "usage: scripts/refresh-requests.sh [--large [DIR]]" >&2
    exit 2
fi

command -v node >/dev/null || { echo "refresh-requests: node is not installed" >&2; exit 1; }
if [ ! -f "$ORACLE" ] || [ ! -d "$(dirname "$ORACLE")/node_modules" ]; then
    echo "refresh-requests: no oracle install at $ORACLE; run" >&2
    echo "  cp -r tests/corpus/oracle /tmp/oracle && (cd /tmp/oracle && npm ci)" >&2
    exit 1
fi
grep -q -- '--input' "$ORACLE" || { echo "refresh-requests: $ORACLE has no request mode (--input); update it from tests/corpus/oracle" >&2; exit 1; }

if [ -n "$large" ]; then
    python3 "$ROOT/scripts/gen_requests.py" --out "$DEST" --large --large-out "$large"
else
    python3 "$ROOT/scripts/gen_requests.py" --out "$DEST"
fi

# answer DIR: both refs' answers beside every body in DIR.
answer() {
    (cd "$1" && node "$ORACLE" --ref 1.0.0 --input --write .expected ./*.json \
        && node "$ORACLE" --ref 0.0.59 --input --write .expected-0.0.59 ./*.json)
}

# stable DIR: answer a copy of DIR's bodies again and compare.
stable() {
    local tmp f n=0
    tmp="$(mktemp -d)"
    cp "$1"/*.json "$tmp"/
    answer "$tmp"
    for f in "$1"/*.expected "$1"/*.expected-0.0.59; do
        cmp -s "$f" "$tmp/$(basename "$f")" || { echo "refresh-requests: unstable answer $f" >&2; rm -rf "$tmp"; exit 1; }
        n=$((n + 1))
    done
    rm -rf "$tmp"
    echo "refresh-requests: $1: $n answers, the same on a second run"
}

for dir in "$DEST" ${large:+"$large"}; do
    answer "$dir"
    stable "$dir"
    python3 "$ROOT/scripts/gen_requests.py" --check "$dir"
    echo "refresh-requests: $dir holds $(find "$dir" -type f | wc -l) files, $(du -sb "$dir" | cut -f1) bytes"
done
