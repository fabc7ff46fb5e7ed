// herd adapter kit for Node (ESM): external-arm protocol v1 (docs/external-arm-protocol.md)
// with the client left to you. A whole adapter:
//
//   import { run } from './kit.mjs';
//
//   function build(cfg, { warmup }) {
//     // cfg: { client, url, target (URL), method, pool, timeoutMs, options (validated) }
//     // warmup: true for the throwaway warm-up client (use the smallest delay that still retries there)
//     const agent = new Agent({ connections: cfg.pool });
//     return {
//       policy: 'my-lib 1.2.3: retries 3, …',          // the handshake's policy text
//       async call(req) {                              // one logical request
//         // req.id, req.header ('17'), req.headers ({'x-herd-request': '17'}),
//         // req.method, req.url, req.path (the trace line's method and path if herd sent
//         // them, else --method and --url), req.countAttempt() per attempt (or
//         // countAttempt() from a hook, see below)
//         const res = await fetch(req.url, { method: req.method, headers: req.headers, dispatcher: agent });
//         return { status: res.status };               // or a number, or { status, attempts, ok, error }
//       },
//       close: () => agent.close(),                    // optional
//     };
//   }
//
//   await run({ 'node-x': build }, { 'node-x': { retries: 'int', delay_ms: 'number' } });
//
// run(clients, options = {}, { warmup = true, argv = process.argv.slice(2) } = {}):
//   parses --client --url [--method GET] [--pool 256] [--timeout-ms 0] [--options '<JSON>'];
//   refuses (a sentence on stderr naming it, exit 2, before the handshake) an unknown client
//   and an unknown or ill-typed option; builds the client with warmup=true against its own
//   loopback server answering 200, 503 and TCP resets in turn and drives 10 concurrent
//   batches of 40 requests through it; builds the real one; prints the handshake; starts
//   each {"id":N} at once; answers one line each (batched per tick); and at stdin EOF waits
//   for the outstanding requests, prints {"done":true} and exits 0. From its start it exits
//   with status 3 if its parent (herd) dies. build may also call fail() (exit 2) to refuse
//   a combination of options: its first call, the warm-up's, comes before the handshake.
//
// asyncContext: false runs calls outside AsyncLocalStorage (cheaper: no promise hooks);
//   then countAttempt() needs an id, and req.countAttempt() or returned attempts still work.
//
// run(build, { key: type }, …): the same for an adapter with one client, which runs under
//   whatever --client herd passes (and echoes it in the handshake).
//
// options: { clientId: { key: type } }, type one of 'int', 'uint' (>= 0), 'number', 'bool',
//   'string', oneOf('a', 'b') (exactly one of those JSON values), an array ['int'] (a JSON
//   array of that), or alternatives 'number|null'. Absent keys are absent from cfg.options.
//   Refusals read `my-client: option retrys is not one of retries, delay_ms` and
//   `my-client: option retries must be a non-negative integer, got "2"`.
//
// packageVersion(name): the installed version of a package as the adapter's main script
//   resolves it, for the policy text; for an ESM package that does not export its
//   package.json (got, ky), found by walking up from its resolved entry point.
//
// Answers: call's result may be a number (the final status), or { status, attempts, ok,
//   error, rejected }; ok defaults to a 2xx status; attempts defaults to the counter if
//   anything was counted, else null (a call the library turned away without sending
//   anything, such as an open breaker's, returns attempts: 0); rejected is how many calls
//   the library's own breaker turned away for the request (never sent). A thrown error becomes ok:false, error: err.code ?? err.name, with
//   err.attempts or the counter; a thrown error with a numeric err.statusCode (an exhausted
//   status, as undici throws it) is answered with that status instead.
//
// countAttempt(id?): counts one attempt for an outstanding request, by id (number or the
//   x-herd-request header's string) or, without one, for the request whose async context
//   the caller runs in (AsyncLocalStorage), so a dispatcher interceptor or a library hook can
//   count what goes on the wire.
//
// stdout carries the protocol only; log() writes to stderr.

