import { Agent, request } from 'node:http';
import { fetchRequest, fetchResponse, type LocalRequest, type LocalResponse } from '../../shared/deps/local-endpoints.ts';

/**
 * The sandbox's HTTP to its anvil chains: JSON-RPC over node:http on kept-alive sockets instead of
 * the global fetch (undici's request and stream machinery cost the sandbox seconds of CPU per test
 * run). The RPC gateway forwards the functions' calls through `anvilExchange`
 * (infra/local/runtime.ts); the sandbox's own viem clients (the venues' and the bridge's watchers
 * and payers, the faucet) take `anvilFetch` as their transport's fetch. The sandbox only: the
 * functions' clients keep the global fetch (shared/chains/evm/evm-client.ts, `localFetch`).
 * Measured, the conservation run in concurrent pairs: 87.2 / 82.1 → 82.7 / 77.3 CPU-s.
 */
const agent = new Agent({ keepAlive: true });

/**
 * One request and its whole answer. Rejects as fetch does: a network error with `TypeError: fetch
 * failed`, an abort with the signal's reason.
 */
export function anvilExchange(url: string | URL, out: Omit<LocalRequest, 'path'>): Promise<LocalResponse> {
  return new Promise((done, fail) => {
    const { signal } = out;
    const failed = (error: Error) => fail(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: error }));
    const sent = request(url, { method: out.method, headers: out.headers, agent, ...(signal ? { signal } : {}) }, (reply) => {
      const chunks: Buffer[] = [];
      reply.on('data', (chunk: Buffer) => chunks.push(chunk));
      reply.on('error', failed);
      reply.on('end', () => done({ status: reply.statusCode ?? 502, headers: reply.headers, body: Buffer.concat(chunks) }));
    });
    sent.on('error', failed);
    sent.end(out.body);
  });
}

/** `fetch` over anvilExchange, for viem's http transport (`fetchFn`): what viem reads of a fetch and no more. A `Request` goes to the global fetch, as in localFetch. */
export const anvilFetch: typeof fetch = async (input, init = {}) => {
  if (input instanceof Request) return fetch(input, init);
  const url = new URL(input);
  return fetchResponse(await anvilExchange(url, fetchRequest(url, init)));
};
