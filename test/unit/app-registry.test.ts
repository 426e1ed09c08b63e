import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppRegistry } from '../../shared/apps/app-registry.ts';
import { registerApplication } from '../../shared/apps/register-application.ts';
import type { Table } from '../../shared/db/client.ts';
import { startDynaliteTable } from './support/dynalite-table.ts';

/** The registry's cache against a real (embedded) engine, counting the reads that reach it. */
let table: Table;
let stop: () => Promise<void>;
let reads = 0;

beforeAll(async () => {
  const started = await startDynaliteTable('app-registry-test');
  stop = started.stop;
  const send = started.table.doc.send.bind(started.table.doc);
  table = {
    name: started.table.name,
    doc: new Proxy(started.table.doc, {
      get: (target, property) =>
        property === 'send'
          ? (command: unknown, ...rest: unknown[]) => {
              if (command instanceof GetCommand) reads++;
              return (send as (...args: unknown[]) => unknown)(command, ...rest);
            }
          : Reflect.get(target, property),
    }),
  };
});
afterAll(() => stop());

const oidc = { provider_id: 'lru-idp', issuer: 'https://idp.lru.test', audience: 'lru-api', jwks_uri: 'https://idp.lru.test/jwks.json' };

/** The cache expires entries by Date.now(): tests move a fake Date (timers stay real). */
function manualClock() {
  vi.useFakeTimers({ toFake: ['Date'] });
  return { advance: (ms: number) => vi.setSystemTime(Date.now() + ms) };
}
afterEach(() => {
  vi.useRealTimers();
});

describe('AppRegistry cache', () => {
  it('holds at most maxEntries, however many unknown keys callers send', async () => {
    const registry = new AppRegistry(table, { maxEntries: 50 });
    for (let i = 0; i < 400; i++) expect(await registry.findBySecretKey(`sk_made_up_${i}`)).toBeUndefined();
    expect(registry.size).toBe(50);
    // The oldest keys are really gone (read again), the newest still held (no read).
    reads = 0;
    await registry.findBySecretKey('sk_made_up_399');
    expect(reads).toBe(0);
    await registry.findBySecretKey('sk_made_up_0');
    expect(reads).toBe(1);
  });

  it('forgets a miss after missTtlMs, so an app registered meanwhile resolves; a hit lasts ttlMs', async () => {
    const clock = manualClock();
    const registry = new AppRegistry(table, { ttlMs: 30_000, missTtlMs: 2_000 });
    const { secret_key } = await registerApplication(table, { app_id: 'lru-late', oidc, trusted_keys: [] });
    const unknown = `${secret_key}-not`;

    reads = 0;
    expect(await registry.findBySecretKey(unknown)).toBeUndefined();
    expect(await registry.findBySecretKey(unknown)).toBeUndefined();
    expect(reads).toBe(1); // the miss is cached
    clock.advance(2_001);
    expect(await registry.findBySecretKey(unknown)).toBeUndefined();
    expect(reads).toBe(2); // and re-read once it expired

    reads = 0;
    expect((await registry.findBySecretKey(secret_key))?.app_id).toBe('lru-late');
    clock.advance(29_000);
    expect((await registry.findBySecretKey(secret_key))?.app_id).toBe('lru-late');
    expect(reads).toBe(2); // lookup item + app item, once
    clock.advance(1_001);
    expect((await registry.findBySecretKey(secret_key))?.app_id).toBe('lru-late');
    expect(reads).toBe(4);
  });

  it('never keeps a miss longer than a hit', async () => {
    const clock = manualClock();
    const registry = new AppRegistry(table, { ttlMs: 1_000, missTtlMs: 60_000 });
    reads = 0;
    await registry.findById('no-such-app');
    clock.advance(1_001);
    await registry.findById('no-such-app');
    expect(reads).toBe(2);
  });

  it('answers "no such app" for an id no app can have, without a table read (a 2,100-character id would be an oversize key)', async () => {
    const registry = new AppRegistry(table);
    reads = 0;
    for (const id of ['a'.repeat(2100), 'a'.repeat(65), 'app#1', '']) expect(await registry.findById(id)).toBeUndefined();
    expect(reads).toBe(0);
    await registerApplication(table, { app_id: 'a'.repeat(64), oidc, trusted_keys: [] });
    expect((await registry.findById('a'.repeat(64)))?.app_id).toBe('a'.repeat(64));
  });
});