import http from 'node:http';
import readline from 'node:readline';
import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const PROTOCOL = 1;
export const REQUEST_ID_HEADER = 'x-herd-request';
const WARMUP_BATCHES = 10;
const WARMUP_BATCH = 40;

export function log(message) {
  process.stderr.write(`herd node adapter: ${message}\n`);
}

export function fail(message) {
  log(message);
  process.exit(2);
}

// The installed version of a package, as the adapter's main script resolves it (so an
// adapter outside this directory reports its own node_modules), for the policy text.
export function packageVersion(name, from = process.argv[1]) {
  const require = createRequire(pathToFileURL(from));
  try {
    return require(`${name}/package.json`).version;
  } catch {
    // An ESM package whose `exports` leave out ./package.json (got, ky): resolve its entry
    // point and walk up to the package.json that names it.
  }
  let entry;
  try {
    entry = fileURLToPath(import.meta.resolve(name));
  } catch {
    try {
      entry = require.resolve(name);
    } catch {
      return 'unknown';
    }
  }
  for (let dir = path.dirname(entry); ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      if (pkg.name === name && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // no package.json here, or not JSON: keep walking up
    }
    if (path.basename(dir) === 'node_modules' || path.dirname(dir) === dir) return 'unknown';
  }
}

// herd gone means nothing is left to do. herd closes our stdin when it is done sending,
// and then we still owe it the outstanding answers; but if herd was killed outright
// (SIGKILL, a crash) it can never read them, while a retrying library could keep this
// process and its requests alive for a minute. herd's death shows as a new parent (we are
// re-parented to init or a subreaper), so run() checks for that five times a second from
// its start, warm-up included, and exits with status 3. herd itself ends us with SIGTERM
// (to our process group) when it is stopped.
function exitWithParent() {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(3);
  }, 200).unref();
}

const current = new AsyncLocalStorage();
// Whether calls run inside `current` (run's asyncContext). AsyncLocalStorage turns on
// Node's promise hooks for the whole process: measured on axios at 200 requests/s, 10–15%
// more CPU and a later first attempt under load. An adapter that counts by id or returns
// its attempts can do without.
let asyncContext = true;
const outstanding = new Map(); // header string -> Call

class Call {
  // msg: the request line; its optional method and path (a replayed trace's) replace
  // --method and --url's path.
  constructor(id, cfg, msg = {}) {
    this.id = id;
    this.header = String(id);
    this.headers = { [REQUEST_ID_HEADER]: this.header };
    this.attempts = 0;
    this.method = msg.method ?? cfg.method;
    this.path = msg.path ?? `${cfg.target.pathname}${cfg.target.search}`;
    this.url = msg.path === undefined ? cfg.url : `${cfg.target.origin}${msg.path}`;
  }

  countAttempt() {
    this.attempts += 1;
  }
}

export function countAttempt(id) {
  const call = id === undefined ? current.getStore() : outstanding.get(String(id).trim());
  if (call) call.countAttempt();
}

// ---------------------------------------------------------------------------------------
// Command line and options.

function conforms(value, type) {
  if (Array.isArray(type)) return Array.isArray(value) && value.every((v) => conforms(v, type[0]));
  if (typeof type === 'object') return type.oneOf.includes(value);
  if (type.includes('|')) return type.split('|').some((t) => conforms(value, t));
  switch (type) {
    case 'int': return Number.isSafeInteger(value);
    case 'uint': return Number.isSafeInteger(value) && value >= 0;
    case 'number': return typeof value === 'number' && Number.isFinite(value);
    case 'bool': return typeof value === 'boolean';
    case 'string': return typeof value === 'string';
    case 'null': return value === null;
    case 'object': return value !== null && typeof value === 'object' && !Array.isArray(value);
    default: throw new Error(`kit: unknown option type ${type}`);
  }
}

const TYPE_NAMES = {
  int: ['an integer', 'integers'],
  uint: ['a non-negative integer', 'non-negative integers'],
  number: ['a number', 'numbers'],
  bool: ['true or false', 'booleans'],
  string: ['a string', 'strings'],
  null: ['null', 'nulls'],
  object: ['an object', 'objects'],
};

