// herd's built-in Node adapter (external-arm protocol v1, docs/external-arm-protocol.md):
// undici's RetryAgent, axios + axios-retry, got, ky and p-retry around fetch, and the
// breakers of opossum and cockatiel, on kit.mjs.
//
// Why this exists: herd's `undici` and `axios-retry` profiles are replicas of real
// libraries. This program runs the real libraries, so the upstream can count what they
// actually send. The kit does the protocol (arguments, option refusal, warm-up against its
// own loopback server, handshake, answers, done, exit when herd dies); this file is one
// build function per client: the library set up as documented, its policy text, and how
// its attempts are counted.
//
// Usage:
//   node arm.mjs --client node-undici --url http://127.0.0.1:PORT/ \
//        [--method GET] [--pool 256] [--timeout-ms 2000] [--options '{"maxRetries":2}']
//
// stdout carries the protocol only; anything for humans goes to stderr.

import http from 'node:http';
import https from 'node:https';
import { Agent, RetryAgent } from 'undici';
import axios from 'axios';
import axiosRetry, {
  DEFAULT_OPTIONS as AXIOS_RETRY_DEFAULTS,
  exponentialDelay,
  linearDelay,
  isNetworkOrIdempotentRequestError,
  isIdempotentRequestError,
  isNetworkError,
} from 'axios-retry';
import CircuitBreaker from 'opossum';
import {
  BrokenCircuitError,
  ConsecutiveBreaker,
  ExponentialBackoff,
  circuitBreaker,
  handleAll,
  retry,
  wrap,
} from 'cockatiel';
import { run, fail, oneOf, packageVersion as version } from './kit.mjs';
import { gotClient, kyClient, pRetryClient } from './packages.mjs';
import { grpcJsClient, GRPC_OPTIONS } from './grpc_clients.mjs';

const timeoutText = (ms, how) => (ms ? `${ms} ms ${how}` : 'none');

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
// counter > maxRetries, so at most 1 + maxRetries attempts.
//
// `retryAfter` is stored by RetryHandler (default true) but, in 7.30.2, read by nothing:
// the default retry function honours a Retry-After header whatever it says. The adapter
// passes it through as given and the policy text says so.

const UNDICI_DEFAULTS = {
  maxRetries: 5,
  minTimeout: 500,
  maxTimeout: 30000,
  timeoutFactor: 2,
  retryAfter: true,
  statusCodes: [500, 502, 503, 504, 429],
  errorCodes: ['ECONNRESET', 'ECONNREFUSED', 'ENOTFOUND', 'ENETDOWN', 'ENETUNREACH',
    'EHOSTDOWN', 'EHOSTUNREACH', 'EPIPE', 'UND_ERR_SOCKET'],
  methods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'],
};

const UNDICI_OPTIONS = {
  maxRetries: 'uint',
  minTimeout: 'uint',
  maxTimeout: 'uint',
  timeoutFactor: 'number',
  retryAfter: 'bool',
  statusCodes: ['int'],
  errorCodes: ['string'],
  methods: ['string'],
};

// Attempts are counted by a dispatcher interceptor under the RetryAgent: RetryHandler
// dispatches every attempt (first and retries) through the wrapped dispatcher with a copy
// of the request options, and `opaque` (a documented dispatch option) survives the copy,
// so it carries the kit's per-request counter (its Call) down to us.
const countAttempts = (dispatch) => (opts, handler) => {
  opts.opaque?.countAttempt?.();
  return dispatch(opts, handler);
};

// Full jitter through RetryHandler's own extension point, the `retry` option (called with
// the error, `{ state: { counter }, opts: { retryOptions, method } }` and a callback that
// takes an error to give up or null to retry). Same conditions as the default retry
// function, same Retry-After handling (it too ignores `retryAfter`); only the computed
// delay is drawn from U[0, min(minTimeout * timeoutFactor^(counter-1), maxTimeout)].
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

