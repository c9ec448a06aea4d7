#!/usr/bin/env python3
"""What the proxy-wasm filter (examples/proxy-wasm) and the Envoy dynamic
module (examples/envoy-module) cost Envoy's memory per open event stream
-- or, with --http-proxy, what the rewriter costs examples/http_proxy.rs
(Python 3 stdlib only). A measurement, not a test.

    scripts/envoy-memory.py [--envoy ENVOY] [--filter LABEL=MODULE ...]
        [--config JSON] [--streams N[,N...]] [--interval-ms MS]
        [--ramp PER_S] [--post] [--deadline S]
    scripts/envoy-memory.py --http-proxy HTTP_PROXY [--streams N[,N...]]
        [--interval-ms MS] [--ramp PER_S] [--post] [--deadline S]

    e.g. scripts/envoy-memory.py --streams 1000,8000 \\
         --filter module=examples/envoy-module/target/release/libagui_stream_envoy.so \\
         --filter wasm=examples/proxy-wasm/target/wasm32-unknown-unknown/release/agui_stream_proxy_wasm.O3.wasm

With --http-proxy, examples/http_proxy.rs instead of Envoy (below).

Configurations: `plain` (the router to the upstream, no filter) and one
per --filter MODULE (`LABEL`: the filter, then the router). A `.wasm` is a
proxy-wasm filter (vm_id agui_stream_LABEL, V8, root_id agui_stream, the
plugin configuration --config, default `{}`: the default configuration,
a 65536-byte `buffer`); a `libNAME.so` a dynamic module
(`dynamic_module_config: {name: NAME}`, filter_config --config; Envoy's
ENVOY_DYNAMIC_MODULES_SEARCH_PATH is the .so's directory). The YAML follows
examples/proxy-wasm/envoy.yaml and examples/envoy-module/envoy.yaml (route
`timeout: 0s`), with the cluster's circuit breakers raised (their default
1024 connections and 1024 pending requests would answer 503 past about
2048 open streams), and is written into a temporary directory.

With --http-proxy HTTP_PROXY (the binary: `cargo build --release
--features std,serde --example http_proxy`, then
target/release/examples/http_proxy), no Envoy: two configurations,
`passthrough` (`HTTP_PROXY --passthrough`: the same proxy, hyper setup and
event-stream body, every body forwarded as it arrives, no rewriter, no
request check) and `http_proxy` (its defaults: a rewriter per event
stream), each
`--listen 127.0.0.1:0 --upstream http://127.0.0.1:PORT`, its port read
from its `listening on ADDR` line; the same upstream, clients, steps,
tables and `memory` lines, the ratio to passthrough's, "Envoy" read as
the proxy. The proxy runs tokio's multi-threaded runtime (one worker per
CPU); its heap has no counter (the tables' heap column is `-`); its log is
its stderr (one line per response; its errors are the lines that start
`http_proxy:`). --envoy, --filter and --config do not go with it.

Each configuration, for each N of --streams, gets its own Envoy
(--concurrency 1, admin and its one listener on 127.0.0.1, port 0, the
listener's port read from the admin's /listeners), its own upstream and
its own clients: RSS never shrinks and the filters keep their per-stream
buffers in a pool, so two configurations (or two Ns) never share a
process. Every child's soft RLIMIT_NOFILE is raised to its hard limit
(N streams take 2N descriptors in Envoy, N in the upstream and in the
clients).

The upstream (this script, `--upstream`, a child process, asyncio) answers
every request `GET /s/I` (or POST, its body read first) with `200`,
`content-type: text/event-stream`, `connection: close` and a chunked body,
one chunk per event: at once `RUN_STARTED` (runId rI) and
`TEXT_MESSAGE_START`, then one `TEXT_MESSAGE_CONTENT` with a 20-byte delta
every --interval-ms (default 1000; each stream's ticks counted from its
own start, so the ramp spreads them), until the script tells it to end the
stream: then `TEXT_MESSAGE_END`, `RUN_FINISHED`, the last chunk, and it
closes. A valid run: the filters forward it as it is.

The clients (this script, `--clients`, one child process, asyncio): one
connection per stream, one request each (`GET /s/I`, `accept:
text/event-stream`; with --post a POST with a small `RunAgentInput` body,
as an AG-UI client sends it, which the proxy-wasm filter also checks),
opened at --ramp streams per second (default 500). Each de-chunks its
response, counts its events (`data: ` lines) and records the time from
sending its request to its first event. The clients' event loop measures
its own lateness (a 10 ms ticker) and the ramp how late each open came:
both are printed, to show the times are Envoy's, not the clients'.

Per configuration and N:

1. Envoy starts. Warm-up: 4 streams opened, fed until each has 4 events,
   ended, checked (so that what is initialised lazily -- the wasm VM's
   per-thread instance, thread-locals, the first buffer pairs, pools --
   is, before the first read).
2. RSS idle: Envoy's VmRSS (/proc/PID/status), the median of 5 reads over
   2 s, 1 s after the warm-up's streams closed.
3. N streams opened at the ramp rate; time to first event (p50, p99, max)
   over them, once every one has had its first event. Printed beside
   it: how late the ramp's opens came, how late the clients' and the
   upstream's event loops ran at worst, and how long Envoy's threads
   were on a CPU and waited on a run queue meanwhile (schedstat): the
   time to first event is Envoy's when those lags are small; a long wait
   says the machine was busy with something else.
4. After 3 more intervals, RSS open: the median of 5 reads over 2 s.
   Memory per open stream: (RSS open - RSS idle) / N, in KB (1000 bytes),
   and its ratio to plain's at the same N. Beside it, what Envoy's heap
   (tcmalloc, the admin's /memory `allocated`) gained per stream: the
   rest of RSS is outside it (the wasm VM's linear memory, mapped by V8;
   pages tcmalloc holds free).
5. Envoy's CPU while the streams sit open (one 20-byte event per stream
   per interval): the sum over its threads of /proc/PID/task/*/schedstat's
   first field (ns on a CPU) over whole intervals, at least 5 s, as % of
   one core; the clients' and the upstream's the same way.
6. Every stream checked: the events its client has counted against those
   the upstream sent (read just before), one in flight allowed; then the
   upstream ends every stream, and every client must get the rest of its
   events and the end of its body (exactly as many events as were sent).
7. Everything stopped (by pid).

Output: per configuration a line as it is measured, then per N a table:
RSS idle and open (MB, 10^6 bytes), KB per open stream, ratio to plain,
heap KB per stream, Envoy CPU %, time to first event (p50/p99/max ms),
events received/sent (at the check in step 6). Last, one line per N and
configuration:

    memory LABEL N KB_PER_STREAM RATIO_TO_PLAIN

(with --http-proxy, RATIO_TO_PASSTHROUGH)

Options: --envoy (default: the last line of scripts/install-envoy.sh),
--filter LABEL=MODULE (repeatable; none: plain only), --config (JSON, the
filters' configuration, default `{}`), --http-proxy HTTP_PROXY (instead of
Envoy and its filters), --streams (default 1000; a comma
list measures each), --interval-ms (default 1000), --ramp (streams opened
per second, default 500), --post, --deadline (seconds for the whole
script; default 120, plus per Envoy (or proxy) started 60 + 2 N / ramp +
12 intervals).

A run (a configuration at an N) that does not work -- Envoy does not
start, a stream fails (e.g. a 503) or misses an event -- is said at once
with what it got to (streams opened, Envoy's RSS, the errors in Envoy's
log), shown FAILED in its table and as `memory LABEL N nan nan`; the
other runs still go. A proxy-wasm filter's VM (one per worker thread) has
at most 1 GiB of linear memory in Envoy (proxy-wasm-cpp-host sets V8's
wasm_max_mem_pages): past that an allocation aborts the VM (`Uncaught
RuntimeError: unreachable`) and, without a failure_policy, every later
request gets a 503 -- with the default 64 KiB `buffer` (two per stream)
that is at about 7,700 open streams.

Exit status: 0 whatever the numbers; 1 when something does not work (a
run failed, out of time); 2 on a usage error. Every process started is stopped by pid (also on Ctrl-C,
SIGTERM or an exception, and killed with this script on Linux); the
temporary directory is removed at the end (on a failure the end of
Envoy's log is printed first).
"""

