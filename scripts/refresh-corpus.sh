#!/usr/bin/env bash
# refresh-corpus.sh - copy the shared test corpus into tests/corpus/.
#
# usage: scripts/refresh-corpus.sh [SHARED_DIR]
#
# SHARED_DIR defaults to ../shared relative to the repository root. Copies
#   SHARED_DIR/corpus/conformance/{*.sse,*.expected,*.expected-0.0.59,MANIFEST.tsv}
#       -> tests/corpus/conformance/
#   SHARED_DIR/corpus/real/*.sse -> tests/corpus/real/
#   SHARED_DIR/oracle/run_diff.sh -> tests/corpus/run_diff.sh (used by .ci/run)
# The perf corpus (perf/mix-1mb.sse, 1 MB) is deliberately not copied.
# Idempotent: files are replaced, files that no longer exist upstream are
# removed from the copy. The copy is committed, so the tests never need
# SHARED_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${1:-$ROOT/../shared}"
if [ ! -d "$SHARED/corpus/conformance" ]; then
    echo "refresh-corpus: no corpus at $SHARED/corpus/conformance" >&2
    exit 1
fi
SHARED="$(cd "$SHARED" && pwd)"
DEST="$ROOT/tests/corpus"

# sync SRC_DIR DEST_DIR PATTERN...: make DEST_DIR hold exactly the files of
# SRC_DIR matching the patterns.
sync_dir() {
    local src="$1" dst="$2"
    shift 2
    mkdir -p "$dst"
    local copied=0 updated=0 removed=0 f base
    shopt -s nullglob
    local wanted=()
    for pat in "$@"; do
        for f in "$src"/$pat; do
            [ -f "$f" ] && wanted+=("$f")
        done
    done
    for f in "${wanted[@]}"; do
        base="$(basename "$f")"
        if [ ! -e "$dst/$base" ]; then
            copied=$((copied + 1))
        elif ! cmp -s "$f" "$dst/$base"; then
            updated=$((updated + 1))
        else
            continue
        fi
        cp -f "$f" "$dst/$base"
        chmod 644 "$dst/$base"
    done
    for f in "$dst"/*; do
        base="$(basename "$f")"
        local keep=0
        for pat in "$@"; do
            # shellcheck disable=SC2053
            if [[ "$base" == $pat ]] && [ -f "$src/$base" ]; then keep=1; break; fi
        done
        if [ "$keep" = 0 ]; then
            rm -f "$f"
            removed=$((removed + 1))
        fi
    done
    shopt -u nullglob
    echo "refresh-corpus: $dst: ${#wanted[@]} files from $src ($copied new, $updated updated, $removed removed)"
}

sync_dir "$SHARED/corpus/conformance" "$DEST/conformance" '*.sse' '*.expected' '*.expected-0.0.59' 'MANIFEST.tsv'
sync_dir "$SHARED/corpus/real" "$DEST/real" '*.sse'

# The comparison script (Python 3 only), for .ci/run on a machine without
# SHARED_DIR.
if ! cmp -s "$SHARED/oracle/run_diff.sh" "$DEST/run_diff.sh"; then
    cp -f "$SHARED/oracle/run_diff.sh" "$DEST/run_diff.sh"
    chmod 755 "$DEST/run_diff.sh"
    echo "refresh-corpus: copied $SHARED/oracle/run_diff.sh to $DEST/run_diff.sh"
else
    echo "refresh-corpus: $DEST/run_diff.sh is up to date"
fi

total="$(du -sb "$DEST" | cut -f1)"
echo "refresh-corpus: $DEST holds $(find "$DEST" -type f | wc -l) files, $total bytes"

# tests/corpus/extra holds cases written for this repository; their answers
# come from the same oracle. Regenerate them when the oracle is installed
# (cp -r SHARED/oracle /tmp/oracle && (cd /tmp/oracle && npm ci)).
ORACLE="${ORACLE:-/tmp/oracle/oracle.mjs}"
if [ -f "$ORACLE" ] && command -v node >/dev/null 2>&1; then
    (cd "$DEST/extra" && node "$ORACLE" --ref 1.0.0 --write .expected ./*.sse \
        && node "$ORACLE" --ref 0.0.59 --write .expected-0.0.59 ./*.sse)
    echo "extra: answers regenerated with $ORACLE"
else
    echo "extra: oracle not installed at $ORACLE; answers kept"
fi
