// The most-installed Node retry packages, each at its defaults, as arms beside herd's
// replicas of them (herd_retry::Profile::{Got, Ky, PRetry}): got, ky around Node's fetch,
// and p-retry around Node's fetch. Kept apart from arm.mjs so that file stays one adapter
// table and this one stays "the packages as their READMEs use them".
//
// Versions: the latest that run on Node 20 (got 15+ and ky 2 need Node 22, p-retry 8+ too):
// got 14.6.6, ky 1.14.3, p-retry 7.1.1, pinned in package.json / package-lock.json.
//
// Attempts are counted where each goes on the wire: got through an http.Agent whose
// addRequest sees every attempt's ClientRequest (with its x-herd-request header), ky
// through its `fetch` option (called once per attempt), p-retry in the function it retries.
// Only the warm-up client changes a delay: to 1 ms, the smallest that still retries (got
// reads a delay of 0 as "do not retry").

import http from 'node:http';
import https from 'node:https';
import got from 'got';
import ky from 'ky';
import pRetry from 'p-retry';
import { countAttempt, REQUEST_ID_HEADER, packageVersion as version } from './kit.mjs';

const timeoutText = (ms, how) => (ms ? `${ms} ms ${how}` : 'none');

// ---------------------------------------------------------------------------------------
// got (source/core/options.ts, calculate-retry-delay.ts): retry.limit 2, delay
// min(1000·2^(n−1), backoffLimit ∞) + Math.random()·noise (100) ms; statusCodes 408 413 429
// 500 502 503 504 521 522 524 (413 only with Retry-After); errorCodes ETIMEDOUT ECONNRESET
// EADDRINUSE ECONNREFUSED EPIPE ENOTFOUND ENETUNREACH EAI_AGAIN; methods GET PUT HEAD DELETE
// OPTIONS TRACE; Retry-After replaces the delay, giving up above maxRetryAfter (undefined:
// timeout.request).

class CountingAgent extends http.Agent {
  addRequest(req, options) {
    const id = req.getHeader(REQUEST_ID_HEADER);
    if (id !== undefined) countAttempt(id);
    return super.addRequest(req, options);
  }
}

// The same for an https:// front (herd's [upstream] tls).
class CountingHttpsAgent extends https.Agent {
  addRequest(req, options) {
    const id = req.getHeader(REQUEST_ID_HEADER);
    if (id !== undefined) countAttempt(id);
    return super.addRequest(req, options);
  }
}

export function gotClient({ pool, timeoutMs }, { warmup }) {
  const agent = new CountingAgent({ keepAlive: true, maxSockets: pool });
  const httpsAgent = new CountingHttpsAgent({ keepAlive: true, maxSockets: pool });
  const instance = got.extend({
    agent: { http: agent, https: httpsAgent },
    ...(timeoutMs ? { timeout: { request: timeoutMs } } : {}),
    ...(warmup ? { retry: { calculateDelay: ({ computedValue }) => Math.min(computedValue, 1) } } : {}),
  });
  const r = instance.defaults.options.retry;
  const policy = `got ${version('got')} defaults: retry.limit ${r.limit}, delay min(1000·2^(n−1), `
    + `${r.backoffLimit}) + U[0, ${r.noise}) ms; statuses ${r.statusCodes.join('/')} (413 only with `
    + `Retry-After); codes ${r.errorCodes.join(',')}; methods ${r.methods.join(',')}; Retry-After replaces `
    + `the delay (give up above timeout.request); http.Agent keepAlive, maxSockets ${pool}; timeout.request `
    + `${timeoutText(timeoutMs, 'per attempt (ETIMEDOUT, retried)')}; attempts counted per Agent request`;
  return {
    policy,
    async call(req) {
      try {
        const res = await instance(req.url, { method: req.method, headers: req.headers });
        return { status: res.statusCode };
      } catch (err) {
        // An exhausted (or non-retried) status is thrown as an HTTPError with its response.
        if (err?.response) return { status: err.response.statusCode };
        throw err;
      }
    },
    close: () => {
      agent.destroy();
      httpsAgent.destroy();
    },
  };
}

// ---------------------------------------------------------------------------------------
// ky (source/utils/normalize.ts, core/Ky.ts): retry.limit 2, delay 0.3·2^(n−1) s, no
// jitter, backoffLimit ∞; statusCodes 408 413 429 500 502 503 504 (413 only with a hint);
// afterStatusCodes 413 429 503 (Retry-After replaces the delay, maxRetryAfter ∞); methods
// get put head delete options trace; a network error retried, a timeout not.

export function kyClient({ timeoutMs }, { warmup }) {
  const countingFetch = (input, init) => {
    countAttempt(input.headers.get(REQUEST_ID_HEADER));
    return fetch(input, init);
  };
  const api = ky.create({
    fetch: countingFetch,
    // ky's own default is 10 s per attempt; herd's --timeout-ms 0 means none.
    timeout: timeoutMs || false,
    ...(warmup ? { retry: { delay: () => 1 } } : {}),
  });
  const policy = `ky ${version('ky')} defaults around Node ${process.version}'s fetch: retry.limit 2, delay `
    + `0.3·2^(n−1) s, no jitter; statuses 408/413/429/500/502/503/504 (413 only with Retry-After); `
    + `Retry-After on 413/429/503 replaces the delay, uncapped; methods get,put,head,delete,options,trace; `
    + `network errors retried, timeouts not; fetch's default dispatcher (no connection limit); timeout `
    + `${timeoutText(timeoutMs, 'per attempt (not retried)')}; attempts counted in ky's fetch option`;
  return {
    policy,
    async call(req) {
      try {
        const res = await api(req.url, { method: req.method, headers: req.headers });
        await res.arrayBuffer();
        return { status: res.status };
      } catch (err) {
        if (err?.response) return { status: err.response.status };
        throw err;
      }
    },
  };
}

// ---------------------------------------------------------------------------------------
// p-retry (index.js): retries 10, factor 2, minTimeout 1000, maxTimeout ∞, randomize false,
// so round(1000·2^(n−1)) ms; it retries whatever the function throws but an AbortError or a
// non-network TypeError. Around fetch, as users write it: a failed response thrown
// (`if (!response.ok) throw`), a network error or a timeout rejected by fetch itself.

export function pRetryClient({ timeoutMs }, { warmup }) {
  const options = warmup ? { minTimeout: 1 } : {};
  const policy = `p-retry ${version('p-retry')} defaults (retries 10, factor 2, minTimeout 1000, maxTimeout `
    + `Infinity, randomize false: 1, 2, 4, … 512 s) around Node ${process.version}'s fetch, a response that is `
    + `not ok thrown; any method; fetch's default dispatcher (no connection limit); AbortSignal.timeout `
    + `${timeoutText(timeoutMs, 'per attempt (retried)')}; attempts counted per fetch`;
  return {
    policy,
    call: (req) => pRetry(async () => {
      req.countAttempt();
      const res = await fetch(req.url, {
        method: req.method,
        headers: req.headers,
        ...(timeoutMs ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
      });
      await res.arrayBuffer();
      if (!res.ok) {
        const err = new Error(`status ${res.status}`);
        err.statusCode = res.status;
        throw err;
      }
      return res.status;
    }, options),
  };
}
