#!/usr/bin/env python3
"""What the proxy-wasm filter (examples/proxy-wasm) and the Envoy dynamic
module (examples/envoy-module) cost Envoy's throughput (Python 3 stdlib
only). A measurement, not a test.

    scripts/envoy-throughput.py [--envoy ENVOY] --filter LABEL=MODULE
        [--filter LABEL=MODULE ...] [--rounds N] [--config JSON]
        [--agui AGUI] [--deadline S] [STREAM.sse ...]

    e.g. scripts/envoy-throughput.py --filter default=examples/proxy-wasm/\\
         target/wasm32-unknown-unknown/release/agui_stream_proxy_wasm.wasm \\
         --filter native=examples/envoy-module/target/release/libagui_stream_envoy.so

One Envoy (--concurrency 1, admin and listeners on 127.0.0.1, port 0) with
one listener without the filter (`plain`: the router to the upstream) and
one per --filter MODULE (`LABEL`: the filter, then the router). A `.wasm`
is a proxy-wasm filter (its own vm_id, V8, root_id agui_stream, the plugin
configuration --config, default `{}`: the default configuration); a
`libNAME.so` a dynamic module (`dynamic_module_config: {name: NAME}`,
filter_config --config; Envoy's ENVOY_DYNAMIC_MODULES_SEARCH_PATH is the
.so's directory, one for all of them). The YAML follows
examples/proxy-wasm/envoy.yaml and examples/envoy-module/envoy.yaml (route
`timeout: 0s`) and is written into a temporary directory.

The upstream (this script, `--upstream`, as a child process: the client's
reads do not share a GIL with its writes) answers `GET /NAME` with the
stream NAME as `text/event-stream` with a `content-length`: the headers in
one `sendall`, then the whole body in one `sendall`, then it closes the
connection. The client (raw sockets, `recv_into` a preallocated buffer)
sends `Connection: close` and reads to EOF; without the filter Envoy
forwards the content-length, with it the body comes chunked (the filter
removes the length); the body is de-chunked after the timing. One
connection per request, at both ends: every request costs Envoy the same
work (accept, connect upstream, the body, two closes), none inherits a
pooled upstream connection or socket buffers grown by the previous,
possibly other listener's, response, and EOF ends both framings the same
way. Setting up two loopback connections takes well under a millisecond,
against several ms (plain) to over 100 ms (filtered) for a multi-MB
response, and a response's time does not depend on what the one before it
left behind.

Timed: from sending the request to EOF (the last byte). MB/s is the
stream's size (10^6 bytes) over that time. Envoy's CPU for a response: the
sum over Envoy's threads of /proc/PID/task/*/schedstat's first field (ns on
a CPU), read before the request and after its EOF once Envoy has gone idle
(two equal reads 2 ms apart, 100 ms at most), so its closing work counts.

Streams: the files given, else the benches' (benches/common):
target/bench-streams/text-5mb.sse (`scripts/gen_stream.py --profile text
--size 5MB --seed 5`) and mix-10mb.sse (`--size 10MB --seed 10`),
generated if missing. Each listener gets each stream once to warm up, then
every round requests every listener once per stream, the listeners' order
rotated each round (default 11 rounds). Every body is checked: without the
filter, the file; with it, what `agui gateway --chunk 16384 --buffer B
[flags from --config] FILE` prints (B the configuration's buffer, default
65536; its exit status must be 0, a valid stream, or 1, a violation
rewritten). A mismatch fails the script. Whether that output is the input
is printed: for text-5mb it is; mix-10mb's chunk-form events
(TEXT_MESSAGE_CHUNK ...) come out expanded, so its output is longer.

Prints the Envoy version, the modules' sizes, then per stream a table: per
listener the median MB/s (min-max) and the median Envoy CPU ms per
response (min-max); per filter `LABEL / plain`, the median of the rounds'
ratios (min-max). Last, one line per stream and filter:

    ratio STREAM LABEL MEDIAN MIN MAX

Options: --envoy (default: the last line of scripts/install-envoy.sh),
--agui (default: `cargo build --release -p agui-cli`, then the target
directory's release/agui), --deadline (seconds for the whole script,
default 300 + 60 per round; a request times out after 60 s, or sooner at
the deadline).

Exit status: 0 whatever the numbers; 1 when something does not work (Envoy
does not start, a request fails or times out, a body is not what it should
be, out of time); 2 on a usage error. Every process started is stopped by
pid on exit (also on Ctrl-C, SIGTERM or an exception, and killed with this
script on Linux); the temporary directory is removed at the end (on
a failure the end of Envoy's log is printed first).
"""