import asyncio
import json
import math
import os
import queue
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARM_STREAMS = 4
WARM_EVENTS = 4
RSS_READS = 5
RSS_SPAN = 2.0
SETTLE_INTERVALS = 3
CPU_MIN_WINDOW = 5.0
# The request body with --post: a RunAgentInput, as an AG-UI client sends it.
POST_BODY = (
    '{"threadId":"t","runId":"r%d","state":{},"messages":[{"id":"u","role":"user",'
    '"content":"hello"}],"tools":[],"context":[],"forwardedProps":{}}'
)


class Failure(Exception):
    """Something does not work: the script exits 1."""


class OutOfTime(Failure):
    """The deadline passed: nothing more is measured."""


def raise_nofile():
    """The soft RLIMIT_NOFILE up to the hard limit; the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


# ------------------------------------------------------------------ children


def chunk(text):
    data = text.encode()
    return b"%x\r\n%s\r\n" % (len(data), data)


def event(obj):
    return chunk("data: %s\n\n" % json.dumps(obj, separators=(",", ":")))


async def command_lines(handle):
    """Reads one JSON command a line from stdin, answers each with one
    JSON line on stdout (`handle` returns the answer); ends at EOF."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line:
            return
        try:
            cmd = json.loads(line)
            answer = await handle(cmd)
        except Exception as e:  # a bad command: said, not fatal here
            answer = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(answer, separators=(",", ":")) + "\n")
        sys.stdout.flush()


class LagMeter:
    """How late a 10 ms ticker runs: the event loop's own delay."""

    def __init__(self, loop):
        self.loop, self.max = loop, 0.0
        self.next = loop.time() + 0.01
        loop.call_at(self.next, self.tick)

    def tick(self):
        now = self.loop.time()
        self.max = max(self.max, now - self.next)
        self.next = now + 0.01
        self.loop.call_at(self.next, self.tick)

    def take(self):
        m, self.max = self.max, 0.0
        return m


