#!/usr/bin/env bash
# The firmware under QEMU (mps2-an386, Cortex-M4): plain, small capacities,
# and defmt (decoded on the host by defmt-print). Run from the repo root.
set -euo pipefail

need_apt=()
command -v qemu-system-arm >/dev/null || need_apt+=(qemu-system-arm)
command -v arm-none-eabi-size >/dev/null || need_apt+=(binutils-arm-none-eabi)
if ((${#need_apt[@]})); then
    apt-get update -q && apt-get install -y -q "${need_apt[@]}"
fi
rustup target add thumbv7em-none-eabihf
if ! defmt-print --version 2>/dev/null | grep -q ' 1\.0\.0'; then
    cargo install defmt-print --version 1.0.0 --locked
fi

cd examples/cortex-m
cargo fmt --check
cargo clippy --release -- -D warnings
elf=target/thumbv7em-none-eabihf/release/agui-cortex-m
qemu=(timeout 60 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic
      -semihosting-config enable=on,target=native -icount shift=0 -kernel "$elf")
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

for variant in default small; do
    flags=()
    [ "$variant" = small ] && flags=(--features small)
    echo "-- $variant configuration"
    # The runner in .cargo/config.toml starts QEMU; the firmware's exit
    # status is cargo's.
    cargo run --release "${flags[@]}" | tee "$log/$variant.txt"
    grep -q '^all outcomes as expected$' "$log/$variant.txt"
    arm-none-eabi-size -A "$elf" | grep -E '^\.(text|rodata|data|bss) '
done

echo "-- defmt: every event logged with defmt, decoded by defmt-print"
cargo build --release --features defmt
"${qemu[@]}" >"$log/defmt.bin" 2>"$log/report.txt"
grep -q '^all outcomes as expected$' "$log/report.txt"
defmt-print -e "$elf" <"$log/defmt.bin" >"$log/defmt.txt"
head -5 "$log/defmt.txt"
for ev in RUN_STARTED TEXT_MESSAGE_CONTENT TOOL_CALL_START TOOL_CALL_ARGS STATE_SNAPSHOT RUN_FINISHED; do
    grep -q " $ev " "$log/defmt.txt" || { echo "defmt log names no $ev"; exit 1; }
done
echo "defmt log: $(wc -l <"$log/defmt.txt") lines, the expected events named"
