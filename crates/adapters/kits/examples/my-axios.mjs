// Your axios client in herd: arms/my-axios.mjs, next to a copy of herd's crates/adapters/kits/node/kit.mjs.
// Set up the instance exactly as your service does; the kit speaks herd's protocol.
//
//   node arms/my-axios.mjs --client my-axios --url http://127.0.0.1:PORT/ \
//        [--pool 256] [--timeout-ms 2000] [--options '{"retries":5}']
import http from 'node:http';
import axios from 'axios';
import axiosRetry, { exponentialDelay, isNetworkOrIdempotentRequestError } from 'axios-retry';
import { run, packageVersion } from './kit.mjs';

function build(cfg, { warmup }) {
  const retries = cfg.options.retries ?? 3; // the scenario's `options` may change these
  const baseMs = cfg.options.base_ms ?? 300;

  const httpAgent = new http.Agent({ keepAlive: true, maxSockets: cfg.pool });
  const api = axios.create({ httpAgent, timeout: cfg.timeoutMs, proxy: false });
  axiosRetry(api, {
    retries,
    retryCondition: isNetworkOrIdempotentRequestError,
    // The warm-up (against the kit's own loopback server) runs the same code without waiting.
    retryDelay: warmup ? () => 0 : (n, err) => exponentialDelay(n, err, baseMs),
  });
  const attempts = (config) => (config?.['axios-retry']?.retryCount ?? 0) + 1;

  return {
    policy: `axios ${packageVersion('axios')} + axios-retry ${packageVersion('axios-retry')}: `
      + `retries ${retries}, exponentialDelay(${baseMs} ms) + 20% jitter, `
      + `isNetworkOrIdempotentRequestError; maxSockets ${cfg.pool}; timeout ${cfg.timeoutMs || 'none'} ms`,
    async call(req) {
      try {
        const res = await api.request({ url: req.url, method: req.method, headers: req.headers });
        return { status: res.status, attempts: attempts(res.config) };
      } catch (err) {
        if (!err.response) throw Object.assign(err, { attempts: attempts(err.config) });
        return { status: err.response.status, attempts: attempts(err.config) };
      }
    },
    close: () => httpAgent.destroy(),
  };
}

await run(build, { retries: 'uint', base_ms: 'number' });
