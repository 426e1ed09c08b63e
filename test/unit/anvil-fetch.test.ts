import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, http } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anvilFetch } from '../../infra/local/anvil-fetch.ts';

/** The sandbox's fetch for its own viem clients (infra/local/anvil-fetch.ts): what viem's transport reads of a fetch. */
describe('anvilFetch', () => {
  const seen: { method?: string; url?: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.url === '/slow') return; // never answers
      const { id } = JSON.parse(body || '{"id":0}') as { id: number };
      res.writeHead(req.url?.startsWith('/refused') ? 503 : 200, { 'content-type': 'application/json', 'x-two': ['a', 'b'] });
      res.end(JSON.stringify({ jsonrpc: '2.0', id, result: '0x2a' }));
    });
  });
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((closed) => server.close(closed));
  });

  it('carries method, path, headers and body out, and status, headers and body back', async () => {
    const response = await anvilFetch(`${base}/refused?x=1`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"id":7}' });
    expect(response.status).toBe(503);
    expect(response.ok).toBe(false);
    expect(response.headers.get('x-two')).toBe('a, b');
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 7, result: '0x2a' });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', url: '/refused?x=1', headers: { 'content-type': 'application/json' }, body: '{"id":7}' });
  });

  it('serves viem’s http transport (fetchFn)', async () => {
    const client = createPublicClient({ transport: http(base, { retryCount: 0, fetchFn: anvilFetch }) });
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(JSON.parse(seen.at(-1)!.body)).toMatchObject({ method: 'eth_blockNumber' });
  });

  it('rejects as fetch does: a refused connection with TypeError "fetch failed", an abort with the signal’s reason', async () => {
    await expect(anvilFetch('http://127.0.0.1:9/', { method: 'POST', body: '{}' })).rejects.toThrow(new TypeError('fetch failed'));
    const abort = new AbortController();
    const pending = anvilFetch(`${base}/slow`, { method: 'POST', body: '{}', signal: abort.signal });
    await expect.poll(() => seen.some((request) => request.url === '/slow')).toBe(true);
    abort.abort(new Error('gave up'));
    await expect(pending).rejects.toThrow('gave up');
  });
});