class UpstreamStream(asyncio.Protocol):
    """One upstream connection: one request, one held event stream."""

    def __init__(self, up):
        self.up = up
        self.transport = None
        self.head = bytearray()
        self.sid = None
        self.sent = 0
        self.k = 0
        self.timer = None
        self.ended = False

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        if self.sid is not None or self.head is None:
            return  # (nothing more is expected)
        self.head += data
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            if len(self.head) > 65536:
                self.transport.close()
            return
        lines = bytes(self.head[:end]).decode("latin-1").split("\r\n")
        length = 0
        for line in lines[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v.strip())
        if len(self.head) < end + 4 + length:
            return  # the body is not all in yet
        target = lines[0].split(" ")
        m = re.fullmatch(r"/s/(\d+)", target[1]) if len(target) > 2 else None
        self.head = None
        if not m:
            self.transport.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            self.transport.close()
            return
        self.sid = int(m.group(1))
        self.up.streams[self.sid] = self
        self.transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            + event({"type": "RUN_STARTED", "threadId": "t", "runId": "r%d" % self.sid})
            + event({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
        )
        self.sent = 2
        loop = self.up.loop
        self.next = loop.time() + self.up.interval
        self.timer = loop.call_at(self.next, self.tick)

    def tick(self):
        self.k += 1
        delta = "%-20s" % ("delta %d" % self.k)  # 20 bytes
        self.transport.write(event({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": delta}))
        self.sent += 1
        self.next += self.up.interval
        self.timer = self.up.loop.call_at(self.next, self.tick)

    def end(self):
        if self.ended or self.transport.is_closing():
            return False
        self.timer.cancel()
        self.ended = True
        self.transport.write(
            event({"type": "TEXT_MESSAGE_END", "messageId": "m"})
            + event({"type": "RUN_FINISHED", "threadId": "t", "runId": "r%d" % self.sid})
            + b"0\r\n\r\n"
        )
        self.sent += 2
        self.transport.close()  # after the buffered bytes
        return True

    def connection_lost(self, exc):
        if self.timer is not None:
            self.timer.cancel()


class Upstream:
    def __init__(self, loop, interval):
        self.loop, self.interval = loop, interval
        self.streams = {}
        self.lag = LagMeter(loop)

    async def handle(self, cmd):
        lo, hi = cmd.get("lo", 0), cmd.get("hi", 0)
        if cmd["cmd"] == "counts":
            return {"sent": [self.streams[i].sent if i in self.streams else None for i in range(lo, hi)]}
        if cmd["cmd"] == "end":
            ended = sum(1 for i in range(lo, hi) if i in self.streams and self.streams[i].end())
            return {"ended": ended}
        if cmd["cmd"] == "lag":
            return {"lag": self.lag.take()}
        raise ValueError("unknown command %r" % cmd["cmd"])


def upstream_main(args):
    """`--upstream INTERVAL_MS`: serves held event streams; commands on stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the script stops it (by pid)
    raise_nofile()

    async def serve():
        loop = asyncio.get_running_loop()
        up = Upstream(loop, int(args[0]) / 1000.0)
        server = await loop.create_server(lambda: UpstreamStream(up), "127.0.0.1", 0, backlog=4096)
        print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
        await command_lines(up.handle)

    asyncio.run(serve())


SIZE, DATA, CRLF, TRAILER = range(4)


class ClientStream(asyncio.Protocol):
    """One client connection: one request, its event stream counted."""

    def __init__(self, clients, sid, request):
        self.clients, self.sid, self.request = clients, sid, request
        self.transport = None
        self.head = bytearray()
        self.chunked = None
        self.pending = bytearray()
        self.state, self.left = SIZE, 0
        self.carry = b""
        self.events = 0
        self.t_sent = None
        self.ttfe = None
        self.done = False
        self.error = None

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request)
        self.t_sent = time.monotonic()

    def fail(self, why):
        if self.error is None and not self.done:
            self.error = "stream %d: %s (%d events)" % (self.sid, why, self.events)
        self.transport.close()

    def data_received(self, data):
        now = time.monotonic()
        if self.head is not None:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                if len(self.head) > 65536:
                    self.fail("no end of the response header in 64 KiB")
                return
            lines = bytes(self.head[:end]).decode("latin-1").split("\r\n")
            status = lines[0].split(" ")
            if len(status) < 2 or status[1] != "200":
                self.fail("%r, body %r" % (lines[0], bytes(self.head[end + 4 : end + 204])))
                return
            headers = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip().lower()
            self.chunked = "chunked" in headers.get("transfer-encoding", "")
            data = bytes(self.head[end + 4 :])
            self.head = None
        body = self.dechunk(data) if self.chunked else data
        if body:
            buf = self.carry + body
            n = buf.count(b"data: ")
            if n:
                if self.events == 0:
                    self.ttfe = now - self.t_sent
                self.events += n
            self.carry = buf[-5:]
        if self.done:
            self.transport.close()

    def dechunk(self, data):
        p = self.pending
        p += data
        out = []
        i = 0
        while not self.done:
            if self.state == SIZE:
                j = p.find(b"\r\n", i)
                if j < 0:
                    break
                try:
                    size = int(bytes(p[i:j]).split(b";")[0], 16)
                except ValueError:
                    self.fail("bad chunk size line %r" % bytes(p[i:j][:40]))
                    return b""
                i = j + 2
                self.state, self.left = (TRAILER, 0) if size == 0 else (DATA, size)
            elif self.state == DATA:
                take = min(self.left, len(p) - i)
                if take == 0:
                    break
                out.append(bytes(p[i : i + take]))
                i += take
                self.left -= take
                if self.left == 0:
                    self.state = CRLF
            elif self.state == CRLF:
                if len(p) - i < 2:
                    break
                if p[i : i + 2] != b"\r\n":
                    self.fail("no CRLF after a chunk")
                    return b""
                i += 2
                self.state = SIZE
            else:  # TRAILER: lines up to an empty one
                j = p.find(b"\r\n", i)
                if j < 0:
                    break
                if j == i:
                    self.done = True
                i = j + 2
        del p[:i]
        return b"".join(out)

    def connection_lost(self, exc):
        if self.head is None and self.chunked is False:
            self.done = True  # a close-delimited body ends here
        if not self.done and self.error is None and not self.clients.closing:
            self.error = "stream %d: the connection closed before the end of the body (%s; %d events)" % (
                self.sid, exc or "EOF", self.events)


class Clients:
    def __init__(self, loop):
        self.loop = loop
        self.streams = {}
        self.closing = False
        self.lag = LagMeter(loop)
        self.ramps = []

    async def connect(self, s, port):
        try:
            await self.loop.create_connection(lambda: s, "127.0.0.1", port)
        except OSError as e:
            s.error = "stream %d: connect: %s" % (s.sid, e)

    async def ramp(self, port, lo, hi, rate, post, info):
        start = self.loop.time()
        late = 0.0
        for k, sid in enumerate(range(lo, hi)):
            target = start + k / rate
            delay = target - self.loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            elif k % 16 == 0:
                await asyncio.sleep(0)  # behind: let the connections run
            late = max(late, self.loop.time() - target)
            if post:
                body = (POST_BODY % sid).encode()
                request = (
                    b"POST /s/%d HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n"
                    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (sid, len(body), body)
                )
            else:
                request = b"GET /s/%d HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n" % sid
            s = ClientStream(self, sid, request)
            self.streams[sid] = s
            self.loop.create_task(self.connect(s, port))
        info["seconds"] = self.loop.time() - start
        info["late"] = late

    async def handle(self, cmd):
        lo, hi = cmd.get("lo", 0), cmd.get("hi", 0)
        if cmd["cmd"] == "open":
            info = {"lo": lo, "hi": hi}
            self.ramps.append(info)
            self.loop.create_task(self.ramp(cmd["port"], lo, hi, cmd["rate"], cmd["post"], info))
            return {"ok": True}
        streams = [self.streams.get(i) for i in range(lo, hi)]
        if cmd["cmd"] == "status":
            errors = [s.error for s in streams if s is not None and s.error]
            ramp = next((r for r in self.ramps if r["lo"] == lo and r["hi"] == hi), {})
            return {
                "opened": sum(1 for s in streams if s is not None and s.t_sent is not None),
                "first": sum(1 for s in streams if s is not None and s.ttfe is not None),
                "done": sum(1 for s in streams if s is not None and s.done),
                "events": [s.events if s is not None else 0 for s in streams] if cmd.get("events") else None,
                "errors": errors[:5],
                "error_count": len(errors),
                "ramp": ramp,
            }
        if cmd["cmd"] == "ttfe":
            return {"ttfe": [s.ttfe for s in streams if s is not None and s.ttfe is not None]}
        if cmd["cmd"] == "lag":
            return {"lag": self.lag.take()}
        raise ValueError("unknown command %r" % cmd["cmd"])


def clients_main(args):
    """`--clients`: opens and counts streams as told on stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the script stops it (by pid)
    raise_nofile()

    async def serve():
        clients = Clients(asyncio.get_running_loop())
        print(json.dumps({"ready": True}), flush=True)
        await command_lines(clients.handle)
        clients.closing = True

    asyncio.run(serve())


# ------------------------------------------------------------------ processes


def child_setup():
    """In every child before exec: killed when this script dies (Linux),
    even by SIGKILL, where no `finally` runs; the soft RLIMIT_NOFILE at the
    hard limit."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    raise_nofile()


class Processes:
    def __init__(self):
        self.started = []

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, preexec_fn=child_setup, **kw)
        self.started.append(p)
        return p

    def stop_all(self):
        for p in self.started:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGTERM)
                except OSError:
                    pass
        for p in self.started:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait(timeout=5)
        self.started = []


class Deadline:
    def __init__(self, seconds):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self, cap=None):
        left = self.end - time.monotonic()
        if left <= 0:
            raise OutOfTime("out of time: the deadline (%g s, --deadline) passed" % self.seconds)
        return left if cap is None else min(left, cap)

    def sleep(self, seconds):
        time.sleep(self.left(seconds))


def run(argv, deadline, cap=None, **kw):
    """A command's stdout (bytes); a failure past its time or on a status
    other than 0."""
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, timeout=deadline.left(cap), **kw)
    except subprocess.TimeoutExpired:
        raise Failure("%s: out of time" % " ".join(argv))
    if r.returncode != 0:
        raise Failure("%s: exit status %d" % (" ".join(argv), r.returncode))
    return r.stdout


class Child:
    """A child of this script (`--upstream`, `--clients`) spoken to in JSON
    lines: a command on its stdin, one answer on its stdout."""

    def __init__(self, procs, what, argv):
        self.what = what
        self.proc = procs.start(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def answer(self, deadline, cap=30):
        try:
            line = self.lines.get(timeout=deadline.left(cap))
        except queue.Empty:
            deadline.left()
            raise Failure("the %s did not answer within %g s" % (self.what, cap))
        if line is None:
            raise Failure("the %s exited (status %s)" % (self.what, self.proc.wait()))
        answer = json.loads(line)
        if "error" in answer:
            raise Failure("the %s: %s" % (self.what, answer["error"]))
        return answer

    def ask(self, deadline, cmd, **args):
        args["cmd"] = cmd
        try:
            self.proc.stdin.write((json.dumps(args) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            raise Failure("the %s is gone (status %s)" % (self.what, self.proc.poll()))
        return self.answer(deadline)


# ------------------------------------------------------------------ /proc


def schedstat_ns(pid, field=0):
    """Nanoseconds on a CPU (field 1: waiting on a run queue for one),
    summed over the process's threads."""
    total = 0
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        try:
            with open("%s/%s/schedstat" % (task, tid), "rb") as f:
                total += int(f.read().split()[field])
        except (OSError, IndexError, ValueError):
            pass  # a thread gone meanwhile
    return total


def vm_rss(pid):
    """VmRSS in bytes."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise Failure("no VmRSS for pid %d" % pid)


def median_rss(pid, deadline):
    """The median of RSS_READS reads of VmRSS over RSS_SPAN seconds."""
    reads = []
    for i in range(RSS_READS):
        if i:
            deadline.sleep(RSS_SPAN / (RSS_READS - 1))
        reads.append(vm_rss(pid))
    return statistics.median(reads), reads


# ------------------------------------------------------------------ setup


def usage(msg):
    sys.stderr.write("envoy-memory.py: %s\n(see the usage at the top of %s)\n" % (msg, __file__))
    sys.exit(2)


def parse_args(argv):
    opts = {"envoy": None, "filters": [], "config": None, "streams": [1000], "interval_ms": 1000,
            "ramp": 500.0, "post": False, "deadline": None, "http_proxy": None}
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        if a == "--post":
            opts["post"] = True
        elif a in ("--envoy", "--filter", "--config", "--streams", "--interval-ms", "--ramp", "--deadline",
                   "--http-proxy"):
            if not args:
                usage("%s needs a value" % a)
            v = args.pop(0)
            if a == "--filter":
                label, eq, path = v.partition("=")
                if not eq or not re.fullmatch(r"[A-Za-z0-9_-]+", label) or label == "plain":
                    usage("--filter LABEL=MODULE (LABEL: letters, digits, _ and -; not plain): %r" % v)
                if label in [l for l, _ in opts["filters"]]:
                    usage("--filter %s given twice" % label)
                if not os.path.isfile(path):
                    usage("--filter %s: no file %s" % (label, path))
                if path.endswith(".so"):
                    if not re.fullmatch(r"lib\w+\.so", os.path.basename(path)):
                        usage("--filter %s: a dynamic module is a file libNAME.so: %s" % (label, path))
                elif not path.endswith(".wasm"):
                    usage("--filter %s: a .so (dynamic module) or a .wasm (proxy-wasm): %s" % (label, path))
                opts["filters"].append((label, os.path.abspath(path)))
            elif a == "--http-proxy":
                if not (os.path.isfile(v) and os.access(v, os.X_OK)):
                    usage("--http-proxy: no executable %s" % v)
                opts["http_proxy"] = os.path.abspath(v)
            elif a == "--streams":
                try:
                    opts["streams"] = [int(n) for n in v.split(",")]
                except ValueError:
                    usage("--streams takes N or N,N,...: %r" % v)
                if not all(n >= 1 for n in opts["streams"]):
                    usage("--streams: at least 1 stream")
            elif a in ("--interval-ms", "--deadline", "--ramp"):
                try:
                    n = float(v) if a == "--ramp" else int(v)
                except ValueError:
                    usage("%s takes a number: %r" % (a, v))
                if n <= 0:
                    usage("%s must be positive" % a)
                opts[a[2:].replace("-", "_")] = n
            else:
                opts[a[2:]] = v
        elif a in ("--upstream", "--clients"):
            usage("%s is this script's own child mode (the first argument)" % a)
        else:
            usage("unknown argument %s" % a)
    if opts["http_proxy"] and (opts["envoy"] or opts["filters"] or opts["config"] is not None):
        usage("--http-proxy measures http_proxy instead of Envoy: not with --envoy, --filter or --config")
    if opts["config"] is None:
        opts["config"] = "{}"
    try:
        config = json.loads(opts["config"])
    except ValueError as e:
        usage("--config is not JSON: %s" % e)
    if not isinstance(config, dict):
        usage("--config must be a JSON object")
    if opts["deadline"] is None:
        per = [60 + 2 * n / opts["ramp"] + 12 * opts["interval_ms"] / 1000.0 for n in opts["streams"]]
        configs = 2 if opts["http_proxy"] else 1 + len(opts["filters"])
        opts["deadline"] = int(120 + configs * sum(per))
    return opts


def find_envoy(deadline):
    say("installing Envoy if needed (scripts/install-envoy.sh)")
    out = run([os.path.join(ROOT, "scripts", "install-envoy.sh")], deadline, stderr=subprocess.DEVNULL)
    lines = out.decode().strip().splitlines()
    if not lines:
        raise Failure("scripts/install-envoy.sh printed no path")
    return lines[-1]


def dynamic_module_name(path):
    """Envoy's name for the dynamic module at PATH (`libNAME.so`)."""
    base = os.path.basename(path)
    return base[len("lib") : -len(".so")]


def envoy_yaml(label, module, config, upstream_port):
    """examples/proxy-wasm/envoy.yaml's shape: one listener, `listener`,
    with the filter (none for plain). Strings are JSON-quoted (JSON
    strings are YAML scalars)."""
    q = json.dumps
    if module is None:
        filter_yaml = ""
    elif module.endswith(".so"):
        filter_yaml = """
          - name: envoy.filters.http.dynamic_modules
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter
              dynamic_module_config: { name: %(module)s }
              filter_name: agui_stream
              filter_config:
                "@type": type.googleapis.com/google.protobuf.StringValue
                value: %(config)s""" % {"module": q(dynamic_module_name(module)), "config": q(config)}
    else:
        filter_yaml = """
          - name: envoy.filters.http.wasm
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm
              config:
                name: %(name)s
                root_id: agui_stream
                configuration:
                  "@type": type.googleapis.com/google.protobuf.StringValue
                  value: %(config)s
                vm_config:
                  vm_id: %(name)s
                  runtime: envoy.wasm.runtime.v8
                  code:
                    local: { filename: %(wasm)s }""" % {
            "name": q("agui_stream_" + label), "config": q(config), "wasm": q(module)}
    return """admin:
  address:
    socket_address: { address: 127.0.0.1, port_value: 0 }

static_resources:
  listeners:
  - name: listener
    address:
      socket_address: { address: 127.0.0.1, port_value: 0 }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: %(label)s
          route_config:
            virtual_hosts:
            - name: backend
              domains: ["*"]
              routes:
              - match: { prefix: "/" }
                route: { cluster: backend, timeout: 0s }
          http_filters:%(filter)s
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: backend
    type: STATIC
    connect_timeout: 2s
    # The defaults (1024 connections, 1024 pending requests, 1024
    # requests) would answer 503 past about 2048 open streams.
    circuit_breakers:
      thresholds:
      - { max_connections: 1000000, max_pending_requests: 1000000, max_requests: 1000000 }
    load_assignment:
      cluster_name: backend
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: %(port)d }
""" % {"label": q(label), "filter": filter_yaml, "port": upstream_port}


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def say(*a):
    print(*a, flush=True)


def start_envoy(envoy, label, module, opts, upstream_port, procs, work, deadline, state):
    name = "%s-%d" % (label, state["n"])
    yaml_path = os.path.join(work, name + ".yaml")
    with open(yaml_path, "w") as f:
        f.write(envoy_yaml(label, module, opts["config"], upstream_port))
    admin_path = os.path.join(work, name + ".admin")
    log_path = os.path.join(work, name + ".log")
    state["log"] = log_path
    env = dict(os.environ)
    if module is not None and module.endswith(".so"):
        env["ENVOY_DYNAMIC_MODULES_SEARCH_PATH"] = os.path.dirname(module)
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        proc = procs.start(
            [envoy, "-c", yaml_path, "--concurrency", "1", "--disable-hot-restart",
             "--admin-address-path", admin_path, "-l", "info"],
            stdout=log, stderr=subprocess.STDOUT, env=env,
        )
    limit = time.monotonic() + deadline.left(60)
    while True:
        if proc.poll() is not None:
            raise Failure("Envoy (%s) exited (status %d) before it was ready" % (label, proc.returncode))
        if os.path.isfile(admin_path) and os.path.getsize(admin_path) > 0:
            with open(admin_path) as f:
                admin = "http://" + f.read().strip()
            try:
                if http_get(admin + "/ready").strip() == "LIVE":
                    break
            except OSError:
                pass
        if time.monotonic() > limit:
            raise Failure("Envoy (%s) not ready within %.0f s" % (label, limit - t0))
        time.sleep(0.1)
    statuses = json.loads(http_get(admin + "/listeners?format=json"))["listener_statuses"]
    port = {l["name"]: l["local_address"]["socket_address"]["port_value"] for l in statuses}["listener"]
    return proc, admin, port, time.monotonic() - t0


def start_http_proxy(binary, label, flags, upstream_port, procs, work, deadline, state):
    """http_proxy with `flags`, on a port of its own: (process, None (no
    admin), port, seconds to ready). Its stdout (`listening on ADDR`) and
    stderr (its log) go to files in `work`."""
    name = "%s-%d" % (label, state["n"])
    out_path = os.path.join(work, name + ".out")
    log_path = os.path.join(work, name + ".log")
    state["log"] = log_path
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(log_path, "wb") as log:
        proc = procs.start(
            [binary, "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:%d" % upstream_port] + flags,
            stdin=subprocess.DEVNULL, stdout=out, stderr=log,
        )
    limit = time.monotonic() + deadline.left(60)
    while True:
        if proc.poll() is not None:
            raise Failure("http_proxy (%s) exited (status %d) before it was ready" % (label, proc.returncode))
        with open(out_path) as f:
            m = re.match(r"listening on 127\.0\.0\.1:(\d+)\n", f.read())
        if m:
            return proc, None, int(m.group(1)), time.monotonic() - t0
        if time.monotonic() > limit:
            raise Failure("http_proxy (%s) not listening within %.0f s" % (label, limit - t0))
        time.sleep(0.05)


def heap_allocated(admin):
    """tcmalloc's bytes in use (the admin's /memory `allocated`); None
    without an admin (http_proxy)."""
    if admin is None:
        return None
    try:
        return int(json.loads(http_get(admin + "/memory"))["allocated"])
    except (OSError, ValueError, KeyError):
        return None


def wait_streams(clients, lo, hi, deadline, seconds, until, what, envoy_proc, state):
    """Polls the clients' status for streams lo..hi until `until(status)`;
    a failure on any stream's error, Envoy's exit or the time."""
    limit = time.monotonic() + seconds
    while True:
        status = clients.ask(deadline, "status", lo=lo, hi=hi)
        state["status"] = status
        if status["error_count"]:
            raise Failure("%d stream(s) failed: %s" % (status["error_count"], "; ".join(status["errors"][:3])))
        if envoy_proc.poll() is not None:
            raise Failure("%s exited (status %d)" % (state["server"], envoy_proc.returncode))
        if until(status):
            return status
        if time.monotonic() > limit:
            raise Failure("%s: not within %.0f s (opened %d, first event %d, ended %d of %d)" % (
                what, seconds, status["opened"], status["first"], status["done"], hi - lo))
        deadline.sleep(0.2)


def check_events(upstream, clients, lo, hi, deadline, final):
    """Each client's events against those the upstream sent (read first):
    equal at the end (`final`), one in flight allowed otherwise. Returns
    (received, sent) in total."""
    sent = upstream.ask(deadline, "counts", lo=lo, hi=hi)["sent"]
    got = clients.ask(deadline, "status", lo=lo, hi=hi, events=True)["events"]
    bad = []
    for i, (s, g) in enumerate(zip(sent, got)):
        if s is None or (g != s if final else not s - 1 <= g <= s + 1):
            bad.append("stream %d: %d events of %s sent" % (lo + i, g, s))
    if bad:
        raise Failure("%d stream(s) missed events%s: %s" % (
            len(bad), " (after its end)" if final else "", "; ".join(bad[:5])))
    return sum(got), sum(sent)


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(math.ceil(p / 100.0 * len(v))) - 1))]


# ------------------------------------------------------------------ one run


def measure(envoy, label, module, n, opts, procs, work, deadline, state):
    """One Envoy (with --http-proxy: one http_proxy, `module` its flags),
    its upstream and its clients, for one configuration and N."""
    t_start = time.monotonic()
    state["n"] = n
    interval = opts["interval_ms"] / 1000.0
    me = os.path.abspath(__file__)
    upstream = Child(procs, "upstream", [sys.executable, me, "--upstream", str(opts["interval_ms"])])
    upstream_port = upstream.answer(deadline, 15)["port"]
    clients = Child(procs, "clients", [sys.executable, me, "--clients"])
    clients.answer(deadline, 15)
    if opts["http_proxy"]:
        proc, admin, port, ready_s = start_http_proxy(opts["http_proxy"], label, module, upstream_port, procs, work,
                                                      deadline, state)
    else:
        proc, admin, port, ready_s = start_envoy(envoy, label, module, opts, upstream_port, procs, work, deadline,
                                                 state)
    server = state["server"]
    state["envoy"] = proc
    pids = {"envoy": proc.pid, "clients": clients.proc.pid, "upstream": upstream.proc.pid}

    # Warm-up.
    w_lo, w_hi = 0, WARM_STREAMS
    clients.ask(deadline, "open", port=port, lo=w_lo, hi=w_hi, rate=opts["ramp"], post=opts["post"])
    wait_streams(clients, w_lo, w_hi, deadline, 30 + WARM_EVENTS * interval,
                 lambda s: s["first"] == WARM_STREAMS and min(
                     clients.ask(deadline, "status", lo=w_lo, hi=w_hi, events=True)["events"]) >= WARM_EVENTS,
                 "warm-up", proc, state)
    upstream.ask(deadline, "end", lo=w_lo, hi=w_hi)
    wait_streams(clients, w_lo, w_hi, deadline, 30, lambda s: s["done"] == WARM_STREAMS, "warm-up's end", proc,
                 state)
    check_events(upstream, clients, w_lo, w_hi, deadline, final=True)
    deadline.sleep(1.0)

    rss_idle, _ = median_rss(proc.pid, deadline)
    heap_idle = heap_allocated(admin)

    # N streams.
    lo, hi = WARM_STREAMS, WARM_STREAMS + n
    clients.ask(deadline, "lag")
    upstream.ask(deadline, "lag")
    t_open = time.monotonic()
    ramp_cpu = [schedstat_ns(proc.pid, 0), schedstat_ns(proc.pid, 1)]
    clients.ask(deadline, "open", port=port, lo=lo, hi=hi, rate=opts["ramp"], post=opts["post"])
    status = wait_streams(clients, lo, hi, deadline, 30 + 2 * n / opts["ramp"],
                          lambda s: s["first"] == n, "every stream's first event", proc, state)
    open_s = time.monotonic() - t_open
    ramp_cpu = [(schedstat_ns(proc.pid, 0) - ramp_cpu[0]) / 1e9, (schedstat_ns(proc.pid, 1) - ramp_cpu[1]) / 1e9]
    ttfe = [t * 1000 for t in clients.ask(deadline, "ttfe", lo=lo, hi=hi)["ttfe"]]
    ramp = status["ramp"]
    client_lag = clients.ask(deadline, "lag")["lag"] * 1000
    upstream_lag = upstream.ask(deadline, "lag")["lag"] * 1000

    deadline.sleep(SETTLE_INTERVALS * interval)
    rss_open, reads = median_rss(proc.pid, deadline)
    heap_open = heap_allocated(admin)

    window = interval * max(1, math.ceil(CPU_MIN_WINDOW / interval - 1e-9))
    t0 = time.monotonic()
    cpu0 = {k: schedstat_ns(pid) for k, pid in pids.items()}
    deadline.sleep(window)
    cpu1 = {k: schedstat_ns(pid) for k, pid in pids.items()}
    elapsed = time.monotonic() - t0
    cpu = {k: (cpu1[k] - cpu0[k]) / 1e9 / elapsed * 100 for k in pids}

    received, sent = check_events(upstream, clients, lo, hi, deadline, final=False)
    t_end = time.monotonic()
    upstream.ask(deadline, "end", lo=lo, hi=hi)
    wait_streams(clients, lo, hi, deadline, 30 + n / 1000.0, lambda s: s["done"] == n, "every stream's end", proc,
                 state)
    check_events(upstream, clients, lo, hi, deadline, final=True)
    end_s = time.monotonic() - t_end
    if proc.poll() is not None:
        raise Failure("%s exited (status %d)" % (server, proc.returncode))
    procs.stop_all()

    r = {
        "label": label, "n": n, "rss_idle": rss_idle, "rss_open": rss_open,
        "kb": (rss_open - rss_idle) / n / 1000.0,
        "heap_kb": (heap_open - heap_idle) / n / 1000.0 if heap_idle is not None and heap_open is not None else None,
        "cpu": cpu, "window": elapsed, "ttfe": ttfe, "received": received, "sent": sent,
        "seconds": time.monotonic() - t_start,
    }
    say("  %-8s N=%d: %s ready in %.1f s; %d opened in %.1f s (ramp %.1f s, %.0f/s, at most %.0f ms late; "
        "every first event after %.1f s); meanwhile %s %.2f s on a CPU, %.2f s waiting for one; client loop at most "
        "%.0f ms late, upstream's %.0f ms; load average %.1f" % (
            label, n, server, ready_s, n, open_s, ramp.get("seconds", 0), n / max(ramp.get("seconds", 0), 1e-9),
            ramp.get("late", 0) * 1000, open_s, server, ramp_cpu[0], ramp_cpu[1], client_lag, upstream_lag,
            os.getloadavg()[0]))
    say("  %-8s RSS idle %.1f MB, open %.1f MB (reads %s MB) -> %.1f KB/stream%s; CPU over %.1f s: %s %.1f%%, "
        "clients %.1f%%, upstream %.1f%%; TTFE p50 %.1f p99 %.1f max %.1f ms; events %d/%d; all ended in %.1f s; "
        "%.1f s in all" % (
            label, rss_idle / 1e6, rss_open / 1e6, " ".join("%.1f" % (x / 1e6) for x in reads), r["kb"],
            "" if r["heap_kb"] is None else " (heap %.1f KB/stream)" % r["heap_kb"], elapsed, server, cpu["envoy"],
            cpu["clients"], cpu["upstream"], statistics.median(ttfe), percentile(ttfe, 99), max(ttfe),
            received, sent, end_s, r["seconds"]))
    return r


# ------------------------------------------------------------------ main


def main(opts, procs, work, state):
    t_start = time.monotonic()
    deadline = Deadline(opts["deadline"])
    server = state["server"]
    if opts["http_proxy"]:
        envoy = None
        if not (os.path.isfile(opts["http_proxy"]) and os.access(opts["http_proxy"], os.X_OK)):
            raise Failure("no http_proxy at %s" % opts["http_proxy"])
    else:
        envoy = opts["envoy"] or find_envoy(deadline)
        if not (os.path.isfile(envoy) and os.access(envoy, os.X_OK)):
            raise Failure("no envoy at %s" % envoy)
    hard = raise_nofile()
    need = 2 * max(opts["streams"]) + 256
    if hard < need:
        raise Failure("RLIMIT_NOFILE's hard limit is %d; %d streams need about %d descriptors in %s" % (
            hard, max(opts["streams"]), need, server))
    if opts["http_proxy"]:
        st = os.stat(opts["http_proxy"])
        say("http_proxy %s (%d bytes, built %s)" % (
            opts["http_proxy"], st.st_size, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.st_mtime))))
    else:
        version = run([envoy, "--version"], deadline, cap=30).decode()
        m = re.search(r"[0-9a-f]+/[0-9.]+/[A-Za-z]+/[A-Za-z]+/[A-Za-z]+", version)
        say("envoy  %s (%s)" % (envoy, m.group(0) if m else version.strip()))
    for label, module in opts["filters"]:
        say("filter %s: %s (%d bytes, %s)" % (
            label, module, os.path.getsize(module), "dynamic module" if module.endswith(".so") else "proxy-wasm, V8"))
    what = ("configurations passthrough (--passthrough) and http_proxy (its defaults)" if opts["http_proxy"]
            else "filter configuration %s" % opts["config"])
    say("%s; streams %s; one event per stream every %d ms; ramp %g streams/s; %s; "
        "RLIMIT_NOFILE %d; deadline %d s" % (
            what, ",".join(map(str, opts["streams"])), opts["interval_ms"], opts["ramp"],
            "POST with a RunAgentInput body" if opts["post"] else "GET", hard, opts["deadline"]))

    if opts["http_proxy"]:
        configs = [("passthrough", ["--passthrough"]), ("http_proxy", [])]
    else:
        configs = [("plain", None)] + opts["filters"]
    base = configs[0][0]  # the ratios' denominator
    width = 11 if opts["http_proxy"] else 10  # the tables' first column
    results, failed = {}, {}
    for n in opts["streams"]:
        say("")
        say("N=%d" % n)
        for label, module in configs:
            state.update(log=None, envoy=None, status=None)
            t_run = time.monotonic()
            try:
                results[(label, n)] = measure(envoy, label, module, n, opts, procs, work, deadline, state)
            except OutOfTime:
                raise
            except Failure as e:
                failed[(label, n)] = str(e)
                say("  %-8s N=%d: FAIL after %.1f s: %s" % (label, n, time.monotonic() - t_run, e))
                for line in failure_context(state):
                    say("  %-8s   %s" % (label, line))
                procs.stop_all()

    for n in opts["streams"]:
        plain = results[(base, n)]["kb"] if (base, n) in results else 0
        say("")
        say("N=%d open streams, one event each every %d ms (RSS: %s's VmRSS, median of %d reads over %g s; "
            "MB = 10^6 bytes, KB = 1000 bytes; KB/stream = (open - idle) / N; heap: %s)" % (
                n, opts["interval_ms"], server, RSS_READS, RSS_SPAN,
                "not counted" if opts["http_proxy"] else "tcmalloc's allocated"))
        say("  %-*s %9s %9s %10s %8s %8s %7s %22s %21s" % (
            width, "config", "idle MB", "open MB", "KB/stream", "x pass" if opts["http_proxy"] else "x plain",
            "heap KB", "CPU %", "1st event p50/p99/max ms", "events got/sent"))
        for label, _ in configs:
            if (label, n) in failed:
                say("  %-*s FAILED: %s" % (width, label, failed[(label, n)][:150]))
                continue
            r = results[(label, n)]
            say("  %-*s %9.1f %9.1f %10.1f %8s %8s %7.1f %22s %21s" % (
                width, label, r["rss_idle"] / 1e6, r["rss_open"] / 1e6, r["kb"],
                "%.2f" % (r["kb"] / plain) if plain > 0 else "-",
                "-" if r["heap_kb"] is None else "%.1f" % r["heap_kb"], r["cpu"]["envoy"],
                "%.1f/%.1f/%.1f" % (statistics.median(r["ttfe"]), percentile(r["ttfe"], 99), max(r["ttfe"])),
                "%d/%d" % (r["received"], r["sent"])))
    say("")
    say("wall time %.1f s (%s)" % (time.monotonic() - t_start, ", ".join(
        "%s N=%d %.0f s" % (l, n, r["seconds"]) for (l, n), r in results.items())))
    for n in opts["streams"]:
        plain = results[(base, n)]["kb"] if (base, n) in results else 0
        for label, _ in configs:
            if (label, n) in failed:
                say("memory %s %d nan nan" % (label, n))
                continue
            kb = results[(label, n)]["kb"]
            say("memory %s %d %.1f %s" % (label, n, kb, "%.3f" % (kb / plain) if plain > 0 else "nan"))
    if failed:
        raise Failure("%d of %d runs failed: %s" % (len(failed), len(failed) + len(results), ", ".join(
            "%s N=%d" % k for k in failed)))


