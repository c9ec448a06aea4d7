#!/usr/bin/env python3
"""Compare `agui input` with the reference's answers on the request corpus.

usage: scripts/request_diff.py [--corpus DIR] [--ref 1.0.0|0.0.59] [--show N] 'COMMAND'

Each body NAME.json of the corpus (default tests/corpus/requests) is given to
COMMAND (its path appended) and the output compared with NAME.expected
(1.0.0) or NAME.expected-0.0.59, as `run_diff.sh` compares event streams:
the parsed-input line must be the same bytes (both are canonical), and the
result line must match on result, index and stage, and on the message for
stage `json` (V8's words, which the checker reproduces). A body listed in
DEVIATIONS must get the answer listed there instead (README, "Deviations").
Prints the first differences and `N passed, M failed`; exits 1 on a failure.
"""
import concurrent.futures as cf
import json
import os
import shlex
import subprocess
import sys

# Bodies the checker answers otherwise, with the stage it gives.
DEVIATIONS = {
    # Nested deeper than the JSON depth limit (1,024 levels): a capacity
    # error, where JSON.parse (any depth) finds the syntax error.
    "json-mismatched-deep-nesting": "capacity",
    "json-unclosed-deep-nesting": "capacity",
}


def main(argv):
    corpus, ref, show, cmd = "tests/corpus/requests", "1.0.0", 5, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--corpus", "--ref", "--show") and i + 1 < len(argv):
            i += 1
            if a == "--corpus":
                corpus = argv[i]
            elif a == "--ref":
                ref = argv[i]
            else:
                show = int(argv[i])
        elif cmd is None and not a.startswith("--"):
            cmd = a
        else:
            sys.exit(f"request_diff.py: unexpected {a!r}\n{__doc__}")
        i += 1
    if cmd is None or ref not in ("1.0.0", "0.0.59"):
        sys.exit(__doc__)
    suffix = ".expected" if ref == "1.0.0" else ".expected-0.0.59"
    names = sorted(n[:-5] for n in os.listdir(corpus) if n.endswith(".json"))

    def run(name):
        path = os.path.join(corpus, name + ".json")
        with open(os.path.join(corpus, name + suffix), encoding="utf-8") as f:
            want = f.read().splitlines()
        p = subprocess.run(shlex.split(cmd) + [path], capture_output=True, timeout=60)
        got = p.stdout.decode("utf-8", "replace").splitlines()
        return name, compare(name, want, got)

    failures = []
    with cf.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for name, problem in pool.map(run, names):
            if problem:
                failures.append((name, problem))
    for name, problem in failures[:show]:
        print(f"FAIL {name}: {problem}")
    print(f"{len(names) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def compare(name, want, got):
    if not got:
        return "no output"
    try:
        w, g = json.loads(want[-1]), json.loads(got[-1])
    except ValueError as e:
        return f"result line: {e}"
    if name in DEVIATIONS:
        stage = DEVIATIONS[name]
        return None if g.get("stage") == stage else f"want the listed deviation (stage {stage}), got {got[-1]}"
    keys = ["result", "index", "stage"] + (["message"] if w.get("stage") == "json" else [])
    for k in keys:
        if w.get(k) != g.get(k):
            return f"{k}: want {w.get(k)!r}, got {g.get(k)!r}"
    if want[:-1] != got[:-1]:
        if len(want) != len(got):
            return f"{len(got) - 1} parsed lines, want {len(want) - 1}"
        a, b = want[0], got[0]
        at = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        return f"parsed input differs at {at}: want …{a[max(0, at - 60):at + 60]}… got …{b[max(0, at - 60):at + 60]}…"
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
