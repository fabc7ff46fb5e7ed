// herd external-arm adapter, protocol v1 (see docs/external-arm-protocol.md).
//
// Why this exists: herd's `undici` and `axios-retry` profiles are replicas of real
// libraries. This program runs the real libraries, so the upstream can count what they
// actually send. herd keeps the open-loop schedule: it writes `{"id":N}` on stdin at each
// intended send time, and we start that logical request at once through the library and
// answer one line when the library is done with it (after its own retries).
//
// Shape: one pool per arm, one logical request per stdin line, nothing else. The adapter
// must cost little next to the libraries it hosts, so there is no per-request allocation
// beyond the request itself, and answer lines are written in batches (one write per tick).
//
// Usage:
//   node arm.mjs --client node-undici --url http://127.0.0.1:PORT/ \
//        [--method GET] [--pool 256] [--timeout-ms 2000]
//
// stdout carries the protocol only; anything for humans goes to stderr.

import { createRequire } from 'node:module';
import http from 'node:http';
import readline from 'node:readline';
import { Agent, RetryAgent } from 'undici';
import axios from 'axios';
import axiosRetry from 'axios-retry';

const PROTOCOL = 1;
// Sent on every attempt of logical request N (the libraries re-send a request's headers
// on each retry), so herd's upstream can time each request's first retry.
const REQUEST_ID_HEADER = 'x-herd-request';
const require = createRequire(import.meta.url);
const version = (pkg) => require(`${pkg}/package.json`).version;

