#!/usr/bin/env python3
"""A loopback upstream for the Envoy end-to-end test (Python 3 stdlib only).

    sse_upstream.py [--port N] KEY=DIR...

Serves the files of each DIR (by name, under KEY) as `text/event-stream`,
written in seeded random pieces (the seed is the request target, so a
target always gets the same pieces), over HTTP/1.1 with one response per
connection. Prints `listening on PORT` once bound (port 0: a free one).

Routes (any method, a request body read and ignored; `?` options):

  /s/KEY/NAME        the file. mode=chunked (default) | length (content-length)
                     | close (no length, no chunks: the body ends when the
                     connection closes); split=N pieces of 1..N bytes (default
                     1500); delay=MS sleep 1..MS ms before about half the
                     pieces (default 2; 0 none); hold=MS: the piece that
                     completes the first event (see `first_event_end`) ends
                     there, and MS ms pass before the next byte
  /cut/KEY/NAME      the same, but only the first at=N bytes (default half),
                     then the connection closes: chunked without its last
                     chunk, length short of its content-length, close looking
                     like a normal end; rst=1: a RST instead of a FIN
  /gzip/KEY/NAME     the file gzip-compressed, content-encoding: gzip (at=N:
                     only its first N bytes, compressed whole)
  /json              a JSON document (content-length) echoing the request's
                     method, target and accept-encoding
  /weird             an event stream whose headers are odd: a second
                     content-encoding line, a value with bytes over 0x7f,
                     `x-accel-buffering: yes`, no cache-control
  /record/NAME       (any method) reads the request body (a content-length or
                     chunks) and, with --record-dir DIR, writes it to
                     DIR/NAME.body and whether it arrived whole (its length,
                     or its last chunk) to DIR/NAME.whole ("1" or "0"); a
                     whole body is answered {"received": N}
  anything else      404
"""

import gzip
import json
import os
import random
import socket
import socketserver
import sys
import time
import urllib.parse


DIRS = {}
RECORD_DIR = None


def read_file(key, name):
    base = DIRS.get(key)
    if base is None or "/" in name or name.startswith("."):
        return None
    path = os.path.join(base, name)
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def block_ends(b):
    """The blocks of `b` that have ended, as (end, data): `end` is past the
    blank line's line end (`\n`, `\r\n` or `\r`), `data` whether the
    block has a `data` field. A block has ended at its blank line's `\r`
    even if `\n` may follow (that `\n` only completes the line end), as the
    filter's framer reads it. A byte-order mark first is skipped."""
    out = []
    at = 3 if b.startswith(b"\xef\xbb\xbf") else 0
    data = False
    line_start = at
    while at < len(b):
        if b[at] not in (0x0A, 0x0D):
            at += 1
            continue
        line = b[line_start:at]
        end = at + 2 if b[at : at + 2] == b"\r\n" else at + 1
        if line == b"":
            out.append((end, data))
            data = False
        elif line == b"data" or line.startswith(b"data:"):
            data = True
        at = end
        line_start = end
    return out


def first_event_end(b):
    """Where the first block with a `data` field ends (-1: no such block)."""
    return next((end for end, data in block_ends(b) if data), -1)


