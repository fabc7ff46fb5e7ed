// An adapter on crates/adapters/kits/node/kit.mjs: Node's global fetch (undici inside) with a
// hand-written retry loop, full-jitter exponential backoff on 429/5xx and network errors.
//
//   node fetch-retry.mjs --client example-fetch --url http://127.0.0.1:PORT/ \
//        [--pool 256] [--timeout-ms 2000] [--options '{"retries":3,"base_ms":100}']
import { run, countAttempt } from '../node/kit.mjs';

function build(cfg, { warmup }) {
  const retries = cfg.options.retries ?? 3;
  const baseMs = warmup ? 0 : (cfg.options.base_ms ?? 100);
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function attempt(req) {
    countAttempt(); // counts for the request whose async context this is (req.countAttempt() works too)
    const signal = cfg.timeoutMs ? AbortSignal.timeout(cfg.timeoutMs) : undefined;
    const res = await fetch(req.url, { method: req.method, headers: req.headers, signal });
    await res.arrayBuffer();
    return res.status;
  }

  return {
    policy: `fetch (Node ${process.version}) + hand-written retry: ${retries} retries on 429/5xx and `
      + `network errors, delay U[0, ${baseMs}·2^(n−1)] ms; timeout ${cfg.timeoutMs || 'none'} ms per attempt; `
      + 'global dispatcher (--pool not applied)',
    async call(req) {
      for (let n = 1; ; n += 1) {
        let status;
        try {
          status = await attempt(req);
        } catch (err) {
          if (n > retries) throw err.cause ?? err; // fetch wraps the socket error in a TypeError
        }
        if (status !== undefined && status !== 429 && status < 500) return status;
        if (n > retries) return status;
        await sleep(Math.random() * baseMs * 2 ** (n - 1));
      }
    },
  };
}

await run({ 'example-fetch': build }, { 'example-fetch': { retries: 'int', base_ms: 'number' } });