function fail(message) {
  process.stderr.write(`herd node adapter: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { client: null, url: null, method: 'GET', pool: 256, timeoutMs: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    const [key, value] = [argv[i], argv[i + 1]];
    if (value === undefined) fail(`${key} needs a value`);
    switch (key) {
      case '--client': opts.client = value; break;
      case '--url': opts.url = value; break;
      case '--method': opts.method = value.toUpperCase(); break;
      case '--pool': opts.pool = Number(value); break;
      case '--timeout-ms': opts.timeoutMs = Number(value); break;
      default: fail(`unknown option ${key}`);
    }
  }
  if (!opts.client) fail('--client is required');
  if (!opts.url) fail('--url is required');
  try { opts.target = new URL(opts.url); } catch { fail(`--url ${opts.url} is not a URL`); }
  if (!Number.isInteger(opts.pool) || opts.pool < 1) fail('--pool must be a positive integer');
  if (!Number.isInteger(opts.timeoutMs) || opts.timeoutMs < 0) {
    fail('--timeout-ms must be a non-negative integer (0: no timeout)');
  }
  return opts;
}

// ---------------------------------------------------------------------------------------
// undici
//
// RetryAgent wraps a dispatcher in a RetryHandler (undici docs: docs/api/RetryAgent.md,
// docs/api/RetryHandler.md; source lib/handler/retry-handler.js). Its defaults, as read
// in the installed version: maxRetries 5, minTimeout 500, timeoutFactor 2,
// maxTimeout 30000, no jitter; Retry-After (seconds or date) replaces the delay, capped
// at maxTimeout; statuses 429/500/502/503/504; codes ECONNRESET, ECONNREFUSED, ENOTFOUND,
// ENETDOWN, ENETUNREACH, EHOSTDOWN, EHOSTUNREACH, EPIPE, UND_ERR_SOCKET; methods GET, HEAD,
// OPTIONS, PUT, DELETE, TRACE; throwOnError true (an exhausted 5xx is thrown, with
// statusCode). Its retry counter is 1 at the first failure and it gives up once
// counter > maxRetries, so at most 1 + 5 attempts.

// Attempts are counted by a dispatcher interceptor under the RetryAgent: RetryHandler
// dispatches every attempt (first and retries) through the wrapped dispatcher with a copy
// of the request options, and `opaque` (a documented dispatch option) survives the copy,
// so it carries a per-request counter down to us.
const countAttempts = (dispatch) => (opts, handler) => {
  if (opts.opaque && typeof opts.opaque.attempts === 'number') opts.opaque.attempts += 1;
  return dispatch(opts, handler);
};

const UNDICI_DEFAULTS = {
  maxRetries: 5,
  minTimeout: 500,
  maxTimeout: 30000,
  timeoutFactor: 2,
  methods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'],
  statusCodes: [500, 502, 503, 504, 429],
  errorCodes: ['ECONNRESET', 'ECONNREFUSED', 'ENOTFOUND', 'ENETDOWN', 'ENETUNREACH',
    'EHOSTDOWN', 'EHOSTUNREACH', 'EPIPE', 'UND_ERR_SOCKET'],
};

// Full jitter through RetryHandler's own extension point, the `retry` option (called with
// the error, `{ state: { counter }, opts: { retryOptions, method } }` and a callback that
// takes an error to give up or null to retry). Same conditions as the default retry
// function, same Retry-After handling; only the computed delay is drawn from
// U[0, min(minTimeout * timeoutFactor^(counter-1), maxTimeout)].
function fullJitterRetry(err, { state, opts }, cb) {
  const { statusCode, code, headers } = err;
  const { method, retryOptions: o } = opts;
  const { counter } = state;
  if (code && code !== 'UND_ERR_REQ_RETRY' && !o.errorCodes.includes(code)) return cb(err);
  if (Array.isArray(o.methods) && !o.methods.includes(method)) return cb(err);
  if (statusCode != null && Array.isArray(o.statusCodes) && !o.statusCodes.includes(statusCode)) {
    return cb(err);
  }
  if (counter > o.maxRetries) return cb(err);
  let hint = 0;
  const raw = headers?.['retry-after'];
  if (raw) {
    const secs = Number(raw);
    hint = Number.isNaN(secs) ? (new Date(raw).getTime() || Date.now()) - Date.now() : secs * 1e3;
  }
  const delay = hint > 0
    ? Math.min(hint, o.maxTimeout)
    : Math.random() * Math.min(o.minTimeout * o.timeoutFactor ** (counter - 1), o.maxTimeout);
  setTimeout(() => cb(null), delay);
}

function undiciArm({ client, target, method, pool, timeoutMs }, { warmup = false } = {}) {
  const agentOpts = {
    connections: pool,
    keepAliveTimeout: 4000,
    // undici: 0 disables a timeout. Per attempt; a timeout's code is not retried.
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  };
  const jitter = client === 'node-undici-fulljitter';
  const retryOpts = jitter ? { retry: fullJitterRetry } : {};
  // Warm-up only: the same code paths without waiting for the backoff.
  if (warmup) retryOpts.minTimeout = 0;
  const dispatcher = new RetryAgent(new Agent(agentOpts).compose(countAttempts), retryOpts);
  const d = UNDICI_DEFAULTS;
  const policy = `undici ${version('undici')} RetryAgent(${jitter ? 'retry: full-jitter callback' : 'defaults'}): `
    + `maxRetries ${d.maxRetries}, delay `
    + (jitter ? 'U[0, min(500·2^(n−1), 30000)] ms' : 'min(500·2^(n−1), 30000) ms, no jitter')
    + `, Retry-After replaces (cap 30000 ms); statuses ${d.statusCodes.join('/')}; `
    + `codes ${d.errorCodes.join(',')}; methods ${d.methods.join(',')}; `
    + `Agent connections ${pool}, keepAliveTimeout 4000 ms, headers/bodyTimeout `
    + `${timeoutMs ? `${timeoutMs} ms per attempt (not retried)` : 'none'}; attempts counted by interceptor`;
  const origin = target.origin;
  const path = `${target.pathname}${target.search}`;

  async function run(id) {
    const opaque = { attempts: 0 };
    try {
      const headers = { [REQUEST_ID_HEADER]: String(id) };
      const res = await dispatcher.request({ origin, path, method, headers, opaque });
      await res.body.dump();
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return { ok, status: res.statusCode, error: null, attempts: opaque.attempts };
    } catch (err) {
      // An exhausted retryable status is thrown (throwOnError) with its statusCode.
      const status = typeof err.statusCode === 'number' ? err.statusCode : null;
      const error = status == null ? (err.code || err.name || 'Error') : null;
      return { ok: false, status, error, attempts: opaque.attempts || null };
    }
  }
  return { policy, run, close: () => dispatcher.close() };
}

// ---------------------------------------------------------------------------------------
// axios + axios-retry
//
// axios-retry (README and src/index.ts) defaults: retries 3, retryCondition
// isNetworkOrIdempotentRequestError (a network error with a code other than ECONNABORTED /
// ERR_CANCELED on any method, or 429/5xx on get/head/options/put/delete), shouldResetTimeout
// false (axios' `timeout` is a budget for the whole logical request: each retry gets what
// is left after the last attempt and the delay, and none is made once that is <= 0).
// exponentialDelay(n) = max(100·2^n, Retry-After) plus U[0, 20%] of that, n = 1, 2, 3.
// The custom delays below are plain functions of n and so ignore Retry-After.

const AXIOS_DELAYS = {
  'node-axios-retry': {
    fn: axiosRetry.exponentialDelay,
    text: 'exponentialDelay: max(100·2^n, Retry-After) + U[0, 20%]',
  },
  'node-axios-retry-nojitter': { fn: (n) => 2 ** n * 100, text: '(n) => 2^n·100, no jitter' },
  'node-axios-retry-fulljitter': {
    fn: (n) => Math.random() * 2 ** n * 100,
    text: '(n) => U[0, 2^n·100)',
  },
};

function axiosArm({ client, target, method, pool, timeoutMs }, { warmup = false } = {}) {
  const delay = AXIOS_DELAYS[client];
  const httpAgent = new http.Agent({ keepAlive: true, maxSockets: pool });
  const instance = axios.create({
    httpAgent,
    timeout: timeoutMs,
    proxy: false,
    responseType: 'text',
    // Keep the body as bytes we never parse: the adapter's cost should be the library's.
    transformResponse: [(data) => data],
  });
  // Warm-up only: the same code paths without waiting for the backoff.
  axiosRetry(instance, { retryDelay: warmup ? () => 0 : delay.fn });
  const policy = `axios ${version('axios')} + axios-retry ${version('axios-retry')}: retries 3, `
    + `retryDelay ${delay.text}; condition isNetworkOrIdempotentRequestError `
    + `(network errors except ECONNABORTED on any method; 429/5xx on idempotent methods); `
    + `http.Agent keepAlive, maxSockets ${pool}; timeout `
    + `${timeoutMs ? `${timeoutMs} ms for the whole request, retries included (shouldResetTimeout false)` : 'none'}`;
  const url = target.href;
  const attemptsOf = (config) => {
    const n = config?.['axios-retry']?.retryCount;
    return typeof n === 'number' ? n + 1 : null;
  };

  async function run(id) {
    try {
      const headers = { [REQUEST_ID_HEADER]: String(id) };
      const res = await instance.request({ url, method, headers });
      return { ok: true, status: res.status, error: null, attempts: attemptsOf(res.config) };
    } catch (err) {
      const status = err.response ? err.response.status : null;
      const error = status == null ? (err.code || err.name || 'Error') : null;
      return { ok: false, status, error, attempts: attemptsOf(err.config) };
    }
  }
  return { policy, run, close: () => httpAgent.destroy() };
}

// ---------------------------------------------------------------------------------------
// The protocol loop.

const CLIENTS = {
  'node-undici': undiciArm,
  'node-undici-fulljitter': undiciArm,
  'node-axios-retry': axiosArm,
  'node-axios-retry-nojitter': axiosArm,
  'node-axios-retry-fulljitter': axiosArm,
};

// herd gone means nothing is left to do. herd closes our stdin when it is done sending,
// and then we still owe it the outstanding answers; but if herd was killed outright
// (SIGKILL, a crash) it can never read them, while undici's retries could keep this
// process and its requests alive for a minute. herd's death shows as a new parent (we are
// re-parented to init or a subreaper), so we check for that a few times a second,
// including during the warm-up. herd itself ends us with SIGTERM (to our process group)
// when it is stopped.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(3);
}, 200).unref();

const opts = parseArgs(process.argv.slice(2));
const build = CLIENTS[opts.client];
if (!build) fail(`unknown client ${opts.client} (expected one of: ${Object.keys(CLIENTS).join(', ')})`);

// ---------------------------------------------------------------------------------------
// Warm-up, before the handshake.
//
// herd's t = 0 is the handshake, and a Node process that just started runs its first
// requests, and above all its rarely taken error and retry paths, through V8's
// interpreter: measured on a 2-core machine, a wave of 30 axios retries reached the wire
// ~30 ms late in a cold process. A production client is a long-lived, warm process, so
// the adapter first drives the same library, built the same way but with zero backoff,
// against a throwaway server of its own on loopback (never herd's upstream, which counts
// everything) that answers 200, 503 and TCP resets in turn, in concurrent batches like
// the retry waves herd provokes. Then it closes all of that and says hello.

const WARMUP_BATCHES = 10;
const WARMUP_BATCH = 40;

async function warmUp(options) {
  let n = 0;
  const server = http.createServer((req, res) => {
    n += 1;
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
  const target = new URL(`http://127.0.0.1:${server.address().port}/`);
  const warm = build({ ...options, target }, { warmup: true });
  for (let b = 0; b < WARMUP_BATCHES; b += 1) {
    const batch = [];
    for (let i = 0; i < WARMUP_BATCH; i += 1) batch.push(warm.run(b * WARMUP_BATCH + i));
    await Promise.all(batch);
  }
  await Promise.resolve(warm.close()).catch(() => {});
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

await warmUp(opts);
const arm = build(opts);

// herd going away closes our stdout; nothing is left to do then.
process.stdout.on('error', () => process.exit(3));

let queued = [];
let flushScheduled = false;
function emit(obj) {
  queued.push(JSON.stringify(obj));
  if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(flush);
  }
}
function flush() {
  flushScheduled = false;
  if (queued.length === 0) return;
  const text = queued.join('\n') + '\n';
  queued = [];
  process.stdout.write(text);
}

emit({ herd_adapter: PROTOCOL, client: opts.client, policy: arm.policy });
flush();

let outstanding = 0;
let inputClosed = false;

function maybeDone() {
  if (!inputClosed || outstanding > 0) return;
  flush();
  process.stdout.write(`${JSON.stringify({ done: true })}\n`, () => {
    Promise.resolve(arm.close()).catch(() => {}).finally(() => process.exit(0));
  });
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
let lineNo = 0;
input.on('line', (line) => {
  lineNo += 1;
  if (line.trim() === '') return;
  let id;
  try {
    id = JSON.parse(line).id;
  } catch {
    id = undefined;
  }
  if (!Number.isSafeInteger(id) || id < 0) fail(`stdin line ${lineNo}: expected {"id":N}, got ${line.slice(0, 200)}`);
  outstanding += 1;
  arm.run(id).then((r) => {
    outstanding -= 1;
    emit({ id, ok: r.ok, status: r.status, error: r.error, attempts: r.attempts });
    maybeDone();
  });
});
input.on('close', () => {
  inputClosed = true;
  maybeDone();
});