function undici({ client, target, method, pool, timeoutMs, options }, { warmup }) {
  const agentOpts = {
    connections: pool,
    keepAliveTimeout: 4000,
    // undici: 0 disables a timeout. Per attempt; a timeout's code is not retried.
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  };
  const jitter = client === 'node-undici-fulljitter';
  const retryOpts = { ...options };
  if (jitter) retryOpts.retry = fullJitterRetry;
  // Warm-up only: the same code paths without waiting for the backoff.
  if (warmup) retryOpts.minTimeout = 0;
  const dispatcher = new RetryAgent(new Agent(agentOpts).compose(countAttempts), retryOpts);

  const o = { ...UNDICI_DEFAULTS, ...options };
  const given = Object.keys(options).length ? JSON.stringify(options) : 'defaults';
  const base = `min(${o.minTimeout}·${o.timeoutFactor}^(n−1), ${o.maxTimeout}) ms`;
  const policy = `undici ${version('undici')} RetryAgent(${given}${jitter ? ' + retry: full-jitter callback' : ''}): `
    + `maxRetries ${o.maxRetries}, delay ${jitter ? `U[0, ${base}]` : `${base}, no jitter`}, `
    + `Retry-After replaces it (cap ${o.maxTimeout} ms)`
    + `${o.retryAfter ? '' : ' (retryAfter false is not read by this undici: Retry-After still applies)'}; `
    + `statuses ${o.statusCodes.join('/')}; codes ${o.errorCodes.join(',')}; methods ${o.methods.join(',')}; `
    + `Agent connections ${pool}, keepAliveTimeout 4000 ms, headers/bodyTimeout `
    + `${timeoutText(timeoutMs, 'per attempt (not retried)')}; attempts counted by interceptor`;
  const origin = target.origin;

  return {
    policy,
    // An exhausted retryable status is thrown (throwOnError) with its statusCode, which
    // the kit answers as that status; the attempts are the kit's counter either way.
    async call(req) {
      const res = await dispatcher.request({ origin, path: req.path, method: req.method, headers: req.headers, opaque: req });
      await res.body.dump();
      return { status: res.statusCode };
    },
    close: () => dispatcher.close(),
  };
}

// ---------------------------------------------------------------------------------------
// axios + axios-retry
//
// axios-retry (README and src/index.ts) defaults: retries 3, retryCondition
// isNetworkOrIdempotentRequestError (a network error with a code other than ECONNABORTED /
// ERR_CANCELED on any method, or 429/5xx on get/head/options/put/delete), retryDelay
// noDelay (the Retry-After hint or 0), shouldResetTimeout false (axios' `timeout` is a
// budget for the whole logical request: each retry gets what is left after the last
// attempt and the delay, and none is made once that is <= 0).
// exponentialDelay(n) = max(delayFactor·2^n, Retry-After) plus U[0, 20%] of that;
// linearDelay(delayFactor)(n) = max(delayFactor·n, Retry-After). The -nojitter and
// -fulljitter clients' delays are plain functions of n and so ignore Retry-After.

const AXIOS_OPTIONS = {
  retries: 'uint',
  retryDelay: oneOf('exponential', 'linear', 'none'),
  delayFactor: 'number',
  shouldResetTimeout: 'bool',
  retryCondition: oneOf('network-or-idempotent', 'idempotent', 'network'),
};

// A retryDelay option, or each client's own delay, as (delayFactor) -> { fn, text }.
const AXIOS_DELAYS = {
  exponential: (f) => ({
    fn: (n, err) => exponentialDelay(n, err, f),
    text: `exponentialDelay (factor ${f}): max(${f}·2^n, Retry-After) + U[0, 20%]`,
  }),
  linear: (f) => ({ fn: linearDelay(f), text: `linearDelay(${f}): max(${f}·n, Retry-After)` }),
  none: () => ({ fn: AXIOS_RETRY_DEFAULTS.retryDelay, text: 'noDelay: Retry-After or 0' }),
  nojitter: (f) => ({ fn: (n) => 2 ** n * f, text: `(n) => 2^n·${f}, no jitter, no Retry-After` }),
  fulljitter: (f) => ({
    fn: (n) => Math.random() * 2 ** n * f,
    text: `(n) => U[0, 2^n·${f}), no Retry-After`,
  }),
};
const AXIOS_CLIENT_DELAY = {
  'node-axios-retry': 'exponential',
  'node-axios-retry-nojitter': 'nojitter',
  'node-axios-retry-fulljitter': 'fulljitter',
};

