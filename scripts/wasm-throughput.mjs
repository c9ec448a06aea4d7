// The wasm plugin's throughput under V8 (and wasmi) against the native
// rewriter, on the same streams and push size, timed in interleaved rounds.
//
//     cargo build --release --example rewrite_rounds
//     node scripts/wasm-throughput.mjs --native target/release/examples/rewrite_rounds \
//         --module z=opt-z.wasm --module o3=opt3.wasm [--wasmi o3] \
//         [--push 16384] [--rounds 11] [--wasmi-bytes N] STREAM.sse...
//
// Node 20, no dependencies. Each `--module LABEL=PATH` (a build of
// examples/wasm-plugin) is instantiated once in V8; per stream the native
// timing child (examples/rewrite_rounds.rs) is spawned once, with the module
// named by `--wasmi` if any, and driven over stdin/stdout.
//
// A row is one way of rewriting the whole stream with the default
// configuration in pushes of `--push` bytes (default 16 KiB): each V8
// module (performance.now() around the push loop: `agui_init_v1(0)`, per
// push the bytes copied to `agui_input_ptr()`, `agui_push`, the output read
// as a Uint8Array view and its length summed, `agui_push(0)` while input is
// pending, `agui_finish()`), `native` (the library's Rewriter with the
// plugin's 64 KiB buffers, timed by the child) and `wasmi:LABEL` (the same
// ABI loop under wasmi, timed by the child). Every round times every row
// once, in an order rotated each round (rows timed one after another drift
// by 20-50% on a busy machine); a row's ratio to `native` is the median of
// its per-round ratios of throughput, with their range. `--wasmi-bytes N`
// times wasmi over the stream's first N bytes only (its throughput is then
// compared), for when a whole stream is too slow under the interpreter;
// by default wasmi rewrites the whole stream every round.
//
// Before timing, each stream is rewritten once by every row, untimed (a
// warm-up, and V8's tiering): the child checks that wasmi writes exactly
// the native output, and this script that each V8 module does (byte for
// byte, against the native output the child writes to a temporary file).
// Exit status 1 if any output differs or anything fails to run; the
// numbers themselves never fail it.
//
// Output per stream: each row's MB/s (10^6 bytes a second) median and
// range, and its ratio to native; then one machine-readable line per row
// but native: `ratio STREAM LABEL MEDIAN MIN MAX` (STREAM: the file name
// without `.sse`).

