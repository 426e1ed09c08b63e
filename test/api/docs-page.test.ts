import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandbox } from './support/client.ts';

/**
 * The sandbox's API reference (infra/local/docs-routes.ts): `GET /openapi.json` is the service's
 * committed document with the sandbox's own URL first among its servers, and `GET /docs` renders
 * it in a real headless Chromium with nothing fetched from another host. Local runtime only (not
 * a deployed route), once (the DynamoDB engine plays no part).
 */
const ROOT = resolve(import.meta.dirname, '../..');
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const inCi = Boolean(process.env.CI) && process.env.CI !== 'false';
const NO_CHROMIUM = `${CHROMIUM} is missing: install Chromium (apt-get install -y chromium; .ci/run does) to run the docs page browser test`;
const SERVICES = ['account', 'enclave', 'express'] as const;
/** An operation each page must show, by id: its summary is read from the document. */
const SHOWN_OPERATION = { account: 'CreateAccount', enclave: 'CreateWalletV2', express: 'GetOrCreateExpressWallet' } as const;

interface Document {
  openapi: string;
  info: { title: string };
  servers: { url: string; description?: string }[];
  paths: Record<string, Record<string, { operationId?: string; summary?: string }>>;
}

const committed = (service: string) => readFile(resolve(ROOT, `docs/openapi/${service}.json`), 'utf8').then((text) => JSON.parse(text) as Document);

describe.runIf(process.env.TEST_DYNAMODB === 'dynalite')('API reference (GET /docs, GET /openapi.json)', () => {
  it.each(SERVICES)('%s: /openapi.json is the committed document with this sandbox first among its servers', async (service) => {
    const origin = sandbox.urls[service];
    const response = await fetch(`${origin}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('x-request-id')).toBeTruthy();
    const served = (await response.json()) as Document;
    const file = await committed(service);
    expect(served.openapi).toBe('3.1.0');
    const { servers, ...rest } = served;
    const { servers: fileServers, ...fileRest } = file;
    expect(rest).toEqual(fileRest);
    expect(servers[0]).toEqual({ url: origin, description: 'local sandbox (npm start)' });
    // The deployed form follows, as in the file.
    expect(servers.slice(1)).toEqual(fileServers.filter((server) => server.url.startsWith('https://')));
    expect(servers.slice(1)[0]?.url).toBe('https://{apiId}.execute-api.{region}.amazonaws.com/prod');
  });

  it('/docs answers HEAD, revalidates by ETag, and refuses other methods with 405 and Allow', async () => {
    const origin = sandbox.urls.account;
    const get = await fetch(`${origin}/docs`);
    const html = await get.text();
    expect(get.status).toBe(200);
    expect(get.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(get.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(html).toContain('<script src="/docs/scalar.js"></script>');
    expect(html).not.toMatch(/https?:\/\//);

    const head = await fetch(`${origin}/docs`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(html)));
    expect(await head.text()).toBe('');

    const revalidated = await fetch(`${origin}/docs`, { headers: { 'if-none-match': get.headers.get('etag')! } });
    expect(revalidated.status).toBe(304);

    const script = await fetch(`${origin}/docs/scalar.js`, { method: 'HEAD' });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('cache-control')).toBe('public, max-age=3600');
    expect(Number(script.headers.get('content-length'))).toBeGreaterThan(1_000_000);

    const post = await fetch(`${origin}/openapi.json`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(((await post.json()) as { error: { code: string } }).error.code).toBe('METHOD_NOT_ALLOWED');
  });

  describe('rendered in headless Chromium', () => {
    let browser: Browser | undefined;
    beforeAll(async () => {
      if (!hasChromium) {
        if (!inCi) process.stdout.write(`docs-page.test.ts: skipping the browser test: ${NO_CHROMIUM}\n`);
        return;
      }
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
      });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });

    it.for(SERVICES)('%s: /docs shows the title and an operation, and every request stays on the sandbox', async (service, context) => {
      // In CI a missing browser is a failure, not a skip: the page would go unchecked.
      if (!browser && inCi) throw new Error(`CI: ${NO_CHROMIUM}`);
      context.skip(!browser, NO_CHROMIUM);
      const origin = sandbox.urls[service];
      const document = await committed(service);
      const operation = Object.values(document.paths)
        .flatMap((item) => Object.values(item))
        .find((op) => op.operationId === SHOWN_OPERATION[service])!;
      const page = await browser!.newPage({ serviceWorkers: 'block' });
      const requested: string[] = [];
      const problems: string[] = [];
      page.on('request', (request) => requested.push(request.url()));
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console: ${message.text()}`);
      });
      try {
        const response = await page.goto(`${origin}/docs`, { waitUntil: 'networkidle' });
        expect(response?.status()).toBe(200);
        await page.getByRole('heading', { name: document.info.title, exact: true }).first().waitFor({ timeout: 20_000 });
        await page.getByText(operation.summary!, { exact: true }).first().waitFor({ timeout: 10_000 });
        // No "Open API Client" link, which would hand the document's URL to client.scalar.com.
        expect(await page.locator('a[href*="scalar.com/?url="]').count()).toBe(0);
        // A moment more, so a late request (a font, a lazy chunk, a beacon) would be seen too.
        await page.waitForTimeout(1000);
      } finally {
        await page.close();
      }
      // data: URLs (the empty favicon) are not network requests.
      const network = requested.filter((url) => !url.startsWith('data:'));
      expect(network).toEqual(expect.arrayContaining([`${origin}/docs`, `${origin}/docs/scalar.js`, `${origin}/openapi.json`]));
      expect(
        network.filter((url) => new URL(url).origin !== origin),
        'requests that left the sandbox',
      ).toEqual([]);
      expect(problems).toEqual([]);
    });
  });
});
