#!/usr/bin/env python3
"""The gateway's output is a stream the reference accepts.

For every corpus stream, in both dialects, runs `agui gateway` (default
flags but --deterministic-ids: ids minted for legacy THINKING events
follow the reference's sequence, so that its answers for the input and for
the output compare) and feeds its output to the live reference oracle.
Checks that
  * the oracle's result on the output is {"result":"ok"};
  * its events on the output begin with its events on the input (the
    reference's answer for the input, stored beside each case), and that a
    stream the reference accepts loses none: what follows is only the
    repair's RUN_ERROR.

usage: scripts/gateway_oracle.py AGUI ORACLE_DIR CORPUS_DIR... [-- GATEWAY_FLAGS...]

AGUI is the `agui` binary (`cargo build --release -p agui-cli`:
target/release/agui). Its status 1 (a violation found) is a verdict, not
a failure.

With flags (`--close-open`, `--on-violation drop`), only acceptance and
the events before the end are checked: closing events may follow them.
"""

import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

agui, oracle = sys.argv[1], Path(sys.argv[2]) / "oracle.mjs"
rest = sys.argv[3:]
flags = rest[rest.index("--") + 1:] if "--" in rest else []
dirs = [Path(d) for d in (rest[:rest.index("--")] if "--" in rest else rest)]
DIALECTS = [("v1", "1.0.0", ".expected"), ("v0", "0.0.59", ".expected-0.0.59")]


def reference(stream: Path, ref: str, stored: Path) -> list[str]:
    if stored.exists():
        return stored.read_text().splitlines()
    run = subprocess.run(["node", str(oracle), "--ref", ref, str(stream)],
                         capture_output=True, text=True, timeout=60)
    return run.stdout.splitlines()


def check(case):
    stream, dialect, ref, suffix = case
    want = reference(stream, ref, stream.with_suffix(suffix))
    with tempfile.NamedTemporaryFile(suffix=".sse") as out:
        gw = subprocess.run([agui, "gateway", "--deterministic-ids", "--dialect", dialect, "--chunk", "1460",
                             *flags, str(stream)], stdout=out, stderr=subprocess.PIPE, timeout=60)
        if gw.returncode not in (0, 1):
            return f"{stream.name} {dialect}: gateway failed: {gw.stderr.decode()[-300:]}"
        run = subprocess.run(["node", str(oracle), "--ref", ref, out.name],
                             capture_output=True, text=True, timeout=60)
    got = run.stdout.splitlines()
    if not got or json.loads(got[-1]) != {"result": "ok"}:
        return f"{stream.name} {dialect}: the reference rejects the output: {got[-1:] }"
    want_events, got_events = want[:-1], got[:-1]
    if got_events[:len(want_events)] != want_events:
        return f"{stream.name} {dialect}: events differ"
    extra = [json.loads(e)["type"] for e in got_events[len(want_events):]]
    if not flags and json.loads(want[-1]) == {"result": "ok"} and extra not in ([], ["RUN_ERROR"]):
        return f"{stream.name} {dialect}: more than the repair after the events: {extra}"
    return None


cases = [(s, d, r, x) for dir in dirs for s in sorted(dir.glob("*.sse")) for d, r, x in DIALECTS]
with ThreadPoolExecutor(max_workers=4) as pool:
    failures = [f for f in pool.map(check, cases) if f]
for f in failures[:20]:
    print(f)
print(f"gateway output accepted by the reference: {len(cases) - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
