#!/usr/bin/env bash
# Coverage in the same time: the byte-level fuzz targets against the
# generator-driven ones — `pipeline` vs `gen_pipeline`, `rewrite` vs
# `gen_rewrite` — each for SECONDS, with the same libFuzzer flags, on
# stable with -s none (as .ci/run), from EMPTY corpora (fresh temp dirs,
# not fuzz/corpus), and the byte-level ones also from the seeded corpus
# (fuzz/seed.sh, written fresh into a temp dir: seeds only, no earlier
# finds). Prints one table: libFuzzer's `cov:` and `ft:` at the start
# (INITED) and at the end (the last `#N ... cov: X ft: Y` line), the
# executions and execs/s (-print_final_stats), the corpus size, and the
# library coverage of each final corpus replayed through the BYTE-LEVEL
# binary (see below).
#
# Usage: scripts/fuzz_coverage.sh [SECONDS]        (default 300 per run)
#   JOBS=2 (default): two runs at a time, on a 2-core machine; every run
#     shares the machine with exactly one other for its whole time
#     (rounds: pipeline ‖ gen_pipeline, rewrite ‖ gen_rewrite, then
#     pipeline-seeded ‖ rewrite-seeded), so each gets the same share.
#   JOBS=1: one at a time (twice as long).
#   MAX_LEN=8192 (default): -max_len of every run (.ci/run gives 8192 to
#     pipeline and rewrite and 4096 to the gen targets; one value here, so
#     that the flags are the same).
#   KEEP=1: keep the work directory (logs, corpora) and print its path.
#
# Why the replay column: libFuzzer's `cov:` counts every instrumented edge
# of the binary, and a gen_* binary also holds the generator (about 3,300
# lines of src/generator) and its own harness: its edges count too. So each
# final corpus is also run once (-runs=0) through the byte-level binary of
# its pair: a gen corpus is first turned into streams (AGUI_FUZZ_DUMP=dir),
# each behind `pipeline`'s header `01 02 07 fd` (deterministic minting,
# pushes of 7 and 253 bytes; seed.sh's), cut at 64 KiB for `pipeline` and
# 16 KiB for `rewrite` (the targets skip longer streams). That column is
# the library (and shared harness) reached, by the same binary; the last
# two rows replay the seeded corpus and the gen corpus together (what the
# generator adds to the seeds).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-300}
jobs=${JOBS:-2}
max_len=${MAX_LEN:-8192}
work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then
  echo "fuzz_coverage: work directory $work"
else
  trap 'rm -rf "$work"' EXIT
fi

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2 --locked
for t in pipeline gen_pipeline rewrite gen_rewrite; do
  cargo fuzz build -s none "$t"
done
triple=$(rustc -vV | sed -n 's/^host: //p')
bin=fuzz/target/$triple/release
AGUI_SEED_OUT="$work/seeds" fuzz/seed.sh > /dev/null

flags=(-max_total_time="$secs" -max_len="$max_len" -timeout=10 -dict=fuzz/agui.dict
  -print_final_stats=1)

# run NAME TARGET [SEED_DIR]: fuzzes into the fresh corpus $work/NAME.
run() {
  local name=$1 t=$2
  shift 2
  mkdir -p "$work/$name" "$work/$name.artifacts"
  if "$bin/$t" "${flags[@]}" -artifact_prefix="$work/$name.artifacts/" \
    "$work/$name" "$@" > "$work/$name.log" 2>&1; then
    echo ok > "$work/$name.status"
  else
    echo "stopped ($?)" > "$work/$name.status"
  fi
  echo "fuzz_coverage: $name done ($(cat "$work/$name.status"))"
}

# pair A B: two runs (each "NAME TARGET [SEED_DIR]") at once, or in turn.
pair() {
  if [ "$jobs" = 1 ]; then
    run $1
    run $2
  else
    run $1 &
    run $2 &
    wait
  fi
}

rounds=$(( jobs == 1 ? 6 : 3 ))
echo "fuzz_coverage: $secs s per run, $jobs at a time, -max_len=$max_len: about $(( (secs * rounds + 59) / 60 )) min"
pair "pipeline pipeline" "gen_pipeline gen_pipeline"
pair "rewrite rewrite" "gen_rewrite gen_rewrite"
pair "pipeline-seeded pipeline $work/seeds/pipeline" "rewrite-seeded rewrite $work/seeds/rewrite"

# The library coverage of a final corpus, through the byte-level binary.
replay() {  # BYTE_TARGET CORPUS...
  local t=$1
  shift
  "$bin/$t" -runs=0 -max_len=1048576 "$@" 2>&1 | sed -n 's/.*INITED cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p' | tail -n 1
}
for name in gen_pipeline gen_rewrite; do
  mkdir -p "$work/$name.streams" "$work/$name.replay"
  AGUI_FUZZ_DUMP="$work/$name.streams" "$bin/$name" -runs=0 -max_len=1048576 "$work/$name" > /dev/null 2>&1
  cut=$([ "$name" = gen_pipeline ] && echo 65536 || echo 16384)
  python3 - "$work/$name.streams" "$work/$name.replay" "$cut" <<'PY'
import hashlib, os, sys
src, dst, cut = sys.argv[1], sys.argv[2], int(sys.argv[3])
for f in os.listdir(src):
    data = bytes([0x01, 0x02, 7, 253]) + open(os.path.join(src, f), "rb").read()[:cut]
    open(os.path.join(dst, hashlib.sha1(data).hexdigest()), "wb").write(data)
PY
done

# The last `#N ... cov: X ft: Y` line, and the stats.
row() {  # NAME BYTE_TARGET REPLAY_CORPUS...
  local name=$1 log=$work/$1.log
  local inited last execs rate corp lib
  inited=$(sed -n 's/.*INITED cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p' "$log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$log" | grep -E 'cov: [0-9]+ ft: [0-9]+' | tail -n 1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  corp=$(printf '%s\n' "$last" | sed -n 's/.*corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p')
  shift
  lib=$(replay "$@")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" \
    "${inited%% *}" "${inited##* }" \
    "$(printf '%s\n' "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')" \
    "$(printf '%s\n' "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')" \
    "${execs:-?}" "${rate:-?}" "${corp:-?}" "${lib:-?}" "$(cat "$work/$name.status")"
}

echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, $secs s per run, $jobs at a time, -max_len=$max_len, -s none"
echo
echo "| run | start cov | start ft | final cov | final ft | execs | execs/s | corpus (units/size) | replayed through the byte-level binary: cov ft | status |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
row pipeline pipeline "$work/pipeline"
row pipeline-seeded pipeline "$work/pipeline-seeded" "$work/seeds/pipeline"
row gen_pipeline pipeline "$work/gen_pipeline.replay"
row rewrite rewrite "$work/rewrite"
row rewrite-seeded rewrite "$work/rewrite-seeded" "$work/seeds/rewrite"
row gen_rewrite rewrite "$work/gen_rewrite.replay"
# What the generator adds to the seeded byte-level corpus (replay only).
for t in pipeline rewrite; do
  printf '| %s-seeded + gen_%s | | | | | | | | %s | |\n' "$t" "$t" \
    "$(replay "$t" "$work/$t-seeded" "$work/seeds/$t" "$work/gen_$t.replay")"
done