const AXIOS_CONDITIONS = {
  'network-or-idempotent': {
    fn: isNetworkOrIdempotentRequestError,
    text: 'isNetworkOrIdempotentRequestError (network errors except ECONNABORTED on any method; '
      + '429/5xx on idempotent methods)',
  },
  idempotent: {
    fn: isIdempotentRequestError,
    text: 'isIdempotentRequestError (network errors except ECONNABORTED, 429/5xx; idempotent methods only)',
  },
  network: {
    fn: isNetworkError,
    text: 'isNetworkError (network errors except ECONNABORTED, any method; no status is retried)',
  },
};

function axiosClient({ client, target, method, pool, timeoutMs, options }, { warmup }) {
  const kind = options.retryDelay ?? AXIOS_CLIENT_DELAY[client];
  if (kind === 'none' && options.delayFactor !== undefined) {
    fail(`${client}: option delayFactor has no effect with retryDelay "none"`);
  }
  const delay = AXIOS_DELAYS[kind](options.delayFactor ?? 100);
  const condition = AXIOS_CONDITIONS[options.retryCondition ?? 'network-or-idempotent'];
  const retries = options.retries ?? 3;
  const shouldResetTimeout = options.shouldResetTimeout ?? false;

  const httpAgent = new http.Agent({ keepAlive: true, maxSockets: pool });
  // The same pool for an https:// front (herd's [upstream] tls); the CA comes from
  // NODE_EXTRA_CA_CERTS, which herd sets.
  const httpsAgent = new https.Agent({ keepAlive: true, maxSockets: pool });
  const instance = axios.create({
    httpAgent,
    httpsAgent,
    timeout: timeoutMs,
    proxy: false,
    responseType: 'text',
    // Keep the body as bytes we never parse: the adapter's cost should be the library's.
    transformResponse: [(data) => data],
  });
  axiosRetry(instance, {
    retries,
    retryCondition: condition.fn,
    // Warm-up only: the same code paths without waiting for the backoff.
    retryDelay: warmup ? () => 0 : delay.fn,
    shouldResetTimeout,
  });
  const given = Object.keys(options).length ? ` (options ${JSON.stringify(options)})` : '';
  const policy = `axios ${version('axios')} + axios-retry ${version('axios-retry')}${given}: retries ${retries}, `
    + `retryDelay ${delay.text}; condition ${condition.text}; `
    + `http.Agent keepAlive, maxSockets ${pool}; timeout `
    + timeoutText(timeoutMs, shouldResetTimeout
      ? 'per attempt (shouldResetTimeout true)'
      : 'for the whole request, retries included (shouldResetTimeout false)');
  const attemptsOf = (config) => {
    const n = config?.['axios-retry']?.retryCount;
    return typeof n === 'number' ? n + 1 : null;
  };

  return {
    policy,
    async call(req) {
      try {
        const res = await instance.request({ url: req.url, method: req.method, headers: req.headers });
        return { status: res.status, attempts: attemptsOf(res.config) };
      } catch (err) {
        const status = err.response ? err.response.status : null;
        const error = status == null ? (err.code || err.name || 'Error') : null;
        return { ok: false, status, error, attempts: attemptsOf(err.config) };
      }
    },
    close: () => {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}


// ---------------------------------------------------------------------------------------
// Breakers: opossum, and cockatiel's breaker + retry.
//
// Both wrap one attempt on a plain undici Agent (no retries of its own): the attempt is
// counted on the Call before it goes out, and a failed response (5xx, 408, 429: what
// herd_retry::breaker::is_failure counts) is thrown with its statusCode, so the breaker
// sees it as the failure it is. A call a breaker turns away never reaches the attempt
// function, so nothing is counted for it: a request turned away outright is answered
// attempts 0, and `rejected` says how many calls the breaker turned away.

const failedStatus = (s) => s >= 500 || s === 408 || s === 429;

function plainAgent(pool, timeoutMs) {
  return new Agent({
    connections: pool,
    keepAliveTimeout: 4000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}

// One attempt: the status, or a thrown error (with statusCode for a failed response).
async function attempt(agent, origin, req) {
  req.countAttempt();
  const res = await agent.request({ origin, path: req.path, method: req.method, headers: req.headers });
  await res.body.dump();
  if (failedStatus(res.statusCode)) {
    const err = new Error(`status ${res.statusCode}`);
    err.statusCode = res.statusCode;
    throw err;
  }
  return res.statusCode;
}

// The answer for a call that ended in `err` after `rejected` turned-away calls.
function failed(req, err, rejected) {
  if (typeof err?.statusCode === 'number') return { ok: false, status: err.statusCode, rejected };
  // cockatiel's errors keep the name 'Error': their class says what they are.
  const name = err?.name && err.name !== 'Error' ? err.name : err?.constructor?.name;
  return { ok: false, error: String(err?.code ?? name ?? 'Error'), attempts: req.attempts, rejected };
}

// opossum (lib/circuit.js): `new CircuitBreaker(action, options)` with its defaults:
// timeout 10000 ms (opossum's own, per call), errorThresholdPercentage 50 (opens strictly
// above it), volumeThreshold 0, rollingCountTimeout 10000 in rollingCountBuckets 10,
// resetTimeout 30000 (a timer half-opens it; one call goes through, the rest are
// rejected until it decides). A rejection is `EOPENBREAKER`.
const OPOSSUM_OPTIONS = {
  timeout: 'uint',
  errorThresholdPercentage: 'number',
  volumeThreshold: 'uint',
  resetTimeout: 'uint',
  rollingCountTimeout: 'uint',
  rollingCountBuckets: 'uint',
};

function opossum({ target, pool, timeoutMs, options }, { warmup }) {
  const agent = plainAgent(pool, timeoutMs);
  const origin = target.origin;
  // Warm-up only: the same code paths (trip, reject, half-open probe) without waiting.
  const breaker = new CircuitBreaker((req) => attempt(agent, origin, req),
    { ...options, ...(warmup ? { resetTimeout: 1 } : {}) });
  const o = breaker.options;
  const given = Object.keys(options).length ? JSON.stringify(options) : 'defaults';
  const policy = `opossum ${version('opossum')} CircuitBreaker(${given}): opens when failures exceed `
    + `${o.errorThresholdPercentage}% of the calls fired (rejections included) over ${o.rollingCountTimeout} ms `
    + `in ${o.rollingCountBuckets} buckets, with at least ${o.volumeThreshold ?? 0} calls; open for `
    + `${o.resetTimeout} ms (by timer), then one call through, the rest rejected (EOPENBREAKER) until it `
    + `decides; its own timeout ${o.timeout} ms per call; around undici ${version('undici')} Agent `
    + `(connections ${pool}, keepAliveTimeout 4000 ms, no retries), a 5xx, 408 or 429 thrown as a failure; `
    + `headers/bodyTimeout ${timeoutText(timeoutMs, 'per call')}; attempts counted per call made`;
  return {
    policy,
    async call(req) {
      try {
        return { status: await breaker.fire(req) };
      } catch (err) {
        if (err?.code === 'EOPENBREAKER' && req.attempts === 0) {
          return { ok: false, error: 'EOPENBREAKER', attempts: 0, rejected: 1 };
        }
        return failed(req, err, 0);
      }
    },
    close: () => {
      breaker.shutdown();
      return agent.close();
    },
  };
}

// cockatiel (src/CircuitBreakerPolicy.ts, src/RetryPolicy.ts, src/backoff/): its README's
// example, a retry around a breaker:
//   retry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() })
//   circuitBreaker(handleAll, { halfOpenAfter: 10 * 1000, breaker: new ConsecutiveBreaker(5) })
//   wrap(retryPolicy, circuitBreakerPolicy)
// maxAttempts 3 is three retries (four tries); ExponentialBackoff's defaults are
// decorrelated jitter from initialDelay 128 ms, exponent 2, maxDelay 30 s. The breaker
// opens on the 5th failure in a row; half-open once 10 s have passed since it opened, one
// call goes through and the others wait for its result. handleAll retries everything,
// a BrokenCircuitError (a try the open breaker turned away) included.
//
// Rejections per request: the retry policy's onRetry and onGiveUp events carry each
// failed try's error, so the request gets a retry policy of its own (the same options;
// the policy keeps no state between executions) whose listeners count its
// BrokenCircuitErrors. The breaker is shared, as in the README.
const COCKATIEL_OPTIONS = {
  maxAttempts: 'uint',
  halfOpenAfter: 'uint',
  consecutive: 'uint',
  initialDelay: 'number',
  maxDelay: 'number',
};

function cockatiel({ target, pool, timeoutMs, options }, { warmup }) {
  const agent = plainAgent(pool, timeoutMs);
  const origin = target.origin;
  const maxAttempts = options.maxAttempts ?? 3;
  const halfOpenAfter = options.halfOpenAfter ?? 10 * 1000;
  const consecutive = options.consecutive ?? 5;
  const backoffOptions = {};
  if (options.initialDelay !== undefined) backoffOptions.initialDelay = options.initialDelay;
  if (options.maxDelay !== undefined) backoffOptions.maxDelay = options.maxDelay;
  // Warm-up only: the same code paths without waiting.
  const backoff = new ExponentialBackoff(warmup ? { initialDelay: 1, maxDelay: 1 } : backoffOptions);
  const breakerPolicy = circuitBreaker(handleAll, {
    halfOpenAfter: warmup ? 1 : halfOpenAfter,
    breaker: new ConsecutiveBreaker(consecutive),
  });
  const b = backoff.options;
  const policy = `cockatiel ${version('cockatiel')} wrap(retry(handleAll, { maxAttempts: ${maxAttempts}, `
    + `backoff: new ExponentialBackoff(${JSON.stringify(backoffOptions)}) }), circuitBreaker(handleAll, `
    + `{ halfOpenAfter: ${halfOpenAfter}, breaker: new ConsecutiveBreaker(${consecutive}) })): up to `
    + `${maxAttempts} retries after decorrelated-jitter delays (initialDelay ${b.initialDelay} ms, exponent `
    + `${b.exponent}, maxDelay ${b.maxDelay} ms), a BrokenCircuitError retried too; the breaker opens on the `
    + `${consecutive}th failure in a row, half-opens ${halfOpenAfter} ms after opening, lets one call through `
    + `and holds the others until it decides; around undici ${version('undici')} Agent (connections ${pool}, `
    + `keepAliveTimeout 4000 ms, no retries), a 5xx, 408 or 429 thrown as a failure; headers/bodyTimeout `
    + `${timeoutText(timeoutMs, 'per try')}; attempts counted per try made, rejections per BrokenCircuitError`;
  return {
    policy,
    async call(req) {
      let rejected = 0;
      const count = (result) => {
        if (result?.error instanceof BrokenCircuitError) rejected += 1;
      };
      const retryPolicy = retry(handleAll, { maxAttempts, backoff });
      retryPolicy.onRetry(count);
      retryPolicy.onGiveUp(count);
      try {
        const status = await wrap(retryPolicy, breakerPolicy).execute(() => attempt(agent, origin, req));
        return { status, rejected };
      } catch (err) {
        return failed(req, err, rejected);
      }
    },
    close: () => agent.close(),
  };
}

// ---------------------------------------------------------------------------------------
// The clients: exactly herd_scenario::clients::EXTERNAL_CLIENTS's Node ids (checked by
// crates/scenario/tests/clients.rs, which reads this table's keys), and their options.

const CLIENTS = {
  'node-undici': undici,
  'node-undici-fulljitter': undici,
  'node-axios-retry': axiosClient,
  'node-axios-retry-nojitter': axiosClient,
  'node-axios-retry-fulljitter': axiosClient,
  'node-opossum': opossum,
  'node-cockatiel': cockatiel,
  // retry packages
  'node-got': gotClient,
  'node-ky': kyClient,
  'node-p-retry': pRetryClient,
  // gRPC
  'node-grpc-js': grpcJsClient,
};

const CLIENT_OPTIONS = new Map([
  [undici, UNDICI_OPTIONS],
  [axiosClient, AXIOS_OPTIONS],
  [opossum, OPOSSUM_OPTIONS],
  [cockatiel, COCKATIEL_OPTIONS],
  // retry packages: their defaults only
  [gotClient, {}],
  [kyClient, {}],
  [pRetryClient, {}],
  [grpcJsClient, GRPC_OPTIONS],
]);
const OPTIONS = Object.fromEntries(Object.entries(CLIENTS)
  .map(([id, build]) => [id, CLIENT_OPTIONS.get(build)]));

// Attempts come from the opaque Call or axios-retry's count, never from the async context,
// so the kit's AsyncLocalStorage (and the promise hooks it turns on) stays off.
await run(CLIENTS, OPTIONS, { asyncContext: false });