// 'an integer', 'an array of strings', 'one of "a", "b"', 'a number or null'.
function typeName(t, plural = false) {
  if (Array.isArray(t)) return `${plural ? 'arrays' : 'an array'} of ${typeName(t[0], true)}`;
  if (typeof t === 'object') return `${plural ? 'each ' : ''}one of ${t.oneOf.map((v) => JSON.stringify(v)).join(', ')}`;
  return t.split('|').map((x) => TYPE_NAMES[x]?.[plural ? 1 : 0] ?? x).join(' or ');
}

/** An option type: exactly one of these JSON values (e.g. oneOf('exponential', 'linear')). */
export const oneOf = (...values) => ({ oneOf: values });

export function validateOptions(client, raw, declared = {}) {
  let options;
  try {
    options = JSON.parse(raw);
  } catch (err) {
    fail(`${client}: --options is not valid JSON (${err.message}): ${raw.slice(0, 200)}`);
  }
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    fail(`${client}: --options must be a JSON object, got ${raw.slice(0, 200)}`);
  }
  const keys = Object.keys(declared);
  for (const [key, value] of Object.entries(options)) {
    if (!Object.hasOwn(declared, key)) {
      fail(keys.length
        ? `${client}: option ${key} is not one of ${keys.join(', ')}`
        : `${client}: accepts no options, got ${key}`);
    }
    if (!conforms(value, declared[key])) {
      fail(`${client}: option ${key} must be ${typeName(declared[key])}, got ${JSON.stringify(value)}`);
    }
  }
  return options;
}

export function parseArgs(argv, clients, declared = {}) {
  const cfg = { client: null, url: null, method: 'GET', pool: 256, timeoutMs: 0, options: {} };
  let rawOptions = '{}';
  for (let i = 0; i < argv.length; i += 2) {
    const [key, value] = [argv[i], argv[i + 1]];
    if (value === undefined) fail(`${key} needs a value`);
    switch (key) {
      case '--client': cfg.client = value; break;
      case '--url': cfg.url = value; break;
      case '--method': cfg.method = value.toUpperCase(); break;
      case '--pool': cfg.pool = Number(value); break;
      case '--timeout-ms': cfg.timeoutMs = Number(value); break;
      case '--options': rawOptions = value; break;
      default: fail(`unknown option ${key}`);
    }
  }
  if (!cfg.client) fail('--client is required');
  if (typeof clients === 'function') {
    // One client under whatever id herd gives it; `declared` is its { key: type }.
    declared = { [cfg.client]: declared };
  } else if (!Object.hasOwn(clients, cfg.client)) {
    fail(`unknown client ${cfg.client} (expected one of: ${Object.keys(clients).join(', ')})`);
  }
  if (!cfg.url) fail('--url is required');
  try { cfg.target = new URL(cfg.url); } catch { fail(`--url ${cfg.url} is not a URL`); }
  if (!Number.isInteger(cfg.pool) || cfg.pool < 1) fail('--pool must be a positive integer');
  if (!Number.isInteger(cfg.timeoutMs) || cfg.timeoutMs < 0) {
    fail('--timeout-ms must be a non-negative integer (0: no timeout)');
  }
  cfg.options = validateOptions(cfg.client, rawOptions, declared[cfg.client]);
  return cfg;
}

// ---------------------------------------------------------------------------------------
// Running calls.

function answerOf(call, result, err) {
  const counted = call.attempts || null;
  if (err !== undefined) {
    const attempts = Number.isInteger(err?.attempts) ? err.attempts : counted;
    if (typeof err?.statusCode === 'number') {
      const ok = err.statusCode >= 200 && err.statusCode < 300;
      return { id: call.id, ok, status: err.statusCode, error: null, attempts };
    }
    return { id: call.id, ok: false, status: null, error: String(err?.code ?? err?.name ?? 'Error'), attempts };
  }
  const r = typeof result === 'number' ? { status: result } : (result ?? {});
  const status = Number.isInteger(r.status) ? r.status : null;
  const ok = typeof r.ok === 'boolean' ? r.ok : status !== null && status >= 200 && status < 300;
  let error = r.error ?? null;
  if (!ok && status === null && error === null) error = 'Error';
  const attempts = Number.isInteger(r.attempts) ? r.attempts : counted;
  const answer = { id: call.id, ok, status, error, attempts };
  if (Number.isInteger(r.rejected) && r.rejected > 0) answer.rejected = r.rejected;
  return answer;
}

