import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { accountHeaders, appOne, expectErrorShape, sandbox, uniqueUser } from './support/client.ts';

/**
 * Paths are matched exactly as sent, as API Gateway does: `//x/account` is not `/account`, and `//`
 * is an unknown path (a JSON 404), never a 500. fetch() would normalise these targets, so the
 * requests are written with node:http, target as is.
 */
function rawRequest(base: string, method: string, target: string, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
  const url = new URL(base);
  return new Promise((done, fail) => {
    const req = request({ host: url.hostname, port: url.port, method, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: the shape assertion fails
        }
        done({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', fail);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

/**
 * Local runtimes only (both local projects hand over their APPS_FILE): in front of a deployed
 * stack the stage prefix and the edge's own URL handling come first.
 */
const local = sandbox.appsFile !== undefined;

describe.runIf(local)('paths are matched exactly', () => {
  it.each(['account', 'enclave', 'express'] as const)('%s: GET // and POST // are a JSON 404 ROUTE_NOT_FOUND', async (service) => {
    for (const method of ['GET', 'POST']) {
      const response = await rawRequest(sandbox.urls[service], method, '//', { 'content-type': 'application/json' });
      expect(response.status, JSON.stringify(response.body)).toBe(404);
      expect(expectErrorShape(response.body).code).toBe('ROUTE_NOT_FOUND');
    }
  });

  it('//x/account, //account and /x/../account are not /account, even with valid credentials', async () => {
    const headers = await accountHeaders(appOne, uniqueUser('paths'));
    for (const target of ['//x/account', '//account', '/x/../account', '//x/account?chain=ETH']) {
      const response = await rawRequest(sandbox.urls.account, 'GET', target, headers);
      expect(response.status, `${target}: ${JSON.stringify(response.body)}`).toBe(404);
      expect(expectErrorShape(response.body).code).toBe('ROUTE_NOT_FOUND');
    }
    // The same request on the exact path reaches the route (this user has no account yet).
    const exact = await rawRequest(sandbox.urls.account, 'GET', '/account', headers);
    expect(exact.status).toBe(404);
    expect(expectErrorShape(exact.body).code).toBe('ACCOUNT_NOT_FOUND');
  });

  it('//sandbox/chains is not the sandbox route either', async () => {
    const response = await rawRequest(sandbox.urls.account, 'GET', '//sandbox/chains');
    expect(response.status).toBe(404);
    expect(expectErrorShape(response.body).code).toBe('ROUTE_NOT_FOUND');
  });
});
