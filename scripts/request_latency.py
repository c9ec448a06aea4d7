#!/usr/bin/env python3
"""The latency `http_proxy` adds to an agent request, on loopback.

    request_latency.py [--rounds N] PROXY_EXE BODY.json...

Starts scripts/sse_upstream.py (its /record/ route answers once it has the
whole body) and PROXY_EXE (`http_proxy`, its defaults: the request checked)
in front of it, then POSTs each body as `HttpAgent` does, N rounds, each
round once straight to the upstream and once through the proxy (the order
alternating): the time from the first byte sent to the whole answer. Prints,
per body, p50 and p99 of both and of the difference. Every process started
is stopped by pid; every wait is bounded.
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from request_e2e import complete  # noqa: E402


def started(cmd, prefix):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 15
    while time.time() < deadline:
        line = p.stdout.readline()
        if line.startswith(prefix):
            return p, line.split()[-1]
    p.kill()
    sys.exit(f"{cmd[0]} did not start")


def post(port, path, body):
    t = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(
        (
            f"POST {path} HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\n"
            f"content-type: application/json\r\nconnection: close\r\ncontent-length: {len(body)}\r\n\r\n"
        ).encode()
        + body
    )
    answer = b""
    while not complete(answer):
        part = sock.recv(65536)
        if not part:
            break
        answer += part
    sock.close()
    if not answer.startswith(b"HTTP/1.1 200"):
        sys.exit(f"{path}: {answer[:200]!r}")
    return (time.perf_counter() - t) * 1e3


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main(argv):
    rounds = 200
    if argv[:1] == ["--rounds"]:
        rounds, argv = int(argv[1]), argv[2:]
    if len(argv) < 2:
        sys.exit(__doc__)
    exe, bodies = argv[0], argv[1:]
    record = tempfile.mkdtemp()
    procs = []
    try:
        up, up_port = started(
            [sys.executable, os.path.join(HERE, "sse_upstream.py"), "--record-dir", record], "listening on"
        )
        procs.append(up)
        proxy, addr = started([exe, "--listen", "127.0.0.1:0", "--upstream", f"http://127.0.0.1:{up_port}"], "listening on")
        procs.append(proxy)
        ports = {"direct": int(up_port), "proxy": int(addr.rsplit(":", 1)[1])}
        for path in bodies:
            body = open(path, "rb").read()
            times = {"direct": [], "proxy": []}
            for i in range(rounds):
                order = ["direct", "proxy"] if i % 2 == 0 else ["proxy", "direct"]
                for way in order:
                    times[way].append(post(ports[way], f"/record/lat-{way}", body))
            d, p = times["direct"], times["proxy"]
            added = [b - a for a, b in zip(d, p)]
            print(
                f"{os.path.basename(path)} ({len(body)} bytes, {rounds} rounds): "
                f"direct p50 {pct(d, 50):.2f} ms p99 {pct(d, 99):.2f}; "
                f"through the proxy p50 {pct(p, 50):.2f} ms p99 {pct(p, 99):.2f}; "
                f"added p50 {pct(added, 50):.2f} ms p99 {pct(added, 99):.2f} (mean {statistics.mean(added):.2f})",
                flush=True,
            )
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
