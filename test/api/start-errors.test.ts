import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** `npm start` as a user runs it: exit code and stderr. */
function npmStart(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['infra/local/start.ts', '--quiet'], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 90_000 }, (error, _stdout, stderr) =>
      done({ code: error ? ((error as { code?: number }).code ?? null) : 0, stderr }),
    );
  });
}

/** What the user must fix is one line on stderr, exit 1, no stack trace. Runs once (embedded engine). */
describe.runIf(process.env.TEST_DYNAMODB === 'dynalite')('npm start refuses with one line', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'start-errors-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const lines = (stderr: string) => stderr.split('\n').filter((line) => line && !line.startsWith('bigint:'));

  it('names APPS_FILE, the field and the problem, before starting anything', async () => {
    const appsFile = join(dir, 'apps.json');
    await writeFile(
      appsFile,
      JSON.stringify([
        {
          app_id: 'acme',
          secret_key: 'sk_tiny',
          api_key: 'ak_acme_0123456789abcdef',
          created_at: '2026-08-01',
          oidc: { provider_id: 'p', issuer: 'i', audience: 'a', jwks: { keys: [] } },
        },
      ]),
    );
    const started = performance.now();
    const { code, stderr } = await npmStart({ DATA_DIR: join(dir, 'apps'), APPS_FILE: appsFile });
    expect(code).toBe(1);
    expect(lines(stderr)).toEqual([`npm start: APPS_FILE ${appsFile}: [0].secret_key: must be at least 16 characters`]);
    expect(stderr).not.toContain('sk_tiny');
    expect(performance.now() - started).toBeLessThan(15_000); // no chains started first

    // An application without an audience (issue 21): any other client's token would pass.
    const noAudience = join(dir, 'no-audience.json');
    const entry = { app_id: 'acme', secret_key: 'sk_acme_0123456789abcdef', api_key: 'ak_acme_0123456789abcdef', created_at: '2026-08-01' };
    await writeFile(noAudience, JSON.stringify([{ ...entry, oidc: { provider_id: 'p', issuer: 'i', jwks: { keys: [] } } }]));
    const refused = await npmStart({ DATA_DIR: join(dir, 'apps'), APPS_FILE: noAudience });
    expect(refused.code).toBe(1);
    expect(lines(refused.stderr)).toEqual([`npm start: APPS_FILE ${noAudience}: [0].oidc.audience: is required`]);

    const missing = await npmStart({ DATA_DIR: join(dir, 'apps'), APPS_FILE: join(dir, 'nope.json') });
    expect(missing.code).toBe(1);
    expect(lines(missing.stderr)).toEqual([`npm start: APPS_FILE ${join(dir, 'nope.json')}: no such file`]);
  });

  it('names the port variable to change when the port is busy', { timeout: 120_000 }, async () => {
    const holder = createServer();
    await new Promise<void>((done) => holder.listen(0, '127.0.0.1', done));
    const busy = (holder.address() as AddressInfo).port;
    try {
      const { code, stderr } = await npmStart({
        DATA_DIR: join(dir, 'ports'),
        APPS_FILE: '',
        ACCOUNT_PORT: '0',
        ENCLAVE_PORT: String(busy),
        EXPRESS_PORT: '0',
      });
      expect(code).toBe(1);
      expect(lines(stderr)).toEqual([
        `npm start: ENCLAVE_PORT=${busy} is in use (127.0.0.1:${busy}, by another process): set ENCLAVE_PORT to a free port, or 0 for any`,
      ]);
    } finally {
      holder.close();
    }
    // Two services on one port: the second names the first as the holder.
    const { code, stderr } = await npmStart({
      DATA_DIR: join(dir, 'ports'),
      APPS_FILE: '',
      ACCOUNT_PORT: String(busy),
      ENCLAVE_PORT: '0',
      EXPRESS_PORT: String(busy),
    });
    expect(code).toBe(1);
    expect(lines(stderr)).toEqual([
      `npm start: EXPRESS_PORT=${busy} is in use (127.0.0.1:${busy}, by this sandbox's account service): set EXPRESS_PORT to a free port, or 0 for any`,
    ]);
  });
});
