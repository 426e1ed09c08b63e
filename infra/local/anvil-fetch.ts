import { Agent, request } from 'node:http';
import { fetchHeaders, fetchResponse } from '../../shared/deps/local-endpoints.ts';

/**
 * The `fetch` of the sandbox's own viem clients for its anvil chains (the venues' and the bridge's
 * watchers and payers, the faucet): JSON-RPC over node:http on kept-alive sockets instead of the
 * global fetch, as the RPC gateway forwards (infra/local/runtime.ts). Each of the thousands of
 * calls a test run makes then skips undici's request and stream machinery. The sandbox only: the
 * functions' clients keep the global fetch (shared/chains/evm/evm-client.ts, `localFetch`).
 * Measured, the conservation run in concurrent pairs: 87.2 / 82.1 → 82.7 / 77.3 CPU-s.
 *
 * What viem's transport needs of a fetch and no more: the method, headers and a string body in;
 * status, headers and body out; a network error rejects as fetch's does (`TypeError: fetch
 * failed`), and an abort with the signal's reason.
 */
const agent = new Agent({ keepAlive: true });

export const anvilFetch: typeof fetch = (input, init = {}) =>
  new Promise((done, fail) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const signal = init.signal ?? undefined;
    const out = request(url, { method: init.method ?? 'GET', headers: fetchHeaders(init), agent, ...(signal ? { signal } : {}) }, (reply) => {
      const chunks: Buffer[] = [];
      reply.on('data', (chunk: Buffer) => chunks.push(chunk));
      reply.on('error', (error) => fail(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: error })));
      reply.on('end', () => done(fetchResponse({ status: reply.statusCode ?? 502, headers: reply.headers, body: Buffer.concat(chunks) })));
    });
    out.on('error', (error) => fail(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: error })));
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array)) {
      out.destroy();
      fail(new TypeError('anvilFetch takes string or byte bodies (JSON-RPC)'));
      return;
    }
    out.end(body ?? undefined);
  });