import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from sse_upstream import read_head  # scripts/, beside this one

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUEST_TIMEOUT = 60.0
DEFAULT_STREAMS = [
    ("text-5mb", ["--profile", "text", "--size", "5MB", "--seed", "5"]),
    ("mix-10mb", ["--size", "10MB", "--seed", "10"]),
]
# The plugin configuration's keys and the `agui gateway` flags giving the
# same body; the keys listed in NEUTRAL do not change the body.
NEUTRAL = {"request_identity", "log_streams", "keepalive_ms"}
FILTER_DEFAULT_BUFFER = 65536


class Failure(Exception):
    """Something does not work: the script exits 1."""


# ------------------------------------------------------------------ upstream


def upstream_main(args):
    """`--upstream NAME=PATH...`: serves each file at /NAME until killed."""
    bodies = {}
    for a in args:
        name, path = a.split("=", 1)
        with open(path, "rb") as f:
            bodies[name] = f.read()
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(128)
    print("listening on %d" % server.getsockname()[1], flush=True)

    def handle(sock):
        try:
            head = read_head(sock, REQUEST_TIMEOUT)
            if head is None:
                return
            target = head.split(b"\r\n", 1)[0].split(b" ")
            body = bodies.get(target[1].decode("latin-1").lstrip("/")) if len(target) > 2 else None
            if target[0] != b"GET" or body is None:
                sock.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                return
            sock.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"content-length: %d\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n" % len(body)
            )
            sock.sendall(body)
            sock.shutdown(socket.SHUT_WR)
            # Envoy closes its side once the body is in; wait for that (a
            # close with unread input would be a RST).
            while sock.recv(65536):
                pass
        except OSError:
            pass
        finally:
            sock.close()

    while True:
        sock, _ = server.accept()
        threading.Thread(target=handle, args=(sock,), daemon=True).start()


# ------------------------------------------------------------------ processes


def die_with_parent():
    """Child processes are killed when this script dies (Linux), even by
    SIGKILL, where no `finally` runs."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Processes:
    def __init__(self):
        self.started = []

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, preexec_fn=die_with_parent, **kw)
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
            raise Failure("out of time: the deadline (%g s, --deadline) passed" % self.seconds)
        return left if cap is None else min(left, cap)


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


# ------------------------------------------------------------------ client


def schedstat_ns(pid):
    """Nanoseconds on a CPU, summed over the process's threads."""
    total = 0
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        try:
            with open("%s/%s/schedstat" % (task, tid), "rb") as f:
                total += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            pass  # a thread gone meanwhile
    return total


def settled_schedstat_ns(pid):
    """schedstat_ns once two reads 2 ms apart agree (Envoy idle), 100 ms at most."""
    last = schedstat_ns(pid)
    for _ in range(50):
        time.sleep(0.002)
        now = schedstat_ns(pid)
        if now == last:
            break
        last = now
    return last


class Response:
    def __init__(self, buf, n):
        self.buf, self.n = buf, n
        head_end = buf.find(b"\r\n\r\n", 0, n)
        if head_end < 0:
            raise Failure("no complete response header (%d bytes came)" % n)
        lines = bytes(buf[:head_end]).decode("latin-1").split("\r\n")
        status = lines[0].split(" ")
        self.status = int(status[1]) if len(status) > 1 and status[1].isdigit() else 0
        self.headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.body_at = head_end + 4

    def framing(self):
        if "chunked" in self.headers.get("transfer-encoding", ""):
            return "chunked"
        return "length" if "content-length" in self.headers else "close"

    def body(self):
        """The body, de-chunked; a failure if it is not complete."""
        mv = memoryview(self.buf)
        at, end = self.body_at, self.n
        framing = self.framing()
        if framing == "length":
            length = int(self.headers["content-length"])
            if end - at != length:
                raise Failure("content-length %d, %d bytes came" % (length, end - at))
            return mv[at:end]
        if framing == "close":
            return mv[at:end]
        parts = []
        while True:
            line_end = self.buf.find(b"\r\n", at, end)
            if line_end < 0:
                raise Failure("chunked body cut at %d (no last chunk)" % (at - self.body_at))
            size = int(bytes(self.buf[at:line_end]).split(b";")[0], 16)
            at = line_end + 2
            if size == 0:
                if self.buf.find(b"\r\n", at, end) < 0:
                    raise Failure("chunked body: no end after the last chunk")
                return b"".join(parts)
            if at + size + 2 > end or self.buf[at + size : at + size + 2] != b"\r\n":
                raise Failure("chunked body cut in a chunk of %d bytes" % size)
            parts.append(mv[at : at + size])
            at += size + 2