async function runOne(client, id, cfg, msg) {
  const call = new Call(id, cfg, msg);
  outstanding.set(call.header, call);
  try {
    const result = await (asyncContext ? current.run(call, () => client.call(call)) : client.call(call));
    return answerOf(call, result);
  } catch (err) {
    return answerOf(call, undefined, err);
  } finally {
    outstanding.delete(call.header);
  }
}

// ---------------------------------------------------------------------------------------
// Warm-up against a throwaway loopback server (never herd's upstream).

async function warmUp(build, cfg) {
  let n = 0;
  const server = http.createServer((req, res) => {
    n += 1;
    req.resume();
    if (n % 4 === 1) {
      res.statusCode = 503;
      res.end('warm-up 503');
    } else if (n % 4 === 2) {
      req.socket.resetAndDestroy();
    } else {
      res.end('ok');
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;
  const wcfg = { ...cfg, url, target: new URL(url) };
  const client = await build(wcfg, { warmup: true });
  for (let b = 0; b < WARMUP_BATCHES; b += 1) {
    const batch = [];
    for (let i = 0; i < WARMUP_BATCH; i += 1) batch.push(runOne(client, b * WARMUP_BATCH + i, wcfg));
    await Promise.all(batch);
  }
  await Promise.resolve(client.close?.()).catch(() => {});
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

// ---------------------------------------------------------------------------------------
// The protocol loop.

export async function run(clients, options = {}, {
  warmup = true, argv = process.argv.slice(2), asyncContext: context = true,
} = {}) {
  exitWithParent();
  asyncContext = context;
  const cfg = parseArgs(argv, clients, options);
  const build = typeof clients === 'function' ? clients : clients[cfg.client];
  if (warmup) await warmUp(build, cfg);
  const client = await build(cfg, { warmup: false });

  process.stdout.on('error', () => process.exit(3)); // herd went away
  let queued = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (queued.length === 0) return;
    const text = `${queued.join('\n')}\n`;
    queued = [];
    process.stdout.write(text);
  };
  const emit = (obj) => {
    queued.push(JSON.stringify(obj));
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  emit({ herd_adapter: PROTOCOL, client: cfg.client, policy: client.policy });
  flush();

  let pending = 0;
  let inputClosed = false;
  const maybeDone = () => {
    if (!inputClosed || pending > 0) return;
    flush();
    process.stdout.write(`${JSON.stringify({ done: true })}\n`, () => {
      Promise.resolve(client.close?.()).catch(() => {}).finally(() => process.exit(0));
    });
  };

  const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  let lineNo = 0;
  input.on('line', (line) => {
    lineNo += 1;
    if (line.trim() === '') return;
    let msg;
    try { msg = JSON.parse(line); } catch { msg = undefined; }
    const id = msg?.id;
    if (!Number.isSafeInteger(id) || id < 0) fail(`stdin line ${lineNo}: expected {"id":N}, got ${line.slice(0, 200)}`);
    if (!(msg.method === undefined || typeof msg.method === 'string')
      || !(msg.path === undefined || (typeof msg.path === 'string' && msg.path.startsWith('/')))) {
      fail(`stdin line ${lineNo}: method and path, when present, must be strings (path starting with /), got ${line.slice(0, 200)}`);
    }
    pending += 1;
    runOne(client, id, cfg, msg).then((answer) => {
      pending -= 1;
      emit(answer);
      maybeDone();
    });
  });
  input.on('close', () => {
    inputClosed = true;
    maybeDone();
  });
}