import { spawn } from 'node:child_process';
import { readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

const USAGE =
  'usage: node scripts/wasm-throughput.mjs --native PATH [--module LABEL=PLUGIN.wasm]... ' +
  '[--push 16384] [--rounds 11] [--wasmi LABEL] [--wasmi-bytes N] STREAM...';

function die(message) {
  console.error(`wasm-throughput: ${message}`);
  process.exit(1);
}

function parseArgs(argv) {
  const args = { native: null, modules: [], push: 16384, rounds: 11, wasmi: null, wasmiBytes: null, streams: [] };
  const count = (flag, v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) die(`${flag}: a positive integer, not ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : die(`${a}: no value\n${USAGE}`));
    switch (a) {
      case '--native': args.native = value(); break;
      case '--module': {
        const v = value();
        const eq = v.indexOf('=');
        if (eq <= 0) die(`--module: LABEL=PATH, not ${v}`);
        const label = v.slice(0, eq);
        if (label === 'native' || /\s/.test(label) || args.modules.some((m) => m.label === label)) {
          die(`--module: label ${JSON.stringify(label)} is taken or has spaces`);
        }
        args.modules.push({ label, path: v.slice(eq + 1) });
        break;
      }
      case '--push': args.push = count(a, value()); break;
      case '--rounds': args.rounds = count(a, value()); break;
      case '--wasmi': args.wasmi = value(); break;
      case '--wasmi-bytes': args.wasmiBytes = count(a, value()); break;
      case '-h': case '--help': console.log(USAGE); process.exit(0); break;
      default:
        if (a.startsWith('-')) die(`unknown option ${a}\n${USAGE}`);
        args.streams.push(a);
    }
  }
  if (!args.native || args.streams.length === 0) die(USAGE);
  if (args.wasmi !== null && !args.modules.some((m) => m.label === args.wasmi)) {
    die(`--wasmi ${args.wasmi}: no --module with that label`);
  }
  return args;
}

/// The native timing child for one stream: `ask(line)` sends a request and
/// resolves to the answer line.
class Child {
  constructor(bin, stream, push, module) {
    const argv = ['--stream', stream, '--push', String(push)];
    if (module) argv.push('--module', module);
    this.proc = spawn(bin, argv, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.waiting = [];
    this.lines = [];
    this.exited = null;
    createInterface({ input: this.proc.stdout }).on('line', (line) => {
      const w = this.waiting.shift();
      if (w) w.resolve(line);
      else this.lines.push(line);
    });
    this.proc.on('error', (e) => {
      this.exited = `${bin}: ${e.message}`;
      this.fail(this.exited);
    });
    this.proc.on('exit', (code, signal) => {
      this.exited = `the native child exited (${signal ?? `status ${code}`})`;
      this.fail(this.exited);
    });
  }

  fail(message) {
    for (const w of this.waiting.splice(0)) w.reject(new Error(message));
  }

  next() {
    if (this.lines.length) return Promise.resolve(this.lines.shift());
    if (this.exited) return Promise.reject(new Error(this.exited));
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  ask(request) {
    this.proc.stdin.write(request + '\n');
    return this.next();
  }

  async ms(request) {
    const answer = await this.ask(request);
    if (!/^\d+$/.test(answer)) throw new Error(`${request}: the child answered ${JSON.stringify(answer)}`);
    return Number(answer) / 1e6;
  }

  close() {
    this.proc.stdin.end();
  }
}

/// One run of the plugin's ABI over `stream` in V8: the output's length,
/// and its bytes in `keep` if given.
function runV8(exports, stream, push, keep) {
  const e = exports;
  const code = (what, c) => {
    if (c !== 0) throw new Error(`${what} returned ${c}`);
  };
  const take = () => {
    const view = new Uint8Array(e.memory.buffer, e.agui_output_ptr(), e.agui_output_len());
    if (keep) keep.push(Buffer.from(view));
    return view.length;
  };
  code('agui_init_v1(0)', e.agui_init_v1(0));
  let written = 0;
  for (let at = 0; at < stream.length; at += push) {
    let rest = stream.subarray(at, Math.min(at + push, stream.length));
    while (rest.length > 0) {
      const cap = e.agui_input_cap();
      const ptr = e.agui_input_ptr();
      const n = Math.min(rest.length, cap);
      new Uint8Array(e.memory.buffer, ptr, n).set(rest.subarray(0, n));
      rest = rest.subarray(n);
      code('agui_push', e.agui_push(n));
      written += take();
      while (e.agui_pending() > 0) {
        code('agui_push(0)', e.agui_push(0));
        written += take();
      }
    }
  }
  code('agui_finish', e.agui_finish());
  return written + take();
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const summary = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });

async function measure(args, modules, path, tmp) {
  const stream = readFileSync(path);
  const name = basename(path).replace(/\.sse$/, '');
  const wasmiModule = args.wasmi && args.modules.find((m) => m.label === args.wasmi).path;
  const child = new Child(args.native, path, args.push, wasmiModule);
  try {
    // The child checks wasmi's output against the native one before this.
    const ready = await child.next();
    if (!ready.startsWith('ready ')) throw new Error(`the child said ${JSON.stringify(ready)}`);
    const outPath = join(tmp, `${name}.native.out`);
    const ok = await child.ask(`output ${outPath}`);
    if (!ok.startsWith('ok ')) throw new Error(`output: the child answered ${JSON.stringify(ok)}`);
    const want = readFileSync(outPath);
    rmSync(outPath);
    for (const m of modules) {
      const keep = [];
      runV8(m.exports, stream, args.push, keep);
      const got = Buffer.concat(keep);
      if (!got.equals(want)) {
        let at = 0;
        while (at < got.length && at < want.length && got[at] === want[at]) at++;
        throw new Error(
          `${m.label} on ${name}: V8's output (${got.length} bytes) differs from the native one ` +
            `(${want.length} bytes) from byte ${at}`,
        );
      }
    }

    // The rows: [label, bytes rewritten, run -> ms].
    const rows = modules.map((m) => [
      m.label,
      stream.length,
      async () => {
        const t0 = performance.now();
        runV8(m.exports, stream, args.push, null);
        return performance.now() - t0;
      },
    ]);
    rows.push(['native', stream.length, () => child.ms('native')]);
    if (args.wasmi) {
      const bytes = args.wasmiBytes ? Math.min(stream.length, Math.ceil(args.wasmiBytes / args.push) * args.push) : stream.length;
      const request = args.wasmiBytes ? `wasmi ${bytes}` : 'wasmi';
      // Untimed: the first run after the check (the same warm-up as the others).
      await child.ms(request);
      rows.push([`wasmi:${args.wasmi}`, bytes, () => child.ms(request)]);
    }
    const times = rows.map(() => []);
    for (let r = 0; r < args.rounds; r++) {
      for (let k = 0; k < rows.length; k++) {
        const i = (k + r) % rows.length;
        times[i].push(await rows[i][2]());
      }
    }

    const native = rows.findIndex((row) => row[0] === 'native');
    const mbps = (i, r) => rows[i][1] / 1e6 / (times[i][r] / 1e3);
    const width = Math.max(...rows.map((row) => row[0].length));
    console.log(
      `\n${name}: ${stream.length} bytes, ${args.push}-byte pushes, ${args.rounds} rounds` +
        (args.wasmiBytes && args.wasmi ? ` (wasmi over the first ${rows[rows.length - 1][1]} bytes)` : ''),
    );
    console.log(`  ${'row'.padEnd(width)}  MB/s median [min-max]      / native median [min-max]`);
    const lines = [];
    rows.forEach(([label], i) => {
      const speed = summary(times[i].map((_, r) => mbps(i, r)));
      let text = `  ${label.padEnd(width)}  ${speed.median.toFixed(1).padStart(7)} [${speed.min.toFixed(1)}-${speed.max.toFixed(1)}]`;
      if (i !== native) {
        const ratio = summary(times[i].map((_, r) => mbps(i, r) / mbps(native, r)));
        text = text.padEnd(width + 30) + `  ${ratio.median.toFixed(3)} [${ratio.min.toFixed(3)}-${ratio.max.toFixed(3)}]`;
        lines.push(`ratio ${name} ${label} ${ratio.median.toFixed(4)} ${ratio.min.toFixed(4)} ${ratio.max.toFixed(4)}`);
      }
      console.log(text);
    });
    for (const line of lines) console.log(line);
  } finally {
    child.close();
  }
}

async function main() {
  const started = performance.now();
  const args = parseArgs(process.argv.slice(2));
  const modules = [];
  for (const m of args.modules) {
    const { instance } = await WebAssembly.instantiate(readFileSync(m.path), {});
    modules.push({ label: m.label, exports: instance.exports });
  }
  const tmp = mkdtempSync(join(tmpdir(), 'wasm-throughput-'));
  try {
    for (const path of args.streams) await measure(args, modules, path, tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  console.log(`\n(${((performance.now() - started) / 1e3).toFixed(1)} s)`);
}

main().catch((e) => die(e.message));
