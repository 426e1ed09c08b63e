import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamodbStore, prepareDynamoDbStore } from '../../infra/local/dynamodb-store.ts';
import { LocalRuntimeError } from '../../infra/local/local-runtime-error.ts';

describe('SANDBOX_DYNAMODB_STORE', () => {
  let root = '';
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'dynamodb-store-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('is disk unless set to memory; anything else is refused with one line naming the variable', () => {
    expect(dynamodbStore({})).toBe('disk');
    expect(dynamodbStore({ SANDBOX_DYNAMODB_STORE: '' })).toBe('disk');
    expect(dynamodbStore({ SANDBOX_DYNAMODB_STORE: 'disk' })).toBe('disk');
    expect(dynamodbStore({ SANDBOX_DYNAMODB_STORE: 'memory' })).toBe('memory');
    for (const raw of ['Memory', 'mem', 'tmpfs', ' memory']) {
      expect(() => dynamodbStore({ SANDBOX_DYNAMODB_STORE: raw })).toThrow(LocalRuntimeError);
      expect(() => dynamodbStore({ SANDBOX_DYNAMODB_STORE: raw })).toThrow(`SANDBOX_DYNAMODB_STORE must be "disk" or "memory", not ${JSON.stringify(raw)}`);
    }
  });

  it('disk: the table under DATA_DIR/dynamodb, on a fresh DATA_DIR and after a disk run alike', async () => {
    const dataDir = join(root, 'disk');
    await mkdir(dataDir);
    expect(await prepareDynamoDbStore(dataDir, 'disk')).toBe(join(dataDir, 'dynamodb'));
    await mkdir(join(dataDir, 'dynamodb'));
    expect(await prepareDynamoDbStore(dataDir, 'disk')).toBe(join(dataDir, 'dynamodb'));
  });

  it('memory: only on a DATA_DIR without a table, which it marks so that no later start finds an empty table beside funded chains', async () => {
    const dataDir = join(root, 'memory');
    await mkdir(dataDir);
    expect(await prepareDynamoDbStore(dataDir, 'memory')).toBeUndefined();
    expect(await readdir(dataDir)).toEqual(['dynamodb.in-memory']);
    const gone = `the table of DATA_DIR ${dataDir} was kept in memory (SANDBOX_DYNAMODB_STORE=memory) by an earlier run and is gone; start on a fresh DATA_DIR`;
    await expect(prepareDynamoDbStore(dataDir, 'disk')).rejects.toThrow(gone);
    await expect(prepareDynamoDbStore(dataDir, 'memory')).rejects.toThrow(gone);
    expect(await readdir(dataDir)).toEqual(['dynamodb.in-memory']);

    const persisted = join(root, 'persisted');
    await mkdir(join(persisted, 'dynamodb'), { recursive: true });
    await expect(prepareDynamoDbStore(persisted, 'memory')).rejects.toThrow(
      `SANDBOX_DYNAMODB_STORE=memory needs a DATA_DIR without a table, and ${persisted} holds one on disk: use a fresh DATA_DIR, or the disk store`,
    );
    expect(await readdir(persisted)).toEqual(['dynamodb']);
  });
});
