#!/usr/bin/env python3
"""Generated streams against the live reference, per dialect.

    gen_oracle.py AGUI ORACLE_DIR [--count N] [--seed N] [--keep DIR]

For each dialect, `AGUI gen --dialect D --violations --framing lf --count N
--seed S` writes N streams with their expected verdicts (a fresh seed each run unless
--seed is given; it is printed), then each stream goes to the live oracle
(`node ORACLE_DIR/oracle.mjs --ref 1.0.0|0.0.59`) and to `AGUI check
--exit-zero --dialect D`. Required: the oracle's output equals `agui
check`'s line for line (event lines exactly; the result line on result,
index and stage, and on the message for stages `verify` and `chunks`), and
its result line equals the generator's expected verdict the same way. A
disagreement keeps the streams (in --keep DIR, or a temporary directory
that is printed) and fails. Prints per dialect: streams, valid, invalid,
event types after the pipeline, the time, and `agui gen`'s own summary
(event types written, and each verdict the generator expected, counted).
"""
import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def result_keys(line):
    v = json.loads(line)
    keys = ["result", "index", "stage"]
    if v.get("stage") in ("verify", "chunks"):
        keys.append("message")
    return {k: v.get(k) for k in keys}


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    agui, oracle = argv[0], os.path.join(argv[1], "oracle.mjs")
    count, seed, keep = 1000, None, None
    rest = argv[2:]
    while rest:
        a = rest.pop(0)
        if a == "--count":
            count = int(rest.pop(0))
        elif a == "--seed":
            seed = int(rest.pop(0))
        elif a == "--keep":
            keep = rest.pop(0)
        else:
            sys.exit(__doc__)
    if seed is None:
        seed = int(time.time()) % 1_000_000 * 1000
    work = keep or tempfile.mkdtemp(prefix="agui-gen-oracle.")
    failed = 0
    for dialect, ref in (("v1", "1.0.0"), ("v0", "0.0.59")):
        t0 = time.time()
        d = os.path.join(work, dialect)
        shutil.rmtree(d, ignore_errors=True)
        g = subprocess.run([agui, "gen", "--dialect", dialect, "--violations", "--framing", "lf",
                            "--count", str(count), "--seed", str(seed), d],
                           capture_output=True, text=True, timeout=600)
        if g.returncode != 0:
            print(f"FAIL agui gen --dialect {dialect} --seed {seed}: status {g.returncode}: {g.stderr.strip()}")
            failed += 1
            continue
        names = sorted(n[:-4] for n in os.listdir(d) if n.endswith(".sse"))

        # The oracle in batches (one node process each, --write), two at once.
        paths = [os.path.join(d, n + ".sse") for n in names]
        batches = [paths[i:i + 250] for i in range(0, len(paths), 250)]
        with cf.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            list(pool.map(lambda b: subprocess.run(["node", oracle, "--ref", ref, "--write", ".oracle", *b],
                                                   capture_output=True, timeout=1200), batches))

        def one(name):
            path = os.path.join(d, name + ".sse")
            try:
                with open(os.path.join(d, name + ".oracle")) as f:
                    ref_out = f.read().splitlines()
            except OSError:
                return name, ["the oracle wrote nothing"], []
            ours = subprocess.run([agui, "check", "--exit-zero", "--dialect", dialect, path],
                                  capture_output=True, text=True, timeout=120).stdout.splitlines()
            with open(os.path.join(d, name + ".expected")) as f:
                expected = f.read().strip()
            problems = []
            if not ref_out:
                return name, ["the oracle printed nothing"], ref_out
            if ref_out[:-1] != ours[:-1]:
                problems.append("event lines differ from agui check's")
            if not ours or result_keys(ref_out[-1]) != result_keys(ours[-1]):
                problems.append(f"result: oracle {ref_out[-1]}, agui check {ours[-1] if ours else None}")
            if result_keys(ref_out[-1]) != result_keys(expected):
                problems.append(f"expected verdict: oracle {ref_out[-1]}, generator {expected}")
            return name, problems, ref_out

        valid = invalid = 0
        types = set()
        with cf.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            for name, problems, out in pool.map(one, names):
                if problems:
                    failed += 1
                    if failed <= 5:
                        print(f"FAIL {dialect} {name}: {'; '.join(problems)}")
                    continue
                for line in out[:-1]:
                    types.add(json.loads(line).get("type"))
                last = json.loads(out[-1])
                if last["result"] == "ok":
                    valid += 1
                else:
                    invalid += 1
        print(f"{dialect}: {len(names)} streams (seed {seed}): {valid} valid, {invalid} invalid agree with "
              f"the reference; {len(types)} event types out of the pipeline; "
              f"{time.time() - t0:.0f} s")
        print(f"  {g.stderr.strip()}")
    if failed:
        print(f"{failed} disagreements; streams kept in {work}")
        return 1
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
