#!/usr/bin/env bash
# Builds the seed corpora fuzz/corpus/<target>/ from the AG-UI test corpora:
#   ../shared/corpus/ (conformance/*.sse, real/*.sse, upstream/**) when it
#   exists, and the repository's own tests/corpus/ (always; duplicates are
#   dropped, every seed is named by its SHA-1 as libFuzzer names its finds).
#
#   pipeline                       whole streams, truncated to 64 KiB, behind
#   rewrite                        (the same, truncated to 16 KiB)
#                                  the target's 4-byte header (see below)
#   buffers                        whole streams, truncated to 64 KiB, behind
#                                  the raw-stream header 80 01 06 00 b3 05
#                                  (pushes of 7 and 1460 bytes), plus 64
#                                  generator inputs (fixed pseudo-random bytes)
#   decode, encode, differential   one seed per frame: its data payload
#   json_resume                    the same, behind one byte that picks the splits
#   request                        each request body (tests/corpus/requests), behind
#                                  one byte (dialect, a denied tool, buffer, splits)
#   gen_pipeline, gen_rewrite      64 generator inputs each (a flags byte and
#                                  32 to 256 fixed pseudo-random bytes)
#
# Upstream JSON files (arrays of events, scenario → events maps, the
# null-omission fixture) become one payload per event and one stream per
# array; dart/sse_streams.txt is split on its "## " headings into streams.
# differential also gets every upstream JSON file whole.
#
# Usage: fuzz/seed.sh [SOURCE_DIR...]   (default: the two above)
# AGUI_SEED_OUT=DIR writes the corpora under DIR instead of fuzz/corpus
# (scripts/fuzz_coverage.sh: seeds alone, without earlier finds).
# Needs python3. Idempotent: existing seeds (and libFuzzer's finds) are kept.
set -euo pipefail
fuzz_dir=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$fuzz_dir")

if [ "$#" -eq 0 ]; then
  set --
  [ -d "$root/../shared/corpus" ] && set -- "$root/../shared/corpus"
  [ -d "$root/tests/corpus" ] && set -- "$@" "$root/tests/corpus"
fi
if [ "$#" -eq 0 ]; then
  echo "seed.sh: no corpus found (../shared/corpus, tests/corpus)" >&2
  exit 1
fi

python3 - "${AGUI_SEED_OUT:-$fuzz_dir/corpus}" "$@" <<'PY'
import hashlib, json, os, re, sys

out_root, sources = sys.argv[1], sys.argv[2:]
STREAM_MAX = 64 * 1024
REWRITE_MAX = 16 * 1024
PAYLOAD_MAX = 64 * 1024
# pipeline's header: flags (bit 0 deterministic minting), 2 chunk sizes: 7, 253.
PIPELINE_HEADER = bytes([0x01, 0x02, 7, 253])
# buffers' header: mode 0x80 (the rest is the stream), n = 1 (two sizes),
# then the sizes as u16 LE, each 1 + value % 1460: pushes of 7 and 1460.
BUFFERS_HEADER = bytes([0x80, 0x01, 6, 0, 0xb3, 0x05])
counts = {}

def seed(target, data):
    d = os.path.join(out_root, target)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, hashlib.sha1(data).hexdigest())
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)
        counts[target] = counts.get(target, 0) + 1

def payloads(stream):
    """The data payloads of an SSE stream (WHATWG framing, simplified)."""
    if stream.startswith(b"\xef\xbb\xbf"):
        stream = stream[3:]
    lines = stream.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    data = []
    for line in lines + [b""]:
        if line == b"":
            if data:
                yield b"\n".join(data)
            data = []
        elif line.startswith(b"data"):
            value = line[4:]
            if value.startswith(b":"):
                value = value[2:] if value.startswith(b": ") else value[1:]
            elif value:
                continue  # another field, e.g. "dataset:"
            data.append(value)

def add_stream(stream):
    seed("pipeline", PIPELINE_HEADER + stream[:STREAM_MAX])
    # The rewriter reads the same layout; its streams are shorter.
    seed("rewrite", PIPELINE_HEADER + stream[:REWRITE_MAX])
    seed("buffers", BUFFERS_HEADER + stream[:STREAM_MAX])
    for p in payloads(stream):
        if len(p) <= PAYLOAD_MAX:
            for t in ("decode", "encode", "differential"):
                seed(t, p)
            seed("json_resume", bytes([len(p) % 256]) + p)

def events_in(doc):
    """Lists of events found in an upstream JSON document."""
    if isinstance(doc, list) and all(isinstance(e, dict) for e in doc):
        yield doc
    elif isinstance(doc, dict):
        if isinstance(doc.get("stream"), list):  # null-omission fixture
            yield [c["input"] for c in doc["stream"] if isinstance(c, dict) and "input" in c]
        for v in doc.values():
            if isinstance(v, list) and v and all(isinstance(e, dict) and "type" in e for e in v):
                yield v

def add_json(raw, request=False):
    if request and len(raw) <= PAYLOAD_MAX:
        for flags in (0x00, 0x07, 0x5a):
            seed("request", bytes([flags]) + raw)
    seed("differential", raw)
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (ValueError, RecursionError):  # not JSON, or nested too deep for Python
        return
    for events in events_in(doc):
        lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() for e in events]
        add_stream(b"".join(b"data: " + l + b"\n\n" for l in lines))

for src in sources:
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                raw = f.read()
            if name.endswith(".sse"):
                add_stream(raw)
            elif name.endswith(".json"):
                add_json(raw, os.path.basename(dirpath) == "requests")
            elif name == "sse_streams.txt":  # dart: "## heading" sections
                for section in re.split(rb"(?m)^## [^\n]*\n", raw):
                    if section.strip():
                        add_stream(section)

# buffers' generator: mode 0 (generate), one push size, then the bytes
# that drive the generator (fixed pseudo-random ones, so that seeds are
# the same on every machine; 256 B to 4 KiB, each its own swarm of
# features in its first byte).
for i in range(64):
    n = 256 << (i % 5)
    drive = b"".join(hashlib.sha256(b"buffers/%d/%d" % (i, k)).digest() for k in range(n // 32))
    seed("buffers", bytes([0x00, i % 8]) + drive)

# The generator-driven targets: a flags byte (options, see each target),
# then the bytes that drive the generator — fixed pseudo-random ones, 32 to
# 256 bytes: already long runs (a 2 KiB input makes streams of 50 KB on
# average, and a 60-second run from such seeds finds less).
for t in ("gen_pipeline", "gen_rewrite"):
    for i in range(64):
        n = 32 << (i % 4)
        drive = b"".join(hashlib.sha256(b"%s/%d/%d" % (t.encode(), i, k)).digest() for k in range(n // 32))
        seed(t, bytes([i * 37 % 256]) + drive)

for t in ("pipeline", "rewrite", "buffers", "decode", "encode", "differential", "json_resume", "request",
          "gen_pipeline", "gen_rewrite"):
    os.makedirs(os.path.join(out_root, t), exist_ok=True)
    total = len(os.listdir(os.path.join(out_root, t)))
    print(f"seed.sh: {t}: {counts.get(t, 0)} new seeds, {total} in {os.path.join(out_root, t)}")
PY
