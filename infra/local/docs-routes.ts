import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import type { ServiceName } from '../../functions/routes.ts';
import { SANDBOX_SERVER_DESCRIPTION } from '../openapi/document.ts';

/**
 * The sandbox's API reference, on each of the three services (local runtime only, never a Lambda
 * route): `GET /openapi.json` is the service's document (docs/openapi/<service>.json) with the
 * URL the page was loaded from as its first server; `GET /docs` renders it with Scalar's
 * standalone bundle, served from here as `/docs/scalar.js`. Offline: the page loads nothing from
 * another host (Content-Security-Policy 'self'; Scalar's fonts, telemetry and AI agent off).
 */
const ROOT = resolve(import.meta.dirname, '../..');
const SCALAR_BUNDLE = resolve(ROOT, 'node_modules/@scalar/api-reference/dist/browser/standalone.js');
export const DOCS_PATHS = new Set(['/docs', '/docs/', '/docs/scalar.js', '/openapi.json']);

const TITLES: Record<ServiceName, string> = { account: 'Account service', enclave: 'Wallet enclave service', express: 'Express wallet service' };

/** Scalar's configuration (https://scalar.com/products/api-references/configuration): nothing from the network. */
const SCALAR_CONFIG = {
  url: '/openapi.json',
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
  // "Open API Client" links to client.scalar.com with this document's URL; "Test Request" (the
  // embedded client) stays, and calls the sandbox itself (same origin, no request proxy).
  hideClientButton: true,
};
const BOOT_SCRIPT = `Scalar.createApiReference('#app', ${JSON.stringify(SCALAR_CONFIG)});`;
const SYSTEM_FONTS = 'system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif';

function page(service: ServiceName): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${TITLES[service]} API reference (local sandbox)</title>
<style>:root { --scalar-font: ${SYSTEM_FONTS}; --scalar-font-code: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }</style>
</head>
<body>
<noscript>${TITLES[service]}: this page needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="app"></div>
<script src="/docs/scalar.js"></script>
<script>${BOOT_SCRIPT}</script>
</body>
</html>
`;
}

/** Everything from this origin; the boot script by its hash; Scalar injects its styles inline. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  `script-src 'self' 'sha256-${createHash('sha256').update(BOOT_SCRIPT).digest('base64')}'`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

let scalarBundle: Promise<Buffer> | undefined;

interface Asset {
  readonly type: string;
  readonly body: Buffer;
  readonly cacheControl: string;
  readonly csp?: boolean;
}

async function asset(service: ServiceName, path: string, origin: string): Promise<Asset> {
  if (path === '/docs/scalar.js') {
    scalarBundle ??= readFile(SCALAR_BUNDLE);
    // Changes only with the installed package; revalidated by ETag after an hour.
    return { type: 'text/javascript; charset=utf-8', body: await scalarBundle, cacheControl: 'public, max-age=3600' };
  }
  if (path === '/openapi.json') {
    return {
      type: 'application/json; charset=utf-8',
      body: Buffer.from(JSON.stringify(await sandboxDocument(service, origin), null, 2)),
      cacheControl: 'no-cache',
    };
  }
  return { type: 'text/html; charset=utf-8', body: Buffer.from(page(service)), cacheControl: 'no-cache', csp: true };
}

/** docs/openapi/<service>.json with `origin` as its first server (in place of the default-port sandbox entry). */
export async function sandboxDocument(service: ServiceName, origin: string) {
  const document = JSON.parse(await readFile(resolve(ROOT, `docs/openapi/${service}.json`), 'utf8')) as { servers?: { url: string; description?: string }[] };
  const others = (document.servers ?? []).filter((server) => server.description !== SANDBOX_SERVER_DESCRIPTION);
  return { ...document, servers: [{ url: origin, description: SANDBOX_SERVER_DESCRIPTION }, ...others] };
}

/**
 * Answers the docs paths (true) or leaves the request to the routes (false). `fallbackOrigin`
 * (the listener's URL) is used when the Host header is missing or not a plain host[:port].
 */
export async function serveDocs(
  service: ServiceName,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  fallbackOrigin: string,
  requestId: string,
): Promise<boolean> {
  if (!DOCS_PATHS.has(path)) return false;
  const json = { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-request-id': requestId };
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { ...json, allow: 'GET, HEAD' });
    res.end(JSON.stringify({ success: false, error: { code: 'METHOD_NOT_ALLOWED', message: `${req.method} is not allowed here: use GET, HEAD` } }));
    return true;
  }
  const host = req.headers.host;
  const origin = host && /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host) ? `http://${host}` : fallbackOrigin;
  const { type, body, cacheControl, csp } = await asset(service, path === '/docs/' ? '/docs' : path, origin);
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  const headers = {
    'content-type': type,
    'cache-control': cacheControl,
    etag,
    'x-content-type-options': 'nosniff',
    'x-request-id': requestId,
    ...(csp ? { 'content-security-policy': CONTENT_SECURITY_POLICY, 'referrer-policy': 'no-referrer' } : {}),
  };
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers).end();
    return true;
  }
  res.writeHead(200, { ...headers, 'content-length': String(body.length) });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}
