import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../functions/routes.ts';
import { clientTypes } from '../../infra/openapi/client-types.ts';
import { openApiDocument } from '../../infra/openapi/document.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe('OpenAPI documents', () => {
  it.each(['account', 'enclave', 'express'] as const)('docs/openapi/%s.json is current (run `npm run openapi`)', async (service) => {
    const committed = JSON.parse(await readFile(resolve(ROOT, `docs/openapi/${service}.json`), 'utf8'));
    expect(committed).toEqual(JSON.parse(JSON.stringify(openApiDocument(service))));
  });

  it.each(['account', 'enclave', 'express'] as const)(
    'shared/client/generated/%s.ts is generated from the current document (run `npm run openapi`)',
    async (service) => {
      const committed = await readFile(resolve(ROOT, `shared/client/generated/${service}.ts`), 'utf8');
      expect(committed).toBe(await clientTypes(JSON.parse(JSON.stringify(openApiDocument(service)))));
    },
  );

  it('documents every route of the route table with its method and path', () => {
    for (const route of ROUTES.filter((r) => r.routeKey !== '$default')) {
      const [method, path] = route.routeKey.split(' ') as [string, string];
      const operation = openApiDocument(route.service).paths[path]?.[method.toLowerCase()] as { operationId?: string } | undefined;
      expect(operation?.operationId, route.routeKey).toBe(route.id);
    }
  });

  it('carries the validation rules of the request schemas', () => {
    const doc = openApiDocument('enclave');
    const create = doc.paths['/v2/api/wallet']!.post as {
      requestBody: { content: { 'application/json': { schema: { required: string[]; properties: Record<string, { pattern?: string }> } } } };
    };
    const body = create.requestBody.content['application/json'].schema;
    expect(body.required.sort()).toEqual(['auth_jwt', 'network', 'wallet_group_id']);
    expect(body.properties.network!.pattern).toContain('ETH|ARB|POL|INK|SOL');
  });

  it('has the sandbox and the deployed REST API as servers', () => {
    for (const [service, port] of [
      ['account', 3000],
      ['enclave', 3001],
      ['express', 3002],
    ] as const) {
      const [local, deployed] = openApiDocument(service).servers;
      expect(local).toEqual({ url: `http://127.0.0.1:${port}`, description: 'local sandbox (npm start)' });
      expect(deployed!.url).toBe('https://{apiId}.execute-api.{region}.amazonaws.com/prod');
      expect(Object.keys(deployed!.variables ?? {}).sort()).toEqual(['apiId', 'region']);
    }
  });

  it('declares the headers a generated client needs: Idempotency-Key and X-Task-ID where the handler uses them, X-Request-Id everywhere', () => {
    type Operation = { parameters?: { $ref?: string }[]; responses: Record<string, { $ref?: string; headers?: Record<string, unknown> }> };
    for (const route of ROUTES.filter((r) => r.routeKey !== '$default')) {
      const [method, path] = route.routeKey.split(' ') as [string, string];
      const operation = openApiDocument(route.service).paths[path]![method.toLowerCase()] as Operation;
      const source = readFileSync(resolve(ROOT, route.entry), 'utf8');
      const parameters = (operation.parameters ?? []).map((p) => p.$ref);
      expect(parameters.includes('#/components/parameters/IdempotencyKey'), `${route.routeKey} Idempotency-Key`).toBe(source.includes("'idempotency-key'"));
      expect(parameters, route.routeKey).toContain('#/components/parameters/RequestId');
      for (const [status, response] of Object.entries(operation.responses)) {
        if (response.$ref) continue; // RateLimited, which carries it too
        expect(response.headers?.['X-Request-Id'], `${route.routeKey} ${status}`).toEqual({ $ref: '#/components/headers/RequestId' });
        if (status.startsWith('2')) expect('X-Task-ID' in response.headers!, `${route.routeKey} ${status} X-Task-ID`).toBe(source.includes("'x-task-id'"));
      }
    }
  });
});