def request(port, name, buf, deadline):
    """GET /NAME with Connection: close, read to EOF into buf (grown if it
    fills). Returns (seconds from sending to EOF, bytes read, buf)."""
    timeout = deadline.left(REQUEST_TIMEOUT)
    stop = time.monotonic() + timeout
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        req = (
            "GET /%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            "Connection: close\r\n\r\n" % name
        ).encode()
        mv = memoryview(buf)
        n = 0
        t0 = time.perf_counter()
        sock.sendall(req)
        while True:
            if n == len(buf):
                buf = buf + bytearray(len(buf))
                mv = memoryview(buf)
            left = stop - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            sock.settimeout(left)
            got = sock.recv_into(mv[n:])
            if not got:
                break
            n += got
        elapsed = time.perf_counter() - t0
    except socket.timeout:
        raise Failure("GET /%s on port %d: no end within %.1f s (%g s a request, or the deadline)" % (
            name, port, timeout, REQUEST_TIMEOUT))
    except OSError as e:
        raise Failure("GET /%s on port %d: %s" % (name, port, e))
    finally:
        sock.close()
    return elapsed, n, buf


# ------------------------------------------------------------------ setup


def usage(msg):
    sys.stderr.write("envoy-throughput.py: %s\n(see the usage at the top of %s)\n" % (msg, __file__))
    sys.exit(2)


def parse_args(argv):
    opts = {"envoy": None, "agui": None, "filters": [], "rounds": 11, "config": "{}", "deadline": None, "streams": []}
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        if a in ("--envoy", "--agui", "--filter", "--rounds", "--config", "--deadline"):
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
                if path.endswith(".so") and not re.fullmatch(r"lib\w+\.so", os.path.basename(path)):
                    usage("--filter %s: a dynamic module is a file libNAME.so: %s" % (label, path))
                opts["filters"].append((label, os.path.abspath(path)))
            elif a in ("--rounds", "--deadline"):
                try:
                    opts[a[2:]] = int(v)
                except ValueError:
                    usage("%s takes a number: %r" % (a, v))
            else:
                opts[a[2:]] = v
        elif a.startswith("-"):
            usage("unknown option %s" % a)
        else:
            if not os.path.isfile(a):
                usage("no stream file %s" % a)
            opts["streams"].append(os.path.abspath(a))
    if not opts["filters"]:
        usage("at least one --filter LABEL=MODULE")
    if len({os.path.dirname(p) for _, p in opts["filters"] if p.endswith(".so")}) > 1:
        usage("the dynamic modules (.so) must be in one directory (Envoy's ENVOY_DYNAMIC_MODULES_SEARCH_PATH)")
    if opts["rounds"] < 1:
        usage("--rounds must be at least 1")
    try:
        config = json.loads(opts["config"])
    except ValueError as e:
        usage("--config is not JSON: %s" % e)
    if not isinstance(config, dict):
        usage("--config must be a JSON object")
    opts["config_obj"] = config
    opts["gateway_flags"] = gateway_flags(config)
    if opts["deadline"] is None:
        opts["deadline"] = 300 + 60 * opts["rounds"]
    return opts


def gateway_flags(config):
    """The `agui gateway` flags that give the filter's body for a plugin
    configuration."""
    flags = []
    buffer = FILTER_DEFAULT_BUFFER
    for k, v in config.items():
        if k in NEUTRAL:
            continue
        if k == "buffer":
            buffer = int(v)
        elif k == "dialect":
            flags += ["--dialect", str(v)]
        elif k == "on_violation":
            flags += ["--on-violation", str(v)]
        elif k == "max_event_bytes":
            if int(v):
                flags += ["--max-event-bytes", str(int(v))]
        elif k == "deny_tools":
            for t in v:
                flags += ["--deny-tool", str(t)]
        elif k == "repair":
            if v is False:
                flags.append("--no-repair")
        elif k in ("close_open", "canonical", "drop_raw", "check_tool_args", "deterministic_ids"):
            if v is True:
                flags.append("--" + k.replace("_", "-"))
        else:
            usage("--config: no `agui gateway` flag known for %r (the bodies could not be checked)" % k)
    return ["--buffer", str(buffer)] + flags


