import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { clientTypes } from '../openapi/client-types.ts';
import { openApiDocument } from '../openapi/document.ts';

/**
 * `npm run openapi`: writes docs/openapi/<service>.json and the typed client's types generated from
 * it, shared/client/generated/<service>.ts (a test checks both are current).
 */
const ROOT = resolve(import.meta.dirname, '../..');
const docs = join(ROOT, 'docs/openapi');
const types = join(ROOT, 'shared/client/generated');
await mkdir(docs, { recursive: true });
await mkdir(types, { recursive: true });
for (const service of ['account', 'enclave', 'express'] as const) {
  const document = openApiDocument(service);
  await writeFile(join(docs, `${service}.json`), `${JSON.stringify(document, null, 2)}\n`);
  process.stdout.write(`docs/openapi/${service}.json\n`);
  await writeFile(join(types, `${service}.ts`), await clientTypes(JSON.parse(JSON.stringify(document))));
  process.stdout.write(`shared/client/generated/${service}.ts\n`);
}
