// @grpc/grpc-js as an arm: a client configured by the arm's service config, making unary
// calls with raw bytes (no protoc, no generated code), beside herd's replica of it
// (herd_retry::grpc, profile `grpc-js`).
//
// The scenario's `options = { service_config = ... }` goes to the channel unchanged as
// `grpc.service_config` (a JSON string, or the table as JSON), as a gRPC user passes it.
// The call goes to the method the config names first (`/herd.Herd/Call` for `[{}]`), the
// one herd's replica looks its policy up for. `--timeout-ms` is the call's deadline, which
// in gRPC covers every attempt (A6). One client for the arm: grpc-js keeps its retry
// throttle per target for the whole process, so the arm's calls share it, as an
// application's would.
//
// Attempts: grpc-js does not expose its retries, so the adapter reads the `x-herd-attempt`
// trailer herd's upstream puts on every gRPC answer (the number of the attempt it
// answered); a call ended by the stream's reset has none, and its attempts are null.

import grpc from '@grpc/grpc-js';
import { fail, packageVersion as version } from './kit.mjs';

export const GRPC_OPTIONS = { service_config: 'string|object' };

const DEFAULT_PATH = '/herd.Herd/Call';

function serviceConfigJson(options) {
  const sc = options.service_config;
  if (sc === undefined || sc === null) return null;
  const text = typeof sc === 'string' ? sc : JSON.stringify(sc);
  try {
    JSON.parse(text);
  } catch (err) {
    fail(`--options: service_config is not JSON (${err.message})`);
  }
  return text;
}

// The method herd calls: the first name of the first method config.
function callPath(text) {
  if (!text) return DEFAULT_PATH;
  const name = JSON.parse(text).methodConfig?.[0]?.name?.[0];
  if (!name) return DEFAULT_PATH;
  return `/${name.service || 'herd.Herd'}/${name.method || 'Call'}`;
}

function attemptOf(metadata) {
  const v = metadata?.get?.('x-herd-attempt')?.[0];
  const n = Number.parseInt(String(v ?? ''), 10);
  return Number.isInteger(n) ? n : null;
}

export function grpcJsClient(cfg, { warmup }) {
  if (warmup) {
    // The warm-up server speaks HTTP/1.1 only; a gRPC channel has nothing to warm there.
    return { policy: 'warm-up', async call() { return { status: 200, attempts: 1 }; } };
  }
  const sc = serviceConfigJson(cfg.options);
  const path = callPath(sc);
  const target = cfg.target.host;
  const channelOptions = { 'grpc.enable_retries': 1 };
  if (sc !== null) channelOptions['grpc.service_config'] = sc;
  const client = new grpc.Client(target, grpc.credentials.createInsecure(), channelOptions);
  const bytes = (b) => b;
  const empty = Buffer.alloc(0);
  const policy = `@grpc/grpc-js ${version('@grpc/grpc-js')} client to ${target}, `
    + `grpc.service_config=${sc ?? 'none (no retries)'}; unary ${path} with raw bytes; `
    + `${cfg.timeoutMs ? `deadline ${cfg.timeoutMs} ms per call (all attempts)` : 'no deadline'}; `
    + 'attempts from the upstream\'s x-herd-attempt trailer';
  return {
    policy,
    call(req) {
      return new Promise((resolve) => {
        const md = new grpc.Metadata();
        md.set('x-herd-request', req.header);
        const options = cfg.timeoutMs ? { deadline: Date.now() + cfg.timeoutMs } : {};
        const call = client.makeUnaryRequest(path, bytes, bytes, empty, md, options, () => {});
        // The final status, with the trailers of the answer that ended the call.
        call.on('status', (s) => resolve({
          status: 200,
          ok: s.code === grpc.status.OK,
          error: s.code === grpc.status.OK ? null : (grpc.status[s.code] ?? String(s.code)),
          attempts: attemptOf(s.metadata),
        }));
      });
    },
    close() { client.close(); },
  };
}
