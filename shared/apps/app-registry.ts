import { createHash, timingSafeEqual } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import QuickLRU from 'quick-lru';
import { getItem, type Table } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { APP_ID_PATTERN, type Application, assertUsableApplication } from './application.ts';

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Constant-time comparison of two hex digests of equal length. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Writes an application and its lookup items (secret key hash and API key hash → app id). */
export async function putApplication(table: Table, app: Application): Promise<void> {
  // Lookups first: a lookup without its app resolves to "unknown app", never to a wrong one.
  await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.appSecret(app.secret_key_hash), app_id: app.app_id } }));
  await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.appApiKey(app.api_key_hash), app_id: app.app_id } }));
  await table.doc.send(new PutCommand({ TableName: table.name, Item: { ...keys.app(app.app_id), ...app } }));
}

/** Removes an application and its lookup items: its credentials stop working at once. */
export async function deleteApplication(table: Table, app: Pick<Application, 'app_id' | 'secret_key_hash' | 'api_key_hash'>): Promise<void> {
  // The app item first: without it, leftover lookups resolve to "unknown app".
  await table.doc.send(new DeleteCommand({ TableName: table.name, Key: keys.app(app.app_id) }));
  await table.doc.send(new DeleteCommand({ TableName: table.name, Key: keys.appSecret(app.secret_key_hash) }));
  await table.doc.send(new DeleteCommand({ TableName: table.name, Key: keys.appApiKey(app.api_key_hash) }));
}

/** The stored app, or undefined; a record missing what authentication needs (its audience) throws ApplicationRecordError. */
export async function getApplication(table: Table, appId: string): Promise<Application | undefined> {
  const item = (await getItem(table, keys.app(appId))) as Application | undefined;
  return item && assertUsableApplication(item);
}

export interface AppRegistryOptions {
  /** How long a found app is reused (ms). */
  readonly ttlMs?: number;
  /** How long an unknown credential or id is remembered as unknown (ms); at most `ttlMs`. */
  readonly missTtlMs?: number;
  /**
   * About this many entries (found and unknown together); the least recently used go first.
   * quick-lru holds between maxEntries and twice that internally (its two-generation design).
   */
  readonly maxEntries?: number;
}

/**
 * Resolves applications by their credentials, with a short in-memory cache per container so a
 * warm Lambda does not read the table on every request. The keys of misses come from callers
 * (any string sent as a key), so the cache is bounded (LRU) and misses expire sooner: a flood of
 * made-up keys can neither grow the memory nor keep a just-registered app "unknown" for long.
 */
export class AppRegistry {
  readonly #table: Table;
  readonly #missTtlMs: number;
  // quick-lru (about 1.5 KB bundled) rather than lru-cache (19 KB): this class is in every
  // authenticated function, and bundle size is cold-start time (bench:bundles).
  readonly #cache: QuickLRU<string, { app: Application | undefined }>;

  constructor(table: Table, options: AppRegistryOptions = {}) {
    this.#table = table;
    const ttl = options.ttlMs ?? 30_000;
    this.#missTtlMs = Math.min(options.missTtlMs ?? 5_000, ttl);
    this.#cache = new QuickLRU({ maxSize: options.maxEntries ?? 1_000, maxAge: ttl });
  }

  /** Entries held now (tests, and a bound that can be asserted). */
  get size(): number {
    return this.#cache.size;
  }

  /** The app whose secret key this is, or undefined. */
  findBySecretKey(secretKey: string): Promise<Application | undefined> {
    const hash = hashSecret(secretKey);
    return this.#cached(`secret:${hash}`, async () => {
      const app = await this.#lookup(keys.appSecret(hash));
      return app && digestsEqual(app.secret_key_hash, hash) ? app : undefined;
    });
  }

  /** The app whose API key this is, or undefined. */
  findByApiKey(apiKey: string): Promise<Application | undefined> {
    const hash = hashSecret(apiKey);
    return this.#cached(`api:${hash}`, async () => {
      const app = await this.#lookup(keys.appApiKey(hash));
      return app && digestsEqual(app.api_key_hash, hash) ? app : undefined;
    });
  }

  /** The app with this id, or undefined (cached like the credential lookups). */
  findById(appId: string): Promise<Application | undefined> {
    if (!APP_ID_PATTERN.test(appId)) return Promise.resolve(undefined);
    return this.#cached(`id:${appId}`, () => getApplication(this.#table, appId));
  }

  async #lookup(key: { pk: string; sk: string }): Promise<Application | undefined> {
    const out = await this.#table.doc.send(new GetCommand({ TableName: this.#table.name, Key: key }));
    const appId = out.Item?.app_id;
    return typeof appId === 'string' ? getApplication(this.#table, appId) : undefined;
  }

  async #cached(key: string, load: () => Promise<Application | undefined>): Promise<Application | undefined> {
    const hit = this.#cache.get(key);
    if (hit) return hit.app;
    const app = await load();
    this.#cache.set(key, { app }, app ? {} : { maxAge: this.#missTtlMs });
    return app;
  }
}
