#!/usr/bin/env python3
"""The native rewriter's throughput against its buffer size, owned and lent,
timed in interleaved rounds: the curve to choose the front ends' default
`buffer` by.

    cargo build --release --example rewrite_rounds
    python3 scripts/buffer-curve.py [--native PATH] [--sizes 512,1024,...]
        [--rounds 11] [--push 16384] [--min-ms 30] [--nested NAME,...|all]
        [--nested-scale 100000] [STREAM.sse ...]

Python 3 stdlib. A row is one way of rewriting a stream: `SIZE` bytes of
frame buffer and of raw buffer each, owned by the rewriter (`own`) or lent
per push from the pool and taken back after it (`lend`, as the Envoy
filters and http_proxy do). Per stream, one timing child
(examples/rewrite_rounds.rs: `--stream S --push P --buffer SIZE [--lend]`)
is started per row; each checks at start-up that its output is the one of
64 KiB owned buffers (a row whose child fails is reported and left out,
and the exit status is then 1). Each row is asked once untimed (a warm-up;
the lent rows' pairs are allocated then), then the rows are timed in
rounds: every round asks every row once, in an order rotated each round
(rows timed one after another drift by 20-50% on a busy machine), and a
row's ratio is the median of its per-round ratios of throughput to the
64 KiB owned row's (the baseline, always a row) in the same round. A
sample is `native` asked REPS times in a row and summed, REPS chosen per
stream so a sample of the baseline takes at least `--min-ms` (the nested
shapes are 100-700 KB, a fraction of a millisecond each).

The streams, unless given: the benches' target/bench-streams/text-5mb.sse,
mix-10mb.sse and mix-1mb.sse (scripts/gen_stream.py, generated if missing,
as .ci/run does), and a few of the nested-value shapes of
`scripts/gen_nested.py DIR 100000` (100 KB values inside messages, schemas,
states, patches, results; generated into target/bench-streams/nested-100000
if missing; `--nested-scale N` for N-byte values, in nested-N): `--nested all` takes every valid one, `--nested A,B` those
(names without `x-nested-` and `.sse`), `--nested none` none. The invalid
ones fail the children's check at every size but 64 KiB: a bad frame
larger than the buffer goes out as it spills and is cut at its verdict, so
how much of it went out depends on the size.

Output per stream: each row's MB/s (10^6 bytes a second) median and range
over the rounds, and its ratio to the baseline (median and range); then one
machine-readable line per row, last: `curve STREAM SIZE LEND MBPS RATIO`
(STREAM: the file name without `.sse`; LEND: 1 lent, 0 owned; MBPS and
RATIO: the medians). A measurement, not a test: exit status 0 whatever the
numbers, 1 if something fails to run or a row's output differs.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = 65536
SIZES = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
# Valid shapes with the large value in different places (gen_nested.py).
NESTED = [
    "history-20",
    "snapshot-tool-result",
    "snapshot-user-image-data",
    "input-tool-schema",
    "tool-result-text-parts",
    "state-delta-large-value",
    "run-finished-interrupt",
    "order-large-first-events",
]


def die(message):
    print(f"buffer-curve: {message}", file=sys.stderr)
    sys.exit(1)


class RowFailed(Exception):
    pass


class Child:
    """One timing child: a row of one stream."""

    def __init__(self, native, stream, push, size, lend):
        self.size, self.lend = size, lend
        argv = [native, "--stream", stream, "--push", str(push), "--buffer", str(size)]
        if lend:
            argv.append("--lend")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    @property
    def label(self):
        return f"{self.size:>6} {'lend' if self.lend else 'own'}"

    def line(self):
        answer = self.proc.stdout.readline()
        if not answer:
            self.proc.stdin.close()
            err = self.proc.stderr.read().strip()
            code = self.proc.wait()
            raise RowFailed(err or f"the child exited (status {code})")
        return answer.strip()

    def ready(self):
        answer = self.line()
        if not answer.startswith("ready "):
            raise RowFailed(f"the child said {answer!r}")
        return int(answer.split()[1])

    def ns(self, reps):
        """Nanoseconds of `reps` rewrites of the whole stream."""
        total = 0
        for _ in range(reps):
            self.proc.stdin.write("native\n")
            self.proc.stdin.flush()
            answer = self.line()
            if not answer.isdigit():
                raise RowFailed(f"native: the child answered {answer!r}")
            total += int(answer)
        return total

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def bench_streams():
    """The benches' streams, generated if missing."""
    out = os.path.join(ROOT, "target", "bench-streams")
    os.makedirs(out, exist_ok=True)
    paths = []
    for name, args in [
        ("text-5mb", ["--profile", "text", "--size", "5MB", "--seed", "5"]),
        ("mix-10mb", ["--size", "10MB", "--seed", "10"]),
        ("mix-1mb", ["--size", "1MB", "--seed", "1"]),
    ]:
        path = os.path.join(out, name + ".sse")
        if not os.path.exists(path):
            subprocess.run(
                [sys.executable, os.path.join(ROOT, "scripts", "gen_stream.py"), *args, "--out", path],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        paths.append(path)
    return paths


def nested_streams(which, scale):
    """The nested shapes named by `--nested`, generated if missing."""
    if which == "none":
        return []
    out = os.path.join(ROOT, "target", "bench-streams", f"nested-{scale}")
    manifest = os.path.join(out, "MANIFEST.tsv")
    if not os.path.exists(manifest):
        os.makedirs(out, exist_ok=True)
        subprocess.run(
            [sys.executable, os.path.join(ROOT, "scripts", "gen_nested.py"), out, str(scale)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    if which == "all":
        with open(manifest, encoding="utf-8") as f:
            rows = [line.split("\t") for line in f.read().splitlines()[1:]]
        names = [r[0][len("x-nested-"):] for r in rows if r[0].startswith("x-nested-") and r[3] == "valid"]
    else:
        names = NESTED if which == "default" else [n for n in which.split(",") if n]
    paths = [os.path.join(out, f"x-nested-{n}.sse") for n in names]
    for p in paths:
        if not os.path.exists(p):
            die(f"--nested: no {p}")
    return paths


def summary(xs):
    return statistics.median(xs), min(xs), max(xs)


def measure(args, path):
    """Times one stream's rows; prints its table. Returns (curve lines,
    failures)."""
    name = os.path.basename(path)
    name = name[: -len(".sse")] if name.endswith(".sse") else name
    rows = [(size, lend) for size in args.sizes for lend in (False, True)]
    if (BASELINE, False) not in rows:
        rows.append((BASELINE, False))
    children = [Child(args.native, path, args.push, size, lend) for size, lend in rows]
    failures = []
    try:
        # The start-up checks run side by side; a row whose child fails is
        # left out.
        live = []
        length = None
        for c in children:
            try:
                length = c.ready()
                live.append(c)
            except RowFailed as e:
                failures.append(f"{name}: {c.label.strip()}: {e}")
        base = next((c for c in live if (c.size, c.lend) == (BASELINE, False)), None)
        if base is None:
            failures.append(f"{name}: no baseline row ({BASELINE} own): nothing timed")
            return [], failures

        def run(c, reps):
            try:
                return c.ns(reps)
            except RowFailed as e:
                failures.append(f"{name}: {c.label.strip()}: {e}")
                live.remove(c)
                times.pop(c, None)
                if c is base:
                    raise
                return None

        # Warm-up (untimed), then REPS from the baseline's second run.
        times = {}
        for c in list(live):
            run(c, 1)
        reps = max(1, math.ceil(args.min_ms * 1e6 / max(1, run(base, 1))))
        times = {c: [] for c in live}
        for r in range(args.rounds):
            order = list(live)
            for k in range(len(order)):
                c = order[(k + r) % len(order)]
                if c not in times:
                    continue
                ns = run(c, reps)
                if ns is not None:
                    times[c].append(ns)
        # Rows that failed midway are gone from `times`; the others have a
        # sample per round.
        mbps = {c: [reps * length / 1e6 / (ns / 1e9) for ns in ts] for c, ts in times.items()}
        print(
            f"\n{name}: {length} bytes, {args.push}-byte pushes, {args.rounds} rounds, "
            f"{reps} rewrite{'s' if reps > 1 else ''} a sample"
        )
        print(f"  {'buffer':>6} {'':4}  {'MB/s median (min-max)':<28}  / {BASELINE} own median (min-max)")
        lines = []
        for c in children:
            if c not in mbps:
                print(f"  {c.label:<11}  failed")
                continue
            speed = summary(mbps[c])
            ratio = summary([a / b for a, b in zip(mbps[c], mbps[base])])
            speed_text = f"{speed[0]:8.1f} ({speed[1]:.1f}-{speed[2]:.1f})"
            print(
                f"  {c.label:<11}  {speed_text:<28}  {ratio[0]:.3f} ({ratio[1]:.3f}-{ratio[2]:.3f})"
            )
            lines.append(f"curve {name} {c.size} {int(c.lend)} {speed[0]:.1f} {ratio[0]:.4f}")
        return lines, failures
    except RowFailed:
        return [], failures
    finally:
        for c in children:
            c.close()


def main():
    p = argparse.ArgumentParser(
        description="The native rewriter's throughput against its buffer size (see the file's docstring)."
    )
    p.add_argument("streams", nargs="*", metavar="STREAM.sse",
                   help="streams to time (default: the benches' and a few nested shapes)")
    p.add_argument("--native", help="the timing child (default: target/release/examples/rewrite_rounds)")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="buffer sizes, comma-separated (the 65536 owned row is always timed)")
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--push", type=int, default=16384, help="bytes a push (Envoy's usual chunk)")
    p.add_argument("--min-ms", type=float, default=30.0,
                   help="the least milliseconds of a baseline sample (it repeats the rewrite)")
    p.add_argument("--nested", default="default",
                   help="nested shapes with the default streams: all, none, or NAME,... (default: a few)")
    p.add_argument("--nested-scale", type=int, default=100000,
                   help="bytes of the nested shapes' large values (gen_nested.py's SCALE, at least 1200)")
    args = p.parse_args()
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        die(f"--sizes: comma-separated byte counts, not {args.sizes}")
    if not args.sizes or args.rounds < 1 or args.push < 1 or args.min_ms < 0:
        die("--sizes, --rounds and --push must be positive")
    if args.nested_scale < 1200:
        die("--nested-scale: at least 1200 bytes (gen_nested.py's least SCALE)")
    if args.native is None:
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        args.native = os.path.join(target, "release", "examples", "rewrite_rounds")
    if not os.access(args.native, os.X_OK):
        die(f"no {args.native}: cargo build --release --example rewrite_rounds")

    started = time.monotonic()
    try:
        streams = args.streams or bench_streams() + nested_streams(args.nested, args.nested_scale)
    except subprocess.CalledProcessError as e:
        die(f"generating the streams: {e}")
    curve, failures = [], []
    for path in streams:
        if not os.path.exists(path):
            failures.append(f"no {path}")
            continue
        lines, failed = measure(args, path)
        curve += lines
        failures += failed
        sys.stdout.flush()
    print(f"\n({time.monotonic() - started:.1f} s)")
    for f in failures:
        print(f"buffer-curve: {f}", file=sys.stderr)
    for line in curve:
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
