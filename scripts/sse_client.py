#!/usr/bin/env python3
"""One HTTP/1.1 request with Python's http.client, for the Envoy end-to-end
test (Python 3 stdlib only).

    sse_client.py [--timeout S] [--header 'Name: value']... [--gunzip] URL OUT [META]

Writes the response body (as far as it came) to OUT, and to META (if given)
one JSON object: status, headers (lower-case names; repeated ones joined
with ", "), bytes, complete (the body ended properly: its last chunk or its
length; false if the connection was cut), error, ttfb_ms (from sending the
request to the first body byte), ttfe_ms (to the read that brought the
first `data:`), total_ms. Prints one tab-separated line for shell scripts:
status, complete (1/0), ttfe_ms, total_ms, and the headers content-length,
content-type, content-encoding, x-accel-buffering, cache-control ("-" for
what is missing). Sends `Accept: text/event-stream` and `Accept-Encoding:
gzip, br` unless --header gives others. --gunzip: a body with
content-encoding gzip is inflated as it arrives (OUT, bytes and ttfe_ms are
then the inflated body's; raw_bytes what came). Exit status 0 whenever a
response came (whatever it was), 1 otherwise.
"""

import http.client
import json
import sys
import time
import urllib.parse
import zlib


def main():
    args = sys.argv[1:]
    timeout = 30.0
    extra = []
    gunzip = False
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--gunzip":
            gunzip = True
        elif opt == "--timeout":
            timeout = float(args.pop(0))
        elif opt == "--header":
            name, value = args.pop(0).split(":", 1)
            extra.append((name.strip(), value.strip()))
        else:
            sys.exit(__doc__)
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    url, out = urllib.parse.urlsplit(args[0]), args[1]
    meta = args[2] if len(args) == 3 else None
    target = url.path + ("?" + url.query if url.query else "")
    result = {"status": None, "headers": {}, "bytes": 0, "raw_bytes": 0, "complete": False, "error": None,
              "ttfb_ms": None, "ttfe_ms": None, "total_ms": None}
    body = bytearray()
    started = time.perf_counter()
    ms = lambda: round((time.perf_counter() - started) * 1e3, 3)
    try:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
        conn.putrequest("GET", target, skip_accept_encoding=True)
        names = {n.lower() for n, _ in extra}
        if "accept" not in names:
            conn.putheader("Accept", "text/event-stream")
        if "accept-encoding" not in names:
            conn.putheader("Accept-Encoding", "gzip, br")
        for name, value in extra:
            conn.putheader(name, value)
        started = time.perf_counter()
        conn.endheaders()
        resp = conn.getresponse()
        result["status"] = resp.status
        headers = {}
        for name, value in resp.getheaders():
            name = name.lower()
            headers[name] = headers[name] + ", " + value if name in headers else value
        result["headers"] = headers
        inflate = None
        if gunzip and headers.get("content-encoding", "").strip().lower() == "gzip":
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            piece = resp.read1(65536)
            if not piece:
                break
            result["raw_bytes"] += len(piece)
            if inflate is not None:
                piece = inflate.decompress(piece)
                if not piece:
                    continue
            if result["ttfb_ms"] is None:
                result["ttfb_ms"] = ms()
            # A `data:` split across reads counts at the read completing it.
            start = max(0, len(body) - 4)
            body += piece
            if result["ttfe_ms"] is None and b"data:" in body[start:]:
                result["ttfe_ms"] = ms()
        # http.client raises on a cut chunked body; a cut length-delimited
        # one just ends early.
        length = resp.getheader("content-length")
        result["complete"] = length is None or int(length) == result["raw_bytes"]
        if not result["complete"]:
            result["error"] = "body ended at %d of %s bytes" % (result["raw_bytes"], length)
        if inflate is not None and not inflate.eof:
            result["complete"] = False
            result["error"] = "the gzip stream did not end"
    except http.client.IncompleteRead as e:
        if not gunzip:
            body += e.partial
        result["error"] = "IncompleteRead"
    except Exception as e:  # noqa: BLE001 - reported, not raised
        result["error"] = "%s: %s" % (type(e).__name__, e)
    result["total_ms"] = ms()
    result["bytes"] = len(body)
    with open(out, "wb") as f:
        f.write(body)
    if meta:
        with open(meta, "w") as f:
            json.dump(result, f)
    show = lambda v: "-" if v is None else str(v)
    h = result["headers"]
    fields = [result["status"], int(result["complete"]), result["ttfe_ms"], result["total_ms"]]
    fields += [h.get(k) for k in ("content-length", "content-type", "content-encoding",
                                  "x-accel-buffering", "cache-control")]
    print("\t".join(show(v).replace("\t", " ") for v in fields))
    return 0 if result["status"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