def read_head(sock, timeout):
    """A request's head (up to its blank line and maybe past it), or None
    if the peer closes first or sends more than 64 KiB without one."""
    sock.settimeout(timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = b""
    while b"\r\n\r\n" not in head:
        part = sock.recv(65536)
        if not part or len(head) > 65536:
            return None
        head += part
    return head


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        head = read_head(sock, 30)
        if head is None:
            return
        text = head.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        lines = text.split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) < 2:
            return
        method, target = parts[0], parts[1]
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        url = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(url.query))
        segments = url.path.strip("/").split("/")
        route = segments[0]
        try:
            if route == "record":
                self.record(sock, head.split(b"\r\n\r\n", 1)[1], headers, segments[1:])
                return
            # A body (HttpAgent POSTs its input) is read and ignored: a
            # socket closed with bytes unread would answer with a RST.
            body = len(head.split(b"\r\n\r\n", 1)[1])
            length = int(headers.get("content-length", "0") or 0)
            sock.settimeout(30)
            while body < length:
                part = sock.recv(65536)
                if not part:
                    break
                body += len(part)
            self.answer(sock, method, target, headers, route, segments[1:], query)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass

    def record(self, sock, raw, headers, rest):
        chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        length = int(headers.get("content-length", "0") or 0)
        body, whole = None, False
        sock.settimeout(30)
        while True:
            if chunked:
                # Only once the last chunk may be there (a long body comes
                # in many reads).
                body = dechunk(raw) if raw.endswith(b"\r\n\r\n") else None
            elif len(raw) >= length:
                body = raw[:length]
            if body is not None:
                whole = True
                break
            try:
                part = sock.recv(65536)
            except OSError:
                part = b""
            if not part:
                body = b"" if chunked else raw
                break
            raw += part
        name = "_".join(rest) or "unnamed"
        if RECORD_DIR and "/" not in name and not name.startswith("."):
            with open(os.path.join(RECORD_DIR, name + ".body"), "wb") as f:
                f.write(body)
            with open(os.path.join(RECORD_DIR, name + ".whole"), "w") as f:
                f.write("1" if whole else "0")
        if whole:
            answer = json.dumps({"received": len(body)}).encode()
            sock.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n" % len(answer) + answer
            )

    def answer(self, sock, method, target, headers, route, rest, query):
        if route == "json":
            body = json.dumps(
                {
                    "method": method,
                    "target": target,
                    "accept_encoding": headers.get("accept-encoding", ""),
                }
            ).encode()
            sock.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\nx-upstream: yes\r\nconnection: close\r\n\r\n"
                % len(body)
                + body
            )
            return
        if route == "weird":
            body = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
            sock.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"content-encoding: identity\r\ncontent-encoding: identity\r\n"
                b"x-accel-buffering: yes\r\n"
                b"x-odd: caf\xe9 \xff\xfe\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
                + body
            )
            return
        if route not in ("s", "cut", "gzip") or len(rest) != 2:
            sock.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            return
        stream = read_file(rest[0], rest[1])
        if stream is None:
            sock.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            return
        if route == "gzip":
            body = gzip.compress(stream[: int(query.get("at", len(stream)))], mtime=0)
            sock.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"content-encoding: gzip\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
                % len(body)
                + body
            )
            return
        mode = query.get("mode", "chunked")
        split = max(1, int(query.get("split", "1500")))
        delay = max(0, int(query.get("delay", "2")))
        send = stream
        if route == "cut":
            send = stream[: int(query.get("at", len(stream) // 2))]
        if mode == "chunked":
            framing = b"transfer-encoding: chunked\r\n"
        elif mode == "length":
            framing = b"content-length: %d\r\n" % len(stream)
        else:
            framing = b""
        sock.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
            + framing
            + b"cache-control: no-cache\r\nconnection: close\r\n\r\n"
        )
        rng = random.Random(target)
        hold = int(query.get("hold", "0"))
        first_event = first_event_end(send) if hold else -1
        at = 0
        while at < len(send):
            n = min(rng.randint(1, split), len(send) - at)
            if at < first_event < at + n:
                # The first event's piece ends with it: what follows waits.
                n = first_event - at
            if delay and rng.random() < 0.5:
                time.sleep(rng.randint(1, delay) / 1000)
            piece = send[at : at + n]
            if mode == "chunked":
                piece = b"%x\r\n" % n + piece + b"\r\n"
            sock.sendall(piece)
            if hold and at + n == first_event:
                time.sleep(hold / 1000)
            at += n
        if route == "cut":
            # Dies mid-body: the connection closes (a FIN, as when the
            # process exits; rst=1: a RST, as when it crashes with input
            # unread) without a proper end.
            if query.get("rst") == "1":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                sock.close()
            return
        if mode == "chunked":
            sock.sendall(b"0\r\n\r\n")
        sock.shutdown(socket.SHUT_WR)


def dechunk(raw):
    """A chunked body's data once its last chunk arrived, else None."""
    body, at = [], 0
    while True:
        end = raw.find(b"\r\n", at)
        if end < 0:
            return None
        try:
            size = int(raw[at:end].split(b";")[0].strip(), 16)
        except ValueError:
            return None
        data = end + 2
        if size == 0:
            return b"".join(body) if raw[data:].startswith(b"\r\n") else None
        if len(raw) < data + size + 2:
            return None
        body.append(raw[data : data + size])
        at = data + size + 2


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def main():
    global RECORD_DIR
    port = 0
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "--port":
            port = int(args.pop(0))
        elif a == "--record-dir":
            RECORD_DIR = args.pop(0)
        elif "=" in a:
            key, path = a.split("=", 1)
            DIRS[key] = path
        else:
            sys.exit(__doc__)
    server = Server(("127.0.0.1", port), Handler)
    print("listening on %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
