import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { openApiDocument } from '../openapi/document.ts';

/** `npm run openapi`: writes docs/openapi/<service>.json (a test checks they are current). */
const dir = resolve(import.meta.dirname, '../../docs/openapi');
await mkdir(dir, { recursive: true });
for (const service of ['account', 'enclave', 'express'] as const) {
  await writeFile(join(dir, `${service}.json`), `${JSON.stringify(openApiDocument(service), null, 2)}\n`);
  process.stdout.write(`docs/openapi/${service}.json\n`);
}