def failure_context(state):
    """What a failed run got to: the clients' last status, Envoy's RSS,
    the errors in its log (else its last lines)."""
    lines = []
    status, proc = state.get("status"), state.get("envoy")
    if status:
        lines.append("streams (this phase): %d opened, %d with a first event, %d ended, %d failed" % (
            status["opened"], status["first"], status["done"], status["error_count"]))
    if proc is not None and proc.poll() is None:
        try:
            lines.append("%s's RSS now %.1f MB" % (state["server"], vm_rss(proc.pid) / 1e6))
        except (OSError, Failure):
            pass
    log = state.get("log")
    if log and os.path.isfile(log):
        with open(log, "rb") as f:
            text = f.read().decode("utf-8", "replace").splitlines()
        errors = [l for l in text if "][error]" in l or "][critical]" in l or l.startswith("http_proxy:")]
        lines.append("%s's log (%s), %s:" % (
            state["server"], os.path.basename(log), "its errors" if errors else "last lines"))
        lines += ["  " + l for l in (errors[:8] if errors else text[-8:])]
    state["log"] = None  # said here, not again at the end
    return lines


def entry():
    if sys.argv[1:2] == ["--upstream"]:
        upstream_main(sys.argv[2:])
        return 0
    if sys.argv[1:2] == ["--clients"]:
        clients_main(sys.argv[2:])
        return 0
    opts = parse_args(sys.argv[1:])
    procs = Processes()
    work = tempfile.mkdtemp(prefix="agui-envoy-memory.")
    state = {"log": None, "n": 0, "server": "http_proxy" if opts["http_proxy"] else "Envoy"}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    status, failure = 1, None
    try:
        main(opts, procs, work, state)
        status = 0
    except Failure as e:
        failure = str(e)
    except KeyboardInterrupt:
        failure, status = "interrupted", 130
    except SystemExit as e:
        failure = "stopped (%s)" % e.code
        status = e.code if isinstance(e.code, int) and e.code else 1
    except Exception as e:
        failure = "%s: %s" % (type(e).__name__, e)
    finally:
        procs.stop_all()
        if status != 0:
            log = state["log"]
            if log and os.path.isfile(log):
                with open(log, "rb") as f:
                    tail = f.read().decode("utf-8", "replace").splitlines()[-15:]
                say("%s's log (%s), last lines:" % (state["server"], os.path.basename(log)))
                for line in tail:
                    say("  " + line)
            say("FAIL %s" % failure)
        shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(entry())
