#!/usr/bin/env python3
"""Runs cut inside a large event, as the real client sees them through a
gateway (Python 3 stdlib, and Node with @ag-ui/client 1.0.0).

    cut_runs.py write DIR
    cut_runs.py check URL_PREFIX ORACLE_DIR DIR [split]
    cut_runs.py proxy HTTP_PROXY ORACLE_DIR [FLAG...]

`write` writes the runs to DIR: each a whole run whose one large event —
a 300 KB TOOL_CALL_RESULT, a 300 KB TEXT_MESSAGE_CONTENT, a RUN_STARTED
with a 300 KB input, a 5 MB TOOL_CALL_ARGS — is larger than the gateway's
64 KiB buffers.

`check` fetches each run cut at several points inside its large event
(URL_PREFIX/NAME?at=N&mode=close: scripts/sse_upstream.py's /cut/KEY
route, close-delimited, the upstream dying mid-event) through the gateway
from a fast upstream and a slow one, with the real `HttpAgent`
(scripts/agent_client.mjs, run from ORACLE_DIR,
whose node_modules has @ag-ui/client), and checks what the client got:
every event before the large one, then the gateway's RUN_ERROR with code
AGUI_STREAM_TRUNCATED — and nothing thrown but the run's error, never a
parse error. Prints one line per case and `N passed, M failed`; exits 1 on
any failure. Each client run is bounded (60 s). With `split` (a gateway
whose hold limit is under the large events' size), only the runs whose
large event is a delta are checked, as `proxy` below says.

`proxy` writes the runs to a temporary directory and checks them through
the gateway HTTP_PROXY (examples/http_proxy, at its defaults and FLAGs) in
front of scripts/sse_upstream.py, both started on 127.0.0.1 and stopped by
pid. With `--hold-bytes N` under the large events' size, only the runs
whose large event is a delta are checked, and their delta is split: the
client may get pieces of it (CONTENT or ARGS events) before the RUN_ERROR,
and what its message holds must be the delta's start.
"""

import json
import os
import shutil
import subprocess
import sys


def event(**fields):
    return "data: " + json.dumps(fields, separators=(",", ":")) + "\n\n"


def runs():
    """name -> (the events before the large one, the large one, the rest)."""
    start = event(type="RUN_STARTED", threadId="t", runId="r")
    finished = event(type="RUN_FINISHED", threadId="t", runId="r")
    call = [
        event(type="TOOL_CALL_START", toolCallId="c", toolCallName="search"),
        event(type="TOOL_CALL_ARGS", toolCallId="c", delta='{"q":"x"}'),
        event(type="TOOL_CALL_END", toolCallId="c"),
    ]
    big = "ok é \\ \" \u2028 😀 " * 20_000
    inp = {
        "threadId": "t", "runId": "r", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": "u", "role": "user", "content": big}],
    }
    return {
        "tool-result": (
            [start, *call],
            event(type="TOOL_CALL_RESULT", messageId="m", toolCallId="c", content=big),
            [finished],
        ),
        "text": (
            [start, event(type="TEXT_MESSAGE_START", messageId="m", role="assistant")],
            event(type="TEXT_MESSAGE_CONTENT", messageId="m", delta=big),
            [event(type="TEXT_MESSAGE_END", messageId="m"), finished],
        ),
        "run-started": (
            [],
            event(type="RUN_STARTED", threadId="t", runId="r", input=inp),
            [finished],
        ),
        "tool-args-5mb": (
            [start, event(type="TOOL_CALL_START", toolCallId="c", toolCallName="write")],
            event(type="TOOL_CALL_ARGS", toolCallId="c",
                  delta=json.dumps({"text": "y" * 5_000_000})),
            [event(type="TOOL_CALL_END", toolCallId="c"), finished],
        ),
    }


def write(d):
    os.makedirs(d, exist_ok=True)
    for name, (before, large, after) in runs().items():
        with open(os.path.join(d, name + ".sse"), "wb") as f:
            f.write("".join(before + [large] + after).encode())


def types(blocks):
    return [json.loads(b[len("data: "):])["type"] for b in blocks]


# The runs whose large event is a delta, and its decoded text.
DELTAS = ("text", "tool-args-5mb")


