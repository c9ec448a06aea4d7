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
With `--config FILE` (guard rules: the text of messages masked), the
events are not compared; instead, in the reference's events for the
output, each message's text (its deltas joined, as a client shows it)
holds nothing a masking rule of FILE matches: its literals, and the
expression of `email`.
With `--hold-bytes`, a delta the gateway split into several events is
compared joined again: consecutive TEXT_MESSAGE_CONTENT, TOOL_CALL_ARGS
or REASONING_MESSAGE_CONTENT events of one id, the first of them nothing
but type, id and delta, are one event to the client's message (their
deltas joined, the last one's other members), on both sides.
"""

import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

agui, oracle = sys.argv[1], Path(sys.argv[2]) / "oracle.mjs"
rest = sys.argv[3:]
flags = rest[rest.index("--") + 1:] if "--" in rest else []
dirs = [Path(d) for d in (rest[:rest.index("--")] if "--" in rest else rest)]
# What the masking rules of `--config` match: (literal, ignore_case) and
# whether `email` masks.
GUARD = None
if "--config" in flags:
    rules = json.loads(Path(flags[flags.index("--config") + 1]).read_text())["guard"]["rules"]
    GUARD = ([(r["literal"], r.get("ignore_case", False)) for r in rules
              if r["action"] == "mask" and "literal" in r],
             any(r.get("builtin") == "email" and r["action"] == "mask" for r in rules))
EMAIL = re.compile(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}")
TEXTS = {"TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_CONTENT"}


def unmasked(events):
    """What a masking rule still finds in the messages' text, if anything."""
    texts = {}
    for line in events:
        if not any(f'"type":"{t}"' in line for t in TEXTS):
            continue
        event = json.loads(line)
        if event.get("type") in TEXTS:
            key = (event["type"], event.get("messageId"))
            texts[key] = texts.get(key, "") + event["delta"]
    literals, email = GUARD
    for text in texts.values():
        for literal, fold in literals:
            if (literal.lower() in text.lower()) if fold else (literal in text):
                return literal
        if email and EMAIL.search(text):
            return EMAIL.search(text).group(0)
    return None


DIALECTS = [("v1", "1.0.0", ".expected"), ("v0", "0.0.59", ".expected-0.0.59")]


def reference(stream: Path, ref: str, stored: Path) -> list[str]:
    if stored.exists():
        return lines(stored.read_text())
    run = subprocess.run(["node", str(oracle), "--ref", ref, str(stream)],
                         capture_output=True, text=True, timeout=60)
    return lines(run.stdout)


def lines(text):
    """Text's lines, split at LF only (an event may hold U+2028, which
    `str.splitlines` splits at too)."""
    return text.rstrip("\n").split("\n") if text else []


DELTAS = {"TEXT_MESSAGE_CONTENT": "messageId", "TOOL_CALL_ARGS": "toolCallId",
          "REASONING_MESSAGE_CONTENT": "messageId"}


def joined(lines):
    """The reference's event lines with split deltas joined again."""
    out = []
    for line in lines:
        # (Only delta events are parsed: others may nest deeper than
        # Python's json recurses.)
        if not any(f'"type":"{t}"' in line[-60:] for t in DELTAS):
            out.append(line)
            continue
        event = json.loads(line)
        key = DELTAS.get(event.get("type")) if isinstance(event, dict) else None
        prev = json.loads(out[-1]) if out and key else None
        if (prev is not None and prev.get("type") == event["type"] and prev.get(key) == event.get(key)
                and set(prev) == {"type", key, "delta"}):
            event["delta"] = prev["delta"] + event["delta"]
            out[-1] = json.dumps(event, sort_keys=True)
        else:
            out.append(json.dumps(event, sort_keys=True) if key else line)
    return out


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
    got = lines(run.stdout)
    if not got or json.loads(got[-1]) != {"result": "ok"}:
        return f"{stream.name} {dialect}: the reference rejects the output: {got[-1:] }"
    if GUARD is not None:
        found = unmasked(got[:-1])
        return f"{stream.name} {dialect}: a client reads {found!r}" if found else None
    want_events, got_events = want[:-1], got[:-1]
    if "--hold-bytes" in flags:
        want_events, got_events = joined(want_events), joined(got_events)
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