def default_streams(deadline):
    out_dir = os.path.join(ROOT, "target", "bench-streams")
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, args in DEFAULT_STREAMS:
        path = os.path.join(out_dir, name + ".sse")
        if not os.path.isfile(path):
            say("generating %s (scripts/gen_stream.py %s)" % (path, " ".join(args)))
            tmp = path + ".tmp%d" % os.getpid()
            try:
                run([sys.executable, os.path.join(ROOT, "scripts", "gen_stream.py")] + args + ["--out", tmp], deadline)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
        paths.append(path)
    return paths


def find_agui(deadline):
    say("building agui (cargo build --release -p agui-cli)")
    out = run(
        ["cargo", "build", "--release", "-p", "agui-cli", "--message-format", "json"],
        deadline,
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    for line in out.decode().splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "agui" and m.get("executable"):
            return m["executable"]
    raise Failure("cargo build did not name an agui executable")


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


def envoy_yaml(filters, config, upstream_port):
    """examples/proxy-wasm/envoy.yaml's shape: a plain listener, one per
    filter. Strings are JSON-quoted (JSON strings are YAML scalars)."""
    q = json.dumps

    def listener(name, filter_yaml):
        return """
  - name: %(name)s
    address:
      socket_address: { address: 127.0.0.1, port_value: 0 }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: %(name)s
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
""" % {"name": name, "filter": filter_yaml}

    def filter_yaml(label, module):
        """A dynamic module (`libNAME.so`) or a proxy-wasm filter (`.wasm`)."""
        if module.endswith(".so"):
            return """
          - name: envoy.filters.http.dynamic_modules
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter
              dynamic_module_config: { name: %(module)s }
              filter_name: agui_stream
              filter_config:
                "@type": type.googleapis.com/google.protobuf.StringValue
                value: %(config)s""" % {"module": q(dynamic_module_name(module)), "config": q(config)}
        return """
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

    parts = ["""admin:
  address:
    socket_address: { address: 127.0.0.1, port_value: 0 }

static_resources:
  listeners:"""]
    parts.append(listener("plain", ""))
    for label, module in filters:
        parts.append(listener("filter_" + label, filter_yaml(label, module)))
    parts.append("""
  clusters:
  - name: backend
    type: STATIC
    connect_timeout: 2s
    load_assignment:
      cluster_name: backend
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: %d }
""" % upstream_port)
    return "".join(parts)


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def say(*a):
    print(*a, flush=True)


# ------------------------------------------------------------------ numbers


def med_range(values, fmt):
    return "%s (%s-%s)" % (fmt % statistics.median(values), fmt % min(values), fmt % max(values))


def report(stream, size, listeners, mbps, cpu, ratios, rounds):
    say("")
    say("%s: %d bytes, %d rounds (median (min-max))" % (stream, size, rounds))
    say("  %-24s %-26s %s" % ("listener", "MB/s", "Envoy CPU ms/response"))
    for l in listeners:
        say("  %-24s %-26s %s" % (l, med_range(mbps[l], "%.1f"), med_range(cpu[l], "%.2f")))
    for l in listeners[1:]:
        label = l[len("filter ") :]
        say("  %-24s %-26s %s" % (
            "%s / plain" % l,
            med_range(ratios[label], "%.3f"),
            "CPU x%.2f" % (statistics.median(cpu[l]) / statistics.median(cpu["plain"])),
        ))


# ------------------------------------------------------------------ main


def main(opts, procs, work):
    t_start = time.monotonic()
    deadline = Deadline(opts["deadline"])
    streams = opts["streams"] or default_streams(deadline)
    envoy = opts["envoy"] or find_envoy(deadline)
    agui = opts["agui"] or find_agui(deadline)
    for what, path in (("envoy", envoy), ("agui", agui)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise Failure("no %s at %s" % (what, path))
    version = run([envoy, "--version"], deadline, cap=30).decode()
    m = re.search(r"[0-9a-f]+/[0-9.]+/[A-Za-z]+/[A-Za-z]+/[A-Za-z]+", version)
    say("envoy  %s (%s)" % (envoy, m.group(0) if m else version.strip()))
    say("agui   %s" % agui)
    for label, wasm in opts["filters"]:
        say("filter %s: %s (%d bytes)" % (label, wasm, os.path.getsize(wasm)))
    say("plugin configuration %s; agui gateway %s" % (opts["config"], " ".join(opts["gateway_flags"])))

    # The streams, by name in the URL, and what each listener must send back.
    names, sizes, wants, identity = [], {}, {}, {}
    for path in streams:
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(path))
        name = base[:-4] if base.endswith(".sse") else base
        while name in names:
            name += "_"
        names.append(name)
        with open(path, "rb") as f:
            data = f.read()
        sizes[name] = len(data)
        want = os.path.join(work, name + ".want")
        argv = [agui, "gateway", "--chunk", "16384"] + opts["gateway_flags"] + [path]
        with open(want, "wb") as out:
            try:
                r = subprocess.run(argv, stdout=out, stderr=subprocess.DEVNULL, timeout=deadline.left(120))
            except subprocess.TimeoutExpired:
                raise Failure("%s: out of time" % " ".join(argv))
        if r.returncode not in (0, 1):
            raise Failure("%s: exit status %d" % (" ".join(argv), r.returncode))
        with open(want, "rb") as f:
            wants[name] = f.read()
        identity[name] = wants[name] == data
        say("stream %s: %s (%d bytes; agui gateway: %s, %s)" % (
            name, path, len(data), "valid" if r.returncode == 0 else "a violation",
            "output = input" if identity[name] else "output %d bytes, not the input" % len(wants[name])))
        wants[name] = (data, wants[name])

    upstream = procs.start(
        [sys.executable, os.path.abspath(__file__), "--upstream"] + ["%s=%s" % (n, p) for n, p in zip(names, streams)],
        stdout=subprocess.PIPE,
    )
    line = b""
    ready = threading.Event()

    def read_port():
        nonlocal line
        line = upstream.stdout.readline()
        ready.set()

    # readline in a thread: bounded by the wait below.
    threading.Thread(target=read_port, daemon=True).start()
    ready.wait(deadline.left(15))
    m = re.match(rb"listening on (\d+)", line)
    if not m:
        raise Failure("the upstream did not start")
    upstream_port = int(m.group(1))

    yaml_path = os.path.join(work, "envoy.yaml")
    with open(yaml_path, "w") as f:
        f.write(envoy_yaml(opts["filters"], opts["config"], upstream_port))
    admin_path = os.path.join(work, "admin.address")
    log_path = os.path.join(work, "envoy.log")
    log = open(log_path, "wb")
    t_envoy = time.monotonic()
    env = dict(os.environ)
    for _, module in opts["filters"]:
        if module.endswith(".so"):
            env["ENVOY_DYNAMIC_MODULES_SEARCH_PATH"] = os.path.dirname(module)
    envoy_proc = procs.start(
        [envoy, "-c", yaml_path, "--concurrency", "1", "--disable-hot-restart",
         "--admin-address-path", admin_path, "-l", "info"],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    log.close()
    admin = None
    limit = time.monotonic() + deadline.left(60)
    while True:
        if envoy_proc.poll() is not None:
            raise Failure("Envoy exited (status %d) before it was ready" % envoy_proc.returncode)
        if os.path.isfile(admin_path) and os.path.getsize(admin_path) > 0:
            with open(admin_path) as f:
                admin = "http://" + f.read().strip()
            try:
                if http_get(admin + "/ready").strip() == "LIVE":
                    break
            except OSError:
                pass
        if time.monotonic() > limit:
            raise Failure("Envoy not ready within %.0f s" % (limit - t_envoy))
        time.sleep(0.1)
    statuses = json.loads(http_get(admin + "/listeners?format=json"))["listener_statuses"]
    ports = {l["name"]: l["local_address"]["socket_address"]["port_value"] for l in statuses}
    listeners = ["plain"] + ["filter " + label for label, _ in opts["filters"]]
    port = {"plain": ports["plain"]}
    for label, _ in opts["filters"]:
        port["filter " + label] = ports["filter_" + label]
    say("Envoy pid %d ready in %.1f s; listeners %s; upstream port %d" % (
        envoy_proc.pid, time.monotonic() - t_envoy,
        ", ".join("%s :%d" % (l, port[l]) for l in listeners), upstream_port))

    bufs = {n: bytearray(sizes[n] + sizes[n] // 8 + (1 << 20)) for n in names}

    framing = {}

    def one(listener, name):
        """One request, checked; (MB/s, Envoy CPU ms)."""
        before = settled_schedstat_ns(envoy_proc.pid)
        elapsed, n, bufs[name] = request(port[listener], name, bufs[name], deadline)
        after = settled_schedstat_ns(envoy_proc.pid)
        resp = Response(bufs[name], n)
        where = "%s via %s" % (name, listener)
        if resp.status != 200:
            raise Failure("%s: status %d" % (where, resp.status))
        body = resp.body()
        data, want = wants[name]
        if listener == "plain":
            if resp.framing() != "length" or body != data:
                raise Failure("%s: the body (%s, %d bytes) is not the file (%d bytes)" % (
                    where, resp.framing(), len(body), len(data)))
        elif body != want:
            raise Failure("%s: the body (%s, %d bytes) is not agui gateway's output (%d bytes)%s" % (
                where, resp.framing(), len(body), len(want), first_difference(body, want)))
        if envoy_proc.poll() is not None:
            raise Failure("Envoy exited (status %d)" % envoy_proc.returncode)
        framing[listener] = {"length": "content-length", "chunked": "chunked", "close": "close-delimited"}[resp.framing()]
        return sizes[name] / elapsed / 1e6, (after - before) / 1e6

    say("warm-up: each listener once per stream, bodies checked")
    for name in names:
        for l in listeners:
            mb, ms = one(l, name)
            say("  %-10s %-20s %8.1f MB/s %8.2f ms CPU  (%s)" % (name, l, mb, ms, framing[l]))

    mbps = {n: {l: [] for l in listeners} for n in names}
    cpu = {n: {l: [] for l in listeners} for n in names}
    t_rounds = time.monotonic()
    for r in range(opts["rounds"]):
        order = listeners[r % len(listeners):] + listeners[: r % len(listeners)]
        for name in names:
            for l in order:
                mb, ms = one(l, name)
                mbps[name][l].append(mb)
                cpu[name][l].append(ms)
        say("round %d/%d done (%s)" % (r + 1, opts["rounds"], ", ".join(
            "%s %s" % (name, " ".join("%.0f" % mbps[name][l][-1] for l in listeners)) for name in names)))
    say("every body checked: without the filter the file; with it agui gateway's output")

    ratios = {}
    for name in names:
        ratios[name] = {
            label: [f / p for f, p in zip(mbps[name]["filter " + label], mbps[name]["plain"])]
            for label, _ in opts["filters"]
        }
        report(name, sizes[name], listeners, mbps[name], cpu[name], ratios[name], opts["rounds"])
    say("")
    say("wall time %.1f s (rounds %.1f s)" % (time.monotonic() - t_start, time.monotonic() - t_rounds))
    for name in names:
        for label, _ in opts["filters"]:
            v = ratios[name][label]
            say("ratio %s %s %.3f %.3f %.3f" % (name, label, statistics.median(v), min(v), max(v)))


def first_difference(got, want):
    n = min(len(got), len(want))
    for i in range(0, n, 65536):
        if got[i : i + 65536] != want[i : i + 65536]:
            j = next(k for k in range(i, min(i + 65536, n)) if got[k] != want[k])
            return "; first difference at byte %d" % j
    return "; one is a prefix of the other"


def entry():
    if sys.argv[1:2] == ["--upstream"]:
        upstream_main(sys.argv[2:])
        return 0
    opts = parse_args(sys.argv[1:])
    procs = Processes()
    work = tempfile.mkdtemp(prefix="agui-envoy-throughput.")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    status, failure = 1, None
    try:
        main(opts, procs, work)
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
            log = os.path.join(work, "envoy.log")
            if os.path.isfile(log):
                with open(log, "rb") as f:
                    tail = f.read().decode("utf-8", "replace").splitlines()[-15:]
                say("Envoy's log, last lines:")
                for line in tail:
                    say("  " + line)
            say("FAIL %s" % failure)
        shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(entry())
