#!/usr/bin/env python3
"""Agent requests through a gateway, against the reference's verdicts.

    request_e2e.py [--deny TOOL]... [--slow N] [--tag T] [--agui AGUI] [--max-request-bytes N]
                   URL REQUESTS_DIR RECORD_DIR

POSTs every body REQUESTS_DIR/NAME.json (the request corpus) to
URL/record/TNAME (T the tag) as `HttpAgent` does (`accept:
text/event-stream`, `content-type: application/json`, a content-length),
on a raw socket, and checks, against NAME.expected (1.0.0):

  - a valid body: 200 (the upstream's answer), and the upstream
    (scripts/sse_upstream.py --record-dir RECORD_DIR) received it whole:
    byte for byte, or with `--deny`, the same JSON without the denied
    tools' entries in `tools`;
  - an invalid one: 400 (413 where the checker, `AGUI input --buffer
    65536` as the gateway's buffers are, runs out of a capacity), an
    `application/json` problem with `code` AGUI_INVALID_INPUT (or
    AGUI_INPUT_TOO_LARGE), a message and a path; and the upstream never
    received it whole.

The first N valid and N invalid bodies (`--slow N`, default 3) are also
sent in 13-byte pieces 2 ms apart. Then the size limit (`--max-request-bytes`,
default 16 MiB, the gateway's default `max_request_bytes`), with a valid body
of one long user message: one of exactly the limit passes whole (byte for
byte; with `--deny`, the same JSON), one 1 MiB over it is answered 413
`AGUI_INPUT_TOO_LARGE` — with a content-length, before the upstream sees any
of it; chunked (no length), once the limit is crossed, the upstream never
receiving it whole. Then a plain POST (no `accept:
text/event-stream`) with a body that is not JSON passes unchecked. Prints
`ok …` / `FAIL …` lines and `checked N` (agent requests sent); exits 1 on a
failure. Every wait is bounded (30 s a request).
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse


def post(url, path, body, accept, piece=None, pause=0.0):
    """The status, content type and body of the answer."""
    u = urllib.parse.urlsplit(url)
    sock = socket.create_connection((u.hostname, u.port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {u.netloc}\r\naccept: {accept}\r\n"
        f"content-type: application/json\r\nconnection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    try:
        sock.sendall(head)
        if piece:
            for i in range(0, len(body), piece):
                sock.sendall(body[i : i + piece])
                time.sleep(pause)
        else:
            sock.sendall(body)
    except OSError:
        pass  # answered (and closed) before the whole body was sent
    return read_answer(sock)


def read_answer(sock, wait=30):
    """The status, content type and body of the answer on `sock` (closed
    after)."""
    answer = b""
    deadline = time.time() + wait
    while time.time() < deadline and not complete(answer):
        try:
            part = sock.recv(65536)
        except OSError:
            break
        if not part:
            break
        answer += part
    sock.close()
    head, _, rest = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1]) if lines and len(lines[0].split(" ")) > 1 else 0
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from sse_upstream import dechunk

        rest = dechunk(rest) or b""
    return status, headers.get("content-type", ""), rest


def post_large(url, path, body, chunked):
    """POSTs `body` (an agent request) with a content-length, or chunked in
    64 KiB chunks, sent from a thread while the answer is read (a gateway
    may answer, and close, long before the body is sent)."""
    u = urllib.parse.urlsplit(url)
    sock = socket.create_connection((u.hostname, u.port), timeout=60)
    framing = "transfer-encoding: chunked" if chunked else f"content-length: {len(body)}"
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {u.netloc}\r\naccept: text/event-stream\r\n"
        f"content-type: application/json\r\nconnection: close\r\n{framing}\r\n\r\n"
    ).encode()

    def send():
        try:
            sock.sendall(head)
            for i in range(0, len(body), 65536):
                piece = body[i : i + 65536]
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # answered (and closed) before the whole body was sent

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        return read_answer(sock, wait=60)
    finally:
        # Wakes a sender still blocked (the gateway stopped reading).
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sender.join(timeout=10)


def sized_body(n):
    """A valid RunAgentInput of exactly `n` bytes: one user message, long."""
    head = b'{"threadId":"t","runId":"r","state":{},"messages":[{"id":"m","role":"user","content":"'
    tail = b'"}],"tools":[],"context":[],"forwardedProps":{}}'
    return head + b"a" * (n - len(head) - len(tail)) + tail


def complete(answer):
    """A response with a content-length that has all of it (Envoy closes
    a connection only a while after the client could)."""
    head, sep, rest = answer.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.decode("latin-1").split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            return len(rest) >= int(v.strip() or 0)
    return False


def recorded(record_dir, name, wait=True, seconds=2):
    """What the upstream received for NAME: (body, whole), or None."""
    body_path = os.path.join(record_dir, name + ".body")
    whole_path = os.path.join(record_dir, name + ".whole")
    # The upstream writes its record when the connection ends, which may
    # come just after the client's answer.
    deadline = time.time() + (seconds if wait else 0)
    while not os.path.exists(whole_path) and time.time() < deadline:
        time.sleep(0.02)
    if not os.path.exists(whole_path):
        return None
    with open(body_path, "rb") as f:
        body = f.read()
    with open(whole_path) as f:
        return body, f.read() == "1"


def parse(body):
    """JSON as JSON.parse reads it (invalid UTF-8 as U+FFFD, deep nesting)."""
    return json.loads(body.decode("utf-8-sig", "replace"))


def without(body, deny):
    v = parse(body)
    if isinstance(v, dict) and isinstance(v.get("tools"), list):
        v["tools"] = [t for t in v["tools"] if not (isinstance(t, dict) and t.get("name") in deny)]
    return v


def capacity(agui, path):
    """Whether `agui input` runs out of a capacity on the body (exit 4)."""
    if not agui:
        return False
    return subprocess.run([agui, "input", "--buffer", "65536", path],
                          capture_output=True, timeout=60).returncode == 4


def main(argv):
    # The corpus nests 1,000 levels deep.
    sys.setrecursionlimit(20000)
    deny, slow, tag, agui, limit, args = [], 3, "r", None, 16 << 20, []
    while argv:
        a = argv.pop(0)
        if a == "--deny":
            deny.append(argv.pop(0))
        elif a == "--slow":
            slow = int(argv.pop(0))
        elif a == "--tag":
            tag = argv.pop(0)
        elif a == "--agui":
            agui = argv.pop(0)
        elif a == "--max-request-bytes":
            limit = int(argv.pop(0))
        else:
            args.append(a)
    if len(args) != 3:
        sys.exit(__doc__)
    url, requests_dir, record_dir = args
    names = sorted(n[:-5] for n in os.listdir(requests_dir) if n.endswith(".json"))
    failed = checked = rewritten = 0

    def fail(msg):
        nonlocal failed
        failed += 1
        print("FAIL " + msg, flush=True)

    slow_left = {"valid": slow, "invalid": slow}
    for name in names:
        with open(os.path.join(requests_dir, name + ".json"), "rb") as f:
            body = f.read()
        with open(os.path.join(requests_dir, name + ".expected"), encoding="utf-8") as f:
            result = json.loads(f.read().splitlines()[-1])
        valid = result["result"] == "ok"
        kind = "valid" if valid else "invalid"
        ways = [("", None, 0.0)]
        if slow_left[kind] > 0:
            slow_left[kind] -= 1
            ways.append(("-slow", 13, 0.002))
        for suffix, piece, pause in ways:
            key = f"{tag}-{name}{suffix}"
            status, ctype, answer = post(url, "/record/" + key, body, "text/event-stream", piece, pause)
            checked += 1
            got = recorded(record_dir, key, wait=valid)
            what = f"{name}{suffix}"
            if valid:
                if status != 200:
                    fail(f"{what}: status {status}, want 200: {answer[:200]!r}")
                elif got is None or not got[1]:
                    fail(f"{what}: the upstream did not receive it whole")
                elif not deny and got[0] != body:
                    fail(f"{what}: the upstream received other bytes")
                elif deny and parse(got[0]) != without(body, deny):
                    fail(f"{what}: the upstream received other JSON than the body without {deny}")
                else:
                    rewritten += int(got[0] != body)
                    continue
            else:
                want = 413 if capacity(agui, os.path.join(requests_dir, name + ".json")) else 400
                try:
                    problem = json.loads(answer)
                except ValueError:
                    problem = {}
                code = "AGUI_INPUT_TOO_LARGE" if want == 413 else "AGUI_INVALID_INPUT"
                if status != want:
                    fail(f"{what}: status {status}, want {want}: {answer[:200]!r}")
                elif not ctype.startswith("application/json") or problem.get("code") != code:
                    fail(f"{what}: not the problem: {ctype} {answer[:200]!r}")
                elif not problem.get("message") or "path" not in problem:
                    fail(f"{what}: the problem lacks a message or a path: {problem}")
                elif got is not None and got[1]:
                    fail(f"{what}: the upstream received it whole")
                else:
                    continue
    print(f"ok   {checked - failed} of {checked} agent requests through {url} as the reference says"
          + (f" ({rewritten} with {deny} taken out of tools)" if deny else ""))
    if deny and rewritten == 0:
        fail(f"no body had {deny} to take out")
    # The size limit: a valid body of exactly the limit passes, one over it
    # is refused.
    body = sized_body(limit)
    key = f"{tag}-limit"
    status, _, answer = post_large(url, "/record/" + key, body, chunked=False)
    checked += 1
    got = recorded(record_dir, key)
    if status == 200 and got is not None and got[1] and (
        got[0] == body if not deny else parse(got[0]) == without(body, deny)
    ):
        print(f"ok   a valid body of exactly max_request_bytes ({limit}) reaches the upstream whole")
    else:
        fail(f"a body of max_request_bytes: status {status}, upstream got "
             f"{None if got is None else (len(got[0]), got[1])}: {answer[:200]!r}")
    over = sized_body(limit + (1 << 20))
    for chunked in (False, True):
        how = "chunked" if chunked else "with a content-length"
        key = f"{tag}-over-{'chunked' if chunked else 'length'}"
        status, ctype, answer = post_large(url, "/record/" + key, over, chunked)
        checked += 1
        # Chunked, the upstream had a connection: its record comes when
        # Envoy resets it.
        got = recorded(record_dir, key, seconds=10 if chunked else 2)
        try:
            problem = json.loads(answer)
        except ValueError:
            problem = {}
        if status != 413 or not ctype.startswith("application/json") or problem.get("code") != "AGUI_INPUT_TOO_LARGE":
            fail(f"a body 1 MiB over max_request_bytes, {how}: status {status}, want 413: {answer[:200]!r}")
        elif (got is None and chunked) or (got is not None and got[1]):
            fail(f"a body 1 MiB over max_request_bytes, {how}: the upstream "
                 + ("left no record" if got is None else "received it whole"))
        elif not chunked and got is not None and got[0]:
            fail(f"a body 1 MiB over max_request_bytes, {how}: the upstream received {len(got[0])} bytes of it")
        else:
            print(f"ok   a body 1 MiB over max_request_bytes, {how}: 413 AGUI_INPUT_TOO_LARGE, "
                  + ("nothing of it upstream" if not chunked else "never whole upstream"))
    # Not an agent request: unchecked, whatever its body.
    status, _, _ = post(url, f"/record/{tag}-plain", b"not json", "application/json")
    got = recorded(record_dir, f"{tag}-plain")
    if status == 200 and got == (b"not json", True):
        print("ok   a POST that does not accept text/event-stream passes unchecked")
    else:
        fail(f"a plain POST: status {status}, upstream got {got}")
    print(f"checked {checked}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