def check(prefix, oracle_dir, d, split=False):
    client = os.path.join(oracle_dir, "agent_client.mjs")
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent_client.mjs"), client)
    passed = failed = 0
    pieces_seen = 0
    for name, (before, large, _) in runs().items():
        if split and name not in DELTAS:
            continue
        head = len("".join(before).encode())
        size = len(large.encode())
        cuts = (head + 20, head + 70_000, head + size // 2, head + size - 3)
        for k, at in enumerate(cuts):
            # A fast peer (16 KiB writes) and a slow one (up to 1,500
            # bytes, a millisecond's pause before about half of them).
            pace = "split=16384&delay=0" if k % 2 == 0 else "split=1500&delay=1"
            url = f"{prefix}/{name}.sse?at={at}&mode=close&{pace}"
            try:
                out = subprocess.run(["node", client, url], cwd=oracle_dir, capture_output=True,
                                     timeout=60, text=True)
                got = json.loads(out.stdout.strip().split("\n")[-1])
            except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError) as e:
                got = {"failure": repr(e)}
            want = types(before) + ["RUN_ERROR"]
            events = got.get("events") or []
            if split:
                # Pieces of the delta, whole events, may come before the
                # RUN_ERROR; the client's text is then the delta's start.
                piece = json.loads(large[len("data: "):])["type"]
                n = len(events) - len(want)
                events = events[:len(before)] + events[len(before) + max(n, 0):]
                delta = json.loads(large[len("data: "):])["delta"]
                texts = got.get("texts") or []
                ok_pieces = (
                    n >= 0
                    and (got.get("events") or [])[len(before):len(before) + n] == [piece] * n
                    and all(delta.startswith(t) for t in texts)
                    and (n == 0 or any(len(t) > 0 and delta.startswith(t) for t in texts))
                )
                pieces_seen += max(n, 0)
            else:
                ok_pieces = True
            run_error = got.get("runError") or {}
            thrown = got.get("thrown") or ""
            ok = (
                ok_pieces
                and events == want
                and run_error.get("code") == "AGUI_STREAM_TRUNCATED"
                and "SyntaxError" not in thrown
                and "JSON" not in thrown
            )
            line = f"{name} cut at {at}: {'ok' if ok else 'FAILED'}"
            if not ok:
                line += f" (got {json.dumps(got)[:400]}, want events {want})"
            print(line, flush=True)
            passed += ok
            failed += not ok
    if split:
        print(f"{pieces_seen} pieces of split deltas reached the client")
        if pieces_seen == 0:
            failed += 1
    print(f"{passed} passed, {failed} failed")
    return failed == 0


def start(cmd):
    """A process that prints `listening on ADDR` first, and its port (its
    log on stderr is not shown)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    if not line.startswith("listening on "):
        p.kill()
        p.wait(timeout=10)
        raise SystemExit(f"{cmd[0]} did not start: {line!r}")
    return p, int(line.strip().rsplit(":", 1)[-1].rsplit(" ", 1)[-1])


def proxy(exe, oracle_dir, flags):
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as d:
        write(d)
        procs = []
        try:
            upstream, up_port = start([sys.executable, os.path.join(here, "sse_upstream.py"),
                                       "--port", "0", f"runs={d}"])
            procs.append(upstream)
            gateway, port = start([exe, "--listen", "127.0.0.1:0", "--upstream",
                                   f"http://127.0.0.1:{up_port}", *flags])
            procs.append(gateway)
            hold = flags[flags.index("--hold-bytes") + 1] if "--hold-bytes" in flags else None
            split = hold is not None and 0 < int(hold) < 300_000
            return check(f"http://127.0.0.1:{port}/cut/runs", oracle_dir, d, split)
        finally:
            for p in procs:
                p.kill()
                p.wait(timeout=10)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(sys.argv[2])
        return 0
    if len(sys.argv) in (5, 6) and sys.argv[1] == "check" and sys.argv[5:] in ([], ["split"]):
        return 0 if check(*sys.argv[2:5], split=len(sys.argv) == 6) else 1
    if len(sys.argv) >= 4 and sys.argv[1] == "proxy":
        return 0 if proxy(sys.argv[2], sys.argv[3], sys.argv[4:]) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
